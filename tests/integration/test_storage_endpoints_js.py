"""The storage endpoints driven by the official JavaScript SDKs (@azure/storage-blob,
@azure/storage-queue, @azure/data-tables from npm), so the protocol is not tuned to one client.

Runs `funchost storage serve` as a process on free ports and `node` on a script that exercises
the three services (tests/support/js/storage_endpoints_check.cjs)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from tests.acceptance.support import CLI, free_port

from funchost.settings.connections import DEVSTORE_ACCOUNT, DEVSTORE_KEY

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "tests" / "support" / "js" / "storage_endpoints_check.cjs"


@pytest.fixture
def served(tmp_path: Path):  # type: ignore[no-untyped-def]
    ports = [free_port(), free_port(), free_port()]
    log = (tmp_path / "serve.log").open("wb")
    process = subprocess.Popen([sys.executable, "-c", CLI, "storage", "serve", "--data", str(tmp_path / "data"),
                                "--ports", ",".join(map(str, ports))], stdout=log, stderr=subprocess.STDOUT)
    try:
        output = tmp_path / "serve.log"
        for _ in range(300):  # bounded wait for the three endpoints to be announced
            if output.read_text().count("Storage ") >= 3 or process.poll() is not None:
                break
            time.sleep(0.05)
        assert process.poll() is None, output.read_text()
        yield ports
    finally:
        process.terminate()
        process.wait(timeout=20)
        log.close()


def test_javascript_sdks(served: list[int]) -> None:
    node = shutil.which("node")
    if node is None or not (ROOT / "node_modules" / "@azure" / "data-tables").is_dir():
        pytest.fail("this test needs Node.js and `npm ci` (the JavaScript Storage SDKs are devDependencies)")
    blob, queue, table = (f"http://127.0.0.1:{p}/{DEVSTORE_ACCOUNT}" for p in served)
    connection = (f"DefaultEndpointsProtocol=http;AccountName={DEVSTORE_ACCOUNT};AccountKey={DEVSTORE_KEY};"
                  f"BlobEndpoint={blob};QueueEndpoint={queue};TableEndpoint={table};")
    done = subprocess.run([node, str(SCRIPT)], capture_output=True, text=True, timeout=120, cwd=ROOT,
                          env={**os.environ, "CONNECTION_STRING": connection})
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["blobs"] == {
        "smallType": "text/plain", "smallMetadata": {"k": "v"}, "range": "from", "bigSize": 9 * 1024 * 1024 + 5,
        "bigSame": True, "committedBlocks": 3, "top": ["blob:big.bin", "prefix:folder/"], "smallExists": False,
    }
    assert result["queues"] == {
        "received": [["first", 1]], "newReceipt": True, "peeked": ["changed"], "again": ["changed", 2],
        "staleCode": "MessageNotFound", "count": 1,
    }
    assert result["tables"] == {
        "one": {"name": "one", "count": 1, "extra": True, "big": "12345678901n"},  # Int64 read back as a BigInt
        "filtered": ["2", "3"], "remaining": ["1", "3"], "conflict": 409,
    }
