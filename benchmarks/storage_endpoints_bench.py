"""Storage REST endpoints: the same official SDK clients against funchost's endpoints and Azurite.

    python benchmarks/storage_endpoints_bench.py   # [--depths 1000,5000,100000] [--clients 2] ...

Both servers run as their own process on this machine, in the same run: `funchost storage serve`
over a fresh data folder, and Azurite in memory (tests/support/azurite.py). The clients are the
official async SDKs (azure-storage-queue, azure-storage-blob, azure-data-tables on aiohttp):
`--clients` worker processes with `--concurrency` requests in flight each, started and warmed up
before the clock starts, because one Python SDK client spends more CPU per request than either
server. Each phase reports operations per second and the server's CPU time per operation (from
/proc; the figure that does not depend on the client's speed).

* queue, at each depth of `--depths`: the queue first holds that many invisible messages (so the
  depth is real but none of it is received); then `--messages` puts, and receive-and-delete
  (batches of 32, each message deleted) until the queue has nothing visible; then the same on a
  second queue filled to the same depth with a **raw client**: aiohttp requests signed with Shared Key
  (the signing the tests use), several in flight, a fraction of an SDK client's CPU per request,
  so the ratio of the two servers shows instead of the Python SDK's own cost;
* blob: `--blobs` uploads and downloads of `--blob-kb` KiB;
* table: `--entities` inserts and point reads, and filtered queries (one per 50 entities).

Output: benchmarks/results/storage_endpoints.json and a summary with funchost/Azurite ratios.
"""

from __future__ import annotations

import argparse
import asyncio
import html
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
from urllib.parse import quote

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # tests.support.azurite: the same Azurite launcher the tests use

from funchost.settings.connections import DEVSTORE_ACCOUNT, DEVSTORE_KEY  # noqa: E402

CLI = "import sys; from funchost.cli import main; sys.exit(main())"
TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


# -- worker side: one process, one SDK client, `count` operations -----------------------------------


async def _pool(items: Iterable[Any], work: Callable[[Any], Awaitable[Any]], concurrency: int) -> None:
    queue: asyncio.Queue[Any] = asyncio.Queue()
    for item in items:
        queue.put_nowait(item)

    async def worker() -> None:
        while not queue.empty():
            await work(queue.get_nowait())

    await asyncio.gather(*(worker() for _ in range(concurrency)))


async def run_worker(args: argparse.Namespace) -> None:
    from azure.data.tables.aio import TableClient
    from azure.storage.blob.aio import ContainerClient
    from azure.storage.queue.aio import QueueClient

    items = range(args.start, args.start + args.count)
    counted: dict[str, float] = {"ops": 0, "requests": 0}
    if args.worker in ("rawput", "rawdrain"):
        await run_raw_worker(args)
        return
    if args.worker in ("fill", "put", "drain"):
        client: Any = QueueClient.from_connection_string(args.connection, args.name)
    elif args.worker in ("upload", "download"):
        client = ContainerClient.from_connection_string(args.connection, args.name)
    else:
        client = TableClient.from_connection_string(args.connection, args.name)
    data = os.urandom(args.size * 1024) if args.worker == "upload" else b""
    body = "x" * 256

    async def fill(i: int) -> None:
        await client.send_message(f"resting {i}", visibility_timeout=3600)

    async def put(i: int) -> None:
        await client.send_message(body)

    async def drain(_: int) -> None:
        async for page in client.receive_messages(messages_per_page=32, visibility_timeout=300).by_page():
            counted["requests"] += 1
            batch = [m async for m in page]
            if not batch:
                return
            for message in batch:
                await client.delete_message(message)
                counted["ops"] += 1

    async def upload(i: int) -> None:
        await client.upload_blob(f"b{i}", data, overwrite=True)

    async def download(i: int) -> None:
        await (await client.download_blob(f"b{i}")).readall()

    async def insert(i: int) -> None:
        await client.create_entity({"PartitionKey": f"p{i % 10}", "RowKey": f"{i:08d}", "n": i, "text": "v " * 16})

    async def read(i: int) -> None:
        await client.get_entity(f"p{i % 10}", f"{i:08d}")

    async def query(i: int) -> None:
        assert [e async for e in client.query_entities(f"PartitionKey eq 'p{i % 10}' and n ge {i}",
                                                       results_per_page=100)]

    work = {"fill": fill, "put": put, "drain": drain, "upload": upload, "download": download, "insert": insert,
            "read": read, "query": query}[args.worker]
    async with client:
        if args.worker == "drain":
            items = range(args.concurrency)
        print("ready", flush=True)
        sys.stdin.readline()  # "go": every worker starts together, after its imports and TLS-free setup
        counted["started"] = time.time()
        await _pool(items, work, args.concurrency)
        counted["ended"] = time.time()
    if args.worker != "drain":
        counted["ops"] = counted["requests"] = args.count
    print(json.dumps(counted), flush=True)


