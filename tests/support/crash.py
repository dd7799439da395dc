"""Crash test of the reference pipeline: jobs flow through two `funchost start` hosts sharing one
data folder while the hosts are killed (SIGKILL) and restarted, and optionally frozen (SIGSTOP
... SIGCONT), at random moments.

    report = run_crash_test(workdir, CrashSettings(seconds=40, jobs=60, seed=7))

With a `CrashServer` the hosts run `--storage postgres` with a data folder each (sharing nothing
but the server, as on two machines) and the server is restarted while jobs flow.

Afterwards, with both hosts up again: every accepted job must reach a final state, the ledger
stand-in must hold exactly one entry per job (its `requestsSeen` counts the re-sends it
absorbed), each job's imported rows exactly once, and re-POSTing every Idempotency-Key must
answer 202 with the same jobId. The report holds the figures (jobs, kills, freezes, lost,
duplicates, ...); `benchmarks/pipeline_crash.py` runs it longer and records them.

Timings are shortened through app settings so that recovery fits in a test: job lease 4 s, a
message fetched by a host that dies reappears after 4 s, a retried message after 1 s, an
outbox row leased by a dead dispatcher is re-sent after 8 s, the watchdog re-enqueues jobs stuck
for 10 s. `maxDequeueCount` is raised so that messages meeting a dead run's lease are retried
rather than poisoned.
"""

from __future__ import annotations

import json
import os
import random
import re
import signal
import threading
import time
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import httpx
from tests.acceptance.support import (
    MASTER_KEY,
    HostDidNotStart,
    RunningHost,
    copy_example,
    free_port,
    run_cli,
    start_funchost,
    stop_funchost,
)
from tests.support.crash_stores import CrashServer, from_jobs_db, jobs_database, messages_of_lost
from tests.support.pipeline import SECRET, token

FAILURE = re.compile(r"^Exception: (\w+)", re.MULTILINE)  # a failed invocation in a host's log
TENANTS = ("tenant-a", "tenant-b")
FINAL = {"Completed", "BusinessFailed"}
ROWS_PER_JOB = 2000  # enough work per job that a kill often lands in the middle of one
CSV = ("customerId,amount,currency\n" + "".join(f"C00{1 + n % 5},{n}.50,EUR\n" for n in range(ROWS_PER_JOB))).encode()
ENV = {
    "IMPORTS_JWT_SECRET": SECRET,
    "IMPORTS_LEASE_SECONDS": "4",
    "FUNCHOST_QUEUE_RECEIVE_VISIBILITY": "4",
    "IMPORTS_DISPATCH_LEASE_SECONDS": "8",
    "IMPORTS_WATCHDOG_STUCK_SECONDS": "10",
    "LEDGER_TIMEOUT_SECONDS": "5",
    "AzureFunctionsJobHost__extensions__queues__visibilityTimeout": "00:00:01",
    "AzureFunctionsJobHost__extensions__queues__maxDequeueCount": "100",
    "AzureFunctionsJobHost__extensions__queues__maxPollingInterval": "00:00:00.500",
}


@dataclass(frozen=True)
class CrashSettings:
    seconds: float = 40.0  # how long jobs are submitted and hosts killed
    jobs: int = 60  # submitted in bursts spread over `seconds`
    burst: int = 10  # jobs submitted at once (in parallel): work in flight when a kill comes
    disrupt_after: tuple[float, float] = (0.0, 1.0)  # a disruption this long after each burst starts
    freeze_share: float = 0.0  # part of the disruptions that freeze a host instead of killing it
    freeze_seconds: tuple[float, float] = (2.0, 6.0)
    settle_seconds: float = 150.0  # bound for every job to be final once disruptions stop
    late_seconds: float = 0.0  # then how much longer to wait for the rest (late, not lost, if they finish)
    server_restarts: int = 0  # PostgreSQL restarts, spread over `seconds` (runs with a server only)
    seed: int = 1


