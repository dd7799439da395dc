"""Route templates and the first-match route table (azure-semantics 3.3)."""

from __future__ import annotations

import pytest

from funchost.errors import ConfigError
from funchost.triggers.http.routing import RouteTable, RouteTemplate, split_path, validate_route


def match(template: str, path: str) -> dict[str, str] | None:
    return RouteTemplate.parse(template).match(split_path(path))


def test_literal_segments_match_case_insensitively() -> None:
    assert match("api/Hello", "/API/hello") == {}
    assert match("api/hello", "/api/hellox") is None


def test_trailing_slash_is_tolerated_but_extra_segments_are_not() -> None:
    assert match("api/hello", "/api/hello/") == {}
    assert match("api/hello", "/api/hello/more") is None


def test_parameter_takes_one_decoded_segment() -> None:
    assert match("api/users/{id}", "/api/users/a%20b") == {"id": "a b"}
    assert match("api/users/{id}", "/api/users") is None


def test_encoded_slash_stays_encoded_in_a_value() -> None:
    assert match("api/users/{id}", "/api/users/a%2Fb") == {"id": "a%2Fb"}


def test_optional_parameter_is_omitted_when_absent() -> None:
    assert match("api/items/{id?}", "/api/items") == {}
    assert match("api/items/{id?}", "/api/items/4") == {"id": "4"}


def test_default_value_is_used_when_absent() -> None:
    assert match("api/greet/{name=world}", "/api/greet") == {"name": "world"}
    assert match("api/greet/{name=world}", "/api/greet/bob") == {"name": "bob"}


@pytest.mark.parametrize("template", ["api/files/{*rest}", "api/files/{**rest}"])
def test_catch_all_takes_the_rest_of_the_path(template: str) -> None:
    assert match(template, "/api/files/a/b/c.txt") == {"rest": "a/b/c.txt"}
    assert match(template, "/api/files") == {}


def test_chained_constraints_with_optional_marker() -> None:
    template = "api/order/{qty:int:max(10)?}"
    assert match(template, "/api/order/10") == {"qty": "10"}
    assert match(template, "/api/order/11") is None
    assert match(template, "/api/order/x") is None
    assert match(template, "/api/order") == {}


def test_regex_constraint_with_escaped_braces() -> None:
    template = r"api/zip/{code:regex(^\d{{5}}$)}"
    assert match(template, "/api/zip/12345") == {"code": "12345"}
    assert match(template, "/api/zip/1234") is None


def test_complex_segment_matches_right_to_left() -> None:
    assert match("api/f/{name}.{ext}", "/api/f/a.b.txt") == {"name": "a.b", "ext": "txt"}
    assert match("api/f/{name}.{ext?}", "/api/f/readme") == {"name": "readme"}


def test_unknown_constraint_is_a_start_up_error() -> None:
    with pytest.raises(ConfigError, match="could not be resolved"):
        RouteTemplate.parse("api/{id:banana}")


def test_unbalanced_braces_are_errors() -> None:
    with pytest.raises(ConfigError):
        RouteTemplate.parse("api/{id")
    with pytest.raises(ConfigError):
        RouteTemplate.parse("api/id}")


def test_first_match_in_name_order_wins_without_literal_precedence(function_factory) -> None:
    # "a_param" sorts before "b_literal", so its {id} route wins even for the literal path.
    table, errors = RouteTable.build([
        function_factory("b_literal", route="items/special"),
        function_factory("a_param", route="items/{id}"),
    ], "api")
    assert errors == {}
    found = table.match("GET", "/api/items/special")
    assert found is not None and found[0].function.name == "a_param"


def test_name_order_is_ordinal_case_insensitive(function_factory) -> None:
    table, _ = RouteTable.build([
        function_factory("Zeta", route="x/{id}"),
        function_factory("alpha", route="x/{name}"),
    ], "api")
    found = table.match("GET", "/api/x/1")
    assert found is not None and found[0].function.name == "alpha"


