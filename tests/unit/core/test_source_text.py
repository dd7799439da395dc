"""No docstring in funchost's modules or the examples holds a lone surrogate.

Python 3.13 dedents docstrings when it compiles a module, through UTF-8, and refuses one holding a
lone surrogate: a JSON escape written as ``"\\ud800"`` (not ``"\\\\ud800"``) in the docstring of
`reliability/canonical.py` made `import funchost.reliability` fail on 3.13, and with it every
test session (funchost's pytest plugin imports it)."""

from __future__ import annotations

import ast
from pathlib import Path

import funchost

SRC = Path(funchost.__file__).resolve().parent
EXAMPLES = SRC.parents[1] / "examples"
DOCUMENTED = (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)


def test_no_docstring_holds_a_lone_surrogate() -> None:
    offenders = []
    for path in sorted([*SRC.rglob("*.py"), *EXAMPLES.rglob("*.py")]):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            docstring = ast.get_docstring(node, clean=False) if isinstance(node, DOCUMENTED) else None
            if docstring is None:
                continue
            try:
                docstring.encode("utf-8")
            except UnicodeEncodeError:
                offenders.append(f"{path.relative_to(SRC.parents[1])}: {getattr(node, 'name', 'module')}")
    assert offenders == []
