"""Tables of the Mind's store (SQLAlchemy 2 declarative models).

Invariants the database itself holds (triggers are created by the migrations, see
`mind/store/migrations`):

* messages are append-only: an UPDATE is refused by a trigger;
* a tool projection's terminal is written once: an UPDATE of a row whose status is no longer
  `running` is refused by a trigger;
* an approval is decided once: an UPDATE of a row whose `decision` is set is refused;
* a task has at most one terminal transition: partial unique index on `task_transitions`;
* a conversation has at most one running run: partial unique index on `runs`;
* idempotency keys are unique per conversation.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    CheckConstraint,
    DateTime,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    String,
    Text,
    UniqueConstraint,
    text,
)
from sqlalchemy.engine import Dialect
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column
from sqlalchemy.types import TypeDecorator

NAMING = {
    "ix": "ix_%(table_name)s_%(column_0_N_name)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}

# SQLite only turns INTEGER PRIMARY KEY into an auto-increment rowid; BigInteger elsewhere.
BigId = BigInteger().with_variant(Integer(), "sqlite")


def utcnow() -> datetime:
    return datetime.now(UTC)


class UTCDateTime(TypeDecorator[datetime]):
    """A timezone-aware UTC datetime on every backend.

    SQLite has no timezone type: SQLAlchemy stores the wall-clock digits and reads back naive
    datetimes. Converting to UTC on the way in and tagging UTC on the way out makes values
    compare the same on SQLite and PostgreSQL. Naive datetimes are refused on write, because
    their meaning is ambiguous.
    """

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError("naive datetime: store timezone-aware values (e.g. UTC)")
        return value.astimezone(UTC)

    def process_result_value(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            return value.replace(tzinfo=UTC)
        return value.astimezone(UTC)


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING)
    type_annotation_map = {dict[str, Any]: JSON, list[Any]: JSON}


def _in(column: str, values: tuple[str, ...]) -> str:
    return f"{column} IN ({', '.join(repr(v) for v in values)})"


DETAIL_MODES = ("summary", "transparent")
RUN_STATES = ("running", "completed", "failed", "cancelled", "interrupted")
TOOL_STATUSES = ("running", "succeeded", "failed", "denied", "skipped", "cancelled")
MESSAGE_ROLES = ("user", "assistant", "tool", "note")
INPUT_STATES = ("queued", "delivered", "dropped")
PENDING_ACTION_STATES = ("pending", "confirmed", "cancelled", "amended", "expired")
ACTION_TIMINGS = ("immediate", "planned")
SCHEDULE_STATES = ("active", "paused", "finished", "deleted")
FIRING_OUTCOMES = ("running", "sent", "skipped", "failed", "aborted")
APPROVAL_DECISIONS = ("approve_once", "approve_conversation", "deny", "expired")
EFFECTS = ("read_only", "workspace_write", "external_side_effect", "unknown")
TASK_STATES = (
    "offered",
    "accepted",
    "succeeded",
    "failed",
    "rejected",
    "cancelled",
    "timed_out",
    "lost",
)
TASK_TERMINALS = ("succeeded", "failed", "rejected", "cancelled", "timed_out", "lost")
CREDENTIAL_KINDS = ("client", "hand", "service")


class Conversation(Base):
    __tablename__ = "conversations"
    __table_args__ = (
        CheckConstraint(
            "key LIKE 'p\\_%' ESCAPE '\\' OR key LIKE 'g\\_%' ESCAPE '\\'", name="key_prefix"
        ),
    )

    key: Mapped[str] = mapped_column(String(64), primary_key=True)
    owner: Mapped[str] = mapped_column(String(128), index=True)
    title: Mapped[str] = mapped_column(String(256), default="")
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)
    # Hand this conversation's tools run on (its name); empty means none chosen.
    active_hand: Mapped[str] = mapped_column(String(128), default="")
    # Generation of the latest context summary (0: none); compaction compares and sets it.
    context_generation: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    # Profile the conversation runs with; empty: the default profile.
    profile: Mapped[str] = mapped_column(String(64), default="", server_default="")
    # What made it (`mind.conversation.kinds`): a person's "chat", or one the platform made
    # for "awareness" observations; clients open a person's own conversations first.
    kind: Mapped[str] = mapped_column(String(16), default="chat", server_default="chat")


class ConversationMember(Base):
    """Principals besides the owner who may use a group (`g_`) conversation."""

    __tablename__ = "conversation_members"

    conversation_key: Mapped[str] = mapped_column(
        ForeignKey("conversations.key", ondelete="CASCADE"), primary_key=True
    )
    principal: Mapped[str] = mapped_column(String(128), primary_key=True, index=True)


class SessionGroup(Base):
    """Groups the sessions of one conversation (one group per conversation today)."""

    __tablename__ = "session_groups"

    id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    conversation_key: Mapped[str] = mapped_column(
        ForeignKey("conversations.key", ondelete="CASCADE"), index=True
    )
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)


class Session(Base):
    """A contiguous context of a conversation; compaction summaries apply to one session."""

    __tablename__ = "sessions"

    id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    group_id: Mapped[int] = mapped_column(ForeignKey("session_groups.id", ondelete="CASCADE"))
    conversation_key: Mapped[str] = mapped_column(
        ForeignKey("conversations.key", ondelete="CASCADE"), index=True
    )
    started_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)
    ended_at: Mapped[datetime | None] = mapped_column(UTCDateTime())


class Run(Base):
    __tablename__ = "runs"
    __table_args__ = (
        CheckConstraint(_in("state", RUN_STATES), name="state"),
        CheckConstraint(_in("detail_mode", DETAIL_MODES), name="detail_mode"),
        Index(
            "uq_runs_one_running_per_conversation",
            "conversation_key",
            unique=True,
            sqlite_where=text("state = 'running'"),
            postgresql_where=text("state = 'running'"),
        ),
    )

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    conversation_key: Mapped[str] = mapped_column(
        ForeignKey("conversations.key", ondelete="CASCADE"), index=True
    )
    state: Mapped[str] = mapped_column(String(16), default="running")
    # "user", "followup", "observation:<trust>", "schedule".
    trigger: Mapped[str] = mapped_column(String(64), default="user")
    detail_mode: Mapped[str] = mapped_column(String(16), default="summary")
    # Permissions of the source that triggered the run (observation trust), as a JSON object.
    permissions: Mapped[dict[str, Any]] = mapped_column(default=dict)
    # What started it, for a person deciding on its approvals ("a medium-trust observation from
    # email@work (INBOX)"; `mind.conversation.origins`); "" for a person's message.
    origin: Mapped[str] = mapped_column(Text, default="")
    reason: Mapped[str] = mapped_column(Text, default="")
    steps: Mapped[int] = mapped_column(Integer, default=0)
    usage: Mapped[dict[str, Any]] = mapped_column(default=dict)
    started_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)
    finished_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    # A sealed run's sensitive tools (tool name → dataset); None for a run that is not sealed.
    sealed: Mapped[dict[str, str] | None] = mapped_column(JSON, default=None)
    # Once its key is deleted: which datasets were queried, with what status.
    redaction: Mapped[list[dict[str, str]] | None] = mapped_column(JSON, default=None)


class TurnKey(Base):
    """The key a sealed run's raw values are encrypted under (`mind.sealing`); deleting the
    row is what makes them unreadable."""

    __tablename__ = "turn_keys"

    run_id: Mapped[str] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"), primary_key=True)
    key: Mapped[bytes] = mapped_column(LargeBinary)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)


class Message(Base):
    """Append-only conversation history."""

    __tablename__ = "messages"
    __table_args__ = (
        CheckConstraint(_in("role", MESSAGE_ROLES), name="role"),
        # Restores read the messages after a summary: cost independent of the history before.
        Index("ix_messages_conversation_key_id", "conversation_key", "id"),
    )

    id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    conversation_key: Mapped[str] = mapped_column(
        ForeignKey("conversations.key", ondelete="CASCADE")
    )
    session_id: Mapped[int | None] = mapped_column(ForeignKey("sessions.id", ondelete="CASCADE"))
    run_id: Mapped[str | None] = mapped_column(String(40), index=True)
    role: Mapped[str] = mapped_column(String(16))
    text: Mapped[str] = mapped_column(Text, default="")
    # Role-specific structure: thinking blocks, tool calls, images, tool_call_id, is_error, source.
    payload: Mapped[dict[str, Any]] = mapped_column(default=dict)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)


class Input(Base):
    """A user message accepted by SendChat, waiting for or delivered to a run.

    Holds the idempotency key, so a retried send finds the original and creates nothing.
    """

    __tablename__ = "inputs"
    __table_args__ = (
        UniqueConstraint("conversation_key", "idempotency_key"),
        CheckConstraint(_in("state", INPUT_STATES), name="state"),
    )

    id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    conversation_key: Mapped[str] = mapped_column(
        ForeignKey("conversations.key", ondelete="CASCADE"), index=True
    )
    idempotency_key: Mapped[str] = mapped_column(String(128))
    principal: Mapped[str] = mapped_column(String(128))
    text: Mapped[str] = mapped_column(Text)
    steer: Mapped[bool] = mapped_column(Boolean, default=False)
    detail_mode: Mapped[str] = mapped_column(String(16), default="summary")
    # Set when not a person's message: {"kind": "observation", "trust", "permissions", ...};
    # such an input is delivered as a note and its run carries `permissions`. A post's is
    # {"kind": "post", "posted_by": ...}: delivered as an assistant message, with no run.
    source: Mapped[dict[str, Any]] = mapped_column(default=dict)
    # References of the images sent with it (`[{digest, media_type, size_bytes}]`; the bytes
    # are in `media`), copied into the message's payload on delivery.
    images: Mapped[list[Any]] = mapped_column(default=list, server_default="[]")
    state: Mapped[str] = mapped_column(String(16), default="queued")
    # Set once delivered: the message it became and the run that took it.
    message_id: Mapped[int | None] = mapped_column(BigInteger)
    run_id: Mapped[str | None] = mapped_column(String(40))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)


class ToolProjection(Base):
    """Display projection of one tool call: admission, then exactly one terminal."""

    __tablename__ = "tool_projections"
    __table_args__ = (
        CheckConstraint(_in("admitted_mode", DETAIL_MODES), name="admitted_mode"),
        CheckConstraint(_in("status", TOOL_STATUSES), name="status"),
    )

    tool_call_id: Mapped[str] = mapped_column(String(128), primary_key=True)
    conversation_key: Mapped[str] = mapped_column(
        ForeignKey("conversations.key", ondelete="CASCADE"), index=True
    )
    run_id: Mapped[str] = mapped_column(String(40), index=True)
    tool: Mapped[str] = mapped_column(String(128))
    hand_id: Mapped[str] = mapped_column(String(128), default="")
    admitted_mode: Mapped[str] = mapped_column(String(16))
    arguments_summary: Mapped[str] = mapped_column(Text, default="")
    # Versioned projection; raw arguments only when admitted transparent.
    arguments_projection: Mapped[dict[str, Any]] = mapped_column(default=dict)
    projection_version: Mapped[int] = mapped_column(Integer, default=1)
    status: Mapped[str] = mapped_column(String(16), default="running")
    result_summary: Mapped[str] = mapped_column(Text, default="")
    # Raw result only when admitted transparent.
    result_projection: Mapped[dict[str, Any]] = mapped_column(default=dict)
    admitted_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)
    finished_at: Mapped[datetime | None] = mapped_column(UTCDateTime())


class Approval(Base):
    __tablename__ = "approvals"
    __table_args__ = (
        CheckConstraint(
            f"decision IS NULL OR {_in('decision', APPROVAL_DECISIONS)}", name="decision"
        ),
        CheckConstraint(_in("effect", EFFECTS), name="effect"),
    )

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    conversation_key: Mapped[str] = mapped_column(
        ForeignKey("conversations.key", ondelete="CASCADE"), index=True
    )
    run_id: Mapped[str] = mapped_column(String(40))
    tool_call_id: Mapped[str] = mapped_column(String(128), unique=True)
    tool: Mapped[str] = mapped_column(String(128))
    effect: Mapped[str] = mapped_column(String(32))
    hand_id: Mapped[str] = mapped_column(String(128), default="")
    arguments_summary: Mapped[str] = mapped_column(Text, default="")
    arguments_digest: Mapped[str] = mapped_column(String(64))
    reason: Mapped[str] = mapped_column(Text, default="")
    # What the person decides on, in every detail mode (`mind.tools.decision`).
    decision_text: Mapped[str] = mapped_column(Text, default="")
    # What started the run that made the call (`runs.origin`).
    origin: Mapped[str] = mapped_column(Text, default="")
    requested_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)
    expires_at: Mapped[datetime] = mapped_column(UTCDateTime())
    decision: Mapped[str | None] = mapped_column(String(32))
    decided_by: Mapped[str | None] = mapped_column(String(128))
    decision_reason: Mapped[str] = mapped_column(Text, default="")
    decided_at: Mapped[datetime | None] = mapped_column(UTCDateTime())


class ApprovalGrant(Base):
    """The Actor's persisted approval cache ("approve for this conversation")."""

    __tablename__ = "approval_grants"
    __table_args__ = (UniqueConstraint("conversation_key", "tool", "hand_id"),)

    id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    conversation_key: Mapped[str] = mapped_column(
        ForeignKey("conversations.key", ondelete="CASCADE")
    )
    tool: Mapped[str] = mapped_column(String(128))
    hand_id: Mapped[str] = mapped_column(String(128), default="")
    approval_id: Mapped[str] = mapped_column(String(40))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)


