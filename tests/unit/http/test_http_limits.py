"""Server limits: Kestrel's defaults, read from app settings under Kestrel's configuration names."""

from __future__ import annotations

import resource

import pytest

from funchost.errors import ConfigError
from funchost.settings.app_settings import AppSettings
from funchost.triggers.http.limits import ServerLimits, default_max_connections


def limits(**values: str) -> ServerLimits:
    return ServerLimits.from_settings(AppSettings(values, environ={}))


def test_defaults_are_kestrels() -> None:
    found = limits()
    assert (found.max_request_line_size, found.max_request_headers_total_size, found.max_request_header_count) == (
        8192, 32768, 100)
    assert (found.keep_alive_timeout, found.request_headers_timeout) == (130.0, 30.0)
    assert (found.min_body_bytes_per_second, found.min_body_grace_period) == (240.0, 5.0)
    assert found.shutdown_timeout == 30.0


def test_settings_use_kestrels_configuration_names_in_both_spellings() -> None:
    found = limits(**{
        "Kestrel__Limits__MaxRequestHeaderCount": "200",
        "Kestrel:Limits:MaxRequestLineSize": "16384",
        "kestrel__limits__keepalivetimeout": "00:00:10",  # settings are case-insensitive
        "Kestrel__Limits__RequestHeadersTimeout": "00:00:02.5",
        "Kestrel__Limits__MaxConcurrentConnections": "50",
        "Kestrel__Limits__MinRequestBodyDataRate__BytesPerSecond": "0",
        "Kestrel:Limits:MinRequestBodyDataRate:GracePeriod": "00:00:02",
        "ASPNETCORE_SHUTDOWNTIMEOUTSECONDS": "3",
    })
    assert found.max_request_header_count == 200 and found.max_request_line_size == 16384
    assert found.keep_alive_timeout == 10.0 and found.request_headers_timeout == 2.5
    assert found.connection_limit == 50
    assert found.min_body_bytes_per_second == 0.0 and found.min_body_grace_period == 2.0
    assert found.shutdown_timeout == 3.0


@pytest.mark.parametrize(("name", "value", "message"), [
    ("Kestrel__Limits__MaxRequestHeaderCount", "0", "positive whole number"),
    ("Kestrel__Limits__MaxRequestHeadersTotalSize", "32k", "positive whole number"),
    ("Kestrel__Limits__KeepAliveTimeout", "130", None),  # a TimeSpan of 130 days is valid
    ("Kestrel__Limits__RequestHeadersTimeout", "soon", "not a valid TimeSpan"),
    ("Kestrel__Limits__RequestHeadersTimeout", "-00:00:01", "longer than 0"),
    ("Kestrel__Limits__MinRequestBodyDataRate__GracePeriod", "00:00:01", "longer than 1"),
    ("Kestrel__Limits__MinRequestBodyDataRate__BytesPerSecond", "-5", "bytes per second"),
    ("Kestrel__Limits__MinRequestBodyDataRate__BytesPerSecond", "nan", "bytes per second"),
    ("ASPNETCORE_SHUTDOWNTIMEOUTSECONDS", "1.5", "whole number of seconds"),
])
def test_malformed_values_are_errors_naming_the_setting(name: str, value: str, message: str | None) -> None:
    if message is None:
        limits(**{name: value})
        return
    with pytest.raises(ConfigError) as raised:
        limits(**{name: value})
    assert name in str(raised.value) and message in str(raised.value)


def test_default_connection_limit_keeps_descriptors_free(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(resource, "getrlimit", lambda _which: (1024, 4096))
    assert default_max_connections() == 768
    monkeypatch.setattr(resource, "getrlimit", lambda _which: (65536, 65536))
    assert default_max_connections() == 64512
    assert limits().connection_limit == 64512
