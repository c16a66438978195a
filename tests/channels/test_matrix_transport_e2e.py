"""The Matrix transport against a real Synapse: what people do arrives, what the bot sends shows.

One Synapse serves the module; each test registers its own bot and person, so tests share no
rooms. The person is a second mautrix client speaking the client-server API directly. A test
that must show something did NOT arrive sends a marker afterwards in another room and checks
the marker is the next item: sync batches come in order, so the earlier event was read first.
"""

from __future__ import annotations

import asyncio
import io
import pathlib
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager

import PIL.Image
import pytest
from helpers.eventually import eventually_async
from helpers.matrix_person import Person, account, signed_in
from helpers.memory_state import MemoryState
from helpers.ports import free_port
from helpers.synapse import Synapse, running_synapse
from mautrix.api import Method, Path
from mautrix.types import RoomID, UserID
from pydantic import SecretStr

from face.channels.matrix import MatrixTransport
from face.channels.matrix.cursor import SINCE
from face.channels.matrix.transport import ACCESS_TOKEN, DEVICE_ID
from face.channels.transport import Image, Inbound, TransportError
from tobe.config import MatrixChannelSettings

pytestmark = [pytest.mark.e2e, pytest.mark.long_running]

WAIT = 30.0


@pytest.fixture(scope="module")
def synapse() -> Iterator[Synapse]:
    with running_synapse() as server:
        yield server


@pytest.fixture
def bot(synapse: Synapse) -> MatrixChannelSettings:
    user_id, password = account(synapse, "bot")
    return MatrixChannelSettings(
        enabled=True, homeserver=synapse.url, user_id=user_id, password=SecretStr(password)
    )


@pytest.fixture
async def person(synapse: Synapse) -> AsyncIterator[Person]:
    async with signed_in(synapse, "alice") as alice:
        yield alice


class Running:
    """A started transport whose `inbound()` is read into a queue, as the bridge would."""

    def __init__(self, transport: MatrixTransport) -> None:
        self.transport = transport
        self.items: asyncio.Queue[Inbound] = asyncio.Queue()
        self._pump = asyncio.create_task(self._read())

    async def _read(self) -> None:
        async for item in self.transport.inbound():
            await self.items.put(item)

    async def stop(self) -> None:
        await self.transport.close()
        await asyncio.wait_for(self._pump, WAIT)

    async def next(self) -> Inbound:
        """The next item; fails with the transport's error if `inbound()` ended with one."""
        getting = asyncio.ensure_future(self.items.get())
        done, _ = await asyncio.wait(
            {getting, self._pump}, timeout=WAIT, return_when=asyncio.FIRST_COMPLETED
        )
        if getting in done:
            return getting.result()
        getting.cancel()
        if self._pump in done:
            self._pump.result()
            raise AssertionError("inbound() ended without an item")
        raise AssertionError(f"no item from the transport within {WAIT} s")

    async def handled_next(self) -> Inbound:
        """The next item, acknowledged as the bridge does once it is with the Mind."""
        item = await self.next()
        await self.transport.handled(item)
        return item


@asynccontextmanager
async def running(settings: MatrixChannelSettings, state: MemoryState) -> AsyncIterator[Running]:
    """The transport started and, on a state that never synced, past its first sync; closed
    (and its reader ended) after."""
    transport = MatrixTransport(settings, state)
    await transport.start()
    run = Running(transport)
    try:
        await eventually_async(lambda: state.get(SINCE), what="the first sync's token stored")
        yield run
    finally:
        await run.stop()


async def test_a_direct_message_arrives_with_its_sender_room_and_name(
    bot: MatrixChannelSettings, person: Person
) -> None:
    async with running(bot, MemoryState()) as run:
        room = await person.direct_chat_with(bot.user_id)
        sent = await person.say(room, "hello")
        item = await run.next()
    assert (item.id, item.sender, item.thread, item.text) == (sent, person.user_id, room, "hello")
    assert item.direct is True
    assert item.display_name == "Alice"


async def test_a_room_with_a_third_member_is_not_direct(
    synapse: Synapse, bot: MatrixChannelSettings, person: Person
) -> None:
    async with running(bot, MemoryState()) as run, signed_in(synapse, "bob") as bob:
        room = await person.direct_chat_with(bot.user_id)
        await person.client.invite_user(RoomID(room), UserID(bob.user_id))
        await bob.client.join_room_by_id(RoomID(room))
        await person.say(room, "hello both")
        item = await run.next()
    assert (item.text, item.direct) == ("hello both", False)


async def test_a_reply_names_our_message_without_its_quoted_fallback(
    bot: MatrixChannelSettings, person: Person
) -> None:
    async with running(bot, MemoryState()) as run:
        room = await person.direct_chat_with(bot.user_id)
        await person.say(room, "hi")
        await run.next()
        ours = await run.transport.send(room, "How can I help?", key="answer-1")
        await person.send(
            room,
            {
                "msgtype": "m.text",
                "body": f"> <{bot.user_id}> How can I help?\n\nTell me a joke",
                "m.relates_to": {"m.in_reply_to": {"event_id": ours}},
            },
        )
        reply = await run.next()
    assert (reply.text, reply.reply_to) == ("Tell me a joke", ours)


