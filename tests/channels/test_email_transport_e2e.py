"""The email transport against a real Dovecot and an SMTP server delivering into it.

The agent's account is `agent@example.org`; Bob is a person writing to it from his own
account, through the same SMTP server, and reads the agent's replies in his own mailbox.
"""

from __future__ import annotations

import asyncio
import io
import smtplib
from collections.abc import AsyncIterator, Iterator
from email.message import EmailMessage
from email.utils import make_msgid
from pathlib import Path

import pytest
from helpers.eventually import eventually
from helpers.mail_servers import MailSystem, address, mail_system
from PIL import Image as PILImage

from face.channels.email import EmailTransport
from face.channels.state import ChannelState, TransportValues
from face.channels.transport import Image, Inbound, TransportError
from tobe.config import EmailChannelSettings
from tobe.mail.message import body_text, parse_message

pytestmark = pytest.mark.e2e

AGENT, AGENT_PASSWORD = "agent", "agent-password-77c1"
BOB, BOB_PASSWORD = "bob", "bob-password-0e93"
# Safety net for a test that would otherwise hang; no assertion depends on it.
WAIT = 30.0


@pytest.fixture
def mail() -> Iterator[MailSystem]:
    with mail_system({AGENT: AGENT_PASSWORD, BOB: BOB_PASSWORD}) as system:
        yield system


def _settings(mail: MailSystem, **changes: object) -> EmailChannelSettings:
    values: dict[str, object] = {
        "enabled": True,
        "address": address(AGENT),
        "username": AGENT,
        "password": AGENT_PASSWORD,
        "imap_host": "127.0.0.1",
        "imap_port": mail.imap_port,
        "imap_security": "none",
        "smtp_host": "127.0.0.1",
        "smtp_port": mail.smtp_port,
        "smtp_security": "none",
        **changes,
    }
    return EmailChannelSettings.model_validate(values)


class Agent:
    """A started transport and its inbound iterator."""

    def __init__(self, transport: EmailTransport) -> None:
        self.transport = transport
        self.items: AsyncIterator[Inbound] = transport.inbound()

    async def next(self) -> Inbound:
        return await asyncio.wait_for(anext(self.items), WAIT)


@pytest.fixture
def state(tmp_path: Path) -> Iterator[TransportValues]:
    """The transport's values in the channels' state database, as the bridge gives them."""
    channels = ChannelState(tmp_path / "state.db")
    try:
        yield channels.values("email")
    finally:
        channels.close()


@pytest.fixture
async def agent(mail: MailSystem, state: TransportValues) -> AsyncIterator[Agent]:
    transport = EmailTransport(_settings(mail), state)
    await transport.start()
    try:
        yield Agent(transport)
    finally:
        await transport.close()


def _from_bob(
    subject: str,
    text: str,
    *,
    reply_to: EmailMessage | None = None,
    to: str = address(AGENT),
    **headers: str,
) -> EmailMessage:
    message = EmailMessage()
    message["From"] = f"Bob <{BOB.capitalize()}@Example.org>"
    message["To"] = to
    message["Subject"] = subject
    message["Message-ID"] = make_msgid(domain="example.org")
    if reply_to is not None:
        message["In-Reply-To"] = reply_to["Message-ID"]
        message["References"] = f"{reply_to.get('References', '')} {reply_to['Message-ID']}"
    for name, value in headers.items():
        message[name.replace("_", "-")] = value
    message.set_content(text)
    return message


def _bob_sends(mail: MailSystem, message: EmailMessage) -> None:
    """Bob submits `message` through the SMTP server, which delivers it to the agent."""
    with smtplib.SMTP("127.0.0.1", mail.smtp_port, timeout=WAIT) as client:
        client.login(BOB, BOB_PASSWORD)
        client.send_message(message)


def _bobs_inbox(mail: MailSystem, count: int) -> list[EmailMessage]:
    raw = eventually(
        lambda: mail.dovecot.messages(user=BOB),
        until=lambda found: len(found) >= count,
        what=f"{count} mails in Bob's INBOX",
    )
    return [parse_message(message) for message in raw]


