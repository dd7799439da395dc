"""host.json ``extensions.durableTask`` (DurableTaskOptions of the Durable extension).

Settings that mean something for a local task hub are read strictly; settings that only tune
Azure Storage, App Insights, gRPC or .NET are accepted and warned about once, when host.json is
read. Two Azure Storage provider settings are honoured because they say the same thing here:
``controlQueueVisibilityTimeout`` is how long a host holds an orchestration or entity it is
running (another host takes over after that if it dies), ``workItemQueueVisibilityTimeout`` the
same for an activity.
"""

from __future__ import annotations

import logging
import os
import re
from dataclasses import dataclass

from funchost.errors import ConfigError
from funchost.settings.sections import SectionReader

log = logging.getLogger("funchost.durable")

DEFAULT_HUB_NAME = "TestHubName"  # DurableTaskOptions.DefaultHubName
DEFAULT_VISIBILITY = 300.0  # Azure Storage provider: 00:05:00 for control and work-item queues
DEFAULT_HTTP_SLEEP_MS = 30000
MAX_ORCHESTRATION_ACTIONS = 100000
_HUB_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9]{2,44}$")
_OVERRIDABLE = {"nonrunningstates": "NonRunningStates", "anystate": "AnyState"}

# Accepted and ignored (each with one warning): Azure, App Insights, .NET and gRPC tuning.
_IGNORED = ("extendedSessionsEnabled", "extendedSessionIdleTimeoutInSeconds", "entityMessageReorderWindowInMinutes",
            "useGracefulShutdown", "rollbackEntityOperationsOnExceptions", "throwStatusExceptionsOnRaiseEvent",
            "useAppLease", "appLeaseOptions", "tracing", "notifications", "maxGrpcMessageSizeInBytes",
            "grpcHttpClientTimeout", "versionMatchStrategy", "versionFailureStrategy", "maxQueuePollingInterval",
            "partitionCount", "controlQueueBatchSize", "controlQueueBufferThreshold")
_STORAGE_HONOURED = ("controlQueueVisibilityTimeout", "workItemQueueVisibilityTimeout")


@dataclass(frozen=True)
class DurableTaskOptions:
    hub_name: str = DEFAULT_HUB_NAME  # may still hold %Setting% tokens; see `resolved_hub_name`
    max_concurrent_activities: int = 10
    max_concurrent_orchestrations: int = 10
    max_concurrent_entities: int = 10
    max_entity_batch_size: int = 5000
    max_orchestration_actions: int = MAX_ORCHESTRATION_ACTIONS
    overridable_states: str = "NonRunningStates"
    local_rpc_enabled: bool = True
    default_version: str = ""
    store_inputs_in_history: bool = False
    http_sleep_ms: int = DEFAULT_HTTP_SLEEP_MS
    orchestration_lease: float = DEFAULT_VISIBILITY
    activity_lease: float = DEFAULT_VISIBILITY


def default_options(environ: dict[str, str] | None = None) -> DurableTaskOptions:
    """Defaults as on a Premium / Dedicated plan: concurrency 10 x processors (extension default)."""
    env = os.environ if environ is None else environ
    consumption = env.get("WEBSITE_SKU", "").lower() == "dynamic"
    cpus = os.cpu_count() or 1
    hub = env.get("WEBSITE_SITE_NAME") or DEFAULT_HUB_NAME
    return DurableTaskOptions(
        hub_name=hub,
        max_concurrent_activities=10 if consumption else 10 * cpus,
        max_concurrent_orchestrations=5 if consumption else 10 * cpus,
        max_concurrent_entities=10 if consumption else 10 * cpus,
        max_entity_batch_size=50 if consumption else 5000,
    )


def _positive(reader: SectionReader, key: str, default: int) -> int:
    value = reader.integer(key, default)
    if value <= 0:
        raise ConfigError(f"{key[0].upper()}{key[1:]} must be a positive integer value.", path=reader.key_path(key))
    return value


def parse(reader: SectionReader) -> DurableTaskOptions:
    base = default_options()
    hub = reader.string("hubName", base.hub_name)
    if hub is None or not hub.strip():
        raise ConfigError("A non-empty HubName configuration is required.", path=reader.key_path("hubName"))
    overridable = reader.string("overridableExistingInstanceStates", base.overridable_states, choices=_OVERRIDABLE)
    http = reader.section("httpSettings")
    http_sleep = http.integer("defaultAsyncRequestSleepTimeMilliseconds", DEFAULT_HTTP_SLEEP_MS, minimum=0)
    for key in ("useForwardedHost", "defaultHttpRetryOptions"):
        _warn_ignored(http, key)
    http.finish()
    raw_storage = reader.raw("storageProvider") or {}
    storage = reader.child(raw_storage, reader.key_path("storageProvider"))
    control = storage.timespan("controlQueueVisibilityTimeout", DEFAULT_VISIBILITY, minimum=1)
    work_item = storage.timespan("workItemQueueVisibilityTimeout", DEFAULT_VISIBILITY, minimum=1)
    for key in raw_storage:  # every other provider setting is Azure Storage tuning
        if str(key).lower() not in {k.lower() for k in _STORAGE_HONOURED}:
            _warn_ignored(storage, str(key))
    storage.finish()
    options = DurableTaskOptions(
        hub_name=hub.strip(),
        max_concurrent_activities=_positive(reader, "maxConcurrentActivityFunctions", base.max_concurrent_activities),
        max_concurrent_orchestrations=_positive(reader, "maxConcurrentOrchestratorFunctions",
                                                base.max_concurrent_orchestrations),
        max_concurrent_entities=_positive(reader, "maxConcurrentEntityFunctions", base.max_concurrent_entities),
        max_entity_batch_size=_positive(reader, "maxEntityOperationBatchSize", base.max_entity_batch_size),
        max_orchestration_actions=_positive(reader, "maxOrchestrationActions", MAX_ORCHESTRATION_ACTIONS),
        overridable_states=overridable or "NonRunningStates",
        local_rpc_enabled=reader.raw("localRpcEndpointEnabled") is not False,
        default_version=reader.string("defaultVersion", "") or "",
        store_inputs_in_history=reader.boolean("storeInputsInOrchestrationHistory", False),
        http_sleep_ms=http_sleep,
        orchestration_lease=float(control or DEFAULT_VISIBILITY),
        activity_lease=float(work_item or DEFAULT_VISIBILITY),
    )
    if not options.local_rpc_enabled:
        log.warning("host.json: extensions.durableTask.localRpcEndpointEnabled is false: the Python SDK's "
                    "client cannot reach the task hub without it (as on Azure)")
    for key in _IGNORED:
        _warn_ignored(reader, key)
    return options


def _warn_ignored(reader: SectionReader, key: str) -> None:
    if reader.has(key):
        reader.raw(key)
        log.warning("host.json: '%s' is recognised but not emulated by funchost; ignored", reader.key_path(key))


def resolved_hub_name(options: DurableTaskOptions, resolve: object) -> str:
    """The hub name with `%Setting%` tokens resolved, checked as the Azure Storage provider does."""
    name = options.hub_name
    if "%" in name and callable(resolve):
        name = str(resolve(name))
    if not _HUB_NAME.match(name):
        raise ConfigError(f"Task hub name '{name}' should contain only alphanumeric characters, start with a "
                          "letter, and have length between 3 and 45.", path="host.json: extensions.durableTask.hubName")
    return name
