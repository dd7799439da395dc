"""The SQL of the embedded task hub: its schema and the statements run inside its transactions.

Each function takes the transaction's connection (and the runtime clock's `now`, epoch seconds);
`SqliteTaskHub` runs them on its database thread, one transaction per call of the `TaskHub` port.
"""

from __future__ import annotations

import base64
import json
import sqlite3
import uuid
from collections.abc import Sequence
from datetime import datetime, timezone
from typing import Any

from funchost.storage.durable import (
    ENTITY,
    ORCHESTRATION,
    ActivityClaim,
    ActivityItem,
    Commit,
    Committed,
    InstanceClaim,
    InstanceExists,
    InstanceQuery,
    InstanceRecord,
    LeaseLost,
    Message,
    NewActivity,
    NewInstance,
    Outbound,
    QueryPage,
    SessionOutcome,
    WorkItem,
)

SCHEMA = """
CREATE TABLE IF NOT EXISTS instances (
    instance_id TEXT PRIMARY KEY,
    kind TEXT NOT NULL,
    name TEXT NOT NULL,
    version TEXT NOT NULL DEFAULT '',
    execution_id TEXT NOT NULL DEFAULT '',
    status TEXT NOT NULL,
    input TEXT,
    output TEXT,
    custom_status TEXT,
    created_time REAL NOT NULL,
    last_updated_time REAL NOT NULL,
    parent_instance_id TEXT,
    entity_exists INTEGER NOT NULL DEFAULT 0,
    entity_state TEXT,
    lease_token TEXT,
    lease_expires REAL
);
CREATE INDEX IF NOT EXISTS instances_created ON instances (kind, created_time, instance_id);
CREATE TABLE IF NOT EXISTS history (
    instance_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    event TEXT NOT NULL,
    PRIMARY KEY (instance_id, seq)
);
CREATE TABLE IF NOT EXISTS inbox (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    instance_id TEXT NOT NULL,
    execution_id TEXT,
    event TEXT NOT NULL,
    visible_at REAL NOT NULL,
    control INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS inbox_instance ON inbox (instance_id, id);
CREATE INDEX IF NOT EXISTS inbox_visible ON inbox (visible_at);
CREATE TABLE IF NOT EXISTS activities (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    instance_id TEXT NOT NULL,
    execution_id TEXT NOT NULL,
    task_id INTEGER NOT NULL,
    name TEXT NOT NULL,
    input TEXT,
    visible_at REAL NOT NULL,
    dequeue_count INTEGER NOT NULL DEFAULT 0,
    lease_token TEXT,
    lease_expires REAL
);
CREATE INDEX IF NOT EXISTS activities_visible ON activities (visible_at, id);
CREATE INDEX IF NOT EXISTS activities_instance ON activities (instance_id)
"""

LOCKABLE = """
SELECT m.instance_id FROM inbox m JOIN instances i ON i.instance_id = m.instance_id
WHERE m.visible_at <= :now AND i.kind = :kind
  AND (i.lease_expires IS NULL OR i.lease_expires <= :now)
  AND (i.status != 'Suspended' OR m.control = 1)
GROUP BY m.instance_id ORDER BY MIN(m.id) LIMIT :limit
"""


AVAILABLE_ACTIVITY = ("SELECT 1 FROM activities WHERE visible_at <= ? AND (lease_expires IS NULL OR lease_expires <= ?) "
                       "LIMIT 1")


def _time(value: float) -> datetime:
    return datetime.fromtimestamp(value, timezone.utc)


def to_record(row: sqlite3.Row) -> InstanceRecord:
    return InstanceRecord(
        instance_id=row["instance_id"], kind=row["kind"], name=row["name"], version=row["version"],
        execution_id=row["execution_id"], status=row["status"], input=row["input"], output=row["output"],
        custom_status=row["custom_status"], created_time=_time(row["created_time"]),
        last_updated_time=_time(row["last_updated_time"]), parent_instance_id=row["parent_instance_id"],
        entity_exists=bool(row["entity_exists"]), entity_state=row["entity_state"],
    )


