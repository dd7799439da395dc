"""Turn a FunctionRegister into `FunctionSpec`s: the worker's metadata, validated.

What the Python worker refuses fails the whole app, as it does (the worker's indexing answers
the host with one failure): an import or syntax error, no app or two apps, a function the
library cannot build, parameters that do not match the bindings, two functions with one name.
Each such error names the function and the line where it is declared. What the host checks per
function (a `%setting%` that resolves to nothing, an invalid retry policy) only puts that
function in error: it is recorded in `FunctionSpec.errors` for the host to report.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import azure.functions as func

from funchost.errors import AppLoadError, ConfigError
from funchost.indexing import retry as retry_settings
from funchost.indexing.loader import find_function_register, import_app_module, script_path
from funchost.indexing.parameters import SignatureError, build_parameters
from funchost.indexing.spec import BindingSpec, FunctionSpec, RetryOptions
from funchost.settings.app_settings import AppSettings

_RESERVED = {"name", "type", "direction", "dataType"}


def index_app(app_dir: Path, settings: AppSettings, host_retry: Mapping[str, Any] | None = None) -> list[FunctionSpec]:
    path = script_path(app_dir, settings)
    module = import_app_module(path)
    app = find_function_register(module, path)
    default_retry = retry_settings.from_host_json(host_retry) if host_retry else None
    functions = [_build(fb, app, settings, default_retry, path) for fb in _builders(app, path)]
    seen: dict[str, FunctionSpec] = {}
    for spec in functions:
        key = spec.name.lower()
        if key in seen:
            raise AppLoadError(
                f"Function {spec.name} does not have a unique function name. Please change "
                f"@app.function_name() or the function method name to be unique.",
                file=spec.script_file, line=spec.source_line, function=spec.name,
            )
        seen[key] = spec
    return functions


def _builders(app: func.FunctionRegister, path: Path) -> list[Any]:
    builders = getattr(app, "_function_builders", None)
    if builders is None:  # a library without the attribute: fall back to the public API
        try:
            return [_Prebuilt(f) for f in app.get_functions()]
        except ValueError as exc:
            raise AppLoadError(str(exc), file=str(path)) from exc
    return list(builders)


class _Prebuilt:
    def __init__(self, function: Any) -> None:
        self._function = function

    def build(self, auth_level: Any = None) -> Any:
        return self._function


def _build(builder: Any, app: func.FunctionRegister, settings: AppSettings,
           default_retry: RetryOptions | None, path: Path) -> FunctionSpec:
    user_fn = getattr(getattr(builder, "_function", None), "_func", None)
    name_hint = getattr(user_fn, "__name__", None)
    file, line = _source_of(user_fn, path)
    try:
        function = builder.build(app.auth_level)
    except ValueError as exc:
        raise AppLoadError(str(exc), file=file, line=line, function=name_hint) from exc
    name = function.get_function_name()
    user_fn = function.get_user_function()

    def fail(message: str, cls: type[AppLoadError] = AppLoadError) -> AppLoadError:
        return cls(message, file=file, line=line, function=name)

    problems: list[str] = []
    bindings = tuple(_binding(raw, function, settings, name, problems) for raw in function.get_raw_bindings())
    trigger = next((b for b in bindings if b.is_trigger), None)
    if trigger is None:
        raise fail("has no trigger; a function must have exactly one trigger")
    try:
        parameters, return_binding, return_annotation = build_parameters(user_fn, bindings)
    except SignatureError as exc:
        raise fail(f"Function {name}: {exc}") from exc
    retry = default_retry
    retry_setting = function.get_settings_dict("retry_policy")
    if retry_setting:
        try:
            retry = retry_settings.from_decorator(retry_setting)
        except ValueError as exc:
            problems.append(f"invalid retry policy: {exc}")
    return FunctionSpec(
        name=name,
        func=user_fn,
        trigger=trigger,
        bindings=bindings,
        parameters=parameters,
        return_binding=return_binding,
        return_annotation=return_annotation,
        is_async=inspect.iscoroutinefunction(user_fn),
        script_file=file or str(path),
        directory=str(path.parent),
        source_line=line,
        retry=retry,
        errors=tuple(problems),
    )


def _binding(raw_json: str, function: Any, settings: AppSettings, fn_name: str, problems: list[str]) -> BindingSpec:
    raw = json.loads(raw_json)
    name = raw.get("name")
    btype = raw.get("type")
    direction = str(raw.get("direction", "IN")).lower()
    properties: dict[str, Any] = {}
    for key, value in raw.items():
        if key in _RESERVED:
            continue
        if isinstance(value, str) and "%" in value:
            try:
                value = settings.resolve_tokens(value, where=f"function '{fn_name}' binding '{name}' {key}")
            except ConfigError as exc:
                problems.append(str(exc))  # the value stays unresolved; the function is in error
        properties[key] = value
    trigger = function.get_trigger()
    is_trigger = trigger is not None and getattr(trigger, "name", None) == name and btype == trigger.type
    return BindingSpec(name=name, type=btype, direction=direction, data_type=raw.get("dataType"),
                       properties=properties, is_trigger=is_trigger)


def _source_of(fn: Any, path: Path) -> tuple[str | None, int | None]:
    if fn is None:
        return str(path), None
    fn = inspect.unwrap(fn)  # decorators such as the Durable client's wrap the user's function
    try:
        return inspect.getsourcefile(fn) or str(path), fn.__code__.co_firstlineno
    except (TypeError, AttributeError):
        return str(path), None
