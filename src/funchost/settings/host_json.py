"""host.json (version 2.0).

Sections funchost implements are read strictly (typos are errors with the key's path); sections
it knows but does not emulate produce one warning each, or a debug line when nothing is lost
(the stock template's extensionBundle and applicationInsights). The Functions host ignores keys
it does not know at the top level and under `extensions`; there an unknown key gets one warning,
unless it is close to a known one (a typo: an error). Extension sections are parsed by the
plug-in that implements them (``<module>.parse(reader)``), so their defaults live next to the
code that uses them.
"""

from __future__ import annotations

import importlib
import json
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from funchost.errors import ConfigError
from funchost.settings.sections import SectionReader
from funchost.settings.timespan import parse_timespan
from funchost.telemetry.mode import DEFAULT as DEFAULT_TELEMETRY_MODE
from funchost.telemetry.mode import parse_telemetry_mode

FILE_NAME = "host.json"
log = logging.getLogger("funchost.config")

DEFAULT_FUNCTION_TIMEOUT = 30 * 60.0  # Premium / Dedicated default (azure-semantics 3.2)

# host.json "extensions" sections implemented by funchost plug-ins: name -> module with parse().
EXTENSION_PARSERS: dict[str, str] = {
    "http": "funchost.triggers.http.options",
    "queues": "funchost.triggers.queue.options",
    "cosmosDB": "funchost.triggers.changefeed.options",
    "eventGrid": "funchost.triggers.eventgrid.options",
    "blobs": "funchost.bindings.blob_options",
    "eventHubs": "funchost.triggers.eventhub.options",
    "serviceBus": "funchost.triggers.servicebus.options",
    "durableTask": "funchost.durable.options",
}
# Known to the Functions host but not emulated: accepted with one warning.
KNOWN_EXTENSIONS = {"kafka", "sql", "rabbitMQ", "sendGrid",
                    "mysql", "tables", "signalR", "webPubSub", "dapr", "mcp"}
KNOWN_TOP_LEVEL = {"healthMonitor", "managedDependency", "watchDirectories",
                   "watchFiles", "aggregator", "customHandler", "concurrency",
                   "languageWorkers", "functions", "fileWatchingEnabled", "sendCanceledInvocationsToWorker"}
KNOWN_LOGGING = {"fileLoggingMode", "console"}
# Known and harmless to ignore locally (bundles: every extension is built in; no telemetry is
# sent; isDefaultHostConfig marks a host.json the host wrote itself): a debug line, no warning.
QUIET_TOP_LEVEL = {"extensionBundle", "isDefaultHostConfig"}
QUIET_LOGGING = {"applicationInsights"}


@dataclass(frozen=True)
class HostOptions:
    version: str = "2.0"
    function_timeout: float | None = DEFAULT_FUNCTION_TIMEOUT  # None = infinite ("-1")
    log_levels: dict[str, str] = field(default_factory=dict)
    retry: dict[str, Any] | None = None  # host-level default retry (raw, validated by indexing)
    singleton: dict[str, Any] = field(default_factory=dict)
    extensions: dict[str, Any] = field(default_factory=dict)  # parsed option objects by section
    warnings: tuple[str, ...] = ()
    raw: dict[str, Any] = field(default_factory=dict)
    telemetry_mode: str = DEFAULT_TELEMETRY_MODE  # "None" | "ApplicationInsights" | "OpenTelemetry"

    def extension(self, name: str) -> Any:
        """The parsed options object of an implemented extension section (defaults if absent)."""
        if name not in self.extensions:
            raise KeyError(f"extension section '{name}' is not implemented by funchost")
        return self.extensions[name]

    @property
    def route_prefix(self) -> str:
        http = self.extensions.get("http")
        return getattr(http, "route_prefix", "api")


_LOG_LEVELS = {v.lower(): v for v in ("Trace", "Debug", "Information", "Warning", "Error", "Critical", "None")}


OVERRIDE_PREFIX = "AzureFunctionsJobHost__"


def load_host_json(app_dir: Path, settings: Mapping[str, str] | None = None) -> HostOptions:
    path = Path(app_dir) / FILE_NAME
    raw: Any = {"version": "2.0"}
    if path.exists():
        try:
            raw = json.loads(path.read_text(encoding="utf-8-sig"))
        except json.JSONDecodeError as exc:
            raise ConfigError(f"invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}",
                              path=FILE_NAME) from exc
    if settings is not None and isinstance(raw, dict):
        apply_setting_overrides(raw, settings)
    return parse_host_json(raw)


def apply_setting_overrides(raw: dict[str, Any], settings: Mapping[str, str]) -> None:
    """App settings `AzureFunctionsJobHost__a__b=value` override host.json `a.b`, as on Azure.

    Keys match case-insensitively (.NET configuration); missing objects are created. Values are
    strings, which the section readers accept for numbers, booleans and TimeSpans alike.
    """
    prefix = OVERRIDE_PREFIX.lower()
    for name in settings:
        if not name.lower().startswith(prefix) or len(name) == len(prefix):
            continue
        path = name[len(prefix):].split("__")
        node = raw
        for part in path[:-1]:
            key = next((k for k in node if k.lower() == part.lower()), part)
            child = node.get(key)
            if not isinstance(child, dict):
                child = node[key] = {}
            node = child
        leaf = next((k for k in node if k.lower() == path[-1].lower()), path[-1])
        node[leaf] = settings[name]


