"""Per-request cost of the connection protocol: funchost's (Kestrel's limits) vs uvicorn's own.

    python benchmarks/http_protocol_bench.py [--requests 20000] [--rounds 5]

In one process, without sockets: keep-alive GET requests (a browser-like head of 8 headers)
are fed to a protocol over a fake transport, one at a time, and answered by a minimal ASGI app;
requests per CPU second (process time, so other work on the machine does not count) of the
protocol + uvicorn's ASGI cycle, interleaved round by round. This
isolates what `triggers/http/protocol.py` adds per request from everything else a real request
costs (funchost's app, the function, the socket): `http_bench.py` measures that whole path.
Output: ``benchmarks/results/http_protocol.json``.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import gc
import json
import platform
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import uvicorn
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
from uvicorn.server import ServerState

from funchost.triggers.http.limits import ServerLimits
from funchost.triggers.http.protocol import ConnectionBoard, GuardedHttpProtocol

RESULTS = Path(__file__).resolve().parent / "results" / "http_protocol.json"
REQUEST = (b"GET /api/hello?name=bench HTTP/1.1\r\nHost: 127.0.0.1:7071\r\nUser-Agent: bench/1.0\r\n"
           b"Accept: */*\r\nAccept-Encoding: gzip, deflate\r\nAccept-Language: en\r\nConnection: keep-alive\r\n"
           b"Cache-Control: no-cache\r\nX-Request-Id: 0123456789abcdef\r\n\r\n")
BODY = b"Hello, world!"
HEADERS = [(b"content-type", b"text/plain; charset=utf-8"), (b"content-length", b"13")]


class Transport(asyncio.Transport):
    def __init__(self) -> None:
        super().__init__()
        self.responses = 0
        self.done = asyncio.Event()
        self.wanted = 0

    def write(self, data: Any) -> None:
        if data.endswith(BODY):
            self.responses += 1
            if self.responses >= self.wanted:
                self.done.set()

    def is_closing(self) -> bool:
        return False

    def close(self) -> None:
        pass

    def pause_reading(self) -> None:
        pass

    def resume_reading(self) -> None:
        pass

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return {"peername": ("127.0.0.1", 50000), "sockname": ("127.0.0.1", 7071)}.get(name, default)


async def app(scope: Any, receive: Any, send: Any) -> None:
    await send({"type": "http.response.start", "status": 200, "headers": HEADERS})
    await send({"type": "http.response.body", "body": BODY})


async def measure(factory: Any, config: uvicorn.Config, requests: int) -> float:
    """Requests per CPU second through one keep-alive connection, one request after the other."""
    protocol = factory(config=config, server_state=ServerState(), app_state={})
    transport = Transport()
    protocol.connection_made(transport)
    started = time.process_time()  # CPU time: other processes on the machine do not count
    for index in range(requests):
        transport.wanted = index + 1
        protocol.data_received(REQUEST)
        await transport.done.wait()
        transport.done.clear()
    return requests / (time.process_time() - started)


async def run(requests: int, rounds: int) -> dict[str, list[float]]:
    config = uvicorn.Config(app, lifespan="off", proxy_headers=False, log_config=None, access_log=False)
    config.load()
    board = ConnectionBoard(ServerLimits(), asyncio.get_running_loop().time())
    targets = {"uvicorn": HttpToolsProtocol, "funchost": functools.partial(GuardedHttpProtocol, board=board)}
    samples: dict[str, list[float]] = {name: [] for name in targets}
    for factory in targets.values():
        await measure(factory, config, 2000)  # warm-up
    for round_ in range(rounds):
        order = list(targets.items())
        for name, factory in order if round_ % 2 == 0 else reversed(order):  # no target always goes first
            gc.collect()
            samples[name].append(await measure(factory, config, requests))
    return samples


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=20000, help="requests per measurement")
    parser.add_argument("--rounds", type=int, default=9, help="interleaved rounds per target")
    args = parser.parse_args()
    try:
        import uvloop

        samples = uvloop.run(run(args.requests, args.rounds))
    except ImportError:
        samples = asyncio.run(run(args.requests, args.rounds))
    medians = {name: statistics.median(values) for name, values in samples.items()}
    # Paired by round (each pair ran back to back), so a busy moment of the machine hits both.
    added = [(1 / f - 1 / u) * 1e6 for f, u in zip(samples["funchost"], samples["uvicorn"], strict=True)]
    cost_us = statistics.median(added)
    result = {
        "environment": {"python": platform.python_version(), "machine": platform.machine(),
                        "uvicorn": uvicorn.__version__},
        "parameters": {"requests": args.requests, "rounds": args.rounds},
        "rps": {name: round(value) for name, value in medians.items()},
        "rounds": {name: [round(v) for v in values] for name, values in samples.items()},
        "added_us_per_request": round(cost_us, 2),  # median over rounds of the paired difference
        "added_us_per_round": [round(a, 2) for a in added],
    }
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(result, indent=2) + "\n")
    print(f"{'protocol':10} {'req/s (median)':>15}   rounds")
    for name, values in samples.items():
        print(f"{name:10} {medians[name]:>15.0f}   {[round(v) for v in values]}")
    print(f"added per request: {cost_us:.2f} µs (median of the rounds' paired differences: "
          f"{[round(a, 1) for a in added]})")
    print(f"written to {RESULTS.relative_to(RESULTS.parents[2])}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
