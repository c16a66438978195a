"""What a channel says by itself, besides the agent's replies: prompts, approvals, refusals."""

from __future__ import annotations

from datetime import datetime

from face.channels.state import Pairing
from tobe.config import ChannelSettings, EmailChannelSettings
from tobe.v1 import common_pb2

# Reactions that decide an approval (Matrix); a text command or mail keyword does the same.
APPROVE_REACTIONS = frozenset({"✅", "✔️", "👍"})
DENY_REACTIONS = frozenset({"❌", "✖️", "👎"})
MATRIX_APPROVE = "!approve"
MATRIX_DENY = "!deny"

_DECIDED = {
    common_pb2.APPROVAL_DECISION_APPROVE_ONCE: "approved",
    common_pb2.APPROVAL_DECISION_APPROVE_CONVERSATION: "approved for this conversation",
    common_pb2.APPROVAL_DECISION_DENY: "denied",
    common_pb2.APPROVAL_DECISION_EXPIRED: "not decided in time, so denied",
}
_FAILED = {
    common_pb2.RUN_STATE_FAILED: "failed",
    common_pb2.RUN_STATE_CANCELLED: "was cancelled",
    common_pb2.RUN_STATE_INTERRUPTED: "was interrupted",
}


def decision_words(settings: ChannelSettings) -> tuple[frozenset[str], frozenset[str]]:
    """The first words of a message that approve, and that deny, a waiting approval."""
    if isinstance(settings, EmailChannelSettings):
        return (
            frozenset(word.casefold() for word in settings.approve_words),
            frozenset(word.casefold() for word in settings.deny_words),
        )
    return frozenset({MATRIX_APPROVE}), frozenset({MATRIX_DENY})


def pairing_prompt(pairing: Pairing, now: datetime) -> str:
    minutes = max(1, round((pairing.expires_at - now).total_seconds() / 60))
    return (
        "Hello! I am a personal agent and only talk with people my owner has paired.\n\n"
        f"Your pairing code is **{pairing.code}**. Ask my owner to run "
        f"`tobe admin channels approve {pairing.code}`; it works for {minutes} minutes. "
        "I will tell you here once it is done."
    )


def paired_line(principal: str) -> str:
    return f"You are paired: you talk with me as **{principal}**. Write whenever you like."


def revoked_line() -> str:
    return (
        "Your access was revoked, so I no longer pass your messages on. Write again to get a "
        "new pairing code."
    )


def slow_down_line(per_minute: int) -> str:
    return (
        f"You are writing faster than {per_minute} messages a minute: I did not pass your last "
        "message on. Wait a moment and send it again."
    )


def approval_request(approval: common_pb2.Approval, settings: ChannelSettings) -> str:
    approve, deny = decision_words(settings)
    if isinstance(settings, EmailChannelSettings):
        how = (
            f"Reply with **{sorted(approve)[0]}** to approve it or **{sorted(deny)[0]}** to "
            "deny it."
        )
    else:
        how = (
            f"React ✅ to approve it or ❌ to deny it, or reply `{MATRIX_APPROVE}` / "
            f"`{MATRIX_DENY}`."
        )
    reason = f"\n\n{approval.reason}" if approval.reason else ""
    return f"✋ **Approval needed**: {approval.decision_text}{reason}\n\n{how}"


def approval_decided(approval: common_pb2.Approval) -> str | None:
    """The request's text once decided (edited in place where the network can), or None."""
    decided = _DECIDED.get(approval.decision)
    if decided is None:
        return None
    return f"✋ {approval.decision_text}\n\n**{decided[0].upper()}{decided[1:]}.**"


def run_failed(run: common_pb2.Run) -> str | None:
    what = _FAILED.get(run.state)
    if what is None:
        return None
    return f"(My reply {what}" + (f": {run.reason})" if run.reason else ".)")


def refused_line(reason: str) -> str:
    return f"I could not take that message: {reason}"
