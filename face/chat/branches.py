"""`/branch` in `tobe chat`: go on from an earlier message in a conversation of its own.

`/branch` branches the current conversation at its last message, `/branch ID` at message ID
(the ids `/reply` lists); the branch holds the history up to there and opens at once, while
the conversation it came from stays as it was (`Mind.BranchConversation`).
"""

from __future__ import annotations

from face.chat.conversations import NoSuchChoice
from face.chat.session import ChatSession
from tobe.v1 import common_pb2, face_pb2, mind_pb2

USAGE = "usage: /branch [ID]  (at the last message, or at message ID: /reply lists ids)"


async def branch(session: ChatSession, key: str, argument: str) -> common_pb2.Conversation:
    """The branch of `key` at the message `argument` names (the last one when empty)."""
    message_id = await _message_id(session, key, argument.strip().lstrip("#"))
    reply = await session.call(
        face_pb2.MindCall(
            branch_conversation=mind_pb2.BranchConversationRequest(
                conversation_key=key, message_id=message_id
            )
        )
    )
    return reply.branch_conversation.conversation


def origin_line(conversation: common_pb2.Conversation) -> str:
    """What `tobe chat` says of a branch when it opens ("" for a conversation that is none)."""
    if not conversation.branched_from_key:
        return ""
    return (
        f"branched from {conversation.branched_from_key} "
        f"at message #{conversation.branched_from_message_id}"
    )


async def _message_id(session: ChatSession, key: str, named: str) -> int:
    if named:
        if not named.isdigit():
            raise NoSuchChoice(USAGE)
        return int(named)
    reply = await session.call(
        face_pb2.MindCall(
            get_snapshot=mind_pb2.GetSnapshotRequest(conversation_key=key, message_limit=1)
        )
    )
    messages = reply.get_snapshot.messages
    if not messages:
        raise NoSuchChoice("nothing to branch from yet: this conversation has no messages")
    return messages[-1].id
