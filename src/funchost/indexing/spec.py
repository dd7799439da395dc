"""What indexing produces: one `FunctionSpec` per function, from the library's own metadata."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class BindingSpec:
    """One binding as the worker reports it (raw_bindings), with `%Setting%` tokens resolved.

    `properties` holds the camelCase keys the library writes (``queueName``, ``connection``,
    ``authLevel``, ``methods``, ...), minus name/type/direction/dataType.
    """

    name: str
    type: str
    direction: str  # "in" | "out" | "inout"
    data_type: str | None
    properties: Mapping[str, Any]
    is_trigger: bool = False

    def get(self, key: str, default: Any = None) -> Any:
        """Property lookup, case-insensitive like the host's binding metadata."""
        if key in self.properties:
            return self.properties[key]
        lowered = key.lower()
        for k, v in self.properties.items():
            if k.lower() == lowered:
                return v
        return default


@dataclass(frozen=True)
class RetryOptions:
    """A validated function-level retry policy (azure-semantics 5.1)."""

    strategy: str  # "fixed_delay" | "exponential_backoff"
    max_retry_count: int  # -1 = forever
    delay_interval: float | None = None  # seconds, fixed_delay
    minimum_interval: float | None = None  # seconds, exponential_backoff
    maximum_interval: float | None = None


@dataclass(frozen=True)
class ParameterSpec:
    name: str
    annotation: Any  # inspect.Parameter.empty when absent
    binding: BindingSpec | None  # None only for `context`
    is_context: bool = False
    is_out: bool = False  # annotated func.Out[T]
    out_type: Any = None  # T of func.Out[T]


@dataclass(frozen=True)
class FunctionSpec:
    name: str
    func: Callable[..., Any]
    trigger: BindingSpec
    bindings: tuple[BindingSpec, ...]
    parameters: tuple[ParameterSpec, ...]
    return_binding: BindingSpec | None
    return_annotation: Any
    is_async: bool
    script_file: str
    directory: str
    source_line: int | None
    retry: RetryOptions | None = None
    settings: Mapping[str, Any] = field(default_factory=dict)
    # Why the host cannot run this function, found while indexing (a %setting% that resolves
    # to nothing, an invalid retry policy): the function is listed in error, the app runs.
    errors: tuple[str, ...] = ()

    @property
    def trigger_type(self) -> str:
        return self.trigger.type

    @property
    def is_http(self) -> bool:
        return self.trigger.type == "httpTrigger"

    def output_bindings(self) -> tuple[BindingSpec, ...]:
        return tuple(b for b in self.bindings if b.direction in ("out", "inout") and not b.is_trigger)

    def binding(self, name: str) -> BindingSpec | None:
        for b in self.bindings:
            if b.name == name:
                return b
        return None


EMPTY = inspect.Parameter.empty
