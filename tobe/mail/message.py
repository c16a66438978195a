"""Reading a fetched message leniently: mail in the wild is often malformed.

A header that cannot be read is empty, a part in an unknown charset is decoded with
replacement characters, and line ends are plain newlines.
"""

from __future__ import annotations

from email import policy
from email.message import EmailMessage, Message, MIMEPart
from email.parser import BytesParser

from tobe.html_text import html_to_text

_PARSER = BytesParser(policy=policy.default)


def parse_message(raw: bytes, *, headers_only: bool = False) -> EmailMessage:
    message = _PARSER.parsebytes(raw, headersonly=headers_only)
    assert isinstance(message, EmailMessage)  # guaranteed by policy.default
    return message


def header(message: EmailMessage, name: str) -> str:
    """The header's decoded value, or empty when it is missing or unreadable."""
    try:
        return str(message.get(name, "")).strip()
    except (ValueError, IndexError, TypeError):
        return ""


def addresses(message: EmailMessage, name: str) -> list[str]:
    """Each address of an address header (`Name <addr>` as written), or none."""
    try:
        value = message.get(name)
        return [str(a) for a in value.addresses] if value is not None else []
    except (ValueError, IndexError, TypeError, AttributeError):
        return []


def body_text(message: EmailMessage) -> str:
    """The text/plain body, else the text/html body as text, else empty."""
    plain = message.get_body(preferencelist=("plain",))
    if plain is not None:
        return decoded_text(plain).strip()
    html = message.get_body(preferencelist=("html",))
    if html is not None:
        return html_to_text(decoded_text(html))
    return ""


def part_bytes(part: MIMEPart) -> bytes:
    """A part's decoded content as bytes."""
    payload = part.get_payload(decode=True)
    if isinstance(payload, bytes):
        return payload
    # A forwarded message (message/rfc822) is kept parsed: its bytes again.
    inner = part.get_payload()
    forwarded = inner[0] if isinstance(inner, list) and inner else None
    return forwarded.as_bytes() if isinstance(forwarded, Message) else b""


def decoded_text(part: MIMEPart) -> str:
    try:
        text = part.get_content()
    except (LookupError, UnicodeError, ValueError):
        text = part_bytes(part).decode("utf-8", "replace")
    # Mail travels with CRLF line ends; readers want plain newlines.
    return text.replace("\r\n", "\n") if isinstance(text, str) else ""