def _png() -> bytes:
    out = io.BytesIO()
    PILImage.new("RGB", (3, 2), (200, 10, 10)).save(out, format="PNG")
    return out.getvalue()


async def test_a_persons_mail_arrives_as_an_inbound_with_who_and_where(
    mail: MailSystem, agent: Agent
):
    sent = _from_bob("Lunch", "Shall we meet at noon?")
    _bob_sends(mail, sent)

    item = await agent.next()
    assert item == Inbound(
        id=sent["Message-ID"],
        sender="bob@example.org",
        thread=sent["Message-ID"],
        text="Shall we meet at noon?",
        reply_to="",
        direct=True,
        display_name="Bob",
    )


async def test_a_mail_with_others_in_copy_is_not_direct(mail: MailSystem, agent: Agent):
    _bob_sends(mail, _from_bob("Lunch", "All of us?", Cc="Carol <carol@example.org>"))

    item = await agent.next()
    assert item.direct is False


async def test_quoted_text_and_the_signature_are_left_out(mail: MailSystem, agent: Agent):
    body = (
        "Noon works.\n"
        "\n"
        "On Tue, 2 Dec 2025 at 10:00, Agent <agent@example.org>\n"
        "wrote:\n"
        "> Shall we meet at noon?\n"
        ">\n"
        "> -- \n"
        "> the agent\n"
        "\n"
        "-- \n"
        "Bob\n"
        "+1 555 0100\n"
    )
    _bob_sends(mail, _from_bob("Re: Lunch", body))

    item = await agent.next()
    assert item.text == "Noon works."


async def test_an_html_only_mail_arrives_as_its_text(mail: MailSystem, agent: Agent):
    message = _from_bob("Lunch", "")
    message.set_content("<p>Noon <b>works</b>.</p><blockquote>old</blockquote>", subtype="html")
    _bob_sends(mail, message)

    item = await agent.next()
    assert item.text.startswith("Noon works.")


async def test_an_attached_image_arrives_with_the_mail(mail: MailSystem, agent: Agent):
    image = _png()
    message = _from_bob("Look", "This one.")
    message.add_attachment(image, maintype="image", subtype="png", filename="dot.png")
    _bob_sends(mail, message)

    item = await agent.next()
    assert item.text == "This one."
    assert item.images == (Image("image/png", image, "dot.png"),)


async def test_a_reply_lands_in_the_persons_mailbox_threaded_with_sanitised_html(
    mail: MailSystem, agent: Agent
):
    question = _from_bob("Lunch", "Shall we meet at noon?")
    _bob_sends(mail, question)
    item = await agent.next()
    await agent.transport.handled(item)
    image = _png()

    reply_id = await agent.transport.send(
        item.thread,
        "**Yes**, noon.\n\n<script>alert(1)</script> [x](javascript:alert(1))",
        key="reply-1",
        images=(Image("image/png", image, "map.png"),),
    )

    [reply] = _bobs_inbox(mail, 1)
    assert reply["Message-ID"] == reply_id
    assert reply["Message-ID"].endswith("@example.org>")
    assert reply["From"] == address(AGENT)
    assert reply["To"] == "bob@example.org"
    assert reply["Subject"] == "Re: Lunch"
    assert reply["In-Reply-To"] == question["Message-ID"]
    assert reply["References"] == question["Message-ID"]
    assert reply["Auto-Submitted"] == "auto-replied"
    assert body_text(reply).startswith("**Yes**, noon.")
    html_part = reply.get_body(preferencelist=("html",))
    assert html_part is not None
    html = html_part.get_content()
    assert "<strong>Yes</strong>" in html
    assert "<script" not in html
    assert 'href="javascript' not in html
    [attachment] = list(reply.iter_attachments())
    assert (attachment.get_filename(), attachment.get_content()) == ("map.png", image)


async def test_the_same_key_gives_the_same_message_id_and_is_not_sent_twice(
    mail: MailSystem, agent: Agent
):
    _bob_sends(mail, _from_bob("Lunch", "Noon?"))
    item = await agent.next()

    first = await agent.transport.send(item.thread, "Yes.", key="reply-1")
    again = await agent.transport.send(item.thread, "Yes.", key="reply-1")
    other = await agent.transport.send(item.thread, "And bring a map.", key="reply-2")

    assert again == first != other
    replies = _bobs_inbox(mail, 2)
    assert [r["Message-ID"] for r in replies] == [first, other]


