"""Forget the app's modules between reloads, so an edit to any of them takes effect.

``function_app.py`` is imported afresh at every load (`indexing.loader`), but the modules it
imports (``shared/db.py``, a blueprint) would stay cached in ``sys.modules``. Every module whose
file is inside the app folder, outside virtual environments and installed packages, is removed;
the compiled copies of changed files are removed too (a save within the same second and of the
same size would otherwise look unchanged to the bytecode cache).
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import sys
from collections.abc import Iterable
from pathlib import Path

from funchost.devloop.watch import IGNORED_FOLDERS

PACKAGE_FOLDERS = {"site-packages", "dist-packages"}


def app_module_names(app_dir: Path) -> list[str]:
    app_dir = app_dir.resolve()
    names = []
    for name, module in list(sys.modules.items()):
        file = getattr(module, "__file__", None)
        if not file:
            continue
        try:
            relative = Path(file).resolve().relative_to(app_dir)
        except (ValueError, OSError):
            continue
        if not any(part in IGNORED_FOLDERS or part in PACKAGE_FOLDERS for part in relative.parts[:-1]):
            names.append(name)
    return names


def forget(app_dir: Path, changed: Iterable[Path]) -> list[str]:
    """Drop the app's modules and the bytecode of `changed` files; the names dropped."""
    names = app_module_names(app_dir)
    for name in names:
        sys.modules.pop(name, None)
    for path in changed:
        if path.suffix == ".py":
            with contextlib.suppress(OSError, NotImplementedError, ValueError):
                Path(importlib.util.cache_from_source(str(path))).unlink(missing_ok=True)
    importlib.invalidate_caches()
    return names
