"""The host's per-function checks at start: a function that fails one is in error, the rest run.

As the Functions host does it (ScriptHost.GetFunctionDescriptorsAsync and WebJobs' indexing
with allowPartialHostStartup): a trigger or binding type no extension implements, an invalid
binding configuration (a bad queue name, an unknown setting, a cron expression that does not
parse, ...) and an HTTP route that conflicts with a function before it (by name) each put only
that function in error. See docs/isolation.md for the rules and their sources.
"""

from __future__ import annotations

from funchost.errors import AppLoadError, FunchostError
from funchost.indexing.spec import FunctionSpec
from funchost.runtime import registry
from funchost.runtime.contracts import Runtime

NOT_REGISTERED = ("The binding type(s) '{types}' are not registered. Please ensure the type is correct and the "
                  "binding extension is installed.")
NOT_IN_BUNDLE = ("The binding type(s) '{types}' were not found in the configured extension bundle. Please ensure "
                 "the type is correct and the correct version of extension bundle is configured.")


def function_error(function: FunctionSpec, runtime: Runtime) -> str | None:
    """Why `function` cannot run (None when it can); `runtime.functions` holds the functions
    that passed so far, which is what an HTTP route is checked against."""
    if function.errors:
        return " ".join(function.errors)
    unknown = _unsupported_types(function)
    if unknown:
        template = NOT_IN_BUNDLE if runtime.options.raw.get("extensionBundle") else NOT_REGISTERED
        return template.format(types=", ".join(unknown))
    try:
        registry.require_trigger(function.trigger_type).validate(function, runtime)
        for binding in function.bindings:
            if not binding.is_trigger:
                registry.require_binding(binding.type).validate(binding, function, runtime)
    except AppLoadError as exc:
        return exc.reason
    except (FunchostError, ValueError) as exc:
        return str(exc)
    return None


def _unsupported_types(function: FunctionSpec) -> list[str]:
    """The trigger's type when no plug-in implements it, else the other bindings' missing types."""
    if registry.trigger_support(function.trigger_type) is None:
        return [function.trigger_type]
    missing: list[str] = []
    for binding in function.bindings:
        if not binding.is_trigger and binding.type not in missing and registry.binding_support(binding.type) is None:
            missing.append(binding.type)
    return missing