async def test_a_reaction_arrives_with_its_key_and_target(
    bot: MatrixChannelSettings, person: Person
) -> None:
    async with running(bot, MemoryState()) as run:
        room = await person.direct_chat_with(bot.user_id)
        await person.say(room, "hi")
        await run.next()
        ours = await run.transport.send(room, "Shall I?", key="question-1")
        reaction = {"m.relates_to": {"rel_type": "m.annotation", "event_id": ours, "key": "✅"}}
        sent = await person.send(room, reaction, kind="m.reaction")
        item = await run.next()
    assert (item.id, item.reaction, item.reply_to, item.text) == (sent, "✅", ours, "")


def _png(width: int, height: int) -> bytes:
    buffer = io.BytesIO()
    PIL.Image.new("RGB", (width, height), (200, 30, 30)).save(buffer, format="PNG")
    return buffer.getvalue()


async def test_an_image_arrives_as_its_bytes(bot: MatrixChannelSettings, person: Person) -> None:
    picture = _png(3, 2)
    async with running(bot, MemoryState()) as run:
        room = await person.direct_chat_with(bot.user_id)
        url = await person.client.upload_media(picture, mime_type="image/png", filename="red.png")
        content = {
            "msgtype": "m.image",
            "body": "red.png",
            "url": str(url),
            "info": {"mimetype": "image/png", "size": len(picture)},
        }
        await person.send(room, content)
        item = await run.next()
    assert item.images == (Image(media_type="image/png", data=picture, name="red.png"),)
    assert item.text == ""


async def test_a_sent_image_shows_with_its_type_and_size(
    bot: MatrixChannelSettings, person: Person
) -> None:
    picture = _png(4, 3)
    async with running(bot, MemoryState()) as run:
        room = await person.direct_chat_with(bot.user_id)
        await person.say(room, "draw")
        await run.next()
        await run.transport.send(
            room, "", key="drawing", images=(Image("image/png", picture, "red.png"),)
        )
    (shown,) = await person.messages_from(room, bot.user_id)
    content = shown["content"]
    assert content["msgtype"] == "m.image"
    assert content["info"] == {"mimetype": "image/png", "size": len(picture), "w": 4, "h": 3}
    assert await person.client.download_media(content["url"]) == picture


async def test_sent_markdown_shows_formatted_and_without_script(
    bot: MatrixChannelSettings, person: Person
) -> None:
    markdown = "**Done** <script>alert(1)</script> [docs](javascript:alert(2))"
    async with running(bot, MemoryState()) as run:
        room = await person.direct_chat_with(bot.user_id)
        await person.say(room, "hi")
        await run.next()
        sent = await run.transport.send(room, markdown, key="formatted")
    event = await person.request(Method.GET, Path.v3.rooms[room].event[sent])
    content = event["content"]
    assert content["body"] == markdown
    assert content["format"] == "org.matrix.custom.html"
    assert "<strong>Done</strong>" in content["formatted_body"]
    assert "<script" not in content["formatted_body"]
    assert 'href="javascript' not in content["formatted_body"]


async def test_an_edit_replaces_the_message(bot: MatrixChannelSettings, person: Person) -> None:
    async with running(bot, MemoryState()) as run:
        room = await person.direct_chat_with(bot.user_id)
        await person.say(room, "hi")
        await run.next()
        sent = await run.transport.send(room, "Thinking", key="streamed")
        await run.transport.edit(room, sent, "The *answer*")
    path = f"/_matrix/client/v1/rooms/{room}/relations/{sent}/m.replace"
    (edit,) = (await person.request(Method.GET, path))["chunk"]
    assert edit["content"]["m.new_content"]["body"] == "The *answer*"
    assert edit["content"]["m.new_content"]["formatted_body"] == "<p>The <em>answer</em></p>"
    assert edit["content"]["body"] == "* The *answer*"


async def test_a_send_repeated_with_its_key_shows_once_even_after_a_restart(
    bot: MatrixChannelSettings, person: Person
) -> None:
    state = MemoryState()
    async with running(bot, state) as run:
        room = await person.direct_chat_with(bot.user_id)
        await person.say(room, "hi")
        await run.next()
        first = await run.transport.send(room, "Once", key="reply-7")
        again = await run.transport.send(room, "Once", key="reply-7")
    async with running(bot, state) as run:
        after_restart = await run.transport.send(room, "Once", key="reply-7")
    assert first == again == after_restart
    assert [m["content"]["body"] for m in await person.messages_from(room, bot.user_id)] == ["Once"]


