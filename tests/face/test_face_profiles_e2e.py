"""Profiles and the active Hand through real Face and Mind processes: the `list_profiles`,
`set_profile`, `set_active_hand` and `create_conversation` commands (replies, refusals and the
events on the stream), and `/profile` and `/hand` in a real `tobe chat`."""

from __future__ import annotations

import io
import sys
from collections.abc import Iterator
from pathlib import Path

import pexpect
import pytest
from helpers.face_client import FaceClient, run_ended
from helpers.face_process import FaceProcess
from helpers.mind_gateway import Gateway
from helpers.mind_process import MindProcess, running_mind

from tobe.v1 import events_pb2, face_pb2, mind_pb2

pytestmark = [pytest.mark.e2e, pytest.mark.long_running]
PROMPT = "you› "
INVALID_ARGUMENT, PERMISSION_DENIED = 3, 7
PERSONA = "You are a running coach."
CONFIG = f"""
[[profiles.profile]]
name = "coach"
description = "a running coach"
persona = "{PERSONA}"
platform_tools = ["current_time"]
hand_tools = false
"""
SCRIPT = f"""
runs:
  - match: "^coach me"
    steps:
      - expect: {{system_contains: "{PERSONA}", tools_exclude: [wait]}}
        text: "Ten easy kilometres today."
  - match: ".*"
    steps:
      - {{expect: {{tools_include: [wait]}}, text: "echo reply"}}
"""


@pytest.fixture
def mind(tmp_path: Path) -> Iterator[MindProcess]:
    script, config = tmp_path / "script.yaml", tmp_path / "config.toml"
    script.write_text(SCRIPT)
    config.write_text(CONFIG)
    with running_mind(tmp_path, script=script, TOBE_CONFIG=str(config)) as process:
        yield process


def changed_to(key: str, **fields: str):
    """Predicate: a `conversation_changed` event of `key` with these field values."""

    def match(event: events_pb2.Event) -> bool:
        if not event.HasField("conversation_changed") or event.conversation_key != key:
            return False
        return all(getattr(event.conversation_changed, k) == v for k, v in fields.items())

    return match


async def test_list_profiles_answers_every_profile_and_marks_the_default(
    mind: MindProcess, face: FaceProcess
) -> None:
    client = await FaceClient.connect(face.address, mind.client_tokens["alice"])
    try:
        reply = await client.command(list_profiles=face_pb2.ListProfilesCommand())
        profiles = {p.name: p for p in reply.list_profiles.profiles}
        assert list(profiles) == ["default", "coach"]
        assert profiles["default"].is_default and not profiles["coach"].is_default
        assert profiles["coach"].description == "a running coach"
        assert list(profiles["coach"].platform_tools) == ["current_time"]
    finally:
        await client.close()


async def test_creating_a_conversation_with_a_profile_answers_and_streams_it(
    mind: MindProcess, face: FaceProcess
) -> None:
    client = await FaceClient.connect(face.address, mind.client_tokens["alice"])
    try:
        await client.command(subscribe=face_pb2.SubscribeCommand(after_id=0))
        reply = await client.command(
            create_conversation=face_pb2.CreateConversationCommand(key="p_run", profile="coach")
        )
        assert reply.create_conversation.conversation.profile == "coach"
        created = await client.wait_event(lambda e: e.HasField("conversation_created"))
        assert (created.conversation_key, created.conversation_created.profile) == (
            "p_run",
            "coach",
        )
        sent = await client.command(
            send_chat=face_pb2.SendChatCommand(
                conversation_key="p_run", text="coach me", idempotency_key="c1"
            )
        )
        ended = await client.wait_event(run_ended(sent.send_chat.run_id))
        assert ended.run_changed.state == 2, ended.run_changed.reason  # completed

        unknown = await client.command(
            create_conversation=face_pb2.CreateConversationCommand(key="p_x", profile="yoga")
        )
        assert unknown.error.code == INVALID_ARGUMENT
        assert "no profile 'yoga'; known profiles: default, coach" in unknown.error.message
    finally:
        await client.close()


async def test_the_owner_sets_the_profile_and_a_member_is_refused(
    mind: MindProcess, face: FaceProcess
) -> None:
    alice = await FaceClient.connect(face.address, mind.client_tokens["alice"])
    bob = await FaceClient.connect(face.address, mind.client_tokens["bob"])
    try:
        await alice.command(subscribe=face_pb2.SubscribeCommand(after_id=0))
        await alice.command(
            create_conversation=face_pb2.CreateConversationCommand(key="g_club", members=["bob"])
        )
        set_coach = face_pb2.SetProfileCommand(conversation_key="g_club", profile="coach")
        refused = await bob.command(set_profile=set_coach)
        assert refused.error.code == PERMISSION_DENIED
        assert "only the owner of 'g_club' (alice)" in refused.error.message

        unknown = await alice.command(
            set_profile=face_pb2.SetProfileCommand(conversation_key="g_club", profile="yoga")
        )
        assert unknown.error.code == INVALID_ARGUMENT
        assert "no profile 'yoga'; known profiles: default, coach" in unknown.error.message

        changed = await alice.command(set_profile=set_coach)
        assert changed.set_profile.conversation.profile == "coach"
        event = await alice.wait_event(changed_to("g_club", profile="coach"))
        assert event.durable_id > 0
        snapshot = await bob.command(
            snapshot=face_pb2.SnapshotCommand(conversation_key="g_club", message_limit=1)
        )
        assert snapshot.snapshot.conversation.profile == "coach"
    finally:
        await alice.close()
        await bob.close()