def parse_host_json(raw: Any) -> HostOptions:
    warnings: list[str] = []
    reader = SectionReader(raw, FILE_NAME + ": ", warnings=warnings)
    version = reader.string("version", None)
    if version is None:
        raise ConfigError("the required 'version' property is missing; use \"2.0\"", path=f"{FILE_NAME}: version")
    if version != "2.0":
        raise ConfigError(f"only version \"2.0\" is supported, got {version!r}", path=f"{FILE_NAME}: version")
    timeout = _function_timeout(reader)
    log_levels = _logging(reader.section("logging"), warnings)
    retry = reader.raw("retry")
    if retry is not None and not isinstance(retry, dict):
        raise ConfigError("must be an object", path=f"{FILE_NAME}: retry")
    singleton = reader.raw("singleton") or {}
    _check_singleton(singleton, warnings)
    extensions = _extensions(reader.section("extensions"), warnings)
    telemetry_mode, telemetry_warning = parse_telemetry_mode(reader.raw("telemetryMode"))
    warnings.extend([telemetry_warning] if telemetry_warning else [])
    _known_keys(reader, KNOWN_TOP_LEVEL, QUIET_TOP_LEVEL, "", warnings)
    unknown: list[str] = []
    reader.finish(tolerated=unknown)
    if unknown:
        warnings.append(f"host.json: unknown top-level key(s) {', '.join(map(repr, unknown))} ignored, "
                        "as the Functions host ignores them")
    for message in warnings:
        log.warning(message)
    return HostOptions(version, timeout, log_levels, retry, dict(singleton), extensions, tuple(warnings), dict(raw),
                       telemetry_mode=telemetry_mode)


def _check_singleton(raw: Any, warnings: list[str]) -> None:
    """Validate `singleton` once at load, so its unknown keys are reported once (the timer and
    blob listeners read the options again, quietly)."""
    if not isinstance(raw, dict):
        raise ConfigError("must be an object", path=f"{FILE_NAME}: singleton")
    from funchost.triggers.timer.singleton import parse_singleton_options

    parse_singleton_options(raw, warnings)


def _function_timeout(reader: SectionReader) -> float | None:
    value = reader.raw("functionTimeout")
    if value is None:
        return DEFAULT_FUNCTION_TIMEOUT
    if isinstance(value, int) and not isinstance(value, bool):
        value = str(value)  # .NET configuration reads JSON numbers as strings
    if isinstance(value, str):
        try:
            if parse_timespan(value) == -86400.0:  # TimeSpan -1 day ("-1", "-1.00:00:00") = infinite
                return None
        except ValueError:
            pass
    seconds = reader.timespan("functionTimeout", DEFAULT_FUNCTION_TIMEOUT, minimum=1)
    return seconds


def _logging(section: SectionReader, warnings: list[str]) -> dict[str, str]:
    levels: dict[str, str] = {}
    log_level = section.raw("logLevel") or {}
    if not isinstance(log_level, dict):
        raise ConfigError("must be an object of category: level", path=section.key_path("logLevel"))
    for category, level in log_level.items():
        canonical = _LOG_LEVELS.get(str(level).lower())
        if canonical is None:
            raise ConfigError(f"unknown log level {level!r} (expected one of {sorted(_LOG_LEVELS.values())})",
                              path=f"{section.key_path('logLevel')}.{category}")
        levels[str(category)] = canonical
    _known_keys(section, KNOWN_LOGGING, QUIET_LOGGING, "logging.", warnings)
    section.finish()
    return levels


def _extensions(section: SectionReader, warnings: list[str]) -> dict[str, Any]:
    parsed: dict[str, Any] = {}
    for name, module_name in EXTENSION_PARSERS.items():
        parser = _parser(module_name)
        sub = section.section(name)
        if parser is None:
            if section.has(name):
                warnings.append(f"host.json: 'extensions.{name}' is recognised but not emulated by funchost; ignored")
            continue
        parsed[name] = parser(sub)
        sub.finish()
    _known_keys(section, KNOWN_EXTENSIONS, set(), "extensions.", warnings)
    unknown: list[str] = []
    section.finish(tolerated=unknown)
    warnings.extend(f"host.json: 'extensions.{name}' is not an extension funchost knows; ignored" for name in unknown)
    return parsed


def _known_keys(reader: SectionReader, not_emulated: set[str], quiet: set[str], prefix: str,
                warnings: list[str]) -> None:
    """Accept keys funchost knows but does not emulate: one warning each, or a debug line for the
    `quiet` ones. Every name is declared, so a near miss of one is reported as a typo."""
    for key in sorted(not_emulated | quiet):
        present = reader.has(key)
        reader.raw(key)
        if present and key in quiet:
            log.debug("host.json: '%s%s' is not needed by funchost; ignored", prefix, key)
        elif present:
            warnings.append(f"host.json: '{prefix}{key}' is recognised but not emulated by funchost; ignored")


def _parser(module_name: str) -> Any:
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name is not None and module_name.startswith(exc.name):
            return None
        raise
    return getattr(module, "parse", None)
