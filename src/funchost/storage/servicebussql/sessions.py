"""Sessions of the SQL broker: one holder per session, FIFO inside it, a state blob.

A session lock is a row in `sessions` (token + locked_until). Messages received through a
session share its lock: their `locked_until` follows the session's, so renewing or losing the
session lock renews or releases them all, as Service Bus does ("locks are handled at the
session level").
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

from funchost.storage.servicebus import (
    InvalidServiceBusInput,
    SessionCannotBeLocked,
    SessionLock,
    SessionLockLost,
    split_dead_letter,
)
from funchost.storage.servicebussql.store import Entity, load_entity, sweep
from funchost.storage.sqlconn import Conn, StoreDatabase
from funchost.storage.write_group import WriteGroup


def _lock(entity: Entity, session_id: str, token: str, until: float) -> SessionLock:
    return SessionLock(entity.path, session_id, token, datetime.fromtimestamp(until, UTC))


class SessionOperations:
    """Mixed into the SQL broker (which provides `_writes`, `_db` and `_now`)."""

    _writes: WriteGroup[Conn]
    _db: StoreDatabase

    def _now(self) -> float:
        raise NotImplementedError

    @staticmethod
    def _held_session(conn: Conn, entity: Entity, session: SessionLock | None,
                      now: float) -> SessionLock:
        if session is None:
            raise InvalidServiceBusInput(f"the entity '{entity.path}' requires sessions: receive through an "
                                         "accepted session")
        row = conn.execute("SELECT token, locked_until FROM sessions WHERE entity = ? AND session_id = ?",
                           (entity.key, session.session_id)).fetchone()
        if row is None or row["token"] != session.token or row["locked_until"] is None or row["locked_until"] <= now:
            raise SessionLockLost(f"the session lock of '{session.session_id}' was lost")
        return _lock(entity, session.session_id, session.token, row["locked_until"])

    async def accept_session(self, path: str, session_id: str | None = None) -> SessionLock | None:
        name, dlq = split_dead_letter(path)
        if dlq:
            raise InvalidServiceBusInput("a dead-letter queue has no sessions")
        now = self._now()
        token = str(uuid.uuid4())

        def op(conn: Conn) -> SessionLock | None:
            entity = load_entity(conn, name, kinds=("queue", "subscription"))
            if not entity.properties.requires_session:
                raise InvalidServiceBusInput(f"the entity '{entity.path}' does not require sessions")
            sweep(conn, entity, now)
            wanted = session_id
            if wanted is None:
                row = conn.execute(
                    "SELECT session_id FROM messages WHERE entity = ? AND dlq = 0 AND session_id IS NOT NULL"
                    " AND state IN ('active', 'scheduled') AND visible_at <= ? AND locked_until IS NULL"
                    " AND (expires_at IS NULL OR expires_at > ?) AND session_id NOT IN"
                    " (SELECT session_id FROM sessions WHERE entity = ? AND locked_until > ?)"
                    " ORDER BY seq LIMIT 1", (entity.key, now, now, entity.key, now)).fetchone()
                if row is None:
                    return None
                wanted = row["session_id"]
            else:
                held = conn.execute("SELECT locked_until FROM sessions WHERE entity = ? AND session_id = ?",
                                    (entity.key, wanted)).fetchone()
                if held is not None and held["locked_until"] is not None and held["locked_until"] > now:
                    raise SessionCannotBeLocked(f"the session '{wanted}' is locked by another receiver")
            until = now + entity.properties.lock_duration
            conn.execute(
                "INSERT INTO sessions(entity, session_id, token, locked_until) VALUES (?,?,?,?)"
                " ON CONFLICT(entity, session_id) DO UPDATE SET token = excluded.token,"
                " locked_until = excluded.locked_until", (entity.key, wanted, token, until))
            return _lock(entity, wanted, token, until)

        result: SessionLock | None = await self._writes.run(op)
        return result

    async def renew_session_lock(self, session: SessionLock) -> SessionLock:
        now = self._now()

        def op(conn: Conn) -> SessionLock:
            entity = load_entity(conn, session.entity)
            self._held_session(conn, entity, session, now)
            until = now + entity.properties.lock_duration
            conn.execute("UPDATE sessions SET locked_until = ? WHERE entity = ? AND session_id = ?",
                         (until, entity.key, session.session_id))
            conn.execute("UPDATE messages SET locked_until = ? WHERE entity = ? AND dlq = 0 AND session_id = ?"
                         " AND lock_token IS NOT NULL", (until, entity.key, session.session_id))
            return _lock(entity, session.session_id, session.token, until)

        result: SessionLock = await self._writes.run(op)
        return result

    async def release_session(self, session: SessionLock) -> None:
        """Close the session receiver: the session and its unsettled messages become available."""
        await self._writes.run(lambda conn: self._release(conn, session))

    @staticmethod
    def _release(conn: Conn, session: SessionLock) -> None:
        entity = load_entity(conn, session.entity)
        row = conn.execute("SELECT token FROM sessions WHERE entity = ? AND session_id = ?",
                           (entity.key, session.session_id)).fetchone()
        if row is None or row["token"] != session.token:
            return  # already lost to someone else: nothing of ours to release
        conn.execute("UPDATE sessions SET token = NULL, locked_until = NULL WHERE entity = ? AND session_id = ?",
                     (entity.key, session.session_id))
        conn.execute("UPDATE messages SET lock_token = NULL, locked_until = NULL WHERE entity = ? AND dlq = 0"
                     " AND session_id = ? AND lock_token IS NOT NULL", (entity.key, session.session_id))

    async def get_session_state(self, session: SessionLock) -> bytes | None:
        now = self._now()

        def op(conn: Conn) -> bytes | None:
            entity = load_entity(conn, session.entity)
            self._held_session(conn, entity, session, now)
            row = conn.execute("SELECT state FROM sessions WHERE entity = ? AND session_id = ?",
                               (entity.key, session.session_id)).fetchone()
            return None if row is None or row["state"] is None else bytes(row["state"])

        result: bytes | None = await self._db.read(op)
        return result

    async def set_session_state(self, session: SessionLock, state: bytes | None) -> None:
        now = self._now()

        def op(conn: Conn) -> None:
            entity = load_entity(conn, session.entity)
            self._held_session(conn, entity, session, now)
            conn.execute("UPDATE sessions SET state = ? WHERE entity = ? AND session_id = ?",
                         (state, entity.key, session.session_id))

        await self._writes.run(op)
