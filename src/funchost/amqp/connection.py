"""One client connection: protocol headers, SASL, open/close, heartbeats and the frame loop.

SASL offers ANONYMOUS (what the SDKs use before their `$cbs` put-token) and PLAIN (key name and
key, checked like a token); a client may also skip SASL and send the AMQP header at once. The
`open` the endpoint sends lists every field (the azure-eventhub decoder reads them by position).
Heartbeats: an empty frame at half the client's idle-timeout (rhea asks for 60 s); the endpoint
asks for none. Anything malformed closes this connection with the AMQP error, never the host.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Coroutine
from typing import TYPE_CHECKING, Any

from funchost.amqp.codec.performatives import CloseFrame, OpenFrame, SASLMechanism, SASLOutcome
from funchost.amqp.frames import (
    AMQP_HEADER,
    HEARTBEAT,
    MIN_MAX_FRAME_SIZE,
    NOT_ALLOWED,
    PRE_OPEN_FRAME_LIMIT,
    SASL_FRAME,
    SASL_HEADER,
    Frame,
    FrameError,
    frame_bytes,
    read_frame,
)
from funchost.amqp.session import Session
from funchost.amqp.values import error, text

if TYPE_CHECKING:
    from funchost.amqp.router import Router

log = logging.getLogger("funchost.amqp")

MAX_FRAME_SIZE = 256 * 1024
CHANNEL_MAX = 4999
HANDSHAKE_TIMEOUT = 30.0
OPEN, BEGIN, ATTACH, FLOW, TRANSFER, DISPOSITION, DETACH, END, CLOSE = range(0x10, 0x19)


class Connection:
    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, router: Router,
                 identity: dict[str, str]) -> None:
        self.reader = reader
        self.writer = writer
        self.router = router
        self.identity = identity
        self.peer_max_frame_size = MIN_MAX_FRAME_SIZE
        self.container_id = ""
        self.peer_properties: dict[str, Any] = {}
        self.sessions: dict[int, Session] = {}
        self.authorized: set[str] = set()  # audience paths (lower case) of accepted tokens
        self._tasks: set[asyncio.Task[Any]] = set()
        self._closing = False
        self._out: list[bytes] = []
        self._flush_scheduled = False

    # -- writing --

    def write_raw(self, data: bytes) -> None:
        """Queue bytes for the socket: the frames of one loop iteration leave in one send (a
        batch of deliveries is one system call, not one per frame)."""
        if self.writer.is_closing():
            return
        self._out.append(data)
        if not self._flush_scheduled:
            self._flush_scheduled = True
            asyncio.get_running_loop().call_soon(self._flush)

    def _flush(self) -> None:
        self._flush_scheduled = False
        if self._out and not self.writer.is_closing():
            data = b"".join(self._out)
            self._out.clear()
            self.writer.write(data)

    def write(self, channel: int, performative: Any, kind: int = 0) -> None:
        self.write_raw(frame_bytes(channel, performative, kind))

    async def drain(self) -> None:
        if self.writer.transport.get_write_buffer_size() + sum(map(len, self._out)) < 64 * 1024:
            return
        self._flush()
        with contextlib.suppress(ConnectionError):
            await self.writer.drain()

    def spawn(self, work: Coroutine[Any, Any, Any]) -> asyncio.Task[Any]:
        task = asyncio.get_running_loop().create_task(self._guard(work))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    async def _guard(self, work: Coroutine[Any, Any, Any]) -> None:
        try:
            await work
        except (ConnectionError, asyncio.CancelledError):
            pass
        except Exception:
            log.exception("AMQP connection %s: a link task failed", self.container_id)
            self.close_with("amqp:internal-error", "the endpoint failed; see its log")

    # -- the connection's life --

    async def run(self) -> None:
        try:
            if await asyncio.wait_for(self._handshake(), HANDSHAKE_TIMEOUT):
                await self._loop()
        except FrameError as exc:
            log.info("AMQP connection %s closed: %s", self.container_id or "(opening)", exc.description)
            self.close_with(exc.condition, exc.description)
        except (asyncio.IncompleteReadError, ConnectionError, TimeoutError):
            pass
        except Exception:
            log.exception("AMQP connection %s failed", self.container_id or "(opening)")
            self.close_with("amqp:internal-error", "the endpoint failed; see its log")
        finally:
            await self._teardown()

    async def _handshake(self) -> bool:
        header = await self.reader.readexactly(8)
        if header == SASL_HEADER:
            self.write_raw(SASL_HEADER)
            if not await self._sasl():
                return False
            header = await self.reader.readexactly(8)
        if header != AMQP_HEADER:
            self.write_raw(AMQP_HEADER)  # the version this endpoint speaks, then close (AMQP 2.2)
            return False
        self.write_raw(AMQP_HEADER)
        frame = await read_frame(self.reader, PRE_OPEN_FRAME_LIMIT)
        if frame.performative != OPEN or frame.kind != 0:
            raise FrameError(NOT_ALLOWED, "the first frame must be open")
        self._opened(frame.fields)
        return True

    async def _sasl(self) -> bool:
        self.write(0, SASLMechanism([b"ANONYMOUS", b"PLAIN"]), SASL_FRAME)
        frame = await read_frame(self.reader, PRE_OPEN_FRAME_LIMIT)
        if frame.kind != SASL_FRAME or frame.performative != 0x41:
            raise FrameError(NOT_ALLOWED, "expected sasl-init")
        mechanism = text(frame.fields[0]) or ""
        ok = mechanism == "ANONYMOUS" or (mechanism == "PLAIN" and self.router.check_plain(frame.fields[1]))
        if ok and mechanism == "PLAIN":
            self.authorized.add("")  # a namespace key authorises every entity
        self.write(0, SASLOutcome(0 if ok else 1, None), SASL_FRAME)
        self._flush()
        return ok

    def _opened(self, fields: list[Any]) -> None:
        self.container_id = text(fields[0]) or ""
        size = fields[2] if fields[2] is not None else 2 ** 32 - 1
        if size < MIN_MAX_FRAME_SIZE:
            raise FrameError("amqp:invalid-field", f"max-frame-size {size} is below {MIN_MAX_FRAME_SIZE}")
        self.peer_max_frame_size = min(int(size), MAX_FRAME_SIZE * 4)
        self.channel_max = min(int(fields[3] if fields[3] is not None else 65535), CHANNEL_MAX)
        self.peer_properties = {k: text(v) for k, v in (fields[9] or {}).items()} if isinstance(fields[9], dict) else {}
        properties = {"product": "funchost", **self.identity}
        self.write(0, OpenFrame(self.router.container_id, None, MAX_FRAME_SIZE, CHANNEL_MAX, None, None, None,
                                None, None, properties))
        idle = fields[4]
        if idle:
            self.spawn(self._heartbeats(max(int(idle) / 2000, 0.5)))

    async def _heartbeats(self, every: float) -> None:
        while not self.writer.is_closing():
            await asyncio.sleep(every)
            self.write_raw(HEARTBEAT)

    async def _loop(self) -> None:
        while True:
            frame = await read_frame(self.reader, MAX_FRAME_SIZE)
            if frame.performative == 0:
                continue  # heartbeat
            if frame.kind != 0:
                raise FrameError(NOT_ALLOWED, "a SASL frame after the handshake")
            if frame.performative == CLOSE:
                self.write(0, CloseFrame(None))
                self._flush()
                return
            await self._dispatch(frame)
            await self.drain()

    async def _dispatch(self, frame: Frame) -> None:
        code, fields = frame.performative, frame.fields
        if code == BEGIN:
            await self._begin(frame.channel, fields)
            return
        session = self.sessions.get(frame.channel)
        if session is None:
            if code in (END, DETACH, DISPOSITION, FLOW):
                return  # a frame for a session that already ended (the clients send detach after end)
            raise FrameError("amqp:connection:framing-error", f"no session on channel {frame.channel}")
        try:
            await self._session_frame(session, code, fields)
        except (TypeError, ValueError, IndexError) as exc:
            raise FrameError("amqp:decode-error", f"malformed performative {code:#x}: {exc}") from None

    async def _session_frame(self, session: Session, code: int, fields: list[Any]) -> None:
        if code == ATTACH:
            await session.attach(fields)
        elif code == FLOW:
            await session.flow(fields)
        elif code == TRANSFER:
            await session.transfer(fields)
        elif code == DISPOSITION:
            await session.disposition(fields)
        elif code == DETACH:
            await session.detach(fields)
        elif code == END:
            del self.sessions[session.channel]
            await session.end(reply=True)
        elif code == OPEN:
            raise FrameError(NOT_ALLOWED, "open sent twice")

    async def _begin(self, channel: int, fields: list[Any]) -> None:
        if channel in self.sessions or channel > self.channel_max:
            raise FrameError("amqp:connection:framing-error", f"channel {channel} is in use or above channel-max")
        session = Session(self, channel, channel, int(fields[1] or 0))
        self.sessions[channel] = session
        self.write(channel, session.begin_frame())

    def close_with(self, condition: str, description: str) -> None:
        if not self._closing:
            self._closing = True
            self.write(0, CloseFrame(error(condition, description)))
            self._flush()
            self.writer.close()

    async def _teardown(self) -> None:
        self._flush()
        for task in list(self._tasks):
            task.cancel()
        for session in list(self.sessions.values()):
            with contextlib.suppress(Exception):
                await session.end(reply=False)
        self.sessions.clear()
        with contextlib.suppress(Exception):
            self.writer.close()
            await self.writer.wait_closed()
