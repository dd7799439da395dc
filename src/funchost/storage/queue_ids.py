"""Queue message ids and pop receipts as the stores make them (embedded and PostgreSQL alike).

A message id is GUID-shaped, random but for its last group, which is the row's sequence number:
update and delete find the row by primary key without an index on a random id. Pop receipts are
random hex. Ids and receipts come from a generator seeded by the OS (unique, no system call per
message), reseeded in a forked child.
"""

from __future__ import annotations

import math
import os
import random
from collections.abc import Callable
from datetime import UTC, datetime

PURGE_INTERVAL = 60.0  # seconds of clock time between lazy purges of expired messages

_random = random.Random(os.urandom(32))
os.register_at_fork(after_in_child=lambda: _random.seed(os.urandom(32)))


def random_hex(nbytes: int) -> str:
    return f"{_random.getrandbits(nbytes * 8):0{nbytes * 2}x}"


def id_prefix() -> str:
    """The random part of a message id: a version-4-shaped GUID up to its last group."""
    r = random_hex(10)
    return f"{r[:8]}-{r[8:12]}-4{r[12:15]}-{r[15:19]}-"


def message_id(seq: int) -> str:
    """A version-4-shaped GUID whose last group is `seq`."""
    return f"{id_prefix()}{seq:012x}"


def service_time(value: float | None) -> datetime | None:
    """A stored time as the service reports it: one-second resolution (RFC 1123 on the wire)."""
    return None if value is None else datetime.fromtimestamp(math.floor(value), UTC)


ServiceTime = Callable[[float | None], datetime | None]


def batch_service_time() -> ServiceTime:
    """`service_time` for the messages of one receive: each second's datetime made once and
    shared (they mostly carry the same few seconds; datetimes are immutable)."""
    made: dict[int, datetime] = {}

    def convert(value: float | None) -> datetime | None:
        if value is None:
            return None
        whole = math.floor(value)
        found = made.get(whole)
        if found is None:
            found = made[whole] = datetime.fromtimestamp(whole, UTC)
        return found

    return convert


def seq_of(message_id: str) -> int | None:
    """The sequence number a message id carries; None for an id no store made."""
    if not isinstance(message_id, str) or len(message_id) != 36:
        return None
    try:
        return int(message_id[-12:], 16)
    except ValueError:
        return None
