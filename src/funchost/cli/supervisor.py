"""`FUNCTIONS_WORKER_PROCESS_COUNT` > 1: one `funchost start` supervising that many worker processes.

On Azure the setting is how many language worker processes one host instance starts for the
app (1 to 10, default 1; the host parses it as an integer, below 1 counts as 1, above the
maximum of 10 the worker does not start: `RpcWorkerConfigFactory.GetWorkerProcessCount`,
`WorkerProcessCountOptions`). funchost plays host and worker in one process, so here each worker
process is a whole host for the app (see docs/worker-processes.md):

* the supervisor binds the HTTP port once and every worker serves the inherited listening
  socket (the kernel hands each new connection to one of them; connections waiting in the
  backlog survive a worker's crash);
* workers share the data folder, so queues, timer singletons, leases, Event Grid, the change
  feed, Service Bus and Event Hubs are shared as between hosts on one data folder;
* worker 0 starts first and prints the listing and the keys (created once, before the others
  start); its console and the others' reach one console through the supervisor, whole lines
  only;
* a stop signal is passed to every worker (each stops gracefully); a worker that exits on its
  own is started again, after a growing pause when it keeps exiting soon after its start.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import BinaryIO

from funchost.errors import ConfigError

SETTING = "FUNCTIONS_WORKER_PROCESS_COUNT"
MAX_PROCESS_COUNT = 10  # WorkerProcessCountOptions.MaxProcessCount
# Set in a worker's environment by the supervisor.
WORKER_ENV = "FUNCHOST_WORKER_INDEX"
LISTEN_FD_ENV = "FUNCHOST_LISTEN_FD"
READY_FD_ENV = "FUNCHOST_READY_FD"
QUIET_ENV = "FUNCHOST_WORKER_QUIET"  # a restarted worker does not print the listing again
QUICK_EXIT_SECONDS = 10.0  # a worker exiting sooner than this after its start is restarted after a pause
MAX_RESTART_PAUSE = 30.0
START_TIMEOUT = 120.0


def process_count(value: str | None) -> int:
    """The setting as the Functions host reads it: an integer, below 1 counts as 1."""
    if value is None or value.strip() == "":
        return 1
    try:
        count = int(value.strip())
    except ValueError:
        raise ConfigError(f"{SETTING}={value!r} is not an integer (1 to {MAX_PROCESS_COUNT})") from None
    if count > MAX_PROCESS_COUNT:
        raise ConfigError(f"{SETTING}={count}: ProcessCount must not be greater than {MAX_PROCESS_COUNT}")
    return max(count, 1)


def is_worker() -> bool:
    return WORKER_ENV in os.environ


def announce_ready() -> None:
    """In a worker: tell the supervisor the host has started (once)."""
    fd = os.environ.pop(READY_FD_ENV, None)
    if fd is not None:
        try:
            os.write(int(fd), b"ready\n")
            os.close(int(fd))
        except OSError:
            pass


def quiet_start() -> bool:
    return os.environ.get(QUIET_ENV) == "1"


def inherited_listen_fd() -> int | None:
    fd = os.environ.get(LISTEN_FD_ENV)
    return int(fd) if fd else None


class Console:
    """The supervisor's stdout: whole lines from every worker and its own events."""

    def __init__(self, output: str, stream: BinaryIO) -> None:
        self.output = output
        self.stream = stream
        self.lock = threading.Lock()

    def write(self, data: bytes) -> None:
        with self.lock:
            self.stream.write(data)
            self.stream.flush()

    def say(self, message: str, event: str, **fields: object) -> None:
        now = datetime.now(UTC)
        stamp = now.strftime("%Y-%m-%dT%H:%M:%S.") + f"{now.microsecond // 1000:03d}Z"
        if self.output == "json":
            line = json.dumps({"time": stamp, "level": "INFO", "category": "Host.Workers", "event": event,
                               "message": message, **fields}, default=str)
        else:
            line = f"[{stamp}] {message}"
        self.write(line.encode("utf-8") + b"\n")

    def forward(self, source: BinaryIO, sink: BinaryIO | None = None) -> threading.Thread:
        """Copy `source` (a worker's pipe) to this console, cut after the last complete line."""

        def pump() -> None:
            pending = b""
            while chunk := source.read1(65536):  # type: ignore[attr-defined]
                pending += chunk
                cut = pending.rfind(b"\n") + 1
                if cut:
                    self._write_to(sink, pending[:cut])
                    pending = pending[cut:]
            if pending:
                self._write_to(sink, pending + b"\n")

        thread = threading.Thread(target=pump, name="console-forward", daemon=True)
        thread.start()
        return thread

    def _write_to(self, sink: BinaryIO | None, data: bytes) -> None:
        if sink is None:
            self.write(data)
        else:
            with self.lock:
                sink.write(data)
                sink.flush()


