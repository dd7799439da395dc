"""Wake-ups across hosts: a write on one machine cuts the listeners' waits short on all.

Two kinds of wake-up travel on one channel per deployment:

* queue puts: after a statement that made a message visible has committed, the queue port calls
  `touch(account, queue)` (whoever wrote: a trigger's host, the CLI, the storage endpoints);
* the host's in-process topics of the other shared services (Durable task hubs, Service Bus
  entities, event hubs, document containers): `attach(signals, kinds)` makes the host's `Signals`
  hand every publish of those kinds to `relay(topic)`. The code that publishes runs after its
  store's write returned, so the write is committed before any host hears of it.

Sender: payloads are deduplicated and flushed every FLUSH_DELAY seconds (or at MAX_TOPICS) with one
``SELECT pg_notify(ch, p) FROM unnest(...)`` on a dedicated autocommit connection: a burst of
writes costs one notifying statement, not one per message.

Receiver: one LISTEN connection per host process (per backend), started once the host's `Signals`
are attached and a loop runs. ``v1|<account>|<queue>`` becomes a publish of that queue's
`queue_topic`, ``t1|<JSON array>`` a publish of that topic, both on this host only (never relayed
back); notifications sent by this backend's own notifier are dropped (its listeners were woken
when it wrote). On every (re)connect a wake is published to every subscribed topic of those
kinds, for what was written while not listening.

Polling stays the correctness path: a lost notification (the sender died between commit and
flush, the listener was reconnecting) only delays a pickup until the listener's next poll.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import threading
from collections.abc import Hashable, Iterable
from typing import Any

from funchost.runtime.signals import Signals, queue_topic
from funchost.settings.postgres import PostgresConfig
from funchost.storage.postgres.connect import connect_kwargs

log = logging.getLogger("funchost.storage.postgres")

FLUSH_DELAY = 0.002
MAX_TOPICS = 256
MAX_BACKOFF = 30.0
MAX_PAYLOAD = 7900  # NOTIFY payloads must stay under 8000 bytes; a longer topic only waits for a poll
NOTIFY_SQL = "SELECT pg_notify(%s, p) FROM unnest(%s::text[]) p"


def wake_channel(schema: str) -> str:
    """`fh_<8 hex of the schema>_wake`: one channel per deployment, whatever the schema's name."""
    return f"fh_{hashlib.sha1(schema.encode()).hexdigest()[:8]}_wake"


def payload(account: str, queue: str) -> str:
    return f"v1|{account}|{queue}"


def topic_payload(topic: Hashable) -> str | None:
    """A relayed topic as a payload; None for a topic that is not a tuple of plain values."""
    if not isinstance(topic, tuple):
        return None
    try:
        text = "t1|" + json.dumps(list(topic), separators=(",", ":"))
    except (TypeError, ValueError):
        return None
    return text if len(text.encode()) <= MAX_PAYLOAD else None


def parse(text: str) -> Hashable | None:
    """The topic a payload wakes on this host, or None for a payload this version does not know."""
    if text.startswith("t1|"):
        try:
            items = json.loads(text[3:])
        except ValueError:
            return None
        return tuple(items) if isinstance(items, list) and items else None
    parts = text.split("|", 2)
    return queue_topic(parts[1], parts[2]) if len(parts) == 3 and parts[0] == "v1" else None


