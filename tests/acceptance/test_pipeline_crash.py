"""Crash test of the reference pipeline, CI setting: two hosts on one data folder, killed (and
now and then frozen) at random while jobs flow. The longer setting and the recorded figures:
`benchmarks/pipeline_crash.py`, benchmarks/README.md."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.support.crash import CrashSettings, run_crash_test

pytestmark = pytest.mark.acceptance

CI = CrashSettings(seconds=20, jobs=48, burst=8, freeze_share=0.2, freeze_seconds=(1.0, 3.0),
                   seed=12)


def test_jobs_survive_random_kills_of_two_hosts_on_one_data_folder(tmp_path: Path) -> None:
    report = run_crash_test(tmp_path, CI)
    figures = json.dumps(report.to_dict(), indent=1)
    assert report.kills >= 3 and report.kills + report.freezes >= 5, figures  # the hosts really were disrupted
    assert report.restarts_failed == 0, figures  # beside the other host, busy or frozen on the storage ports
    assert report.jobs == CI.jobs, figures
    assert report.lost == [] and report.not_completed == [], figures
    assert report.duplicate_effects == [] and report.missing_effects == [] and report.unknown_entries == [], figures
    assert report.wrong_rows == [] and report.changed_job_ids == [] and report.intake_unexpected == [], figures
