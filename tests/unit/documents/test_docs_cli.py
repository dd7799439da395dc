"""`funchost docs`: the command the Cosmos DB trigger's missing-container message points to."""

from __future__ import annotations

from pathlib import Path

import pytest

from funchost.cli import main
from funchost.documents import connect


def test_create_makes_the_database_and_container_and_keeps_an_existing_one(tmp_path: Path,
                                                                        capsys: pytest.CaptureFixture[str]) -> None:
    args = ["docs", "create", "--data", str(tmp_path), "-d", "db", "-c", "items", "--partition-key-path", "/pk"]
    assert main(args) == 0
    assert main([*args[:-1], "/other"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out == ["container 'items' in database 'db' exists (partition key /pk)"] * 2
    container = connect("CosmosDB", data_dir=tmp_path).get_database_client("db").get_container_client("items")
    assert container.read()["partitionKey"]["paths"] == ["/pk"]


def test_docs_commands_say_their_connection_defaults_to_cosmosdb(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["docs", "list", "--help"])
    help_text = capsys.readouterr().out
    assert "(default CosmosDB)" in help_text and "AzureWebJobsStorage" not in help_text