def test_method_constraint_skips_to_the_next_route(function_factory) -> None:
    table, _ = RouteTable.build([
        function_factory("a_get", route="thing", methods=["GET"]),
        function_factory("b_post", route="things", methods=["POST"]),
        function_factory("c_any", route="{*all}"),
    ], "api")
    post = table.match("POST", "/api/thing")
    assert post is not None and post[0].function.name == "c_any"
    get = table.match("get", "/api/thing")
    assert get is not None and get[0].function.name == "a_get"


def test_route_defaults_to_function_name_and_prefix_may_be_empty(function_factory) -> None:
    table, _ = RouteTable.build([function_factory("hello")], "")
    assert table.match("GET", "/hello") is not None
    assert table.match("GET", "/api/hello") is None


def test_routes_under_admin_or_runtime_are_rejected(function_factory) -> None:
    for route in ("admin/x", "/Runtime/hooks", "administrator"):
        with pytest.raises(ConfigError, match="built in routes"):
            validate_route(function_factory("f", route=route), [])


def test_equal_routes_with_intersecting_methods_put_the_second_in_error(function_factory) -> None:
    first = function_factory("first", route="Same/", methods=["GET", "POST"])
    second = function_factory("second", route="/same", methods=["POST"])
    table, errors = RouteTable.build([second, first], "api")
    assert list(errors) == ["second"]
    assert "function 'first'" in errors["second"]
    assert [r.function.name for r in table.routes] == ["first"]


def test_equal_routes_with_disjoint_methods_are_allowed(function_factory) -> None:
    _, errors = RouteTable.build([
        function_factory("getter", route="same", methods=["GET"]),
        function_factory("poster", route="same", methods=["POST"]),
    ], "api")
    assert errors == {}


def test_no_methods_means_all_methods_and_conflicts_with_any(function_factory) -> None:
    _, errors = RouteTable.build([
        function_factory("a", route="same"),
        function_factory("b", route="same", methods=["DELETE"]),
    ], "api")
    assert list(errors) == ["b"]


def test_a_route_value_of_thousands_of_digits_does_not_match_an_int_route(function_factory) -> None:
    table, _ = RouteTable.build([function_factory("item", route="items/{id:int}")], "api")
    assert table.match("GET", "/api/items/" + "1" * 5000) is None
    assert table.match("GET", "/api/items/12") is not None


def test_a_path_asked_again_gets_the_same_answer_and_values_of_its_own(function_factory, monkeypatch) -> None:
    from funchost.triggers.http import routing

    table, _ = RouteTable.build([function_factory("item", route="items/{id:int}", methods=["GET"]),
                                 function_factory("zoo", route="{*rest}")], "api")
    first = table.match("GET", "/api/items/7")
    assert first is not None and first[0].function.name == "item" and first[1] == {"id": "7"}
    first[1]["id"] = "changed by the caller"
    again = table.match("GET", "/api/items/7")
    assert again is not None and again[0] is first[0] and again[1] == {"id": "7"}
    post = table.match("POST", "/api/items/7")  # the method is part of the question
    assert post is not None and post[0].function.name == "zoo"
    assert table.match("GET", "/elsewhere") is None and table.match("GET", "/elsewhere") is None
    monkeypatch.setattr(routing, "MATCHES_KEPT", 3)
    for n in range(10):  # a flood of new paths: the answers kept stay bounded, each still right
        found = table.match("GET", f"/api/items/{n}")
        assert found is not None and found[1] == {"id": str(n)}
        assert len(table._answers) <= 3
    table._answers.clear()
    long_path = "/api/items/" + "1" * routing.KEPT_PATH_LENGTH
    found = table.match("GET", long_path)  # too long for an int route value: the catch-all's
    assert found is not None and found[0].function.name == "zoo"
    assert not table._answers  # a long path is matched, not kept
