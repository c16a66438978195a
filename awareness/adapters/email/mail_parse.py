"""A fetched message as observation content: headers, readable text and its attachments.

Parsing is lenient (mail in the wild is often malformed): a header that cannot be read is
empty, a part in an unknown charset is decoded with replacement characters.
"""

from __future__ import annotations

from dataclasses import dataclass
from email import policy
from email.message import EmailMessage, Message, MIMEPart
from email.parser import BytesParser
from typing import Any

from awareness.html_text import html_to_text

_PARSER = BytesParser(policy=policy.default)


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
    message = _PARSER.parsebytes(raw)
    assert isinstance(message, EmailMessage)  # guaranteed by policy.default
    try:
        text = _body_text(message)
        attachments = [
            Attachment(
                filename=part.get_filename() or "attachment",
                mime_type=part.get_content_type(),
                data=_payload(part),
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
    message = _PARSER.parsebytes(raw, headersonly=True)
    assert isinstance(message, EmailMessage)
    return headers(message)


def headers(message: EmailMessage) -> dict[str, Any]:
    return {
        "message_id": _header(message, "Message-ID"),
        "from": _header(message, "From"),
        "to": _addresses(message, "To"),
        "cc": _addresses(message, "Cc"),
        "subject": _header(message, "Subject"),
        "date": _date(message),
        "in_reply_to": _header(message, "In-Reply-To"),
    }


def _header(message: EmailMessage, name: str) -> str:
    try:
        return str(message.get(name, "")).strip()
    except (ValueError, IndexError, TypeError):
        return ""


def _addresses(message: EmailMessage, name: str) -> list[str]:
    try:
        header = message.get(name)
        return [str(a) for a in header.addresses] if header is not None else []
    except (ValueError, IndexError, TypeError, AttributeError):
        return []


def _date(message: EmailMessage) -> str:
    try:
        header = message.get("Date")
        when = getattr(header, "datetime", None)
        return when.isoformat() if when is not None else str(header or "")
    except (ValueError, IndexError, TypeError):
        return ""


def _body_text(message: EmailMessage) -> str:
    plain = message.get_body(preferencelist=("plain",))
    if plain is not None:
        return _decoded(plain).strip()
    html = message.get_body(preferencelist=("html",))
    if html is not None:
        return html_to_text(_decoded(html))
    return ""


def _payload(part: MIMEPart) -> bytes:
    payload = part.get_payload(decode=True)
    if isinstance(payload, bytes):
        return payload
    # A forwarded message (message/rfc822) is kept parsed: its bytes again.
    inner = part.get_payload()
    forwarded = inner[0] if isinstance(inner, list) and inner else None
    return forwarded.as_bytes() if isinstance(forwarded, Message) else b""


def _decoded(part: MIMEPart) -> str:
    try:
        text = part.get_content()
    except (LookupError, UnicodeError, ValueError):
        text = _payload(part).decode("utf-8", "replace")
    # Mail travels with CRLF line ends; the agent reads plain newlines.
    return text.replace("\r\n", "\n") if isinstance(text, str) else ""
