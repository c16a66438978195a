"""The email adapter inside a real Awareness process, against a real Dovecot and an SMTP sink."""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import AsyncIterator, Iterator
from email import message_from_bytes, policy
from email.message import EmailMessage

import pytest
from aiosmtpd.controller import Controller
from awareness_harness import BUILTIN, AwarenessProcess, Client, add_adapter, next_batch
from awareness_images import png
from helpers.dovecot_server import PASSWORD, USERNAME, Dovecot, dovecot_server
from helpers.eventually import eventually_async
from helpers.ports import free_port

from awareness.adapter import AdapterContext
from awareness.adapters.email.positions import Positions
from tobe.v1 import awareness_pb2 as pb
from tobe.v1 import common_pb2


def _mail(subject: str, text: str, attachment: bytes | None = None) -> bytes:
    message = EmailMessage()
    message["From"] = "Bob <bob@example.org>"
    message["To"] = f"{USERNAME}@example.org"
    message["Cc"] = "Carol <carol@example.org>"
    message["Subject"] = subject
    message["Date"] = "Tue, 02 Dec 2025 10:00:00 +0000"
    message["Message-ID"] = _message_id(subject)
    message["In-Reply-To"] = "<earlier@example.org>"
    message.set_content(text)
    if attachment is not None:
        message.add_attachment(attachment, maintype="image", subtype="png", filename="dot.png")
    return bytes(message)


def _message_id(subject: str) -> str:
    return f"<{hashlib.sha1(subject.encode()).hexdigest()}@example.org>"


class _Sink:
    """Keeps every message the SMTP server receives."""

    def __init__(self) -> None:
        self.received: list[tuple[list[str], bytes]] = []

    async def handle_DATA(self, server, session, envelope) -> str:
        self.received.append((list(envelope.rcpt_tos), envelope.content))
        return "250 OK"


@pytest.fixture
def dovecot() -> Iterator[Dovecot]:
    with dovecot_server() as server:
        yield server


@pytest.fixture
def smtp_sink() -> Iterator[tuple[int, _Sink]]:
    sink = _Sink()
    controller = Controller(sink, hostname="127.0.0.1", port=free_port())
    controller.start()
    try:
        yield controller.port, sink
    finally:
        controller.stop()


def test_positions_resume_per_uidvalidity_and_a_renumbered_mailbox_starts_at_its_uidnext(
    tmp_path,
):
    def context() -> AdapterContext:
        return AdapterContext(
            adapter_id="email-test",
            adapter_name="email",
            directory=tmp_path,
            instance_dir=tmp_path,
            config={},
            emitter=lambda **_: "",
            failure_reporter=lambda _: None,
        )

    positions = Positions(context())
    assert positions.resume("INBOX", 7, 5) == 5
    positions.advance("INBOX", 7, 9)
    assert Positions(context()).resume("INBOX", 7, 12) == 9
    assert Positions(context()).resume("INBOX", 8, 3) == 3
    assert Positions(context()).resume("INBOX", 8, 4) == 3


def _configure(awareness: AwarenessProcess, dovecot: Dovecot, **imap) -> None:
    add_adapter(awareness.adapters_dir, BUILTIN / "email")
    default = json.loads((BUILTIN / "email" / "config.default.json").read_text())
    config = {
        **default,
        "auto_start": True,
        "trust": "high",
        "imap": {
            **default["imap"],
            "host": "127.0.0.1",
            "port": dovecot.port,
            "security": "none",
            "username": USERNAME,
            "password": PASSWORD,
            **imap,
        },
    }
    awareness.write_config("email", config)


@pytest.fixture
async def awareness_client(awareness_dirs: AwarenessProcess) -> AsyncIterator[Client]:
    c = Client(awareness_dirs.target)
    try:
        yield c
    finally:
        await c.close()


