"""A function's invocation plan: what every call needs, worked out once per function.

Each parameter's kind and decoder (the library's converter or the generic one), the output
encoders, the binding providers of inputs and outputs, and the fixed parts of the log lines,
so the per-call path does no registry lookups and formats nothing it can hold.
"""

from __future__ import annotations

from typing import Any

from azure.functions.meta import Datum

from funchost.indexing.parameters import implicit_output
from funchost.indexing.spec import BindingSpec, FunctionSpec
from funchost.invocation import arguments
from funchost.runtime import registry
from funchost.runtime.contracts import BindingSupport

TRIGGER, OUT, INPUT, CONTEXT = "trigger", "out", "input", "context"


def _no_decoder(datum: Datum | None, metadata: Any) -> Any:
    return None


class InvocationPlan:
    def __init__(self, function: FunctionSpec) -> None:
        self.function = function
        steps: list[tuple[str, str, arguments.Decoder]] = []
        self.inputs: dict[str, tuple[BindingSpec, BindingSupport]] = {}
        self.context_name: str | None = None
        out_names: list[str] = []
        out_encoders: list[tuple[str, arguments.Encoder]] = []
        for param in function.parameters:
            binding = param.binding
            if param.is_context or binding is None:
                steps.append((param.name, CONTEXT, _no_decoder))
                self.context_name = param.name
            elif binding.direction == "out":
                steps.append((param.name, OUT, _no_decoder))
                out_names.append(param.name)
                out_encoders.append((param.name, arguments.encoder_for(binding, param.out_type)))
            elif binding.is_trigger:
                steps.append((param.name, TRIGGER, arguments.decoder_for(param)))
            else:
                steps.append((param.name, INPUT, arguments.decoder_for(param)))
                self.inputs[param.name] = (binding, registry.require_binding(binding.type))
        self.steps = tuple(steps)
        self.out_names = tuple(out_names)
        self.out_encoders = tuple(out_encoders)
        # Input bindings to read, or SDK-type parameters to bind off the loop: the awaiting path.
        self.has_inputs = bool(self.inputs) or any(arguments.is_blocking(step[2]) for step in steps)
        returned = function.return_binding
        self.return_name = returned.name if returned is not None else ""
        self.return_encoder = (arguments.return_encoder_for(returned, function.return_annotation)
                               if returned is not None else None)
        implicit = implicit_output(function.bindings) if returned is None else None
        if implicit is not None:
            # Durable triggers, and bindings of a type the library has no converter for: the
            # worker encodes the value through that binding's converter (a trigger then reads it).
            self.return_name = "$return"
            self.return_encoder = arguments.return_encoder_for(implicit, function.return_annotation)
        # Outputs a binding provider writes (by name, first binding of that name as before);
        # HTTP responses are the HTTP trigger's to send.
        writable: dict[str, tuple[BindingSpec, BindingSupport]] = {}
        for name in [*out_names, *([returned.name] if returned is not None else [])]:
            binding = function.binding(name)
            if binding is not None and binding.type != "http":
                writable[name] = (binding, registry.require_binding(binding.type))
        self.writable = writable
        self.writes_outputs = bool(writable)
        # Log lines: the fixed parts, formatted once.
        self.executing_prefix = f"Executing 'Functions.{function.name}' (Reason='"
        self.executed_prefix = f"Executed 'Functions.{function.name}' ("
