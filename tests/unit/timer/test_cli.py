import argparse
import json
from pathlib import Path

import pytest

from funchost.cli import timer as timer_cli
from funchost.cli.timer import master_key
from funchost.errors import ConfigError
from funchost.testing import write_app

APP = """
import azure.functions as func

app = func.FunctionApp()

@app.timer_trigger(schedule="0 30 2 * * *", arg_name="timer")
def nightly(timer: func.TimerRequest) -> None:
    pass

@app.timer_trigger(schedule="*/5 * * * * *", arg_name="timer")
def fast(timer: func.TimerRequest) -> None:
    pass
"""


def test_timer_list_shows_schedules_and_next_occurrences(tmp_path: Path, capsys, monkeypatch) -> None:
    app = write_app(tmp_path / "app", APP, settings={"WEBSITE_TIME_ZONE": "Europe/Berlin"})
    monkeypatch.delenv("WEBSITE_TIME_ZONE", raising=False)
    parser = argparse.ArgumentParser()
    timer_cli.register(parser.add_subparsers())
    args = parser.parse_args(["timer", "list", "--app", str(app), "--data", str(tmp_path / "data"), "--json"])
    assert args.handler(args) == 0
    rows = {row["function"]: row for row in map(json.loads, capsys.readouterr().out.splitlines())}
    assert rows["nightly"]["timeZone"] == "Europe/Berlin"
    assert rows["nightly"]["useMonitor"] is True and rows["nightly"]["status"] is None
    assert len(rows["nightly"]["next"]) == 5
    assert all("T02:30:00+0" in t for t in rows["nightly"]["next"])
    assert rows["fast"]["useMonitor"] is False


def test_master_key_comes_from_the_data_folder(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.delenv("FUNCHOST_MASTER_KEY", raising=False)
    app = write_app(tmp_path / "app", APP)
    args = argparse.Namespace(key=None, app=str(app), data=str(tmp_path / "data"))
    with pytest.raises(ConfigError, match="no master key"):
        master_key(args)
    keys = tmp_path / "data" / "keys"
    keys.mkdir(parents=True)
    (keys / "host.json").write_text(json.dumps({"masterKey": {"name": "master", "value": "stored-key"}}))
    assert master_key(args) == "stored-key"
    monkeypatch.setenv("FUNCHOST_MASTER_KEY", "from-env")
    assert master_key(args) == "from-env"
