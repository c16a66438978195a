"""Logged-in IMAP connections (IMAPClient, blocking: used from worker threads).

Every failure to connect or log in becomes a `MailServerError` whose message names the server
and the account and says what went wrong, never the password.
"""

from __future__ import annotations

import contextlib
import ssl
from dataclasses import dataclass
from typing import Any

# Seconds a connect, a read or a write may take before the connection counts as lost.
TIMEOUT = 30.0


class MailServerError(Exception):
    """A mail server could not be reached, refused the login, or dropped the connection."""


@dataclass(frozen=True)
class ImapSettings:
    host: str
    port: int
    security: str  # "tls" | "starttls" | "none"
    username: str
    password: str

    @property
    def where(self) -> str:
        return f"{self.username!r} at {self.host}:{self.port}"


def open_imap(settings: ImapSettings) -> Any:
    """A logged-in `IMAPClient`; raises MailServerError."""
    from imapclient import IMAPClient  # loaded by the first connection, not at registration
    from imapclient.exceptions import IMAPClientError, LoginError

    context = ssl.create_default_context()
    try:
        client = IMAPClient(
            settings.host,
            settings.port,
            ssl=settings.security == "tls",
            ssl_context=context,
            timeout=TIMEOUT,
        )
    except (OSError, IMAPClientError) as exc:
        raise MailServerError(
            f"cannot connect to IMAP server {settings.host}:{settings.port} "
            f"({settings.security}): {_reason(exc)}"
        ) from None
    try:
        if settings.security == "starttls":
            client.starttls(context)
        client.login(settings.username, settings.password)
    except LoginError as exc:
        close(client)
        raise MailServerError(f"IMAP login as {settings.where} refused: {_reason(exc)}") from None
    except (OSError, IMAPClientError) as exc:
        close(client)
        raise MailServerError(f"IMAP session for {settings.where} failed: {_reason(exc)}") from None
    return client


def close(client: Any) -> None:
    """Log out, or drop the connection when that fails (it usually is already gone)."""
    try:
        client.logout()
    except Exception:
        with contextlib.suppress(Exception):
            client.shutdown()


def _reason(exc: BaseException) -> str:
    text = str(exc)
    # imaplib reports server replies as the repr of bytes: b'[AUTHENTICATIONFAILED] ...'
    if text.startswith(("b'", 'b"')) and text.endswith(text[1]):
        text = text[2:-1]
    return text or type(exc).__name__
