"""A health answer in plain text, for probes that must not start a program per check.

A container health check that runs `tobe health` starts a Python interpreter every time (about
0.3 s of CPU), which adds up to a good part of a core across containers probed every few
seconds. A service given a probe address (`<service>.probe_listen`, `host:port`) also answers
every TCP connection there with one line, the status its gRPC health service reports (the
overall one: `SERVING` or `NOT_SERVING`), and closes it; a shell reads it with no program
started (`docker/healthcheck.sh`: bash's `/dev/tcp`). It reads nothing from the client and
says nothing beyond that word, so it carries no secret; bind it to loopback all the same. A
`unix:/path` probe address answers the same on a socket file: `tobe up` gives each service
one to learn its readiness from without a gRPC client of its own.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
from collections.abc import Awaitable, Callable

from tobe.runtime.ports import bind_problem, tcp_host_port
from tobe.runtime.private_files import FILE_MODE, PRIVATE_UMASK

log = logging.getLogger(__name__)

# Longest a client may take to be answered before the connection is dropped.
WRITE_TIMEOUT = 2.0
# More than any answer: a status name and its reason.
LONGEST_ANSWER = 4096


class ProbeAnswer:
    """Answers `status()` plus a newline to each connection on one address."""

    def __init__(self, server: asyncio.Server, status: Callable[[], str]) -> None:
        self._server = server
        self._status = status

    @classmethod
    async def start(cls, listen: str, status: Callable[[], str]) -> ProbeAnswer:
        """Listen on `listen` (`host:port`, port 0 picks one; or `unix:/path`, replacing a
        socket left there). Raises ProbeListenError when it cannot be bound, before anything
        is served."""
        problem = probe_problem(listen)
        if problem is not None:
            raise ProbeListenError(listen, problem)
        answer: ProbeAnswer | None = None

        async def on_connect(_: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            assert answer is not None
            await answer._answer(writer)

        try:
            server = await _listen(listen, on_connect)
        except OSError as exc:
            raise ProbeListenError(listen, exc.strerror or str(exc)) from None
        answer = cls(server, status)
        return answer

    @property
    def port(self) -> int:
        """The bound port (the picked one for port 0)."""
        return int(self._server.sockets[0].getsockname()[1])

    async def _answer(self, writer: asyncio.StreamWriter) -> None:
        try:
            writer.write(f"{self._status()}\n".encode())
            await asyncio.wait_for(writer.drain(), WRITE_TIMEOUT)
        except (OSError, TimeoutError) as exc:
            log.debug("health probe connection dropped: %s", exc)
        finally:
            writer.close()
            with contextlib.suppress(OSError):
                await writer.wait_closed()

    async def stop(self) -> None:
        self._server.close()
        await self._server.wait_closed()


async def _listen(
    listen: str,
    on_connect: Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]],
) -> asyncio.Server:
    path = unix_path(listen)
    if path is not None:
        # Owner-only from the start, as every socket a service makes (`tobe.runtime.server`).
        previous_umask = os.umask(PRIVATE_UMASK)
        try:
            server = await asyncio.start_unix_server(on_connect, path)
        finally:
            os.umask(previous_umask)
        os.chmod(path, FILE_MODE)
        return server
    parsed = tcp_host_port(listen)
    assert parsed is not None
    return await asyncio.start_server(on_connect, *parsed)


def unix_path(listen: str) -> str | None:
    """The socket file of a `unix:/path` address; None for any other."""
    return listen.removeprefix("unix:").removeprefix("//") if listen.startswith("unix:") else None


def probe_problem(listen: str) -> str | None:
    """Why `listen` cannot be a probe address right now, or None when it can."""
    path = unix_path(listen)
    if path is not None:
        return None if path else "give the socket file's path, e.g. unix:/run/tobe/mind.sock"
    if tcp_host_port(listen) is None:
        return "give it as host:port, e.g. 127.0.0.1:7419, or unix:/path"
    return bind_problem(listen)


def read_answer(listen: str, timeout: float) -> str:
    """The line a probe address answers ("SERVING", or "NOT_SERVING (why)"); "UNREACHABLE
    (why)" when nothing answers there (yet)."""
    try:
        with _connect(listen, timeout) as connection:
            answer = b""
            while b"\n" not in answer and len(answer) < LONGEST_ANSWER:
                chunk = connection.recv(LONGEST_ANSWER)
                if not chunk:
                    break
                answer += chunk
    except OSError as exc:
        return f"UNREACHABLE ({exc.strerror or exc})"
    return answer.decode(errors="replace").strip()


def _connect(listen: str, timeout: float) -> socket.socket:
    path = unix_path(listen)
    if path is None:
        parsed = tcp_host_port(listen)
        if parsed is None:
            raise OSError(f"not a probe address: {listen}")
        return socket.create_connection(parsed, timeout)
    connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        connection.settimeout(timeout)
        connection.connect(path)
    except OSError:
        connection.close()
        raise
    return connection


class ProbeListenError(OSError):
    """The probe address cannot be served; the message names it and why."""

    def __init__(self, listen: str, reason: str) -> None:
        super().__init__(f"cannot answer health probes on {listen}: {reason}")
        self.listen = listen
        self.reason = reason