def _queue_url(connection: str, name: str) -> str:
    endpoint = re.search(r"QueueEndpoint=([^;]+)", connection)
    assert endpoint is not None, "the benchmark's connection strings name their endpoints"
    return f"{endpoint.group(1).rstrip('/')}/{name}/messages"


async def run_raw_worker(args: argparse.Namespace) -> None:
    """Put / receive-and-delete as bare HTTP requests signed with Shared Key (no SDK pipeline)."""
    import aiohttp
    from tests.unit.storage_endpoints.signing import signed_headers

    url = _queue_url(args.connection, args.name)
    body = ("<QueueMessage><MessageText>" + "x" * 256 + "</MessageText></QueueMessage>").encode()
    counted: dict[str, float] = {"ops": 0, "requests": 0}

    async def call(session: aiohttp.ClientSession, method: str, target: str, data: bytes = b"") -> str:
        extra = {"Content-Type": "application/xml"} if data else None  # signed, so aiohttp adds no other
        async with session.request(method, target, data=data or None,
                                   headers=signed_headers(method, target, data, "queue", extra)) as response:
            text = await response.text()
            if response.status >= 300:
                raise RuntimeError(f"{method} {target}: {response.status} {text[:200]}")
            counted["requests"] += 1
            return text

    async def put(session: aiohttp.ClientSession, _: int) -> None:
        await call(session, "POST", url, body)
        counted["ops"] += 1

    async def drain(session: aiohttp.ClientSession, _: int) -> None:
        while True:
            listing = await call(session, "GET", f"{url}?numofmessages=32&visibilitytimeout=300")
            found = re.findall(r"<MessageId>([^<]+)</MessageId>.*?<PopReceipt>([^<]+)</PopReceipt>", listing)
            if not found:
                return
            for message_id, receipt in found:
                await call(session, "DELETE", f"{url}/{message_id}?popreceipt={quote(html.unescape(receipt), safe='')}")
                counted["ops"] += 1

    connector = aiohttp.TCPConnector(limit=args.concurrency)
    async with aiohttp.ClientSession(connector=connector) as session:
        work = put if args.worker == "rawput" else drain
        items = range(args.start, args.start + args.count) if args.worker == "rawput" else range(args.concurrency)
        print("ready", flush=True)
        sys.stdin.readline()
        counted["started"] = time.time()
        await _pool(items, lambda item: work(session, item), args.concurrency)
        counted["ended"] = time.time()
    print(json.dumps(counted), flush=True)


# -- parent side ----------------------------------------------------------------------------------


def _cpu_seconds(pid: int | None) -> float | None:
    if pid is None:
        return None
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / TICK
    except (OSError, IndexError, ValueError):
        return None


