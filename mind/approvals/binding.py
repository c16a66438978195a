"""The digest an approval binds, for the calls that need one.

A call needs a digest when its effect is not read-only (it always runs with an
`ApprovalBinding`, so a Hand can insist on one) and whenever the policy asks about it (a
request, grant or Reviewer verdict covers exact arguments). Arguments without an RFC 8785
form cannot be bound, so such a call is refused before a person, the Reviewer or a Hand sees
it: the model is told where the value is and to pass it as a string.
"""

from __future__ import annotations

from mind.approvals.errors import ArgumentsNotBindable
from mind.tools.authorizer import CallUnderReview, VerdictKind
from mind.tools.base import Effect
from tobe.runtime.digest import NotCanonicalizable, arguments_digest


def needs_digest(call: CallUnderReview, policy_verdict: VerdictKind) -> bool:
    return call.effect is not Effect.READ_ONLY or policy_verdict is VerdictKind.ASK


def bindable_digest(call: CallUnderReview) -> str:
    """The call's argument digest; raises `ArgumentsNotBindable` when there is none."""
    try:
        return arguments_digest(call.arguments)
    except NotCanonicalizable as exc:
        raise ArgumentsNotBindable(exc.path, str(exc)) from exc
