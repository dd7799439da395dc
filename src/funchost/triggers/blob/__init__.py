"""The Azure Blob storage trigger ("blobTrigger"), as the Storage Blobs extension (v5) runs it.

Two stages share one internal queue per host (docs/blobs.md, "Blob trigger"):

* discovery: the polling source's strategies find new blob versions (scan.py), receipts make
  each version run once per function across restarts and hosts (receipts.py, executor.py); the
  Event Grid source's webhook turns events into messages instead (webhook.py);
* execution: the shared queue listener runs the function for each message, with the queue
  trigger's retries and a poison queue (processor.py, trigger_data.py).

hub.py holds what a host's blob functions share; listener.py registers one function with it;
paths.py parses and matches ``path`` patterns; options.py reads ``extensions.blobs``.
"""

from __future__ import annotations

from typing import Any

from funchost.bindings.blob import split_path
from funchost.errors import (
    AppLoadError,
    BlobNotFound,
    ConfigError,
    ContainerNotFound,
    InvalidInput,
    InvalidResourceName,
)
from funchost.indexing.spec import FunctionSpec
from funchost.invocation.contracts import InvocationRequest
from funchost.runtime.contracts import Listener, Runtime, TriggerSupport
from funchost.storage.blob_rules import check_container_name
from funchost.triggers.blob.hub import BlobTriggerHub
from funchost.triggers.blob.listener import BlobTriggerListener, blob_target
from funchost.triggers.blob.options import SOURCE_EVENT_GRID, trigger_source
from funchost.triggers.blob.paths import PathPatternError, parse_trigger_path
from funchost.triggers.blob.trigger_data import prepare

HOST_CALL_REASON = "This function was programmatically called via the host APIs."
FLEX_MESSAGE = ("The Flex Consumption SKU only supports EventGrid as the source for BlobTrigger functions. "
                "Please update function '{name}' to use EventGrid. For more information see "
                "https://aka.ms/blob-trigger-eg.")


def _error(function: FunctionSpec, message: str) -> AppLoadError:
    return AppLoadError(f"blobTrigger: {message}", function=function.name, file=function.script_file,
                        line=function.source_line)


class BlobTriggerSupport:
    trigger_type = "blobTrigger"

    def validate(self, function: FunctionSpec, runtime: Runtime) -> None:
        trigger = function.trigger
        try:
            pattern = parse_trigger_path(trigger.get("path"))
            if not pattern.is_fixed:
                check_container_name(pattern.container)  # the extension leaves this to storage errors
            source = trigger_source(trigger.get("source"))
        except (PathPatternError, InvalidResourceName, ValueError) as exc:
            raise _error(function, str(exc)) from None
        if (runtime.settings.get("WEBSITE_SKU") or "").lower() == "flexconsumption" and source != SOURCE_EVENT_GRID:
            raise _error(function, FLEX_MESSAGE.format(name=function.name))
        connection = trigger.get("connection")
        try:  # the trigger needs the account's blobs, and its queues for the poison queue
            runtime.storage.connection(connection, "blob")
            runtime.storage.connection(connection, "queue")
        except ConfigError as exc:
            raise _error(function, str(exc)) from None

    def create_listener(self, function: FunctionSpec, runtime: Runtime) -> Listener:
        return BlobTriggerListener(function, runtime)

    def describe(self, function: FunctionSpec, runtime: Runtime) -> str:
        return "blobTrigger"

    async def admin_request(self, function: FunctionSpec, runtime: Runtime, body: Any) -> InvocationRequest:
        """``{"input": "container/blob"}``: the blob must exist (BlobsExtensionConfigProvider)."""
        if not isinstance(body, dict) or not isinstance(body.get("input"), str):
            raise InvalidInput("the request body must be a JSON object with an 'input' blob path")
        try:
            container, name = split_path(body["input"].strip())
        except InvalidResourceName as exc:
            raise InvalidInput(str(exc)) from None
        target = blob_target(function, runtime, BlobTriggerHub.of(runtime))
        try:
            props = await target.service.get_blob_properties(container, name)
            prepared = await prepare(target, props, if_match=props.etag, details={})
        except (BlobNotFound, ContainerNotFound):
            raise InvalidInput(f"blob '{container}/{name}' does not exist") from None
        prepared.request.reason = HOST_CALL_REASON
        return prepared.request


SUPPORT: TriggerSupport = BlobTriggerSupport()
