"""Hosts started at the same moment on a fresh data folder all start, and agree on their keys.

Several processes open everything a first start creates (key files, queue/blob/Event Grid
stores, a jobs DB) in many rounds, each round on a fresh folder and released together by a
barrier. Races this finds: key files written through one fixed temporary name (a process
renames away another's temporary file), `PRAGMA journal_mode=WAL` failing at once with
"database is locked" while another process converts the new file, and hosts creating
different keys and each keeping its own.
"""

from __future__ import annotations

import json
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context
from pathlib import Path

PROCESSES = 4
ROUNDS = 60


def test_processes_starting_at_once_on_fresh_folders_all_start_with_the_same_keys(tmp_path: Path) -> None:
    from tests.support.first_start import start_in_rounds

    context = get_context("spawn")
    with context.Manager() as manager:
        barrier = manager.Barrier(PROCESSES)
        with ProcessPoolExecutor(max_workers=PROCESSES, mp_context=context) as pool:
            futures = [pool.submit(start_in_rounds, str(tmp_path), ROUNDS, barrier) for _ in range(PROCESSES)]
            per_process = [f.result(timeout=300) for f in futures]
    errors = sorted({r["error"] for results in per_process for r in results if "error" in r})
    assert errors == []
    disagreeing = [n for n in range(ROUNDS)
                   if len({json.dumps(results[n], sort_keys=True) for results in per_process}) != 1]
    assert disagreeing == []
    leftovers = sorted(p.name for p in tmp_path.rglob("*.tmp"))
    assert leftovers == []
