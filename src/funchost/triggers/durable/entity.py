"""``entityTrigger``: an entity, called with batches of operations by the durable service."""

from __future__ import annotations

from funchost.triggers.durable.common import DurableTriggerSupport


class EntityTriggerSupport(DurableTriggerSupport):
    trigger_type = "entityTrigger"


SUPPORT = EntityTriggerSupport()
