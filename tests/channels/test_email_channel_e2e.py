"""The email channel whole: a person's mail through a real SMTP server and Dovecot, the email
transport, the bridge, and real Face and Mind processes. Bob pairs, then a thread of three
exchanges stays one conversation and one mail thread, and an approval is decided by a reply."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime
from email.message import EmailMessage
from pathlib import Path

import pytest
from helpers.face_process import FaceProcess, running_face
from helpers.mail_servers import MailSystem, mail_system
from helpers.mind_process import MindProcess, issue_token, running_mind
from test_email_transport_e2e import (
    AGENT,
    AGENT_PASSWORD,
    BOB,
    BOB_PASSWORD,
    _bob_sends,
    _bobs_inbox,
    _from_bob,
    _settings,
)

from face.channels.bridge import FaceTarget, run_channel
from face.channels.email import EmailTransport
from face.channels.state import ChannelState
from tobe.mail.message import body_text

pytestmark = pytest.mark.e2e

SCRIPT = """
runs:
  - match: "remember"
    steps:
      - tool_calls: [{name: memory_write, arguments: {key: colour, text: blue}}]
      - text: "Noted: blue."
  - match: "first"
    steps: [{text: "Reply one."}]
  - match: "second"
    steps: [{text: "Reply two."}]
  - match: "third"
    steps: [{text: "Reply three."}]
  - match: ".*"
    steps: [{text: "Hello Bob."}]
"""


@pytest.fixture
def processes(tmp_path: Path) -> Iterator[tuple[MindProcess, FaceProcess, MailSystem]]:
    script = tmp_path / "script.yaml"
    script.write_text(SCRIPT)
    with (
        mail_system({AGENT: AGENT_PASSWORD, BOB: BOB_PASSWORD}) as mail,
        running_mind(tmp_path, script=script, TOBE_APPROVALS__MEMORY="ask") as mind,
        running_face(mind, web=False) as face,
    ):
        yield mind, face, mail


@contextlib.asynccontextmanager
async def email_channel(
    tmp_path: Path, face: FaceProcess, mail: MailSystem
) -> AsyncIterator[ChannelState]:
    state = ChannelState.at(tmp_path / "channels-data")
    settings = _settings(mail)
    task = asyncio.create_task(
        run_channel(
            EmailTransport(settings, state.values("email")),
            settings,
            state,
            FaceTarget(face.address, None),
        )
    )
    try:
        # Mail that arrives before the watch knows where the mailbox stands is not news.
        async with asyncio.timeout(30):
            while state.values("email").get("position") is None:
                await asyncio.sleep(0.05)
        yield state
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        state.close()


async def inbox(mail: MailSystem, count: int) -> list[EmailMessage]:
    return await asyncio.to_thread(_bobs_inbox, mail, count)


async def test_bob_pairs_by_mail_keeps_one_thread_for_three_exchanges_and_approves_by_reply(
    tmp_path: Path, processes: tuple[MindProcess, FaceProcess, MailSystem]
) -> None:
    mind, face, mail = processes
    async with email_channel(tmp_path, face, mail) as state:
        first = _from_bob("Plans", "hello there")
        await asyncio.to_thread(_bob_sends, mail, first)
        [prompt] = await inbox(mail, 1)
        [pairing] = state.pending_pairings(datetime.now(UTC))
        assert pairing.code in body_text(prompt)
        assert prompt["In-Reply-To"] == first["Message-ID"]

        token = await asyncio.to_thread(
            issue_token, mind.url, kind="client", principal="alice", scopes=["chat", "approve"]
        )
        state.approve_pairing(pairing.code, "alice", "cred-bob", token, datetime.now(UTC))
        paired = (await inbox(mail, 2))[-1]
        assert "You are paired" in body_text(paired)

        last = paired
        for n, word in enumerate(("first", "second", "third"), start=3):
            mine = _from_bob(f"Re: {last['Subject'].removeprefix('Re: ')}", word, reply_to=last)
            await asyncio.to_thread(_bob_sends, mail, mine)
            last = (await inbox(mail, n))[-1]
            assert body_text(last).strip().startswith(f"Reply {('one', 'two', 'three')[n - 3]}")
            assert last["In-Reply-To"] == mine["Message-ID"]
            assert last["References"].split()[0] == first["Message-ID"]
            assert last["Subject"] == "Re: Plans"

        ask = _from_bob("Re: Plans", "remember my colour", reply_to=last)
        await asyncio.to_thread(_bob_sends, mail, ask)
        request = (await inbox(mail, 6))[-1]
        assert "Approval needed" in body_text(request)
        answer = _from_bob("Re: Plans", "approve\n\n> quoted request", reply_to=request)
        await asyncio.to_thread(_bob_sends, mail, answer)
        done = (await inbox(mail, 7))[-1]
        assert "Noted: blue." in body_text(done)
        # One conversation for the whole thread, and nothing sent twice.
        assert len(state.threads_of("email", pairing.address)) == 1
        assert len(await inbox(mail, 7)) == 7
