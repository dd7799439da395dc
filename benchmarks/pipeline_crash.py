"""Crash test of the reference pipeline, long setting: two `funchost start` hosts on one data
folder, killed with SIGKILL (and frozen with SIGSTOP/SIGCONT) at random while jobs flow.

    python benchmarks/pipeline_crash.py [--seconds 240] [--jobs 600] [--burst 20] [--freeze-share 0.2]
                                        [--runs 1] [--seed 1] [--postgres [--server-restarts 2]]

`--postgres`: the hosts run `--storage postgres` on a throwaway PostgreSQL server (the machine's
binaries, or FUNCHOST_TEST_POSTGRES_DSN without restarts), each with a data folder of its own once
the queues and blobs are on the server, and the server is restarted while jobs flow; results go to
benchmarks/results/pipeline_crash_postgres.json.

Each run prints and records: jobs accepted, kills, freezes, jobs that needed a second run, and
the invariants: lost (accepted but not final), duplicate effects (more than one ledger entry
for a job), missing effects, rows imported not exactly once, re-POSTed keys answering another
jobId. Output: benchmarks/results/pipeline_crash.json. The CI setting of the same test is
`tests/acceptance/test_pipeline_crash.py`; the scenario is described in `tests/support/crash.py`.
Exits 1 when any run broke an invariant.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.support.crash import CrashSettings, run_crash_test  # noqa: E402
from tests.support.crash_stores import CrashServer  # noqa: E402
from tests.support.postgres import PostgresServer, start_postgres  # noqa: E402

SUMMARY = ("jobs", "kills", "freezes", "server_restarts", "data_folders", "late", "jobs_rerun", "attempts_max", "ledger_resends_absorbed", "intake_503",
           "slowest_job_seconds",
           "intake_connection_errors", "restarts_failed", "settle_seconds")
INVARIANTS = ("lost", "not_completed", "duplicate_effects", "missing_effects", "unknown_entries", "wrong_rows",
              "changed_job_ids", "intake_unexpected")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=240.0)
    parser.add_argument("--jobs", type=int, default=600)
    parser.add_argument("--burst", type=int, default=20)
    parser.add_argument("--freeze-share", type=float, default=0.2)
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--late", type=float, default=600.0,
                        help="after the 150 s settle bound, wait this long for the rest (they count as late)")
    parser.add_argument("--postgres", action="store_true", help="hosts on --storage postgres, server restarted")
    parser.add_argument("--server-restarts", type=int, default=2)
    args = parser.parse_args()
    postgres = start_postgres() if args.postgres else None
    try:
        return record(args, postgres)
    finally:
        if postgres is not None:
            postgres.stop()


def record(args: argparse.Namespace, postgres: PostgresServer | None) -> int:
    runs = []
    for number in range(args.runs):
        settings = CrashSettings(seconds=args.seconds, jobs=args.jobs, burst=args.burst,
                                 freeze_share=args.freeze_share, late_seconds=args.late, seed=args.seed + number,
                                 server_restarts=args.server_restarts if postgres else 0)
        server = None if postgres is None else CrashServer(postgres.dsn, f"crash_{number}_{int(time.time())}",
                                                           postgres.restart)
        started = time.monotonic()
        with tempfile.TemporaryDirectory(prefix="funchost-crash-") as tmp:
            report = run_crash_test(Path(tmp), settings, server).to_dict()
        report["wall_seconds"] = round(time.monotonic() - started, 1)
        runs.append(report)
        figures = ", ".join(f"{name}={len(report[name]) if isinstance(report[name], list) else report[name]}"
                            for name in SUMMARY)
        broken = {name: len(report[name]) for name in INVARIANTS if report[name]}
        print(f"run {number + 1} (seed {settings.seed}): {figures}; "
              f"{'all invariants held' if not broken else f'BROKEN: {broken}'}")
    output = {"python": platform.python_version(), "machine": platform.machine(), "runs": runs,
              "totals": {name: sum(int(r[name]) for r in runs) for name in ("jobs", "kills", "freezes", "jobs_rerun")}
              | {name: sum(len(r[name]) for r in runs) for name in ("late", *INVARIANTS)}}
    name = "pipeline_crash_postgres.json" if postgres is not None else "pipeline_crash.json"
    target = ROOT / "benchmarks" / "results" / name
    target.write_text(json.dumps(output, indent=2) + "\n", encoding="utf-8")
    print(f"totals: {output['totals']}\nwritten to {target.relative_to(ROOT)}")
    return 0 if all(r["ok"] for r in runs) else 1


if __name__ == "__main__":
    sys.exit(main())
