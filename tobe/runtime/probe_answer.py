"""A health answer in plain text, for probes that must not start a program per check.

A container health check that runs `tobe health` starts a Python interpreter every time (about
0.3 s of CPU), which adds up to a good part of a core across containers probed every few
seconds. A service given a probe address (`<service>.probe_listen`, `host:port`) also answers
every TCP connection there with one line, the status its gRPC health service reports (the
overall one: `SERVING` or `NOT_SERVING`), and closes it; a shell reads it with no program
started (`docker/healthcheck.sh`: bash's `/dev/tcp`). It reads nothing from the client and
says nothing beyond that word, so it carries no secret; bind it to loopback all the same.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable

from tobe.runtime.ports import bind_problem, tcp_host_port

log = logging.getLogger(__name__)

# Longest a client may take to be answered before the connection is dropped.
WRITE_TIMEOUT = 2.0


class ProbeAnswer:
    """Answers `status()` plus a newline to each connection on one TCP address."""

    def __init__(self, server: asyncio.Server, status: Callable[[], str]) -> None:
        self._server = server
        self._status = status

    @classmethod
    async def start(cls, listen: str, status: Callable[[], str]) -> ProbeAnswer:
        """Listen on `listen` (`host:port`; port 0 picks one). Raises ProbeListenError when
        it cannot be bound, before anything is served."""
        problem = probe_problem(listen)
        if problem is not None:
            raise ProbeListenError(listen, problem)
        parsed = tcp_host_port(listen)
        assert parsed is not None
        answer: ProbeAnswer | None = None

        async def on_connect(_: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            assert answer is not None
            await answer._answer(writer)

        try:
            server = await asyncio.start_server(on_connect, *parsed)
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


def probe_problem(listen: str) -> str | None:
    """Why `listen` cannot be a probe address right now, or None when it can."""
    if tcp_host_port(listen) is None:
        return "give it as host:port, e.g. 127.0.0.1:7419"
    return bind_problem(listen)


class ProbeListenError(OSError):
    """The probe address cannot be served; the message names it and why."""

    def __init__(self, listen: str, reason: str) -> None:
        super().__init__(f"cannot answer health probes on {listen}: {reason}")
        self.listen = listen
        self.reason = reason
