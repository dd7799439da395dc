"""host.json extensions.http parsing."""

from __future__ import annotations

import pytest

from funchost.errors import ConfigError
from funchost.settings.host_json import parse_host_json
from funchost.triggers.http.options import HttpOptions


def http(section: dict | None) -> HttpOptions:
    raw = {"version": "2.0"}
    if section is not None:
        raw["extensions"] = {"http": section}
    return parse_host_json(raw).extension("http")


def test_defaults() -> None:
    options = http(None)
    assert options == HttpOptions()
    assert options.route_prefix == "api"
    assert not options.request_queue_enabled


def test_empty_route_prefix_means_no_prefix() -> None:
    assert http({"routePrefix": ""}).route_prefix == ""
    assert http({"routePrefix": "/v1/"}).route_prefix == "v1"


def test_all_known_keys_are_accepted() -> None:
    options = http({"routePrefix": "x", "maxOutstandingRequests": 200, "MaxConcurrentRequests": 100,
                    "dynamicThrottlesEnabled": True, "hsts": {"isEnabled": True},
                    "customHeaders": {"X-Frame-Options": "DENY"}})
    assert options.max_outstanding_requests == 200 and options.max_concurrent_requests == 100
    assert options.request_queue_enabled
    assert options.custom_headers == {"X-Frame-Options": "DENY"}


def test_unknown_key_is_a_warning_naming_its_path() -> None:
    options = parse_host_json({"version": "2.0", "extensions": {"http": {"routePrefx": "x"}}})
    assert options.extension("http").route_prefix == "api"
    assert any(w.startswith("host.json: extensions.http.routePrefx: unknown key ignored") and
               "did you mean 'routePrefix'" in w for w in options.warnings)


@pytest.mark.parametrize("section", [
    {"maxConcurrentRequests": "many"},
    {"maxOutstandingRequests": 0},
    {"maxOutstandingRequests": -2},
    {"customHeaders": {"X": 1}},
    {"hsts": []},
    {"routePrefix": 5},
])
def test_invalid_values(section: dict) -> None:
    with pytest.raises(ConfigError):
        http(section)
