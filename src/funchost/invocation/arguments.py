"""Arguments in, outputs out: through the azure-functions library's own converters.

This is the worker's `from_incoming_proto` / `to_outgoing_proto`: a binding's registered
converter decodes the host's Datum (with trigger metadata) into the user's type; str / bytes
annotations on ordinary parameters use the generic converter (the raw value). A return value
always goes through its binding's own converter, whatever the annotation says.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

from azure.functions import _abc as azf_abc
from azure.functions.http import HttpResponseConverter
from azure.functions.meta import Datum

from funchost.errors import InvocationError
from funchost.indexing.parameters import _uses_generic, converter
from funchost.indexing.spec import EMPTY, BindingSpec, ParameterSpec
from funchost.invocation import deferred
from funchost.invocation.http_response import encode_response
from funchost.invocation.native import NativeDatum


def generic_decode(datum: Datum | None) -> Any:
    if datum is None or datum.type is None:
        return None
    if datum.type in ("string", "bytes", "json"):
        return datum.value
    if datum.type in ("int", "double"):
        return datum.value
    raise InvocationError(f"unsupported data type {datum.type!r} for a generic binding")


# A Datum whose value a trigger has already built as the user's object (a blob trigger's
# `func.InputStream` reading from a spooled download): handed over as it is.
PREPARED = "funchost-prepared"

Decoder = Callable[[Datum | None, Mapping[str, Datum] | None], Any]
Encoder = Callable[[Any], Datum | None]


def decoder_for(param: ParameterSpec) -> Decoder:
    """How one parameter's Datum becomes the user's value; chosen once per function at load."""
    binding = param.binding
    assert binding is not None
    annotation = None if param.annotation is EMPTY else param.annotation
    sdk = deferred.sdk_converter(binding.type, annotation)
    if sdk is not None:
        return _sdk_decoder(sdk, annotation)
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
        if datum.type == PREPARED:
            return datum.value
        if isinstance(datum, NativeDatum) and datum.converter is conv:
            return datum.decode()  # the same object, built from the trigger's own data
        return decode_with(datum, trigger_metadata=metadata)

    return library


def _sdk_decoder(conv: Any, annotation: Any) -> Decoder:
    """The worker's deferred_bindings_decode: the package's converter, told the annotation."""
    decode_with = conv.decode

    def sdk(datum: Datum | None, metadata: Mapping[str, Datum] | None) -> Any:
        if datum is None:
            return None
        return decode_with(datum, trigger_metadata=metadata, pytype=annotation)

    sdk.blocking = True  # type: ignore[attr-defined]  # network I/O at bind time: run off the event loop
    return sdk


def is_blocking(decode: Decoder) -> bool:
    """A decoder that may wait on the network (an SDK type's), so the executor runs it in a thread."""
    return bool(getattr(decode, "blocking", False))


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


def encoder_for(binding: BindingSpec, annotation: Any) -> Encoder:
    """How a `func.Out` parameter's value becomes a Datum (None = not sent); chosen once per
    function at load. `Out[str]` / `Out[bytes]` on an ordinary binding use the generic converter,
    as the worker's `validate_function_params` binds them."""
    conv = converter(binding.type)
    pytype = None if annotation in (EMPTY, None) else annotation
    if conv is None or (pytype is not None and _uses_generic(binding, pytype)):
        return generic_encode
    encode = _library_encoder(binding, conv, pytype)

    def library(value: Any) -> Datum | None:
        return None if value is None else encode(value)  # the worker skips an unset Out

    return library


def return_encoder_for(binding: BindingSpec, annotation: Any) -> Encoder:
    """How a return value becomes the `$return` Datum, as the worker's `get_function_return_type`
    and `to_outgoing_proto` do: always the binding's own converter (the generic rule for str /
    bytes covers parameters only), with the annotation as the expected type. Every value is
    encoded, None included: `-> str` returning `func.HttpResponse` is an HTTP response, and
    None or a dict on an HTTP `$return` fails the invocation as it does on Azure."""
    conv = converter(binding.type)
    if conv is None:
        return generic_encode  # the worker's GenericBinding: None is no output
    return _library_encoder(binding, conv, None if annotation is EMPTY else annotation)


def _library_encoder(binding: BindingSpec, conv: Any, pytype: Any) -> Encoder:
    encode_with = conv.encode
    direct_response = conv is HttpResponseConverter

    def library(value: Any) -> Datum | None:
        if direct_response and isinstance(value, azf_abc.HttpResponse):
            return encode_response(value)  # the converter's reads, without its Datums
        try:
            datum = encode_with(value, expected_type=pytype)
        except NotImplementedError:
            # The worker's `get_datum`: a value the binding's converter rejects fails the call.
            raise InvocationError(
                f'unable to encode outgoing TypedData: unsupported type "{binding.type}" for Python type '
                f'"{type(value).__name__}"'
            ) from None
        if datum is None or datum.type is None:
            return None  # a converter's "nothing to send" (EventHubConverter, GenericBinding)
        return datum  # type: ignore[no-any-return]

    return library


