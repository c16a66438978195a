"""A fetched mail as the bridge's `Inbound`, or the reason it must not be answered.

Answering automatic mail starts loops (two auto-responders answering each other) and answering
lists writes to everyone on them, so such mail is skipped: mail from the agent's own address,
with `Auto-Submitted` other than `no` (RFC 3834), from a mailing list or bulk sender, and
bounces.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from email.message import EmailMessage
from email.utils import getaddresses, parseaddr

from face.channels.transport import Image, Inbound
from tobe.mail.message import body_text, header, parse_message, part_bytes

from .quotes import new_text

# Images larger than this are left out (a camera's photo fits; a poster-sized scan does not).
MAX_IMAGE_BYTES = 10 * 1024 * 1024
_MESSAGE_ID = re.compile(r"<[^<>\s]+>")
_BULK_PRECEDENCE = frozenset({"bulk", "list", "junk"})
_BOUNCE_SENDERS = frozenset({"mailer-daemon", "postmaster"})


@dataclass(frozen=True)
class Skipped:
    """A mail that is not for the agent to answer, and why (for the log)."""

    id: str
    sender: str
    reason: str


@dataclass(frozen=True)
class ReceivedMail:
    inbound: Inbound
    subject: str
    # The thread's Message-IDs as this mail gives them: its References, then itself.
    chain: tuple[str, ...]


def read_mail(raw: bytes, *, own_address: str) -> ReceivedMail | Skipped:
    message = parse_message(raw)
    # A mail without a Message-ID still needs an id that is the same when it is fetched again.
    message_id = _first_id(header(message, "Message-ID")) or _content_id(raw)
    display_name, sender = parseaddr(header(message, "From"))
    sender = sender.lower()
    reason = _skip_reason(message, sender, own_address.lower())
    if reason:
        return Skipped(message_id, sender, reason)
    references = tuple(_MESSAGE_ID.findall(header(message, "References")))
    in_reply_to = _first_id(header(message, "In-Reply-To"))
    try:
        text, images = new_text(body_text(message)), _images(message)
    except Exception as exc:
        # Some broken MIME structures make the stdlib parser raise; the mail is still news,
        # and failing on it would stall the mailbox at this message.
        text, images = f"[the mail could not be read: {type(exc).__name__}]", ()
    inbound = Inbound(
        id=message_id,
        sender=sender,
        thread=(references[0] if references else in_reply_to) or message_id,
        text=text,
        images=images,
        reply_to=in_reply_to,
        direct=_only_to(message, {own_address.lower(), sender}),
        display_name=display_name.strip(),
    )
    chain = (*references, message_id) if references else (*_some(in_reply_to), message_id)
    return ReceivedMail(inbound, header(message, "Subject"), chain)


def _skip_reason(message: EmailMessage, sender: str, own_address: str) -> str:
    if not sender:
        return "it has no sender address"
    if sender == own_address:
        return "it is from the agent's own address"
    auto_submitted = header(message, "Auto-Submitted").split(";")[0].strip().lower()
    if auto_submitted and auto_submitted != "no":
        return f"it is automatic (Auto-Submitted: {auto_submitted})"
    for list_header in ("List-Id", "List-Unsubscribe"):
        if header(message, list_header):
            return f"it comes from a mailing list ({list_header})"
    precedence = header(message, "Precedence").lower()
    if precedence in _BULK_PRECEDENCE:
        return f"it is bulk mail (Precedence: {precedence})"
    if header(message, "Return-Path").replace(" ", "") == "<>":
        return "it is a bounce (empty Return-Path)"
    if sender.partition("@")[0] in _BOUNCE_SENDERS:
        return f"it is a bounce (from {sender})"
    if message.get_content_type() == "multipart/report":
        return "it is a delivery report"
    return ""


def _only_to(message: EmailMessage, expected: set[str]) -> bool:
    """Whether the mail went to nobody but the agent (and the sender's own copy)."""
    values = [header(message, name) for name in ("To", "Cc")]
    return all(address.lower() in expected for _, address in getaddresses(values) if address)


def _images(message: EmailMessage) -> tuple[Image, ...]:
    images = []
    for part in message.walk():
        if part.get_content_maintype() != "image" or part.is_multipart():
            continue
        data = part_bytes(part)
        if data and len(data) <= MAX_IMAGE_BYTES:
            images.append(Image(part.get_content_type(), data, part.get_filename() or ""))
    return tuple(images)


def _first_id(value: str) -> str:
    found = _MESSAGE_ID.search(value)
    return found.group(0) if found else ""


def _some(message_id: str) -> tuple[str, ...]:
    return (message_id,) if message_id else ()


def _content_id(raw: bytes) -> str:
    return f"<{hashlib.sha256(raw).hexdigest()[:32]}@no-message-id.invalid>"