class ApprovalAudit(Base):
    """Security audit of every verdict: summaries and structured verdicts, never raw arguments."""

    __tablename__ = "approval_audit"

    id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    approval_id: Mapped[str | None] = mapped_column(String(40), index=True)
    conversation_key: Mapped[str] = mapped_column(String(64), index=True)
    tool_call_id: Mapped[str] = mapped_column(String(128))
    tool: Mapped[str] = mapped_column(String(128))
    # "policy", "reviewer", "user", "expiry", "grant", "run", "arguments" (`AuditSource`).
    source: Mapped[str] = mapped_column(String(16))
    verdict: Mapped[str] = mapped_column(String(32))
    principal: Mapped[str] = mapped_column(String(128), default="")
    summary: Mapped[str] = mapped_column(Text, default="")
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)


class RemoteRun(Base):
    """Remote work of one Hand for one conversation run (foreground) or a background job."""

    __tablename__ = "remote_runs"

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    conversation_key: Mapped[str] = mapped_column(
        ForeignKey("conversations.key", ondelete="CASCADE"), index=True
    )
    run_id: Mapped[str] = mapped_column(String(40), default="")
    hand_name: Mapped[str] = mapped_column(String(128))
    background: Mapped[bool] = mapped_column(Boolean, default=False)
    detail_mode: Mapped[str] = mapped_column(String(16), default="summary")
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)


