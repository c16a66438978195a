"""The deterministic approval policy: allow, deny (with a reason the model sees) or ask.

Evaluation order, first match wins:

1. **Trust** (hard rule, not configurable): a run triggered by a source without the
   `workspace_write` permission — an observation of low, medium or off trust (BRIEF §6) — may
   not write to the workspace. Calls with effect `workspace_write` or `unknown` (which might
   write) are denied, not asked: neither a rule, the Reviewer, a conversation grant nor a
   person can approve them for such a run.
2. **Rules** from `[approvals] rules` in the configuration, in order. Each rule matches on
   glob patterns (`*` = anything) over the tool name, effect class, Hand id, conversation key
   and principal, and gives `allow`, `ask` or `deny`:

       [[approvals.rules]]
       tool = "shell_*"
       hand = "laptop"
       verdict = "deny"
       reason = "no shell on the laptop"

3. **Memory** (`[approvals] memory = "allow"`): the Mind's own `memory_write` and
   `memory_delete` change only the calling conversation's memory, its notebook, so by
   default nobody is asked; they still declare `workspace_write`, so the trust rule above
   keeps a low-trust observation from rewriting what later runs read.
4. **Defaults by effect class** (`[approvals] read_only = "allow"` etc.): read-only calls are
   allowed; workspace writes, external side effects and unknown effects ask.

`ask` hands the call to the Reviewer (when enabled) and then to a person through the Broker.
The whole section, with its defaults:

    [approvals]
    read_only = "allow"
    workspace_write = "ask"
    external_side_effect = "ask"
    unknown = "ask"
    memory = "allow"
    expiry = 600.0              # seconds a request waits; then it is `expired` (= denied)

    [approvals.reviewer]
    enabled = false             # consult the isolated Reviewer before asking a person
    timeout = 20.0              # a slower answer counts as `require_user`
    # provider = {kind = "openai", model = "…"}   # default: the Mind's [provider]
"""

from __future__ import annotations

from fnmatch import fnmatchcase

from mind.approvals.model import PolicyVerdict
from mind.memory.tools import CHANGING_TOOLS
from mind.tools.authorizer import CallUnderReview, VerdictKind
from mind.tools.base import Effect
from tobe.config import ApprovalRule, ApprovalSettings

# Effects a run without the workspace_write permission may never perform.
_WRITES = (Effect.WORKSPACE_WRITE, Effect.UNKNOWN)


def may_write_workspace(permissions: dict[str, bool]) -> bool:
    """Whether the source that triggered the run allows workspace writes.

    A run a person started carries no permissions and may write. A run with permissions
    attached (observation-triggered) may write only when they say so explicitly (high/max).
    """
    return not permissions or bool(permissions.get("workspace_write", False))


def _matches(rule: ApprovalRule, call: CallUnderReview) -> bool:
    return (
        fnmatchcase(call.tool, rule.tool)
        and fnmatchcase(call.effect.value, rule.effect)
        and fnmatchcase(call.hand_id, rule.hand)
        and fnmatchcase(call.conversation_key, rule.conversation)
        and fnmatchcase(call.principal, rule.principal)
    )


class Policy:
    """Evaluates calls against the configured rules; see the module docstring."""

    def __init__(self, settings: ApprovalSettings) -> None:
        self._settings = settings

    def evaluate(self, call: CallUnderReview) -> PolicyVerdict:
        if call.effect in _WRITES and not may_write_workspace(call.run_permissions):
            return PolicyVerdict(
                VerdictKind.DENY,
                "this run was triggered by a source that may not write to the workspace; "
                f"{call.tool} ({call.effect.value}) is not allowed",
                "trust",
            )
        for index, rule in enumerate(self._settings.rules):
            if _matches(rule, call):
                return PolicyVerdict(
                    VerdictKind(rule.verdict),
                    rule.reason or _default_reason(rule.verdict, call),
                    f"rules[{index}]",
                )
        if call.tool in CHANGING_TOOLS and not call.hand_id:
            verdict = VerdictKind(self._settings.memory)
            return PolicyVerdict(verdict, _default_reason(verdict, call), "default.memory")
        verdict = VerdictKind(getattr(self._settings, call.effect.value))
        return PolicyVerdict(
            verdict, _default_reason(verdict, call), f"default.{call.effect.value}"
        )


def _default_reason(verdict: str, call: CallUnderReview) -> str:
    if verdict == VerdictKind.DENY:
        return f"the approval policy does not allow {call.tool} ({call.effect.value})"
    if verdict == VerdictKind.ASK:
        return f"{call.tool} has effect {call.effect.value}"
    return ""
