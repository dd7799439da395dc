"""The Durable SDK's orchestration executor without a new class per episode.

`azure.durable_functions` builds an `Orchestrator`, and with it a `TaskOrchestrationExecutor`,
for every episode; the executor's constructor makes a fresh `namedtuple` class
(`SetTaskValuePayload`) each time. Making a namedtuple class compiles and evaluates its source:
about 55 µs, close to half of what the SDK spends replaying a one-activity orchestration
(profiled, benchmarks/README.md). `install()` rebinds the SDK module's name for `namedtuple` to
one that makes each class once and hands it out again: the same fields, the same module, the same
values in the executor's table. The app and the SDK are unchanged; only the SDK module's global
is rebound, in this process.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable
from typing import Any

_MODULE = "azure.durable_functions.models.TaskOrchestrationExecutor"


def made_once(make: Callable[..., type], module: str) -> Callable[..., type]:
    """`make` (collections.namedtuple) remembering the classes it made, by name and fields."""
    made: dict[tuple[str, tuple[str, ...]], type] = {}

    def namedtuple(typename: str, field_names: str | Iterable[str], **options: Any) -> type:
        if options:  # defaults, rename, module: not what the SDK asks for; make it as asked
            return make(typename, field_names, **options)
        fields = tuple(field_names.replace(",", " ").split() if isinstance(field_names, str) else field_names)
        key = (typename, fields)
        cls = made.get(key)
        if cls is None:  # `module`: the caller's, as namedtuple finds it when called from the SDK itself
            cls = made[key] = make(typename, fields, module=module)
        return cls

    namedtuple.original = make  # type: ignore[attr-defined]
    return namedtuple


def install() -> None:
    """Rebind the executor module's `namedtuple` (once per process; nothing if the SDK is absent
    or its module no longer makes classes this way)."""
    try:
        module = importlib.import_module(_MODULE)
    except ImportError:
        return
    current = getattr(module, "namedtuple", None)
    if current is None or hasattr(current, "original"):
        return
    setattr(module, "namedtuple", made_once(current, _MODULE))  # noqa: B010 - a module the type checker cannot see into
