"""The deterministic approval policy: allow, deny (with a reason the model sees) or ask.

A call is judged under its name and effect: a tool's own, or, for a tool that reaches many
actions (`awareness_interact`), the action's: `<instance>.<action>` (`email@work.send`) with
the effect the adapter declared for it, also known as `<adapter>.<action>` (`email.send`) and
by the tool's name (`mind.tools.base.CallClassifier`).

Evaluation order, first match wins:

1. **Trust** (hard rules, not configurable), from the observation that triggered the run (its
   trigger `observation:<trust>`, kept by the runs that continue it):
   - low or off trust: the run may only read. Every call whose effect is not `read_only` —
     workspace writes, external side effects (a Hand's `run_command`, an adapter's write
     action), unknown effects — is denied, not asked;
   - medium trust (any source without the `workspace_write` permission): calls with effect
     `workspace_write` or `unknown` (which might write) are denied; side effects go on to
     the rules below.
   Neither a rule, the Reviewer, a conversation grant nor a person can approve what these deny.
2. **Rules** from `[approvals] rules` in the configuration, in order. Each rule matches on
   glob patterns (`*` = anything) over the call's name (or any of its other names), effect
   class, Hand id, conversation key and principal, and gives `allow`, `ask` or `deny`:

       [[approvals.rules]]
       tool = "shell_*"
       hand = "laptop"
       verdict = "deny"
       reason = "no shell on the laptop"

       [[approvals.rules]]
       tool = "telegram.reply"     # every telegram instance's reply action
       verdict = "allow"

3. **Memory** (`[approvals] memory = "allow"`): the Mind's own `memory_write` and
   `memory_delete` change only the calling conversation's memory, its notebook, so by
   default nobody is asked; they still declare `workspace_write`, so the trust rules above
   keep an observation below high trust from rewriting what later runs read.
4. **Defaults by effect class** (`[approvals] read_only = "allow"` etc.): read-only calls are
   allowed; workspace writes, external side effects and unknown effects ask.

`ask` (`mind.approvals.authorizer`) is covered by an earlier "approve for this conversation" of
the same name on the same Hand, except in a run an observation below high trust triggered
(`grants_apply`: there a person is asked each time); else it goes to the Reviewer (when
enabled) and then to a person through the Broker. The whole section, with its defaults:

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
# Observation trusts whose runs may do more than read, and those whose runs grants cover.
_BEYOND_READING = frozenset({"medium", "high", "max"})
_TRUSTED = frozenset({"high", "max"})


def may_write_workspace(permissions: dict[str, bool]) -> bool:
    """Whether the source that triggered the run allows workspace writes.

    A run a person started carries no permissions and may write. A run with permissions
    attached (observation-triggered) may write only when they say so explicitly (high/max).
    """
    return not permissions or bool(permissions.get("workspace_write", False))


def may_only_read(trust: str) -> bool:
    """Whether a run triggered with this observation trust may only read (low, off, or a
    trust this Mind does not know); "" is a run no observation triggered."""
    return bool(trust) and trust not in _BEYOND_READING


def grants_apply(trust: str) -> bool:
    """Whether a conversation grant may cover a call of a run triggered with this trust: not
    below high, where a person is asked each time."""
    return not trust or trust in _TRUSTED


def _matches(rule: ApprovalRule, call: CallUnderReview) -> bool:
    return (
        any(fnmatchcase(name, rule.tool) for name in (call.tool, *call.aliases))
        and fnmatchcase(call.effect.value, rule.effect)
        and fnmatchcase(call.hand_id, rule.hand)
        and fnmatchcase(call.conversation_key, rule.conversation)
        and fnmatchcase(call.principal, rule.principal)
    )


def _trust_denial(call: CallUnderReview) -> str:
    """Why the trust rules deny the call; "" when they do not."""
    if call.effect is Effect.READ_ONLY:
        return ""
    what = f"{call.tool} ({call.effect.value}) is not allowed"
    if may_only_read(call.run_trust):
        return (
            f"this run was triggered by a {call.run_trust}-trust observation, so it may only "
            f"read: it may not write to the workspace or act on anything; {what}"
        )
    if call.effect in _WRITES and not may_write_workspace(call.run_permissions):
        return f"this run was triggered by a source that may not write to the workspace; {what}"
    return ""


class Policy:
    """Evaluates calls against the configured rules; see the module docstring."""

    def __init__(self, settings: ApprovalSettings) -> None:
        self._settings = settings

    def evaluate(self, call: CallUnderReview) -> PolicyVerdict:
        denial = _trust_denial(call)
        if denial:
            return PolicyVerdict(VerdictKind.DENY, denial, "trust")
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
