"""Hypothesis strategies for hostile HTTP requests, and the checks the fuzz suite applies.

Requests are built from pieces that reach deep into the host (the example apps' routes, the
admin API, the Event Grid endpoints, valid keys) mixed with what breaks parsers: numbers of
thousands of digits, bad and lone-surrogate percent-encoding, invalid UTF-8, JSON nested
100,000 deep, lone surrogates in JSON, wrong content types, huge and repeated headers, and
raw bytes that are not HTTP at all.
"""

from __future__ import annotations

import json
import os
import string
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hypothesis import strategies as st
from tests.acceptance.rawhttp import Response, exchange, request_bytes

EXAMPLES = int(os.environ.get("FUNCHOST_FUZZ_EXAMPLES", "100"))  # per test; a nightly run sets thousands
REPORT = os.environ.get("FUNCHOST_FUZZ_REPORT")  # a file for the figures (requests, 5xx, tracebacks)

TOKEN = string.ascii_letters + string.digits + "!#$%&'*+-.^_`|~"
UNRESERVED = string.ascii_letters + string.digits + "-._~"
WORDS = ["api", "hello", "echo", "products", "books", "orders", "files", "secure", "maintenance", "nothing",
         "login", "fail", "items", "health", "admin", "host", "status", "ping", "functions", "keys", "yearly",
         "eventgrid", "topics", "default", "cloudevents", "storage", "runtime", "webhooks", "events",
         "on_blob_event", "process_blob_job", "http_app_func", "HELLO", "Api", ""]
CONTENT_TYPES = ["application/json", "application/json; charset=utf-16", "application/json; charset=latin-1",
                 "text/plain", "text/plain; charset=utf-8", "application/octet-stream",
                 "application/cloudevents+json", "application/cloudevents-batch+json",
                 "application/x-www-form-urlencoded", "multipart/form-data; boundary=xyz", "", ";;;", "*/*"]
SURROGATES = st.characters(categories=["Cs"])
ANY_CHAR = st.characters(codec=None) | SURROGATES  # every code point, lone surrogates included


def percent(data: bytes) -> str:
    return "".join(f"%{byte:02X}" for byte in data)


def encode_text(text: str) -> bytes:
    """UTF-8, with lone surrogates as their 3-byte forms (invalid UTF-8, as a careless client sends)."""
    return text.encode("utf-8", "surrogatepass")


huge_digits = st.integers(1, 9000).map(lambda n: "9" * n)
numbers = st.one_of(st.integers(-10, 10).map(str), st.sampled_from(["2147483648", "-0", "+5", "1e5", " 7", "NaN"]),
                    huge_digits)
segment = st.one_of(
    st.sampled_from(WORDS),
    numbers,
    st.text(UNRESERVED, max_size=12),
    st.text(UNRESERVED + "%", max_size=12),  # stray '%': bad percent-encoding
    st.binary(max_size=8).map(percent),  # percent-encoded bytes, often not UTF-8
    st.text(ANY_CHAR, max_size=6).map(lambda t: percent(encode_text(t))),
    st.sampled_from(["%2F", "%2f", "..", ".", "%00", "%", "%zz", "%C3", "%ED%A0%80", "{id}", "*"]),
)
path = st.lists(segment, min_size=0, max_size=6).map(lambda parts: "/" + "/".join(parts))
query_value = st.one_of(st.text(UNRESERVED + "%+=&", max_size=20), numbers,
                        st.text(ANY_CHAR, max_size=8).map(lambda t: percent(encode_text(t))))
query = st.lists(st.tuples(st.sampled_from(["code", "name", "functionName", "q", "aeg-sas-key", "CODE", ""])
                           | st.text(UNRESERVED, max_size=6), query_value), max_size=4).map(
    lambda pairs: "&".join(f"{k}={v}" for k, v in pairs))
header_value = st.text(st.characters(min_codepoint=0x20, max_codepoint=0xFF, exclude_characters="\x7f"), max_size=40)
header_name = st.sampled_from(["accept", "cookie", "traceparent", "expect", "x-forwarded-for", "x-forwarded-proto",
                               "content-encoding", "idempotency-key", "aeg-sas-token", "authorization",
                               "x-ms-client-request-id", "origin"]) | st.text(TOKEN, min_size=1, max_size=12)


def json_values(text: st.SearchStrategy[str]) -> st.SearchStrategy[Any]:
    leaves = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | text
    return st.recursive(leaves, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(text, inner, max_size=4),
                        max_leaves=20)


json_text = st.text(ANY_CHAR, max_size=12)
# Deep enough for json.loads' RecursionError (about 1,000) and still under a 32 KiB body limit.
nested = (st.integers(1, 100_000) | st.integers(990, 16_000)).flatmap(lambda n: st.sampled_from([b"[" * n, b"[" * n + b"]" * n,
                                                                   b'{"a":' * n + b"1" + b"}" * n]))
