"""Fault points around every queue operation the host performs, whoever performs it.

The runtime hands out queue services through this proxy, so the processor, the output binding
and app code using the host's storage all pass the same named points:

    queue.<op>.before   raise here: the operation never reaches storage
    queue.<op>.during   raise here: the operation IS applied, but the caller gets the error
                        (a lost response: the case that makes at-least-once delivery necessary)

for <op> in put, get, update, delete. (Callers add their own `.after` points where "the
operation succeeded and then the host died" matters, e.g. the queue processor.) With nothing
armed the proxy costs one attribute check per call.
"""

from __future__ import annotations

from typing import Any

from funchost.runtime.faults import FaultInjector

_OPERATIONS = {
    "put_message": "put",
    "get_messages": "get",
    "update_message": "update",
    "delete_message": "delete",
}


class FaultInjectingQueueService:
    def __init__(self, inner: Any, faults: FaultInjector) -> None:
        self._inner = inner
        self._faults = faults

    @property
    def inner(self) -> Any:
        return self._inner

    def __getattr__(self, name: str) -> Any:
        attribute = getattr(self._inner, name)
        op = _OPERATIONS.get(name)
        if op is None:
            return attribute
        faults = self._faults

        async def call(queue: str, *args: Any, **kwargs: Any) -> Any:
            if not faults.enabled:
                return await attribute(queue, *args, **kwargs)
            details = {"queue": queue, "operation": op}
            if op in ("update", "delete") and args:
                details["id"] = args[0]
            await faults.hit(f"queue.{op}.before", **details)
            result = await attribute(queue, *args, **kwargs)
            if op == "put":
                details["id"] = result.id
            await faults.hit(f"queue.{op}.during", **details)
            return result

        return call


class FaultInjectingStorage:
    """Wraps a `StorageBackend`; everything but the queue services passes straight through."""

    def __init__(self, inner: Any, faults: FaultInjector) -> None:
        self._inner = inner
        self._faults = faults
        self._wrapped: dict[int, FaultInjectingQueueService] = {}

    @property
    def inner(self) -> Any:
        return self._inner

    def _wrap(self, service: Any) -> FaultInjectingQueueService:
        wrapped = self._wrapped.get(id(service))
        if wrapped is None or wrapped.inner is not service:
            wrapped = self._wrapped[id(service)] = FaultInjectingQueueService(service, self._faults)
        return wrapped

    def queues(self, connection: str | None = None) -> Any:
        return self._wrap(self._inner.queues(connection))

    def queues_for_account(self, account: str) -> Any:
        return self._wrap(self._inner.queues_for_account(account))

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)
