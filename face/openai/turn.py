"""One chat completion as one turn of a ToBe conversation, told as text.

Which conversation: the one the `X-ToBe-Conversation` header names (made when it does not
exist yet); else the one the `user` field names (a key derived from the principal and that
name); else, when the request carries earlier messages, the newest conversation this endpoint
made for the principal whose person's messages are exactly those; else a new one. The agent
keeps one history: earlier messages in a request are checked against it, never replayed into
it, and a request whose history differs is refused (409) rather than guessed at.

What the run does is told as text in the reply: its assistant text as it streams, a line per
tool call, and for an approval a line with a link to decide it in the web client (the endpoint
never approves anything itself).
"""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

from face.errors import GatewayError
from face.openai.local import LocalConnection
from face.openai.wire import BadRequest, ChatRequest
from tobe.v1 import common_pb2, events_pb2, face_pb2, mind_pb2

CONVERSATION_HEADER = "x-tobe-conversation"
# Keys of conversations this endpoint makes: the `user`-named and the unnamed ones.
NAMED_PREFIX = "p_openai-"
UNNAMED_PREFIX = "p_oai-"
# How many of the principal's newest conversations are looked through for an unnamed history.
MATCH_CANDIDATES = 20
# The most messages a snapshot holds (Mind.GetSnapshot's maximum).
SNAPSHOT_LIMIT = 500
TITLE_LENGTH = 60

_ENDED = {
    common_pb2.RUN_STATE_COMPLETED,
    common_pb2.RUN_STATE_FAILED,
    common_pb2.RUN_STATE_CANCELLED,
    common_pb2.RUN_STATE_INTERRUPTED,
}
_DECIDED = {
    common_pb2.APPROVAL_DECISION_APPROVE_ONCE: "approved",
    common_pb2.APPROVAL_DECISION_APPROVE_CONVERSATION: "approved for this conversation",
    common_pb2.APPROVAL_DECISION_DENY: "denied",
    common_pb2.APPROVAL_DECISION_EXPIRED: "not decided in time (denied)",
}
_TOOL_ENDS = {
    common_pb2.TOOL_STATUS_FAILED: "failed",
    common_pb2.TOOL_STATUS_DENIED: "denied",
    common_pb2.TOOL_STATUS_CANCELLED: "cancelled",
    common_pb2.TOOL_STATUS_SKIPPED: "skipped",
}


def named_key(principal: str, name: str) -> str:
    """The conversation a `user` name stands for: one per principal and name."""
    digest = hashlib.sha256(f"{principal}\0{name}".encode()).hexdigest()[:32]
    return NAMED_PREFIX + digest


async def profile_names(connection: LocalConnection) -> list[common_pb2.ProfileInfo]:
    reply = await connection.mind(list_profiles=mind_pb2.ListProfilesRequest())
    return list(reply.list_profiles.profiles)


async def resolve_conversation(
    connection: LocalConnection, principal: str, request: ChatRequest, header: str
) -> tuple[str, int]:
    """The conversation the request continues (made if new, its profile set to the requested
    model), and the durable event id to follow it from."""
    key = header or (named_key(principal, request.user) if request.user else "")
    if not key and request.earlier:
        key = await _matching(connection, request.earlier)
    if not key:
        return await _create(connection, UNNAMED_PREFIX + secrets.token_hex(8), request)
    snapshot = await _snapshot(connection, key)
    if snapshot is None:
        if request.earlier:
            raise BadRequest(
                404,
                f"conversation {key} does not exist, but the request carries earlier messages: "
                "start it with a request holding only the first message",
                code="conversation_not_found",
            )
        return await _create(connection, key, request)
    _check_history(key, snapshot, request.earlier)
    if snapshot.conversation.profile != request.model:
        await connection.mind(
            set_conversation_profile=mind_pb2.SetConversationProfileRequest(
                conversation_key=key, profile=request.model
            )
        )
    return key, snapshot.last_event_id


async def _snapshot(connection: LocalConnection, key: str) -> mind_pb2.GetSnapshotResponse | None:
    try:
        reply = await connection.mind(
            get_snapshot=mind_pb2.GetSnapshotRequest(
                conversation_key=key, message_limit=SNAPSHOT_LIMIT
            )
        )
    except GatewayError as exc:
        if exc.code == "NOT_FOUND":
            return None
        raise
    return reply.get_snapshot


async def _create(connection: LocalConnection, key: str, request: ChatRequest) -> tuple[str, int]:
    title = " ".join(request.text.split())[:TITLE_LENGTH] or "Chat"
    reply = await connection.mind(
        create_conversation=mind_pb2.CreateConversationRequest(
            key=key, title=title, profile=request.model
        )
    )
    created = reply.create_conversation.conversation
    return created.key, created.last_event_id


def _person_texts(snapshot: mind_pb2.GetSnapshotResponse) -> list[str]:
    return [m.text for m in snapshot.messages if m.role == common_pb2.MESSAGE_ROLE_USER]


