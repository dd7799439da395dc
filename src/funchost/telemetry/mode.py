"""host.json ``telemetryMode``: which telemetry pipeline the Functions host configures.

The host parses the value with .NET's ``Enum.TryParse(ignoreCase: true)`` into
``TelemetryMode { None = 0, ApplicationInsights = 1, OpenTelemetry = 2 }`` and falls back to
ApplicationInsights when the key is absent or does not parse (azure-functions-host
``ScriptHostBuilderExtensions.ConfigureTelemetry``, ``Diagnostics/OpenTelemetry/TelemetryMode.cs``).
funchost does the same, with a warning for a value that does not parse instead of silence.
ApplicationInsights and None export nothing locally (there is no Application Insights here).
"""

from __future__ import annotations

from typing import Any

NONE = "None"
APPLICATION_INSIGHTS = "ApplicationInsights"
OPEN_TELEMETRY = "OpenTelemetry"
MODES = (NONE, APPLICATION_INSIGHTS, OPEN_TELEMETRY)  # in enum order: "0", "1", "2" parse too
DEFAULT = APPLICATION_INSIGHTS


def parse_telemetry_mode(value: Any) -> tuple[str, str | None]:
    """The mode for a raw host.json value, and a warning when the value was not understood."""
    if value is None:
        return DEFAULT, None
    text = str(value).strip()
    for index, mode in enumerate(MODES):
        if text.lower() == mode.lower() or text == str(index):
            return mode, None
    return DEFAULT, (f"host.json: telemetryMode {value!r} is not one of {', '.join(MODES)}; using "
                     f"{DEFAULT}, as the Functions host does")