class Task(Base):
    """One remote tool call; its state changes only through recorded transitions."""

    __tablename__ = "tasks"
    __table_args__ = (CheckConstraint(_in("state", TASK_STATES), name="state"),)

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    remote_run_id: Mapped[str] = mapped_column(
        ForeignKey("remote_runs.id", ondelete="CASCADE"), index=True
    )
    tool_call_id: Mapped[str] = mapped_column(String(128), index=True)
    hand_name: Mapped[str] = mapped_column(String(128), index=True)
    tool: Mapped[str] = mapped_column(String(128))
    attempt: Mapped[int] = mapped_column(Integer, default=1)
    state: Mapped[str] = mapped_column(String(16), default="offered")
    arguments: Mapped[dict[str, Any]] = mapped_column(default=dict)
    # The call's `ApprovalBinding`, sent with every offer; all empty when it has none.
    arguments_digest: Mapped[str] = mapped_column(String(64), default="")
    approval_source: Mapped[str] = mapped_column(String(16), default="")
    approval_id: Mapped[str] = mapped_column(String(40), default="")
    approval_detail: Mapped[str] = mapped_column(Text, default="")
    cancel_requested_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    cancel_reason: Mapped[str] = mapped_column(Text, default="")
    output: Mapped[str] = mapped_column(Text, default="")
    error: Mapped[str] = mapped_column(Text, default="")
    # References of the images its result carried (`[{digest, media_type, size_bytes}]`; the
    # bytes are in `media`), copied into the call's tool message.
    images: Mapped[list[Any]] = mapped_column(default=list, server_default="[]")
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)


