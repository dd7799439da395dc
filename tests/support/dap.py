"""A minimal Debug Adapter Protocol client, as VS Code's "Python: Attach" talks to debugpy.

Messages are JSON bodies after a ``Content-Length`` header. Requests get a ``seq``; the adapter
answers with a ``response`` of the same ``request_seq`` and sends ``event`` messages whenever
(``initialized``, ``stopped``, ...). `DapClient.request` waits for the response; events are
kept and `wait_event` returns the first one of a kind that matches.
"""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Callable
from typing import Any


class DapClient:
    def __init__(self, host: str, port: int, timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        while True:
            try:
                self.sock = socket.create_connection((host, port), timeout=2)
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)
        self.sock.settimeout(timeout)
        self.buffer = b""
        self.seq = 0
        self.events: list[dict[str, Any]] = []
        self.responses: dict[int, dict[str, Any]] = {}

    def close(self) -> None:
        self.sock.close()

    def send(self, command: str, **arguments: Any) -> int:
        self.seq += 1
        body = json.dumps({"seq": self.seq, "type": "request", "command": command, "arguments": arguments}).encode()
        self.sock.sendall(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        return self.seq

    def request(self, command: str, timeout: float = 30.0, **arguments: Any) -> dict[str, Any]:
        seq = self.send(command, **arguments)
        response = self._until(lambda: self.responses.pop(seq, None), timeout, f"the response to {command}")
        if not response.get("success"):
            raise AssertionError(f"{command} failed: {response.get('message')}")
        return response

    def wait_response(self, seq: int, timeout: float = 30.0) -> dict[str, Any]:
        return self._until(lambda: self.responses.pop(seq, None), timeout, f"response {seq}")

    def wait_event(self, name: str, timeout: float = 30.0,
                   match: Callable[[dict[str, Any]], bool] = lambda event: True) -> dict[str, Any]:
        def found() -> dict[str, Any] | None:
            for event in self.events:
                if event.get("event") == name and match(event):
                    self.events.remove(event)
                    return event
            return None

        return self._until(found, timeout, f"the {name} event")

    def _until(self, found: Callable[[], dict[str, Any] | None], timeout: float, what: str) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while True:
            result = found()
            if result is not None:
                return result
            if time.monotonic() > deadline:
                raise AssertionError(f"no {what} within {timeout}s; events: {[e.get('event') for e in self.events]}")
            self._read_one(deadline - time.monotonic())

    def _read_one(self, timeout: float) -> None:
        self.sock.settimeout(max(0.1, timeout))
        while b"\r\n\r\n" not in self.buffer:
            self._fill()
        head, _, rest = self.buffer.partition(b"\r\n\r\n")
        length = next(int(line.split(b":")[1]) for line in head.split(b"\r\n")
                      if line.lower().startswith(b"content-length"))
        while len(rest) < length:
            self.buffer = head + b"\r\n\r\n" + rest
            self._fill()
            head, _, rest = self.buffer.partition(b"\r\n\r\n")
        message = json.loads(rest[:length])
        self.buffer = rest[length:]
        if message.get("type") == "response":
            self.responses[message["request_seq"]] = message
        elif message.get("type") == "event":
            self.events.append(message)

    def _fill(self) -> None:
        chunk = self.sock.recv(65536)
        if not chunk:
            raise ConnectionError("the debug adapter closed the connection")
        self.buffer += chunk
