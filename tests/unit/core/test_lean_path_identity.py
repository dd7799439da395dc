"""The lean invocation path gives what the library's converters give, on many generated inputs.

`func.HttpRequest` and `func.QueueMessage` built straight from the host's data are compared with
`HttpRequestConverter.decode` / `QueueMessageInConverter.decode` of the Datums the worker would
receive; a returned `func.HttpResponse` read directly is compared with
`HttpResponseConverter.encode` followed by the host's response conversion (and the changes the
converter makes to the response object).
"""

from __future__ import annotations

import string
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import azure.functions as func
import pytest
from azure.functions.http import HttpRequestConverter, HttpResponseConverter
from azure.functions.meta import Datum
from azure.functions.queue import QueueMessageInConverter
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from funchost.indexing.spec import BindingSpec, FunctionSpec, ParameterSpec
from funchost.invocation import arguments
from funchost.invocation.http_response import HttpResponseDatum, encode_response
from funchost.invocation.native import LazyMapping, NativeDatum
from funchost.storage.queues import QueueMessage
from funchost.triggers.http.conversion import (
    IncomingRequest,
    query_values,
    request_datum,
    response_from_output,
)
from funchost.triggers.http.native_request import HttpRequestDatum
from funchost.triggers.queue.messages import MAX_DATETIME_TEXT, build_request

SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# -- HTTP requests ---------------------------------------------------------------------------------

_token = st.text(alphabet=string.ascii_letters + string.digits + "-_.~", min_size=1, max_size=12)
_text = st.text(alphabet=st.characters(codec="latin-1", exclude_categories=("Cs",)), max_size=20)
_query_part = st.text(alphabet=string.ascii_letters + string.digits + "%+&=;._-ÄÖ", max_size=30)


@st.composite
def incoming_requests(draw: st.DrawFn) -> IncomingRequest:
    headers = draw(st.dictionaries(_token.map(str.lower), _text, max_size=8))
    body = draw(st.one_of(st.binary(max_size=64), st.sampled_from([b"", b'{"a": 1}', b"[1, 2]", b"not json"])))
    return IncomingRequest(
        method=draw(st.sampled_from(["GET", "POST", "put", "DELETE", "PATCH"])),
        scheme=draw(st.sampled_from(["http", "https"])),
        host=draw(st.sampled_from(["localhost:7071", "example.org", "127.0.0.1:8080"])),
        raw_path="/" + "/".join(draw(st.lists(_token, max_size=4))),
        query_string=draw(_query_part),
        headers=headers,
        body=body,
        content_length=len(body) if draw(st.booleans()) else None,
        route_values=draw(st.dictionaries(_token, _text, max_size=3)),
    )


def _request_view(request: func.HttpRequest) -> dict[str, Any]:
    try:
        parsed: Any = ("json", request.get_json())
    except ValueError as exc:
        parsed = ("error", type(exc).__name__)
    return {"type": type(request), "method": request.method, "url": request.url, "headers": dict(request.headers),
            "params": dict(request.params), "route_params": dict(request.route_params),
            "body": request.get_body(), "json": parsed}


@SETTINGS
@given(incoming_requests())
def test_http_request_built_directly_equals_the_converters(incoming: IncomingRequest) -> None:
    query = query_values(incoming.query_string) if incoming.query_string else {}
    generic = request_datum(incoming, query)
    direct = HttpRequestDatum(incoming, query)
    expected = HttpRequestConverter.decode(generic, trigger_metadata={})
    assert _request_view(direct.decode()) == _request_view(expected)
    # The Datum value, built on first read, is the worker's.
    assert direct.type == generic.type and direct.value == generic.value


# -- HTTP responses --------------------------------------------------------------------------------

_header_name = st.sampled_from(["X-Custom", "x-custom", "Content-Type", "content-length", "Transfer-Encoding",
                                "Cache-Control", "Location", "Set-Cookie"])
