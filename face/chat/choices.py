"""`/profile` and `/hand` in `tobe chat`: what the current conversation runs with.

`/profile` lists the profiles (the current one marked `*`), `/profile NAME` switches to one
(from the next reply on); `/hand NAME` lets the model use only that Hand's tools, `/hand all`
every Hand of yours again.
"""

from __future__ import annotations

from rich.console import Console
from rich.table import Table
from rich.text import Text

from face.chat.session import ChatSession
from tobe.v1 import face_pb2, mind_pb2

ALL_HANDS = "all"


async def profile(session: ChatSession, console: Console, key: str, name: str) -> None:
    if name:
        reply = await session.call(
            face_pb2.MindCall(
                set_conversation_profile=mind_pb2.SetConversationProfileRequest(
                    conversation_key=key, profile=name
                )
            )
        )
        chosen = reply.set_conversation_profile.conversation.profile
        console.print(Text(f"profile: {chosen} (from the next reply)", style="dim"))
        return
    current = await session.call(
        face_pb2.MindCall(
            get_snapshot=mind_pb2.GetSnapshotRequest(conversation_key=key, message_limit=1)
        )
    )
    listed = await session.call(face_pb2.MindCall(list_profiles=mind_pb2.ListProfilesRequest()))
    active = current.get_snapshot.conversation.profile
    table = Table("profile", "description", "platform tools", box=None)
    for info in listed.list_profiles.profiles:
        is_current = info.name == active or (not active and info.is_default)
        table.add_row(
            info.name + (" *" if is_current else ""),
            info.description,
            ", ".join(info.platform_tools),
        )
    console.print(table)


async def hand(session: ChatSession, console: Console, key: str, name: str) -> None:
    wanted = "" if name == ALL_HANDS else name
    reply = await session.call(
        face_pb2.MindCall(
            set_active_hand=mind_pb2.SetActiveHandRequest(conversation_key=key, hand=wanted)
        )
    )
    chosen = reply.set_active_hand.conversation.active_hand
    console.print(Text(f"hand: {chosen or 'every Hand of yours'}", style="dim"))