class TaskTransition(Base):
    __tablename__ = "task_transitions"
    __table_args__ = (
        CheckConstraint(_in("to_state", TASK_STATES), name="to_state"),
        Index(
            "uq_task_transitions_one_terminal",
            "task_id",
            unique=True,
            sqlite_where=text("terminal"),
            postgresql_where=text("terminal"),
        ),
    )

    id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    task_id: Mapped[str] = mapped_column(ForeignKey("tasks.id", ondelete="CASCADE"), index=True)
    attempt: Mapped[int] = mapped_column(Integer)
    from_state: Mapped[str] = mapped_column(String(16), default="")
    to_state: Mapped[str] = mapped_column(String(16))
    terminal: Mapped[bool] = mapped_column(Boolean, default=False)
    detail: Mapped[str] = mapped_column(Text, default="")
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)


class Credential(Base):
    __tablename__ = "credentials"
    __table_args__ = (CheckConstraint(_in("kind", CREDENTIAL_KINDS), name="kind"),)

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    kind: Mapped[str] = mapped_column(String(16))
    principal: Mapped[str] = mapped_column(String(128), index=True)
    scopes: Mapped[list[Any]] = mapped_column(default=list)
    # Non-secret lookup prefix embedded in the token.
    prefix: Mapped[str] = mapped_column(String(32), unique=True)
    # SHA-256 hex of the secret part; the secret itself is never stored.
    secret_hash: Mapped[str] = mapped_column(String(64))
    label: Mapped[str] = mapped_column(String(256), default="")
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)
    expires_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    revoked_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    # The browser a paired credential signed in (`mind.credentials.pairing`); None otherwise.
    device_id: Mapped[str | None] = mapped_column(String(64))
    # When it last authenticated, kept to the minute (`mind.credentials.last_seen`).
    last_seen_at: Mapped[datetime | None] = mapped_column(UTCDateTime())


