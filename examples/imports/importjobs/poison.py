"""Poison handling: a message that failed maxDequeueCount times needs investigation.

It is not a business error. The raw body goes to the quarantine container (restrict access to
operators: it may hold personal data), the job becomes NeedsAttention, an alert is raised
(metric + one ERROR line with JobId, MessageHash, QueueMessageId, DequeueCount,
FunctionVersion). The raw body is never logged.
"""

from __future__ import annotations

import azure.functions as func

from funchost.reliability import PoisonMessage, QuarantineRecord
from importjobs.context import Pipeline


async def quarantine(msg: func.QueueMessage, queue_name: str, pipeline: Pipeline) -> QuarantineRecord:
    return await pipeline.quarantine.handle(PoisonMessage.from_queue_message(msg, queue_name))