_cookie = st.sampled_from(["a=1", "session=abc; Path=/; HttpOnly", "b=2; Max-Age=60; Secure; SameSite=Lax",
                           "c=x y; Domain=example.org; Expires=Wed, 21 Oct 2037 07:28:00 GMT"])


@st.composite
def response_arguments(draw: st.DrawFn) -> dict[str, Any]:
    headers: dict[str, str] = {}
    for name in draw(st.lists(_header_name, max_size=4)):
        headers[name] = draw(_cookie) if name == "Set-Cookie" else draw(st.text(string.ascii_letters + " /;=", max_size=12))
    return {
        "body": draw(st.one_of(st.none(), st.text(max_size=20), st.binary(max_size=20))),
        "status_code": draw(st.one_of(st.none(), st.sampled_from([200, 201, 204, 302, 404, 500]))),
        "headers": headers or None,
        "mimetype": draw(st.one_of(st.none(), st.sampled_from(["text/html", "application/json", "image/png"]))),
        "charset": draw(st.one_of(st.none(), st.sampled_from(["utf-8", "latin-1"]))),
    }


def _response(arguments_: dict[str, Any]) -> func.HttpResponse | None:
    try:
        return func.HttpResponse(**arguments_)
    except UnicodeEncodeError:
        return None  # a body the charset cannot encode: the constructor refuses it either way


@SETTINGS
@given(response_arguments())
def test_http_response_read_directly_equals_the_converter_and_host(arguments_: dict[str, Any]) -> None:
    library_response, direct_response = _response(arguments_), _response(arguments_)
    if library_response is None or direct_response is None:
        return
    library_datum = HttpResponseConverter.encode(library_response, expected_type=None)
    direct_datum = encode_response(direct_response)
    assert response_from_output(direct_datum) == response_from_output(library_datum)
    # The same changes to the response object (content-type added, Set-Cookie moved).
    assert list(direct_response.headers.items()) == list(library_response.headers.items())
    # The lazily built Datum value is the converter's.
    direct_value, library_value = direct_datum.value, library_datum.value
    for key in ("status_code", "headers", "body"):
        assert direct_value[key] == library_value[key]
    render = [[c.output() for c in cookies] if cookies else cookies
              for cookies in (direct_value["cookies"], library_value["cookies"])]
    assert render[0] == render[1]


def test_http_response_with_an_unusual_status_takes_the_generic_route() -> None:
    response = func.HttpResponse("x", status_code=True)  # type: ignore[arg-type]
    outgoing = response_from_output(encode_response(response))
    assert outgoing.status == 500  # int("True") fails in the host's conversion, as before


# -- queue messages --------------------------------------------------------------------------------

_zones = st.sampled_from([UTC, timezone(timedelta(hours=2)), timezone(timedelta(hours=-7, minutes=-30))])
_times = st.datetimes(min_value=datetime(1970, 1, 2), max_value=datetime(9998, 12, 31), timezones=_zones)


@st.composite
def queue_messages(draw: st.DrawFn) -> tuple[QueueMessage, bytes]:
    body = draw(st.one_of(st.text(max_size=30).map(lambda t: t.encode("utf-8", "surrogatepass")),
                          st.binary(max_size=30), st.just(b'{"name": "x", "n": 2}')))
    message = QueueMessage(
        id=draw(st.uuids()).__str__(), content="", dequeue_count=draw(st.integers(0, 10)),
        insertion_time=draw(_times), expiration_time=draw(st.one_of(st.none(), _times)),
        next_visible_time=draw(st.one_of(st.none(), _times)),
        pop_receipt=draw(st.one_of(st.none(), st.just(""), _token)))
    return message, body


def _queue_function(data_type: str | None) -> FunctionSpec:
    trigger = BindingSpec("msg", "queueTrigger", "in", data_type, {"queueName": "q"}, is_trigger=True)
    parameter = ParameterSpec("msg", func.QueueMessage, trigger)
    return FunctionSpec("f", lambda msg: None, trigger, (trigger,), (parameter,), None, None, False,
                        "function_app.py", ".", None)


