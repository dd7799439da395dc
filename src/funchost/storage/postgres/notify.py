"""Queue wake-ups across hosts: a put on one machine cuts the queue listeners' waits short on all.

Sender: after a statement that made a message visible has committed, the queue port calls
`touch(account, queue)`. Topics are deduplicated and flushed every FLUSH_DELAY seconds (or at
MAX_TOPICS) with one ``SELECT pg_notify(ch, p) FROM unnest(...)`` on a dedicated autocommit
connection: a burst of puts costs one notifying statement, not one per message.

Receiver: one LISTEN connection per host process (per backend), started once the host's `Signals`
are attached and a loop runs. A payload ``v1|<account>|<queue>`` becomes a publish of that
queue's `queue_topic`; notifications sent by this backend's own notifier are dropped (the host's
`WakingQueueService` already woke its own listeners). On every (re)connect a wake is published to
every subscribed queue topic, for what was put while not listening.

Polling stays the correctness path: a lost notification (the sender died between commit and
flush, the listener was reconnecting) only delays a pickup until the listener's next poll.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
from typing import Any

from funchost.runtime.signals import Signals, queue_topic
from funchost.settings.postgres import PostgresConfig
from funchost.storage.postgres.connect import connect_kwargs

log = logging.getLogger("funchost.storage.queues")

FLUSH_DELAY = 0.002
MAX_TOPICS = 256
MAX_BACKOFF = 30.0
NOTIFY_SQL = "SELECT pg_notify(%s, p) FROM unnest(%s::text[]) p"


def queue_channel(schema: str) -> str:
    """`fh_<8 hex of the schema>_queue`: one channel per deployment, whatever the schema's name."""
    return f"fh_{hashlib.sha1(schema.encode()).hexdigest()[:8]}_queue"


def payload(account: str, queue: str) -> str:
    return f"v1|{account}|{queue}"


def parse(text: str) -> tuple[str, str] | None:
    parts = text.split("|", 2)
    return (parts[1], parts[2]) if len(parts) == 3 and parts[0] == "v1" else None


class QueueWakeups:
    """The notifier and the listener of one backend (shared by its account views)."""

    def __init__(self, config: PostgresConfig) -> None:
        self._config = config
        self._channel = queue_channel(config.schema)
        self._pending: set[str] = set()
        self._flushing: asyncio.Task[None] | None = None
        self._sender: Any = None
        self._sender_pid: int | None = None
        self._signals: Signals | None = None
        self._listener: asyncio.Task[None] | None = None
        self.listening = asyncio.Event()  # set while the LISTEN connection is up (tests wait on it)

    # -- sending ---------------------------------------------------------------------------------

    def touch(self, account: str, queue: str) -> None:
        """A message of `queue` became visible (committed): tell the other hosts soon."""
        self._pending.add(payload(account, queue))
        if self._flushing is None or self._flushing.done():
            self._flushing = asyncio.get_running_loop().create_task(self._flush(), name="postgres-queue-notify")

    async def _flush(self) -> None:
        while self._pending:
            if len(self._pending) < MAX_TOPICS:
                await asyncio.sleep(FLUSH_DELAY)
            topics, self._pending = sorted(self._pending), set()
            try:
                conn = await self._sender_connection()
                await conn.execute(NOTIFY_SQL, (self._channel, topics))
            except Exception as exc:  # noqa: BLE001 - a lost wake-up only delays: the listeners poll
                log.debug("queue notification not sent (%s)", type(exc).__name__)
                await self._drop_sender()

    async def _sender_connection(self) -> Any:
        if self._sender is None or self._sender.closed or self._sender.broken:
            import psycopg

            kwargs = connect_kwargs(self._config, "queue-notifier")
            self._sender = await psycopg.AsyncConnection.connect(self._config.conninfo, autocommit=True, **kwargs)
            self._sender_pid = self._sender.info.backend_pid
        return self._sender

    async def _drop_sender(self) -> None:
        sender, self._sender = self._sender, None
        if sender is not None:
            await sender.close()

    # -- receiving -------------------------------------------------------------------------------

    def attach(self, signals: Signals) -> None:
        self._signals = signals
        self.start()

    def start(self) -> None:
        """Start listening if signals are attached and a loop runs (else on a later call)."""
        if self._signals is None or (self._listener is not None and not self._listener.done()):
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return
        self._listener = loop.create_task(self._listen_forever(), name="postgres-queue-listener")

    async def _listen_forever(self) -> None:
        delay = 1.0
        while True:
            try:
                await self._listen()
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # noqa: BLE001 - the server went away: back off, reconnect, catch up
                self.listening.clear()
                log.warning("queue notifications lost (%s); reconnecting in %.0fs", type(exc).__name__, delay)
                await asyncio.sleep(delay)
                delay = min(delay * 2, MAX_BACKOFF)

    async def _listen(self) -> None:
        import psycopg
        from psycopg import sql as pgsql

        kwargs = connect_kwargs(self._config, "queue-listener")
        async with await psycopg.AsyncConnection.connect(self._config.conninfo, autocommit=True, **kwargs) as conn:
            await conn.execute(pgsql.SQL("LISTEN {}").format(pgsql.Identifier(self._channel)))
            self.listening.set()
            self._catch_up()
            async for notify in conn.notifies():
                if notify.pid == self._sender_pid:
                    continue  # ours: this host woke its own listeners when it put the message
                topic = parse(notify.payload)
                if topic is not None and self._signals is not None:
                    self._signals.publish(queue_topic(*topic))

    def _catch_up(self) -> None:
        """Wake every subscribed queue topic: messages put while this host was not listening."""
        if self._signals is not None:
            for topic in self._signals.topics():
                if isinstance(topic, tuple) and topic[:1] == ("queue",):
                    self._signals.publish(topic)

    async def aclose(self) -> None:
        if self._flushing is not None:  # the last wake-ups still go out (the statement is quick)
            await asyncio.gather(self._flushing, return_exceptions=True)
        if self._listener is not None and not self._listener.done():
            self._listener.cancel()
            await asyncio.gather(self._listener, return_exceptions=True)
        self._listener = self._flushing = None
        self.listening.clear()
        await self._drop_sender()
