"""`tobe chat`'s conversations: which one opens first, `/new`, `/list` and `/switch`.

`tobe chat` opens the person's newest own conversation (kind "chat"), or starts one: the
conversations the Mind made for Awareness observations are listed and can be switched to, but
never open by themselves. `/list` numbers what it shows, newest first; `/switch N` opens the
N-th of the last list shown, `/switch KEY` any conversation by its key.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence

from rich.console import Console
from rich.table import Table

from face.chat.session import ChatSession
from tobe.v1 import common_pb2, face_pb2, mind_pb2

# `Conversation.kind` of a person's own conversation (the others: "awareness").
CHAT = "chat"
LIST_LIMIT = 50


class NoSuchChoice(Exception):
    """A command named what is not there (`/switch N` a number the last list did not show,
    `/branch` a message id that is no number); its message says what to do."""


class Conversations:
    def __init__(self, session: ChatSession, console: Console) -> None:
        self._session = session
        self._console = console
        self._listed: list[common_pb2.Conversation] = []

    async def newest_chat_or_new(self) -> str:
        """The key of the newest conversation of kind "chat", created when there is none."""
        reply = await self._session.call(
            face_pb2.MindCall(
                list_conversations=mind_pb2.ListConversationsRequest(limit=1, kinds=[CHAT])
            )
        )
        listed = reply.list_conversations.conversations
        return listed[0].key if listed else await self.create("")

    async def create(self, title: str) -> str:
        key = f"p_{uuid.uuid4().hex[:12]}"
        reply = await self._session.call(
            face_pb2.MindCall(
                create_conversation=mind_pb2.CreateConversationRequest(key=key, title=title)
            )
        )
        return reply.create_conversation.conversation.key

    async def show_list(self, current: str) -> None:
        """Print the conversations, numbered, newest first; the current one marked `*`."""
        reply = await self._session.call(
            face_pb2.MindCall(
                list_conversations=mind_pb2.ListConversationsRequest(limit=LIST_LIMIT)
            )
        )
        self._listed = list(reply.list_conversations.conversations)
        self._console.print(listing(self._listed, current))

    async def resolve(self, choice: str) -> str:
        """The key `/switch` names: a number of the last list (listing now if none was
        shown), else the key itself."""
        if not choice.isdigit():
            return choice
        if not self._listed:
            reply = await self._session.call(
                face_pb2.MindCall(
                    list_conversations=mind_pb2.ListConversationsRequest(limit=LIST_LIMIT)
                )
            )
            self._listed = list(reply.list_conversations.conversations)
        number = int(choice)
        if not 1 <= number <= len(self._listed):
            raise NoSuchChoice(
                f"no conversation {number} in the list; /list shows {len(self._listed)}"
            )
        return self._listed[number - 1].key


def listing(conversations: Sequence[common_pb2.Conversation], current: str) -> Table:
    """`#  key  title  kind`, the current one marked `*`."""
    table = Table("#", "", "key", "title", "kind", box=None)
    for number, conversation in enumerate(conversations, start=1):
        table.add_row(
            str(number),
            "*" if conversation.key == current else "",
            conversation.key,
            conversation.title,
            conversation.kind or CHAT,
        )
    if not conversations:
        table.add_row("", "", "no conversations yet", "", "")
    return table