def _message_view(message: func.QueueMessage) -> dict[str, Any]:
    return {"type": type(message), "id": message.id, "body": message.get_body(),
            "dequeue_count": message.dequeue_count,
            # repr: aware datetimes in different zones compare equal; the zone must match too
            "expiration_time": repr(message.expiration_time), "insertion_time": repr(message.insertion_time),
            "time_next_visible": repr(message.time_next_visible), "pop_receipt": message.pop_receipt}


@SETTINGS
@given(queue_messages(), st.sampled_from([None, "binary", "string"]))
def test_queue_message_built_directly_equals_the_converters(drawn: tuple[QueueMessage, bytes],
                                                            data_type: str | None) -> None:
    message, body = drawn
    now = datetime(2026, 1, 1, tzinfo=UTC)
    request = build_request(_queue_function(data_type), message, body, "q", now)
    value = request.trigger_value
    assert isinstance(value, NativeDatum)
    generic = Datum(value.value, value.type)
    expected = QueueMessageInConverter.decode(generic, trigger_metadata=request.trigger_metadata)
    assert _message_view(value.decode()) == _message_view(expected)


def test_a_missing_expiration_is_the_librarys_max_value() -> None:
    message = QueueMessage(id="1", content="", dequeue_count=1, insertion_time=datetime(2026, 1, 1, tzinfo=UTC),
                           expiration_time=None, next_visible_time=None, pop_receipt="r")
    request = build_request(_queue_function(None), message, b"x", "q", datetime.now(UTC))
    direct = request.trigger_value.decode()  # type: ignore[attr-defined]
    assert direct.expiration_time == QueueMessageInConverter._parse_datetime(MAX_DATETIME_TEXT)


def test_queue_binding_data_is_built_on_first_read() -> None:
    message = QueueMessage(id="1", content="", dequeue_count=2, insertion_time=datetime(2026, 1, 1, tzinfo=UTC),
                           expiration_time=None, next_visible_time=None, pop_receipt="r")
    request = build_request(_queue_function(None), message, b'{"name": "x"}', "q", datetime.now(UTC))
    assert isinstance(request.binding_data, LazyMapping)
    assert request.binding_data["name"] == "x" and request.binding_data["DequeueCount"] == 2
    assert request.binding_data["QueueTrigger"] == '{"name": "x"}'


# -- the plan takes the direct way -----------------------------------------------------------------


class _Refusing(NativeDatum):
    """A native trigger value whose generic Datum must not be needed."""

    converter = HttpRequestConverter

    def __init__(self, type_: str = "http") -> None:
        super().__init__(type_, self._fail)

    @staticmethod
    def _fail() -> Any:
        raise AssertionError("the generic Datum was built")

    def decode(self) -> str:
        return "direct"


def test_the_decoder_of_the_matching_converter_builds_directly() -> None:
    trigger = BindingSpec("req", "httpTrigger", "in", None, {}, is_trigger=True)
    decode = arguments.decoder_for(ParameterSpec("req", func.HttpRequest, trigger))
    assert decode(_Refusing(), {}) == "direct"


def test_another_converter_reads_the_generic_datum() -> None:
    trigger = BindingSpec("msg", "queueTrigger", "in", None, {}, is_trigger=True)
    decode = arguments.decoder_for(ParameterSpec("msg", func.QueueMessage, trigger))
    with pytest.raises(AssertionError, match="generic Datum"):
        decode(_Refusing("string"), {})


def test_a_returned_response_is_read_directly() -> None:
    binding = BindingSpec("$return", "http", "out", None, {})
    encoded = arguments.return_encoder_for(binding, func.HttpResponse)(func.HttpResponse("hi", status_code=201))
    assert isinstance(encoded, HttpResponseDatum)
    assert encoded.parts.status_code == 201 and encoded.parts.body == b"hi"
