"""Functions in error and why, as the Functions host keeps them (ScriptHost.FunctionErrors).

A function is in error when the host could not set it up (an unsupported binding type, an
invalid binding, a route conflict: it does not run at all) or when its listener could not start
(it runs once a retry starts the listener). The reasons are what `funchost start` lists, what
``GET /admin/functions/{name}/status`` answers, and what ``--output json`` reports.
Names compare case-insensitively, like the host's dictionary.
"""

from __future__ import annotations


class FunctionErrors:
    def __init__(self) -> None:
        self._errors: dict[str, tuple[str, list[str]]] = {}  # lower-cased name -> (name, reasons)

    def add(self, function: str, reason: str) -> None:
        name, reasons = self._errors.setdefault(function.lower(), (function, []))
        if reason not in reasons:  # a set of messages, as the host keeps them
            reasons.append(reason)

    def clear(self, function: str) -> None:
        self._errors.pop(function.lower(), None)

    def of(self, function: str) -> list[str]:
        entry = self._errors.get(function.lower())
        return list(entry[1]) if entry else []

    def __contains__(self, function: str) -> bool:
        return function.lower() in self._errors

    def items(self) -> list[tuple[str, list[str]]]:
        return [(name, list(reasons)) for name, reasons in self._errors.values()]
