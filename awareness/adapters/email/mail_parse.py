"""A fetched message as observation content: headers, readable text and its attachments.

Parsing is lenient (see `tobe.mail.message`): a broken body still makes an observation.
"""

from __future__ import annotations

from dataclasses import dataclass
from email.message import EmailMessage
from typing import Any

from tobe.mail.message import addresses, body_text, header, parse_message, part_bytes


@dataclass(frozen=True)
class Attachment:
    filename: str
    mime_type: str
    data: bytes


@dataclass(frozen=True)
class ParsedMail:
    content: dict[str, Any]
    attachments: list[Attachment]


def parse_mail(raw: bytes, *, mailbox: str, uid: int, max_body_chars: int) -> ParsedMail:
    """The observation content of one message (`kind: mail`) and its attachments' bytes."""
    message = parse_message(raw)
    try:
        text = body_text(message)
        attachments = [
            Attachment(
                filename=part.get_filename() or "attachment",
                mime_type=part.get_content_type(),
                data=part_bytes(part),
            )
            for part in message.iter_attachments()
        ]
    except Exception as exc:
        # The stdlib parser raises on some broken MIME structures; the mail is still news, and
        # failing on it would stall the mailbox at this message.
        text, attachments = f"[the message body could not be read: {type(exc).__name__}]", []
    content: dict[str, Any] = {
        "kind": "mail",
        "mailbox": mailbox,
        "uid": uid,
        **headers(message),
        "text": text[:max_body_chars],
        "attachments": [
            {"filename": a.filename, "mime_type": a.mime_type, "size": len(a.data)}
            for a in attachments
        ],
    }
    if len(text) > max_body_chars:
        content["text_truncated"] = True
    return ParsedMail(content, attachments)


def parse_headers(raw: bytes) -> dict[str, Any]:
    """The header fields of a message's header block (as `headers`)."""
    return headers(parse_message(raw, headers_only=True))


def headers(message: EmailMessage) -> dict[str, Any]:
    return {
        "message_id": header(message, "Message-ID"),
        "from": header(message, "From"),
        "to": addresses(message, "To"),
        "cc": addresses(message, "Cc"),
        "subject": header(message, "Subject"),
        "date": _date(message),
        "in_reply_to": header(message, "In-Reply-To"),
    }


def _date(message: EmailMessage) -> str:
    try:
        value = message.get("Date")
        when = getattr(value, "datetime", None)
        return when.isoformat() if when is not None else str(value or "")
    except (ValueError, IndexError, TypeError):
        return ""
