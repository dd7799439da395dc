"""funchost.queue.depth: the depth of each trigger queue and its poison queue, sampled on the
host's clock."""

from __future__ import annotations

from pathlib import Path

from tests.support.otlp import OtlpReceiver

from funchost.telemetry.pipeline import TelemetryPipeline
from funchost.testing import HostHarness, write_app

APP = """
import azure.functions as func

app = func.FunctionApp()


@app.queue_trigger(arg_name="msg", queue_name="orders", connection="AzureWebJobsStorage")
def orders(msg: str) -> None:
    return None
"""


async def test_trigger_queue_depths_are_exported(tmp_path: Path) -> None:
    app = write_app(tmp_path / "app", APP, host_json={"version": "2.0", "telemetryMode": "OpenTelemetry"})
    with OtlpReceiver() as receiver:
        settings = {"OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint, "OTEL_METRIC_EXPORT_INTERVAL": "10000",
                    "AzureWebJobs.orders.Disabled": "true"}  # nothing consumes the queue
        async with HostHarness(app, data_dir=tmp_path / "data", settings=settings) as host:
            for number in range(3):
                await host.queues.send("orders", {"n": number})
            await host.advance(11)  # one sampling interval on the host's clock
            pipeline = host.runtime.services.find(TelemetryPipeline)
            assert pipeline is not None
            pipeline.flush()
            receiver.wait_for(lambda r: "funchost.queue.depth" in r.metrics)
    depths = {point.attributes[0].value.string_value: point.as_int for point in receiver.metrics["funchost.queue.depth"]}
    assert depths["orders"] == 3
    assert "orders-poison" not in depths  # not created yet: nothing to report
