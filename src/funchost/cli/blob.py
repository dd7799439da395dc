"""`funchost blob upload|download|list|delete`: the local blob store (or Azure/Azurite with --storage azure)."""

from __future__ import annotations

import argparse
import asyncio
import mimetypes
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, BinaryIO

from funchost.cli.common import Progress, StorageContext, add_storage_options, open_storage, report_errors
from funchost.errors import ContainerNotFound, InvalidInput
from funchost.storage.blobs import BlobService

READ_SIZE = 1024 * 1024
DOWNLOAD_RANGE = 4 * 1024 * 1024


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser("blob", help="upload, download, list and delete blobs")
    commands = parser.add_subparsers(dest="blob_command", metavar="ACTION", required=True)

    upload = commands.add_parser("upload", help="upload a file or stdin (creates the container if missing)")
    upload.add_argument("container")
    upload.add_argument("name", help="blob name")
    upload.add_argument("file", nargs="?", default="-", help="file to upload ('-' or absent: stdin)")
    upload.add_argument("--content-type", default=None, help="default: guessed from the file name")
    upload.add_argument("--no-overwrite", action="store_true", help="fail if the blob exists")
    upload.add_argument("--metadata", action="append", default=[], metavar="KEY=VALUE")
    add_storage_options(upload)
    upload.set_defaults(handler=_upload)

    download = commands.add_parser("download", help="download to a file or stdout")
    download.add_argument("container")
    download.add_argument("name")
    download.add_argument("file", nargs="?", default="-", help="destination ('-' or absent: stdout)")
    download.add_argument("--version-id", default=None)
    add_storage_options(download)
    download.set_defaults(handler=_download)

    listing = commands.add_parser("list", help="list containers, or the blobs of one container")
    listing.add_argument("container", nargs="?", default=None)
    listing.add_argument("--prefix", default=None)
    add_storage_options(listing)
    listing.set_defaults(handler=_list)

    delete = commands.add_parser("delete", help="delete a blob")
    delete.add_argument("container")
    delete.add_argument("name")
    add_storage_options(delete)
    delete.set_defaults(handler=_delete)


def _run(args: argparse.Namespace, work: Callable[[BlobService, StorageContext], Awaitable[int]]) -> int:
    async def main() -> int:
        ctx = open_storage(args)
        try:
            return await work(ctx.storage.blobs(args.connection), ctx)
        finally:
            await ctx.storage.aclose()

    return asyncio.run(main())


def _read_all(stream: BinaryIO, total: int | None, label: str) -> bytes:
    progress = Progress(total, label)
    parts = []
    while chunk := stream.read(READ_SIZE):
        parts.append(chunk)
        progress.advance(len(chunk))
    progress.finish()
    return b"".join(parts)


def _metadata(pairs: list[str]) -> dict[str, str]:
    result = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise InvalidInput(f"--metadata expects KEY=VALUE, got {pair!r}")
        result[key] = value
    return result


@report_errors
def _upload(args: argparse.Namespace) -> int:
    metadata = _metadata(args.metadata)
    if args.file == "-":
        data = _read_all(sys.stdin.buffer, None, "reading stdin (bytes)")
        content_type = args.content_type
    else:
        path = Path(args.file)
        with path.open("rb") as f:
            data = _read_all(f, path.stat().st_size, f"reading {path.name} (bytes)")
        content_type = args.content_type or mimetypes.guess_type(path.name)[0]

    async def work(service: BlobService, ctx: StorageContext) -> int:
        upload = dict(content_type=content_type, metadata=metadata, overwrite=not args.no_overwrite)
        try:
            props = await service.upload_blob(args.container, args.name, data, **upload)
        except ContainerNotFound:
            await service.create_container(args.container, exist_ok=True)
            print(f"created container '{args.container}'", file=sys.stderr)
            props = await service.upload_blob(args.container, args.name, data, **upload)
        print(f"uploaded {args.container}/{args.name}: {props.size} bytes, ETag {props.etag}"
              + (f", version {props.version_id}" if props.version_id else ""))
        return 0

    return _run(args, work)


@report_errors
def _download(args: argparse.Namespace) -> int:
    async def work(service: BlobService, ctx: StorageContext) -> int:
        props = await service.get_blob_properties(args.container, args.name, version_id=args.version_id)
        to_stdout = args.file == "-"
        out: BinaryIO = sys.stdout.buffer if to_stdout else open(args.file, "wb")  # noqa: SIM115
        progress = Progress(props.size, f"downloading {args.name} (bytes)")
        try:
            offset = 0
            while offset < props.size:
                chunk, _ = await service.download_blob(args.container, args.name, offset=offset,
                                                       length=DOWNLOAD_RANGE, version_id=args.version_id,
                                                       if_match=props.etag)
                out.write(chunk)
                offset += len(chunk)
                progress.advance(len(chunk))
        finally:
            progress.finish()
            if not to_stdout:
                out.close()
        if not to_stdout:
            print(f"downloaded {args.container}/{args.name} to {args.file}: {props.size} bytes", file=sys.stderr)
        return 0

    return _run(args, work)


@report_errors
def _list(args: argparse.Namespace) -> int:
    async def work(service: BlobService, ctx: StorageContext) -> int:
        if args.container is None:
            for name in await service.list_containers(args.prefix):
                print(name)
            return 0
        marker = None
        while True:
            page = await service.list_blobs(args.container, prefix=args.prefix, marker=marker)
            for item in page.items:
                print(f"{item.size:>12}  {item.last_modified:%Y-%m-%d %H:%M:%S}  {item.content_type:<28}  {item.name}")
            marker = page.next_marker
            if not marker:
                return 0

    return _run(args, work)


@report_errors
def _delete(args: argparse.Namespace) -> int:
    async def work(service: BlobService, ctx: StorageContext) -> int:
        await service.delete_blob(args.container, args.name)
        print(f"deleted {args.container}/{args.name}")
        return 0

    return _run(args, work)
