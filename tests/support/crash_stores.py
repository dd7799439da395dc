"""What the stores hold after a crash run of the reference pipeline (`tests/support/crash.py`):
the jobs database (the data folder's SQLite file, or the `<schema>_imports` schema on the hosts'
PostgreSQL server with `--storage postgres`) and the queue messages still held for jobs that did
not finish."""

from __future__ import annotations

import base64
import json
import sqlite3
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, Protocol

Query = Callable[..., list[tuple[Any, ...]]]


@dataclass(frozen=True)
class CrashServer:
    """The PostgreSQL server of a `--storage postgres` run (each host then has its own data folder)."""

    dsn: str
    schema: str
    restart: Callable[[], None]


class Report(Protocol):
    lost: list[str]
    lost_details: dict[str, Any]
    wrong_rows: list[str]
    jobs_rerun: int
    attempts_max: int
    slowest_job_seconds: float


@contextmanager
def jobs_database(data: Path, server: CrashServer | None) -> Iterator[Query]:
    """`query(sql, params)` on the jobs database (SQL written with `?` placeholders)."""
    if server is None:
        with sqlite3.connect(data / "imports.db", timeout=30) as db:
            yield lambda sql, params=(): db.execute(sql, params).fetchall()
        return
    import psycopg
    from psycopg import sql as pgsql

    with psycopg.connect(server.dsn, autocommit=True) as conn:
        conn.execute(pgsql.SQL("SET search_path TO {}").format(pgsql.Identifier(f"{server.schema}_imports")))
        yield lambda sql, params=(): conn.execute(sql.replace("?", "%s"), params).fetchall()


def from_jobs_db(query: Query, jobs: set[str], report: Report, rows_per_job: int) -> None:
    """Jobs whose imported rows are not exactly the CSV's, once each; jobs run more than once;
    the most runs any job took; the longest time from acceptance to a final state."""
    rows = dict(query("SELECT job_id, COUNT(*) FROM job_rows GROUP BY job_id"))
    facts = {j: (a, c, f) for j, a, c, f in query("SELECT job_id, attempts, created_at, finished_at FROM jobs")}
    for job_id in (j for j in report.lost if j not in report.lost_details):
        job = query("SELECT state, attempts, run_id, lease_until, heartbeat_at, reason, updated_at FROM jobs"
                    " WHERE job_id = ?", (job_id,))
        outbox = query("SELECT state, attempts, lease_until, message_id, updated_at FROM outbox WHERE job_id = ?",
                       (job_id,))
        report.lost_details[job_id] = {"job": [str(v) for v in job[0]] if job else None,
                                       "outbox": [[str(v) for v in row] for row in outbox]}
    runs = [int(facts[j][0]) for j in jobs if j in facts]
    report.wrong_rows = sorted(j for j in jobs if rows.get(j, 0) != rows_per_job)
    report.jobs_rerun, report.attempts_max = sum(n > 1 for n in runs), max(runs, default=0)
    spans = [(_moment(f) - _moment(c)).total_seconds() for j, (_, c, f) in facts.items() if j in jobs and f]
    report.slowest_job_seconds = round(max(spans, default=0.0), 1)


def messages_of_lost(queue_files: Iterable[Path], report: Report) -> None:
    """The queue messages still held for jobs that did not finish (to tell slow from stuck), from
    the data folders' embedded queue files (none when the queues are on the server)."""
    now = time.time()
    for database in (f for f in queue_files if f.exists()):
        with sqlite3.connect(database, timeout=30) as db:
            rows = db.execute("SELECT queue, content, dequeue_count, visible_at FROM messages").fetchall()
        for queue, content, dequeues, visible_at in rows:
            try:
                job_id = json.loads(base64.b64decode(content)).get("jobId")
            except ValueError:
                continue
            if job_id in report.lost_details:
                report.lost_details[job_id].setdefault("messages", []).append(
                    {"queue": queue, "dequeueCount": dequeues, "visibleIn": round(visible_at - now, 1)})


def _moment(value: str | datetime) -> datetime:
    return value if isinstance(value, datetime) else datetime.fromisoformat(value)
