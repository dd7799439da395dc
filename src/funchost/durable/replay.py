"""One replay: history in, new decisions and (maybe) the end of the execution out.

History events are applied in order to an `OrchestrationContext`; ExecutionStarted starts the
out-of-process shim over the SDK's actions. Afterwards the actions no history event matched are
the episode's new decisions, and the execution ends as DTFx ends it: only once the orchestrator
function has returned or failed AND no task is still open (an activity, sub-orchestration or
uncancelled timer keeps a finished orchestrator Running until it completes). A non-determinism
error fails the execution at once.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from funchost.durable import history as h
from funchost.durable.context import Decision, NonDeterministicError, OrchestrationContext
from funchost.durable.shim import FunctionCatalog, OrchestrationFailure, Shim, ShimState, run_orchestrator
from funchost.durable.tasks import Future

Event = dict[str, Any]


@dataclass
class Completion:
    status: h.OrchestrationStatus
    result: str | None
    details: str | None = None
    event_id: int = -1
    carryover: list[Event] = field(default_factory=list)


@dataclass
class ReplayOutcome:
    decisions: list[Decision]
    completion: Completion | None
    state: ShimState


@dataclass(frozen=True)
class SdkResult:
    """What the orchestrator function returned: its OrchestratorState, or the failure text."""

    state: dict[str, Any] | None
    error: str | None = None
    stack: str | None = None


def replay(history: list[Event], *, instance_id: str, execution_id: str, name: str, parent_instance_id: str | None,
           catalog: FunctionCatalog, default_version: str, max_actions: int, sdk: SdkResult) -> ReplayOutcome:
    context = OrchestrationContext(instance_id, execution_id)
    shim = Shim(context, name=name, parent_instance_id=parent_instance_id, catalog=catalog,
                default_version=default_version, max_actions=max_actions)
    result: Future | None = None
    try:
        for event in history:
            if h.event_type(event) is h.EventType.ExecutionStarted:
                result = run_orchestrator(shim, sdk.state, sdk.error, sdk.stack)
            else:
                context.apply(event)
    except NonDeterministicError as exc:
        details = ("Unhandled exception while executing orchestration: "
                   f"DurableTask.Core.Exceptions.NonDeterministicOrchestrationException: {exc}")
        failed = Completion(h.OrchestrationStatus.Failed, str(exc), details, context.next_id())
        return ReplayOutcome(context.new_decisions(), failed, shim.state)
    decisions = context.new_decisions()
    if result is None or not result.done or context.open_tasks:
        return ReplayOutcome(decisions, None, shim.state)
    return ReplayOutcome(decisions, _completion(result, context, shim), shim.state)


def _completion(result: Future, context: OrchestrationContext, shim: Shim) -> Completion:
    event_id = context.next_id()
    if result.failed:
        error = result._error
        if isinstance(error, OrchestrationFailure):
            return Completion(h.OrchestrationStatus.Failed, error.reason, error.details, event_id)
        details = f"Unhandled exception while executing orchestration: {error!r}"
        return Completion(h.OrchestrationStatus.Failed, str(error), details, event_id)
    if context.continued_as_new:
        return Completion(h.OrchestrationStatus.ContinuedAsNew, context.continue_as_new, None, event_id,
                          list(context.carryover))
    return Completion(h.OrchestrationStatus.Completed, shim.state.output, None, event_id)
