"""The extension's out-of-process shim: the SDK's actions become Durable Task API calls.

OutOfProcOrchestrationShim (schema V2/V3) invokes one API per top-level action and awaits it
before the next one; WhenAll / WhenAny invoke every child first. The APIs are those of the
extension's DurableOrchestrationContext: function names are checked against the app's
(ThrowIfFunctionDoesNotExist), retries follow DTFx's RetryInterceptor (a timer between
attempts, and a "dummy" timer after the last failed one), entity calls send a request message
and wait for the response event. Inputs are the SDK's JSON texts, serialised once more as
DTFx does (the double encoding the SDK expects on the way back).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from funchost.durable import history as h
from funchost.durable.context import Decision, OrchestrationContext, TaskFailure
from funchost.durable.tasks import Future, completed, start, when_all, when_any

HTTP_ACTIVITY = "BuiltIn::HttpActivity"
MAX_RETRY_INTERVAL = timedelta(days=6)  # the extension's RetryOptions default
CUSTOM_STATUS_LIMIT_KB = 16

_ACTION_TYPES = {
    "CallActivity": 0, "CallActivityWithRetry": 1, "CallSubOrchestrator": 2, "CallSubOrchestratorWithRetry": 3,
    "ContinueAsNew": 4, "CreateTimer": 5, "WaitForExternalEvent": 6, "CallEntity": 7, "CallHttp": 8,
    "SignalEntity": 9, "ScheduledSignalEntity": 10, "WhenAny": 11, "WhenAll": 12,
}
_SCHEMA_NAMES = {0: "Original", 1: "V2", 2: "V3"}


class ArgumentError(Exception):
    """The extension's ArgumentException / InvalidOperationException from an API call."""


