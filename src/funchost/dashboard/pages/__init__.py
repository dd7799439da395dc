"""The dashboard's sections, in navigation order: one module per section exposing ``PAGE``.

Adding a section (a feature's own page) is a new module here and ONE line in `PAGE_MODULES`;
a module whose feature is absent (its package not installed) is left out, not an error.
"""

from __future__ import annotations

import importlib
from typing import cast

from funchost.dashboard.page import Page

PAGE_MODULES: tuple[str, ...] = (
    "funchost.dashboard.pages.functions",
    "funchost.dashboard.pages.invocations",
    "funchost.dashboard.pages.durable",
    "funchost.dashboard.pages.queues",
    "funchost.dashboard.pages.blobs",
    "funchost.dashboard.pages.timers",
    "funchost.dashboard.pages.eventgrid",
    "funchost.dashboard.pages.changefeed",
    "funchost.dashboard.pages.servicebus",
    "funchost.dashboard.pages.eventhubs",
)


def load_pages() -> list[Page]:
    pages = []
    for name in PAGE_MODULES:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name is not None and name.startswith(exc.name):
                continue
            raise
        pages.append(cast(Page, module.PAGE))
    return pages
