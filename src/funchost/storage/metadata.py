"""Azure Storage metadata names, the same rule for queues and blobs: C# identifiers."""

from __future__ import annotations

import re

_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def is_metadata_name(name: object) -> bool:
    return isinstance(name, str) and _NAME.match(name) is not None
