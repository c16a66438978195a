"""The Matrix channel whole, as a person on Element meets it: a real Synapse, `tobe channels
serve`, `tobe admin channels approve`, and real Face and Mind processes.

Alice pairs, chats (the reply streams into one edited message), approves a tool call with ✅,
sends an image, and gets the reminder she asked for when its time comes. The channels process
is killed and Synapse restarted in the middle: nothing she said is lost or answered twice, and
nothing the bot said shows twice.
"""

from __future__ import annotations

import asyncio
import io
import json
import os
import re
import signal
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import PIL.Image
import pytest
from helpers.admin_cli import Admin
from helpers.clock_file import set_clock
from helpers.face_process import FaceProcess, running_face
from helpers.matrix_person import Person, account, signed_in
from helpers.mind_process import MindProcess, running_mind
from helpers.synapse import Synapse, running_synapse
from mautrix.types import RoomID

pytestmark = [pytest.mark.e2e, pytest.mark.long_running]

T0 = datetime(2026, 12, 3, 9, 0, tzinfo=UTC)
TEN = datetime(2026, 12, 3, 10, 0, tzinfo=UTC)
WAIT = 60.0
DEFAULT_REPLY = "Hello from your agent, streamed word by word."
# Each stage's own input, at the start of a line (see tests/initiative/test_initiative_e2e.py).
_ABOUT = {"extract": "The owner's input:\n", "evaluate": "(?m)^goal: ", "plan": "(?m)^title: "}


def _rule(stage: str, match: str, answer: dict[str, Any]) -> dict[str, Any]:
    return {"stage": stage, "match": _ABOUT[stage] + match, "answers": [answer]}


SCRIPT = {
    "decisions": [
        _rule(
            "extract",
            "remind me to call mum",
            {
                "tendencies": [{"goal": "Remind the owner to call mum", "evidence": "it"}],
                "pending": [],
            },
        ),
        _rule(
            "evaluate",
            "Remind the owner to call mum",
            {
                "verdict": "planned",
                "reason": "the owner asked for it later",
                "title": "Call mum",
                "actions": ["send_message"],
                "trigger": {"kind": "at", "at": TEN.isoformat()},
            },
        ),
        _rule(
            "plan",
            "Call mum",
            {"steps": [{"order": 1, "action": "send_message", "purpose": "as asked", "after": []}]},
        ),
    ],
    "runs": [
        {
            "match": "Scheduled action 'Call mum'",
            "steps": [
                {
                    "tool_calls": [
                        {"name": "send_message", "arguments": {"text": "Time to call mum."}}
                    ]
                }
            ],
        },
        {"match": "remind me to call mum", "steps": [{"text": "I will remind you at ten."}]},
        {
            "match": "what time is it",
            "steps": [
                {"tool_calls": [{"name": "current_time", "arguments": {}}]},
                {
                    "expect": {"last_role": "tool", "last_is_error": False},
                    "text": "Checked the time.",
                },
            ],
        },
        {
            "match": "what is in",
            "steps": [
                {
                    # The default model is blind: the Mind says an image came in its place.
                    "expect": {"last_contains": "[image: the current model cannot see images]"},
                    "text": "A picture came.",
                }
            ],
        },
        {"match": ".*", "steps": [{"text": DEFAULT_REPLY}]},
    ],
}


