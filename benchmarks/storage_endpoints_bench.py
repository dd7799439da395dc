"""Storage REST endpoints: the same official SDK clients against funchost's endpoints and Azurite.

    python benchmarks/storage_endpoints_bench.py   # [--depths 1000,100000] [--messages 2000] ...

Both servers run as their own process on this machine, in the same run: `funchost storage serve`
over a fresh data folder, and Azurite in memory (tests/support/azurite.py). The client is the
official async SDK (azure-storage-queue, azure-storage-blob, azure-data-tables on aiohttp) with
`--concurrency` requests in flight:

* queue, at each depth of `--depths`: the queue first holds that many invisible messages (so the
  depth is real but nothing of it is received); then `--messages` puts, receives in batches of 32
  (messages/s and requests/s), deletes;
* blob: `--blobs` uploads and downloads of `--blob-kb` KiB;
* table: `--entities` inserts, point reads, and one filtered query per 100 entities.

Output: benchmarks/results/storage_endpoints.json and a summary with funchost/Azurite ratios.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import re
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable, Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # tests.support.azurite: the same Azurite launcher the tests use

from tests.support.azurite import get_server, stop_server  # noqa: E402

from funchost.settings.connections import DEVSTORE_ACCOUNT, DEVSTORE_KEY  # noqa: E402

CLI = "import sys; from funchost.cli import main; sys.exit(main())"


async def _pool(items: Iterable[Any], work: Callable[[Any], Awaitable[Any]], concurrency: int) -> float:
    """Run `work` over items with `concurrency` workers; seconds taken."""
    queue: asyncio.Queue[Any] = asyncio.Queue()
    for item in items:
        queue.put_nowait(item)

    async def worker() -> None:
        while not queue.empty():
            await work(queue.get_nowait())

    started = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return time.perf_counter() - started


def _rate(count: float, seconds: float) -> float:
    return round(count / seconds, 1) if seconds > 0 else 0.0


async def bench_queue(connection: str, depth: int, messages: int, concurrency: int) -> dict[str, Any]:
    from azure.storage.queue.aio import QueueClient

    async with QueueClient.from_connection_string(connection, f"bench{uuid.uuid4().hex[:10]}") as queue:
        await queue.create_queue()
        started = time.perf_counter()
        await _pool(range(depth), lambda i: queue.send_message(f"resting {i}", visibility_timeout=3600),
                    max(concurrency, 32))
        fill_s = time.perf_counter() - started
        body = "x" * 256
        put_s = await _pool(range(messages), lambda i: queue.send_message(body), concurrency)
        received: list[Any] = []
        requests = 0

        async def receive(_: int) -> None:
            nonlocal requests
            async for page in queue.receive_messages(messages_per_page=32, visibility_timeout=300).by_page():
                requests += 1
                batch = [m async for m in page]
                if not batch:
                    return
                received.extend(batch)

        get_s = await _pool(range(concurrency), receive, concurrency)
        delete_s = await _pool(received, lambda m: queue.delete_message(m), concurrency)
        await queue.delete_queue()
    return {"depth": depth, "fill_per_s": _rate(depth, fill_s), "put_per_s": _rate(messages, put_s),
            "get_messages_per_s": _rate(len(received), get_s), "get_requests_per_s": _rate(requests, get_s),
            "delete_per_s": _rate(len(received), delete_s), "received": len(received)}


async def bench_blob(connection: str, blobs: int, size_kb: int, concurrency: int) -> dict[str, Any]:
    from azure.storage.blob.aio import BlobServiceClient

    data = os.urandom(size_kb * 1024)
    async with BlobServiceClient.from_connection_string(connection) as service:
        container = await service.create_container(f"bench{uuid.uuid4().hex[:10]}")
        up_s = await _pool(range(blobs), lambda i: container.upload_blob(f"b{i}", data), concurrency)

        async def download(i: int) -> None:
            assert await (await container.download_blob(f"b{i}")).readall() == data

        down_s = await _pool(range(blobs), download, concurrency)
        await container.delete_container()
    mb = blobs * size_kb / 1024
    return {"upload_per_s": _rate(blobs, up_s), "download_per_s": _rate(blobs, down_s),
            "upload_mb_per_s": _rate(mb, up_s), "download_mb_per_s": _rate(mb, down_s)}


async def bench_table(connection: str, entities: int, concurrency: int) -> dict[str, Any]:
    from azure.data.tables.aio import TableClient

    async with TableClient.from_connection_string(connection, f"bench{uuid.uuid4().hex[:10]}") as table:
        await table.create_table()
        insert_s = await _pool(range(entities), lambda i: table.create_entity(
            {"PartitionKey": f"p{i % 10}", "RowKey": f"{i:08d}", "n": i, "text": "value " * 8}), concurrency)
        read_s = await _pool(range(entities), lambda i: table.get_entity(f"p{i % 10}", f"{i:08d}"), concurrency)
        queries = max(1, entities // 100)

        async def query(i: int) -> None:
            found = [e async for e in table.query_entities(f"PartitionKey eq 'p{i % 10}' and n ge {i}")]
            assert found

        query_s = await _pool(range(queries), query, concurrency)
        await table.delete_table()
    return {"insert_per_s": _rate(entities, insert_s), "point_read_per_s": _rate(entities, read_s),
            "filtered_queries_per_s": _rate(queries, query_s)}


async def run_target(label: str, connection: str, args: argparse.Namespace, max_depth: int | None = None
                     ) -> dict[str, Any]:
    result: dict[str, Any] = {"queue": []}
    for depth in args.depths:
        if max_depth is not None and depth > max_depth:
            result["queue"].append({"depth": depth, "skipped": f"deeper than --azurite-max-depth {max_depth}"})
            print(f"{label:9} depth {depth:>7}: skipped (--azurite-max-depth {max_depth})", flush=True)
            continue
        figures = await bench_queue(connection, depth, args.messages, args.concurrency)
        result["queue"].append(figures)
        print(f"{label:9} depth {depth:>7}: put {figures['put_per_s']:>8}/s  get {figures['get_messages_per_s']:>8}"
              f" msg/s  delete {figures['delete_per_s']:>8}/s  (fill {figures['fill_per_s']}/s)", flush=True)
    result["blob"] = await bench_blob(connection, args.blobs, args.blob_kb, args.concurrency)
    result["table"] = await bench_table(connection, args.entities, args.concurrency)
    print(f"{label:9} blob up {result['blob']['upload_per_s']}/s down {result['blob']['download_per_s']}/s | table "
          f"insert {result['table']['insert_per_s']}/s read {result['table']['point_read_per_s']}/s query "
          f"{result['table']['filtered_queries_per_s']}/s", flush=True)
    return result


def _connection(blob: str, queue: str, table: str) -> str:
    return (f"DefaultEndpointsProtocol=http;AccountName={DEVSTORE_ACCOUNT};AccountKey={DEVSTORE_KEY};"
            f"BlobEndpoint={blob};QueueEndpoint={queue};TableEndpoint={table}")


def start_funchost(data: Path) -> tuple[subprocess.Popen[str], str]:
    process = subprocess.Popen([sys.executable, "-c", CLI, "storage", "serve", "--data", str(data),
                                "--ports", "0,0,0"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    urls: dict[str, str] = {}
    assert process.stdout is not None
    while len(urls) < 3:
        line = process.stdout.readline()
        if not line:
            raise RuntimeError("funchost storage serve exited before serving")
        match = re.match(r"Storage (\w+) endpoint: (\S+)", line)
        if match:
            urls[match.group(1)] = match.group(2)
    return process, _connection(urls["blob"], urls["queue"], urls["table"])


def ratios(results: dict[str, Any]) -> dict[str, Any]:
    ours, theirs = results["targets"]["funchost"], results["targets"].get("azurite")
    if theirs is None:
        return {}
    out: dict[str, Any] = {"queue": []}
    for mine, other in zip(ours["queue"], theirs["queue"], strict=True):
        if "skipped" in other:
            continue
        out["queue"].append({"depth": mine["depth"], **{
            k: round(mine[k] / other[k], 1) for k in ("put_per_s", "get_messages_per_s", "delete_per_s") if other[k]}})
    for service in ("blob", "table"):
        out[service] = {k: round(v / theirs[service][k], 1) for k, v in ours[service].items() if theirs[service][k]}
    return out


def _azurite_version() -> str | None:
    try:
        exe = REPO / "node_modules" / ".bin" / "azurite"
        return subprocess.run([str(exe), "--version"], capture_output=True, text=True, timeout=30).stdout.strip()
    except OSError:
        return None


async def main(args: argparse.Namespace) -> dict[str, Any]:
    results: dict[str, Any] = {
        "benchmark": "storage_endpoints", "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "python": platform.python_version(), "platform": platform.platform(), "cpus": os.cpu_count(),
        "azurite": _azurite_version(), "parameters": {k: v for k, v in vars(args).items() if k != "output"},
        "targets": {},
    }
    with tempfile.TemporaryDirectory(prefix="funchost-bench-") as tmp:
        process, connection = start_funchost(Path(tmp))
        try:
            results["targets"]["funchost"] = await run_target("funchost", connection, args)
        finally:
            process.terminate()
            process.wait(timeout=30)
    if not args.no_azurite:
        server = get_server()
        try:
            if server.table_endpoint is None:
                raise RuntimeError("the Azurite in use has no table endpoint (AZURITE_TABLE_ENDPOINT)")
            azurite = _connection(server.blob_endpoint, server.queue_endpoint, server.table_endpoint)
            results["targets"]["azurite"] = await run_target("azurite", azurite, args, args.azurite_max_depth)
        finally:
            stop_server()
    results["funchost_over_azurite"] = ratios(results)
    print(json.dumps(results["funchost_over_azurite"], indent=1))
    return results


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--depths", type=lambda s: [int(x) for x in s.split(",")], default=[1000, 100000],
                        help="queue depths to measure at (comma-separated)")
    parser.add_argument("--messages", type=int, default=2000, help="messages put, received and deleted per depth")
    parser.add_argument("--concurrency", type=int, default=16, help="requests in flight")
    parser.add_argument("--blobs", type=int, default=200)
    parser.add_argument("--blob-kb", type=int, default=64)
    parser.add_argument("--entities", type=int, default=2000)
    parser.add_argument("--no-azurite", action="store_true", help="measure funchost only")
    parser.add_argument("--azurite-max-depth", type=int, default=20000,
                        help="deepest queue measured on Azurite (filling it slows down as it grows)")
    parser.add_argument("--output", type=Path, default=REPO / "benchmarks" / "results" / "storage_endpoints.json")
    return parser.parse_args(argv)


if __name__ == "__main__":
    arguments = parse_args()
    report = asyncio.run(main(arguments))
    arguments.output.parent.mkdir(parents=True, exist_ok=True)
    arguments.output.write_text(json.dumps(report, indent=2) + "\n")
    print(f"wrote {arguments.output}")
