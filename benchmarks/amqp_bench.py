"""The AMQP endpoint: the official SDK clients against `funchost amqp serve`, beside the same brokers
called directly (what the triggers and bindings do), in one run.

    python benchmarks/amqp_bench.py            # [--messages 2000] [--events 50000] [--rounds 3]

The endpoint runs as its own process over a fresh data folder; its CPU time per message comes from
/proc (the figure that does not depend on the client's speed). Scenarios:

* `sb-send-single`: `ServiceBusSender.send_messages(msg)` one message at a time (one connection);
* `sb-receive-complete`: a queue filled with `--messages`, then one receiver (prefetch 100)
  `receive_messages` + `complete_message` for each (azure-servicebus 7.15 waits for each
  settlement's echo);
* `eh-batch-send`: `EventHubProducerClient.send_batch` of 1 000 small events per batch (the batches
  are built first: `EventDataBatch.add` is timed apart, as `client_batch_building_per_second`);
* `direct-*`: the same operations on the embedded brokers in this process (no AMQP): the ceiling
  the endpoint's cost is measured against.

Output: benchmarks/results/amqp.json and a summary table (medians over rounds).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
CLI = "import sys; from funchost.cli import main; sys.exit(main())"
TICK = os.sysconf("SC_CLK_TCK")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def connection_string(port: int) -> str:
    return (f"Endpoint=sb://localhost:{port};SharedAccessKeyName=RootManageSharedAccessKey;"
            "SharedAccessKey=SAS_KEY_VALUE;UseDevelopmentEmulator=true;")


# -- SDK scenarios (the endpoint in another process) ----------------------------------------------


def sb_send_single(conn: str, queue: str, count: int) -> int:
    from azure.servicebus import ServiceBusClient, ServiceBusMessage

    with ServiceBusClient.from_connection_string(conn) as client, client.get_queue_sender(queue) as sender:
        sender.send_messages(ServiceBusMessage("warm-up"))
        started = time.perf_counter_ns()
        for i in range(count):
            sender.send_messages(ServiceBusMessage(f"message {i:08d} " + "x" * 80))
        return time.perf_counter_ns() - started


def sb_fill(conn: str, queue: str, count: int) -> None:
    from azure.servicebus import ServiceBusClient, ServiceBusMessage

    with ServiceBusClient.from_connection_string(conn) as client, client.get_queue_sender(queue) as sender:
        for start in range(0, count, 100):
            sender.send_messages([ServiceBusMessage(f"message {i:08d} " + "x" * 80)
                                  for i in range(start, min(start + 100, count))])


def sb_receive_complete(conn: str, queue: str, count: int) -> int:
    from azure.servicebus import ServiceBusClient

    with ServiceBusClient.from_connection_string(conn) as client, \
            client.get_queue_receiver(queue, prefetch_count=100) as receiver:
        done = 0
        started = time.perf_counter_ns()
        while done < count:
            for message in receiver.receive_messages(max_message_count=100, max_wait_time=10):
                receiver.complete_message(message)
                done += 1
        return time.perf_counter_ns() - started


def eh_batch_send(conn: str, hub: str, count: int) -> tuple[int, int]:
    """(ns building the batches in the client, ns in send_batch): the SDK's EventDataBatch.add
    costs the client more CPU per event than the endpoint spends, so the two are timed apart."""
    from azure.eventhub import EventData, EventHubProducerClient

    with EventHubProducerClient.from_connection_string(conn, eventhub_name=hub) as producer:
        producer.get_partition_ids()
        started, batches, added = time.perf_counter_ns(), [], 0
        while added < count:
            batch = producer.create_batch()
            for i in range(min(1000, count - added)):
                batch.add(EventData(f"event {added + i:08d} " + "y" * 40))
            batches.append(batch)
            added += len(batch)
        built = time.perf_counter_ns() - started
        started = time.perf_counter_ns()
        for batch in batches:
            producer.send_batch(batch)
        return built, time.perf_counter_ns() - started


# -- the same operations on the brokers directly --------------------------------------------------


async def direct(data: Path, messages: int, events: int) -> dict[str, dict[str, float]]:
    from funchost.clock import SystemClock
    from funchost.settings.app_settings import AppSettings
    from funchost.storage.eventhubs import EventToSend
    from funchost.storage.host_storage import open_storage
    from funchost.storage.servicebus import OutgoingMessage

    storage = open_storage("embedded", data, AppSettings({}, environ={}), SystemClock())
    try:
        broker = storage.servicebus("sbemulatorns")
        await broker.create_queue("direct")
        cpu = [time.process_time()]
        started = time.perf_counter_ns()
        for i in range(messages):
            await broker.send("direct", [OutgoingMessage(body=f"message {i:08d} ".encode() + b"x" * 80)])
        send_ns = time.perf_counter_ns() - started
        cpu.append(time.process_time())
        started, done = time.perf_counter_ns(), 0
        while done < messages:
            for message in await broker.receive("direct", 100):
                await broker.complete("direct", message.lock_token or "")
                done += 1
        receive_ns = time.perf_counter_ns() - started
        cpu.append(time.process_time())
        hubs = storage.eventhubs("localhost")
        await hubs.create_hub("direct", exist_ok=True)
        started, sent = time.perf_counter_ns(), 0
        while sent < events:
            batch = [EventToSend(body=f"event {sent + i:08d} ".encode() + b"y" * 40) for i in range(min(1000, events - sent))]
            await hubs.send("direct", batch)
            sent += len(batch)
        eh_ns = time.perf_counter_ns() - started
        cpu.append(time.process_time())
    finally:
        await storage.aclose()

    def figures(count: int, ns: int, index: int) -> dict[str, float]:
        return {"per_second": round(count / (ns / 1e9), 1),
                "broker_cpu_us_per_message": round((cpu[index + 1] - cpu[index]) / count * 1e6, 1)}

    return {"direct-sb-send-single": figures(messages, send_ns, 0),
            "direct-sb-receive-complete": figures(messages, receive_ns, 1),
            "direct-eh-batch-send": figures(events, eh_ns, 2)}


def one_round(index: int, messages: int, events: int, root: Path) -> dict[str, Any]:
    port = free_port()
    data = root / f"round-{index}"
    server = subprocess.Popen([sys.executable, "-c", CLI, "amqp", "serve", "--data", str(data), "--port", str(port)],
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        assert server.stdout is not None
        while "Press Ctrl+C" not in server.stdout.readline():
            pass
        conn = connection_string(port)
        results: dict[str, Any] = {}
        for name, work, count, fill in (
                ("sb-send-single", lambda: sb_send_single(conn, "single", messages), messages, None),
                ("sb-receive-complete", lambda: sb_receive_complete(conn, "drain", messages), messages,
                 lambda: sb_fill(conn, "drain", messages))):
            if fill is not None:
                fill()
            cpu = cpu_seconds(server.pid)
            elapsed = work()
            cpu = cpu_seconds(server.pid) - cpu
            results[name] = {"per_second": round(count / (elapsed / 1e9), 1),
                             "endpoint_cpu_us_per_message": round(cpu / count * 1e6, 1)}
        cpu = cpu_seconds(server.pid)
        built, sent = eh_batch_send(conn, "hub", events)
        cpu = cpu_seconds(server.pid) - cpu
        results["eh-batch-send"] = {"per_second": round(events / (sent / 1e9), 1),
                                    "endpoint_cpu_us_per_message": round(cpu / events * 1e6, 1),
                                    "client_batch_building_per_second": round(events / (built / 1e9), 1)}
        results.update(asyncio.run(direct(root / f"direct-{index}", messages, events)))
        return results
    finally:
        server.terminate()
        server.wait(30)


def _shown(path: Path) -> str:
    """The output path as the results file records it: relative to the repository when inside it."""
    try:
        return str(path.resolve().relative_to(REPO))
    except ValueError:
        return path.name


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--messages", type=int, default=2000)
    parser.add_argument("--events", type=int, default=50000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--output", default=str(REPO / "benchmarks" / "results" / "amqp.json"))
    args = parser.parse_args()
    load = os.getloadavg()
    with tempfile.TemporaryDirectory() as tmp:
        runs = [one_round(i, args.messages, args.events, Path(tmp)) for i in range(args.rounds)]
    summary: dict[str, dict[str, float]] = {}
    for name in runs[0]:
        summary[name] = {key: statistics.median(r[name][key] for r in runs) for key in runs[0][name]}
    import azure.eventhub
    import azure.servicebus

    result = {"benchmark": "amqp", "date": datetime.now(UTC).isoformat(timespec="seconds"),
              "python": platform.python_version(), "platform": platform.platform(), "cpus": os.cpu_count(),
              "load_average_at_start": load, "sdks": {"azure-servicebus": azure.servicebus.__version__,
                                                      "azure-eventhub": azure.eventhub.__version__},
              "parameters": {**vars(args), "output": _shown(Path(args.output))}, "rounds": runs, "medians": summary}
    Path(args.output).write_text(json.dumps(result, indent=2) + "\n")
    print(f"{'scenario':28} {'per second':>12} {'CPU/msg (endpoint or broker)':>30}")
    for name, values in summary.items():
        cpu = values.get("endpoint_cpu_us_per_message", values.get("broker_cpu_us_per_message", 0.0))
        print(f"{name:28} {values['per_second']:>12,.0f} {cpu:>27,.0f} µs")


if __name__ == "__main__":
    main()
