"""The two log lines of every invocation attempt, as the Functions host writes them.

    Executing 'Functions.<name>' (Reason='<reason>', Id=<invocation id>)
    Executed 'Functions.<name>' (Succeeded, Id=<invocation id>, Duration=<n>ms)

A failure adds the exception and its stack. Records go to the ``funchost.results`` logger with
structured fields (``event``: FunctionStarted / FunctionCompleted / FunctionFailed).
"""

from __future__ import annotations

import logging
import threading
import time
import traceback
from typing import Any

from funchost import direct_lines
from funchost.invocation.contracts import InvocationRequest, InvocationResult
from funchost.invocation.middleware import CallNext, Invocation
from funchost.invocation.plan import InvocationPlan

results_log = logging.getLogger("funchost.results")


INFO = logging.INFO
_write_text = direct_lines.write_text
_write_json = direct_lines.write_json


async def log_invocation(invocation: Invocation, call_next: CallNext) -> InvocationResult:
    # The success path's two lines are formatted here, not in a function per line: one call
    # less on every invocation (the lines' cost, benchmarks/README.md).
    # The records' structured fields are built only when a line goes to NDJSON or through `logging`.
    plan, request = invocation.plan, invocation.request
    if results_log.isEnabledFor(INFO):
        invocation_id = request.invocation_id
        message = f"{plan.executing_prefix}{request.reason}', Id={invocation_id})"
        done = _write_text(INFO, message, plan.function.name, invocation_id, True)  # on the loop: a piece of the task
        if not done:
            values = ("FunctionStarted", plan.function.name, invocation_id, request.reason, request.details)
            if done is None:
                done = _write_json(INFO, message, STARTED, values, True)
            if not done:
                _emit(INFO, message, STARTED, values)
    result = await call_next(invocation)
    if result.succeeded:
        if results_log.isEnabledFor(INFO):
            invocation_id = request.invocation_id
            duration = result.duration_ms
            message = f"{plan.executed_prefix}Succeeded, Id={invocation_id}, Duration={duration:.0f}ms)"
            done = _write_text(INFO, message, plan.function.name, invocation_id, True)
            if not done:
                completed = ("FunctionCompleted", plan.function.name, invocation_id, True, round(duration, 3))
                if done is None:
                    done = _write_json(INFO, message, COMPLETED, completed, True)
                if not done:
                    _emit(INFO, message, COMPLETED, completed)
    else:
        _log_failed(plan, request, result)
    return result


def _log_failed(plan: InvocationPlan, request: InvocationRequest, result: InvocationResult) -> None:
    name = plan.function.name
    duration = result.duration_ms
    error = result.error
    message = result.error_message
    results_log.error("Executed 'Functions.%s' (%s, Id=%s, Duration=%dms)",
                      name, "Failed", request.invocation_id, round(duration),
                      extra={"event": "FunctionCompleted", "function": name,
                             "invocation_id": request.invocation_id, "succeeded": False,
                             "duration_ms": round(duration, 3), "error": message})
    if error is not None:
        detail = "".join(traceback.format_exception(type(error), error, error.__traceback__)).rstrip()
        results_log.error("Result: Failure\nException: %s\nStack: %s", message, detail,
                          extra={"event": "FunctionFailed", "function": name,
                                 "invocation_id": request.invocation_id, "error": message})


_RECORD_BASE: dict[str, Any] = {}


# The structured fields of the two lines (`direct_lines.fields_of`): function and invocation id second and third.
STARTED = ("event", "function", "invocation_id", "reason", "details")
COMPLETED = ("event", "function", "invocation_id", "succeeded", "duration_ms")


def _emit(level: int, message: str, keys: tuple[str, ...], values: tuple[Any, ...]) -> None:
    """`results_log.log(level, message, extra=fields)` for the two lines of every invocation when
    `direct_lines.write` could not write them straight to the console (another handler would see
    the record): a record without LogRecord's per-call work that console lines never show
    (source file, thread and process names). The message is already formatted and the caller has
    checked the level."""
    fields = direct_lines.fields_of(keys, values)
    if not _RECORD_BASE:
        template = logging.LogRecord(results_log.name, logging.INFO, "(unknown file)", 0, "", (), None)
        _RECORD_BASE.update(vars(template))
    now = time.time()
    record = logging.LogRecord.__new__(logging.LogRecord)
    attrs = record.__dict__
    attrs.update(_RECORD_BASE)
    attrs.update(fields)
    attrs["msg"] = message
    attrs["levelno"] = level
    attrs["levelname"] = logging.getLevelName(level)
    attrs["created"] = now
    attrs["msecs"] = int((now - int(now)) * 1000) + 0.0
    attrs["relativeCreated"] = (now - logging._startTime) * 1000  # type: ignore[attr-defined]
    attrs["thread"] = threading.get_ident()
    results_log.handle(record)
