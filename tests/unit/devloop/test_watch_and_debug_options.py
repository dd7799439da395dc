"""What --reload watches, which modules it forgets, and how --debug reads its address."""

from __future__ import annotations

import socket
import sys
from pathlib import Path

import pytest

from funchost.devloop import app_modules
from funchost.devloop.debugger import _check_free, parse_address
from funchost.devloop.watch import describe, watched
from funchost.errors import FunchostError


def test_code_and_configuration_are_watched_not_data_or_caches(tmp_path: Path) -> None:
    app, data = tmp_path / "app", tmp_path / "app" / ".data"
    accept = watched(app, data)
    for name in ("function_app.py", "shared/db.py", "host.json", "local.settings.json", "blueprints/x/y.py"):
        assert accept(app / name), name
    for name in ("requirements.txt", "__pycache__/function_app.cpython-311.pyc", "shared/__pycache__/db.py",
                 ".venv/lib/site.py", ".python_packages/lib/x.py", ".funchost/keys/x.json", ".data/storage/q.py",
                 "notes.md", "nested/host.json.bak"):
        assert not accept(app / name), name
    assert not accept(tmp_path / "elsewhere.py")


def test_changes_are_described_relative_to_the_app(tmp_path: Path) -> None:
    assert describe([("modified", tmp_path / "function_app.py"), ("added", tmp_path / "shared" / "db.py")],
                    tmp_path) == "function_app.py (modified), shared/db.py (added)"


def test_the_apps_own_modules_are_forgotten(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "app" / "shared").mkdir(parents=True)
    (tmp_path / "app" / "shared" / "__init__.py").write_text("")
    (tmp_path / "app" / "shared" / "consts.py").write_text("VALUE = 1\n")
    monkeypatch.syspath_prepend(str(tmp_path / "app"))
    import shared.consts  # type: ignore[import-not-found]

    assert shared.consts.VALUE == 1
    forgotten = app_modules.forget(tmp_path / "app", [tmp_path / "app" / "shared" / "consts.py"])
    assert {"shared", "shared.consts"} <= set(forgotten)
    assert "shared.consts" not in sys.modules and "pytest" in sys.modules


@pytest.mark.parametrize(("text", "address"), [
    (None, ("127.0.0.1", 5678)), ("9091", ("127.0.0.1", 9091)), ("0.0.0.0:9091", ("0.0.0.0", 9091)),
    ("[::1]:5679", ("::1", 5679)),
])
def test_debug_addresses(text: str | None, address: tuple[str, int]) -> None:
    assert parse_address(text) == address


@pytest.mark.parametrize("text", ["abc", "70000", "host:", ":0", "localhost:port"])
def test_a_bad_debug_address_is_refused(text: str) -> None:
    with pytest.raises(FunchostError, match=r"--debug: expected \[HOST:\]PORT"):
        parse_address(text)


def test_a_taken_debug_port_is_named() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(FunchostError, match=f"port {port} on 127.0.0.1 is already in use"):
            _check_free("127.0.0.1", port)
