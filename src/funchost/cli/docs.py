"""`funchost docs`: the embedded document store (Cosmos DB-like) from the command line.

    funchost docs create -d db -c items --partition-key-path /pk
    funchost docs upsert -d db -c items --create --partition-key-path /pk '{"id": "1", "pk": "a"}'
    funchost docs get -d db -c items 1 --partition-key a
    funchost docs list -d db -c items            (no -c: containers; no -d: databases)
    funchost docs delete -d db -c items 1 --partition-key a
    funchost docs status -d db -c items          (estimated change feed lag per lease and total)

``--connection`` names the Cosmos DB account (default ``CosmosDB``), as the bindings do.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from typing import Any

from funchost.cli.common import add_storage_options, fail, open_storage, report_errors
from funchost.documents import DEFAULT_CONNECTION, CosmosClient


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser("docs", help="documents in the embedded Cosmos DB-like store")
    sub = parser.add_subparsers(dest="docs_command", metavar="ACTION")

    def action(name: str, help: str, handler: Any, *, container: bool = True) -> argparse.ArgumentParser:
        p: argparse.ArgumentParser = sub.add_parser(name, help=help)
        add_storage_options(p, default_connection=DEFAULT_CONNECTION)
        p.add_argument("-d", "--database", required=container, default=None)
        p.add_argument("-c", "--container", required=container, default=None)
        p.set_defaults(handler=report_errors(handler))
        return p

    create = action("create", "create a database and container (if missing)", _create)
    create.add_argument("--partition-key-path", default="/id", help="the container's partition key (default /id)")
    create.add_argument("--partitions", type=int, default=1, help="physical partitions (default 1)")
    upsert = action("upsert", "create or replace documents (JSON object or array; @file or - for stdin)", _upsert)
    upsert.add_argument("document")
    upsert.add_argument("--create", action="store_true", help="create the database and container if missing")
    upsert.add_argument("--partition-key-path", default="/id", help="for --create (default /id)")
    upsert.add_argument("--partitions", type=int, default=1, help="physical partitions for --create (default 1)")
    for name, handler in (("get", _get), ("delete", _delete)):
        p = action(name, f"{name} one document", handler)
        p.add_argument("id")
        p.add_argument("--partition-key", default=None, help="partition key value (default: the id)")
    action("list", "list databases, containers or documents", _list, container=False)
    status = action("status", "change feed: estimated lag per lease and in total", _status)
    status.add_argument("--lease-container", default="leases")
    status.add_argument("--lease-database", default=None)
    status.add_argument("--lease-connection", default=None)
    status.add_argument("--prefix", default="", help="leaseContainerPrefix of the trigger")
    parser.set_defaults(handler=lambda args: parser.print_help() or 2)


def _client(args: argparse.Namespace) -> tuple[CosmosClient, Any]:
    ctx = open_storage(args)
    return CosmosClient(ctx.storage.documents(args.connection)), ctx


def _read_documents(text: str) -> list[dict[str, Any]]:
    if text == "-":
        text = sys.stdin.read()
    elif text.startswith("@"):
        with open(text[1:], encoding="utf-8") as f:
            text = f.read()
    value = json.loads(text)
    docs = value if isinstance(value, list) else [value]
    if not all(isinstance(d, dict) for d in docs):
        raise ValueError("documents must be JSON objects")
    return docs


def _create(args: argparse.Namespace) -> int:
    client, _ = _client(args)
    db = client.create_database_if_not_exists(args.database)
    container = db.create_container_if_not_exists(args.container, args.partition_key_path,
                                                  partitions=args.partitions)
    key = container.read()["partitionKey"]["paths"][0]  # an existing container keeps its own
    print(f"container '{args.container}' in database '{args.database}' exists (partition key {key})")
    return 0


def _upsert(args: argparse.Namespace) -> int:
    try:
        docs = _read_documents(args.document)
    except (ValueError, OSError) as exc:
        return fail(f"invalid documents: {exc}")
    client, _ = _client(args)
    db = client.create_database_if_not_exists(args.database) if args.create else \
        client.get_database_client(args.database)
    container = db.create_container_if_not_exists(args.container, args.partition_key_path,
                                                  partitions=args.partitions) if args.create else \
        db.get_container_client(args.container)
    for doc in docs:
        saved = container.upsert_item(doc)
        print(json.dumps({"id": saved["id"], "_etag": saved["_etag"], "_ts": saved["_ts"]}))
    return 0


def _get(args: argparse.Namespace) -> int:
    client, _ = _client(args)
    container = client.get_database_client(args.database).get_container_client(args.container)
    print(json.dumps(container.read_item(args.id, args.partition_key or args.id), indent=2))
    return 0


def _delete(args: argparse.Namespace) -> int:
    client, _ = _client(args)
    container = client.get_database_client(args.database).get_container_client(args.container)
    container.delete_item(args.id, args.partition_key or args.id)
    print(f"deleted {args.id}")
    return 0


def _list(args: argparse.Namespace) -> int:
    client, _ = _client(args)
    if not args.database:
        for db in client.list_databases():
            print(db["id"])
    elif not args.container:
        for c in client.get_database_client(args.database).list_containers():
            print(f"{c['id']}\tpartitionKey={c['partitionKey']['paths'][0]}")
    else:
        for doc in client.get_database_client(args.database).get_container_client(args.container).read_all_items():
            print(json.dumps(doc))
    return 0


def _status(args: argparse.Namespace) -> int:
    from funchost.documents.estimator import estimate

    ctx = open_storage(args)
    store = ctx.storage.documents(args.connection)
    lease_store = ctx.storage.documents(args.lease_connection or args.connection)
    result = asyncio.run(estimate(store, args.database, args.container, lease_store,
                                  args.lease_database or args.database, args.lease_container, args.prefix))
    if not result.leases:
        print("no leases yet (the trigger has not started); remaining work estimated as 1")
        return 0
    print("lease\towner\tcontinuation\testimated lag")
    for e in result.leases:
        print(f"{e.lease_token}\t{e.owner or '-'}\t{e.continuation or '-'}\t{e.estimated_lag}")
    print(f"total\t\t\t{result.total}")
    return 0