def new_token(owner: str) -> str:
    return f"{owner}:{uuid.uuid4().hex}"


def read_history(conn: sqlite3.Connection, instance_id: str) -> list[dict[str, Any]]:
    rows = conn.execute("SELECT event FROM history WHERE instance_id = ? ORDER BY seq", (instance_id,))
    return [json.loads(row[0]) for row in rows]


def create_instance(conn: sqlite3.Connection, instance: NewInstance, now: float, dedupe: frozenset[str]) -> None:
    row = conn.execute("SELECT status FROM instances WHERE instance_id = ?", (instance.instance_id,)).fetchone()
    if row is not None and row["status"] in dedupe:
        raise InstanceExists(instance.instance_id, row["status"])
    _replace_instance(conn, instance, now)


def take_instance(conn: sqlite3.Connection, instance_id: str, *, owner: str, now: float, lease: float,
                  batch: int | None) -> WorkItem:
    """Lease an instance to `owner` under a new token; with its visible messages (control ones only
    while suspended, at most `batch`) and, for orchestrations, its history."""
    token = new_token(owner)
    conn.execute("UPDATE instances SET lease_token = ?, lease_expires = ? WHERE instance_id = ?",
                 (token, now + lease, instance_id))
    record = to_record(conn.execute("SELECT * FROM instances WHERE instance_id = ?", (instance_id,)).fetchone())
    control_only = " AND control = 1" if record.status == "Suspended" else ""
    statement = (f"SELECT * FROM inbox WHERE instance_id = ? AND visible_at <= ?{control_only} ORDER BY id"
                 + (f" LIMIT {int(batch)}" if batch else ""))
    messages = [Message(r["id"], r["instance_id"], r["execution_id"], json.loads(r["event"]), r["visible_at"])
                for r in conn.execute(statement, (instance_id, now))]
    history = read_history(conn, instance_id) if record.kind == ORCHESTRATION else []
    return WorkItem(record, history, messages, token, now + lease)


def claim_instance(conn: sqlite3.Connection, instance_id: str, claim: InstanceClaim, now: float) -> WorkItem | None:
    """Take an orchestration a write just gave a message (a result, its start), if nobody holds it,
    it is not suspended and a message is visible (a scheduled start waits for its time)."""
    row = conn.execute("SELECT kind, status, lease_expires FROM instances WHERE instance_id = ?",
                       (instance_id,)).fetchone()
    if (row is None or row["kind"] != ORCHESTRATION or row["status"] == "Suspended"
            or (row["lease_expires"] is not None and row["lease_expires"] > now)
            or conn.execute("SELECT 1 FROM inbox WHERE instance_id = ? AND visible_at <= ? LIMIT 1",
                            (instance_id, now)).fetchone() is None):
        return None
    return take_instance(conn, instance_id, owner=claim.owner, now=now, lease=claim.lease, batch=None)


def claim_woken(conn: sqlite3.Connection, instance_id: str, claim: InstanceClaim, now: float) -> WorkItem | None:
    """After an activity's result: take the instance unless more of its activities are outstanding
    (a fan-out's results are taken together by the next fetch, not one episode each)."""
    if conn.execute("SELECT 1 FROM activities WHERE instance_id = ? LIMIT 1", (instance_id,)).fetchone():
        return None
    return claim_instance(conn, instance_id, claim, now)


