"""Reading a configuration section: typed keys, named defaults, values checked on load.

.NET configuration binding matches keys case-insensitively, so `BatchSize` and `batchSize` are
both accepted. A value of the wrong type or out of range is a `ConfigError` naming the key's full
path. A key nobody declared is one of two things, chosen by whoever makes the root reader:
- an error (funchost's own files, such as eventgrid.json: nothing else reads them);
- a warning collected in `warnings` (host.json): the Functions host binds its options with .NET's
  configuration binder, which ignores keys it does not know (`ConfigurationBinder.Bind`, with
  `BinderOptions.ErrorOnUnknownConfiguration` false by default), so an app with an old or
  misspelt key starts on Azure; funchost starts it too and says which key it ignored.
Either way the message suggests a declared key when one is close.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Mapping
from typing import Any

from funchost.errors import ConfigError
from funchost.settings.timespan import parse_timespan

_MISSING = object()


class SectionReader:
    def __init__(self, raw: Any, path: str, *, warnings: list[str] | None = None) -> None:
        """`warnings`: where unknown keys are reported instead of raised (inherited by sections)."""
        if raw is None:
            raw = {}
        if not isinstance(raw, Mapping):
            raise ConfigError("must be a JSON object", path=path)
        self.path = path
        self.warnings = warnings
        self._raw = {str(k): v for k, v in raw.items()}
        self._folded = {k.lower(): k for k in self._raw}
        self._known: dict[str, str] = {}  # lower-cased -> as declared

    def _lookup(self, key: str) -> tuple[str, Any]:
        self._known.setdefault(key.lower(), key)
        actual = self._folded.get(key.lower())
        if actual is None:
            return key, _MISSING
        return actual, self._raw[actual]

    def key_path(self, key: str) -> str:
        # The root reader's path is "host.json: "; nested ones are dotted ("host.json: a.b").
        return f"{self.path}{key}" if self.path.endswith(": ") else f"{self.path}.{key}"

    def has(self, key: str) -> bool:
        return key.lower() in self._folded

    def raw(self, key: str, default: Any = None) -> Any:
        _, value = self._lookup(key)
        return default if value is _MISSING else value

    def integer(self, key: str, default: int, *, minimum: int | None = None, maximum: int | None = None) -> int:
        actual, value = self._lookup(key)
        if value is _MISSING:
            return default
        if isinstance(value, str) and value.strip().lstrip("-").isdigit():
            value = int(value)
        if isinstance(value, bool) or not isinstance(value, int):
            raise ConfigError(f"must be an integer, got {value!r}", path=self.key_path(actual))
        if minimum is not None and value < minimum:
            raise ConfigError(f"must be >= {minimum}, got {value}", path=self.key_path(actual))
        if maximum is not None and value > maximum:
            raise ConfigError(f"must be <= {maximum}, got {value}", path=self.key_path(actual))
        return value

    def boolean(self, key: str, default: bool) -> bool:
        actual, value = self._lookup(key)
        if value is _MISSING:
            return default
        if isinstance(value, str) and value.lower() in ("true", "false"):
            return value.lower() == "true"
        if not isinstance(value, bool):
            raise ConfigError(f"must be true or false, got {value!r}", path=self.key_path(actual))
        return value

    def string(self, key: str, default: str | None, *, choices: Mapping[str, str] | None = None) -> str | None:
        """`choices` maps lower-cased accepted values to their canonical spelling."""
        actual, value = self._lookup(key)
        if value is _MISSING or value is None:
            return default
        if not isinstance(value, str):
            raise ConfigError(f"must be a string, got {value!r}", path=self.key_path(actual))
        if choices is not None:
            canonical = choices.get(value.lower())
            if canonical is None:
                raise ConfigError(f"must be one of {sorted(set(choices.values()))}, got {value!r}",
                                  path=self.key_path(actual))
            return canonical
        return value

    def timespan(self, key: str, default: float | None, *, minimum: float | None = None,
                 maximum: float | None = None) -> float | None:
        """Seconds; host.json durations are TimeSpan strings ("00:00:02")."""
        actual, value = self._lookup(key)
        if value is _MISSING or value is None:
            return default
        try:
            seconds = parse_timespan(value)
        except ValueError as exc:
            raise ConfigError(str(exc), path=self.key_path(actual)) from exc
        if minimum is not None and seconds < minimum:
            raise ConfigError(f"must be at least {minimum:g} seconds, got {value!r}", path=self.key_path(actual))
        if maximum is not None and seconds > maximum:
            raise ConfigError(f"must be at most {maximum:g} seconds, got {value!r}", path=self.key_path(actual))
        return seconds

    def section(self, key: str) -> SectionReader:
        actual, value = self._lookup(key)
        return SectionReader(None if value is _MISSING else value, self.key_path(actual), warnings=self.warnings)

    def child(self, raw: Any, path: str) -> SectionReader:
        """A reader of `raw` that reports unknown keys as this one does."""
        return SectionReader(raw, path, warnings=self.warnings)

    def custom(self, key: str, default: Any, convert: Callable[[Any, str], Any]) -> Any:
        actual, value = self._lookup(key)
        if value is _MISSING:
            return default
        return convert(value, self.key_path(actual))

    def finish(self, *, tolerated: list[str] | None = None) -> None:
        """Report every key that no reader call asked for: appended to `warnings` when the root
        reader was given a list, a ConfigError otherwise.

        With `tolerated` (for levels where unknown names are expected, such as other extensions'
        sections), a key with no close declared key is appended to it instead, for the caller to
        word; a near miss of a declared key is reported as above."""
        for key in self._raw:
            if key.lower() in self._known:
                continue
            close = difflib.get_close_matches(key.lower(), sorted(self._known), n=1, cutoff=0.6)
            if tolerated is not None and not close:
                tolerated.append(key)
                continue
            hint = f" (did you mean '{self._known[close[0]]}'?)" if close else ""
            if self.warnings is None:
                raise ConfigError(f"unknown key{hint}", path=self.key_path(key))
            self.warnings.append(f"{self.key_path(key)}: unknown key ignored, as the Functions host ignores "
                                 f"keys it does not bind{hint}")
