"""FUNCTIONS_WORKER_PROCESS_COUNT as the Functions host reads it, and the supervisor's console."""

from __future__ import annotations

import io
import os

import pytest

from funchost.cli.supervisor import Console, process_count
from funchost.errors import ConfigError


@pytest.mark.parametrize(("value", "expected"), [(None, 1), ("", 1), ("1", 1), ("2", 2), (" 10 ", 10),
                                                 ("0", 1), ("-3", 1)])
def test_counts_as_the_host_reads_them(value: str | None, expected: int) -> None:
    assert process_count(value) == expected


@pytest.mark.parametrize("value", ["11", "two", "1.5"])
def test_values_the_host_refuses(value: str) -> None:
    with pytest.raises(ConfigError, match="FUNCTIONS_WORKER_PROCESS_COUNT"):
        process_count(value)


def test_the_console_forwards_whole_lines_only() -> None:
    sink = io.BytesIO()
    console = Console("text", sink)
    read_end, write_end = os.pipe()
    source = os.fdopen(read_end, "rb")
    pump = console.forward(source)
    os.write(write_end, b"first line\nsecond ")
    writes: list[bytes] = []
    original = sink.write

    def record(data: bytes) -> int:  # type: ignore[override]
        writes.append(bytes(data))
        return original(data)

    sink.write = record  # type: ignore[method-assign]
    os.write(write_end, b"half\nno newline at the end")
    os.close(write_end)
    pump.join(timeout=5)
    assert sink.getvalue() == b"first line\nsecond half\nno newline at the end\n"
    assert all(chunk.endswith(b"\n") for chunk in writes)


def test_console_events_in_json() -> None:
    sink = io.BytesIO()
    Console("json", sink).say("Worker process 1 exited", "WorkerRestarting", index=1)
    line = sink.getvalue().decode()
    assert '"event": "WorkerRestarting"' in line and '"index": 1' in line and line.endswith("\n")
