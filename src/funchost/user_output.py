"""`sys.stdout` and `sys.stderr` as an app writes to them while the console defers the
invocation lines (`logs.ConsoleHandler.defers`): a write first writes the Executing/Executed lines
still waiting, so what a function prints follows its Executing line.

Without this the executor wrote the waiting lines before every function ran, in case it printed:
one write system call per invocation, which also hands the GIL to the other threads and back
(`benchmarks/README.md`, "Fifth pass": the two lines then cost 27 µs of CPU per HTTP invocation).
With it, the lines of `logs.LINES_DELAY` (of `logs.FLUSH_INTERVAL` on a block-buffered stdout) go
out in one write unless the app writes in between.

What bypasses Python's text streams (`sys.stdout.buffer`, `os.write(1, ...)`, a child process
writing to the inherited descriptor) is not ordered and may come before the lines of the last
20 ms, or 0.1 s on a block-buffered stdout (docs/deviations.md, "Console output").
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, TextIO

if TYPE_CHECKING:
    from funchost.logs import ConsoleHandler

_console: ConsoleHandler | None = None  # whose waiting lines go out before the app's output


class OrderedStream:
    """A text stream that writes the console's waiting lines before each write; anything else
    is the wrapped stream's."""

    __slots__ = ("wrapped",)

    def __init__(self, wrapped: TextIO) -> None:
        self.wrapped = wrapped

    def write(self, text: str) -> int:
        console = _console
        if console is not None and console.waiting:
            console.write_waiting()
        return self.wrapped.write(text)

    def writelines(self, lines: Iterable[str]) -> None:
        console = _console
        if console is not None and console.waiting:
            console.write_waiting()
        self.wrapped.writelines(lines)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.wrapped, name)


def unwrapped(stream: TextIO) -> TextIO:
    """The stream an `OrderedStream` wraps (the console writes there, not through itself)."""
    return stream.wrapped if isinstance(stream, OrderedStream) else stream


def order_behind(console: ConsoleHandler) -> None:
    """From now on the app's writes to sys.stdout and sys.stderr follow `console`'s waiting lines
    (a console configured again takes the place of the one before)."""
    global _console
    _console = console
    for name in ("stdout", "stderr"):
        stream = getattr(sys, name)
        if stream is not None and not isinstance(stream, OrderedStream):
            setattr(sys, name, OrderedStream(stream))
