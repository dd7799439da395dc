"""Function-level retry settings: `@app.retry(...)` (v2) and host.json `retry` (azure-semantics 2.6, 5.1)."""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from funchost.errors import ConfigError
from funchost.indexing.spec import RetryOptions
from funchost.settings.timespan import parse_timespan


def _hms_seconds(value: Any, what: str) -> float:
    """The worker parses intervals with time.strptime('%H:%M:%S') (so hours <= 23)."""
    try:
        parsed = time.strptime(str(value), "%H:%M:%S")
    except ValueError as exc:
        raise ValueError(f"{what} must be HH:MM:SS, got {value!r}") from exc
    return float(parsed.tm_hour * 3600 + parsed.tm_min * 60 + parsed.tm_sec)


def from_decorator(setting: Mapping[str, Any]) -> RetryOptions:
    """From the library's `retry_policy` setting (snake_case keys). ValueError on bad values."""
    try:
        max_retry_count = int(setting.get("max_retry_count"))  # type: ignore[arg-type]
    except (TypeError, ValueError) as exc:
        raise ValueError(f"max_retry_count must be an integer, got {setting.get('max_retry_count')!r}") from exc
    strategy = str(setting.get("strategy", ""))
    if strategy == "fixed_delay":
        if setting.get("delay_interval") is None:
            raise ValueError("fixed_delay needs delay_interval")
        options = RetryOptions("fixed_delay", max_retry_count,
                               delay_interval=_hms_seconds(setting["delay_interval"], "delay_interval"))
    else:  # the worker maps anything else to exponential_backoff
        for key in ("minimum_interval", "maximum_interval"):
            if setting.get(key) is None:
                raise ValueError(f"exponential_backoff needs {key}")
        options = RetryOptions(
            "exponential_backoff",
            max_retry_count,
            minimum_interval=_hms_seconds(setting["minimum_interval"], "minimum_interval"),
            maximum_interval=_hms_seconds(setting["maximum_interval"], "maximum_interval"),
        )
    validate(options)
    return options


def from_host_json(raw: Mapping[str, Any]) -> RetryOptions:
    """host.json `retry` object (camelCase, TimeSpan strings); a class-level default."""
    folded = {str(k).lower(): v for k, v in raw.items()}
    known = {"strategy", "maxretrycount", "delayinterval", "minimuminterval", "maximuminterval"}
    for key in folded:
        if key not in known:
            raise ConfigError("unknown key", path=f"host.json: retry.{key}")
    strategy = str(folded.get("strategy", "")).lower()
    if strategy not in ("fixeddelay", "exponentialbackoff"):
        raise ConfigError("must be fixedDelay or exponentialBackoff", path="host.json: retry.strategy")
    if "maxretrycount" not in folded:
        raise ConfigError("is required", path="host.json: retry.maxRetryCount")
    try:
        count = int(folded["maxretrycount"])
        if strategy == "fixeddelay":
            options = RetryOptions("fixed_delay", count, delay_interval=parse_timespan(folded["delayinterval"]))
        else:
            options = RetryOptions(
                "exponential_backoff", count,
                minimum_interval=parse_timespan(folded["minimuminterval"]),
                maximum_interval=parse_timespan(folded["maximuminterval"]),
            )
        validate(options)
    except KeyError as exc:
        raise ConfigError("is required", path=f"host.json: retry.{exc.args[0]}") from exc
    except ValueError as exc:
        raise ConfigError(str(exc), path="host.json: retry") from exc
    return options


def validate(options: RetryOptions) -> None:
    """The host's ValidateRetryOptions."""
    if options.max_retry_count < -1:
        raise ValueError("max_retry_count must be -1 (forever) or a non-negative number")
    if options.strategy == "fixed_delay":
        if options.delay_interval is None or options.delay_interval < 0:
            raise ValueError("delay_interval must be a non-negative interval")
    else:
        lo, hi = options.minimum_interval, options.maximum_interval
        if lo is None or hi is None or lo < 0 or hi < 0:
            raise ValueError("minimum_interval and maximum_interval must be non-negative intervals")
        if lo > hi:
            raise ValueError("minimum_interval must not be greater than maximum_interval")
