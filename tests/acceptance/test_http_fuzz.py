"""Property-based fuzzing of the HTTP surface against real `funchost start` processes.

Targets: the HTTP functions of examples/hello, the FastAPI app of examples/asgi, the admin API
with and without keys, the Event Grid publish endpoint and the Functions webhook
(examples/eventgrid), the reference pipeline's intake, status, quarantine and ledger endpoints
and its Event Grid bridge (examples/imports), and raw bytes that are barely HTTP. Bodies come
with Content-Length or chunked, in one chunk or several. While the fuzzer runs, a slow client
trickles a request and idle half-open connections sit on the server.

Invariants: no 5xx from the host itself (a 5xx needs a function execution behind it: a
function that fails, or answers 5xx, is the app's business), no traceback in the host's output
while it serves other than a function's own failure, valid requests are still served
afterwards, and the host then stops with exit code 0. The example apps are what users copy: a
function of theirs failing on bad input (a 500 instead of a 400 with a message) is a failure
too, except examples/hello's `fail`, which fails on purpose (and the ASGI adapter of the
azure-functions library, which fails on non-UTF-8 paths as it does on Azure).

`FUNCHOST_FUZZ_EXAMPLES` sets the examples per test (default 100, for CI); the nightly run sets
thousands (docs/http.md). `FUNCHOST_FUZZ_REPORT=<file>` writes the figures as JSON.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

import httpx
import jwt
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.acceptance.http_fuzzing import (
    EXAMPLES,
    TALLY,
    HostLog,
    body,
    event_bodies,
    floods,
    host_tracebacks,
    json_text,
    mutated,
    nested,
    path,
    requests,
    segment,
    send_and_check,
)
from tests.acceptance.rawhttp import connect, exchange, request_bytes
from tests.acceptance.support import RunningHost, copy_example, start_funchost, stop_funchost

pytestmark = pytest.mark.acceptance

FUZZ = settings(max_examples=EXAMPLES, deadline=None, database=None, derandomize=False,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                       HealthCheck.function_scoped_fixture])


@dataclass
class Target:
    host: RunningHost
    log: HostLog
    data: Path

    @property
    def port(self) -> int:
        return self.host.port

    def host_key(self) -> str:
        keys = json.loads((self.data / "keys" / "host.json").read_text())
        return str(keys["functionKeys"][0]["value"])

    def topic_key(self, topic: str = "default") -> str:
        return str(json.loads((self.data / "eventgrid" / "keys.json").read_text())["topics"][topic]["key1"])


def _start(example: str, tmp_path_factory: pytest.TempPathFactory, *, may_fail: frozenset[str] = frozenset(),
           env: Mapping[str, str] | None = None) -> Iterator[Target]:
    root = tmp_path_factory.mktemp(f"fuzz-{example}")
    app = copy_example(example, root)
    host = start_funchost(app, data_dir=root / "data", env=env)
    target = Target(host, HostLog(host.output_path, may_fail), root / "data")
    try:
        yield target
    finally:
        code, output = stop_funchost(host)
        serving = output.split("Stopping host:")[0]  # the stop has its own tests (test_http_limits)
        found = host_tracebacks(serving)
        TALLY.tracebacks += len(found)
        TALLY.write()
        assert not found, "host traceback(s):\n\n" + "\n\n".join(found[:3])
        assert code == 0, output[-3000:]


@pytest.fixture(scope="module")
def hello(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Target]:
    yield from _start("hello", tmp_path_factory, may_fail=frozenset({"fail"}))


@pytest.fixture(scope="module")
def asgi(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Target]:
    # azure-functions' own AsgiMiddleware decodes the percent-decoded path as UTF-8 and raises
    # UnicodeDecodeError for `%80` before the app sees the request: the library's, as on Azure.
    yield from _start("asgi", tmp_path_factory, may_fail=frozenset({"http_app_func"}))


@pytest.fixture(scope="module")
def eventgrid(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Target]:
    # The library's EventGridEvent / CloudEvent decoding raises on a malformed `eventTime` / `time`
    # before the function runs: the invocation fails (500, Event Grid retries), as on Azure.
    yield from _start("eventgrid", tmp_path_factory, may_fail=frozenset({"on_blob_event"}))


# The pipeline's queue workers and timers run on their own schedule; only its HTTP functions
# and the Event Grid bridge answer the fuzzer.
PIPELINE_BACKGROUND = frozenset({"process_import", "process_ocr", "import_poison", "ocr_poison", "dispatch_outbox",
                                 "watchdog", "blob_trigger_bridge"})


@pytest.fixture(scope="module")
def imports(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Target]:
    yield from _start("imports", tmp_path_factory, may_fail=PIPELINE_BACKGROUND, env={"IMPORTS_DEMO": "true"})


@pytest.fixture(scope="module")
def hostile_neighbours(hello: Target) -> Iterator[None]:
    """Idle half-open connections and a client trickling a request, for the whole module."""
    idle = [connect(hello.port) for _ in range(20)]
    stop = threading.Event()

    def trickle() -> None:
        while not stop.is_set():
            try:
                with connect(hello.port) as sock:
                    for byte in b"GET /api/hello HTTP/1.1\r\nHost: x\r\nX-Slow: ":
                        if stop.wait(0.05):
                            return
                        sock.sendall(bytes([byte]))
                    while not stop.wait(0.05):
                        sock.sendall(b"a")
            except OSError:
                continue  # answered 408 (headers timeout) or 431: start again

    slow = threading.Thread(target=trickle, daemon=True)
    slow.start()
    yield
    stop.set()
    slow.join(timeout=5)
    for sock in idle:
        sock.close()


def still_serves(target: Target, path: str, expected: str) -> None:
    response = httpx.get(f"{target.host.base_url}{path}", timeout=10)
    assert response.status_code == 200 and expected in response.text


routes = st.sampled_from(["/api/hello", "/api/echo", "/api/products/books", "/api/orders", "/api/files/a/b",
                          "/api/secure", "/api/maintenance", "/api/nothing", "/api/login", "/api/fail"])
function_paths = st.one_of(
    routes,
    st.tuples(st.sampled_from(["/api/products/", "/api/orders/", "/api/files/", "/api/hello/", "/api/"]),
              st.lists(segment, max_size=3)).map(lambda p: p[0] + "/".join(p[1])),
    path,
).filter(lambda p: "slow" not in p.lower())  # /api/slow sleeps as long as it is asked to


@FUZZ
@given(data=st.data())
def test_http_functions(hello: Target, hostile_neighbours: None, data: st.DataObject) -> None:
    keys = st.sampled_from([[], [("x-functions-key", "acceptance-master-key")], [("x-functions-key", "wrong")],
                            [("x-functions-key", hello.host_key())], [("x-functions-key", "")]])
    # Half the requests reach a function (a route and a method it takes), half go anywhere.
    reaching = requests(paths=routes, keys=keys, methods=st.sampled_from(["GET", "POST"]))
    anywhere = requests(paths=function_paths, keys=keys)
    send_and_check(hello.port, data.draw(st.one_of(reaching, anywhere)), hello.log)


def test_http_functions_still_served(hello: Target) -> None:
    still_serves(hello, "/api/hello?name=after", "Hello, after!")


admin_paths = st.one_of(
    st.tuples(st.sampled_from(["/admin/functions/", "/admin/host/", "/admin/", "/ADMIN/Functions/"]),
              st.lists(segment, max_size=3)).map(lambda p: p[0] + "/".join(p[1])),
    st.sampled_from(["/admin/host/status", "/admin/host/ping", "/admin/functions/yearly",
                     "/admin/functions/hello/keys", "/admin/functions/YEARLY"]),
)


@FUZZ
@given(data=st.data())
def test_admin_api_with_and_without_keys(hello: Target, data: st.DataObject) -> None:
    keys = st.sampled_from([[], [("x-functions-key", "acceptance-master-key")], [("x-functions-key", "nope")],
                            [("x-functions-key", hello.host_key())]])
    admin_bodies = body | st.just(b'{"input": "x"}') | st.just(b'{"input": ' + b"[" * 5000 + b"]" * 5000 + b"}")
    sent = data.draw(requests(paths=admin_paths, keys=keys, bodies=admin_bodies))
    send_and_check(hello.port, sent, hello.log)


def test_admin_api_still_served(hello: Target) -> None:
    response = httpx.get(f"{hello.host.base_url}/admin/host/status", headers=hello.host.admin_headers, timeout=10)
    assert response.status_code == 200 and response.json()["state"] == "Running"


topic_paths = st.one_of(
    st.sampled_from(["/eventgrid/topics/default/api/events", "/eventgrid/topics/cloudevents/api/events",
                     "/eventgrid/topics/nope/api/events", "/eventgrid/topics/DEFAULT/API/EVENTS", "/eventgrid"]),
    st.lists(segment, max_size=4).map(lambda parts: "/eventgrid/" + "/".join(parts)),
)


@FUZZ
@given(data=st.data())
def test_eventgrid_publish_endpoint(hello: Target, data: st.DataObject) -> None:
    keys = st.one_of(
        st.sampled_from([[], [("aeg-sas-key", "bm9wZQ==")], [("aeg-sas-token", "r=x&e=y&s=z")],
                         [("Authorization", "SharedAccessSignature r=%5B&e=1&s=%C3%A9")]]),
        st.sampled_from(["default", "cloudevents"]).map(lambda topic: [("aeg-sas-key", hello.topic_key(topic))]),
    )
    sent = data.draw(requests(paths=topic_paths, keys=keys, bodies=event_bodies,
                              methods=st.sampled_from(["POST", "POST", "POST", "GET", "PUT"])))
    send_and_check(hello.port, sent, hello.log)


@FUZZ
@given(data=st.data())
def test_eventgrid_webhook(eventgrid: Target, data: st.DataObject) -> None:
    names = st.sampled_from(["on_blob_event", "process_blob_job", "missing", "", "ON_BLOB_EVENT"])
    webhook_paths = st.tuples(st.sampled_from(["/runtime/webhooks/eventgrid", "/runtime/webhooks/EventGrid",
                                               "/runtime/webhooks/eventgrid/x"]), names).map(
        lambda p: f"{p[0]}?functionName={p[1]}")
    keys = st.tuples(
        st.sampled_from([[], [("x-functions-key", "acceptance-master-key")], [("x-functions-key", "wrong")]]),
        st.sampled_from([[], [("aeg-event-type", "Notification")], [("aeg-event-type", "SubscriptionValidation")],
                         [("aeg-event-type", "Unsubscribe")], [("aeg-event-type", "notification")]]),
    ).map(lambda pair: pair[0] + pair[1])
    sent = data.draw(requests(paths=webhook_paths, keys=keys, bodies=event_bodies,
                              methods=st.sampled_from(["POST", "POST", "GET", "OPTIONS"])))
    send_and_check(eventgrid.port, sent, eventgrid.log)


def test_eventgrid_still_served(eventgrid: Target) -> None:
    hook = f"{eventgrid.host.base_url}/runtime/webhooks/eventgrid?functionName=on_blob_event"
    validation = [{"id": "v", "eventType": "Microsoft.EventGrid.SubscriptionValidationEvent", "subject": "",
                   "eventTime": "2024-05-01T10:00:00Z", "data": {"validationCode": "still-here"}}]
    response = httpx.post(hook, json=validation, timeout=10, headers={
        "aeg-event-type": "SubscriptionValidation", "x-functions-key": "acceptance-master-key"})
    assert response.json() == {"validationResponse": "still-here"}


asgi_paths = st.one_of(
    st.sampled_from(["/api/health", "/api/items", "/api/items/1", "/api/docs", "/api/openapi.json"]),
    st.lists(segment, max_size=3).map(lambda parts: "/api/items/" + "/".join(parts)),
    path,
)


@FUZZ
@given(data=st.data())
def test_asgi_app(asgi: Target, data: st.DataObject) -> None:
    send_and_check(asgi.port, data.draw(requests(paths=asgi_paths)), asgi.log)


def test_asgi_app_still_served(asgi: Target) -> None:
    still_serves(asgi, "/api/health", "ok")


@FUZZ
@given(data=st.data())
def test_raw_bytes_header_floods_and_damaged_requests(hello: Target, data: st.DataObject) -> None:
    valid = requests(paths=function_paths)
    sent = data.draw(st.one_of(floods, st.builds(mutated, valid, st.integers(0, 10_000),
                                                 st.binary(min_size=1, max_size=8))))
    send_and_check(hello.port, sent, hello.log)


def test_raw_bytes_still_served(hello: Target) -> None:
    still_serves(hello, "/api/hello", "Hello, world!")
    response = exchange(hello.port, request_bytes("POST", "/api/echo", [("Content-Type", "application/json")],
                                                  b'{"ok": true}'))
    assert response is not None and response.status == 200 and json.loads(response.body)["json"] == {"ok": True}


def test_the_hostile_neighbours_were_there(hello: Target, hostile_neighbours: None) -> None:
    """The idle connections are still open (keep-alive is 130 s) and count against nothing else."""
    with socket.create_connection(("127.0.0.1", hello.port), timeout=5) as sock:
        sock.sendall(request_bytes("GET", "/api/hello"))
        assert sock.recv(100).startswith(b"HTTP/1.1 200")


DEMO_SECRET = json.loads((Path(__file__).resolve().parents[2] / "examples" / "imports" /
                          "local.settings.json").read_text())["Values"]["IMPORTS_JWT_SECRET"]


UNRESERVED_KEY = "abcdefghijklmnopqrstuvwxyz0123456789-"


def bearer(tenant: str, user: str, roles: list[str] | None = None, lifetime: int = 3600) -> list[tuple[str, str]]:
    claims = {"tid": tenant, "oid": user, "exp": int(time.time()) + lifetime, **({"roles": roles} if roles else {})}
    return [("Authorization", f"Bearer {jwt.encode(claims, DEMO_SECRET, 'HS256')}")]


pipeline_paths = st.one_of(
    st.sampled_from(["/api/imports", "/api/imports", "/api/ledger/entries", "/api/ledger/entries", "/api/ping",
                     "/api/quarantine", "/api/quarantine/q-1/redrive", "/api/imports/imp_00000000000000000000000000000000"]),
    st.tuples(st.sampled_from(["/api/imports/", "/api/quarantine/", "/api/ledger/"]),
              st.lists(segment, max_size=3)).map(lambda p: p[0] + "/".join(p[1])),
    st.sampled_from(["/runtime/webhooks/eventgrid?functionName=blob_created_bridge"]),
    path,
)
pipeline_bodies = st.one_of(
    body,
    nested,
    event_bodies,
    st.fixed_dictionaries({"containerName": st.sampled_from(["imports", "exports"]) | json_text,
                           "blobName": st.sampled_from(["tenant-a/in/a.csv", "tenant-b/x.pdf", "../x"]) | json_text},
                          optional={"eTag": json_text, "versionId": json_text, "tenantId": json_text}).map(
        lambda d: json.dumps(d).encode()),
)


@FUZZ
@given(data=st.data())
def test_reference_pipeline_endpoints(imports: Target, data: st.DataObject) -> None:
    identities = st.one_of(
        st.sampled_from([[], [("Authorization", "Bearer x.y.z")], [("X-MS-CLIENT-PRINCIPAL", "e30=")]]),
        st.sampled_from([("tenant-a", "user-1", None), ("tenant-b", "u", ["Ledger.Write"]),
                         ("", "user-1", None)]).map(lambda who: bearer(*who)),
    )
    keys = st.tuples(
        st.sampled_from([[], [("x-functions-key", "acceptance-master-key")], [("x-functions-key", "wrong")],
                         [("x-functions-key", imports.host_key())]]),
        identities,
        st.sampled_from([[], [("Idempotency-Key", "k-1")], [("Idempotency-Key", "k" * 300)],
                         [("aeg-event-type", "Notification")], [("aeg-event-type", "SubscriptionValidation")]]),
    ).map(lambda parts: parts[0] + parts[1] + parts[2])
    anywhere = requests(paths=pipeline_paths, keys=keys, bodies=pipeline_bodies,
                        methods=st.sampled_from(["POST", "POST", "GET", "GET", "PUT", "DELETE"]))
    # Half the requests pass the key, identity and Idempotency-Key checks, so their bodies reach
    # the intake's and the ledger stand-in's parsers.
    writer = bearer("tenant-a", "importjobs-worker", ["Ledger.Write"])
    admitted = st.just([("x-functions-key", "acceptance-master-key"), *writer]).flatmap(
        lambda fixed: st.text(UNRESERVED_KEY, min_size=1, max_size=20).map(lambda k: fixed + [("Idempotency-Key", k)]))
    reaching = requests(paths=st.sampled_from(["/api/imports", "/api/ledger/entries"]), keys=admitted,
                        bodies=pipeline_bodies, methods=st.just("POST"))
    send_and_check(imports.port, data.draw(st.one_of(reaching, anywhere)), imports.log)


def test_reference_pipeline_still_served(imports: Target) -> None:
    still_serves(imports, "/api/ping", "ok")