class PairingCode(Base):
    """A one-time code with which a device signs in as `principal` (`mind.credentials.pairing`).

    Only the SHA-256 of the normalised code is kept, never the code. `used_at` is set once, by
    the redemption that wins; `credential_id` is the client credential the code became. Rows
    are pruned a day after they expire.
    """

    __tablename__ = "pairing_codes"

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    code_hash: Mapped[str] = mapped_column(String(64), unique=True)
    principal: Mapped[str] = mapped_column(String(128))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)
    expires_at: Mapped[datetime] = mapped_column(UTCDateTime(), index=True)
    used_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    credential_id: Mapped[str | None] = mapped_column(String(40))
    # Who made it: an operator's name, or the principal itself (`/pair` in a client).
    created_by: Mapped[str] = mapped_column(String(128), default="")


class ProviderSecret(Base):
    """An LLM provider's API key, sealed with the data directory's secrets key.

    `tobe setup` stores the key here so no config file holds it in plaintext; the Mind reads it
    when `[provider] api_key` is unset. One row per name (`provider` for the main provider).
    """

    __tablename__ = "provider_secrets"

    name: Mapped[str] = mapped_column(String(64), primary_key=True)
    # Provider kind the key belongs to (openai, anthropic, gemini).
    kind: Mapped[str] = mapped_column(String(16))
    # The sealed key (`mind.credentials.provider_keys`); never the key itself.
    sealed: Mapped[str] = mapped_column(Text)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)


