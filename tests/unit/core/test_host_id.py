"""The host ID derived from the app folder follows the host ID rules, so the names built from it
(the blob trigger's queue, lock and receipt blobs) are valid storage names."""

from __future__ import annotations

from pathlib import Path

import pytest

from funchost.host import host_id_for
from funchost.settings.app_settings import AppSettings
from funchost.storage.queue_rules import validate_queue_name
from funchost.triggers.blob.messages import host_queue_name

NO_SETTINGS = AppSettings({}, environ={})


@pytest.mark.parametrize(("folder", "expected"), [
    ("hello", "hello"),
    ("My App", "my-app"),
    ("blob_functions__blob_functions_stein", "blob-functions-blob-functions-st"),  # the worker's e2e app
    ("--x--", "x"),
    ("___", "app"),
    ("a" * 31 + "_b", "a" * 31),  # cut at 32, no trailing dash
])
def test_derived_host_ids_follow_the_rules(folder: str, expected: str) -> None:
    host_id = host_id_for(Path("/apps") / folder, NO_SETTINGS)
    assert host_id == expected
    assert validate_queue_name(host_queue_name(host_id)) == host_queue_name(host_id)


def test_a_configured_host_id_wins() -> None:
    assert host_id_for(Path("/apps/x"), AppSettings({"AzureFunctionsWebHost__hostid": "my-id"}, environ={})) == "my-id"