@pytest.mark.parametrize("idle", [True, False], ids=["idle", "polling"])
async def test_new_mail_is_observed_once_with_its_attachment_as_media(
    awareness_dirs: AwarenessProcess, dovecot: Dovecot, awareness_client: Client, idle: bool
):
    dovecot.append(_mail("already there", "old news"))
    _configure(awareness_dirs, dovecot, idle=idle, poll_interval=0.2)
    awareness_dirs.start()
    stream = awareness_client.subscribe()
    image = png(2, 3)
    dovecot.append(_mail("Lunch?", "Shall we meet at noon?", attachment=image))

    [observation] = (await next_batch(stream)).observations
    content = json.loads(observation.content_json)
    assert content == {
        "kind": "mail",
        "mailbox": "INBOX",
        "uid": 2,
        "message_id": _message_id("Lunch?"),
        "from": "Bob <bob@example.org>",
        "to": [f"{USERNAME}@example.org"],
        "cc": ["Carol <carol@example.org>"],
        "subject": "Lunch?",
        "date": "2025-12-02T10:00:00+00:00",
        "text": "Shall we meet at noon?",
        "attachments": [{"filename": "dot.png", "mime_type": "image/png", "size": len(image)}],
        "in_reply_to": "<earlier@example.org>",
    }
    assert observation.actor == pb.OBSERVATION_ACTOR_SERVICE
    assert (observation.source_key, observation.source_title) == ("INBOX", f"{USERNAME} INBOX")
    [ref] = observation.media
    assert (ref.mime_type, ref.filename, ref.size_bytes) == ("image/png", "dot.png", len(image))
    media = await awareness_client.stub.GetMedia(
        pb.GetMediaRequest(ref=ref.ref, max_bytes=1 << 20), metadata=awareness_client.metadata
    )
    assert media.data == image

    # Mail arriving after the first check is found by waiting in IDLE (or by polling).
    dovecot.append(_mail("Second", "again"))
    [second] = (await next_batch(stream)).observations
    assert json.loads(second.content_json)["subject"] == "Second"
    stream.cancel()

    # Restarted, the adapter resumes after what it observed: the next mail is the next news.
    awareness_dirs.stop()
    awareness_dirs.start()
    stream = awareness_client.subscribe(after_seq=0)
    dovecot.append(_mail("Third", "once more"))
    subjects: list[str] = []
    while "Third" not in subjects:
        batch = await next_batch(stream)
        subjects += [json.loads(o.content_json)["subject"] for o in batch.observations]
    assert subjects == ["Lunch?", "Second", "Third"]
    stream.cancel()


async def test_recent_and_fetch_read_mail_without_marking_it_read(
    awareness_dirs: AwarenessProcess, dovecot: Dovecot, awareness_client: Client
):
    dovecot.append(_mail("First", "one"))
    dovecot.append(_mail("Second", "two\n" + "x" * 300))
    _configure(awareness_dirs, dovecot)
    default = json.loads((awareness_dirs.instance_dir("email") / "config.json").read_text())
    awareness_dirs.write_config("email", {**default, "max_body_chars": 100})
    awareness_dirs.start()
    email = await awareness_client.adapter_id("email")

    recent = await awareness_client.observe(email, "recent", limit=5)
    assert recent["status"] == "success", recent
    messages = recent["result"]["messages"]
    assert [(m["uid"], m["subject"]) for m in messages] == [(2, "Second"), (1, "First")]
    assert messages[0]["from"] == "Bob <bob@example.org>"

    fetched = await awareness_client.observe(email, "fetch", uid=2)
    assert fetched["status"] == "success", fetched
    assert fetched["result"]["text"] == ("two\n" + "x" * 300)[:100]
    assert fetched["result"]["text_truncated"] is True

    missing = await awareness_client.observe(email, "fetch", uid=99)
    assert missing["status"] == "error"
    assert "no message with uid 99" in missing["error"]
    assert dovecot.unseen() == [1, 2]


