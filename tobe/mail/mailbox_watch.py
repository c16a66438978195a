"""One watched mailbox: its own IMAP connection, waiting in IDLE (or polling) for new mail.

Runs in a thread of its own, because IMAPClient blocks. New mail is fetched in UID order and
handed to `deliver` one message at a time; the position advances after each delivery. Where the
position is kept, and when it becomes durable, is the caller's `Positions`. Fetching uses
BODY.PEEK, so watching never marks mail as read.
"""

from __future__ import annotations

import select
import ssl
import threading
import time
from collections.abc import Callable
from typing import Any, Protocol

from .imap_session import ImapSettings, MailServerError, close, open_imap

# Seconds between leaving and re-entering IDLE: servers drop IDLE after 30 minutes (RFC 2177),
# and a round trip notices a connection that died silently.
IDLE_RENEW = 300.0
# Seconds between checks of the stop flag while in IDLE.
STOP_CHECK = 0.5

Deliver = Callable[[str, int, bytes], None]


class Positions(Protocol):
    """Where watching a mailbox resumes: (UIDVALIDITY, next UID not yet delivered)."""

    def resume(self, mailbox: str, uidvalidity: int, uidnext: int) -> int:
        """The next UID to deliver; `uidnext` (the server's) when the mailbox is new to us."""
        ...

    def advance(self, mailbox: str, uidvalidity: int, next_uid: int) -> None: ...


class MailboxWatch:
    def __init__(
        self,
        *,
        settings: ImapSettings,
        mailbox: str,
        positions: Positions,
        deliver: Deliver,
        use_idle: bool,
        poll_interval: float,
        stopping: threading.Event,
    ) -> None:
        self.settings = settings
        self.mailbox = mailbox
        self._positions = positions
        self._deliver = deliver
        self._use_idle = use_idle
        self._poll_interval = poll_interval
        self._stopping = stopping
        self._client: Any = None
        self._uidvalidity = 0
        self._next_uid = 0

    def open(self) -> None:
        """Connect, select the mailbox and find where observing resumes; raises MailServerError."""
        self._client = open_imap(self.settings)
        try:
            selected = self._client.select_folder(self.mailbox, readonly=True)
        except Exception as exc:
            self.close()
            raise MailServerError(
                f"mailbox {self.mailbox!r} of {self.settings.where} cannot be opened: {exc}"
            ) from None
        self._uidvalidity = int(selected[b"UIDVALIDITY"])
        uidnext = selected.get(b"UIDNEXT") or max(self._client.search(["ALL"]), default=0) + 1
        self._next_uid = self._positions.resume(self.mailbox, self._uidvalidity, int(uidnext))

    def close(self) -> None:
        if self._client is not None:
            close(self._client)
            self._client = None

    def watch(self) -> None:
        """Deliver new mail until the stop flag is set; raises when the connection is lost."""
        idle = self._use_idle and self._client.has_capability("IDLE")
        while not self._stopping.is_set():
            self._deliver_new()
            if idle:
                self._idle()
            elif not self._stopping.wait(self._poll_interval):
                self._client.noop()

    def _idle(self) -> None:
        """Wait in IDLE until the server says something, the renewal time, or a stop."""
        self._client.idle()
        renew_at = time.monotonic() + IDLE_RENEW
        sock = self._client.socket()
        while not self._stopping.is_set() and time.monotonic() < renew_at:
            if _readable(sock, STOP_CHECK):
                break
        # Reads what the server said up to the end of IDLE; raises if the connection is gone.
        self._client.idle_done()

    def _deliver_new(self) -> None:
        found = self._client.search(["UID", f"{self._next_uid}:*"])
        # `n:*` always matches the newest message, even when its UID is below n.
        for uid in sorted(u for u in found if u >= self._next_uid):
            if self._stopping.is_set():
                return
            fetched = self._client.fetch([uid], ["BODY.PEEK[]"]).get(uid)
            if fetched is not None:
                self._deliver(self.mailbox, uid, fetched[b"BODY[]"])
            self._next_uid = uid + 1
            self._positions.advance(self.mailbox, self._uidvalidity, self._next_uid)


def _readable(sock: Any, timeout: float) -> bool:
    if isinstance(sock, ssl.SSLSocket) and sock.pending():
        return True
    return bool(select.select([sock], [], [], timeout)[0])
