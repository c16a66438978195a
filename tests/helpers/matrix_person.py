"""A person on Matrix for the channels' tests: an account on the test's Synapse and a client
speaking the client-server API directly, reduced to the requests the tests need."""

from __future__ import annotations

import secrets
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import aiohttp
from mautrix.api import Method, Path
from mautrix.client import ClientAPI
from mautrix.types import EventType, RoomID, UserID

from helpers.synapse import Synapse

# Safety net for a long poll that would otherwise hang; no assertion depends on it.
WAIT = 30.0


def account(synapse: Synapse, name: str) -> tuple[str, str]:
    password = secrets.token_hex(8)
    return synapse.register(f"{name}-{secrets.token_hex(4)}", password), password


class Person:
    """Someone on Element."""

    def __init__(self, client: ClientAPI) -> None:
        self.client = client
        self.user_id = str(client.mxid)

    async def direct_chat_with(self, bot: str, *, encrypted: bool = False) -> str:
        state: list[Any] = []
        if encrypted:
            state.append(
                {
                    "type": "m.room.encryption",
                    "state_key": "",
                    "content": {"algorithm": "m.megolm.v1.aes-sha2"},
                }
            )
        room = await self.client.create_room(
            is_direct=True, invitees=[UserID(bot)], initial_state=state
        )
        return str(room)

    async def send(self, room: str, content: dict[str, Any], kind: str = "m.room.message") -> str:
        event_id = await self.client.send_message_event(
            RoomID(room),
            EventType.find(kind, EventType.Class.MESSAGE),
            content,  # type: ignore[arg-type]
        )
        return str(event_id)

    async def say(self, room: str, text: str) -> str:
        return await self.send(room, {"msgtype": "m.text", "body": text})

    async def typing_changes(self, room: str, since: str = "") -> tuple[list[str], str]:
        """Who is typing in `room` once that changed after `since` (a long poll), and the next
        sync token."""
        query = {"timeout": str(int(WAIT * 1000)), **({"since": since} if since else {})}
        while True:
            response = await self.request(Method.GET, Path.v3.sync, **query)
            room_sync = response.get("rooms", {}).get("join", {}).get(room, {})
            events = room_sync.get("ephemeral", {}).get("events", [])
            typing = [e["content"]["user_ids"] for e in events if e["type"] == "m.typing"]
            query["since"] = response["next_batch"]
            if typing:
                return list(typing[-1]), response["next_batch"]

    async def request(self, method: Method, path: Any, **query: str) -> Any:
        return await self.client.api.request(method, path, query_params=query)

    async def messages_from(self, room: str, sender: str) -> list[dict[str, Any]]:
        page = await self.request(Method.GET, Path.v3.rooms[room].messages, dir="b", limit="100")
        return [
            event
            for event in page["chunk"]
            if event["sender"] == sender and event["type"] == "m.room.message"
        ]


@asynccontextmanager
async def signed_in(synapse: Synapse, name: str) -> AsyncIterator[Person]:
    user_id, password = account(synapse, name)
    session = aiohttp.ClientSession()
    client = ClientAPI(UserID(user_id), base_url=synapse.url, client_session=session)
    try:
        await client.login(password=password)
        await client.set_displayname(name.capitalize())
        yield Person(client)
    finally:
        await session.close()
