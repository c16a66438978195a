"""The one upstream subscription to the Mind, fanned out to every connection.

The feed resumes after the last durable id it saw whenever the stream breaks (Mind restart,
network), waiting with the platform backoff (1 s doubling to 30 s) between attempts, so
connections see neither a gap nor a duplicate. If the Mind no longer keeps what the feed missed
("snapshot required"), every subscribed connection is told to resync, and the feed starts over
from what the Mind still keeps. If the Mind refuses this gateway's own credential (revoked or
unknown, or without the `gateway` scope), no connection can be served any more: each is closed
UNAVAILABLE saying so, and the feed keeps retrying so a Face whose credential is replaced
serves again once restarted.

`trouble` says why the Face cannot do its job ("" while the feed is live); the server mirrors
it into the Face's health (NOT_SERVING with that reason), woken by `trouble_changed`.

For each revoked client credential the feed closes that credential's connections and reports
how many to the Mind (`Mind.ReportRevocation`), so `tobe admin credentials revoke` tells the
true count; the report is sent in the background, never holding up the events that follow.
Every connection is told when the feed is lost and when it is live again (`mind_link`), so
its person sees that the Mind is away rather than silence.

A Face given several Minds (sharing one database, where durable ids are global) fails over:
a stream that had been live a while and breaks is redialled at once; a Mind unreachable
(refused, or not connected within DIAL_PATIENCE) is left for the next one at once, the feed
resubscribing after the same last durable id; the backoff applies only after a whole round of
Minds failed.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time

from face.connection import Connection, Phase, RenderedEvent
from face.errors import MindCallError
from face.mind_client import MindClient
from face.mind_trouble import cannot_reach, connecting, credential_refused
from face.projection import AdmissionModes
from tobe.runtime.backoff import Backoff
from tobe.v1 import events_pb2

log = logging.getLogger(__name__)

# With several Minds: how long a Mind may take to accept a connection before the next is tried.
DIAL_PATIENCE = 2.0


class EventFeed:
    def __init__(self, mind: MindClient, modes: AdmissionModes) -> None:
        self._mind = mind
        self.modes = modes
        self.connections: set[Connection] = set()
        # Highest durable id received from the Mind.
        self.last_id = 0
        self.live = asyncio.Event()
        self._backoff = Backoff()
        # Credentials revoked while this gateway runs: a connection that authenticated just
        # before the revocation committed must not join just after the event went by.
        self.revoked: set[str] = set()
        # Revocation reports on their way to the Mind.
        self._reports: set[asyncio.Task[None]] = set()
        # Why the feed from the Mind is lost; "" while it is live (or not yet lost).
        self.link_down = ""
        # The status code of the last failed subscription; "" until one fails.
        self._failure = ""
        # Why the Mind refused this gateway's own credential; "" unless it did.
        self._refused = ""
        # With several Minds: how many were found unreachable in a row.
        self._unreachable = 0
        # Set whenever `trouble` may have changed.
        self.trouble_changed = asyncio.Event()

    async def run(self) -> None:
        while True:
            live_since: float | None = None
            try:
                if len(self._mind.addresses) > 1:
                    await self._mind.dial(DIAL_PATIENCE)
                async for item in self._mind.subscribe(
                    self.last_id, include_ephemeral=True, reports_revocations=True
                ):
                    if isinstance(item, events_pb2.Event):
                        self.dispatch(item)
                    elif not self.live.is_set():
                        live_since, self._unreachable = time.monotonic(), 0
                        self.live.set()
                        self._backoff.reset()
                        self._refused = ""
                        self.trouble_changed.set()
                        log.info(
                            "event feed live after durable id %d, from the Mind at %s",
                            self.last_id,
                            self._mind.address,
                        )
                        self._link_changed("")
            except MindCallError as exc:
                self.live.clear()
                if exc.code == "FAILED_PRECONDITION" and "snapshot required" in exc.message:
                    self._restart_from_kept()
                    continue
                self._failure = exc.code
                self.trouble_changed.set()
                self._link_changed(f"the Face lost its link to the Mind ({exc.code})")
                if exc.code in ("UNAUTHENTICATED", "PERMISSION_DENIED"):
                    self._gateway_refused(exc.message)
                if exc.code == "UNAVAILABLE" and self._tries_again_at_once(exc, live_since):
                    continue
                delay = self._backoff.next_delay()
                log.warning("event feed from the Mind lost (%s); retrying in %.1fs", exc, delay)
                await self._wait_to_retry(delay)

    async def _wait_to_retry(self, delay: float) -> None:
        """Wait `delay` seconds, or until a client's call is answered by the Mind: it is back,
        and the clients would otherwise miss its events until the backoff ran out."""
        self._mind.answered.clear()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._mind.answered.wait(), delay)

    def _tries_again_at_once(self, exc: MindCallError, live_since: float | None) -> bool:
        """With several Minds: redial one whose stream had been live a while, else move on to
        the next; False once a whole round of them was unreachable (the backoff is due)."""
        if len(self._mind.addresses) < 2:
            return False
        # A stream that breaks as soon as it is live is a Mind as good as unreachable.
        if live_since is not None and time.monotonic() - live_since >= DIAL_PATIENCE:
            log.warning("event feed from %s lost (%s); redialling", self._mind.address, exc)
            return True
        self._unreachable += 1
        self._mind.fail_over()
        if self._unreachable < len(self._mind.addresses):
            return True
        self._unreachable = 0
        return False

    @property
    def trouble(self) -> str:
        """Why this Face cannot serve anyone now; "" while its feed from the Mind is live."""
        if self._refused:
            return credential_refused(self._refused)
        if self.live.is_set():
            return ""
        if self._failure:
            return cannot_reach(self._mind.address, self._failure)
        return connecting(self._mind.address)

    def dispatch(self, event: events_pb2.Event) -> None:
        """Fan one upstream event out to every connection (synchronously, in feed order)."""
        if event.durable_id > 0:
            if event.durable_id <= self.last_id:
                return
            self.last_id = event.durable_id
        self.modes.learn(event)
        if event.WhichOneof("payload") == "credential_revoked":
            self._revoke(event.credential_revoked.credential_id)
            return
        rendered = RenderedEvent(event, self.modes)
        for connection in list(self.connections):
            connection.on_live_event(rendered)

    def _link_changed(self, down: str) -> None:
        """Tell every connection that the link went down (`down` says why) or came back ("")."""
        if bool(down) == bool(self.link_down):
            return
        self.link_down = down
        for connection in list(self.connections):
            connection.mind_link(down)

    def _revoke(self, credential_id: str) -> None:
        self.revoked.add(credential_id)
        closed = 0
        for connection in list(self.connections):
            if connection.identity.credential_id == credential_id:
                closed += connection.queue.closing is None
                connection.close("UNAUTHENTICATED", "credential revoked")
        report = asyncio.create_task(self._report(credential_id, closed))
        self._reports.add(report)
        report.add_done_callback(self._reports.discard)

    async def _report(self, credential_id: str, closed: int) -> None:
        try:
            await self._mind.report_revocation(credential_id, closed)
        except MindCallError as exc:
            # The revocation took effect all the same; only its count misses these.
            log.warning(
                "could not report %d connection(s) closed for a revocation: %s", closed, exc
            )

    def _gateway_refused(self, why: str) -> None:
        if not self._refused:
            log.error(
                "the Mind refused this Face's gateway credential (%s); give the Face a valid "
                "`service` credential with scope `gateway` and restart it",
                why,
            )
        self._refused = why
        message = credential_refused(why)
        for connection in list(self.connections):
            connection.close("UNAVAILABLE", message)

    def _restart_from_kept(self) -> None:
        log.warning("the Mind no longer keeps events after %d; connections resync", self.last_id)
        for connection in list(self.connections):
            if connection.phase is not Phase.IDLE:
                connection.close("RESOURCE_EXHAUSTED", "resync required", resync=True)
        self.last_id = 0
