"""A Hand's health endpoint: `grpc.health.v1` saying whether the Hand is attached to its Mind.

A Hand serves nothing else (it dials the Mind), so container health checks and supervisors ask
this endpoint instead: SERVING while the Mind has welcomed the Hand on a live stream,
NOT_SERVING while it connects or reconnects, with the reason (`Hand.detachment`: how the last
stream ended) that `tobe health --target ADDRESS` prints, or, with a probe address
(`hand.probe_listen`), read as one plain line there (`tobe.runtime.probe_answer`).
"""

from __future__ import annotations

import asyncio
import contextlib

from hand._hand import Hand
from tobe.runtime.server import BindError, GrpcServer, start_server

# How often a detachment (or a change of its reason) is noticed; the Hand only exposes
# "attached" as a settable event.
DETACH_POLL_SECONDS = 0.2
STOP_GRACE = 1.0


class HealthListenError(RuntimeError):
    """The health endpoint cannot listen where it was asked to."""


class HealthEndpoint:
    """Serves the health service on `address` and mirrors `hand.attached` into it."""

    def __init__(self, hand: Hand, server: GrpcServer) -> None:
        self._hand = hand
        self._server = server
        self._mirror = asyncio.create_task(self._follow(), name="hand health")

    @classmethod
    async def start(cls, hand: Hand, address: str | None, probe_listen: str = "") -> HealthEndpoint:
        """Serve on `address` (none: the probe address alone) and answer probes on
        `probe_listen` (empty: nowhere)."""
        addresses = [address] if address else []
        try:
            server = await start_server([], addresses, serving=False, probe_listen=probe_listen)
        except BindError as exc:
            raise HealthListenError(f"cannot serve health on {exc.address}: {exc.reason}") from None
        except (OSError, RuntimeError) as exc:  # grpc reports a failed bind as RuntimeError
            raise HealthListenError(f"cannot serve health on {address}: {exc}") from None
        return cls(hand, server)

    async def _follow(self) -> None:
        shown: tuple[bool, str] | None = None
        while True:
            now = (self._hand.attached.is_set(), self._hand.detachment)
            if now != shown:
                await self._server.set_serving(*now)
                shown = now
            if now[0]:
                await asyncio.sleep(DETACH_POLL_SECONDS)
                continue
            # Detached: an attach is shown at once, a new reason within the poll.
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._hand.attached.wait(), DETACH_POLL_SECONDS)

    async def stop(self) -> None:
        self._mirror.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._mirror
        await self._server.stop(STOP_GRACE)