async def phase(name: str, target: dict[str, Any], args: argparse.Namespace, resource: str, total: int,
                size: int = 0) -> dict[str, Any]:
    """Run one phase on `args.clients` worker processes; ops/s and server CPU per op."""
    workers = []
    share = -(-total // args.clients)
    for index in range(args.clients):
        start, count = index * share, max(0, min(share, total - index * share))
        command = [sys.executable, __file__, "--worker", name, "--connection", target["connection"], "--name",
                   resource, "--start", str(start), "--count", str(count), "--concurrency", str(args.concurrency),
                   "--size", str(size)]
        workers.append(await asyncio.create_subprocess_exec(*command, stdin=subprocess.PIPE, stdout=subprocess.PIPE))
    for worker in workers:
        assert worker.stdout is not None
        line = await worker.stdout.readline()
        if line.strip() != b"ready":
            raise RuntimeError(f"worker for {name} failed to start: {line!r}")
    cpu_before = _cpu_seconds(target["pid"])
    started = time.perf_counter()
    for worker in workers:
        assert worker.stdin is not None
        worker.stdin.write(b"go\n")
        await worker.stdin.drain()
    results = []
    for worker in workers:
        out, _ = await worker.communicate()
        if worker.returncode != 0:
            raise RuntimeError(f"worker for {name} exited with {worker.returncode}")
        results.append(json.loads(out.decode().strip().splitlines()[-1]))
    cpu_after = _cpu_seconds(target["pid"])
    # From the first worker's start to the last one's end, as the workers saw it: not the workers'
    # own exit, which would dominate short phases.
    active = [r for r in results if r.get("ops")]
    seconds = (max(r["ended"] for r in active) - min(r["started"] for r in active)) if active else \
        time.perf_counter() - started
    ops = sum(r["ops"] for r in results)
    figures = {"ops": ops, "seconds": round(seconds, 3), "per_s": round(ops / seconds, 1) if seconds else 0.0}
    if cpu_before is not None and cpu_after is not None and ops:
        figures["server_cpu_us_per_op"] = round((cpu_after - cpu_before) / ops * 1e6, 1)
    return figures


async def run_target(label: str, target: dict[str, Any], args: argparse.Namespace,
                     max_depth: int | None = None) -> dict[str, Any]:
    from azure.data.tables.aio import TableServiceClient
    from azure.storage.blob.aio import BlobServiceClient
    from azure.storage.queue.aio import QueueServiceClient

    result: dict[str, Any] = {"queue": []}
    async with QueueServiceClient.from_connection_string(target["connection"]) as queues:
        for depth in args.depths:
            if max_depth is not None and depth > max_depth:
                result["queue"].append({"depth": depth, "skipped": f"deeper than --azurite-max-depth {max_depth}"})
                print(f"{label:9} depth {depth:>7}: skipped (--azurite-max-depth {max_depth})", flush=True)
                continue
            row: dict[str, Any] = {"depth": depth}
            # Each client on a queue of its own, filled to the depth: a server whose costs grow with
            # the messages that went through a queue (Azurite) is measured alike for both clients.
            for client, prefix, put_worker, drain_worker in (("sdk", "", "put", "drain"),
                                                             ("raw", "raw_", "rawput", "rawdrain")):
                name = f"bench{uuid.uuid4().hex[:10]}"
                await queues.create_queue(name)
                fill = await phase("fill", target, args, name, depth)
                put = await phase(put_worker, target, args, name, args.messages)
                drain = await phase(drain_worker, target, args, name, 0)
                await queues.delete_queue(name)
                row.update({f"{prefix}fill": fill, f"{prefix}put": put, f"{prefix}receive_delete": drain})
                print(f"{label:9} depth {depth:>7} {client}: put {put['per_s']:>8}/s ({put.get('server_cpu_us_per_op')}"
                      f" us server CPU)  receive+delete {drain['per_s']:>8} msg/s ({drain.get('server_cpu_us_per_op')}"
                      f" us)  [fill {fill['per_s']}/s]", flush=True)
            result["queue"].append(row)
    async with BlobServiceClient.from_connection_string(target["connection"]) as blobs:
        name = f"bench{uuid.uuid4().hex[:10]}"
        await blobs.create_container(name)
        result["blob"] = {"upload": await phase("upload", target, args, name, args.blobs, args.blob_kb),
                          "download": await phase("download", target, args, name, args.blobs)}
        await blobs.delete_container(name)
    async with TableServiceClient.from_connection_string(target["connection"]) as tables:
        name = f"bench{uuid.uuid4().hex[:10]}"
        await tables.create_table(name)
        result["table"] = {"insert": await phase("insert", target, args, name, args.entities),
                           "read": await phase("read", target, args, name, args.entities),
                           "query": await phase("query", target, args, name, max(1, args.entities // 50))}
        await tables.delete_table(name)
    print(f"{label:9} blob up {result['blob']['upload']['per_s']}/s down {result['blob']['download']['per_s']}/s | "
          f"table insert {result['table']['insert']['per_s']}/s read {result['table']['read']['per_s']}/s query "
          f"{result['table']['query']['per_s']}/s", flush=True)
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


def _ratio(mine: dict[str, Any], theirs: dict[str, Any]) -> dict[str, Any]:
    out = {"throughput": round(mine["per_s"] / theirs["per_s"], 1) if theirs["per_s"] else None}
    if mine.get("server_cpu_us_per_op") and theirs.get("server_cpu_us_per_op"):
        out["server_cpu_per_op"] = round(theirs["server_cpu_us_per_op"] / mine["server_cpu_us_per_op"], 1)
    return out


def ratios(results: dict[str, Any]) -> dict[str, Any]:
    ours, theirs = results["targets"]["funchost"], results["targets"].get("azurite")
    if theirs is None:
        return {}
    out: dict[str, Any] = {"queue": []}
    for mine, other in zip(ours["queue"], theirs["queue"], strict=True):
        if "skipped" not in other:
            out["queue"].append({"depth": mine["depth"], **{
                key: _ratio(mine[key], other[key])
                for key in ("put", "receive_delete", "raw_put", "raw_receive_delete")}})
    for service in ("blob", "table"):
        out[service] = {k: _ratio(v, theirs[service][k]) for k, v in ours[service].items()}
    return out


def _azurite_version() -> str | None:
    try:
        exe = REPO / "node_modules" / ".bin" / "azurite"
        return subprocess.run([str(exe), "--version"], capture_output=True, text=True, timeout=30).stdout.strip()
    except OSError:
        return None


async def main(args: argparse.Namespace) -> dict[str, Any]:
    from tests.support import azurite

    results: dict[str, Any] = {
        "benchmark": "storage_endpoints", "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "python": platform.python_version(), "platform": platform.platform(), "cpus": os.cpu_count(),
        "load_average_at_start": os.getloadavg(), "azurite": _azurite_version(),
        "parameters": {k: v for k, v in vars(args).items()
                       if k not in ("output", "worker", "connection", "name", "start", "count", "size")},
        "targets": {},
    }
    with tempfile.TemporaryDirectory(prefix="funchost-bench-") as tmp:
        process, connection = start_funchost(Path(tmp))
        try:
            target = {"connection": connection, "pid": process.pid}
            results["targets"]["funchost"] = await run_target("funchost", target, args)
        finally:
            process.terminate()
            process.wait(timeout=30)
    if not args.no_azurite:
        server = azurite.get_server()
        try:
            if server.table_endpoint is None:
                raise RuntimeError("the Azurite in use has no table endpoint (AZURITE_TABLE_ENDPOINT)")
            running = azurite._process  # started here: its pid gives the server's CPU time
            pid = running.proc.pid if running is not None and running.proc is not None else None
            target = {"connection": _connection(server.blob_endpoint, server.queue_endpoint, server.table_endpoint),
                      "pid": pid}
            results["targets"]["azurite"] = await run_target("azurite", target, args, args.azurite_max_depth)
        finally:
            azurite.stop_server()
    results["funchost_over_azurite"] = ratios(results)
    print(json.dumps(results["funchost_over_azurite"], indent=1))
    return results


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--depths", type=lambda s: [int(x) for x in s.split(",")], default=[1000, 5000, 100000],
                        help="queue depths to measure at (comma-separated)")
    parser.add_argument("--messages", type=int, default=1000, help="messages put, then received and deleted")
    parser.add_argument("--clients", type=int, default=2, help="client processes")
    parser.add_argument("--concurrency", type=int, default=16, help="requests in flight per client process")
    parser.add_argument("--blobs", type=int, default=400)
    parser.add_argument("--blob-kb", type=int, default=64)
    parser.add_argument("--entities", type=int, default=2000)
    parser.add_argument("--no-azurite", action="store_true", help="measure funchost only")
    parser.add_argument("--azurite-max-depth", type=int, default=5000,
                        help="deepest queue measured on Azurite (filling it slows down as it grows)")
    parser.add_argument("--output", type=Path, default=REPO / "benchmarks" / "results" / "storage_endpoints.json")
    # worker mode (internal): one client process of a phase
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--connection", help=argparse.SUPPRESS)
    parser.add_argument("--name", help=argparse.SUPPRESS)
    parser.add_argument("--start", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--count", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--size", type=int, default=0, help=argparse.SUPPRESS)
    return parser.parse_args(argv)


if __name__ == "__main__":
    arguments = parse_args()
    if arguments.worker:
        asyncio.run(run_worker(arguments))
        sys.exit(0)
    report = asyncio.run(main(arguments))
    arguments.output.parent.mkdir(parents=True, exist_ok=True)
    arguments.output.write_text(json.dumps(report, indent=2) + "\n")
    print(f"wrote {arguments.output}")
