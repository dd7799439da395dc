import logging
import threading

import pytest

from funchost.reliability.errors import UnsafeLogValue
from funchost.reliability.logfields import FIELDS, check_fields, log_event, redact, short_error
from funchost.reliability.metrics import Metrics


def test_field_names_of_the_spec():
    assert FIELDS == ("JobId", "RunId", "TenantId", "RequestedByUserId", "EventId", "CorrelationId",
                      "StorageAccount", "ContainerName", "BlobName", "QueueMessageId", "DequeueCount",
                      "MessageHash", "OutboxId", "DispatcherId")


def test_log_event_writes_text_and_custom_dimensions(caplog):
    caplog.set_level(logging.INFO)
    log_event(logging.getLogger("t"), logging.INFO, "Job started", JobId="imp_1", RunId="r1", DequeueCount=2)
    (record,) = caplog.records
    assert record.getMessage() == "Job started JobId=imp_1, RunId=r1, DequeueCount=2"
    assert record.custom_dimensions == {"JobId": "imp_1", "RunId": "r1", "DequeueCount": 2}


@pytest.mark.parametrize("fields", [
    {"BlobUrl": "https://a.blob.core.windows.net/c/b?sv=2024-01-01&sig=abc"},
    {"Conn": "DefaultEndpointsProtocol=https;AccountName=a;AccountKey=abc=="},
    {"Auth": "Bearer abc.def.ghi"},
    {"Token": "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.sig"},
    {"Body": "{}"},
    {"RawMessage": "x"},
    {"Note": "x" * 2000},
    {"lowercase": "x"},
])
def test_redaction_guard_refuses(fields, caplog):
    with pytest.raises(UnsafeLogValue):
        log_event(logging.getLogger("t"), logging.INFO, "m", **fields)
    assert caplog.records == []


def test_guard_checks_the_message_too():
    with pytest.raises(UnsafeLogValue):
        log_event(logging.getLogger("t"), logging.INFO, "reading https://x/c/b?sp=r&sig=abc")


def test_redacted_text_passes_the_guard():
    exc = RuntimeError("403 for https://a.blob.core.windows.net/c/b?sv=1&sig=abc AccountKey=zzz")
    text = short_error(exc)
    assert "abc" not in text and "zzz" not in text
    check_fields({"Error": text})
    assert "sig=[redacted]" in redact("x?sv=1&sig=abc")


def test_metrics_are_thread_safe_and_labelled():
    m = Metrics()

    def bump():
        for _ in range(1000):
            m.incr("intake.accepted")

    threads = [threading.Thread(target=bump) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    m.incr("intake.rejected", reason="too_large")
    m.set_gauge("outbox.pending", 3)
    assert m.snapshot() == {"intake.accepted": 4000, "intake.rejected{reason=too_large}": 1, "outbox.pending": 3}


UNSAFE_SAMPLES = [
    "https://a.blob.core.windows.net/c/b?sv=2024-01-01&sig=abc",
    "https://a.blob.core.windows.net/c/b?SIG=abc",
    "x&sp=r&se=2030",
    "Endpoint=sb://x/;SharedAccessSignature=sr%3Dabc",
    "DefaultEndpointsProtocol=https;AccountName=a;AccountKey=abc==",
    "Authorization: Bearer abc",
    "authorization: BEARER\tabc",
    "BeArEr x",
    "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.sig",
    "token eyJhbGciOiJI.eyJzdWIiOi.",
]


def _full_scan(text: str) -> str | None:
    from funchost.reliability.logfields import _UNSAFE

    for pattern, what in _UNSAFE:
        if pattern.search(text):
            return what
    return None


def test_the_fast_prefilter_never_hides_what_the_full_patterns_find():
    import random

    from funchost.reliability.logfields import unsafe_reason

    rng = random.Random(7)
    alphabet = "abcdefABCDEF0123456789=?&;.:/ _-\t"
    texts = list(UNSAFE_SAMPLES)
    for sample in UNSAFE_SAMPLES:  # the samples inside random surroundings
        for _ in range(30):
            left = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 12)))
            right = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 12)))
            texts.append(left + sample + right)
    texts += ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 40))) for _ in range(2000)]
    for text in texts:
        assert unsafe_reason(text) == _full_scan(text), text
    for sample in UNSAFE_SAMPLES:
        assert unsafe_reason(sample) is not None, sample


@pytest.mark.parametrize("value", UNSAFE_SAMPLES)
def test_every_secret_sample_is_refused_as_a_field_value(value):
    with pytest.raises(UnsafeLogValue):
        check_fields({"Note": value})


def test_an_accepted_field_name_does_not_let_a_later_value_through():
    check_fields({"Detail": "fine"})  # the name is now known to be well-formed
    with pytest.raises(UnsafeLogValue):
        check_fields({"Detail": "x?sv=1&sig=abc"})
    with pytest.raises(UnsafeLogValue):
        check_fields({"Detail": "y" * 2000})


def test_a_refused_field_name_stays_refused():
    for _ in range(3):
        with pytest.raises(UnsafeLogValue):
            check_fields({"Payload": "x"})
        with pytest.raises(UnsafeLogValue):
            check_fields({"bad_name": "x"})


@pytest.mark.parametrize("text", ["tenant-a/f.csv?sv=2024&se=2030&sig=abc%3D", "a/eyJhbGciOi.eyJzdWIiOi.c2lnbmF0dXJl",
                                  "AccountKey=abc;x", "Bearer abc.def", "x\ud800\x00y", "n" * 5000])
def test_loggable_text_always_passes_the_guard(text):
    from funchost.reliability.logfields import loggable

    safe = loggable(text)
    check_fields({"BlobName": safe})
    assert len(safe) <= 200 and "abc%3D" not in safe and "c2lnbmF0dXJl" not in safe