body = st.one_of(
    st.just(b""),
    json_values(json_text).map(lambda v: json.dumps(v).encode()),  # "\ud800" escapes
    json_values(json_text).map(lambda v: encode_text(json.dumps(v, ensure_ascii=False))),  # raw, maybe invalid UTF-8
    json_values(json_text).map(lambda v: json.dumps(v).encode("utf-16")),
    nested,
    huge_digits.map(str.encode),
    st.binary(max_size=600),
    st.dictionaries(st.sampled_from(["name", "input", "id", "containerName", "blobName"]), json_values(json_text),
                    max_size=3).map(lambda d: json.dumps(d).encode()),
)


def eventgrid_event(text: st.SearchStrategy[str]) -> st.SearchStrategy[Any]:
    value = json_values(text)
    fields = {"id": text | value, "subject": text | value, "eventType": text | st.sampled_from(
        ["Microsoft.Storage.BlobCreated", "Custom"]), "eventTime": st.sampled_from(
        ["2024-05-01T10:00:00Z", "2024-13-45T99:00:00Z", "yesterday", "2024-05-01T10:00:00.12345678901Z"]) | value,
        "data": value, "dataVersion": text | value, "topic": text, "specversion": st.sampled_from(["1.0", "0.3"]),
        "source": text, "type": text, "time": text, "data_base64": text}
    return st.fixed_dictionaries({}, optional=fields)


event_bodies = st.one_of(
    st.lists(eventgrid_event(json_text), max_size=3).map(lambda v: json.dumps(v).encode()),
    eventgrid_event(json_text).map(lambda v: json.dumps(v).encode()),
    st.lists(eventgrid_event(json_text), max_size=2).map(lambda v: encode_text(json.dumps(v, ensure_ascii=False))),
    body,
)


@dataclass
class Sent:
    """One generated request, already framed, and what it needs to be read back."""

    raw: bytes
    head_only: bool = False
    half_close: bool = False


NO_KEYS: st.SearchStrategy[list[tuple[str, str]]] = st.just([])
ANY_METHOD = st.sampled_from(["GET", "POST", "PUT", "DELETE", "PATCH", "HEAD", "OPTIONS"])


@st.composite
def requests(draw: st.DrawFn, *, paths: st.SearchStrategy[str], bodies: st.SearchStrategy[bytes] = body,
             keys: st.SearchStrategy[list[tuple[str, str]]] = NO_KEYS,
             methods: st.SearchStrategy[str] = ANY_METHOD) -> Sent:
    method = draw(methods)
    target = draw(paths)
    q = draw(query)
    if q:
        target += "?" + q
    headers = draw(keys) + draw(st.lists(st.tuples(header_name, header_value), max_size=4))
    content_type = draw(st.none() | st.sampled_from(CONTENT_TYPES))
    if content_type is not None:
        headers.append(("Content-Type", content_type))
    payload = b"" if method in ("GET", "HEAD") and draw(st.booleans()) else draw(bodies)
    chunked = bool(payload) and draw(st.booleans())
    chunk_size = draw(st.sampled_from([0, 1, 7, 1024, 16 * 1024])) if chunked else 0  # 0: the body in one chunk
    return Sent(request_bytes(method, target, headers, payload, chunked=chunked, chunk_size=chunk_size),
                head_only=method == "HEAD",
                half_close=draw(st.booleans()))


def mutated(sent: Sent, cut: int, junk: bytes) -> Sent:
    """A request damaged at a position: bytes replaced by junk, then the client half-closes."""
    position = cut % (len(sent.raw) + 1)
    return Sent(sent.raw[:position] + junk + sent.raw[position + len(junk):], half_close=True)