async def test_three_exchanges_stay_one_thread_with_one_re_in_the_subject(
    mail: MailSystem, agent: Agent
):
    question = _from_bob("Lunch", "Noon?")
    received: list[Inbound] = []
    replies: list[EmailMessage] = []
    for turn in range(3):
        _bob_sends(mail, question)
        item = await agent.next()
        await agent.transport.handled(item)
        received.append(item)
        await agent.transport.send(item.thread, f"Answer {turn}", key=f"reply-{turn}")
        replies = _bobs_inbox(mail, turn + 1)
        # Bob's client answers the agent's latest reply, quoting it.
        question = _from_bob(
            replies[-1]["Subject"], f"Follow-up {turn}\n\n> Answer {turn}", reply_to=replies[-1]
        )

    first = received[0].id
    assert [item.thread for item in received] == [first] * 3
    assert [item.text for item in received] == ["Noon?", "Follow-up 0", "Follow-up 1"]
    assert [item.reply_to for item in received[1:]] == [r["Message-ID"] for r in replies[:2]]
    assert [r["Subject"] for r in replies] == ["Re: Lunch"] * 3
    last = replies[-1]
    assert last["In-Reply-To"] == received[-1].id
    assert last["References"].split() == [
        first,
        replies[0]["Message-ID"],
        received[1].id,
        replies[1]["Message-ID"],
        received[2].id,
    ]


async def test_a_mail_from_someone_else_naming_a_persons_thread_starts_its_own(
    mail: MailSystem, agent: Agent
):
    question = _from_bob("Lunch", "Noon?")
    _bob_sends(mail, question)
    bobs = await agent.next()
    await agent.transport.send(bobs.thread, "Yes.", key="reply-1")
    [reply] = _bobs_inbox(mail, 1)
    intruder = _from_bob("Re: Lunch", "Tell me what Bob said.", reply_to=reply)
    intruder.replace_header("From", "Carol <carol@example.org>")
    mail.dovecot.append(bytes(intruder), user=AGENT)

    carols = await agent.next()
    assert (carols.sender, carols.thread) == ("carol@example.org", carols.id)
    assert carols.reply_to == reply["Message-ID"]
    assert bobs.thread == question["Message-ID"] != carols.thread


async def test_replies_after_a_restart_still_thread(mail: MailSystem, state: TransportValues):
    question = _from_bob("Lunch", "Noon?")
    first = EmailTransport(_settings(mail), state)
    await first.start()
    try:
        _bob_sends(mail, question)
        item = await Agent(first).next()
        await first.handled(item)
    finally:
        await first.close()

    second = EmailTransport(_settings(mail), state)
    await second.start()
    try:
        await second.send(item.thread, "Yes.", key="reply-1")
    finally:
        await second.close()

    [reply] = _bobs_inbox(mail, 1)
    assert (reply["Subject"], reply["In-Reply-To"]) == ("Re: Lunch", question["Message-ID"])


async def test_automatic_list_bounce_and_own_mail_is_not_yielded(
    mail: MailSystem, agent: Agent, state: TransportValues, caplog: pytest.LogCaptureFixture
):
    caplog.set_level("INFO", logger="face.channels.email.transport")
    for skipped in (
        _from_bob("Away", "I am out of office.", Auto_Submitted="auto-replied"),
        _from_bob("News", "This week...", List_Id="<news.example.org>"),
        _from_bob("Sale", "Buy now", List_Unsubscribe="<mailto:leave@example.org>"),
        _from_bob("Digest", "Today...", Precedence="bulk"),
    ):
        _bob_sends(mail, skipped)
    own = _from_bob("Note to self", "Mine.")
    own.replace_header("From", f"Agent <{address(AGENT)}>")
    mail.dovecot.append(bytes(own), user=AGENT)
    bounce = _from_bob("Undelivered", "Your mail could not be delivered.")
    bounce.replace_header("From", "MAILER-DAEMON@example.org")
    mail.dovecot.append(bytes(bounce), user=AGENT)
    wanted = _from_bob("Lunch", "Noon?")
    _bob_sends(mail, wanted)

    item = await agent.next()
    assert item.id == wanted["Message-ID"]
    skipped_lines = [r.getMessage() for r in caplog.records if "is not answered" in r.message]
    assert len(skipped_lines) == 6
    assert any("Auto-Submitted: auto-replied" in line for line in skipped_lines)
    assert any("own address" in line for line in skipped_lines)
    assert any("bounce" in line for line in skipped_lines)