@dataclass
class Channels:
    """`tobe channels serve` on the Mind's data directory, dialling the test's Face."""

    env: dict[str, str]
    log: Path
    process: subprocess.Popen[str] | None = None

    def start(self) -> None:
        with self.log.open("a") as output:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "tobe", "channels", "serve"],
                env=self.env,
                stdout=output,
                stderr=subprocess.STDOUT,
                text=True,
            )

    def kill(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait(30)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            self.process.wait(30)


@dataclass
class World:
    synapse: Synapse
    mind: MindProcess
    face: FaceProcess
    channels: Channels
    clock: Path
    bot: str


@pytest.fixture
def world(tmp_path: Path) -> Iterator[World]:
    script, clock = tmp_path / "script.json", tmp_path / "now"
    script.write_text(json.dumps(SCRIPT), encoding="utf-8")
    set_clock(clock, T0)
    with (
        running_synapse() as synapse,
        running_mind(
            tmp_path,
            script=script,
            # A harmless tool that asks anyway, so a person decides a call from the room.
            TOBE_APPROVALS__RULES=json.dumps([{"tool": "current_time", "verdict": "ask"}]),
            TOBE_ACTIONS__ENABLED="true",
            TOBE_SCHEDULER__CLOCK_FILE=str(clock),
            TOBE_SCHEDULER__MAX_SLEEP="0.2",
        ) as mind,
        running_face(mind, web=False) as face,
    ):
        bot, password = account(synapse, "tobe")
        config = tmp_path / "channels.toml"
        config.write_text(
            "[channels.matrix]\nenabled = true\n"
            f'homeserver = "{synapse.url}"\nuser_id = "{bot}"\npassword = "{password}"\n'
            "edit_interval = 0.2\n"
        )
        env = {k: v for k, v in os.environ.items() if not k.startswith("TOBE_")}
        env.update(
            TOBE_DATA_DIR=str(mind.data_dir),
            TOBE_CONFIG=str(config),
            TOBE_FACE__LISTEN=face.address,
            TOBE_LOG_LEVEL="INFO",
        )
        channels = Channels(env, tmp_path / "channels.log")
        channels.start()
        try:
            yield World(synapse, mind, face, channels, clock, bot)
        finally:
            channels.kill()


async def shown(person: Person, room: str, bot: str) -> list[str]:
    """What the bot's messages in `room` show now, oldest first: each with its latest edit."""
    events = list(reversed(await person.messages_from(room, bot)))
    texts: dict[str, str] = {}
    for event in events:
        content = event["content"]
        relation = content.get("m.relates_to", {})
        if relation.get("rel_type") == "m.replace":
            if relation["event_id"] in texts:
                texts[relation["event_id"]] = content["m.new_content"]["body"]
        else:
            texts[event["event_id"]] = content.get("body", "")
    return list(texts.values())


async def until_shown(person: Person, room: str, bot: str, condition: Any, what: str) -> list[str]:
    """The bot's messages once `condition(messages)` holds; fails naming `what` and showing them."""
    texts: list[str] = []
    try:
        async with asyncio.timeout(WAIT):
            while True:
                texts = await shown(person, room, bot)
                if condition(texts):
                    return texts
                await asyncio.sleep(0.2)
    except TimeoutError:
        pytest.fail(f"{what}: not seen in {WAIT} s; the room shows {texts}")


def _png() -> bytes:
    out = io.BytesIO()
    PIL.Image.new("RGB", (4, 3), (10, 120, 200)).save(out, format="PNG")
    return out.getvalue()


async def test_a_person_on_matrix_pairs_chats_approves_sends_an_image_and_is_reminded(
    world: World,
) -> None:
    bot = world.bot
    async with signed_in(world.synapse, "alice") as alice:
        room = await alice.direct_chat_with(bot)
        await _when_joined(alice, room, bot)

        await alice.say(room, "hi")
        texts = await until_shown(
            alice, room, bot, lambda t: any("pairing code" in x for x in t), "the pairing prompt"
        )
        code = re.search(r"approve ([A-Z0-9]{4}-[A-Z0-9]{4})", texts[-1])
        assert code is not None
        approved = await asyncio.to_thread(
            Admin(world.mind.data_dir).run,
            "channels",
            "approve",
            code.group(1),
            "--principal",
            "alice",
        )
        assert alice.user_id in approved.output
        await until_shown(
            alice, room, bot, lambda t: any("You are paired" in x for x in t), "paired"
        )

        await alice.say(room, "how are you")
        await until_shown(alice, room, bot, lambda t: DEFAULT_REPLY in t, "the streamed reply")

        # A tool call that needs approval, approved with a reaction.
        await alice.say(room, "what time is it")
        texts = await until_shown(
            alice, room, bot, lambda t: any("Approval needed" in x for x in t), "the approval"
        )
        request = await _event_with(alice, room, bot, "Approval needed")
        await alice.send(
            room,
            {"m.relates_to": {"rel_type": "m.annotation", "event_id": request, "key": "✅"}},
            kind="m.reaction",
        )
        await until_shown(
            alice, room, bot, lambda t: "Checked the time." in t, "the approved call's reply"
        )
        await until_shown(
            alice,
            room,
            bot,
            lambda t: any("Approved." in x for x in t),
            "the request marked approved",
        )

        # An image through the media repository.
        png = _png()
        uri = await alice.client.upload_media(png, mime_type="image/png", filename="p.png")
        await alice.send(
            room,
            {
                "msgtype": "m.image",
                # A caption (Matrix 1.10): the body is the text when a filename is given apart.
                "body": "what is in this",
                "filename": "p.png",
                "url": str(uri),
                "info": {"mimetype": "image/png", "size": len(png)},
            },
        )
        await until_shown(alice, room, bot, lambda t: "A picture came." in t, "the image's reply")

        # The channels process killed: what Alice says meanwhile waits on the homeserver.
        world.channels.kill()
        await alice.say(room, "are you still there")
        # Synapse restarted too, then the channel: the waiting message is answered once.
        await asyncio.to_thread(world.synapse.restart)
        world.channels.start()
        await until_shown(
            alice,
            room,
            bot,
            lambda t: t.count(DEFAULT_REPLY) == 2,
            "the reply to the waiting message",
        )
        # And Synapse restarted under a running channel.
        await asyncio.to_thread(world.synapse.restart)
        await alice.say(room, "and now")
        await until_shown(
            alice, room, bot, lambda t: t.count(DEFAULT_REPLY) == 3, "the third reply"
        )

        # The reminder she asks for comes at its time, into the room.
        await alice.say(room, "remind me to call mum at ten")
        await until_shown(
            alice, room, bot, lambda t: "I will remind you at ten." in t, "the promise"
        )
        set_clock(world.clock, TEN + timedelta(seconds=1))
        texts = await until_shown(
            alice, room, bot, lambda t: "Time to call mum." in t, "the proactive reminder"
        )

        await asyncio.sleep(2.0)  # anything sent twice would show by now
        texts = await shown(alice, room, bot)
    for once in (
        "Checked the time.",
        "A picture came.",
        "I will remind you at ten.",
        "Time to call mum.",
    ):
        assert texts.count(once) == 1, (once, texts)
    assert texts.count(DEFAULT_REPLY) == 3
    assert sum("pairing code" in t for t in texts) == 1
    assert sum("You are paired" in t for t in texts) == 1


async def _when_joined(person: Person, room: str, bot: str) -> None:
    async with asyncio.timeout(WAIT):
        while True:
            members = await person.client.get_joined_members(RoomID(room))
            if bot in {str(member) for member in members}:
                return
            await asyncio.sleep(0.2)


async def _event_with(person: Person, room: str, bot: str, text: str) -> str:
    for event in await person.messages_from(room, bot):
        relation = event["content"].get("m.relates_to", {})
        if relation.get("rel_type") != "m.replace" and text in event["content"].get("body", ""):
            return str(event["event_id"])
    raise AssertionError(f"no message of the bot holds {text!r}")
