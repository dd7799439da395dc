"""Older SDK releases against the AMQP endpoint, from a virtualenv of pinned versions
(`.venv/pinned-sdks`, made by scripts/setup or here when missing): azure-servicebus 7.14.0 and
azure-eventhub 5.12.2, the oldest releases that honour `UseDevelopmentEmulator=true` (earlier
ones always speak TLS on 5671). Their decoders read performatives by position without padding,
which the endpoint's full field lists satisfy."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.support.amqp import serve_amqp

from funchost.storage.servicebus import EntityProperties

ROOT = Path(__file__).resolve().parents[2]
VENV = ROOT / ".venv" / "pinned-sdks"
PINS = ("azure-servicebus==7.14.0", "azure-eventhub==5.12.2")
SCRIPT = ROOT / "tests" / "support" / "pinned_sdk_check.py"


def pinned_python() -> Path:
    python = VENV / "bin" / "python"
    marker = VENV / "pins.txt"
    if not python.exists() or not marker.exists() or marker.read_text() != "\n".join(PINS):
        subprocess.run([sys.executable, "-m", "venv", "--clear", str(VENV)], check=True, timeout=300)
        subprocess.run([str(python), "-m", "pip", "install", "-q", *PINS], check=True, timeout=600)
        marker.write_text("\n".join(PINS))
    return python


def test_pinned_older_sdks(tmp_path: Path) -> None:
    python = pinned_python()
    with serve_amqp(tmp_path) as served:
        broker = served.endpoint.router.servicebus.broker
        served.run(broker.create_queue("pinnedsessions", EntityProperties(requires_session=True)))
        done = subprocess.run([str(python), str(SCRIPT)], capture_output=True, text=True, timeout=300,
                              env={**os.environ, "CONNECTION_STRING": served.connection_string})
    assert done.returncode == 0, done.stderr[-4000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["serviceBus"] == {
        "bodies": ["one", "two", "three"], "again": ["two", 1], "peeked": 0, "dead": ["three", "bad"],
        "session": ["s", "s1", "st"],
    }
    assert result["eventHubs"] == {"ids": ["0", "1", "2", "3"], "events": ["e1", "e2", "k1"], "last": 1}