def _replace_instance(conn: sqlite3.Connection, instance: NewInstance, now: float) -> None:
    """A new execution replaces whatever was there: old history and undelivered messages go."""
    conn.execute("DELETE FROM history WHERE instance_id = ?", (instance.instance_id,))
    conn.execute("DELETE FROM inbox WHERE instance_id = ?", (instance.instance_id,))
    conn.execute("DELETE FROM activities WHERE instance_id = ?", (instance.instance_id,))
    conn.execute(
        "INSERT OR REPLACE INTO instances (instance_id, kind, name, version, execution_id, status, input, output, "
        "custom_status, created_time, last_updated_time, parent_instance_id) "
        "VALUES (?, ?, ?, ?, ?, 'Pending', ?, NULL, NULL, ?, ?, ?)",
        (instance.instance_id, ORCHESTRATION, instance.name, instance.version, instance.execution_id,
         instance.input, now, now, instance.parent_instance_id))
    visible = now if instance.visible_at is None else instance.visible_at
    conn.execute("INSERT INTO inbox (instance_id, execution_id, event, visible_at, control) VALUES (?, ?, ?, ?, 0)",
                 (instance.instance_id, instance.execution_id, json.dumps(instance.started), visible))


def send_messages(conn: sqlite3.Connection, messages: Sequence[Outbound], now: float) -> None:
    for message in messages:
        if message.instance_id.startswith("@"):
            _ensure_entity(conn, message.instance_id, now)
        visible = now if message.visible_at is None else message.visible_at
        conn.execute("INSERT INTO inbox (instance_id, execution_id, event, visible_at, control) VALUES (?, ?, ?, ?, ?)",
                     (message.instance_id, message.execution_id, json.dumps(message.event), visible,
                      1 if message.control else 0))


def _ensure_entity(conn: sqlite3.Connection, instance_id: str, now: float) -> None:
    name = instance_id[1:].split("@", 1)[0]
    conn.execute("INSERT OR IGNORE INTO instances (instance_id, kind, name, status, created_time, last_updated_time) "
                 "VALUES (?, ?, ?, 'Running', ?, ?)", (instance_id, ENTITY, name, now, now))


def apply_commit(conn: sqlite3.Connection, item: WorkItem, commit: Commit, now: float) -> Committed:
    instance_id = item.instance.instance_id
    row = conn.execute("SELECT lease_token FROM instances WHERE instance_id = ?", (instance_id,)).fetchone()
    if row is None or row["lease_token"] != item.lease_token:
        raise LeaseLost(f"the lease on '{instance_id}' was lost; another host has taken the instance over")
    update = commit.update
    release = ", lease_token = NULL, lease_expires = NULL" if commit.release else ""
    conn.execute(
        "UPDATE instances SET status = ?, execution_id = ?, input = ?, output = ?, custom_status = ?, "
        "name = COALESCE(?, name), version = COALESCE(?, version), entity_exists = ?, entity_state = ?, "
        f"last_updated_time = ?{release} WHERE instance_id = ?",
        (update.status, update.execution_id, update.input, update.output, update.custom_status, update.name,
         update.version, 1 if update.entity_exists else 0, update.entity_state, now, instance_id))
    conn.executemany("DELETE FROM inbox WHERE id = ?", [(message_id,) for message_id in commit.consumed])
    if commit.reset_history:
        conn.execute("DELETE FROM history WHERE instance_id = ?", (instance_id,))
    if commit.history:
        start = conn.execute("SELECT COALESCE(MAX(seq), -1) + 1 FROM history WHERE instance_id = ?",
                             (instance_id,)).fetchone()[0]
        conn.executemany("INSERT INTO history (instance_id, seq, event) VALUES (?, ?, ?)",
                         [(instance_id, start + i, json.dumps(event)) for i, event in enumerate(commit.history)])
    for instance in commit.instances:
        _replace_instance(conn, instance, now)
    claimed = _add_activities(conn, commit.activities, now, commit.claim)
    send_messages(conn, commit.messages, now)
    pending = conn.execute("SELECT 1 FROM inbox WHERE instance_id = ? AND visible_at <= ? LIMIT 1",
                           (instance_id, now)).fetchone() is not None
    return Committed(claimed, pending)


