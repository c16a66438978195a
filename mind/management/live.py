"""What the running Mind lends the Management service: its live state and disconnect hook.

Offline there is no Mind, so the service gets no link and reports mode "offline".
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass

from mind.awareness.health import AdapterReport
from mind.credentials.revocation_reports import RevocationReports
from mind.events.views import CompactionView, ConversationView
from mind.management.records import HandInfo, ModelBudgetInfo, ServiceInfo


@dataclass
class MindLink:
    """Callables into the running Mind's components (wired in `mind.management.attach`).

    `disconnect_credential` ends every live stream the credential authenticated on the Mind
    (a gateway's `Subscribe`, a Hand's `Attach`) with UNAUTHENTICATED and returns how many its
    revocation ended (most were cut already as the revocation committed).
    A client's connections to a Face are not the Mind's: the Face closes them when it sees the
    durable `credential_revoked` event (the store hands it to the event bus as it commits, so
    gateways see it at once) and reports how many to `revocation_reports`.
    `forget_conversation` drops the Mind's cached actor of a deleted conversation, so a
    conversation created later under the same key starts afresh. `compact_conversation`
    compacts a conversation's context through its actor (after its active run, if any) and
    returns the committed compaction; it raises the refusals (`mind.errors`) the Mind's own
    clients get.
    `change_profile` sets a conversation's profile through the Mind's conversation manager,
    so its actor makes the new profile for its next run.
    """

    disconnect_credential: Callable[[str], int]
    revocation_reports: RevocationReports
    hands: Callable[[], Sequence[HandInfo]]
    gateway_subscribers: Callable[[], int]
    services: Callable[[], Sequence[ServiceInfo]]
    # Awareness's adapters and their health (asked of Awareness at each call).
    adapters: Callable[[], Awaitable[AdapterReport]]
    forget_conversation: Callable[[str], Awaitable[None]]
    compact_conversation: Callable[[str], Awaitable[CompactionView]]
    change_profile: Callable[[str, str], Awaitable[ConversationView]]
    # The configured model's window and the default profile's per-request overhead; None
    # when no window is enforced (the offline demo).
    model_budget: Callable[[], ModelBudgetInfo | None]
    # Decision-layer stages whose answer stayed unusable since the start, by stage.
    decision_failures: Callable[[], Mapping[str, int]] = dict
    # A widget type was put or deleted: the model's widget tools describe the types anew.
    widget_types_changed: Callable[[], None] = lambda: None
