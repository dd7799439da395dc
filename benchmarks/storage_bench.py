"""Storage throughput: embedded SQLite vs the Azure SDK against Azurite, in the same run.

    python benchmarks/storage_bench.py [--messages 1000] [--concurrency 16] [--blobs 16] [--blob-mb 1]

Measures queue put / get (batches of 32) / delete in messages per second and blob upload /
download in MB/s, for each backend, and writes benchmarks/results/storage.json. Azurite is
started from node_modules (or reused from AZURITE_BLOB_ENDPOINT / AZURITE_QUEUE_ENDPOINT).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # tests.support.azurite: the same Azurite launcher the tests use

from tests.support.azurite import get_server, stop_server  # noqa: E402

from funchost.clock import SystemClock  # noqa: E402
from funchost.settings.app_settings import AppSettings  # noqa: E402
from funchost.storage.host_storage import HostStorage, open_storage  # noqa: E402

MB = 1024 * 1024


async def _gather_limited(n: int, concurrency: int, op: Callable[[int], Awaitable[Any]]) -> None:
    counter = iter(range(n))

    async def worker() -> None:
        for i in counter:
            await op(i)

    await asyncio.gather(*(worker() for _ in range(concurrency)))


def _rate(count: float, seconds: float) -> float:
    return round(count / seconds, 1) if seconds > 0 else float("inf")


async def bench_queue(backend: HostStorage, messages: int, concurrency: int) -> dict[str, Any]:
    queues = backend.queues()
    name = f"bench-{uuid.uuid4().hex[:10]}"
    await queues.create_queue(name)
    body = "x" * 256

    t0 = time.perf_counter()
    await _gather_limited(messages, concurrency, lambda i: queues.put_message(name, body))
    put_s = time.perf_counter() - t0

    received = []
    t0 = time.perf_counter()
    while len(received) < messages:
        batch = await queues.get_messages(name, max_messages=32, visibility_timeout=600)
        if not batch:
            break
        received.extend(batch)
    get_s = time.perf_counter() - t0

    t0 = time.perf_counter()
    await _gather_limited(
        len(received),
        concurrency,
        lambda i: queues.delete_message(name, received[i].id, received[i].pop_receipt),
    )
    delete_s = time.perf_counter() - t0
    await queues.delete_queue(name)
    return {
        "messages": messages,
        "message_bytes": len(body),
        "received": len(received),
        "put_per_s": _rate(messages, put_s),
        "get_per_s": _rate(len(received), get_s),
        "delete_per_s": _rate(len(received), delete_s),
    }


async def bench_blob(
    backend: HostStorage, blobs_count: int, blob_mb: float, concurrency: int
) -> dict[str, Any]:
    blobs = backend.blobs()
    container = f"bench-{uuid.uuid4().hex[:10]}"
    await blobs.create_container(container)
    data = os.urandom(int(blob_mb * MB))
    total_mb = blobs_count * len(data) / MB

    t0 = time.perf_counter()
    await _gather_limited(blobs_count, concurrency, lambda i: blobs.upload_blob(container, f"b{i}", data))
    up_s = time.perf_counter() - t0

    t0 = time.perf_counter()
    sizes: list[int] = []

    async def download(i: int) -> None:
        got, _ = await blobs.download_blob(container, f"b{i}")
        sizes.append(len(got))

    await _gather_limited(blobs_count, concurrency, download)
    down_s = time.perf_counter() - t0
    if sum(sizes) != blobs_count * len(data):
        raise RuntimeError("downloaded sizes do not match")
    for i in range(blobs_count):
        await blobs.delete_blob(container, f"b{i}")
    await blobs.delete_container(container)
    return {
        "blobs": blobs_count,
        "blob_mb": blob_mb,
        "upload_mb_per_s": _rate(total_mb, up_s),
        "download_mb_per_s": _rate(total_mb, down_s),
    }


async def run_backend(label: str, backend: HostStorage, args: argparse.Namespace) -> dict[str, Any]:
    try:
        queue = await bench_queue(backend, args.messages, args.concurrency)
        blob = await bench_blob(backend, args.blobs, args.blob_mb, args.blob_concurrency)
    finally:
        await backend.aclose()
    print(
        f"{label:9} queue put {queue['put_per_s']:>8}/s  get {queue['get_per_s']:>8}/s  "
        f"delete {queue['delete_per_s']:>8}/s | blob up {blob['upload_mb_per_s']:>7} MB/s  "
        f"down {blob['download_mb_per_s']:>7} MB/s"
    )
    return {"queue": queue, "blob": blob}


def _azurite_version() -> str | None:
    exe = REPO / "node_modules" / ".bin" / "azurite"
    try:
        return subprocess.run(
            [str(exe), "--version"], capture_output=True, text=True, timeout=30
        ).stdout.strip()
    except OSError:
        return None


async def main(args: argparse.Namespace) -> dict[str, Any]:
    results: dict[str, Any] = {
        "benchmark": "storage",
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "azurite": _azurite_version(),
        "parameters": {k: v for k, v in vars(args).items() if k != "output"},
        "backends": {},
    }
    with tempfile.TemporaryDirectory(prefix="funchost-bench-") as tmp:
        embedded = open_storage("embedded", Path(tmp), AppSettings({}, environ={}), SystemClock())
        results["backends"]["embedded"] = await run_backend("embedded", embedded, args)

    server = get_server()
    try:
        with tempfile.TemporaryDirectory(prefix="funchost-bench-") as local:
            azure = open_storage("azure", Path(local),
                                 AppSettings({"AzureWebJobsStorage": server.connection_string}, environ={}),
                                 SystemClock())
            results["backends"]["azurite"] = await run_backend("azurite", azure, args)
    finally:
        stop_server()
    return results


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=1000)
    parser.add_argument("--concurrency", type=int, default=16, help="concurrent queue puts / deletes")
    parser.add_argument("--blobs", type=int, default=16)
    parser.add_argument("--blob-mb", type=float, default=1.0)
    parser.add_argument("--blob-concurrency", type=int, default=4)
    parser.add_argument("--output", type=Path, default=REPO / "benchmarks" / "results" / "storage.json")
    return parser.parse_args(argv)


if __name__ == "__main__":
    arguments = parse_args()
    report = asyncio.run(main(arguments))
    arguments.output.parent.mkdir(parents=True, exist_ok=True)
    arguments.output.write_text(json.dumps(report, indent=2) + "\n")
    print(f"wrote {arguments.output}")
