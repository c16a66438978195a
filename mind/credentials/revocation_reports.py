"""How many client connections the gateways closed for a revocation, as they report it.

A client's connections are a gateway's (Face's), not the Mind's: a Face closes them when the
`credential_revoked` event reaches its subscription, so `LiveCalls` never sees them. A gateway
that subscribes with `reports_revocations` answers every such event with how many it closed
(`Mind.ReportRevocation`). An operator's revocation registers its credential before it commits
(`expect`), so no report can arrive unseen, then `collect`s the reports of every reporting
gateway subscribed at that moment, waiting at most `REPORT_WAIT` seconds; a gateway silent for
that long (its stream broke, it is overloaded) is counted as unreported, never guessed.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterator
from dataclasses import dataclass, field

# How long a revocation waits for the gateways' reports before it answers without them.
REPORT_WAIT = 5.0


@dataclass(eq=False)
class Expected:
    """One revocation in progress: the reports received for its credential."""

    credential_id: str
    closed: int = 0
    reports: int = 0
    arrived: asyncio.Event = field(default_factory=asyncio.Event)


@dataclass(frozen=True)
class Collected:
    """Client connections the gateways closed, and how many gateways did not say in time."""

    closed: int
    unreported: int


class RevocationReports:
    """Reporting gateways subscribed now, and the revocations waiting for their reports."""

    def __init__(self, wait: float = REPORT_WAIT) -> None:
        self._wait = wait
        # Subscriptions of reporting gateways by the credential each authenticated with.
        self._gateways: dict[str, int] = {}
        self._expected: dict[str, set[Expected]] = {}

    @contextlib.contextmanager
    def gateway(self, credential_id: str) -> Iterator[None]:
        """While a reporting gateway's subscription (authenticated as `credential_id`) runs."""
        self._gateways[credential_id] = self._gateways.get(credential_id, 0) + 1
        try:
            yield
        finally:
            self._gateways[credential_id] -= 1
            if not self._gateways[credential_id]:
                del self._gateways[credential_id]

    def expect(self, credential_id: str) -> Expected:
        """Start counting reports for `credential_id` (before its revocation commits)."""
        expected = Expected(credential_id)
        self._expected.setdefault(credential_id, set()).add(expected)
        return expected

    def report(self, credential_id: str, closed: int) -> None:
        """A gateway closed `closed` connections of `credential_id`; ignored unless expected."""
        for expected in self._expected.get(credential_id, ()):
            expected.closed += max(0, closed)
            expected.reports += 1
            expected.arrived.set()

    async def collect(self, expected: Expected) -> Collected:
        """The reports of the gateways subscribed now, waiting up to the report wait; a
        gateway's own revoked credential ends its subscription, so it reports nothing."""
        gateways = sum(
            n for gateway, n in self._gateways.items() if gateway != expected.credential_id
        )
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self._wait
        try:
            while expected.reports < gateways:
                expected.arrived.clear()
                remaining = deadline - loop.time()
                if remaining <= 0:
                    break
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(remaining):
                        await expected.arrived.wait()
        finally:
            self.forget(expected)
        return Collected(expected.closed, max(0, gateways - expected.reports))

    def forget(self, expected: Expected) -> None:
        """Stop counting for `expected` (collected, or its revocation failed)."""
        waiting = self._expected.get(expected.credential_id)
        if waiting is None:
            return
        waiting.discard(expected)
        if not waiting:
            del self._expected[expected.credential_id]