async def test_unhandled_items_come_again_after_a_restart_and_handled_ones_do_not(
    bot: MatrixChannelSettings, person: Person
) -> None:
    state = MemoryState()
    async with running(bot, state) as run:
        room = await person.direct_chat_with(bot.user_id)
        await person.say(room, "hi")
        await run.transport.handled(await run.next())
    # Written while the bot is away: one batch at the next start.
    await person.say(room, "one")
    await person.say(room, "two")
    async with running(bot, state) as run:
        one, two = await run.next(), await run.next()
        await run.transport.handled(one)
    assert (one.text, two.text) == ("one", "two")
    async with running(bot, state) as run:
        again = await run.next()
        await run.transport.handled(again)
        await person.say(room, "three")
        three = await run.next()
        await run.transport.handled(three)
    assert (again.id, three.text) == (two.id, "three")
    async with running(bot, state) as run:
        await person.say(room, "four")
        assert (await run.next()).text == "four"


async def test_the_first_start_answers_nothing_said_before_it(
    bot: MatrixChannelSettings, person: Person
) -> None:
    # Invited and spoken to before the bot ever ran.
    room = await person.direct_chat_with(bot.user_id)
    await person.say(room, "are you there?")
    async with running(bot, MemoryState()) as run:
        await person.say(room, "now?")
        assert (await run.next()).text == "now?"
    # A new install of the bot (no state) in a room it had joined: the old message stays old.
    await person.say(room, "while you were away")
    async with running(bot, MemoryState()) as run:
        await person.say(room, "back?")
        assert (await run.next()).text == "back?"


async def test_an_encrypted_room_is_told_once_and_never_read(
    bot: MatrixChannelSettings, person: Person
) -> None:
    state = MemoryState()
    async with running(bot, state) as run:
        plain = await person.direct_chat_with(bot.user_id)
        encrypted = await person.direct_chat_with(bot.user_id, encrypted=True)
        await person.say(encrypted, "readable only by mistake")
        await person.say(plain, "marker")
        assert (await run.handled_next()).text == "marker"
        await person.say(encrypted, "again")
        await person.say(plain, "second marker")
        assert (await run.handled_next()).text == "second marker"
    # A new device: the homeserver's transaction ids would not stop a second notice, the state must.
    del state.values[ACCESS_TOKEN], state.values[DEVICE_ID]
    async with running(bot, state) as run:
        await person.say(encrypted, "after a restart")
        await person.say(plain, "third marker")
        assert (await run.handled_next()).text == "third marker"
    notices = await person.messages_from(encrypted, bot.user_id)
    assert [n["content"]["msgtype"] for n in notices] == ["m.notice"]
    assert "encrypt" in notices[0]["content"]["body"]


async def test_typing_shows_and_stops(bot: MatrixChannelSettings, person: Person) -> None:
    async with running(bot, MemoryState()) as run:
        room = await person.direct_chat_with(bot.user_id)
        await person.say(room, "hi")
        await run.next()
        await run.transport.typing(room, True)
        typing, since = await person.typing_changes(room)
        assert typing == [bot.user_id]
        await run.transport.typing(room, False)
        assert (await person.typing_changes(room, since))[0] == []


async def test_the_sync_loop_goes_on_after_the_homeserver_restarts(
    synapse: Synapse, bot: MatrixChannelSettings, person: Person
) -> None:
    async with running(bot, MemoryState()) as run:
        room = await person.direct_chat_with(bot.user_id)
        await person.say(room, "before")
        assert (await run.handled_next()).text == "before"
        await asyncio.to_thread(synapse.restart)
        await person.say(room, "after")
        assert (await run.handled_next()).text == "after"


async def test_a_wrong_password_is_a_transport_error_that_does_not_show_it(
    bot: MatrixChannelSettings,
) -> None:
    wrong = bot.model_copy(update={"password": SecretStr("not-the-password-1234")})
    with pytest.raises(TransportError, match="refused the login") as raised:
        await MatrixTransport(wrong, MemoryState()).start()
    assert "not-the-password-1234" not in str(raised.value)


async def test_the_password_may_come_from_a_file(
    bot: MatrixChannelSettings, tmp_path: pathlib.Path
) -> None:
    assert bot.password is not None
    password_file = tmp_path / "matrix-password"
    password_file.write_text(bot.password.get_secret_value() + "\n")
    from_file = bot.model_copy(update={"password": None, "password_file": password_file})
    state = MemoryState()
    transport = MatrixTransport(from_file, state)
    await transport.start()
    await transport.close()
    assert state.get(ACCESS_TOKEN)


async def test_a_missing_password_file_is_a_transport_error_naming_it(
    bot: MatrixChannelSettings, tmp_path: pathlib.Path
) -> None:
    missing = tmp_path / "nowhere"
    settings = bot.model_copy(update={"password": None, "password_file": missing})
    with pytest.raises(
        TransportError, match=f"cannot read channels.matrix.password_file {missing}"
    ):
        await MatrixTransport(settings, MemoryState()).start()


async def test_an_unreachable_homeserver_is_a_transport_error(
    bot: MatrixChannelSettings,
) -> None:
    nowhere = bot.model_copy(update={"homeserver": f"http://127.0.0.1:{free_port()}"})
    with pytest.raises(TransportError, match="cannot reach the homeserver"):
        await MatrixTransport(nowhere, MemoryState()).start()
