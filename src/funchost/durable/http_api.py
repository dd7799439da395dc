"""The management API at the extension's URLs (HttpApiHandler), route for route.

Served twice, as the extension does: on the host's port under ``/runtime/webhooks/durabletask``
(protected by the ``durabletask_extension`` system key or the master key) and on the local RPC
listener the Python SDK's client calls (``rpcBaseUrl``, no key). An ArgumentException becomes
400 "One or more of the arguments submitted is incorrect", anything else unexpected 500
"Something went wrong while processing your request", as in the extension.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Callable
from typing import Any
from urllib.parse import unquote

from funchost.clock import Clock
from funchost.durable.client import ArgumentFailure, DurableClient, Gone, NotFound
from funchost.durable.shim import compact
from funchost.durable.status import status_payload
from funchost.durable.webhooks import ApiRequest, ApiResponse, check_status_response
from funchost.storage.durable import COMPLETED_STATUSES, ENTITY, InstanceExists, InstanceQuery

log = logging.getLogger("funchost.durable")

_START = re.compile(r"^/orchestrators/(?P<name>[^/]+)(?:/(?P<id>[^/]+))?/?$", re.IGNORECASE)
_ENTITY = re.compile(r"^/entities(?:/(?P<name>[^/]+))?(?:/(?P<key>[^/]+))?/?$", re.IGNORECASE)
_INSTANCES = re.compile(r"^/instances(?:/(?P<id>[^/]+))?(?:/(?P<op>[^/]+))?/?$", re.IGNORECASE)
_RAISE = re.compile(r"^/instances/(?P<id>[^/]+)/raiseEvent/(?P<event>[^/]+)/?$", re.IGNORECASE)
_ARGUMENTS = "One or more of the arguments submitted is incorrect"
_TERMINAL_FOR_RAISE = COMPLETED_STATUSES


class ManagementApi:
    def __init__(self, client: DurableClient, clock: Clock, *, links: Callable[[str, str], dict[str, str]]) -> None:
        """`links(origin, instance_id)` builds an instance's management URLs (webhook base, system key)."""
        self.client = client
        self.clock = clock
        self.links = links

    async def handle(self, request: ApiRequest) -> ApiResponse:
        try:
            return await self._route(request)
        except (ArgumentFailure, ValueError) as exc:
            return ApiResponse.error(400, _ARGUMENTS, exc)
        except InstanceExists as exc:
            return ApiResponse.error(500, "Something went wrong while processing your request", exc,
                                     "DurableTask.Core.Exceptions.OrchestrationAlreadyExistsException")
        except Exception as exc:  # noqa: BLE001 - the extension's catch-all
            log.exception("durable management API: %s %s failed", request.method, request.path)
            return ApiResponse.error(500, "Something went wrong while processing your request", exc,
                                     f"System.{type(exc).__name__}")

    async def _route(self, request: ApiRequest) -> ApiResponse:
        path, method = request.path, request.method.upper()
        if match := _START.match(path):
            if method != "POST":
                return ApiResponse(404)
            return await self._start(request, unquote(match["name"]), unquote(match["id"] or ""))
        if match := _ENTITY.match(path):
            return await self._entity(request, method, match["name"], match["key"])
        if match := _INSTANCES.match(path):
            return await self._instances(request, method, match["id"], match["op"])
        if match := _RAISE.match(path):
            if method != "POST":
                return ApiResponse(404)
            return await self._raise(request, unquote(match["id"]), unquote(match["event"]))
        return ApiResponse(404)

    # -- orchestrations ----------------------------------------------------------------------------

    async def _start(self, request: ApiRequest, name: str, instance_id: str) -> ApiResponse:
        input_text = None
        if request.body and request.headers.get("content-length") != "0":
            try:
                input_text = compact(json.loads(request.body))
            except ValueError as exc:
                return ApiResponse.error(400, "Invalid JSON content", exc, "Newtonsoft.Json.JsonReaderException")
        version = request.param("version")
        new_id = await self.client.start_new(name, instance_id or None, input_text, version)
        return await self._started(request, new_id)

    async def _started(self, request: ApiRequest, instance_id: str) -> ApiResponse:
        timeout, interval = request.number("timeout"), request.number("pollingInterval")
        if timeout is not None and interval is not None:
            return await self._wait(request, instance_id, timeout, interval)
        return check_status_response(self.links(request.origin, instance_id))

    async def _wait(self, request: ApiRequest, instance_id: str, timeout: float, interval: float) -> ApiResponse:
        if interval > timeout:
            raise ArgumentFailure(f"Total timeout {timeout:g} should be bigger than retry timeout {interval:g}")
        waited = 0.0
        while True:
            record = await self.client.get(instance_id)
            if record is not None and record.status in ("Completed", "Canceled", "Failed", "Terminated"):
                break
            if waited >= timeout:
                return check_status_response(self.links(request.origin, instance_id))
            step = min(interval, timeout - waited)
            await self.clock.sleep(step)
            waited += step
        if record.status == "Completed":
            return ApiResponse.json(200, status_payload(record)["output"])
        return await self._status(request, instance_id)

    async def _instances(self, request: ApiRequest, method: str, raw_id: str | None, op: str | None) -> ApiResponse:
        instance_id = unquote(raw_id) if raw_id is not None else None
        if instance_id is None:
            if method == "GET":
                return await self._list(request)
            if method == "DELETE":
                return await self._purge_by(request)
            return ApiResponse(404)
        if op is None:
            if method == "GET":
                return await self._status(request, instance_id)
            if method == "DELETE":
                if await self.client.get(instance_id) is None:
                    return ApiResponse(404)
                return ApiResponse.json(200, {"instancesDeleted": await self.client.purge(instance_id)})
            return ApiResponse(404)
        if method != "POST":
            return ApiResponse(404)
        operation = op.lower()
        reason = request.param("reason")
        if operation == "restart":
            return await self._restart(request, instance_id)
        if operation in ("terminate", "suspend", "resume", "rewind"):
            record = await self.client.get(instance_id)
            if record is None:
                return ApiResponse(404)
            ended = COMPLETED_STATUSES - {"Failed"} if operation == "rewind" else COMPLETED_STATUSES
            if record.status in ended:
                return ApiResponse(410)
            if operation == "rewind":
                raise NotImplementedError("rewind (a deprecated preview feature) is not supported by funchost")
            await getattr(self.client, operation)(instance_id, reason)
            return ApiResponse(202)
        return ApiResponse(404)

    async def _status(self, request: ApiRequest, instance_id: str) -> ApiResponse:
        status = await self.client.status(instance_id, show_history=request.flag("showHistory", False),
                                          show_history_output=request.flag("showHistoryOutput", False),
                                          show_input=request.flag("showInput", True))
        if status is None:
            return ApiResponse(404)
        runtime = status["runtimeStatus"]
        if runtime in ("Running", "Pending", "ContinuedAsNew", "Suspended"):
            headers = [(b"location", request.url.encode("latin-1", "replace")), (b"retry-after", b"5")]
            return ApiResponse.json(202, status, headers)
        if runtime == "Failed" and request.flag("returnInternalServerErrorOnFailure", False):
            return ApiResponse.json(500, status)
        return ApiResponse.json(200, status)

    async def _list(self, request: ApiRequest) -> ApiResponse:
        query = InstanceQuery(created_from=request.time("createdTimeFrom"), created_to=request.time("createdTimeTo"),
                              statuses=request.statuses(), prefix=request.param("instanceIdPrefix"),
                              top=request.integer("top") or 100,
                              continuation=request.headers.get("x-ms-continuation-token"))
        page = await self.client.query(query)
        show_input = request.flag("showInput", True)
        payload = [status_payload(record, show_input=show_input) for record in page.instances]
        token = (page.continuation or "").encode("latin-1")
        return ApiResponse.json(200, payload, [(b"x-ms-continuation-token", token)])

    async def _purge_by(self, request: ApiRequest) -> ApiResponse:
        created_from = request.time("createdTimeFrom")
        if created_from is None:
            return ApiResponse.json(400, "Please provide value for 'createdTimeFrom' parameter.")
        created_to = request.time("createdTimeTo") or self.clock.now()
        deleted = await self.client.purge_by(created_from, created_to, request.statuses())
        if deleted == 0:
            return ApiResponse(404)
        return ApiResponse.json(200, {"instancesDeleted": deleted})

    async def _restart(self, request: ApiRequest, instance_id: str) -> ApiResponse:
        try:
            new_id = await self.client.restart(instance_id, request.flag("restartWithNewInstanceId", True))
        except ArgumentFailure as exc:
            return ApiResponse.error(400, "InstanceId does not match a valid orchestration instance.", exc)
        return await self._started(request, new_id)

    async def _raise(self, request: ApiRequest, instance_id: str, event_name: str) -> ApiResponse:
        record = await self.client.get(instance_id)
        if record is None:
            return ApiResponse(404)
        if record.status in _TERMINAL_FOR_RAISE:
            return ApiResponse(410)
        if request.content_type != "application/json":
            return ApiResponse.error(400, "Only application/json request content is supported")
        try:
            data = compact(json.loads(request.body.decode("utf-8")))
        except ValueError as exc:
            return ApiResponse.error(400, "Invalid JSON content", exc, "Newtonsoft.Json.JsonReaderException")
        try:
            await self.client.raise_event(instance_id, event_name, data)
        except (NotFound, Gone):
            return ApiResponse(410)
        return ApiResponse(202)

    # -- entities ----------------------------------------------------------------------------------

    async def _entity(self, request: ApiRequest, method: str, raw_name: str | None, raw_key: str | None) -> ApiResponse:
        name = unquote(raw_name) if raw_name else None
        key = unquote(raw_key) if raw_key is not None else ""
        if method == "GET":
            if name is None:
                raise ArgumentFailure("Value cannot be null. (Parameter 'entityName')")
            if key:
                exists, state = await self.client.read_entity(name, "" if key == "$" else key)
                if not exists:
                    return ApiResponse(404)
                return ApiResponse.json(200, json.loads(state) if state else None)
            return await self._list_entities(request, name)
        if method not in ("POST", "DELETE"):
            return ApiResponse(404)
        if name is None:
            raise ArgumentFailure("Value cannot be null. (Parameter 'entityName')")
        operation = "delete" if method == "DELETE" else (request.param("op") or "")
        input_text = None
        if request.body:
            if request.content_type == "application/json":
                try:
                    input_text = compact(json.loads(request.body.decode("utf-8")))
                except ValueError as exc:
                    return ApiResponse.error(400, f"Could not parse JSON content: {exc}")
            else:
                input_text = compact(request.body.decode("utf-8", "replace"))
        await self.client.signal_entity(name, key, operation, input_text)
        return ApiResponse(202)

    async def _list_entities(self, request: ApiRequest, name: str) -> ApiResponse:
        query = InstanceQuery(kind=ENTITY, name=name.lower(), top=request.integer("top") or 100,
                              continuation=request.headers.get("x-ms-continuation-token"))
        page = await self.client.query(query)
        fetch_state = request.flag("fetchState", False)
        entities: list[dict[str, Any]] = []
        for record in page.instances:
            if not record.entity_exists:
                continue
            entity_name, _, key = record.instance_id[1:].partition("@")
            item: dict[str, Any] = {"entityId": {"name": entity_name, "key": key},
                                    "lastOperationTime": record.last_updated_time.isoformat().replace("+00:00", "Z")}
            if fetch_state:
                item["state"] = json.loads(record.entity_state) if record.entity_state else None
            entities.append(item)
        token = (page.continuation or "").encode("latin-1")
        return ApiResponse.json(200, entities, [(b"x-ms-continuation-token", token)])

