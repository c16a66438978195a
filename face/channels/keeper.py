"""Every enabled channel kept running, each in its own task.

A channel whose run fails (its network is down, its login refused, anything) is logged in one
line and started again with a new transport after 1 s, doubling to 30 s; the other channels
carry on. A run that lasted a while counts as a success: its next failure waits 1 s again.
The line carries the error's message, never its traceback (where a library may have put a
URL with credentials), with the account's secrets masked.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass

from face.channels.transport import Transport, TransportError
from tobe.runtime.backoff import Backoff
from tobe.runtime.redact import MASK, redact
from tobe.runtime.tasks import cancel_and_wait

log = logging.getLogger(__name__)

# A run that lasted this long was a success: the next failure waits the first delay again.
STABLE_RUN = 60.0
# Longest a failed or stopped transport may take to close.
CLOSE_TIMEOUT = 5.0

RunChannel = Callable[[str, Transport], Awaitable[None]]
Sleep = Callable[[float], Awaitable[None]]


@dataclass(frozen=True)
class Channel:
    name: str
    # A new transport for each run.
    make_transport: Callable[[], Transport]
    # Values no log line may show (the account's password).
    secrets: tuple[str, ...] = ()

    def masked(self, text: str) -> str:
        """`text` for a log line: the secrets masked, on one line."""
        for secret in self.secrets:
            if secret:
                text = text.replace(secret, MASK)
        return " ".join(redact(text).split())


class ChannelKeeper:
    """Runs `channels` with `run` (the bridge's `run_channel`) until cancelled."""

    def __init__(
        self,
        channels: Sequence[Channel],
        run: RunChannel,
        *,
        sleep: Sleep = asyncio.sleep,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._channels = list(channels)
        self._run = run
        self._sleep = sleep
        self._clock = clock
        # Channels whose first run has begun.
        self.started: set[str] = set()

    def status(self) -> str:
        """The probe's answer: SERVING once every channel was started (a channel failing later
        is being restarted, which its log says)."""
        waiting = [c.name for c in self._channels if c.name not in self.started]
        return "SERVING" if not waiting else f"NOT_SERVING (starting {', '.join(waiting)})"

    async def run(self) -> None:
        tasks = [
            asyncio.create_task(self._keep(channel), name=f"channel {channel.name}")
            for channel in self._channels
        ]
        try:
            await asyncio.gather(*tasks)
        finally:
            await cancel_and_wait(*tasks)

    async def _keep(self, channel: Channel) -> None:
        backoff = Backoff()
        while True:
            began = self._clock()
            reason = await self._run_once(channel)
            if self._clock() - began >= STABLE_RUN:
                backoff.reset()
            delay = backoff.next_delay()
            log.error(
                "channel %s stopped: %s; starting it again in %.1f s",
                channel.name,
                channel.masked(reason),
                delay,
            )
            await self._sleep(delay)

    async def _run_once(self, channel: Channel) -> str:
        """One run of `channel` with a new transport; why it ended."""
        self.started.add(channel.name)
        transport: Transport | None = None
        try:
            transport = channel.make_transport()
            await self._run(channel.name, transport)
            return "its run ended by itself"
        except TransportError as exc:
            return str(exc) or type(exc).__name__
        except Exception as exc:
            return f"{type(exc).__name__}: {exc}"
        finally:
            if transport is not None:
                await _close(channel, transport)


async def _close(channel: Channel, transport: Transport) -> None:
    try:
        await asyncio.wait_for(transport.close(), CLOSE_TIMEOUT)
    except asyncio.CancelledError:
        raise
    except Exception as exc:
        log.warning(
            "channel %s: closing its transport failed: %s", channel.name, channel.masked(str(exc))
        )