@dataclass
class CrashReport:
    settings: dict[str, Any]
    jobs: int = 0
    kills: int = 0
    freezes: int = 0
    server_restarts: int = 0
    data_folders: int = 1  # 2: the hosts shared nothing but the PostgreSQL server
    restarts_failed: int = 0
    intake_503: int = 0
    intake_connection_errors: int = 0
    intake_unexpected: list[str] = field(default_factory=list)
    lost: list[str] = field(default_factory=list)  # accepted, not final after settling
    lost_details: dict[str, Any] = field(default_factory=dict)  # at the settle bound: job row, outbox rows, messages
    late: list[str] = field(default_factory=list)  # final only after the settle bound (within late_seconds)
    not_completed: list[str] = field(default_factory=list)  # final but BusinessFailed
    duplicate_effects: list[str] = field(default_factory=list)  # more than one ledger entry for a job
    missing_effects: list[str] = field(default_factory=list)  # Completed without its ledger entry
    unknown_entries: list[str] = field(default_factory=list)  # ledger entries of no accepted job
    wrong_rows: list[str] = field(default_factory=list)  # rows imported not exactly once
    changed_job_ids: list[str] = field(default_factory=list)  # re-POST answered another jobId
    ledger_resends_absorbed: int = 0
    jobs_rerun: int = 0  # jobs that needed more than one run (a run was killed or frozen)
    attempts_max: int = 0
    restart_seconds_max: float = 0.0
    settle_seconds: float = 0.0  # from both hosts up to every job final
    slowest_job_seconds: float = 0.0  # accepted -> final, the longest
    function_failures: dict[str, int] = field(default_factory=dict)  # by exception, from the hosts' logs

    @property
    def ok(self) -> bool:
        return not (self.intake_unexpected or self.lost or self.not_completed or self.duplicate_effects
                    or self.missing_effects or self.unknown_entries or self.wrong_rows or self.changed_job_ids)

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "ok": self.ok}


def separate_folders(server: CrashServer | None) -> bool:
    """With `server`, each host gets a data folder of its own once the pipeline's queues and blobs
    are on the server too: a job accepted against one host's copy of a blob (its eTag) must be
    read by whichever host runs it. While they are kept in the data folder, the hosts share one."""
    from funchost.storage.postgres.backend import LOCAL

    return server is not None and not {"queues", "blobs"} & set(LOCAL)


SERVER_WAIT = 30.0  # seconds a host start waits for a restarting PostgreSQL server


class Hosts:
    """Two hosts, each on a fixed port so clients and its ledger URL stay valid: on one data folder,
    or with `server` (`--storage postgres`) each on a data folder of its own, as on two machines.
    They serve the storage endpoints (on ports of their own): a host restarting while the other,
    busy or frozen, holds them must start, and the survivor of a kill takes them over."""

    def __init__(self, app: Path, data: Path, server: CrashServer | None = None) -> None:
        self.app, self.data, self.server = app, data, server
        self.folders = [data / "host-0", data / "host-1"] if separate_folders(server) else [data] * 2
        self.ports = [free_port(), free_port()]
        self.storage_ports = ",".join(str(free_port()) for _ in range(3))
        self.running: list[RunningHost | None] = [None, None]
        self.lock = threading.Lock()
        self.logs: list[str] = []
        self.start_seconds: list[float] = []

    def env(self, index: int) -> dict[str, str]:
        port = self.ports[index]
        return {**ENV, **self.server_env(), "LEDGER_URL": f"http://127.0.0.1:{port}/api/ledger/entries",
                "LEDGER_FUNCTION_KEY": MASTER_KEY, "FUNCHOST_STORAGE_ENDPOINTS": self.storage_ports}

    def server_env(self) -> dict[str, str]:
        server = self.server
        return {} if server is None else {"FUNCHOST_POSTGRES": server.dsn, "FUNCHOST_POSTGRES_SCHEMA": server.schema}

    def storage_args(self) -> tuple[str, ...]:
        return () if self.server is None else ("--storage", "postgres")

    def start(self, index: int) -> bool:
        """Start host `index`; True once it serves. A host started while the PostgreSQL server is
        restarting exits 1 naming the server, by design: it is started again once a second, as a
        supervisor (systemd, Kubernetes) restarts it, for at most SERVER_WAIT seconds."""
        started = time.monotonic()
        while True:
            try:
                host = start_funchost(self.app, *self.storage_args(), data_dir=self.folders[index],
                                      port=self.ports[index], env=self.env(index), timeout=60)
                break
            except HostDidNotStart as exc:
                self.logs.append(str(exc))
                server_away = self.server is not None and "PostgreSQL" in str(exc)  # unreachable, or restarting
                if not server_away or time.monotonic() - started > SERVER_WAIT:
                    return False
                time.sleep(1.0)
        with self.lock:
            self.running[index] = host
        self.start_seconds.append(time.monotonic() - started)
        return True

    def kill(self, index: int) -> None:
        with self.lock:
            host, self.running[index] = self.running[index], None
        if host is not None:
            host.process.send_signal(signal.SIGKILL)
            host.process.wait(10)
            self.logs.append(host.output())

    def freeze(self, index: int, seconds: float) -> None:
        with self.lock:
            host = self.running[index]
        if host is not None:
            os.kill(host.process.pid, signal.SIGSTOP)
            time.sleep(seconds)
            os.kill(host.process.pid, signal.SIGCONT)

    def any(self) -> list[RunningHost]:
        with self.lock:
            return [h for h in self.running if h is not None]

    def stop_all(self) -> None:
        for index in range(2):
            with self.lock:
                host, self.running[index] = self.running[index], None
            if host is not None:
                self.logs.append(stop_funchost(host)[1])


