"""Schedule status persistence (StorageScheduleMonitor, azure-semantics 4.3 and 4.4).

The status of each monitored timer is a blob in the host storage account:
``azure-webjobs-hosts/timers/{hostId}/Host.Functions.{name}/status`` holding
``{"Last": ..., "Next": ..., "LastUpdated": ...}`` as Json.NET writes local DateTimes
(``0001-01-01T00:00:00`` for "never"). Reads treat a missing blob as "no status"; writes are best
effort (a failure is logged, the schedule continues).
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from datetime import datetime, timedelta, tzinfo

from funchost.errors import ResourceNotFound, StorageError
from funchost.storage.blobs import BlobService
from funchost.triggers.timer.schedule import Schedule

log = logging.getLogger("funchost.timer")

HOSTS_CONTAINER = "azure-webjobs-hosts"
DEFAULT_DATETIME = "0001-01-01T00:00:00"


def timer_name(function_name: str) -> str:
    """The timer's lookup name in the Functions host: ``Host.Functions.<FunctionName>``."""
    return f"Host.Functions.{function_name}"


def status_blob_name(host_id: str, function_name: str) -> str:
    return f"timers/{host_id}/{timer_name(function_name)}/status"


def format_datetime(value: datetime | None) -> str:
    """Json.NET's ISO form: ``yyyy-MM-ddTHH:mm:ss[.FFFFFFF]zzz`` (trailing zeros trimmed)."""
    if value is None:
        return DEFAULT_DATETIME
    text = value.strftime("%Y-%m-%dT%H:%M:%S")
    if value.microsecond:
        text += "." + f"{value.microsecond:06d}0".rstrip("0")
    offset = value.utcoffset()
    if offset is not None:
        sign = "-" if offset < timedelta(0) else "+"
        minutes = int(abs(offset).total_seconds()) // 60
        text += f"{sign}{minutes // 60:02d}:{minutes % 60:02d}"
    return text


def format_dotnet_o(value: datetime) -> str:
    """.NET's round-trip "o" format (always 7 fraction digits), as in 'Timer fired at ...'."""
    offset = value.utcoffset() or timedelta(0)
    sign = "-" if offset < timedelta(0) else "+"
    minutes = int(abs(offset).total_seconds()) // 60
    return f"{value.strftime('%Y-%m-%dT%H:%M:%S')}.{value.microsecond:06d}0{sign}{minutes // 60:02d}:{minutes % 60:02d}"


def parse_datetime(text: object, zone: tzinfo) -> datetime | None:
    if not isinstance(text, str) or not text or text.startswith("0001-01-01"):
        return None
    value = text.strip().replace("Z", "+00:00")
    # Python < 3.12 accepts at most 6 fraction digits: trim .NET's seventh.
    if "." in value:
        head, _, rest = value.partition(".")
        digits = "".join(ch for ch in rest if ch.isdigit())
        tail = rest[len(digits):]
        value = f"{head}.{digits[:6].ljust(6, '0')}{tail}"
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        return None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=zone)
    return parsed.astimezone(zone)


@dataclass(frozen=True)
class ScheduleStatus:
    last: datetime | None  # None = default(DateTime): never ran
    next: datetime | None
    last_updated: datetime | None

    def to_json(self) -> dict[str, str]:
        return {"Last": format_datetime(self.last), "Next": format_datetime(self.next),
                "LastUpdated": format_datetime(self.last_updated)}

    @classmethod
    def from_json(cls, data: object, zone: tzinfo) -> ScheduleStatus | None:
        if not isinstance(data, dict):
            return None
        return cls(parse_datetime(data.get("Last"), zone), parse_datetime(data.get("Next"), zone),
                   parse_datetime(data.get("LastUpdated"), zone))


class ScheduleMonitor:
    def __init__(self, blobs: BlobService, host_id: str, zone: tzinfo) -> None:
        self.blobs = blobs
        self.host_id = host_id
        self.zone = zone
        self._container_ready = False

    async def get_status(self, function_name: str) -> ScheduleStatus | None:
        """The stored status; None when there is none (or it cannot be read: GetSafeStatusAsync)."""
        try:
            data, _ = await self.blobs.download_blob(HOSTS_CONTAINER, status_blob_name(self.host_id, function_name))
        except ResourceNotFound:
            return None
        except StorageError:
            log.warning("could not read the schedule status of '%s'", function_name, exc_info=True)
            return None
        try:
            return ScheduleStatus.from_json(json.loads(data.decode("utf-8-sig")), self.zone)
        except (UnicodeDecodeError, json.JSONDecodeError):
            log.warning("the schedule status of '%s' is not valid JSON; ignoring it", function_name)
            return None

    async def update_status(self, function_name: str, status: ScheduleStatus) -> None:
        """Best effort, as the host: failures are logged, never raised."""
        body = json.dumps(status.to_json()).encode("utf-8")
        name = status_blob_name(self.host_id, function_name)
        try:
            if not self._container_ready:
                await self.blobs.create_container(HOSTS_CONTAINER, exist_ok=True)
                self._container_ready = True
            await self.blobs.upload_blob(HOSTS_CONTAINER, name, body, content_type="application/json")
        except StorageError:
            log.warning("could not update the schedule status of '%s'", function_name, exc_info=True)

    async def check_past_due(
        self, function_name: str, now: datetime, schedule: Schedule, status: ScheduleStatus | None
    ) -> tuple[ScheduleStatus | None, float]:
        """CheckPastDueAsync: returns (the status the listener keeps, seconds past due or 0).

        The first element is None when no status had been recorded (the listener then starts
        with an in-memory status), as in the host.
        """
        if status is None:
            nxt = schedule.next_occurrence(now)
            await self.update_status(function_name, ScheduleStatus(None, nxt, now))
            recorded = nxt
        else:
            if status.last is not None:
                expected, last_updated = schedule.next_occurrence(status.last), status.last
            elif status.last_updated is not None:
                expected, last_updated = schedule.next_occurrence(status.last_updated), status.last_updated
            else:
                expected, last_updated = schedule.next_occurrence(now), now
            if status.next != expected:
                # The schedule changed since the status was written: do not treat it as past due
                # if the new expected occurrence is already behind us.
                if expected is not None and now > expected:
                    expected, last_updated = schedule.next_occurrence(now), now
                status = ScheduleStatus(None, expected, last_updated)
                await self.update_status(function_name, status)
            recorded = status.next
        if recorded is not None and now > recorded:
            return status, (now - recorded).total_seconds()
        return status, 0.0
