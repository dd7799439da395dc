"""The Azure Queue storage trigger ("queueTrigger").

listener.py decides when to fetch, processor.py holds the per-message rules, messages.py turns
a message into the invocation the worker would receive; options.py reads host.json.
"""

from __future__ import annotations

import json
import uuid
from typing import Any

from funchost.errors import AppLoadError, ConfigError, InvalidInput, InvalidResourceName
from funchost.indexing.spec import FunctionSpec
from funchost.invocation.contracts import InvocationRequest
from funchost.runtime.contracts import Listener, Runtime, TriggerSupport
from funchost.storage.queue_rules import validate_queue_name
from funchost.storage.queues import QueueMessage
from funchost.triggers.queue.listener import QueueListener
from funchost.triggers.queue.messages import build_request, poison_queue_name
from funchost.triggers.queue.options import QueuesOptions, receive_visibility
from funchost.triggers.queue.processor import QueueProcessor


def queue_name_of(function: FunctionSpec) -> str:
    """The monitored queue: lower-cased before validation, as the extension does."""
    return str(function.trigger.get("queueName") or "").lower()


def queues_options(runtime: Runtime) -> QueuesOptions:
    try:
        options = runtime.options.extension("queues")
    except KeyError:
        return QueuesOptions()
    return options if isinstance(options, QueuesOptions) else QueuesOptions()


class QueueTriggerSupport:
    trigger_type = "queueTrigger"

    def validate(self, function: FunctionSpec, runtime: Runtime) -> None:
        name = queue_name_of(function)
        try:
            validate_queue_name(name)
        except InvalidResourceName as exc:
            raise AppLoadError(f"queueTrigger: {exc}", function=function.name, file=function.script_file,
                               line=function.source_line) from None
        connection = function.trigger.get("connection")
        try:
            runtime.storage.connection(connection, "queue")
        except ConfigError as exc:
            raise AppLoadError(f"queueTrigger: {exc}", function=function.name, file=function.script_file,
                               line=function.source_line) from None
        receive_visibility(runtime.settings)

    def create_listener(self, function: FunctionSpec, runtime: Runtime) -> Listener:
        queue = queue_name_of(function)
        service = runtime.storage.queues(function.trigger.get("connection"))
        options = queues_options(runtime)
        visibility = receive_visibility(runtime.settings)
        processor = QueueProcessor(function, runtime, service, queue, poison_queue_name(queue), options, visibility)
        return QueueListener(function, runtime, service, queue, processor, options, visibility)

    def describe(self, function: FunctionSpec, runtime: Runtime) -> str:
        return "queueTrigger"

    async def admin_request(self, function: FunctionSpec, runtime: Runtime, body: Any) -> InvocationRequest:
        """``{"input": "..."}`` becomes a message-like invocation (new id, dequeue count 0)."""
        if not isinstance(body, dict) or "input" not in body or body["input"] is None:
            raise InvalidInput("the request body must be a JSON object with an 'input' property")
        value = body["input"]
        text = value if isinstance(value, str) else json.dumps(value)
        now = runtime.clock.now()
        message = QueueMessage(id=str(uuid.uuid4()), content=text, dequeue_count=0, insertion_time=now,
                               expiration_time=None, next_visible_time=None, pop_receipt=None)
        return build_request(function, message, text.encode("utf-8"), queue_name_of(function), now)


SUPPORT: TriggerSupport = QueueTriggerSupport()
