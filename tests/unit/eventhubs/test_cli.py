"""`funchost eventhubs send|list|checkpoints` on a data folder."""

from __future__ import annotations

import json

from funchost.cli import main


def test_send_list_and_checkpoints(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    app = tmp_path / "app"
    app.mkdir()
    data = ["--app", str(app)]
    assert main(["eventhubs", "send", "telemetry", "hello", "--count", "3", "--partition-key", "d1",
                 "--property", "kind=test", *data]) == 0
    assert "sent 3 event(s) to 'telemetry'" in capsys.readouterr().out
    assert main(["eventhubs", "send", "telemetry", "x", "--partition-id", "0", "--output", "json", *data]) == 0
    sent = json.loads(capsys.readouterr().out)
    assert sent["events"] == [{"partitionId": "0", "sequenceNumber": 0, "offset": "0"}]
    assert main(["eventhubs", "list", "--output", "json", *data]) == 0
    [hub] = json.loads(capsys.readouterr().out)["hubs"]
    assert hub["name"] == "telemetry" and hub["partitionCount"] == 4
    assert sum(p["retainedEvents"] for p in hub["partitions"]) == 4
    assert main(["eventhubs", "checkpoints", "telemetry", "--output", "json", *data]) == 0
    rows = json.loads(capsys.readouterr().out)["partitions"]
    assert sum(r["unprocessed"] for r in rows) == 4 and all(r["checkpointSequenceNumber"] is None for r in rows)
    assert main(["eventhubs", "checkpoints", "telemetry", *data]) == 0
    assert "UNPROCESSED" in capsys.readouterr().out


def test_bad_input_is_one_clear_line(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    assert main(["eventhubs", "send", "bad name", "x", "--app", str(tmp_path)]) == 1
    assert "error: InvalidResourceName: the event hub name 'bad name' is invalid" in capsys.readouterr().err
    assert main(["eventhubs", "send", "h", "x", "--property", "novalue", "--app", str(tmp_path)]) == 1
