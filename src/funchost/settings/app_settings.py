"""App settings: the process environment over local.settings.json `Values`.

The real environment wins over local.settings.json, as Core Tools does. `%Name%` tokens in
binding properties are resolved against these settings at load time.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator, Mapping

from funchost.errors import ConfigError

_TOKEN = re.compile(r"%([^%]+)%")


class AppSettings(Mapping[str, str]):
    def __init__(self, values: Mapping[str, str] | None = None, environ: Mapping[str, str] | None = None):
        merged: dict[str, str] = dict(values or {})
        merged.update(os.environ if environ is None else environ)
        self._values = merged
        # Settings are case-insensitive on Azure (environment variables on Windows).
        self._folded = {k.lower(): v for k, v in merged.items()}

    def __getitem__(self, key: str) -> str:
        return self._folded[key.lower()]

    def __iter__(self) -> Iterator[str]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def get(self, key: str, default: str | None = None) -> str | None:  # type: ignore[override]
        return self._folded.get(key.lower(), default)

    def is_function_disabled(self, function_name: str) -> bool:
        """`AzureWebJobs.<name>.Disabled` set to true / 1, as the Functions host reads it."""
        value = self.get(f"AzureWebJobs.{function_name}.Disabled") or ""
        return value.strip().lower() in ("true", "1")

    @property
    def environment(self) -> str:
        """AZURE_FUNCTIONS_ENVIRONMENT; funchost runs apps locally, so Development by default."""
        return self.get("AZURE_FUNCTIONS_ENVIRONMENT") or "Development"

    def resolve_tokens(self, value: str, *, where: str = "") -> str:
        """Replace every `%Name%` with the setting's value; a missing setting is an error."""

        def substitute(match: re.Match[str]) -> str:
            name = match.group(1)
            found = self.get(name)
            if found is None:
                raise ConfigError(f"app setting '{name}' referenced as %{name}% is not defined", path=where or None)
            return found

        return _TOKEN.sub(substitute, value)