def _headers(tenant: str, key: str | None = None) -> dict[str, str]:
    headers = {"x-functions-key": MASTER_KEY, "Authorization": f"Bearer {token(tenant, 'crash-user')}"}
    if key is not None:
        headers["Idempotency-Key"] = key
    return headers


def _body(tenant: str) -> dict[str, str]:
    return {"containerName": "imports", "blobName": f"{tenant}/crash/orders.csv"}


class Submitter:
    """Submits each key until a host answers 202, through whichever host is up."""

    def __init__(self, hosts: Hosts, report: CrashReport, rng: random.Random) -> None:
        self.hosts, self.report, self.rng = hosts, report, rng
        self.accepted: dict[str, tuple[str, str]] = {}  # key -> (tenant, jobId)

    def submit(self, key: str, tenant: str, deadline: float) -> None:
        while time.monotonic() < deadline:
            candidates = self.hosts.any()
            if not candidates:
                time.sleep(0.2)
                continue
            host = self.rng.choice(candidates)
            try:
                response = httpx.post(f"{host.base_url}/api/imports", json=_body(tenant), headers=_headers(tenant, key),
                                      timeout=15)
            except httpx.TransportError:
                self.report.intake_connection_errors += 1  # killed or frozen meanwhile: same key again
                time.sleep(0.2)
                continue
            if response.status_code == 202:
                job_id = response.json()["jobId"]
                previous = self.accepted.setdefault(key, (tenant, job_id))
                if previous[1] != job_id:
                    self.report.changed_job_ids.append(key)
                return
            if response.status_code == 503:
                self.report.intake_503 += 1
                time.sleep(float(response.headers.get("Retry-After", "1")) / 5)
                continue
            self.report.intake_unexpected.append(f"{key}: {response.status_code} {response.text[:200]}")
            return
        self.report.intake_unexpected.append(f"{key}: never accepted")


def _disrupt(hosts: Hosts, settings: CrashSettings, report: CrashReport, rng: random.Random,
             bursts: threading.Semaphore, done: threading.Event) -> None:
    """One disruption per burst of submissions, at a random moment while the burst is in flight:
    kill a running host (restarted a moment later) or freeze it for a few seconds."""
    restarts: list[threading.Thread] = []
    while not done.is_set():
        if not bursts.acquire(timeout=0.5):
            continue
        time.sleep(rng.uniform(*settings.disrupt_after))
        up = [i for i in range(2) if hosts.running[i] is not None]
        if not up:
            continue  # both still restarting
        index = rng.choice(up)
        if rng.random() < settings.freeze_share:
            report.freezes += 1
            hosts.freeze(index, rng.uniform(*settings.freeze_seconds))
            continue
        report.kills += 1
        hosts.kill(index)
        restart = threading.Thread(target=_restart, args=(hosts, index, rng.uniform(0.0, 1.0), report))
        restart.start()
        restarts.append(restart)
    for restart in restarts:
        restart.join(120)


def _restart_server(server: CrashServer | None, settings: CrashSettings, report: CrashReport) -> None:
    """Restart PostgreSQL at even intervals while jobs flow: every host loses its connections."""
    if server is None:
        return
    for number in range(settings.server_restarts):
        time.sleep(settings.seconds / (settings.server_restarts + 1))
        server.restart()
        report.server_restarts = number + 1


def _restart(hosts: Hosts, index: int, delay: float, report: CrashReport) -> None:
    time.sleep(delay)
    if not hosts.start(index):
        report.restarts_failed += 1


def _final_states(hosts: Hosts, accepted: dict[str, tuple[str, str]]) -> dict[str, str]:
    host = hosts.any()[0]
    states = {}
    for tenant, job_id in accepted.values():
        response = httpx.get(f"{host.base_url}/api/imports/{job_id}", headers=_headers(tenant), timeout=15)
        states[job_id] = response.json().get("status", f"HTTP {response.status_code}")
    return states


def _wait_final(hosts: Hosts, accepted: dict[str, tuple[str, str]], seconds: float) -> dict[str, str]:
    deadline = time.monotonic() + seconds
    while True:
        states = _final_states(hosts, accepted)
        if all(state in FINAL for state in states.values()) or time.monotonic() >= deadline:
            return states
        time.sleep(1.0)


