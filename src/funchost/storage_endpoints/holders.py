"""Who holds an endpoint's port: the data folder's own record first, then the socket's answer.

A process serving an endpoint records itself in ``<data>/storage/endpoints/<service>.json``
(its pid, the port, and on Linux the process's start time, so a recycled pid is not taken for
it) and removes the record when it stops. Another host of the same data folder that finds the
port taken reads the record: a live process named there is this folder's server, even when it
is too busy (or frozen) to answer an HTTP request in time. Without a record the socket is asked
(``GET /_funchost/identity``): a funchost process answers its data folder's id; anything else
that answers is another program; no answer in time leaves the holder unknown.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from funchost.private_files import write_private_file
from funchost.storage_endpoints.app import IDENTITY_PATH

if TYPE_CHECKING:
    import httpx

IDENTITY_TIMEOUT = 2.0  # seconds for the identity request


@dataclass(frozen=True)
class Holder:
    """`kind`: "folder" (a process of this data folder), "funchost" (a funchost process of another
    data folder, `data` its id), "other" (another program answered), "silent" (no answer in time),
    "free" (nothing listens)."""

    kind: str
    data: str | None = None
    pid: int | None = None


def _record(root: Path, service: str) -> Path:
    return root / "endpoints" / f"{service}.json"


def write_record(root: Path, service: str, port: int) -> None:
    """This process serves `service` on `port` for the data folder at `root`."""
    record = {"pid": os.getpid(), "port": port, "started": process_start(os.getpid())}
    write_private_file(_record(root, service), json.dumps(record))  # atomic: old record or new


def remove_record(root: Path, service: str) -> None:
    """Forget the record if it still names this process (another may have taken over since)."""
    record = _read(root, service)
    if record is not None and record.get("pid") == os.getpid():
        _record(root, service).unlink(missing_ok=True)


def recorded_server(root: Path, service: str, port: int) -> int | None:
    """The pid of another live process the record names as serving `service` on `port`."""
    record = _read(root, service)
    if record is None or record.get("port") != port:
        return None
    pid = record.get("pid")
    if not isinstance(pid, int) or pid == os.getpid() or not _alive(pid, record.get("started")):
        return None
    return pid


def _read(root: Path, service: str) -> dict[str, Any] | None:
    try:
        data = json.loads(_record(root, service).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def process_start(pid: int) -> str | None:
    """The process's start time in clock ticks since boot (Linux), None where unknown."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text(encoding="ascii", errors="replace")
    except OSError:
        return None
    fields = stat.rpartition(")")[2].split()
    return fields[19] if len(fields) > 19 else None  # field 22 of proc(5), counted after the name


def _alive(pid: int, started: object) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # alive, another user's: the start time below still tells
    now = process_start(pid)
    return started is None or now is None or now == started


def _holder(response: httpx.Response | httpx.HTTPError, identity: str) -> Holder:
    import httpx

    if isinstance(response, httpx.ConnectError):
        return Holder("free")
    if isinstance(response, httpx.HTTPError):
        return Holder("silent")  # accepted, but no answer in time
    try:
        answer = response.json()
    except ValueError:
        return Holder("other")
    if not isinstance(answer, dict) or "data" not in answer:
        return Holder("other")
    pid = answer.get("pid") if isinstance(answer.get("pid"), int) else None
    return Holder("folder" if answer["data"] == identity else "funchost", str(answer["data"]), pid)


def _address(host: str) -> str:
    return "127.0.0.1" if host in ("0.0.0.0", "") else host


async def identify(root: Path | None, service: str, host: str, port: int, identity: str,
                   timeout: float = IDENTITY_TIMEOUT) -> Holder:
    """Who holds `port`, the record of the data folder at `root` first."""
    pid = recorded_server(root, service, port) if root is not None else None
    if pid is not None:
        return Holder("folder", identity, pid)
    import httpx  # here: a host whose data folder records the holder never loads it (start-up time)

    try:
        async with httpx.AsyncClient(timeout=timeout) as client:
            return _holder(await client.get(f"http://{_address(host)}:{port}{IDENTITY_PATH}"), identity)
    except httpx.HTTPError as exc:
        return _holder(exc, identity)


def identify_blocking(root: Path, service: str, host: str, port: int, identity: str,
                      timeout: float = IDENTITY_TIMEOUT) -> Holder:
    """`identify` for the host's load, before any event loop runs."""
    pid = recorded_server(root, service, port)
    if pid is not None:
        return Holder("folder", identity, pid)
    import httpx

    try:
        return _holder(httpx.get(f"http://{_address(host)}:{port}{IDENTITY_PATH}", timeout=timeout), identity)
    except httpx.HTTPError as exc:
        return _holder(exc, identity)
