"""A small mail system on loopback: Dovecot holds the mailboxes, aiosmtpd delivers into them.

Every user of `mail_system` has the address `<user>@example.org` and a mailbox in Dovecot.
Mail submitted to the SMTP server (after logging in as a user, or without logging in) is put
into each recipient's INBOX by IMAP APPEND as that recipient, with a `Return-Path` like an
MTA's. So what one user sends lands in the other's mailbox, as on a real server.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from aiosmtpd.controller import Controller
from aiosmtpd.smtp import AuthResult, LoginPassword

from helpers.dovecot_server import Dovecot, dovecot_server
from helpers.ports import free_port

DOMAIN = "example.org"


def address(user: str) -> str:
    return f"{user}@{DOMAIN}"


class _Delivery:
    """aiosmtpd's handler: accepts our domain's users as recipients and delivers to them."""

    def __init__(self, dovecot: Dovecot) -> None:
        self.dovecot = dovecot

    async def handle_RCPT(
        self, server: Any, session: Any, envelope: Any, recipient: str, options: list[str]
    ) -> str:
        user, _, domain = recipient.lower().partition("@")
        if domain != DOMAIN or user not in self.dovecot.users:
            return f"550 no mailbox for {recipient}"
        envelope.rcpt_tos.append(recipient)
        return "250 OK"

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        message = f"Return-Path: <{envelope.mail_from}>\r\n".encode() + envelope.content
        for recipient in envelope.rcpt_tos:
            user = recipient.lower().partition("@")[0]
            await asyncio.to_thread(self.dovecot.append, message, user=user)
        return "250 OK delivered"


class _Logins:
    """SMTP AUTH against the users' IMAP passwords."""

    def __init__(self, users: dict[str, str]) -> None:
        self.users = users

    def __call__(
        self, server: Any, session: Any, envelope: Any, mechanism: str, data: Any
    ) -> AuthResult:
        # `handled=False`: the server itself answers a refusal (535).
        if not isinstance(data, LoginPassword):
            return AuthResult(success=False, handled=False)
        user, password = data.login.decode(), data.password.decode()
        return AuthResult(success=self.users.get(user) == password, handled=False)


@dataclass
class MailSystem:
    dovecot: Dovecot
    smtp_port: int

    @property
    def imap_port(self) -> int:
        return self.dovecot.port


@contextmanager
def mail_system(users: dict[str, str]) -> Iterator[MailSystem]:
    """Dovecot with `users` (login -> password) and an SMTP server delivering to them."""
    with dovecot_server(users) as dovecot:
        controller = Controller(
            _Delivery(dovecot),
            hostname="127.0.0.1",
            port=free_port(),
            authenticator=_Logins(users),
            # Loopback without TLS: logins in the clear are what the test server takes.
            auth_require_tls=False,
        )
        controller.start()
        try:
            yield MailSystem(dovecot, controller.port)
        finally:
            controller.stop()