@dataclass
class Worker:
    index: int
    process: subprocess.Popen[bytes]
    started: float
    ready_fd: int  # the read end of the pipe the worker writes "ready" to
    pumps: list[threading.Thread] = field(default_factory=list)
    quick_exits: int = 0


class Supervisor:
    def __init__(self, argv: Sequence[str], count: int, bind: str, port: int, output: str,
                 environ: Mapping[str, str] | None = None) -> None:
        self.argv = list(argv)  # the `funchost start ...` arguments, without --port
        self.count = count
        self.bind = bind
        self.port = port
        self.console = Console(output, sys.stdout.buffer)
        self.environ = dict(os.environ if environ is None else environ)
        self.workers: dict[int, Worker] = {}
        self.stopping = False
        self._signals: list[float] = []
        self._listener: socket.socket | None = None

    # -- run -------------------------------------------------------------------------------------

    def run(self) -> int:
        self._listener = socket.create_server((self.bind, self.port), backlog=2048)
        self._listener.set_inheritable(True)
        self.port = self._listener.getsockname()[1]
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, self._on_signal)
        try:
            first = self._start(0, quiet=False)
            if not self._wait_ready(first):
                code = first.process.wait()
                return code if code > 0 else 1
            for index in range(1, self.count):
                self._wait_ready(self._start(index, quiet=True))
            pids = ", ".join(str(w.process.pid) for w in self.workers.values())
            self.console.say(f"Worker processes: {self.count} ({SETTING}), pids {pids}.", "WorkersStarted",
                             count=self.count, pids=[w.process.pid for w in self.workers.values()])
            return self._watch()
        finally:
            self._listener.close()

    def _start(self, index: int, *, quiet: bool) -> Worker:
        assert self._listener is not None
        ready_read, ready_write = os.pipe()
        env = dict(self.environ)
        env.update({WORKER_ENV: str(index), LISTEN_FD_ENV: str(self._listener.fileno()),
                    READY_FD_ENV: str(ready_write), QUIET_ENV: "1" if quiet else "0"})
        process = subprocess.Popen(
            [sys.executable, "-m", "funchost", "start", *self.argv, "--port", str(self.port)],
            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            pass_fds=(self._listener.fileno(), ready_write))
        os.close(ready_write)
        worker = Worker(index, process, time.monotonic(), ready_read)
        assert process.stdout is not None and process.stderr is not None
        worker.pumps = [self.console.forward(process.stdout),  # type: ignore[arg-type]
                        self.console.forward(process.stderr, sys.stderr.buffer)]  # type: ignore[arg-type]
        previous = self.workers.get(index)
        if previous is not None:
            worker.quick_exits = previous.quick_exits
        self.workers[index] = worker
        return worker

    def _wait_ready(self, worker: Worker) -> bool:
        """Until the worker's host has started (True) or the worker has exited (False)."""
        try:
            with os.fdopen(worker.ready_fd, "rb") as ready:
                return ready.readline() == b"ready\n"
        except OSError:
            return False

    def _watch(self) -> int:
        """Restart workers that exit on their own; after a stop signal wait for all of them."""
        while True:
            for worker in list(self.workers.values()):
                code = worker.process.poll()
                if code is None:
                    continue
                for pump in worker.pumps:
                    pump.join(timeout=5)
                if self.stopping:
                    del self.workers[worker.index]
                    continue
                self._restart(worker, code)
            if self.stopping and not self.workers:
                return 0
            time.sleep(0.05)

    def _restart(self, worker: Worker, code: int) -> None:
        how = f"signal {signal.Signals(-code).name}" if code < 0 else f"exit code {code}"
        lived = time.monotonic() - worker.started
        pause = 0.0
        if lived < QUICK_EXIT_SECONDS:
            worker.quick_exits += 1
            pause = min(MAX_RESTART_PAUSE, 2.0 ** (worker.quick_exits - 1))
        else:
            worker.quick_exits = 0
        self.console.say(f"Worker process {worker.index} (pid {worker.process.pid}) exited with {how}; "
                         f"starting it again{f' in {pause:g}s' if pause else ''}.", "WorkerRestarting",
                         index=worker.index, pid=worker.process.pid, exitCode=code)
        deadline = time.monotonic() + pause
        while time.monotonic() < deadline and not self.stopping:
            time.sleep(0.05)
        if self.stopping:
            del self.workers[worker.index]
            return
        self._wait_ready(self._start(worker.index, quiet=True))

    # -- signals ---------------------------------------------------------------------------------

    def _on_signal(self, signum: int, frame: object) -> None:
        """Every stop signal goes to every worker: each applies the same rules as a single host
        (a repeat within a second is the same request, a later one forces the stop)."""
        self.stopping = True
        for worker in list(self.workers.values()):
            if worker.process.poll() is None:
                try:
                    worker.process.send_signal(signal.SIGTERM)
                except ProcessLookupError:
                    pass