class OrchestrationFailure(Exception):
    """OrchestrationFailureException: the orchestrator function failed (reason, details)."""

    def __init__(self, reason: str, details: str | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.details = details


def compact(value: Any) -> str:
    """Newtonsoft's Formatting.None."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


@dataclass(frozen=True)
class FunctionCatalog:
    """The app's durable functions by kind, names as registered (compared case-insensitively)."""

    activities: tuple[str, ...] = ()
    orchestrators: tuple[str, ...] = ()
    entities: tuple[str, ...] = ()

    def check(self, name: str, kind: str) -> None:
        if kind == "activity" and name == HTTP_ACTIVITY:
            return
        known = {"activity": self.activities, "orchestrator": self.orchestrators, "entity": self.entities}[kind]
        if name.lower() in {k.lower() for k in known}:
            return
        message = f"The function '{name}' doesn't exist, is disabled, or is not an {kind} function. Additional info: "
        listed = self.orchestrators if kind == "entity" else known  # the extension checks orchestrators here
        if listed:
            joined = "', '".join(known)
            message += f"The following are the known {kind} functions: '{joined}'."
        else:
            message += f"No {kind} functions are currently registered!"
        raise ArgumentError(message)


@dataclass
class ShimState:
    """What the shim leaves behind for the episode: output and custom status to store."""

    output: str | None = None
    custom_status: str | None = None
    custom_status_set: bool = False
    actions_invoked: int = 0
    extra: dict[str, Any] = field(default_factory=dict)


class Shim:
    def __init__(self, context: OrchestrationContext, *, name: str, parent_instance_id: str | None,
                 catalog: FunctionCatalog, default_version: str, max_actions: int) -> None:
        self.context = context
        self.name = name
        self.parent_instance_id = parent_instance_id
        self.catalog = catalog
        self.default_version = default_version
        self.max_actions = max_actions
        self.state = ShimState()

    # -- the orchestrator function (TaskOrchestrationShim.InvokeUserCodeAndHandleResults) ----------

    async def run(self, sdk_state: dict[str, Any] | None, sdk_error: str | None, stack: str | None) -> None:
        """Replay the SDK's actions; complete (isDone), fail (error), or wait forever."""
        if sdk_state is None:
            raise OrchestrationFailure(f"Orchestrator function '{self.name}' failed: {sdk_error}", stack)
        try:
            await self._schedule_events(sdk_state, stack)
        except OrchestrationFailure:
            raise
        except Exception as exc:
            if sdk_state.get("error"):
                raise  # escapes as is: the instance fails with the exception's message
            raise OrchestrationFailure(f"Orchestrator function '{self.name}' failed: {exc}", repr(exc)) from exc

    async def _schedule_events(self, state: dict[str, Any], stack: str | None) -> None:
        custom = state.get("customStatus")
        if custom is not None:
            self.state.custom_status = _limited(compact(custom))
            self.state.custom_status_set = True
        await self._replay(state.get("actions") or [], _schema(state.get("schemaVersion")))
        error = state.get("error")
        if error:
            raise OrchestrationFailure(f"Orchestrator function '{self.name}' failed: {error}",
                                       f"Message: {error}, StackTrace: {stack or ''}")
        if state.get("isDone"):
            output = state.get("output")
            self.state.output = None if output is None else compact(output)
            return
        await Future()  # more work to do: the orchestration waits for new events

    async def _replay(self, actions: list[Any], schema: int) -> None:
        if schema >= 1:
            if len(actions) != 1:
                raise ArgumentError(f"With OOProc schema {_SCHEMA_NAMES[schema]}, expected actions array to be of "
                                    f"length 1 in outer layer but got size: {len(actions)}")
            for action in actions[0]:
                task = self.invoke(action)
                try:
                    await task
                except Exception:  # noqa: BLE001 - the SDK handles user-visible failures
                    pass
            return
        for action_set in actions:  # schema V1: each execution's actions, then WhenAny
            tasks = [t for t in (self.invoke(a) for a in action_set) if not (t.done and not t.failed)]
            if tasks:
                await when_any(tasks)

    # -- one action (OutOfProcOrchestrationShim.InvokeAPIFromAction) -------------------------------

    def invoke(self, action: dict[str, Any]) -> Future:
        kind = _action_type(action.get("actionType"))
        if kind == 0:
            return self._call_activity(action)
        if kind == 1:
            return self._with_retry(action, lambda: self._call_activity(action, counted=False))
        if kind == 2:
            return self._call_sub_orchestrator(action)
        if kind == 3:
            return self._with_retry(action, lambda: self._call_sub_orchestrator(action, counted=False))
        if kind == 4:
            self.context.request_continue_as_new(compact(action.get("input")))
            return completed()
        if kind == 5:
            return self._create_timer(action)
        if kind == 6:
            return self.context.wait_for_event(str(action.get("externalEventName")))
        if kind in (7, 9):
            return self._entity_message(action, signal=kind == 9)
        if kind == 8:
            return self._schedule_task(HTTP_ACTIVITY, compact([action.get("httpRequest")]))
        if kind in (11, 12):
            children = [self.invoke(child) for child in action.get("compoundActions") or []]
            return when_any(children) if kind == 11 else when_all(children)
        raise ArgumentError(f"Received an unexpected action type from the out-of-proc function: '${kind}'.")

    def _count(self) -> None:
        if self.state.actions_invoked >= self.max_actions:
            raise ArgumentError(f"Maximum amount of orchestration actions ({self.max_actions}) has been reached. "
                                "This value can be configured in host.json file as MaxOrchestrationActions.")
        self.state.actions_invoked += 1

    def _call_activity(self, action: dict[str, Any], counted: bool = True) -> Future:
        name = str(action.get("functionName"))
        if counted:
            self.catalog.check(name, "activity")
            self._count()
        return self._schedule_task(name, compact([action.get("input")]))

    def _schedule_task(self, name: str, input_text: str) -> Future:
        return self.context.schedule(Decision("activity", self.context.next_id(), name, input_text))

    def _call_sub_orchestrator(self, action: dict[str, Any], counted: bool = True) -> Future:
        name = str(action.get("functionName"))
        instance_id = action.get("instanceId") or None
        if counted:
            self.catalog.check(name, "orchestrator")
            parents = {self.context.instance_id.lower(), (self.parent_instance_id or "").lower()} - {""}
            if instance_id is not None and instance_id.lower() in parents:
                raise ArgumentError("The instance ID of a sub-orchestration must be different than the instance ID "
                                    "of a parent orchestration.")
            if instance_id is not None and instance_id.startswith("@"):
                raise ArgumentError("instanceId (Parameter 'Orchestration instance ids must not start with @')")
            self._count()
        task_id = self.context.next_id()
        child = instance_id or f"{self.context.execution_id}:{task_id}"
        version = action.get("version") or self.default_version
        return self.context.schedule(Decision("suborchestration", task_id, name, compact(action.get("input")),
                                              instance_id=child, version=version))

    def _create_timer(self, action: dict[str, Any]) -> Future:
        self._count()
        fire_at = h.parse_time(str(action.get("fireAt")))
        task_id = self.context.next_id()
        future = self.context.schedule(Decision("timer", task_id, fire_at=fire_at))
        if action.get("isCanceled"):
            self.context.cancel_timer(task_id)
        return future

    def _entity_message(self, action: dict[str, Any], *, signal: bool) -> Future:
        target = str(action.get("instanceId"))
        entity_name = target[1:].split("@", 1)[0] if target.startswith("@") else target
        self.catalog.check(entity_name, "entity")
        request_id = self.context.new_guid()
        request: dict[str, Any] = {"op": action.get("operation")}
        if signal:
            request["signal"] = True
        raw_input = action.get("input")
        if raw_input is not None:
            request["input"] = compact(raw_input)
        request.update({"id": request_id, "parent": self.context.instance_id,
                        "parentExecution": self.context.execution_id})
        assert self.context.now is not None
        request["Timestamp"] = h.format_time(self.context.now)
        self.context.schedule(Decision("send", self.context.next_id(), "op", compact(request), instance_id=target),
                              awaited=False)
        if signal:
            return completed()
        return self.context.wait_for_event(request_id)

    # -- retries (DTFx RetryInterceptor with the extension's RetryOptions) --------------------------

    def _with_retry(self, action: dict[str, Any], call: Callable[[], Future]) -> Future:
        options = _retry_options(action.get("retryOptions"))
        name = str(action.get("functionName"))
        kind = "activity" if _action_type(action.get("actionType")) == 1 else "orchestrator"
        self.catalog.check(name, kind)
        self._count()
        return start(self._retry(call, options))

    async def _retry(self, call: Callable[[], Future], options: dict[str, Any]) -> Any:
        first_attempt = self._now()
        attempts = int(options["maxNumberOfAttempts"])
        last: BaseException | None = None
        for count in range(attempts):
            try:
                return await call()
            except TaskFailure as exc:
                last = exc
            if count + 1 == attempts:
                await self.context.schedule(Decision("timer", self.context.next_id(), fire_at=self._now()))
                break
            delay = _next_delay(options, count, first_attempt, self._now())
            if delay <= timedelta(0):
                break
            await self.context.schedule(Decision("timer", self.context.next_id(), fire_at=self._now() + delay))
        if last is not None:
            raise last
        return None

    def _now(self) -> datetime:
        assert self.context.now is not None
        return self.context.now


def _action_type(value: Any) -> int:
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str) and value in _ACTION_TYPES:
        return _ACTION_TYPES[value]
    if isinstance(value, str) and value.isdigit():
        return int(value)
    raise ArgumentError(f"Received an unexpected action type from the out-of-proc function: '${value}'.")