def _check_history(key: str, snapshot: mind_pb2.GetSnapshotResponse, earlier: list[str]) -> None:
    """Refuse a request whose earlier person's messages are not the conversation's latest."""
    if not earlier:
        return
    said = _person_texts(snapshot)
    if len(earlier) <= len(said) and said[len(said) - len(earlier) :] == earlier:
        return
    raise BadRequest(
        409,
        f"the earlier messages of this request are not those of conversation {key}: the agent "
        "keeps one history and never rewrites it; send only the new message, or start a new "
        "conversation",
        code="history_mismatch",
    )


async def _matching(connection: LocalConnection, earlier: list[str]) -> str:
    """The newest unnamed conversation of this endpoint whose person's messages are exactly
    `earlier`; 409 when there is none."""
    listed = await connection.mind(
        list_conversations=mind_pb2.ListConversationsRequest(limit=MATCH_CANDIDATES)
    )
    for conversation in listed.list_conversations.conversations:
        if not conversation.key.startswith(UNNAMED_PREFIX):
            continue
        snapshot = await _snapshot(connection, conversation.key)
        if snapshot is not None and _person_texts(snapshot) == earlier:
            return conversation.key
    raise BadRequest(
        409,
        "none of your recent conversations has exactly these earlier messages: name the "
        f"conversation with the {CONVERSATION_HEADER} header (each reply carries it) or the "
        "`user` field",
        code="history_mismatch",
    )


@dataclass
class TurnProgress:
    """What the turn has told so far, to tell each step's text exactly once."""

    run_id: str = ""
    ended: bool = False
    # Text streamed per provider step of the run, and how many assistant messages it stored.
    streamed: dict[int, str] = field(default_factory=dict)
    stored: int = 0


async def tell_turn(
    connection: LocalConnection,
    key: str,
    after_id: int,
    request: ChatRequest,
    idempotency_key: str,
    web_link: str,
    progress: TurnProgress,
) -> AsyncIterator[str]:
    """Send the person's message and yield the run's story as text until the run ends;
    events are followed from `after_id` (the conversation's as the request found it)."""
    events = connection.events()
    await connection.call(subscribe=face_pb2.SubscribeCommand(after_id=after_id))
    await connection.mind(
        send_chat=mind_pb2.SendChatRequest(
            conversation_key=key,
            text=request.text,
            images=request.images,
            idempotency_key=idempotency_key,
        )
    )
    async for event in events:
        if event.conversation_key != key:
            continue
        for text in _told(event, idempotency_key, web_link, progress):
            yield text
        if progress.ended:
            return


def _told(
    event: events_pb2.Event, idempotency_key: str, web_link: str, progress: TurnProgress
) -> list[str]:
    kind = event.WhichOneof("payload")
    if kind == "message_appended":
        return _message(event.message_appended, idempotency_key, progress)
    if not progress.run_id:
        return []
    if kind == "text_delta" and event.text_delta.run_id == progress.run_id:
        delta = event.text_delta
        progress.streamed[delta.step] = progress.streamed.get(delta.step, "") + delta.text
        return [delta.text]
    if kind == "tool_changed" and event.tool_changed.run_id == progress.run_id:
        return _tool(event.tool_changed)
    if kind == "approval_changed" and event.approval_changed.run_id == progress.run_id:
        return [_approval(event.approval_changed, web_link)]
    if kind == "run_changed" and event.run_changed.id == progress.run_id:
        return _run(event.run_changed, progress)
    return []


def _message(
    message: common_pb2.Message, idempotency_key: str, progress: TurnProgress
) -> list[str]:
    if message.role == common_pb2.MESSAGE_ROLE_USER:
        if message.idempotency_key == idempotency_key and not progress.run_id:
            progress.run_id = message.run_id
        return []
    if message.role != common_pb2.MESSAGE_ROLE_ASSISTANT or message.run_id != progress.run_id:
        return []
    # The stored message is the whole step: tell what its (ephemeral, droppable) deltas did not.
    step = progress.stored
    progress.stored += 1
    streamed = progress.streamed.get(step, "")
    if message.text.startswith(streamed):
        rest = message.text[len(streamed) :]
        progress.streamed[step] = message.text
        return [rest] if rest else []
    return []


def _tool(tool: common_pb2.ToolProjection) -> list[str]:
    what = f"`{tool.tool}`" + (f" ({tool.arguments_summary})" if tool.arguments_summary else "")
    if tool.status == common_pb2.TOOL_STATUS_RUNNING:
        return [f"\n\n> ⚙ {what}\n\n"]
    ending = _TOOL_ENDS.get(tool.status)
    return [f"\n\n> ⚙ {what} {ending}\n\n"] if ending else []


def _approval(approval: common_pb2.Approval, web_link: str) -> str:
    decided = _DECIDED.get(approval.decision)
    if decided is not None:
        return f"\n\n> ✋ {decided}\n\n"
    where = f" in the web client: {web_link}" if web_link else " with `tobe chat`"
    return (
        f"\n\n> ✋ **Approval needed**: {approval.decision_text}\n> Approve or deny it{where}\n\n"
    )


def _run(run: common_pb2.Run, progress: TurnProgress) -> list[str]:
    if run.state not in _ENDED:
        return []
    progress.ended = True
    if run.state == common_pb2.RUN_STATE_COMPLETED:
        return []
    what = common_pb2.RunState.Name(run.state).removeprefix("RUN_STATE_").lower()
    return [f"\n\n(The run {what}" + (f": {run.reason})" if run.reason else ")")]
