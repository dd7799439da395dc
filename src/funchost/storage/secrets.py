"""Small named secrets every host of one deployment must agree on: the host and function keys
(``keys/host.json``, ``keys/<function>.json``), the Event Grid topic keys (``eventgrid/keys.json``)
and the storage endpoints' identity (``storage/endpoints.id``).

Each is created once, by whichever host gets there first, and read by all the others. Embedded and
azure storage keep them as files of the data folder (`FileSecrets`: 0600, written aside and
hard-linked, so of several processes sharing the folder exactly one creates a file); with
``--storage postgres`` hosts on other machines share no folder, so they live in a table on the
server (`funchost.storage.postgres.secrets`). Names are the files' paths in the data folder.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Protocol

from funchost.private_files import create_private_file, write_private_file


class SecretStore(Protocol):
    def create(self, name: str, text: str) -> str:
        """Store `text` under `name` unless something is stored there; the stored text either way."""

    def read(self, name: str) -> str | None: ...

    def update(self, name: str, change: Callable[[str | None], str]) -> str:
        """Replace the stored text (None: absent) with `change(current)`; the text stored."""

    def locate(self, name: str) -> str:
        """Where `name` is kept, for messages (never its content)."""

    def describe(self) -> str:
        """Where the secrets are kept, for the start banner."""


class FileSecrets:
    """Files under the data folder, as funchost has always kept them."""

    def __init__(self, data_dir: Path) -> None:
        self.data_dir = Path(data_dir)

    def _path(self, name: str) -> Path:
        return self.data_dir / name

    def create(self, name: str, text: str) -> str:
        path = self._path(name)
        if create_private_file(path, text):
            return text
        return path.read_text(encoding="utf-8")

    def read(self, name: str) -> str | None:
        path = self._path(name)
        return path.read_text(encoding="utf-8") if path.exists() else None

    def update(self, name: str, change: Callable[[str | None], str]) -> str:
        """Read, change, replace atomically (the last writer of a concurrent pair wins, as before)."""
        text = change(self.read(name))
        write_private_file(self._path(name), text)
        return text

    def locate(self, name: str) -> str:
        return str(self._path(name))

    def describe(self) -> str:
        return str(self.data_dir)
