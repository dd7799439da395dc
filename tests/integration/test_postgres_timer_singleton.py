"""Timer singleton locks with `--storage postgres`: two hosts with separate data folders on one
schema (machines that share only the server) elect one holder of the listener lock, and the
other takes over when the holder dies, as hosts on one data folder do (tests/unit/timer)."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.integration.test_postgres_blobs import host
from tests.unit.timer.conftest import START, advance, settle
from tests.unit.timer.test_singleton import crash_running_listener, make_host

from funchost.clock import ManualClock
from funchost.triggers.timer.monitor import HOSTS_CONTAINER
from funchost.triggers.timer.singleton import listener_lock_name

pytestmark = pytest.mark.postgres


async def test_two_hosts_on_one_server_elect_one_timer_holder_and_take_over(
        tmp_path: Path, postgres_dsn: str, postgres_schema: str) -> None:
    clock = ManualClock(START)
    first = host(tmp_path, "a", postgres_dsn, postgres_schema, clock)
    second = host(tmp_path, "b", postgres_dsn, postgres_schema, clock)
    try:
        a, ran_a = make_host(clock, first.blobs())
        b, ran_b = make_host(clock, second.blobs())
        await a.start()
        await b.start()
        await settle()
        assert a.is_listening and not b.is_listening
        await advance(clock, 45)  # renewed at 30 s: the lease now runs until 90 s
        assert len(ran_a.requests) == 45 and ran_b.requests == []
        props = await second.blobs().get_blob_properties(HOSTS_CONTAINER, listener_lock_name("testhost", "tick"))
        assert props.lease_state == "leased"
        crash_running_listener()  # the holder dies without releasing
        await settle()
        count_a = len(ran_a.requests)
        await advance(clock, 44)
        assert ran_b.requests == []  # still leased by the dead host
        await advance(clock, 122 - 89)  # B polls at 60 s (leased) and at 120 s (expired at 90 s)
        assert b.is_listening and len(ran_b.requests) >= 1
        assert len(ran_a.requests) == count_a
        await b.stop()
    finally:
        await first.aclose()
        await second.aclose()
