"""The official JavaScript SDKs (@azure/service-bus, @azure/event-hubs from npm, on rhea) against the
AMQP endpoint: several sessions per connection, string message ids, heartbeats (rhea asks for a
60 s idle timeout)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from tests.support.amqp import serve_amqp

from funchost.storage.servicebus import EntityProperties

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "tests" / "support" / "js" / "amqp_check.cjs"


def test_javascript_sdks(tmp_path: Path) -> None:
    node = shutil.which("node")
    if node is None or not (ROOT / "node_modules" / "@azure" / "service-bus").is_dir():
        pytest.fail("this test needs Node.js and `npm ci` (the JavaScript SDKs are devDependencies)")
    with serve_amqp(tmp_path) as served:
        namespace = served.endpoint.router.servicebus
        served.run(namespace.broker.create_queue("jssessions", EntityProperties(requires_session=True)))
        served.run(namespace.ensure_subscription("jstopic", "jssub"))
        done = subprocess.run([node, str(SCRIPT)], capture_output=True, text=True, timeout=180, cwd=ROOT,
                              env={**os.environ, "CONNECTION_STRING": served.connection_string})
    assert done.returncode == 0, done.stderr[-4000:]
    result = json.loads(done.stdout)
    assert result["serviceBus"] == {
        "bodies": ["one", "two", "three"], "firstProperties": {"k": "v"}, "firstId": "m1", "againBody": "two",
        "againDeliveryCount": 1, "peeked": 0, "deadReason": "bad", "deadBody": "three",
    }
    assert result["serviceBusMore"] == {
        "scheduledKept": True, "renewed": True, "deferred": "d", "deleted": "r", "peeked": ["scheduled"],
        "session": ["alpha", "s1", "state-1"], "fan": "fan",
    }
    assert result["eventHubs"] == {"ids": ["0", "1", "2", "3"], "events": ["e1", "e2", "k1"], "lastSequence": 1}
