"""Composing the mail the `send` action submits (see `tobe.mail.smtp_send`)."""

from __future__ import annotations

from email.message import EmailMessage
from email.utils import formatdate, getaddresses, make_msgid
from pathlib import Path
from typing import Any


def compose(
    *,
    from_address: str,
    to: list[str],
    cc: list[str],
    subject: str,
    text: str,
    in_reply_to: str,
    media: list[dict[str, Any]],
) -> EmailMessage:
    """The message to send; `media` are the engine's resolved media refs (files on disk)."""
    message = EmailMessage()
    message["From"] = from_address
    message["To"] = ", ".join(to)
    if cc:
        message["Cc"] = ", ".join(cc)
    message["Subject"] = subject
    message["Date"] = formatdate(localtime=True)
    message["Message-ID"] = make_msgid(domain=_domain(from_address))
    if in_reply_to:
        message["In-Reply-To"] = in_reply_to
        message["References"] = in_reply_to
    message.set_content(text)
    for item in media:
        maintype, _, subtype = item["mime_type"].partition("/")
        message.add_attachment(
            Path(item["path"]).read_bytes(),
            maintype=maintype or "application",
            subtype=subtype or "octet-stream",
            filename=item["filename"] or "attachment",
        )
    return message


def check_addresses(field: str, values: list[str]) -> None:
    """Raise ValueError unless each value is one mail address (optionally with a name)."""
    for value in values:
        parsed = getaddresses([value])
        if len(parsed) != 1 or "@" not in parsed[0][1]:
            raise ValueError(f"{field}: {value!r} is not one mail address")


def _domain(address: str) -> str | None:
    _, mailbox = getaddresses([address])[0]
    return mailbox.rpartition("@")[2] or None
