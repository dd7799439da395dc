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