def _check(hosts: Hosts, submitter: Submitter, report: CrashReport, settings: CrashSettings) -> None:
    accepted = submitter.accepted
    started = time.monotonic()
    states = _wait_final(hosts, accepted, settings.settle_seconds)
    report.settle_seconds = round(time.monotonic() - started, 1)
    report.lost = sorted(j for j, s in states.items() if s not in FINAL)
    if report.lost:
        with jobs_database(hosts.data, hosts.server) as query:
            from_jobs_db(query, set(), report, ROWS_PER_JOB)
        messages_of_lost({f / "storage" / "imports" / "queues.db" for f in hosts.folders}, report)
        if settings.late_seconds:
            states = _wait_final(hosts, accepted, settings.late_seconds)
            report.late = sorted(j for j in report.lost if states[j] in FINAL)
            report.lost = sorted(j for j, s in states.items() if s not in FINAL)
    report.not_completed = sorted(j for j, s in states.items() if s in FINAL and s != "Completed")
    host = hosts.any()[0]
    entries: Counter[str] = Counter()
    for tenant in TENANTS:
        listing = httpx.get(f"{host.base_url}/api/ledger/entries", headers=_headers(tenant), timeout=15).json()
        for entry in listing["entries"]:
            entries[entry["idempotencyKey"]] += 1
            report.ledger_resends_absorbed += int(entry["requestsSeen"]) - 1
    jobs = {job_id for _, job_id in accepted.values()}
    report.duplicate_effects = sorted(k for k, n in entries.items() if n > 1)
    report.missing_effects = sorted(j for j in jobs if states.get(j) == "Completed" and f"{j}:ledger-post" not in entries)
    report.unknown_entries = sorted(k for k in entries if k.removesuffix(":ledger-post") not in jobs)
    with jobs_database(hosts.data, hosts.server) as query:
        from_jobs_db(query, jobs, report, ROWS_PER_JOB)
    for key, (tenant, job_id) in accepted.items():  # a client retrying long after: the same job
        response = httpx.post(f"{host.base_url}/api/imports", json=_body(tenant), headers=_headers(tenant, key),
                              timeout=15)
        if response.status_code != 202 or response.json()["jobId"] != job_id:
            report.changed_job_ids.append(key)


def run_crash_test(workdir: Path, settings: CrashSettings, server: CrashServer | None = None) -> CrashReport:
    """With `server`, the hosts run `--storage postgres` on separate data folders and the server is
    restarted `settings.server_restarts` times while jobs flow."""
    rng = random.Random(settings.seed)
    report = CrashReport(settings=asdict(settings))
    app = copy_example("imports", workdir)
    hosts = Hosts(app, workdir / "data", server)
    report.data_folders = len(set(hosts.folders))
    csv = workdir / "orders.csv"
    csv.write_bytes(CSV)
    for folder in dict.fromkeys(hosts.folders):  # the blobs of each folder (one upload once blobs are shared)
        for tenant in TENANTS:
            run_cli("blob", "upload", "imports", f"{tenant}/crash/orders.csv", str(csv), "--app", str(app), "--data",
                    str(folder), "--connection", "ImportsStorage", *hosts.storage_args(), env=hosts.server_env())
    submitter = Submitter(hosts, report, random.Random(settings.seed + 1))
    try:
        for index in range(2):
            if not hosts.start(index):
                raise HostDidNotStart(hosts.logs[-1])
        until = time.monotonic() + settings.seconds
        bursts, done = threading.Semaphore(0), threading.Event()
        disruptor = threading.Thread(target=_disrupt, args=(hosts, settings, report, rng, bursts, done), daemon=True)
        disruptor.start()
        restarter = threading.Thread(target=_restart_server, args=(server, settings, report), daemon=True)
        restarter.start()
        count = max(1, -(-settings.jobs // settings.burst))
        for burst in range(count):
            numbers = range(burst * settings.burst, min(settings.jobs, (burst + 1) * settings.burst))
            senders = [threading.Thread(target=submitter.submit, args=(f"crash-{settings.seed}-{n}", TENANTS[n % 2],
                                                                       time.monotonic() + 120)) for n in numbers]
            for sender in senders:
                sender.start()
            bursts.release()
            for sender in senders:
                sender.join(150)
            time.sleep(max(0.0, until - time.monotonic()) / max(1, count - burst))
        done.set()
        disruptor.join(150)
        restarter.join(150)
        report.jobs = len(submitter.accepted)
        for index in range(2):  # both hosts up for recovery
            if hosts.running[index] is None and not hosts.start(index):
                report.restarts_failed += 1
        _check(hosts, submitter, report, settings)
    finally:
        hosts.stop_all()
        report.restart_seconds_max = round(max(hosts.start_seconds, default=0.0), 1)
        report.function_failures = dict(Counter(m for log in hosts.logs for m in FAILURE.findall(log)))
    return report


def write_report(report: CrashReport, path: Path) -> None:
    path.write_text(json.dumps(report.to_dict(), indent=2) + "\n", encoding="utf-8")
