"""Crash test of the reference pipeline, CI setting: two hosts on one data folder, killed (and
now and then frozen) at random while jobs flow; and two hosts with separate data folders on one
PostgreSQL server (`--storage postgres`), which is restarted meanwhile. The longer setting and the
recorded figures: `benchmarks/pipeline_crash.py`, benchmarks/README.md."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.support.crash import CrashReport, CrashSettings, run_crash_test
from tests.support.crash_stores import CrashServer
from tests.support.postgres import PostgresServer

pytestmark = pytest.mark.acceptance

CI = CrashSettings(seconds=20, jobs=48, burst=8, freeze_share=0.2, freeze_seconds=(1.0, 3.0),
                   seed=12)
CI_POSTGRES = CrashSettings(seconds=20, jobs=48, burst=8, freeze_share=0.2, freeze_seconds=(1.0, 3.0),
                            server_restarts=1, seed=23)


def test_jobs_survive_random_kills_of_two_hosts_on_one_data_folder(tmp_path: Path) -> None:
    assert_survived(run_crash_test(tmp_path, CI), CI)


@pytest.mark.postgres
def test_jobs_survive_kills_of_two_hosts_on_separate_folders_and_a_postgres_restart(
        tmp_path: Path, postgres_server: PostgresServer, postgres_schema: str) -> None:
    server = CrashServer(postgres_server.dsn, postgres_schema, postgres_server.restart)
    report = run_crash_test(tmp_path, CI_POSTGRES, server)
    assert report.server_restarts == 1, json.dumps(report.to_dict(), indent=1)
    assert_survived(report, CI_POSTGRES)


def assert_survived(report: CrashReport, settings: CrashSettings) -> None:
    figures = json.dumps(report.to_dict(), indent=1)
    assert report.kills >= 3 and report.kills + report.freezes >= 5, figures  # the hosts really were disrupted
    assert report.restarts_failed == 0, figures  # beside the other host, busy or frozen on the storage ports
    assert report.jobs == settings.jobs, figures
    assert report.lost == [] and report.not_completed == [], figures
    assert report.duplicate_effects == [] and report.missing_effects == [] and report.unknown_entries == [], figures
    assert report.wrong_rows == [] and report.changed_job_ids == [] and report.intake_unexpected == [], figures