async def test_the_owner_sets_the_active_hand_and_a_member_is_refused(
    mind: MindProcess, face: FaceProcess
) -> None:
    alice = await FaceClient.connect(face.address, mind.client_tokens["alice"])
    bob = await FaceClient.connect(face.address, mind.client_tokens["bob"])
    try:
        await alice.command(subscribe=face_pb2.SubscribeCommand(after_id=0))
        await bob.command(subscribe=face_pb2.SubscribeCommand(after_id=0))
        await alice.command(
            create_conversation=face_pb2.CreateConversationCommand(key="g_desk", members=["bob"])
        )
        to_desk = face_pb2.SetActiveHandCommand(conversation_key="g_desk", hand="desk")
        refused = await bob.command(set_active_hand=to_desk)
        assert refused.error.code == PERMISSION_DENIED

        chosen = await alice.command(set_active_hand=to_desk)
        assert chosen.set_active_hand.conversation.active_hand == "desk"
        # Members see the change on their stream too.
        await alice.wait_event(changed_to("g_desk", active_hand="desk"))
        await bob.wait_event(changed_to("g_desk", active_hand="desk"))

        every = await alice.command(
            set_active_hand=face_pb2.SetActiveHandCommand(conversation_key="g_desk", hand="")
        )
        assert every.set_active_hand.conversation.active_hand == ""
        await bob.wait_event(changed_to("g_desk", active_hand=""))
    finally:
        await alice.close()
        await bob.close()


def active_hands(mind: MindProcess) -> list[str]:
    """The active Hand of each of alice's conversations, as the Mind has them."""
    gateway = Gateway.connect(mind)
    try:
        listed = gateway.stub.ListConversations(
            mind_pb2.ListConversationsRequest(on_behalf_of=gateway.who("alice")),
            metadata=gateway.md,
            timeout=10,
        )
        return [c.active_hand for c in listed.conversations]
    finally:
        gateway.close()


def test_slash_profile_lists_marks_and_switches_to_the_new_persona_in_tobe_chat(
    mind: MindProcess, face: FaceProcess
) -> None:
    chat = pexpect.spawn(
        sys.executable,
        ["-m", "tobe", "chat", "--address", face.address],
        env={**face.env, "TOBE_CHAT_TOKEN": mind.client_tokens["alice"], "TERM": "xterm"},
        encoding="utf-8",
        timeout=60,
        dimensions=(50, 200),
    )
    chat.logfile_read = io.StringIO()
    try:
        chat.expect(PROMPT)
        chat.sendline("/profile")
        chat.expect(r"default \*")
        chat.expect(r"coach +a running coach +current_time")
        chat.expect(PROMPT)
        # Before the switch the coach's step fails: the system prompt has no persona yet.
        chat.sendline("coach me now")
        chat.expect(f"run failed: .*expected the system prompt to contain '{PERSONA}'")
        chat.expect(PROMPT)
        chat.sendline("/profile yoga")
        chat.expect("no profile 'yoga'; known profiles: default, coach")
        chat.expect(PROMPT)
        chat.sendline("/profile coach")
        chat.expect(r"profile: coach \(from the next reply\)")
        chat.expect(PROMPT)
        chat.sendline("coach me")
        chat.expect("Ten easy kilometres today.")
        chat.expect(PROMPT)
        chat.sendline("/profile")
        chat.expect(r"coach \* +a running coach")
        chat.expect(PROMPT)
        chat.sendline("/quit")
        chat.expect(pexpect.EOF)
    finally:
        chat.close(force=True)
    assert "default *" in chat.logfile_read.getvalue().split("/profile coach")[0]


def test_slash_hand_chooses_one_hand_and_all_brings_every_hand_back_in_tobe_chat(
    mind: MindProcess, face: FaceProcess
) -> None:
    chat = pexpect.spawn(
        sys.executable,
        ["-m", "tobe", "chat", "--address", face.address],
        env={**face.env, "TOBE_CHAT_TOKEN": mind.client_tokens["alice"], "TERM": "xterm"},
        encoding="utf-8",
        timeout=60,
        dimensions=(50, 200),
    )
    try:
        chat.expect(PROMPT)
        chat.sendline("/hand desk")
        chat.expect("hand: desk")
        chat.expect(PROMPT)
        assert active_hands(mind) == ["desk"]
        chat.sendline("/hand all")
        chat.expect("hand: every Hand of yours")
        chat.expect(PROMPT)
        assert active_hands(mind) == [""]
        chat.sendline("/quit")
        chat.expect(pexpect.EOF)
    finally:
        chat.close(force=True)
