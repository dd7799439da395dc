"""What `--reload` watches: the app's code and configuration, not its data or caches.

A change to a ``.py`` file, ``host.json`` or ``local.settings.json`` anywhere in the app folder
restarts the app; ``requirements.txt`` does not (installing packages is a restart of its own),
nor does anything under the data folder, ``__pycache__``, virtual environments,
``.python_packages`` or version control folders. Changes are grouped: an editor's save (write,
rename, delete of a temporary file) is one reload, reported once.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from pathlib import Path

WATCHED_NAMES = {"host.json", "local.settings.json"}
IGNORED_FOLDERS = {"__pycache__", ".venv", "venv", ".python_packages", ".git", ".hg", "node_modules",
                   ".mypy_cache", ".pytest_cache", ".ruff_cache", ".funchost"}
QUIET_MS = 50  # a change is reported once nothing else changed for this long


def watched(app_dir: Path, data_dir: Path) -> Callable[[Path], bool]:
    app_dir, data_dir = app_dir.resolve(), data_dir.resolve()

    def accept(path: Path) -> bool:
        if path == data_dir or data_dir in path.parents:
            return False
        try:
            relative = path.relative_to(app_dir)
        except ValueError:
            return False
        if any(part in IGNORED_FOLDERS for part in relative.parts[:-1]):
            return False
        return path.suffix == ".py" or path.name in WATCHED_NAMES

    return accept


async def changes(app_dir: Path, data_dir: Path, stop: asyncio.Event) -> AsyncIterator[list[tuple[str, Path]]]:
    """Groups of (what happened, path) under `app_dir`, until `stop` is set."""
    from watchfiles import Change, awatch

    accept = watched(app_dir, data_dir)
    kinds = {Change.added: "added", Change.modified: "modified", Change.deleted: "deleted"}
    async for batch in awatch(app_dir, watch_filter=lambda _change, path: accept(Path(path)),
                              step=QUIET_MS, recursive=True, stop_event=stop):
        found = sorted({(kinds.get(change, "modified"), Path(path)) for change, path in batch}, key=lambda c: c[1])
        if found:
            yield found


def describe(found: list[tuple[str, Path]], app_dir: Path) -> str:
    """`function_app.py (modified), shared/db.py (added)`."""
    def name(path: Path) -> str:
        try:
            return path.resolve().relative_to(app_dir.resolve()).as_posix()
        except ValueError:
            return str(path)

    return ", ".join(f"{name(path)} ({what})" for what, path in found)
