"""The live streaming calls of the running Mind, by the credential that authenticated each.

A revocation is only as good as its reach: the store refuses a revoked credential's next call,
but a stream opened before it would keep delivering. So every response-streaming call
(`Mind.Subscribe`, `HandLink.Attach`, any later one) registers here for as long as it runs, and
revoking a credential cuts each of them at once. Revoked ids are remembered for the life of the
process: a call that authenticated just before the revocation committed and registers just
after it is refused on registration, so no stream outlives its credential's revocation.

The cut happens at the revocation's commit (`committed`, called by the store before the event
bus hears of the commit), so a revoked stream never delivers the revocation's own event or
anything committed after it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from mind.errors import Unauthenticated
from mind.events.views import CredentialRevokedView
from mind.store.models import OutboxEvent

# The durable event of a revocation; its payload is a `CredentialRevokedView`.
CREDENTIAL_REVOKED = "credential_revoked"


def revoked_message(credential_id: str) -> str:
    return f"credential {credential_id} was revoked"


class CallCredentialRevoked(Unauthenticated):
    """The call's credential was revoked while the call was being set up (the authenticating
    interceptor ends the call UNAUTHENTICATED itself: it runs before any servicer)."""

    def __init__(self, credential_id: str) -> None:
        super().__init__(revoked_message(credential_id))


@dataclass(eq=False)
class LiveCall:
    """One registered call; `cut` ends it (on the event loop that serves it)."""

    credential_id: str
    cut: Callable[[], object]
    # Set before `cut` runs, so the call can tell a revocation from a peer's cancel.
    revoked: bool = False


class LiveCalls:
    """Registered calls by credential id, and the ids revoked while this process runs."""

    def __init__(self) -> None:
        self._calls: dict[str, set[LiveCall]] = {}
        # Revoked credential ids → how many live calls their revocation cut.
        self._revoked: dict[str, int] = {}

    def register(self, credential_id: str, cut: Callable[[], object]) -> LiveCall:
        """Track a call until `unregister`; raises CallCredentialRevoked if the id was revoked."""
        if credential_id in self._revoked:
            raise CallCredentialRevoked(credential_id)
        call = LiveCall(credential_id, cut)
        self._calls.setdefault(credential_id, set()).add(call)
        return call

    def is_revoked(self, credential_id: str) -> bool:
        """Whether this process revoked the credential (kept for the life of the process)."""
        return credential_id in self._revoked

    def unregister(self, call: LiveCall) -> None:
        calls = self._calls.get(call.credential_id)
        if calls is None:
            return
        calls.discard(call)
        if not calls:
            del self._calls[call.credential_id]

    def revoke(self, credential_id: str) -> int:
        """Cut every live call of a revoked credential; returns how many its revocation cut
        so far (asking again after the commit already cut them counts them once)."""
        calls = self._calls.pop(credential_id, set())
        for call in calls:
            call.revoked = True
            call.cut()
        self._revoked[credential_id] = self._revoked.get(credential_id, 0) + len(calls)
        return self._revoked[credential_id]

    def committed(self, events: Iterable[OutboxEvent]) -> None:
        """Cut the calls of every credential whose revocation is among `events`."""
        for event in events:
            if event.type == CREDENTIAL_REVOKED:
                self.revoke(CredentialRevokedView.from_payload(event.payload).credential_id)