def apply_session(conn: sqlite3.Connection, item: WorkItem, commit: Commit, activity: ActivityItem,
                  result: Outbound, now: float, claim: InstanceClaim | None) -> SessionOutcome:
    """An activity's completion with the episode that consumed its result (`TaskHub.commit_session`)."""
    instance_id = item.instance.instance_id
    release = "UPDATE instances SET lease_token = NULL, lease_expires = NULL WHERE instance_id = ? AND lease_token = ?"
    if conn.execute("DELETE FROM activities WHERE id = ? AND lease_token = ?",
                    (activity.id, activity.lease_token)).rowcount != 1:
        conn.execute(release, (instance_id, item.lease_token))
        return SessionOutcome(False)
    row = conn.execute("SELECT lease_token FROM instances WHERE instance_id = ?", (instance_id,)).fetchone()
    if (row is not None and row["lease_token"] == item.lease_token
            and conn.execute("SELECT 1 FROM inbox WHERE instance_id = ? AND visible_at <= ? LIMIT 1",
                             (instance_id, now)).fetchone() is None):
        return SessionOutcome(True, apply_commit(conn, item, commit, now))
    send_messages(conn, [result], now)
    conn.execute(release, (instance_id, item.lease_token))
    return SessionOutcome(True, None, None if claim is None else claim_woken(conn, instance_id, claim, now))


def _add_activities(conn: sqlite3.Connection, activities: Sequence[NewActivity], now: float,
                    claim: ActivityClaim | None) -> list[ActivityItem]:
    """Queue the activities; the first `claim.limit` of them already leased to `claim.owner`."""
    claimed = []
    for n, a in enumerate(activities):
        if claim is None or n >= claim.limit:
            conn.execute("INSERT INTO activities (instance_id, execution_id, task_id, name, input, visible_at) "
                         "VALUES (?, ?, ?, ?, ?, ?)", (a.instance_id, a.execution_id, a.task_id, a.name, a.input, now))
            continue
        token, expires = new_token(claim.owner), now + claim.lease
        row = conn.execute(
            "INSERT INTO activities (instance_id, execution_id, task_id, name, input, visible_at, dequeue_count, "
            "lease_token, lease_expires) VALUES (?, ?, ?, ?, ?, ?, 1, ?, ?)",
            (a.instance_id, a.execution_id, a.task_id, a.name, a.input, now, token, expires))
        claimed.append(ActivityItem(int(row.lastrowid or 0), a.instance_id, a.execution_id, a.task_id, a.name, a.input,
                                    1, token, expires))
    return claimed


def query_instances(conn: sqlite3.Connection, query: InstanceQuery) -> QueryPage:
    clauses = ["kind = ?"]
    params: list[Any] = [query.kind]
    if query.created_from is not None:
        clauses.append("created_time >= ?")
        params.append(query.created_from.timestamp())
    if query.created_to is not None:
        clauses.append("created_time <= ?")
        params.append(query.created_to.timestamp())
    if query.statuses:
        clauses.append(f"status IN ({', '.join('?' for _ in query.statuses)})")
        params.extend(sorted(query.statuses))
    if query.prefix:
        clauses.append("substr(instance_id, 1, ?) = ?")
        params.extend([len(query.prefix), query.prefix])
    if query.name is not None:
        clauses.append("name = ?")
        params.append(query.name)
    offset = _decode_token(query.continuation)
    top = max(1, query.top)
    rows = conn.execute(f"SELECT * FROM instances WHERE {' AND '.join(clauses)} "
                        "ORDER BY created_time, instance_id LIMIT ? OFFSET ?", (*params, top + 1, offset)).fetchall()
    more = len(rows) > top
    return QueryPage([to_record(r) for r in rows[:top]], _encode_token(offset + top) if more else None)


def _encode_token(offset: int) -> str:
    return base64.urlsafe_b64encode(json.dumps({"offset": offset}).encode()).decode()


def _decode_token(token: str | None) -> int:
    if not token:
        return 0
    try:
        return max(0, int(json.loads(base64.urlsafe_b64decode(token.encode()))["offset"]))
    except (ValueError, KeyError, TypeError):
        return 0
