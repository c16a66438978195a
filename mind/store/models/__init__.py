"""Tables of the Mind's store (SQLAlchemy 2 declarative models).

This package is the store's schema as one public surface: import tables from
`mind.store.models`. Its modules group them by domain (`conversations`, `messages`, `runs`,
`approvals`, `remote`, `credentials`, `delegations`, `cluster`, `initiative`, `operations`,
`usage`, `widgets`, `recall`, all on `base`), and importing the package defines every one of them on
`Base.metadata`, which the migrations compare the schema against. A domain's vocabulary
(e.g. `credentials.CREDENTIAL_KINDS`) stays in its module.

Invariants the database itself holds (triggers and partial unique indexes are created by the
migrations, see `mind/store/migrations`):

* messages are append-only: an UPDATE is refused by a trigger;
* a tool projection's terminal is written once: an UPDATE of a row whose status is no longer
  `running` is refused by a trigger;
* an approval is decided once: an UPDATE of a row whose `decision` is set is refused;
* a task has at most one terminal transition: partial unique index on `task_transitions`;
* a conversation has at most one running run: partial unique index on `runs`;
* idempotency keys are unique per conversation.
"""

from mind.store.models.approvals import Approval, ApprovalAudit, ApprovalGrant
from mind.store.models.base import Base, utcnow
from mind.store.models.cluster import AttachedHand, ConversationLease, MindNode
from mind.store.models.conversations import (
    Conversation,
    ConversationMember,
    MemoryEntry,
    Summary,
)
from mind.store.models.credentials import Credential, PairingCode, ProviderSecret
from mind.store.models.delegations import Delegation
from mind.store.models.initiative import Firing, PendingAction, ScheduledAction
from mind.store.models.messages import Input, Media, Message
from mind.store.models.operations import Cursor, ManagementAudit, OutboxEvent, SeenObservation
from mind.store.models.recall import RecallEntry
from mind.store.models.remote import RemoteRun, Task, TaskTransition
from mind.store.models.runs import Run, ToolProjection, TurnKey
from mind.store.models.usage import UsageRecord
from mind.store.models.widgets import Widget, WidgetRecord, WidgetType

# The partial unique indexes, which only the migrations create: a predicate declared here is a
# dialect option (`sqlite_where`, `postgresql_where`), and declaring one loads that backend's
# whole SQLAlchemy dialect into every Mind, whichever backend its store uses.
PARTIAL_INDEXES = frozenset(
    {"uq_runs_one_running_per_conversation", "uq_task_transitions_one_terminal"}
)

__all__ = [
    "PARTIAL_INDEXES",
    "Approval",
    "ApprovalAudit",
    "ApprovalGrant",
    "AttachedHand",
    "Base",
    "Conversation",
    "ConversationLease",
    "ConversationMember",
    "Credential",
    "Cursor",
    "Delegation",
    "Firing",
    "Input",
    "ManagementAudit",
    "Media",
    "MemoryEntry",
    "Message",
    "MindNode",
    "OutboxEvent",
    "PairingCode",
    "PendingAction",
    "ProviderSecret",
    "RecallEntry",
    "RemoteRun",
    "Run",
    "ScheduledAction",
    "SeenObservation",
    "Summary",
    "Task",
    "TaskTransition",
    "ToolProjection",
    "TurnKey",
    "UsageRecord",
    "Widget",
    "WidgetRecord",
    "WidgetType",
    "utcnow",
]
