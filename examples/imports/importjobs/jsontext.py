"""JSON from outside (request bodies, headers, queue messages), parsed with a bound on nesting.

`json.loads` raises `RecursionError` (not `ValueError`) on input nested about a thousand levels
deep, and a document nested just under that limit can still fail later when it is encoded
again on a deeper stack. Every untrusted document of the app goes through `parse`, so deep
nesting is one more kind of invalid JSON: a 400 with a message, never a 500.
"""

from __future__ import annotations

import json
from typing import Any

MAX_DEPTH = 64  # arrays and objects; the app's documents use three levels


class TooDeep(ValueError):
    def __init__(self) -> None:
        super().__init__(f"JSON nested too deeply (more than {MAX_DEPTH} levels)")


def parse(text: str | bytes) -> Any:
    """`json.loads`, raising ValueError (`TooDeep` included) for every invalid document."""
    try:
        value = json.loads(text)
    except RecursionError:
        raise TooDeep() from None
    if _depth_exceeds(value, MAX_DEPTH):
        raise TooDeep()
    return value


def _depth_exceeds(value: Any, limit: int) -> bool:
    pending: list[tuple[Any, int]] = [(value, 1)]
    while pending:
        item, depth = pending.pop()
        children = item.values() if isinstance(item, dict) else item if isinstance(item, list) else None
        if children is None:
            continue
        if depth > limit:
            return True
        pending.extend((child, depth + 1) for child in children)
    return False