class ManagementAudit(Base):
    """Operator actions; details are secret-free JSON."""

    __tablename__ = "management_audit"

    id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    time: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow, index=True)
    action: Mapped[str] = mapped_column(String(64), index=True)
    actor: Mapped[str] = mapped_column(String(128), default="")
    target: Mapped[str] = mapped_column(String(256), default="")
    details: Mapped[dict[str, Any]] = mapped_column(default=dict)


class MemoryEntry(Base):
    """One entry of a conversation's memory (the profiles' memory tools, the owner)."""

    __tablename__ = "memory_entries"

    conversation_key: Mapped[str] = mapped_column(
        ForeignKey("conversations.key", ondelete="CASCADE"), primary_key=True
    )
    key: Mapped[str] = mapped_column(String(64), primary_key=True)
    text: Mapped[str] = mapped_column(Text)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)


class Media(Base):
    """Image bytes, stored once under their SHA-256; messages refer to them by digest."""

    __tablename__ = "media"

    digest: Mapped[str] = mapped_column(String(64), primary_key=True)
    media_type: Mapped[str] = mapped_column(String(64))
    size_bytes: Mapped[int] = mapped_column(BigInteger)
    data: Mapped[bytes] = mapped_column(LargeBinary)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)


class Summary(Base):
    """Context summary covering a prefix of a session's messages (compaction)."""

    __tablename__ = "summaries"
    __table_args__ = (UniqueConstraint("conversation_key", "generation"),)

    id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    conversation_key: Mapped[str] = mapped_column(
        ForeignKey("conversations.key", ondelete="CASCADE"), index=True
    )
    session_id: Mapped[int | None] = mapped_column(ForeignKey("sessions.id", ondelete="CASCADE"))
    # Messages with id <= this are covered by the summary.
    through_message_id: Mapped[int] = mapped_column(BigInteger)
    generation: Mapped[int] = mapped_column(Integer)
    version: Mapped[int] = mapped_column(Integer, default=1)
    text: Mapped[str] = mapped_column(Text)
    environment: Mapped[str] = mapped_column(Text, default="")
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)


class OutboxEvent(Base):
    """Durable events, committed with the state change they describe.

    Ids are visible in increasing order: writers serialise on an outbox lock inside their
    transaction (see `mind.store.outbox`), so a reader never sees id N after id M > N.
    """

    __tablename__ = "outbox"
    # Never reuse an id on SQLite, even after pruning the newest rows: resume points stay valid.
    __table_args__ = {"sqlite_autoincrement": True}

    id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    conversation_key: Mapped[str] = mapped_column(String(64), default="", index=True)
    type: Mapped[str] = mapped_column(String(64))
    audience: Mapped[list[Any]] = mapped_column(default=list)
    payload: Mapped[dict[str, Any]] = mapped_column(default=dict)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)


class Cursor(Base):
    """Named resume positions (e.g. the Awareness publish sequence consumed)."""

    __tablename__ = "cursors"

    name: Mapped[str] = mapped_column(String(64), primary_key=True)
    value: Mapped[int] = mapped_column(BigInteger, default=0)


class SeenObservation(Base):
    """Observations already routed, so a replay after a restart delivers each exactly once."""

    __tablename__ = "seen_observations"

    observation_id: Mapped[str] = mapped_column(String(64), primary_key=True)
    conversation_key: Mapped[str] = mapped_column(String(64))
    publish_seq: Mapped[int] = mapped_column(BigInteger)
    received_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)


