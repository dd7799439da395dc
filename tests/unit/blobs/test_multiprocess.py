"""Several processes on one data folder: one lease winner, unique ordered sequencers and ETags."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

from funchost.clock import SystemClock
from funchost.storage.sqlite.blobs import SqliteBlobService

WORKER = """
import asyncio, json, sys
from pathlib import Path
from funchost.clock import SystemClock
from funchost.errors import LeaseConflict
from funchost.storage.sqlite.blobs import SqliteBlobService

async def main(folder, me):
    svc = SqliteBlobService(Path(folder), "acct", SystemClock())
    etags = [(await svc.upload_blob("box", f"{me}-{i}", b"x")).etag for i in range(15)]
    try:
        won = bool(await svc.acquire_lease("box", "lock", duration=60))
    except LeaseConflict:
        won = False
    await svc.aclose()
    print(json.dumps({"won": won, "etags": etags}))

asyncio.run(main(sys.argv[1], sys.argv[2]))
"""


async def test_three_processes_share_one_store(tmp_path: Path):
    folder = tmp_path / "acct"
    setup = SqliteBlobService(folder, "acct", SystemClock())
    await setup.create_container("box")
    await setup.upload_blob("box", "lock", b"")
    procs = [subprocess.Popen([sys.executable, "-c", WORKER, str(folder), f"p{i}"], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for i in range(3)]
    results = []
    for proc in procs:
        out, err = await asyncio.to_thread(proc.communicate, timeout=60)
        assert proc.returncode == 0, err
        results.append(json.loads(out))
    assert sum(r["won"] for r in results) == 1
    etags = [e for r in results for e in r["etags"]]
    assert len(set(etags)) == 45
    changes = await setup.changes_since(None, limit=1000)
    sequencers = [c.sequencer for c in changes]
    assert len(changes) == 46 and sequencers == sorted(set(sequencers))
    assert len((await setup.list_blobs("box")).items) == 46
    await setup.aclose()