def _schema(value: Any) -> int:
    if value in (None, "Original"):
        return 0
    if isinstance(value, str):
        value = {"V2": 1, "V3": 2}.get(value, value)
    try:
        schema = int(value)
    except (TypeError, ValueError):
        raise ArgumentError(f"The OOProc schema of of version \"{value}\" is unsupported by this "
                            "durable-extension version.") from None
    if schema not in _SCHEMA_NAMES:
        raise ArgumentError(f"The OOProc schema of of version \"{schema}\" is unsupported by this "
                            "durable-extension version.")
    return schema


def _retry_options(raw: Any) -> dict[str, Any]:
    if not isinstance(raw, dict):
        raise ArgumentError("Invalid JSON. Must contain field firstRetryIntervalInMilliseconds")
    for required in ("firstRetryIntervalInMilliseconds", "maxNumberOfAttempts"):
        if required not in raw:
            raise ArgumentError(f"Invalid JSON. Must contain field {required}")
    return raw


def _next_delay(options: dict[str, Any], attempt: int, first_attempt: datetime, now: datetime) -> timedelta:
    timeout_ms = options.get("retryTimeoutInMilliseconds")
    if timeout_ms is not None and now >= first_attempt + timedelta(milliseconds=int(timeout_ms)):
        return timedelta(0)
    delay_ms = float(options["firstRetryIntervalInMilliseconds"]) * float(options.get("backoffCoefficient", 1.0)) ** attempt
    maximum = options.get("maxRetryIntervalInMilliseconds")
    cap = timedelta(milliseconds=int(maximum)) if maximum is not None else MAX_RETRY_INTERVAL
    return min(timedelta(milliseconds=delay_ms), cap)


def _limited(serialized: str) -> str:
    size_kb = int(len(serialized.encode("utf-16-le")) / 1024.0)
    if size_kb > CUSTOM_STATUS_LIMIT_KB:
        raise ArgumentError(f"The UTF-16 size of the JSON-serialized payload must not exceed {CUSTOM_STATUS_LIMIT_KB} "
                            f"KB. The current payload size is {size_kb:,} KB.")
    return serialized


def run_orchestrator(shim: Shim, sdk_state: dict[str, Any] | None, sdk_error: str | None,
                     stack: str | None) -> Future:
    coroutine: Coroutine[Future, None, None] = shim.run(sdk_state, sdk_error, stack)
    return start(coroutine)
