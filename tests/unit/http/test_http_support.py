"""The httpTrigger plug-in seams the host calls: validate and describe."""

from __future__ import annotations

import pytest

from funchost.errors import AppLoadError
from funchost.runtime import registry


def test_registry_finds_the_http_trigger_and_output() -> None:
    assert registry.trigger_support("httpTrigger").trigger_type == "httpTrigger"
    assert registry.binding_support("http").binding_type == "http"


def test_describe_lists_methods_and_url(make_runtime, function_factory) -> None:
    function = function_factory("hello", route="greet/{name?}", methods=["POST", "GET"])
    runtime = make_runtime([function], host_json={"extensions": {"http": {"routePrefix": "v1"}}})
    runtime.services.base_url = "http://localhost:9000"
    described = registry.trigger_support("httpTrigger").describe(function, runtime)
    assert described == "[GET,POST] http://localhost:9000/v1/greet/{name?}"


def test_validate_puts_the_later_of_two_conflicting_functions_in_error(make_runtime, function_factory) -> None:
    first, second = function_factory("alpha", route="same"), function_factory("beta", route="same")
    runtime = make_runtime([first, second])
    support = registry.trigger_support("httpTrigger")
    support.validate(first, runtime)
    with pytest.raises(AppLoadError, match="function 'alpha'"):
        support.validate(second, runtime)
