"""The trigger payloads the extension hands the Python SDK, and how it reads what comes back.

* orchestrationTrigger: OrchestrationContextToString (history, input, instance ids, replay schema
  V3); the SDK returns its OrchestratorState as JSON text, or raises an exception whose message
  carries that state after ``\\n\\n$OutOfProcData$:`` when the orchestrator failed.
* activityTrigger: the one element of TaskScheduled's input array (the JSON text the SDK sent);
  a failure becomes ``Activity function '<name>' failed: <Type>: <message>``.
* entityTrigger: EntityContextToString (self, exists, state, batch); the SDK returns EntityState.
"""

from __future__ import annotations

import json
import traceback
from pathlib import Path
from typing import Any

from azure.functions.meta import Datum

from funchost.durable.replay import SdkResult
from funchost.durable.shim import compact
from funchost.errors import FunctionTimeoutError

OUT_OF_PROC_DATA = "\n\n$OutOfProcData$:"
_FUNCHOST_DIR = str(Path(__file__).resolve().parents[1])
# Replay schema: V2 as the legacy "upper" value and V3 as the new one, as extension 2.x sends.
UPPER_SCHEMA_VERSION = 1
UPPER_SCHEMA_VERSION_NEW = 2


def orchestrator_payload(history: list[dict[str, Any]], *, instance_id: str, input_text: str | None,
                         parent_instance_id: str | None, http_sleep_ms: int) -> str:
    """Without the long-timer fields the SDK never splits timers: this task hub has no 6-day limit."""
    started = next((e for e in history if e.get("EventType") == 0), None)
    payload = {
        "history": history,
        "input": _token(input_text),
        "instanceId": instance_id,
        "isReplaying": bool(started and started.get("IsPlayed")),
        "parentInstanceId": parent_instance_id,
        "upperSchemaVersion": UPPER_SCHEMA_VERSION,
        "upperSchemaVersionNew": UPPER_SCHEMA_VERSION_NEW,
        "defaultHttpAsyncRequestSleepTimeMillseconds": http_sleep_ms,
    }
    return json.dumps(payload)


def _token(text: str | None) -> Any:
    """JToken of stored JSON text (MessagePayloadDataConverter.ConvertToJToken); raw text if invalid."""
    if text is None:
        return None
    try:
        return json.loads(text)
    except ValueError:
        return text


def orchestrator_result(output: Datum | None, error: BaseException | None) -> SdkResult:
    """Without ``$OutOfProcData$`` (the SDK failed before it could report its state) the extension
    fails the orchestration with the message of the exception it got from the user-code invoker
    (TaskOrchestrationShim.InvokeUserCodeAndHandleResults reads the out-of-proc task's ``.Result``):
    an AggregateException around the worker's RpcException."""
    if error is not None:
        message = str(error)
        stack = user_stack(error)
        index = message.find(OUT_OF_PROC_DATA)
        if index >= 0:
            try:
                state = json.loads(message[index + len(OUT_OF_PROC_DATA):])
            except ValueError:
                state = None
            if isinstance(state, dict):
                return SdkResult(state, None, stack)
        return SdkResult(None, f"One or more errors occurred. ({rpc_exception_message(error)})", stack)
    value = output.value if output is not None else None
    if isinstance(value, bytes):
        value = value.decode("utf-8")
    if not isinstance(value, str):
        return SdkResult(None, "The data returned by the out-of-process function execution was not valid json.")
    try:
        state = json.loads(value)
    except ValueError:
        state = None
    if not isinstance(state, dict):
        return SdkResult(None, "Out of proc orchestrators must return a valid JSON schema")
    return SdkResult(state)


def friendly_message(error: BaseException) -> str:
    """The text the host shows for a worker failure: ``<Type>: <message>`` (RpcException), or the
    host's own message for a timeout."""
    if isinstance(error, FunctionTimeoutError):
        return str(error)
    return f"{type(error).__name__}: {error}"


def rpc_exception_message(error: BaseException) -> str:
    """The host's RpcException text for a failure the worker reported (RpcException.cs)."""
    return f"Result: Failure\nException: {friendly_message(error)}\nStack: {user_stack(error)}"


def activity_datum(input_text: str | None) -> Datum:
    """The activity's input: the element of the one-element array TaskScheduled carries."""
    try:
        parameters = json.loads(input_text) if input_text is not None else [None]
    except ValueError:
        parameters = [input_text]
    element = parameters[0] if isinstance(parameters, list) and parameters else parameters
    text = element if isinstance(element, str) else compact(element)
    return Datum(text, "json")


def activity_result(output: Datum | None) -> str:
    """TaskCompleted.Result: the activity's JSON, re-serialised compactly as Newtonsoft writes it."""
    if output is None or output.value is None:
        return "null"
    value = output.value
    text = value.decode("utf-8") if isinstance(value, bytes) else str(value)
    if output.type in ("json", "string"):
        try:
            return compact(json.loads(text))
        except ValueError:
            return compact(text)
    return compact(value)


def user_stack(error: BaseException) -> str:
    """The traceback without funchost's own frames (the worker's stack shows the user's code)."""
    frames = [frame for frame in traceback.extract_tb(error.__traceback__)
              if not frame.filename.startswith(_FUNCHOST_DIR)]
    lines = ["Traceback (most recent call last):\n", *traceback.format_list(frames),
             *traceback.format_exception_only(type(error), error)]
    return "".join(lines).rstrip()


def _exception_json(class_name: str, message: str, inner: dict[str, Any] | None) -> dict[str, Any]:
    """A .NET exception as Newtonsoft serialises it (Utils.SerializeCause)."""
    return {"ClassName": class_name, "Message": message, "Data": None, "InnerException": inner, "HelpURL": None,
            "StackTraceString": None, "RemoteStackTraceString": None, "RemoteStackIndex": 0,
            "ExceptionMethod": None, "HResult": -2146233088, "Source": None, "WatsonBuckets": None}


def activity_failure(name: str, error: BaseException | None) -> tuple[str, str]:
    """TaskFailed (Reason, Details) as TaskActivityShim reports a user-code failure: the friendly
    message, and the exception with the worker's RpcException (message and Python stack) inside."""
    message = friendly_message(error) if error is not None else "the function failed"
    inner = None
    if error is not None and not isinstance(error, FunctionTimeoutError):
        inner = _exception_json("Microsoft.Azure.WebJobs.Script.Workers.Rpc.RpcException",
                                rpc_exception_message(error), None)
    details = compact(_exception_json("System.Exception", message, inner))
    return f"Activity function '{name}' failed: {message}", details


def entity_payload(name: str, key: str, exists: bool, state: str | None, batch: list[dict[str, Any]]) -> str:
    return json.dumps({"self": {"name": name, "key": key}, "exists": exists, "state": state, "batch": batch})