class PendingAction(Base):
    """An action the decision layer planned that waits for its owner (`mind.actions`)."""

    __tablename__ = "pending_actions"
    __table_args__ = (
        CheckConstraint(_in("state", PENDING_ACTION_STATES), name="state"),
        CheckConstraint(_in("timing", ACTION_TIMINGS), name="timing"),
        Index("ix_pending_actions_conversation_key_state", "conversation_key", "state"),
        # The expiry sweep reads the pending ones by deadline.
        Index("ix_pending_actions_state_expires_at", "state", "expires_at"),
    )

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    conversation_key: Mapped[str] = mapped_column(
        ForeignKey("conversations.key", ondelete="CASCADE")
    )
    owner: Mapped[str] = mapped_column(String(128))
    # The run whose decision registered it.
    run_id: Mapped[str] = mapped_column(String(40), default="")
    title: Mapped[str] = mapped_column(Text)
    goal: Mapped[str] = mapped_column(Text)
    timing: Mapped[str] = mapped_column(String(16))
    # `[PlanStepView payload]`, and the `TriggerView` payload (planned only).
    plan: Mapped[list[Any]] = mapped_column(default=list)
    trigger: Mapped[dict[str, Any] | None] = mapped_column(JSON, nullable=True)
    reason: Mapped[str] = mapped_column(Text, default="")
    state: Mapped[str] = mapped_column(String(16), default="pending")
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)
    expires_at: Mapped[datetime] = mapped_column(UTCDateTime())
    decided_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), nullable=True)
    outcome: Mapped[str] = mapped_column(String(64), default="")


class ScheduledAction(Base):
    """A durable scheduled action (`mind.scheduler`): its plan, trigger and next due time."""

    __tablename__ = "scheduled_actions"
    __table_args__ = (
        CheckConstraint(_in("state", SCHEDULE_STATES), name="state"),
        # The scheduler reads the active ones by due time.
        Index("ix_scheduled_actions_state_next_fire_at", "state", "next_fire_at"),
    )

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    conversation_key: Mapped[str] = mapped_column(
        ForeignKey("conversations.key", ondelete="CASCADE"), index=True
    )
    owner: Mapped[str] = mapped_column(String(128))
    title: Mapped[str] = mapped_column(Text)
    goal: Mapped[str] = mapped_column(Text)
    plan: Mapped[list[Any]] = mapped_column(default=list)
    # `TriggerView` payload; `trigger_kind` repeats its kind for the condition lookups.
    trigger: Mapped[dict[str, Any]] = mapped_column(default=dict)
    trigger_kind: Mapped[str] = mapped_column(String(16))
    state: Mapped[str] = mapped_column(String(16), default="active")
    next_fire_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), nullable=True)
    catch_up: Mapped[bool] = mapped_column(Boolean, default=False)
    firing_count: Mapped[int] = mapped_column(Integer, default=0)
    # The pending action or run it came from.
    source: Mapped[str] = mapped_column(String(64), default="")
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)


class Firing(Base):
    """One firing of a scheduled action, claimed in the unit that moves its next due time.

    `occasion` names what fired it (`time:<due ISO>`, `observation:<id>`, `memory:<event id>`)
    and is unique per action, so a replayed claim inserts nothing."""

    __tablename__ = "firings"
    __table_args__ = (
        UniqueConstraint("schedule_id", "occasion"),
        CheckConstraint(_in("outcome", FIRING_OUTCOMES), name="outcome"),
    )

    id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    schedule_id: Mapped[str] = mapped_column(
        ForeignKey("scheduled_actions.id", ondelete="CASCADE"), index=True
    )
    conversation_key: Mapped[str] = mapped_column(String(64))
    occasion: Mapped[str] = mapped_column(String(128))
    due_at: Mapped[datetime] = mapped_column(UTCDateTime())
    claimed_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)
    outcome: Mapped[str] = mapped_column(String(16), default="running")
    # Set when its input was delivered to a run: the latest of its attempts.
    run_id: Mapped[str] = mapped_column(String(40), default="")
    # How many proactive runs it started; a run a crash interrupted is retried up to
    # `mind.agent.proactive.MAX_ATTEMPTS`.
    attempts: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    detail: Mapped[str] = mapped_column(Text, default="")
    ended_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), nullable=True)