async def test_unhandled_mail_comes_again_after_a_restart_and_handled_mail_does_not(
    mail: MailSystem, state: TransportValues
):
    sent = [_from_bob(f"Mail {n}", f"Number {n}") for n in range(4)]
    transport = EmailTransport(_settings(mail), state)
    await transport.start()
    try:
        for message in sent[:3]:
            _bob_sends(mail, message)
        agent = Agent(transport)
        first, second, third = [await agent.next() for _ in range(3)]
        await transport.handled(first)
        # Handled out of order: the position stays before `second` until it is handled too.
        await transport.handled(third)
    finally:
        await transport.close()

    transport = EmailTransport(_settings(mail), state)
    await transport.start()
    try:
        agent = Agent(transport)
        again = [await agent.next() for _ in range(2)]
        assert [item.id for item in again] == [second.id, third.id]
        for item in again:
            await transport.handled(item)
    finally:
        await transport.close()

    transport = EmailTransport(_settings(mail), state)
    await transport.start()
    try:
        _bob_sends(mail, sent[3])
        assert (await Agent(transport).next()).id == sent[3]["Message-ID"]
    finally:
        await transport.close()


async def test_mail_already_in_the_mailbox_at_the_first_start_is_not_news(
    mail: MailSystem, state: TransportValues
):
    _bob_sends(mail, _from_bob("Old", "From before."))
    eventually(lambda: mail.dovecot.messages(user=AGENT), what="the old mail delivered")
    transport = EmailTransport(_settings(mail), state)
    await transport.start()
    try:
        new = _from_bob("New", "Now.")
        _bob_sends(mail, new)
        assert (await Agent(transport).next()).id == new["Message-ID"]
    finally:
        await transport.close()


async def test_watching_resumes_after_the_imap_server_restarts(mail: MailSystem, agent: Agent):
    mail.dovecot.stop()
    mail.dovecot.start()
    later = _from_bob("Still there?", "After the restart.")
    _bob_sends(mail, later)

    item = await agent.next()
    assert item.id == later["Message-ID"]


async def test_a_wrong_password_fails_the_start_with_a_line_that_hides_it(
    mail: MailSystem, state: TransportValues
):
    wrong = "not-the-password-5521"
    transport = EmailTransport(_settings(mail, password=wrong), state)

    with pytest.raises(TransportError) as refused:
        await transport.start()

    assert "IMAP login as 'agent'" in str(refused.value)
    assert wrong not in str(refused.value)
    assert "\n" not in str(refused.value)


async def test_a_refused_smtp_login_fails_the_send_with_a_line_that_hides_it(
    mail: MailSystem, state: TransportValues, tmp_path: Path
):
    password_file = tmp_path / "password"
    password_file.write_text(AGENT_PASSWORD + "\n")
    transport = EmailTransport(_settings(mail, password=None, password_file=password_file), state)
    await transport.start()
    try:
        _bob_sends(mail, _from_bob("Lunch", "Noon?"))
        item = await Agent(transport).next()
        mail.dovecot.users[AGENT] = "changed-on-the-server"  # SMTP logins check this table

        with pytest.raises(TransportError) as refused:
            await transport.send(item.thread, "Yes.", key="reply-1")
    finally:
        await transport.close()

    assert "SMTP login as 'agent'" in str(refused.value)
    assert AGENT_PASSWORD not in str(refused.value)


async def test_edit_is_refused_because_mail_cannot_change_once_sent(agent: Agent):
    assert agent.transport.edits is False
    with pytest.raises(TransportError, match="mail cannot edit a sent message"):
        await agent.transport.edit("<thread@example.org>", "<m@example.org>", "new text")
