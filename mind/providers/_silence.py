"""How long a provider may send nothing (`provider.first_byte_timeout`).

A model server that stopped answering (or never started to) would otherwise leave a person
looking at nothing until the HTTP read timeout, retries included. One `Silence` per call bounds
the wait for the first byte of the response body (the headers and the first streamed bytes),
counted from the start of the call across every retry; after that, each gap between the
stream's bytes is bounded by the same limit, so a stream that stalls midway ends too.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from mind.providers.base import ErrorKind, ProviderError

SETTING = "provider.first_byte_timeout"


class Silenced(Exception):
    """The provider sent nothing for the whole limit.

    Internal: the adapter ends the result with stop reason `error`; no client sees it."""


class Silence:
    def __init__(self, provider: str, limit: float) -> None:
        self.provider = provider
        self.limit = limit
        self._loop = asyncio.get_running_loop()
        self._deadline = self._loop.time() + limit
        self._active: asyncio.Timeout | None = None
        # Whether a byte of the current response's body arrived (its first byte is behind us).
        self.heard_any = False

    def next_response(self) -> None:
        """A new attempt: its first byte is still to come (the silence goes on)."""
        self.heard_any = False

    def heard(self) -> None:
        """Bytes arrived: the silence starts over."""
        self.heard_any = True
        self._deadline = self._loop.time() + self.limit
        if self._active is not None:
            self._active.reschedule(self._deadline)

    @asynccontextmanager
    async def bound(self) -> AsyncIterator[None]:
        """Run the block until the silence outlasts the limit; then raise Silenced."""
        active = asyncio.timeout_at(self._deadline)
        try:
            async with active:
                self._active = active
                try:
                    yield
                finally:
                    self._active = None
        except TimeoutError:
            if active.expired():
                raise Silenced from None
            raise

    def error(self, before: ProviderError | None) -> ProviderError:
        """What the person is told: the provider, the limit and the setting, and what failed
        before the silence (a retried error) if anything did."""
        if self.heard_any:
            return ProviderError(
                ErrorKind.STREAM,
                f"{self.provider} sent nothing for {self.limit:g} s in the middle of its "
                f"response ({SETTING})",
            )
        message = f"{self.provider} sent nothing for {self.limit:g} s ({SETTING})"
        if before is not None:
            message += f"; before that: {before.message}"
        return ProviderError(ErrorKind.UNAVAILABLE, message)
