"""Options of the Cosmos DB trigger: host.json ``extensions.cosmosDB`` and the trigger attribute.

host.json keys accepted as the v4 extension accepts them (``connectionMode``,
``userAgentSuffix``) plus the v3 ones still found in apps (``protocol``, ``leaseOptions`` with
``leasePrefix``); none changes behaviour of the embedded store except ``leasePrefix`` (the default
lease prefix, as in v3). funchost adds one key, ``checkpointOnFailure`` (default false): true
reproduces the Azure extension, which checkpoints a batch even when the function failed
(azure-semantics 7.7); the app setting ``FUNCHOST_COSMOSDB_CHECKPOINT_ON_FAILURE`` overrides it.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from funchost.bindings.cosmosdb_v3 import v3_properties_problem
from funchost.errors import AppLoadError
from funchost.settings.sections import SectionReader

if TYPE_CHECKING:
    from funchost.indexing.spec import BindingSpec, FunctionSpec
    from funchost.settings.app_settings import AppSettings

DEFAULT_CONNECTION = "CosmosDB"
DEFAULT_LEASE_CONTAINER = "leases"
DEFAULT_FEED_POLL_DELAY = 5.0
DEFAULT_LEASE_ACQUIRE_INTERVAL = 13.0
DEFAULT_LEASE_EXPIRATION_INTERVAL = 60.0
DEFAULT_LEASE_RENEW_INTERVAL = 17.0
DEFAULT_PAGE_SIZE = 100  # ChangeFeedProcessorOptions.MaxItemCount when MaxItemsPerInvocation is unset
CHECKPOINT_ON_FAILURE_SETTING = "FUNCHOST_COSMOSDB_CHECKPOINT_ON_FAILURE"

SAME_CONTAINER = "The monitored container cannot be the same as the container storing the leases."
BOTH_START_OPTIONS = "Only one of StartFromBeginning or StartFromTime can be used"
BAD_START_TIME = ("The specified StartFromTime parameter is not in the correct format. Please use the ISO 8601 "
                  "format with the UTC designator. For example: '2021-02-16T14:19:29Z'.")


@dataclass(frozen=True)
class CosmosDBOptions:
    connection_mode: str = "Gateway"
    user_agent_suffix: str | None = None
    protocol: str = "Https"
    lease_prefix: str | None = None
    checkpoint_on_failure: bool = False


def parse(reader: SectionReader) -> CosmosDBOptions:
    mode = reader.string("connectionMode", "Gateway", choices={"gateway": "Gateway", "direct": "Direct"})
    suffix = reader.string("userAgentSuffix", None)
    protocol = reader.string("protocol", "Https", choices={"https": "Https", "tcp": "Tcp"})
    lease_options = reader.section("leaseOptions")
    prefix = lease_options.string("leasePrefix", None)
    lease_options.finish()
    checkpoint = reader.boolean("checkpointOnFailure", False)
    return CosmosDBOptions(mode or "Gateway", suffix, protocol or "Https", prefix, checkpoint)


def checkpoint_on_failure(options: CosmosDBOptions, settings: AppSettings) -> bool:
    value = settings.get(CHECKPOINT_ON_FAILURE_SETTING)
    if value is not None and value.strip():
        return value.strip().lower() in ("1", "true", "yes")
    return options.checkpoint_on_failure


@dataclass(frozen=True)
class TriggerOptions:
    """The ``cosmosDBTrigger`` binding's properties, with Azure's defaults (azure-semantics 7.1)."""

    connection: str
    database: str
    container: str
    lease_connection: str
    lease_database: str
    lease_container: str
    create_lease_container: bool
    leases_throughput: int
    prefix: str
    feed_poll_delay: float
    lease_acquire_interval: float
    lease_expiration_interval: float
    lease_renew_interval: float
    max_items: int  # 0 = unset
    start_from_beginning: bool
    start_time: datetime | None

    @property
    def page_size(self) -> int:
        return self.max_items if self.max_items > 0 else DEFAULT_PAGE_SIZE

    @property
    def initial_start_time(self) -> datetime | None:
        """Where a lease without continuation starts: a time, the beginning, or None = now."""
        if self.start_time is not None:
            return self.start_time
        if self.start_from_beginning:
            return datetime.min.replace(tzinfo=UTC)
        return None


def _ms(binding: BindingSpec, key: str, default: float) -> float:
    value = binding.get(key)
    if value is None:
        return default
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"'{key}' must be a number of milliseconds, got {value!r}") from None
    return number / 1000.0 if number > 0 else default  # Azure ignores values <= 0


def _bool(value: object) -> bool:
    if isinstance(value, str):
        return value.strip().lower() == "true"
    return bool(value)


def parse_start_time(text: str) -> datetime:
    """`DateTime.TryParse`-like: ISO 8601; a time without offset is taken as UTC."""
    try:
        parsed = datetime.fromisoformat(text.strip())
    except ValueError:
        raise ValueError(BAD_START_TIME) from None
    return parsed.replace(tzinfo=UTC) if parsed.tzinfo is None else parsed.astimezone(UTC)


def from_function(function: FunctionSpec, host_options: CosmosDBOptions | None = None) -> TriggerOptions:
    """Build and validate the trigger options; errors name the function, as indexing does."""
    binding = function.trigger
    try:
        return _build(binding, host_options or CosmosDBOptions())
    except ValueError as exc:
        raise AppLoadError(str(exc), file=function.script_file, line=function.source_line,
                           function=function.name) from None


def _build(binding: BindingSpec, host: CosmosDBOptions) -> TriggerOptions:
    connection = str(binding.get("connection") or "").strip() or DEFAULT_CONNECTION
    database = str(binding.get("databaseName") or "")
    container = str(binding.get("containerName") or "")
    if problem := v3_properties_problem(binding):
        raise ValueError(f"the Cosmos DB trigger {problem}")
    if not database or not container:
        raise ValueError("the Cosmos DB trigger needs 'databaseName' and 'containerName'")
    start_text = str(binding.get("startFromTime") or "").strip()
    from_beginning = _bool(binding.get("startFromBeginning", False))
    start_time = None
    if start_text:
        if from_beginning:
            raise ValueError(BOTH_START_OPTIONS)
        start_time = parse_start_time(start_text)
    lease_connection = str(binding.get("leaseConnection") or "").strip() or connection
    lease_database = str(binding.get("leaseDatabaseName") or "").strip() or database
    lease_container = str(binding.get("leaseContainerName") or "").strip() or DEFAULT_LEASE_CONTAINER
    if (lease_connection.lower(), lease_database.lower(), lease_container.lower()) == (
            connection.lower(), database.lower(), container.lower()):
        raise ValueError(SAME_CONTAINER)
    max_items = int(binding.get("maxItemsPerInvocation") or 0)
    prefix = binding.get("leaseContainerPrefix")
    return TriggerOptions(
        connection=connection, database=database, container=container,
        lease_connection=lease_connection, lease_database=lease_database, lease_container=lease_container,
        create_lease_container=_bool(binding.get("createLeaseContainerIfNotExists", False)),
        leases_throughput=int(binding.get("leasesContainerThroughput") or 0),
        prefix=str(prefix if prefix is not None else (host.lease_prefix or "")),
        feed_poll_delay=_ms(binding, "feedPollDelay", DEFAULT_FEED_POLL_DELAY),
        lease_acquire_interval=_ms(binding, "leaseAcquireInterval", DEFAULT_LEASE_ACQUIRE_INTERVAL),
        lease_expiration_interval=_ms(binding, "leaseExpirationInterval", DEFAULT_LEASE_EXPIRATION_INTERVAL),
        lease_renew_interval=_ms(binding, "leaseRenewInterval", DEFAULT_LEASE_RENEW_INTERVAL),
        max_items=max(0, max_items),
        start_from_beginning=from_beginning,
        start_time=start_time,
    )
