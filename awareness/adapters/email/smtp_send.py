"""Composing a message and submitting it over SMTP (stdlib smtplib, blocking: run in a thread)."""

from __future__ import annotations

import smtplib
import ssl
from dataclasses import dataclass
from email.message import EmailMessage
from email.utils import formatdate, getaddresses, make_msgid
from pathlib import Path
from typing import Any

from .imap_session import TIMEOUT, MailServerError


@dataclass(frozen=True)
class SmtpSettings:
    host: str
    port: int
    security: str  # "tls" | "starttls" | "none"
    username: str
    password: str
    from_address: str


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


def send(settings: SmtpSettings, message: EmailMessage) -> None:
    """Submit `message`; raises MailServerError naming the server and the SMTP reply."""
    where = f"{settings.host}:{settings.port}"
    context = ssl.create_default_context()
    try:
        client = (
            smtplib.SMTP_SSL(settings.host, settings.port, timeout=TIMEOUT, context=context)
            if settings.security == "tls"
            else smtplib.SMTP(settings.host, settings.port, timeout=TIMEOUT)
        )
        with client:
            if settings.security == "starttls":
                client.starttls(context=context)
            if settings.username:
                client.login(settings.username, settings.password)
            client.send_message(message)
    except smtplib.SMTPAuthenticationError as exc:
        raise MailServerError(
            f"SMTP login as {settings.username!r} at {where} refused: {_reply(exc)}"
        ) from None
    except (smtplib.SMTPException, OSError) as exc:
        raise MailServerError(
            f"sending through SMTP server {where} failed: {_reply(exc)}"
        ) from None


def _domain(address: str) -> str | None:
    _, mailbox = getaddresses([address])[0]
    return mailbox.rpartition("@")[2] or None


def _reply(exc: BaseException) -> str:
    if isinstance(exc, smtplib.SMTPResponseException):
        error = exc.smtp_error
        text = error.decode(errors="replace") if isinstance(error, bytes) else str(error)
        return f"{exc.smtp_code} {text}"
    return str(exc) or type(exc).__name__