class Wakeups:
    """The notifier and the listener of one backend (shared by its account views)."""

    def __init__(self, config: PostgresConfig) -> None:
        self._config = config
        self._channel = wake_channel(config.schema)
        self._kinds: frozenset[str] = frozenset({"queue"})  # the topic kinds woken on (re)connect
        self._loop: asyncio.AbstractEventLoop | None = None
        self._loop_thread: int | None = None
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
        self._send(payload(account, queue))

    def relay(self, topic: Hashable) -> None:
        """A topic this host published (its write committed): publish it on the other hosts too.
        Safe from any thread (`Signals.publish` is)."""
        text = topic_payload(topic)
        if text is None:
            return
        if threading.get_ident() == self._loop_thread:
            self._send(text)
        elif self._loop is not None and not self._loop.is_closed():
            self._loop.call_soon_threadsafe(self._send, text)

    def _send(self, text: str) -> None:
        self._pending.add(text)
        if self._flushing is None or self._flushing.done():
            self._flushing = asyncio.get_running_loop().create_task(self._flush(), name="postgres-notify")

    async def _flush(self) -> None:
        while self._pending:
            if len(self._pending) < MAX_TOPICS:
                await asyncio.sleep(FLUSH_DELAY)
            topics, self._pending = sorted(self._pending), set()
            try:
                conn = await self._sender_connection()
                await conn.execute(NOTIFY_SQL, (self._channel, topics))
            except Exception as exc:  # noqa: BLE001 - a lost wake-up only delays: the listeners poll
                log.debug("wake-up notification not sent (%s)", type(exc).__name__)
                await self._drop_sender()

    async def _sender_connection(self) -> Any:
        if self._sender is None or self._sender.closed or self._sender.broken:
            import psycopg

            kwargs = connect_kwargs(self._config, "notifier")
            self._sender = await psycopg.AsyncConnection.connect(self._config.conninfo, autocommit=True, **kwargs)
            self._sender_pid = self._sender.info.backend_pid
        return self._sender

    async def _drop_sender(self) -> None:
        sender, self._sender = self._sender, None
        if sender is not None:
            await sender.close()

    # -- receiving -------------------------------------------------------------------------------

    def attach(self, signals: Signals, kinds: Iterable[str] = ()) -> None:
        """Wake `signals` for other hosts' writes; relay this host's publishes of `kinds` to them."""
        self._signals = signals
        self._kinds = frozenset({"queue", *kinds})
        relayed = frozenset(kinds)
        if relayed:
            signals.set_relay(self.relay, relayed)
        self.start()

    def start(self) -> None:
        """Start listening if signals are attached and a loop runs (else on a later call)."""
        if self._signals is None or (self._listener is not None and not self._listener.done()):
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return
        self._loop, self._loop_thread = loop, threading.get_ident()
        self._listener = loop.create_task(self._listen_forever(), name="postgres-wake-listener")

    async def _listen_forever(self) -> None:
        delay = 1.0
        while True:
            try:
                await self._listen()
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # noqa: BLE001 - the server went away: back off, reconnect, catch up
                self.listening.clear()
                log.warning("wake-up notifications lost (%s); reconnecting in %.0fs", type(exc).__name__, delay)
                await asyncio.sleep(delay)
                delay = min(delay * 2, MAX_BACKOFF)

    async def _listen(self) -> None:
        import psycopg
        from psycopg import sql as pgsql

        kwargs = connect_kwargs(self._config, "listener")
        async with await psycopg.AsyncConnection.connect(self._config.conninfo, autocommit=True, **kwargs) as conn:
            await conn.execute(pgsql.SQL("LISTEN {}").format(pgsql.Identifier(self._channel)))
            self.listening.set()
            self._catch_up()
            async for notify in conn.notifies():
                if notify.pid == self._sender_pid:
                    continue  # ours: this host woke its own listeners when it put the message
                topic = parse(notify.payload)
                if topic is not None and self._signals is not None:
                    self._signals.publish_local(topic)

    def _catch_up(self) -> None:
        """Wake every subscribed topic of the shared kinds: what was written while this host was
        not listening."""
        if self._signals is not None:
            for topic in self._signals.topics():
                if isinstance(topic, tuple) and topic[:1] and topic[0] in self._kinds:
                    self._signals.publish_local(topic)

    async def aclose(self) -> None:
        if self._flushing is not None:  # the last wake-ups still go out (the statement is quick)
            await asyncio.gather(self._flushing, return_exceptions=True)
        if self._listener is not None and not self._listener.done():
            self._listener.cancel()
            await asyncio.gather(self._listener, return_exceptions=True)
        self._listener = self._flushing = None
        self.listening.clear()
        await self._drop_sender()
