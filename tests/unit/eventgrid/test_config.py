"""eventgrid.json: defaults, strict parsing with key paths, and the JSON Schema shipped with it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from funchost.errors import ConfigError
from funchost.eventgrid.config import SCHEMA_FILE, default_config, load_config, parse_config

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "eventgrid" / "eventgrid.json"


def test_defaults_subscribe_every_function_to_each_default_topic() -> None:
    cfg = default_config(["b", "a"])
    assert set(cfg.topics) == {"default", "cloudevents", "storage"}
    assert cfg.topics["storage"].kind == "storage"
    assert sorted(s.name for s in cfg.subscriptions_of("default")) == ["default-a", "default-b"]
    assert all(s.retry.max_delivery_attempts == 30 and s.retry.event_time_to_live_minutes == 1440
               for s in cfg.subscriptions)


def test_example_file_loads(tmp_path: Path) -> None:
    (tmp_path / "eventgrid.json").write_text(EXAMPLE.read_text())
    cfg = load_config(tmp_path, ["on_blob_event"])
    assert cfg.from_file and cfg.subscription("blob-created").dead_letter.container == "eventgrid-deadletters"


@pytest.mark.parametrize("raw,path,message", [
    ({"topic": {}}, "eventgrid.json: topic", "unknown key (did you mean 'topics'?)"),
    ({"topics": {"t1": {"inputSchema": "Custom"}}}, "eventgrid.json: topics.t1.inputSchema", "must be one of"),
    ({"topics": {"t1": {}}, "subscriptions": [{"name": "s1", "topic": "nope", "destination": {"type": "webhook",
      "endpointUrl": "http://x"}}]}, "eventgrid.json: subscriptions[0].topic", "unknown topic 'nope'"),
    ({"topics": {"t1": {}}, "subscriptions": [{"name": "s1", "topic": "t1", "destination": {"type": "function",
      "functionName": "ghost"}}]}, "eventgrid.json: subscriptions[0].destination.functionName", "no Event Grid"),
    ({"topics": {"t1": {}}, "subscriptions": [{"name": "s1", "topic": "t1", "destination": {"type": "webhook",
      "endpointUrl": "http://x"}, "retryPolicy": {"maxDeliveryAttempts": 31}}]},
     "eventgrid.json: subscriptions[0].retryPolicy.maxDeliveryAttempts", "must be <= 30"),
    ({"topics": {"t1": {}}, "subscriptions": [{"name": "s1", "topic": "t1", "destination": {"type": "webhook",
      "endpointUrl": "http://x"}, "filter": {"subjectBegins": "x"}}]},
     "eventgrid.json: subscriptions[0].filter.subjectBegins", "unknown key"),
    ({"topics": {"t1": {}}, "subscriptions": [{"name": "s1", "topic": "t1", "destination": {"type": "ftp"}}]},
     "eventgrid.json: subscriptions[0].destination.type", "must be one of"),
])
def test_errors_name_the_key_path(raw: dict, path: str, message: str) -> None:
    with pytest.raises(ConfigError) as info:
        parse_config(raw, known_functions={"f"})
    assert info.value.path == path and message in str(info.value)


def test_schema_file_is_valid_json_and_covers_the_parser() -> None:
    schema = json.loads(SCHEMA_FILE.read_text())
    sub = schema["properties"]["subscriptions"]["items"]["properties"]
    assert {"destination", "filter", "retryPolicy", "deadLetterDestination", "maxEventsPerBatch",
            "preferredBatchSizeInKilobytes", "eventDeliverySchema"} <= set(sub)
    from funchost.eventgrid.filters import OPERATORS
    ops = sub["filter"]["properties"]["advancedFilters"]["items"]["properties"]["operatorType"]["enum"]
    assert sorted(ops) == OPERATORS
