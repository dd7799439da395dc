"""Arguments in, outputs out: through the azure-functions library's own converters.

This is the worker's `from_incoming_proto` / `to_outgoing_proto`: a binding's registered
converter decodes the host's Datum (with trigger metadata) into the user's type; str / bytes
annotations on ordinary bindings use the generic converter (the raw value).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

from azure.functions.meta import Datum

from funchost.errors import InvocationError
from funchost.indexing.parameters import _uses_generic, converter
from funchost.indexing.spec import EMPTY, BindingSpec, ParameterSpec


def generic_decode(datum: Datum | None) -> Any:
    if datum is None or datum.type is None:
        return None
    if datum.type in ("string", "bytes", "json"):
        return datum.value
    if datum.type in ("int", "double"):
        return datum.value
    raise InvocationError(f"unsupported data type {datum.type!r} for a generic binding")


Decoder = Callable[[Datum | None, Mapping[str, Datum] | None], Any]
Encoder = Callable[[Any], Datum | None]


def decoder_for(param: ParameterSpec) -> Decoder:
    """How one parameter's Datum becomes the user's value; chosen once per function at load."""
    binding = param.binding
    assert binding is not None
    annotation = None if param.annotation is EMPTY else param.annotation
    conv = converter(binding.type)
    if conv is None or (annotation is not None and _uses_generic(binding, annotation)):
        if annotation is bytes:
            return _generic_bytes
        if annotation is str:
            return _generic_str
        return _generic
    decode_with = conv.decode

    def library(datum: Datum | None, metadata: Mapping[str, Datum] | None) -> Any:
        if datum is None:
            return None
        return decode_with(datum, trigger_metadata=metadata)

    return library


def _generic(datum: Datum | None, metadata: Mapping[str, Datum] | None) -> Any:
    return generic_decode(datum)


def _generic_bytes(datum: Datum | None, metadata: Mapping[str, Datum] | None) -> Any:
    value = generic_decode(datum)
    return value.encode("utf-8") if isinstance(value, str) else value


def _generic_str(datum: Datum | None, metadata: Mapping[str, Datum] | None) -> Any:
    value = generic_decode(datum)
    return bytes(value).decode("utf-8") if isinstance(value, bytes | bytearray) else value


def generic_encode(value: Any) -> Datum | None:
    if value is None:
        return None
    if isinstance(value, str):
        return Datum(value, "string")
    if isinstance(value, bytes | bytearray):
        return Datum(bytes(value), "bytes")
    if isinstance(value, bool | int):
        return Datum(int(value), "int")
    if isinstance(value, float):
        return Datum(value, "double")
    try:
        return Datum(json.dumps(value), "json")
    except TypeError as exc:
        raise InvocationError(f"cannot convert {type(value).__name__} to an output value") from exc


def has_implicit_output(binding: BindingSpec) -> bool:
    """Whether the library's converter returns the function's value through this binding."""
    conv = converter(binding.type)
    return bool(conv is not None and getattr(conv, "has_implicit_output", lambda: False)())


def encoder_for(binding: BindingSpec, annotation: Any) -> Encoder:
    """How one output value becomes a Datum (None = not sent); chosen once per function at load."""
    conv = converter(binding.type)
    pytype = None if annotation in (EMPTY, None) else annotation
    if conv is None or (pytype is not None and _uses_generic(binding, pytype)):
        return generic_encode
    encode_with = conv.encode

    def library(value: Any) -> Datum | None:
        if value is None:
            return None
        try:
            datum = encode_with(value, expected_type=pytype)
        except NotImplementedError:
            datum = None
        if datum is None:
            return generic_encode(value)
        return datum  # type: ignore[no-any-return]

    return library