floods = st.one_of(
    st.integers(101, 5000).map(lambda n: request_bytes("GET", "/api/hello", [("X-Tag", "a")] * n)),
    st.integers(33, 2000).map(lambda kb: request_bytes("GET", "/api/hello", [("X-Big", "a" * (kb * 1024))])),
    st.integers(8200, 100_000).map(lambda n: request_bytes("GET", "/api/hello?" + "a" * n)),
    st.integers(1, 200).map(lambda n: b"GET /api/hello HTTP/1.1\r\n" + b"X: " + b"\x00" * n + b"\r\n\r\n"),
    st.binary(min_size=1, max_size=400),
    st.sampled_from([b"GET / HTTP/1.1\r\nHost: x\r\n\r\nGARBAGE\r\n\r\n", b"\r\n\r\n\r\n", b"GET / HTTP/9.9\r\n\r\n",
                     b"POST /api/echo HTTP/1.1\r\nContent-Length: 99999999999999999999999\r\n\r\n",
                     b"POST /api/echo HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab",
                     b"POST /api/echo HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nffffffffffffffffff\r\n",
                     b"GET /api/hello HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: h2c\r\n\r\n",
                     b"GET /api/hello HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n"
                     b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n",
                     b"GET http://evil/api/hello HTTP/1.1\r\nHost: x\r\n\r\n", b"GET * HTTP/1.1\r\nHost: x\r\n\r\n",
                     b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03"]),
).map(lambda raw: Sent(raw, half_close=True))


# --- checks ------------------------------------------------------------------------------------

_HOST_ERRORS = ("Exception in ASGI application", "--- Logging error ---", "Task exception was never retrieved",
                "Exception in callback", "Traceback (most recent call last)")


def host_tracebacks(log: str) -> list[str]:
    """Error reports in a host's output that are not a function failing: a function's exception is
    printed as ``Stack: Traceback ...`` after ``Result: Failure``, up to the next log record (a
    ``[<time>]`` line), chained exceptions ("During handling of the above exception") included;
    anything else is the host's."""
    found = []
    lines = log.splitlines()
    in_stack = False
    for index, line in enumerate(lines):
        if line.startswith("Stack: Traceback"):
            in_stack = True
            continue
        if line.startswith("["):
            in_stack = False
        if not in_stack and any(marker in line for marker in _HOST_ERRORS):
            found.append("\n".join(lines[max(0, index - 3):index + 25]))
    return found


class HostLog:
    """A running host's output file, read incrementally: how many function executions so far,
    and the functions that failed (`Executed 'Functions.<name>' (Failed, ...)`).

    `may_fail`: the functions of the app that fail on purpose (examples/hello's `fail`). Any other
    function failing on a fuzzed request is a bug of the example: examples answer bad input with
    a 4xx and a message, since they are what users copy."""

    def __init__(self, path: Path, may_fail: frozenset[str] = frozenset()) -> None:
        self.path = path
        self.may_fail = may_fail
        self.offset = 0
        self.partial = b""
        self.executions = 0
        self.failed: list[str] = []

    def refresh(self) -> int:
        with self.path.open("rb") as file:
            file.seek(self.offset)
            data = file.read()
        self.offset += len(data)
        lines = (self.partial + data).split(b"\n")
        self.partial = lines.pop()
        for line in lines:
            start = line.find(b"Executed 'Functions.")
            if start < 0:
                continue
            self.executions += 1
            name, _, rest = line[start + 20:].partition(b"' (")
            if rest.startswith(b"Failed"):
                self.failed.append(name.decode("utf-8", "replace"))
        return self.executions


@dataclass
class Tally:
    """The fuzz figures: requests sent, statuses, 5xx from the host vs from functions, tracebacks."""

    requests: int = 0
    no_response: int = 0
    statuses: Counter[int] = field(default_factory=Counter)
    host_5xx: int = 0
    function_5xx: int = 0
    tracebacks: int = 0

    def as_dict(self) -> dict[str, Any]:
        return {"requests": self.requests, "no_response": self.no_response, "host_5xx": self.host_5xx,
                "function_5xx": self.function_5xx, "host_tracebacks": self.tracebacks,
                "statuses": {str(k): v for k, v in sorted(self.statuses.items())}}

    def write(self) -> None:
        if REPORT:
            Path(REPORT).write_text(json.dumps(self.as_dict(), indent=2) + "\n")


TALLY = Tally()


def send_and_check(port: int, sent: Sent, log: HostLog) -> Response | None:
    """Send one request; a 5xx must come with a function execution in the host's log (a function
    that fails, or answers 5xx itself), never from the host alone."""
    TALLY.requests += 1
    before = log.refresh()
    response = exchange(port, sent.raw, head_only=sent.head_only, half_close=sent.half_close)
    if response is None:
        TALLY.no_response += 1
        return None
    TALLY.statuses[response.status] += 1
    if response.status >= 500:
        failed_before = len(log.failed)
        if wait_for(lambda: log.refresh() > before):
            TALLY.function_5xx += 1
            unexpected = [name for name in log.failed[failed_before:] if name not in log.may_fail]
            if unexpected:
                raise AssertionError(f"{response.status}: the function {unexpected[0]} failed on "
                                     f"{sent.raw[:500]!r}: {response.body[:300]!r}")
        else:
            TALLY.host_5xx += 1
            raise AssertionError(f"{response.status} from the host itself for {sent.raw[:500]!r}: "
                                 f"{response.body[:300]!r}")
    return response


def wait_for(predicate: Callable[[], bool], timeout: float = 2.0) -> bool:
    deadline = time.monotonic() + timeout
    while True:
        if predicate():
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.05)
