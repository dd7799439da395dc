"""Starts the host's telemetry pipeline with the host and stops it last but storage
(`registry.HOST_SERVICE_MODULES`): the spans of the last invocations are exported at stop, and
queue depths are sampled while listeners run. Nothing when the piece's factory made no pipeline.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
from typing import TYPE_CHECKING

from funchost.runtime.contracts import Runtime

if TYPE_CHECKING:
    from funchost.telemetry.pipeline import TelemetryPipeline


class TelemetryService:
    def __init__(self, pipeline: TelemetryPipeline, sampler: asyncio.Task[None] | None) -> None:
        self.pipeline = pipeline
        self._sampler = sampler

    async def stop(self) -> None:
        if self._sampler is not None:
            self._sampler.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._sampler
        await asyncio.to_thread(self.pipeline.stop)


async def start(runtime: Runtime) -> TelemetryService | None:
    # A pipeline exists only if the piece's factory imported its module to make one: looked up,
    # not imported, so a host without telemetry never loads the OpenTelemetry SDK (start-up time).
    module = sys.modules.get("funchost.telemetry.pipeline")
    if module is None:
        return None
    pipeline: TelemetryPipeline | None = runtime.services.find(module.TelemetryPipeline)
    if pipeline is None:
        return None
    await asyncio.to_thread(pipeline.start)
    sampler = None
    if pipeline.queue_depths is not None and pipeline.options.metrics.endpoint:
        sampler = asyncio.get_running_loop().create_task(
            pipeline.queue_depths.run(runtime, pipeline.options.metric_export_interval))
    return TelemetryService(pipeline, sampler)