async def test_send_delivers_mail_with_an_attachment_through_smtp(
    awareness_dirs: AwarenessProcess, dovecot: Dovecot, smtp_sink, awareness_client: Client
):
    port, sink = smtp_sink
    _configure(awareness_dirs, dovecot)
    config = json.loads((awareness_dirs.instance_dir("email") / "config.json").read_text())
    config["smtp"] = {
        **config["smtp"],
        "host": "127.0.0.1",
        "port": port,
        "security": "none",
        "from_address": f"Alice <{USERNAME}@example.org>",
    }
    awareness_dirs.write_config("email", config)
    awareness_dirs.start()
    image = png(4, 4)
    probe = await awareness_client.adapter_id("probe")
    attachment = {"filename": "chart.png", "data_base64": base64.b64encode(image).decode()}
    emitted = await awareness_client.interact(probe, "emit", trust="high", attachments=[attachment])
    assert emitted["status"] == "success", emitted
    ref = "media:" + hashlib.sha256(image).hexdigest()
    email = await awareness_client.adapter_id("email")
    [send] = [a for a in (await awareness_client.adapters()) if a.name == "email"][0].write_actions
    assert send.name == "send" and send.effect == common_pb2.EFFECT_CLASS_EXTERNAL_SIDE_EFFECT

    result = await awareness_client.interact(
        email,
        "send",
        to=["Bob <bob@example.org>"],
        cc=["carol@example.org"],
        subject="Re: Lunch?",
        text="Noon works.",
        in_reply_to="<lunch@example.org>",
        media=[ref],
    )
    assert result["status"] == "success", result
    [(recipients, data)] = sink.received
    assert sorted(recipients) == ["bob@example.org", "carol@example.org"]
    sent = message_from_bytes(data, policy=policy.default)
    assert sent["Subject"] == "Re: Lunch?"
    assert sent["In-Reply-To"] == "<lunch@example.org>"
    assert sent["Message-ID"] == result["result"]["message_id"]
    assert sent.get_body(("plain",)).get_content().strip() == "Noon works."
    [part] = list(sent.iter_attachments())
    assert (part.get_filename(), part.get_content()) == ("chart.png", image)

    refused = await awareness_client.interact(
        email, "send", to=["not an address"], subject="x", text="y"
    )
    assert refused["status"] == "error"
    assert "is not one mail address" in refused["error"]


async def test_a_wrong_password_fails_with_a_clear_error_that_hides_it(
    awareness_dirs: AwarenessProcess, dovecot: Dovecot, awareness_client: Client
):
    wrong = "wrong-password-91c3e7"
    _configure(awareness_dirs, dovecot, password=wrong)
    awareness_dirs.start()
    [info] = [a for a in await awareness_client.adapters() if a.name == "email"]
    assert info.state == "failed"
    assert f"IMAP login as '{USERNAME}' at 127.0.0.1:{dovecot.port} refused" in info.last_error
    assert "AUTHENTICATIONFAILED" in info.last_error
    assert wrong not in str(info)
    assert wrong not in awareness_dirs.all_stderr()


async def test_the_adapter_fails_while_the_server_is_down_and_recovers_without_duplicates(
    awareness_dirs: AwarenessProcess, dovecot: Dovecot, awareness_client: Client
):
    awareness_dirs.extra_env["TOBE_AWARENESS__RESTART_MAX_DELAY"] = "2"
    _configure(awareness_dirs, dovecot)
    awareness_dirs.start()
    stream = awareness_client.subscribe()
    dovecot.append(_mail("Before", "one"))
    [before] = (await next_batch(stream)).observations
    assert json.loads(before.content_json)["subject"] == "Before"

    dovecot.stop()
    failed = await _email_state(awareness_client, "failed")
    assert f"127.0.0.1:{dovecot.port}" in failed.last_error, failed.last_error
    assert PASSWORD not in str(failed)
    dovecot.start()
    await _email_state(awareness_client, "running")

    dovecot.append(_mail("After", "two"))
    [after] = (await next_batch(stream)).observations
    assert json.loads(after.content_json)["subject"] == "After"
    email = await awareness_client.adapter_id("email")
    recent = await awareness_client.observe(email, "recent")
    assert [m["subject"] for m in recent["result"]["messages"]] == ["After", "Before"]
    # Nothing else was published: a replay from the start holds each mail once.
    replay = awareness_client.subscribe()
    seen: list[str] = []
    while len(seen) < 2:
        seen += [o.id for o in (await next_batch(replay)).observations]
    assert seen == [before.id, after.id]
    replay.cancel()
    stream.cancel()


async def _email_state(client: Client, state: str) -> pb.AdapterInfo:
    async def info() -> pb.AdapterInfo:
        [found] = [a for a in await client.adapters() if a.name == "email"]
        return found

    return await eventually_async(info, until=lambda i: i.state == state, what=f"email {state}")
