"""Load-time validation of a function's Python signature against its bindings.

Mirrors the Python worker's checks (azure-semantics 2.2) with the same wording, so a user sees
the error they would see on Azure, plus the file and line.
"""

from __future__ import annotations

import inspect
import typing
from collections.abc import Callable
from typing import Any

import azure.functions as func
from azure.functions import get_binding_registry

from funchost.indexing.spec import EMPTY, BindingSpec, ParameterSpec
from funchost.invocation import deferred

RETURN = "$return"
_registry = get_binding_registry()  # type: ignore[no-untyped-call]


class SignatureError(ValueError):
    """A parameter / binding mismatch; the indexer adds file, line and function name."""


def _out_type(annotation: Any) -> tuple[bool, Any]:
    """(is func.Out[T], T)."""
    origin = typing.get_origin(annotation)
    if origin is not None and isinstance(origin, type) and issubclass(origin, func.Out):
        args = typing.get_args(annotation)
        return True, (args[0] if args else None)
    if isinstance(annotation, type) and issubclass(annotation, func.Out):
        return True, None
    return False, None


def converter(binding_type: str) -> Any:
    return _registry.get(binding_type) if _registry is not None else None


def has_implicit_output(binding: BindingSpec) -> bool:
    """Whether the function's return value goes out through this binding, as the worker's
    `bindings.meta.has_implicit_output` decides: the library converter's answer (True for the
    durable triggers; output-only converters do not define the method), and for a type the
    library has no converter for, its `GenericBinding`, which has one (but for durableClient)."""
    conv = converter(binding.type)
    if conv is None:
        return binding.type != "durableClient"
    return bool(getattr(conv, "has_implicit_output", lambda: False)())


def implicit_output(bindings: tuple[BindingSpec, ...]) -> BindingSpec | None:
    """The binding a return value goes through when there is no `$return`: the last one with an
    implicit output (the worker's `get_return_binding` keeps overwriting it), or None."""
    found = [b for b in bindings if b.name != RETURN and has_implicit_output(b)]
    return found[-1] if found else None


def _uses_generic(binding: BindingSpec, pytype: Any) -> bool:
    """str / bytes on a binding with no implicit output are bound with the generic converter."""
    return pytype in (str, bytes) and not has_implicit_output(binding)


def build_parameters(
    fn: Callable[..., Any], bindings: tuple[BindingSpec, ...]
) -> tuple[tuple[ParameterSpec, ...], BindingSpec | None, Any]:
    signature = inspect.signature(fn)
    hints = _resolved_hints(fn)
    params = {
        name: p.replace(annotation=hints.get(name, p.annotation))
        for name, p in signature.parameters.items()
    }
    by_name = {b.name: b for b in bindings}
    return_binding = by_name.pop(RETURN, None)
    specs: list[ParameterSpec] = []

    if "context" in params and "context" not in by_name:
        ctx = params.pop("context")
        anno = ctx.annotation
        if anno is not EMPTY and (not inspect.isclass(anno) or anno.__name__ != "Context"):
            raise SignatureError(
                'the "context" parameter is expected to be of type azure.functions.Context, '
                f"got {getattr(anno, '__name__', anno)!r}"
            )
        specs.append(ParameterSpec("context", anno, None, is_context=True))

    missing_in_python = [name for name in by_name if name not in params]
    if missing_in_python:
        raise SignatureError(
            "the following parameters are declared in function.json but not in Python: "
            + repr(set(missing_in_python))
        )
    missing_bindings = [name for name in params if name not in by_name]
    if missing_bindings:
        raise SignatureError(
            "the following parameters are declared in Python but not in function.json: "
            + repr(set(missing_bindings))
        )

    for name, param in params.items():
        specs.append(_check_parameter(name, param.annotation, by_name[name]))

    return_annotation = hints.get("return", signature.return_annotation)
    if return_binding is not None:
        if return_binding.direction != "out":
            raise SignatureError('"$return" binding must have direction set to "out"')
        if return_annotation not in (EMPTY, None, type(None)):  # `-> None`: nothing is returned
            is_out, _ = _out_type(return_annotation)
            if is_out:
                raise SignatureError("return annotation should not be azure.functions.Out")
            # Checked against the binding's own converter: the worker's generic rule for str /
            # bytes covers parameters only (`-> str` is fine on http, `-> bytes` is not).
            conv = converter(return_binding.type)
            if (conv is not None and inspect.isclass(return_annotation)
                    and not conv.check_output_type_annotation(return_annotation)):
                raise SignatureError(
                    f'Python return annotation "{return_annotation.__name__}" does not match binding type '
                    f'"{return_binding.type}"'
                )
    return tuple(specs), return_binding, return_annotation


def _check_parameter(name: str, annotation: Any, binding: BindingSpec) -> ParameterSpec:
    if binding.direction == "inout":
        raise SignatureError(f'binding {name} has invalid direction "inout"')
    if annotation is EMPTY:
        return ParameterSpec(name, annotation, binding)
    is_out, out_type = _out_type(annotation)
    if binding.direction == "out" and not is_out:
        raise SignatureError(
            f'binding {name} is declared to have the "out" direction, but its annotation in Python '
            "is not a subclass of azure.functions.Out"
        )
    if binding.direction != "out" and is_out:
        raise SignatureError(
            f'binding {name} is a declared to have the "in" direction, but its annotation in Python '
            "is a subclass of azure.functions.Out"
        )
    sdk = None if is_out else deferred.sdk_converter(binding.type, annotation)
    conv = sdk or converter(binding.type)  # SDK types are checked by their package's converter
    checked = out_type if is_out else annotation
    if conv is not None and inspect.isclass(checked) and not _uses_generic(binding, checked):
        ok = conv.check_output_type_annotation(checked) if is_out else conv.check_input_type_annotation(checked)
        if not ok:
            raise SignatureError(
                f'type of {name} binding in function.json "{binding.type}" does not match its Python '
                f'annotation "{checked.__name__}"'
            )
    return ParameterSpec(name, annotation, binding, is_out=is_out, out_type=out_type)


def _resolved_hints(fn: Callable[..., Any]) -> dict[str, Any]:
    """Annotations with `from __future__ import annotations` strings resolved when possible."""
    try:
        return typing.get_type_hints(fn)
    except Exception:  # unresolvable forward references: fall back to raw annotations
        return dict(getattr(fn, "__annotations__", {}))
