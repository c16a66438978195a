"""What the Management service answers with: plain values, free of the store and of gRPC."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from mind.awareness.health import AdapterReport
from mind.events.views import ConversationView

if TYPE_CHECKING:
    from mind.store.models import Credential


@dataclass(frozen=True)
class CredentialInfo:
    """A credential without its secret (the store never has the secret)."""

    id: str
    kind: str
    principal: str
    scopes: tuple[str, ...]
    prefix: str
    label: str
    created_at: datetime
    expires_at: datetime | None
    revoked_at: datetime | None
    last_seen_at: datetime | None = None
    # The browser a paired credential signed in; "" for any other credential.
    device_id: str = ""

    @classmethod
    def of(cls, row: Credential) -> CredentialInfo:
        return cls(
            id=row.id,
            kind=row.kind,
            principal=row.principal,
            scopes=tuple(row.scopes or ()),
            prefix=row.prefix,
            label=row.label or "",
            created_at=row.created_at,
            expires_at=row.expires_at,
            revoked_at=row.revoked_at,
            last_seen_at=row.last_seen_at,
            device_id=row.device_id or "",
        )


@dataclass(frozen=True)
class IssuedCredential:
    """A new credential and its secret: the only moment the secret exists outside its owner."""

    credential: CredentialInfo
    secret: str = field(repr=False)


@dataclass(frozen=True)
class Revocation:
    credential: CredentialInfo
    # Live connections closed: the Mind's own streams (Hands, a gateway's subscription) and
    # the client connections gateways reported closing; 0 offline (nothing is connected).
    disconnected: int
    # Gateways that did not report in time (`mind.credentials.revocation_reports`).
    unreported_gateways: int = 0


@dataclass(frozen=True)
class Rotation:
    credential: CredentialInfo
    secret: str = field(repr=False)
    revoked_id: str = ""
    disconnected: int = 0
    unreported_gateways: int = 0


@dataclass(frozen=True)
class HandInfo:
    hand_id: str
    name: str
    principal: str
    tools: int
    connected_at: datetime | None
    version: str = ""


@dataclass(frozen=True)
class ServiceInfo:
    name: str
    address: str
    state: str


@dataclass(frozen=True)
class ModelBudgetInfo:
    """The configured model's window and what a request of the default profile spends of it
    before any message (see `tobe.v1.ModelBudget`)."""

    model: str
    context_window: int
    window_source: str
    output_tokens: int
    reserve_tokens: int
    prompt_limit: int
    overhead_tokens: int
    tools: int
    profile: str
    structured_output: str


@dataclass(frozen=True)
class StatusReport:
    mode: str
    version: str
    data_dir: str
    database_url: str
    database_size_bytes: int
    schema_revision: str
    conversations: int
    active_runs: int
    hands: tuple[HandInfo, ...] = ()
    gateway_subscribers: int = 0
    services: tuple[ServiceInfo, ...] = ()
    adapters: AdapterReport = AdapterReport()
    model_budget: ModelBudgetInfo | None = None
    # Decision-layer stage failures since the Mind started, by stage (`MindLink`).
    decision_failures: Mapping[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class AuditRecord:
    id: int
    time: datetime
    action: str
    actor: str
    target: str
    details: dict[str, Any]


@dataclass(frozen=True)
class ConversationDetail:
    conversation: ConversationView
    messages: int
    runs: int
    tool_calls: int
    approvals: int


@dataclass(frozen=True)
class Deletion:
    key: str
    # Rows removed per table.
    removed: dict[str, int]
