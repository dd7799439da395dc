"""In-process wake-ups: a write by this host cuts a listener's wait short.

Topics are tuples such as ``("queue", account, queue_name)``, published by the storage wrappers
of `funchost.storage.wakeups`. Subscribers are plain callables
run synchronously on the event loop thread; they must not block (typically `PollLoop.notify`).

A backend whose state other hosts share (`--storage postgres`) sets a relay: publishes of the
topic kinds it names (the first item of the tuple) are handed to it too, and it publishes the
other hosts' topics here with `publish_local` (never relayed back).
"""

from __future__ import annotations

import asyncio
import threading
from collections import defaultdict
from collections.abc import Callable, Hashable

Callback = Callable[[], None]


class Signals:
    def __init__(self) -> None:
        self._subscribers: dict[Hashable, list[Callback]] = defaultdict(list)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._lock = threading.Lock()
        self._relay: Callable[[Hashable], None] | None = None
        self._relayed: frozenset[Hashable] = frozenset()

    def set_relay(self, relay: Callable[[Hashable], None], kinds: frozenset[Hashable]) -> None:
        """Hand every publish of a topic whose first item is in `kinds` to `relay` as well."""
        self._relay, self._relayed = relay, kinds

    def bind_loop(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop

    def subscribe(self, topic: Hashable, callback: Callback) -> Callable[[], None]:
        with self._lock:
            self._subscribers[topic].append(callback)

        def unsubscribe() -> None:
            with self._lock:
                if callback in self._subscribers.get(topic, []):
                    self._subscribers[topic].remove(callback)

        return unsubscribe

    def topics(self) -> list[Hashable]:
        """The topics that have subscribers now."""
        with self._lock:
            return [topic for topic, callbacks in self._subscribers.items() if callbacks]

    def publish(self, topic: Hashable) -> None:
        """Safe from any thread; callbacks run on the bound loop."""
        if self._relay is not None and isinstance(topic, tuple) and topic and topic[0] in self._relayed:
            self._relay(topic)
        self.publish_local(topic)

    def publish_local(self, topic: Hashable) -> None:
        """Wake this process's subscribers of `topic` only."""
        with self._lock:
            callbacks = list(self._subscribers.get(topic, ()))
        if not callbacks:
            return
        loop = self._loop
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        for callback in callbacks:
            if loop is None or running is loop:
                callback()
            else:
                loop.call_soon_threadsafe(callback)


def queue_topic(account: str, queue_name: str) -> tuple[str, str, str]:
    return ("queue", account, queue_name.lower())


def documents_topic(store_name: str, database: str, container: str) -> tuple[str, str, str, str]:
    return ("documents", store_name, database, container)
