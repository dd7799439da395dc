"""Pytest plugin: the `azurite` fixture and the record of known Azurite deviations.

Register it once in the root ``tests/conftest.py``::

    pytest_plugins = ["tests.support.azurite_fixtures"]

(`ensure_registered(config)` does the same from any conftest and is a no-op when it already is.)

A test that needs Azurite FAILS when Azurite cannot be started or reached: it never skips.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from tests.support.azurite import AzuriteServer, AzuriteUnavailable, get_server, stop_server


@dataclass(frozen=True)
class Deviation:
    nodeid: str
    reason: str


DEVIATIONS: list[Deviation] = []


def ensure_registered(config: pytest.Config) -> None:
    module = sys.modules[__name__]
    if not config.pluginmanager.is_registered(module):
        config.pluginmanager.register(module, "funchost-azurite-fixtures")


@pytest.fixture(scope="session")
def azurite() -> Iterator[AzuriteServer]:
    """A running Azurite (started once per session, or the one named by AZURITE_*_ENDPOINT)."""
    try:
        server = get_server()
    except AzuriteUnavailable as exc:
        pytest.fail(f"this test needs Azurite, which is unavailable: {exc}", pytrace=False)
    yield server
    stop_server()


_current: list[pytest.Item] = []


@pytest.fixture(autouse=True)
def _track_current_test(request: pytest.FixtureRequest) -> Iterator[None]:
    _current.append(request.node)  # type: ignore[arg-type]
    yield
    _current.pop()


def is_azurite(backend: Any) -> bool:
    """True if `backend` (a backend name, a storage backend, or a queue/blob service) is Azurite."""
    if isinstance(backend, str):
        return backend == "azurite"
    if getattr(backend, "served_by_funchost", False):  # the SDKs against funchost's own endpoints
        return False
    if getattr(backend, "kind", None) == "azure":
        return True
    while hasattr(backend, "inner"):  # the host's wrappers (validation, faults, wake-ups)
        backend = backend.inner
    return type(backend).__module__.startswith("funchost.storage.azure.")


def known_deviation(backend: Any, reason: str, *, xfail: bool = False) -> bool:
    """Where Azurite differs from Azure, say so instead of skipping.

    `backend` is the backend the test runs on (the `backend_name` value, the storage backend or
    the service). On Azurite: record "Azurite deviates from Azure: <reason>" for the terminal
    summary and return True, so the test asserts Azurite's actual behaviour in that branch; with
    ``xfail=True`` the test is also marked xfail (non-strict). Elsewhere: return False.
    """
    if not is_azurite(backend):
        return False
    item = _current[-1] if _current else None
    DEVIATIONS.append(Deviation(item.nodeid if item else "?", reason))
    if xfail and item is not None:
        item.add_marker(pytest.mark.xfail(reason=f"Azurite deviates from Azure: {reason}", strict=False))
    return True


@pytest.fixture(name="known_deviation")
def known_deviation_fixture() -> Callable[..., bool]:
    """The `known_deviation` function, for tests that prefer a fixture to an import."""
    return known_deviation


def pytest_terminal_summary(terminalreporter, exitstatus, config):  # type: ignore[no-untyped-def]
    if not DEVIATIONS:
        return
    terminalreporter.section("known Azurite deviations")
    seen: set[str] = set()
    for deviation in DEVIATIONS:
        terminalreporter.write_line(f"Azurite deviates from Azure: {deviation.reason}  [{deviation.nodeid}]")
        seen.add(deviation.reason)
    terminalreporter.write_line(f"{len(seen)} distinct deviation(s) in {len(DEVIATIONS)} test(s)")
