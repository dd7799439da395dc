"""The fault injector's own state: whether any point is armed, read on every message."""

from __future__ import annotations

from funchost.errors import ServiceUnavailable
from funchost.runtime.faults import FaultInjector


async def test_enabled_follows_arm_and_disarm_and_stays_while_a_spent_point_is_kept() -> None:
    faults = FaultInjector()
    assert faults.enabled is False
    faults.arm("queue.delete.before", ServiceUnavailable("unreachable"))
    faults.arm("function.before", RuntimeError("crashed"), times=None)
    assert faults.enabled is True
    faults.disarm("queue.delete.before")
    assert faults.enabled is True  # function.before is still armed
    faults.disarm("function.before")
    assert faults.enabled is False
    faults.arm("queue.put.before", ServiceUnavailable("unreachable"))  # once
    try:
        await faults.hit("queue.put.before")
    except ServiceUnavailable:
        pass
    assert faults.enabled is True  # as before: a spent point keeps its (empty) entry until disarmed
    assert faults.history == [("queue.put.before", {})]
    faults.disarm()
    assert faults.enabled is False
