"""The blob binding's read/write against the embedded store, and its host.json section."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import azure.functions as func
import pytest
from azure.functions.blob import BlobConverter
from azure.functions.meta import Datum
from tests.support.runtime import make_test_runtime

from funchost.bindings import blob_options
from funchost.bindings.blob import SUPPORT
from funchost.clock import ManualClock
from funchost.errors import AppLoadError, ConfigError, InvocationError
from funchost.indexing.spec import BindingSpec, FunctionSpec
from funchost.invocation.contracts import InvocationRequest, InvocationResult
from funchost.runtime.contracts import Runtime
from funchost.settings.host_json import parse_host_json

from .conftest import START


class NoInvoker:
    async def invoke(self, request: InvocationRequest) -> InvocationResult:  # pragma: no cover - unused
        raise AssertionError("bindings never invoke functions")


def blob_binding(path: str, direction: str = "in", data_type: str | None = None) -> BindingSpec:
    return BindingSpec("doc", "blob", direction, data_type, {"path": path, "connection": "AzureWebJobsStorage"})


def function(*bindings: BindingSpec) -> FunctionSpec:
    trigger = BindingSpec("msg", "queueTrigger", "in", None, {"queueName": "q"}, is_trigger=True)
    return FunctionSpec(name="copy", func=lambda msg: None, trigger=trigger, bindings=(trigger, *bindings),
                        parameters=(), return_binding=None, return_annotation=None, is_async=False,
                        script_file="function_app.py", directory=".", source_line=3)


def request(fn: FunctionSpec, **binding_data: object) -> InvocationRequest:
    return InvocationRequest(function=fn, trigger_value=Datum("x", "string"), binding_data=binding_data)


@pytest.fixture
async def runtime(tmp_path: Path) -> AsyncIterator[Runtime]:
    runtime = make_test_runtime(tmp_path, tmp_path / "data", ManualClock(START), NoInvoker())
    yield runtime
    await runtime.storage.aclose()


async def test_input_reads_bytes_by_default_and_decodes_to_input_stream(runtime):
    blobs = runtime.storage.blobs()
    await blobs.create_container("inbox")
    await blobs.upload_blob("inbox", "inv-1.pdf", b"%PDF")
    binding = blob_binding("inbox/{queueTrigger}.pdf")
    datum = await SUPPORT.read(binding, request(function(binding), QueueTrigger="inv-1"), runtime)
    assert (datum.type, datum.value) == ("bytes", b"%PDF")
    stream = BlobConverter.decode(datum, trigger_metadata=None)
    assert isinstance(stream, func.InputStream) and stream.read() == b"%PDF"
    assert stream.name is None  # the worker gives non-trigger blobs no metadata


async def test_input_as_string_honours_a_bom(runtime):
    blobs = runtime.storage.blobs()
    await blobs.create_container("inbox")
    await blobs.upload_blob("inbox", "t.txt", "\ufeffhé".encode())
    binding = blob_binding("inbox/t.txt", data_type="string")
    datum = await SUPPORT.read(binding, request(function(binding)), runtime)
    assert (datum.type, datum.value) == ("string", "hé")


async def test_missing_blob_or_container_is_none(runtime):
    binding = blob_binding("nowhere/x")
    datum = await SUPPORT.read(binding, request(function(binding)), runtime)
    assert BlobConverter.decode(datum, trigger_metadata=None) is None
    await runtime.storage.blobs().create_container("nowhere")
    datum = await SUPPORT.read(binding, request(function(binding)), runtime)
    assert datum.value is None and datum.type is None


async def test_output_creates_the_container_and_overwrites(runtime):
    binding = blob_binding("out/{name}/{DateTime:yyyy-MM-dd}.txt", "out")
    fn = function(binding)
    await SUPPORT.write(binding, BlobConverter.encode("first", expected_type=str), request(fn, name="a"), runtime)
    await SUPPORT.write(binding, BlobConverter.encode(b"second", expected_type=bytes), request(fn, name="a"), runtime)
    data, props = await runtime.storage.blobs().download_blob("out", "a/2026-12-02.txt")
    assert data == b"second" and props.content_type == "application/octet-stream"


async def test_output_of_none_writes_nothing(runtime):
    binding = blob_binding("out/x", "out")
    await SUPPORT.write(binding, Datum(None, None), request(function(binding)), runtime)
    assert not await runtime.storage.blobs().container_exists("out")


async def test_unresolvable_path_fails_the_invocation(runtime):
    binding = blob_binding("inbox/{missing}")
    with pytest.raises(InvocationError, match="missing"):
        await SUPPORT.read(binding, request(function(binding)), runtime)


@pytest.mark.parametrize("path", ["justcontainer", "", "Bad_Container/x", "c/{unclosed"])
def test_validate_rejects_bad_paths(runtime, path):
    binding = blob_binding(path)
    with pytest.raises(AppLoadError) as info:
        SUPPORT.validate(binding, function(binding), runtime)
    assert info.value.function == "copy"


@pytest.mark.parametrize("path", ["inbox/{name}", "{container}/{name}", "inbox/fixed.txt", "inbox/{rand-guid}"])
def test_validate_accepts_paths(runtime, path):
    binding = blob_binding(path)
    SUPPORT.validate(binding, function(binding), runtime)


def test_host_json_blobs_section():
    options = parse_host_json({"version": "2.0", "extensions": {"blobs": {
        "maxDegreeOfParallelism": 4, "poisonBlobThreshold": 2}}}).extension("blobs")
    assert options == blob_options.BlobsOptions(4, 2)
    default = parse_host_json({"version": "2.0"}).extension("blobs")
    assert default.poison_blob_threshold == 5 and default.max_degree_of_parallelism >= 8
    typo = parse_host_json({"version": "2.0", "extensions": {"blobs": {"poisonBlobTreshold": 2}}})
    assert any("extensions.blobs.poisonBlobTreshold: unknown key ignored" in w for w in typo.warnings)
    with pytest.raises(ConfigError):
        parse_host_json({"version": "2.0", "extensions": {"blobs": {"maxDegreeOfParallelism": 0}}})
