"""`funchost start --debug [HOST:]PORT` and `--debug-wait`: the functions run under debugpy.

Host and worker are one process here, so debugpy listens in the host itself, before the app is
imported: VS Code's "Python: Attach" (a ``launch.json`` ``"request": "attach"`` configuration
with ``"connect": {"host": ..., "port": ...}``) stops at breakpoints in function_app.py,
including ``def`` functions running on the function thread pool (debugpy traces threads started
after it listens). Core Tools reaches the same state by starting the Python worker with
``languageWorkers__python__arguments="-m debugpy --listen 0.0.0.0:9091"`` (its VS Code template
attaches to port 9091); ``--debug-wait`` is debugpy's ``--wait-for-client``: nothing is imported
or started until a debugger has attached. With ``--reload`` the debugger stays attached across
reloads (the process lives on). debugpy is the optional extra ``funchost[debug]``.
"""

from __future__ import annotations

import socket
from typing import Any

from funchost import logs
from funchost.errors import FunchostError

DEFAULT_HOST = "127.0.0.1"  # loopback by default, like the host's own port
DEFAULT_PORT = 5678  # debugpy's and VS Code's default


def parse_address(text: str | None) -> tuple[str, int]:
    """``PORT`` or ``HOST:PORT`` (``[::1]:PORT`` for IPv6)."""
    if not text:
        return DEFAULT_HOST, DEFAULT_PORT
    host, sep, port_text = text.rpartition(":")
    host = host.strip("[]") if sep else DEFAULT_HOST
    if not port_text.isdigit() or not 0 < int(port_text) < 65536 or (sep and not host):
        raise FunchostError(f"--debug: expected [HOST:]PORT with a port from 1 to 65535, got {text!r}")
    return host, int(port_text)


def start_debugger(address: str | None, *, wait: bool, output: str) -> tuple[str, int]:
    """Listen for a debugger (and wait for one when `wait`); a clear error when it cannot."""
    host, port = parse_address(address)
    debugpy = _debugpy()
    _check_free(host, port)
    try:
        debugpy.listen((host, port))
    except Exception as exc:  # noqa: BLE001 - debugpy reports bind failures as RuntimeError
        raise FunchostError(f"--debug: cannot listen for a debugger on {host}:{port}: {exc}") from exc
    logs.print_line(f"Debugger listening on {host}:{port} (VS Code: \"Python: Attach\" to this port).",
                    output=output, event="DebuggerListening", host=host, port=port)
    if wait:
        logs.print_line("Waiting for a debugger to attach before loading the app...", output=output,
                        event="DebuggerWaiting")
        debugpy.wait_for_client()
        logs.print_line("Debugger attached.", output=output, event="DebuggerAttached")
    return host, port


def _debugpy() -> Any:
    try:
        import debugpy
    except ImportError as exc:
        raise FunchostError("--debug needs debugpy, which is not installed: pip install 'funchost[debug]'") from exc
    return debugpy


def _check_free(host: str, port: int) -> None:
    """debugpy's own error for a taken port comes from its adapter process, late and vague."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        try:
            probe.bind((host, port))
        except OSError as exc:
            raise FunchostError(f"--debug: port {port} on {host} is already in use ({exc.strerror}); is another "
                                f"debug session or funchost running? Choose another: --debug {host}:PORT") from exc
