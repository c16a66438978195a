"""What a tool is, to the tool runtime: local built-ins, Hand tools and awareness tools alike.

Contract: `Tool.run` reports failures as a `ToolOutcome` with `ok=False` (the model sees the
error as the tool result); it raises only `asyncio.CancelledError` when the run is cancelled,
after it has stopped its work (a remote tool first asks its Hand to cancel).

A tool may also be a `DecisionRenderer`: it writes the text a person reads when a call needs
approval (`mind.tools.decision`); and a `CallClassifier`: one tool that reaches many actions
(an awareness tool) names each call and its effect, so approvals judge the action, not the tool.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Protocol, runtime_checkable


class Effect(StrEnum):
    READ_ONLY = "read_only"
    WORKSPACE_WRITE = "workspace_write"
    EXTERNAL_SIDE_EFFECT = "external_side_effect"
    # Undeclared effect: treated like the riskiest class.
    UNKNOWN = "unknown"


class DetailMode(StrEnum):
    SUMMARY = "summary"
    TRANSPARENT = "transparent"


class ApprovalSource(StrEnum):
    """What allowed a call (`ApprovalBinding.source`)."""

    # A person approved this call.
    PERSON = "person"
    # A person's earlier "approve for this conversation" covered it.
    GRANT = "grant"
    # A rule (or an effect class default) of the approval policy allowed it.
    POLICY = "policy"
    # The isolated Reviewer allowed it.
    REVIEWER = "reviewer"


@dataclass(frozen=True)
class ApprovalBinding:
    """What allowed this exact call, and the digest of the arguments it covers.

    Every call whose effect is not read-only runs with one, so a Hand can insist on it.
    """

    source: ApprovalSource
    arguments_digest: str
    # The approval request a person decided (PERSON, GRANT); "" otherwise.
    approval_id: str = ""
    # Who decided (PERSON), the policy rule (POLICY), the Reviewer's note (REVIEWER).
    detail: str = ""


@dataclass
class ToolContext:
    conversation_key: str
    run_id: str
    tool_call_id: str
    principal: str
    # Mode frozen at admission.
    detail_mode: DetailMode
    # Report progress (message, fraction 0..1 or None); ephemeral, may be dropped.
    report_progress: Callable[[str, float | None], None]
    approval: ApprovalBinding | None = None
    # Permissions of the source that triggered the run (observation trust), if any.
    permissions: dict[str, bool] = field(default_factory=dict)
    # Trust of the observation that triggered the run ("" when none did).
    trust: str = ""
    # Names of the tools the run was offered in the step that made this call: a tool that
    # hands work on (`delegate`) gives no more than these.
    offered: frozenset[str] = frozenset()


@dataclass(frozen=True)
class ToolOutcome:
    ok: bool
    # Text the model sees (usually JSON).
    output: str = ""
    error: str = ""
    # "succeeded", "failed", "denied", "cancelled" (display status of the terminal).
    status: str = ""
    # References (`{digest, media_type, size_bytes}`) of images that come with `output`,
    # already stored in `media` (a Hand's screenshot): the tool message carries them.
    images: tuple[dict[str, Any], ...] = ()

    @property
    def display_status(self) -> str:
        return self.status or ("succeeded" if self.ok else "failed")


class Tool(Protocol):
    name: str
    description: str
    # JSON Schema of the arguments object; arguments are validated against it before `run`.
    parameters: dict[str, Any]
    effect: Effect
    # Runtime id of the Hand that executes it; "" for tools run inside the Mind.
    hand_id: str

    async def run(self, arguments: dict[str, Any], context: ToolContext) -> ToolOutcome: ...


@runtime_checkable
class DecisionRenderer(Protocol):
    """Optional part of the tool protocol: what a person approves, in the tool's own words.

    Tools without it get a default text (their name and arguments as compact JSON).
    """

    def render_decision(self, arguments: dict[str, Any]) -> str:
        """The text for these (validated, sensitive values masked) arguments; "" = default."""
        ...


@dataclass(frozen=True)
class CallClass:
    """What one call does, as the approval path judges it."""

    # The name approvals, audit rows and grants use (`email@work.send`).
    name: str
    effect: Effect
    # Other names approval rules may match it by (`email.send`, the tool's own name).
    aliases: tuple[str, ...] = ()


@runtime_checkable
class CallClassifier(Protocol):
    """Optional part of the tool protocol: the name and effect of one call of the tool.

    Tools without it are judged under their own name and declared `effect`.
    """

    async def classify(self, arguments: dict[str, Any]) -> CallClass:
        """The class of a call with these (validated) arguments; never raises: a call it
        cannot judge is `Effect.UNKNOWN`."""
        ...


class ToolSource(Protocol):
    """Tools that come and go at runtime (a Hand's tools, awareness tools)."""

    def tools_for(self, conversation_key: str) -> list[Tool]: ...
