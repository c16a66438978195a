"""Submitting a composed message over SMTP (stdlib smtplib, blocking: run in a thread).

Every failure becomes a `MailServerError` naming the server and the SMTP reply, never the
password.
"""

from __future__ import annotations

import smtplib
import ssl
from dataclasses import dataclass
from email.message import EmailMessage

from .imap_session import TIMEOUT, MailServerError


@dataclass(frozen=True)
class SmtpSettings:
    host: str
    port: int
    security: str  # "tls" | "starttls" | "none"
    username: str
    password: str
    from_address: str


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


def _reply(exc: BaseException) -> str:
    if isinstance(exc, smtplib.SMTPResponseException):
        error = exc.smtp_error
        text = error.decode(errors="replace") if isinstance(error, bytes) else str(error)
        return f"{exc.smtp_code} {text}"
    return str(exc) or type(exc).__name__
