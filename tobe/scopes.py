"""The scopes a credential can hold, what each allows, and the scope every call needs.

The one source of truth: credential creation accepts only the names in `SCOPES` (for the
credential's kind); the Mind's servicer (`mind.api.scope_check.require_scopes`) checks
every call against `REQUIRED` and the Face checks every client command against the same
entry of the Mind call it makes (`mind_call_scope`; `FACE_COMMANDS` names the call of each
older command frame). A call that needs a scope its credential lacks answers PERMISSION_DENIED
naming the scope (`missing_scope_message`).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

CHAT = "chat"
APPROVE = "approve"
POST = "post"
ADMIN = "admin"
GATEWAY = "gateway"
SERVE_PREFIX = "serve:"
SERVE_ALL = "serve-all"
HAND_PREFIX = "hand:"


@dataclass(frozen=True)
class Scope:
    """One scope: its name (`prefix<placeholder>` for a family), the kind it is for, its use."""

    name: str
    kind: str
    meaning: str

    @property
    def prefix(self) -> str | None:
        """`serve:` for `serve:<principal>`; None for a plain name."""
        return self.name.split("<", 1)[0] if "<" in self.name else None

    def matches(self, scope: str) -> bool:
        prefix = self.prefix
        if prefix is None:
            return scope == self.name
        return scope.startswith(prefix) and len(scope) > len(prefix)


SCOPES = (
    Scope(CHAT, "client", "send to and read its conversations (history, events, memory, actions)"),
    Scope(APPROVE, "client", "decide approvals of tool calls and pending actions"),
    Scope(POST, "client", "post assistant messages written by code (PostMessage)"),
    Scope(ADMIN, "client", "see every principal's conversations, not only its own"),
    Scope(GATEWAY, "service", "call the Mind for the clients it authenticated (Face)"),
    Scope(f"{SERVE_PREFIX}<principal>", "hand", "execute tasks of that principal's conversations"),
    Scope(SERVE_ALL, "hand", "execute tasks of every conversation"),
    Scope(f"{HAND_PREFIX}<name>", "hand", "attach under that Hand name besides its principal"),
)
KINDS = tuple(dict.fromkeys(scope.kind for scope in SCOPES))


class UnknownScope(ValueError):
    """A scope name that no credential can hold, or not one of the given kind."""


def scope_named(scope: str) -> Scope | None:
    """The entry of `SCOPES` that `scope` is (or belongs to); None when none."""
    return next((entry for entry in SCOPES if entry.matches(scope)), None)


def valid_scopes() -> str:
    """Every valid scope, grouped by kind, on one line."""
    groups = (f"{', '.join(s.name for s in SCOPES if s.kind == kind)} ({kind})" for kind in KINDS)
    return "; ".join(groups)


def check_scopes(kind: str, scopes: Iterable[str]) -> None:
    """Refuse (UnknownScope) a scope that is not in `SCOPES` or is for another kind."""
    for scope in scopes:
        entry = scope_named(scope)
        if entry is None:
            raise UnknownScope(f"unknown scope {scope!r}; valid scopes: {valid_scopes()}")
        if kind in KINDS and entry.kind != kind:
            raise UnknownScope(
                f"scope {scope!r} is for {entry.kind} credentials, not {kind}; "
                f"valid scopes: {valid_scopes()}"
            )


@dataclass(frozen=True)
class Requirement:
    """What a call needs besides a valid credential: the caller's kind and scope, and for a
    gateway's call the scope of the principal it acts for; `guard` says what else protects it
    (a socket, a token, a check at its servicer)."""

    kind: str | None = None
    scope: str | None = None
    # The scope the principal named in `on_behalf_of` must hold (calls a gateway makes).
    user_scope: str | None = None
    guard: str = ""


def _mind(user_scope: str | None) -> Requirement:
    return Requirement(
        kind="service",
        scope=GATEWAY,
        user_scope=user_scope,
        guard="the Mind service is for gateways: use a credential of kind 'service' with scope "
        f"'{GATEWAY}'",
    )


_MANAGEMENT = Requirement(guard="the Mind's owner-only Unix socket (no credential)")
_AWARENESS = Requirement(guard="the Mind-Awareness link token (no credential)")

# Every RPC of every tobe.v1 service, by full method name.
REQUIRED: dict[str, Requirement] = {
    "/tobe.v1.Mind/Authenticate": _mind(None),
    "/tobe.v1.Mind/CreateConversation": _mind(CHAT),
    "/tobe.v1.Mind/ListConversations": _mind(CHAT),
    "/tobe.v1.Mind/SendChat": _mind(CHAT),
    "/tobe.v1.Mind/CancelRun": _mind(CHAT),
    "/tobe.v1.Mind/GetSnapshot": _mind(CHAT),
    "/tobe.v1.Mind/GetHistory": _mind(CHAT),
    # The gateway's one shared feed: it checks `chat` per client (FACE_SUBSCRIBE).
    "/tobe.v1.Mind/Subscribe": _mind(None),
    "/tobe.v1.Mind/DecideApproval": _mind(APPROVE),
    "/tobe.v1.Mind/CompactConversation": _mind(CHAT),
    "/tobe.v1.Mind/ListProfiles": _mind(CHAT),
    "/tobe.v1.Mind/SetConversationProfile": _mind(CHAT),
    "/tobe.v1.Mind/SetActiveHand": _mind(CHAT),
    "/tobe.v1.Mind/PostMessage": _mind(POST),
    "/tobe.v1.Mind/ListMemory": _mind(CHAT),
    "/tobe.v1.Mind/DeleteMemory": _mind(CHAT),
    "/tobe.v1.Mind/ListActions": _mind(CHAT),
    "/tobe.v1.Mind/DecideAction": _mind(APPROVE),
    "/tobe.v1.Mind/ChangeSchedule": _mind(CHAT),
    "/tobe.v1.Mind/CreatePairingCode": _mind(CHAT),
    # A device without a credential yet: the code is the proof.
    "/tobe.v1.Mind/RedeemPairingCode": _mind(None),
    # The token being signed out is the proof.
    "/tobe.v1.Mind/SignOut": _mind(None),
    # A gateway reports how many of its connections a revocation closed.
    "/tobe.v1.Mind/ReportRevocation": _mind(None),
    "/tobe.v1.Mind/GetConversationUsage": _mind(CHAT),
    "/tobe.v1.Mind/GetImage": _mind(CHAT),
    "/tobe.v1.Mind/RenameConversation": _mind(CHAT),
    "/tobe.v1.Mind/ArchiveConversation": _mind(CHAT),
    "/tobe.v1.Mind/BranchConversation": _mind(CHAT),
    "/tobe.v1.Mind/SearchConversations": _mind(CHAT),
    "/tobe.v1.Mind/GetWidget": _mind(CHAT),
    "/tobe.v1.HandLink/Attach": Requirement(
        guard="a credential of kind 'hand' (its servicer refuses others UNAUTHENTICATED) "
        "attaching under its principal or a 'hand:<name>' scope"
    ),
    "/tobe.v1.FaceGateway/Connect": Requirement(
        guard="a client credential (Mind.Authenticate); each command needs the scope of the "
        "Mind call it makes (FACE_COMMANDS)"
    ),
    "/tobe.v1.Management/CreateCredential": _MANAGEMENT,
    "/tobe.v1.Management/ListCredentials": _MANAGEMENT,
    "/tobe.v1.Management/GetCredential": _MANAGEMENT,
    "/tobe.v1.Management/IdentifyCredential": _MANAGEMENT,
    "/tobe.v1.Management/RevokeCredential": _MANAGEMENT,
    "/tobe.v1.Management/RotateCredential": _MANAGEMENT,
    "/tobe.v1.Management/GetStatus": _MANAGEMENT,
    "/tobe.v1.Management/ListAudit": _MANAGEMENT,
    "/tobe.v1.Management/ListAllConversations": _MANAGEMENT,
    "/tobe.v1.Management/InspectConversation": _MANAGEMENT,
    "/tobe.v1.Management/DeleteConversation": _MANAGEMENT,
    "/tobe.v1.Management/CompactContext": _MANAGEMENT,
    "/tobe.v1.Management/ListConversationMemory": _MANAGEMENT,
    "/tobe.v1.Management/DeleteConversationMemory": _MANAGEMENT,
    "/tobe.v1.Management/ChangeConversationProfile": _MANAGEMENT,
    "/tobe.v1.Management/ListApprovals": _MANAGEMENT,
    "/tobe.v1.Management/GetApproval": _MANAGEMENT,
    "/tobe.v1.Management/ListSchedules": _MANAGEMENT,
    "/tobe.v1.Management/ChangeScheduledAction": _MANAGEMENT,
    "/tobe.v1.Management/CreatePairingCode": _MANAGEMENT,
    "/tobe.v1.Management/GetUsage": _MANAGEMENT,
    "/tobe.v1.Management/PutWidgetType": _MANAGEMENT,
    "/tobe.v1.Management/ListWidgetTypes": _MANAGEMENT,
    "/tobe.v1.Management/GetWidgetType": _MANAGEMENT,
    "/tobe.v1.Management/DeleteWidgetType": _MANAGEMENT,
    "/tobe.v1.Awareness/ListAdapters": _AWARENESS,
    "/tobe.v1.Awareness/Observe": _AWARENESS,
    "/tobe.v1.Awareness/Interact": _AWARENESS,
    "/tobe.v1.Awareness/RegisterAdapter": _AWARENESS,
    "/tobe.v1.Awareness/UnregisterAdapter": _AWARENESS,
    "/tobe.v1.Awareness/SubscribeObservations": _AWARENESS,
    "/tobe.v1.Awareness/GetMedia": _AWARENESS,
}

# Every command frame of FaceGateway.Connect, by its field in ConnectRequest.frame: the Mind
# call it makes; its scope is that call's `user_scope`.
FACE_COMMANDS: dict[str, str] = {
    "create_conversation": "CreateConversation",
    "list_conversations": "ListConversations",
    "send_chat": "SendChat",
    "cancel_run": "CancelRun",
    "snapshot": "GetSnapshot",
    "replay": "GetHistory",
    "decide_approval": "DecideApproval",
    "compact": "CompactConversation",
    "list_profiles": "ListProfiles",
    "set_profile": "SetConversationProfile",
    "set_active_hand": "SetActiveHand",
    "post_message": "PostMessage",
    "list_memory": "ListMemory",
    "delete_memory": "DeleteMemory",
    "list_actions": "ListActions",
    "decide_action": "DecideAction",
    "change_schedule": "ChangeSchedule",
    "pair_device": "CreatePairingCode",
}
# Frames that need no scope of their own: the hello (its `resume_after_id` is a subscribe) and
# `mind`, whose Mind call needs that call's scope (`mind_call_scope`).
FACE_MIND_CALL = "mind"
FACE_UNSCOPED = frozenset({"hello", FACE_MIND_CALL})
# A client's own subscription to the events of its conversations (and a hello's resume).
FACE_SUBSCRIBE = "subscribe"
FACE_SUBSCRIBE_SCOPE = CHAT


def face_command_scope(frame: str) -> str | None:
    """The scope a Face command frame needs; KeyError for a frame nobody mapped."""
    if frame in FACE_UNSCOPED:
        return None
    if frame == FACE_SUBSCRIBE:
        return FACE_SUBSCRIBE_SCOPE
    return mind_call_scope(FACE_COMMANDS[frame])


def mind_call_scope(method: str) -> str | None:
    """The scope the client principal needs for the Mind call `method` (`SendChat`) a gateway
    makes for it; KeyError for a call `REQUIRED` does not list."""
    return REQUIRED[f"/tobe.v1.Mind/{method}"].user_scope


def missing_scope_message(scope: str, action: str, *, whose: str = "this credential") -> str:
    """The PERMISSION_DENIED text for a call whose credential lacks `scope`."""
    return f"{whose} lacks scope {scope!r} (needed for {action})"
