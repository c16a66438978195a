"""Reading a fetched mail as an `Inbound`, skipping what must not be answered, and replies."""

from __future__ import annotations

from email.message import EmailMessage

import pytest

from face.channels.email.inbound_mail import MAX_IMAGE_BYTES, ReceivedMail, Skipped, read_mail
from face.channels.email.outbound_mail import message_id_for, reply_subject, sanitized_html
from tobe.mail.message import parse_message

AGENT = "agent@example.org"


def _mail(**headers: str) -> bytes:
    message = EmailMessage()
    message["From"] = "Bob <bob@example.org>"
    message["To"] = AGENT
    message["Subject"] = "Lunch"
    message["Message-ID"] = "<m3@example.org>"
    for name, value in headers.items():
        message[name.replace("_", "-")] = value
    message.set_content("Noon?")
    return bytes(message)


def _received(raw: bytes) -> ReceivedMail:
    mail = read_mail(raw, own_address=AGENT)
    assert isinstance(mail, ReceivedMail), mail
    return mail


SKIPPED = {
    "own address": ({"From": "Agent <Agent@Example.org>"}, "own address"),
    "auto-replied": ({"Auto_Submitted": "auto-replied"}, "Auto-Submitted: auto-replied"),
    "auto-generated with a parameter": (
        {"Auto_Submitted": "auto-generated; owner-email=x@example.org"},
        "Auto-Submitted: auto-generated",
    ),
    "list id": ({"List_Id": "<news.example.org>"}, "mailing list (List-Id)"),
    "list unsubscribe": ({"List_Unsubscribe": "<mailto:x@example.org>"}, "List-Unsubscribe"),
    "precedence bulk": ({"Precedence": "bulk"}, "Precedence: bulk"),
    "precedence junk": ({"Precedence": "Junk"}, "Precedence: junk"),
    "precedence list": ({"Precedence": "list"}, "Precedence: list"),
    "empty return path": ({"Return_Path": "<>"}, "empty Return-Path"),
    "mailer daemon": ({"From": "MAILER-DAEMON@example.org"}, "bounce"),
    "no sender": ({"From": "undisclosed-recipients:;"}, "no sender address"),
}


@pytest.mark.parametrize(("headers", "reason"), list(SKIPPED.values()), ids=list(SKIPPED))
def test_mail_that_must_not_be_answered_is_skipped_with_its_reason(
    headers: dict[str, str], reason: str
) -> None:
    raw = _mail()
    message = EmailMessage()
    for name, value in headers.items():
        message[name.replace("_", "-")] = value
    changed = _replace_headers(raw, message)

    mail = read_mail(changed, own_address=AGENT)

    assert isinstance(mail, Skipped)
    assert reason in mail.reason
    assert mail.id == "<m3@example.org>"


def _replace_headers(raw: bytes, changes: EmailMessage) -> bytes:
    message = parse_message(raw)
    for name, value in changes.items():
        del message[name]
        message[name] = value
    return bytes(message)


def test_auto_submitted_no_is_a_person_writing() -> None:
    assert _received(_mail(Auto_Submitted="no")).inbound.text == "Noon?"


@pytest.mark.parametrize(
    ("headers", "thread", "reply_to", "chain"),
    [
        ({}, "<m3@example.org>", "", ("<m3@example.org>",)),
        (
            {"In_Reply_To": "<m2@example.org>"},
            "<m2@example.org>",
            "<m2@example.org>",
            ("<m2@example.org>", "<m3@example.org>"),
        ),
        (
            {
                "In_Reply_To": "<m2@example.org> (Agent's message)",
                "References": "<m1@example.org>  <m2@example.org>",
            },
            "<m1@example.org>",
            "<m2@example.org>",
            ("<m1@example.org>", "<m2@example.org>", "<m3@example.org>"),
        ),
    ],
    ids=["a new mail starts its thread", "in-reply-to only", "references first"],
)
def test_the_thread_is_the_first_message_id_the_mail_refers_to(
    headers: dict[str, str], thread: str, reply_to: str, chain: tuple[str, ...]
) -> None:
    mail = _received(_mail(**headers))
    assert (mail.inbound.thread, mail.inbound.reply_to, mail.chain) == (thread, reply_to, chain)


def test_a_mail_without_message_id_gets_the_same_id_each_time_it_is_read() -> None:
    message = EmailMessage()
    message["From"] = "bob@example.org"
    message["To"] = AGENT
    message.set_content("Noon?")
    raw = bytes(message)

    first, again = _received(raw).inbound, _received(raw).inbound
    assert first.id == again.id == first.thread
    assert first.id.startswith("<") and first.id.endswith(".invalid>")


@pytest.mark.parametrize(
    ("to", "cc", "direct"),
    [
        (AGENT, "", True),
        (f"Agent <{AGENT.upper()}>", "Bob <bob@example.org>", True),
        (f"{AGENT}, carol@example.org", "", False),
        (AGENT, "carol@example.org", False),
    ],
    ids=["only the agent", "the sender's own copy", "another in To", "another in Cc"],
)
def test_a_mail_is_direct_only_when_nobody_else_received_it(to: str, cc: str, direct: bool):
    headers = {"Cc": cc} if cc else {}
    raw = _replace_headers(_mail(**headers), _headers(To=to))
    assert _received(raw).inbound.direct is direct


def _headers(**values: str) -> EmailMessage:
    message = EmailMessage()
    for name, value in values.items():
        message[name] = value
    return message


def test_inline_images_come_along_and_oversized_ones_do_not() -> None:
    message = EmailMessage()
    message["From"] = "bob@example.org"
    message["To"] = AGENT
    message["Message-ID"] = "<m@example.org>"
    message.set_content("See below.")
    message.add_alternative('<p>See <img src="cid:dot"></p>', subtype="html")
    html = message.get_payload()[1]
    html.add_related(b"\x89PNG small", maintype="image", subtype="png", cid="<dot>")
    message.add_attachment(
        b"\xff" * (MAX_IMAGE_BYTES + 1), maintype="image", subtype="jpeg", filename="big.jpg"
    )

    images = _received(bytes(message)).inbound.images
    assert [(i.media_type, i.data) for i in images] == [("image/png", b"\x89PNG small")]


@pytest.mark.parametrize(
    ("subject", "expected"),
    [
        ("Lunch", "Re: Lunch"),
        ("Re: Lunch", "Re: Lunch"),
        ("RE: re:  Lunch", "Re: Lunch"),
        ("Aw: Fwd: Lunch", "Re: Lunch"),
        ("Re[2]: Lunch", "Re: Lunch"),
        ("", "Re: "),
    ],
)
def test_a_reply_subject_has_one_re(subject: str, expected: str) -> None:
    assert reply_subject(subject) == expected


def test_message_ids_derive_from_the_key_in_the_agents_domain() -> None:
    first = message_id_for("conversation-1/reply-7", AGENT)
    assert first == message_id_for("conversation-1/reply-7", AGENT)
    assert first != message_id_for("conversation-1/reply-8", AGENT)
    assert first.startswith("<") and first.endswith("@example.org>")


def test_the_html_alternative_keeps_formatting_and_drops_scripts() -> None:
    html = sanitized_html("# Title\n\n**bold** <img src=x onerror=alert(1)>\n\n| a |\n|---|\n| 1 |")
    assert "<h1>Title</h1>" in html
    assert "<strong>bold</strong>" in html
    assert "<table>" in html
    assert "<img" not in html
