"""Only a backend's own package imports it: everything else reaches storage through the ports."""

from __future__ import annotations

import ast
from pathlib import Path

import funchost

SRC = Path(funchost.__file__).resolve().parent
BACKENDS = ("funchost.storage.sqlite", "funchost.storage.azure", "funchost.storage.postgres")
# The one composition outside `storage/`: an app whose storage endpoints another app's host serves
# uses the azure backend pointed at them (docs/storage-endpoints.md, "Several apps on one machine").
COMPOSED = {("funchost.storage_endpoints.peer_storage", "funchost.storage.azure")}


def imported_modules(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
    return found


def test_no_module_outside_a_backend_package_imports_a_backend() -> None:
    offenders = []
    for path in sorted(SRC.rglob("*.py")):
        module = ".".join(path.relative_to(SRC.parent).with_suffix("").parts)
        for backend in BACKENDS:
            if module.startswith(backend) or (module, backend) in COMPOSED:
                continue
            if any(name == backend or name.startswith(backend + ".") for name in imported_modules(path)):
                offenders.append(f"{module} imports {backend}")
    assert offenders == []
