"""Blobs: the containers of each storage connection the app uses, a container's blobs (by
prefix, a page at a time), and downloads.

A download is always sent as an attachment of type ``application/octet-stream`` with
``nosniff``: a blob holding HTML or script is saved, never rendered on the dashboard's origin.
"""

from __future__ import annotations

from funchost.dashboard.markup import Markup, join, moment, table, tag
from funchost.dashboard.page import Download, NotFound, Page, View
from funchost.dashboard.pages.storage_accounts import BLOB_TYPES, account_name, chosen, connections
from funchost.errors import FunchostError

PAGE_SIZE = 200
MAX_DOWNLOAD = 256 * 1024 * 1024  # larger blobs: use `funchost blob download`


async def _list(view: View) -> Markup:
    sections = []
    for connection in connections(view, BLOB_TYPES):
        service = view.runtime.storage.blobs(connection)
        names = await service.list_containers()
        heading_id = f"containers-{connection}"
        sections.append(tag("section",
                            tag("h2", f"{connection} (account {account_name(view, connection, 'blob')})", id=heading_id),
                            table(f"Containers of {connection}", ["Container"],
                                  [[tag("a", n, href=view.href(n, connection=connection))] for n in names],
                                  empty="No containers yet.", live=f"containers-{connection}"),
                            aria_labelledby=heading_id))
    return join(tag("h1", "Blobs"), sections)


async def _container(view: View, container: str) -> Markup:
    connection = chosen(view, BLOB_TYPES, view.query.get("connection"))
    service = view.runtime.storage.blobs(connection)
    if not await service.container_exists(container):
        raise NotFound(f"There is no container named '{container}' in {connection}.")
    prefix = view.query.get("prefix") or None
    page = await service.list_blobs(container, prefix=prefix, marker=view.query.get("marker") or None,
                                    max_results=PAGE_SIZE)
    rows = [[tag("a", b.name, href=view.href(container, "download", connection=connection, name=b.name),
                 aria_label=f"Download {b.name}", download=True),
             f"{b.size:,} bytes", b.content_type, moment(b.last_modified)] for b in page.items]
    more = None
    if page.next_marker:
        more = tag("p", tag("a", "More blobs", rel="next",
                            href=view.href(container, connection=connection, prefix=prefix, marker=page.next_marker)))
    search = tag("form",
                 tag("input", type="hidden", name="connection", value=connection),
                 tag("div", tag("label", "Name starts with", for_="blob-prefix"),
                     tag("input", type="text", id="blob-prefix", name="prefix", value=prefix or "")),
                 tag("button", "List", type="submit"),
                 method="get", action=view.href(container), class_="filters", role="search",
                 aria_label="Filter blobs by name")
    return join(tag("h1", f"Container {container}"),
                tag("p", tag("a", "All containers", href=view.href())),
                search,
                table(f"Blobs in {container}" + (f" starting with '{prefix}'" if prefix else ""),
                      ["Blob (download)", "Size", "Content type", "Last modified (UTC)"], rows,
                      empty="No blobs here.", live="blobs"),
                more)


async def _download(view: View, container: str) -> Download:
    connection = chosen(view, BLOB_TYPES, view.query.get("connection"))
    name = view.query.get("name", "")
    service = view.runtime.storage.blobs(connection)
    try:
        properties = await service.get_blob_properties(container, name)
    except FunchostError:
        raise NotFound(f"There is no blob '{name}' in container '{container}'.") from None
    if properties.size > MAX_DOWNLOAD:
        raise NotFound(f"'{name}' is {properties.size:,} bytes: download it with `funchost blob download`.")
    data, _ = await service.download_blob(container, name)
    return Download(name.rsplit("/", 1)[-1] or "blob", data)


async def render(view: View) -> Markup | Download:
    if not view.path:
        return await _list(view)
    if len(view.path) == 2 and view.path[1] == "download":
        return await _download(view, view.path[0])
    return await _container(view, view.path[0])


PAGE = Page("blobs", "Blobs", render)
