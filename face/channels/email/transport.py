"""The agent's mailbox as a channel transport: mail in by IMAP IDLE, replies out by SMTP.

The mailbox is watched by `tobe.mail.mailbox_watch` in a thread of its own (IMAPClient
blocks), which reconnects with growing pauses when the connection drops. Fetched mail is read
in that thread and handed to the event loop in UID order; `inbound()` yields what is for the
agent and passes over automatic and list mail (see `inbound_mail`); a thread belongs to the
person who started it. Where the mailbox was
handled up to is kept in the state (see `cursor`), and so is what replying into each thread
needs (see `threads`).
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import replace
from typing import TypeVar

from face.channels.transport import Image, Inbound, TransportError, TransportState
from tobe.config import EmailChannelSettings
from tobe.mail.imap_session import ImapSettings, MailServerError
from tobe.mail.mailbox_watch import MailboxWatch
from tobe.mail.smtp_send import SmtpSettings, send

from .cursor import MailboxCursor
from .inbound_mail import ReceivedMail, Skipped, read_mail
from .outbound_mail import compose_reply, message_id_for
from .threads import MailThreads

log = logging.getLogger(__name__)

# Seconds between checks for new mail when the server offers no IDLE.
POLL_INTERVAL = 60.0
# Pauses before reconnecting: the first, doubled after each failure up to the last.
RECONNECT_FIRST = 1.0
RECONNECT_MAX = 60.0
# A connection that held this many seconds was healthy: the next failure starts the pauses anew.
HEALTHY_AFTER = 60.0
# Seconds `close` waits for the watch thread to log out.
STOP_WAIT = 5.0

T = TypeVar("T")
_Fetched = tuple[int, ReceivedMail | Skipped]


class EmailTransport:
    name = "email"
    # A sent mail cannot be changed: the bridge sends each reply once, whole.
    edits = False

    def __init__(self, settings: EmailChannelSettings, state: TransportState) -> None:
        self._settings = settings
        self._state = state
        self._threads = MailThreads(state)
        self._stopping = threading.Event()
        self._queue: asyncio.Queue[_Fetched | None] = asyncio.Queue()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._loop_thread = 0
        self._watch: MailboxWatch | None = None
        self._watch_thread: threading.Thread | None = None
        self._cursor: MailboxCursor | None = None
        self._smtp: SmtpSettings | None = None

    async def start(self) -> None:
        settings = self._settings
        _require(settings)
        password = _password(settings)
        imap = ImapSettings(
            settings.imap_host,
            settings.imap_port,
            settings.imap_security,
            settings.username,
            password,
        )
        self._smtp = SmtpSettings(
            settings.smtp_host,
            settings.smtp_port,
            settings.smtp_security,
            settings.username,
            password,
            settings.address,
        )
        self._loop = asyncio.get_running_loop()
        self._loop_thread = threading.get_ident()
        self._stopping = threading.Event()
        self._cursor = MailboxCursor(self._state, settings.mailbox, self._in_loop)
        watch = MailboxWatch(
            settings=imap,
            mailbox=settings.mailbox,
            positions=self._cursor,
            deliver=self._fetched,
            use_idle=True,
            poll_interval=POLL_INTERVAL,
            stopping=self._stopping,
        )
        try:
            await asyncio.to_thread(watch.open)
        except MailServerError as exc:
            raise TransportError(str(exc)) from None
        self._watch = watch
        self._watch_thread = threading.Thread(
            target=self._keep_watching, name=f"email-{settings.mailbox}", daemon=True
        )
        self._watch_thread.start()

    async def close(self) -> None:
        self._stopping.set()
        self._queue.put_nowait(None)
        thread, self._watch_thread = self._watch_thread, None
        if thread is not None:
            await asyncio.to_thread(thread.join, STOP_WAIT)
            if thread.is_alive():
                log.warning("watching mailbox %s did not end within %ss", thread.name, STOP_WAIT)

    async def inbound(self) -> AsyncIterator[Inbound]:
        cursor = _started(self._cursor)
        while (entry := await self._queue.get()) is not None:
            uid, mail = entry
            if isinstance(mail, Skipped):
                log.info("mail %s from %s is not answered: %s", mail.id, mail.sender, mail.reason)
                cursor.fetched(uid, mail.id, done=True)
                continue
            item, chain = mail.inbound, mail.chain
            known = self._threads.get(item.thread)
            if known is not None and known.person != item.sender:
                # References are the sender's to write: nobody joins another person's thread
                # by naming its Message-IDs. Such a mail starts a thread of its own.
                item, chain = replace(item, thread=item.id), (item.id,)
            self._threads.received(
                item.thread,
                person=item.sender,
                subject=mail.subject,
                message_id=item.id,
                chain=chain,
            )
            cursor.fetched(uid, item.id, done=False)
            yield item

    async def handled(self, item: Inbound) -> None:
        _started(self._cursor).handled(item.id)

    async def send(
        self, thread: str, text: str, *, key: str, images: tuple[Image, ...] = ()
    ) -> str:
        smtp = _started(self._smtp)
        record = self._threads.get(thread)
        if record is None:
            raise TransportError(
                f"no mail of thread {thread} has been received: replies go only to people who wrote"
            )
        message_id = message_id_for(key, self._settings.address)
        if message_id in record.chain:
            return message_id  # sent before the bridge could note it
        message = compose_reply(
            from_address=self._settings.address,
            to=record.person,
            subject=record.subject,
            message_id=message_id,
            in_reply_to=record.newest_inbound,
            references=record.chain,
            text=text,
            images=images,
        )
        try:
            await asyncio.to_thread(send, smtp, message)
        except MailServerError as exc:
            raise TransportError(str(exc)) from None
        # Mail from the person may have extended the thread while the reply was on its way.
        record = self._threads.get(thread) or record
        record.extend([message_id])
        self._threads.put(thread, record)
        return message_id

    async def edit(self, thread: str, message_id: str, text: str) -> None:
        raise TransportError("mail cannot edit a sent message")

    async def typing(self, thread: str, active: bool) -> None:
        """Mail has no way to show that a reply is being written: there is nothing to do."""

    # -- the watch thread -------------------------------------------------------------------

    def _keep_watching(self) -> None:
        """Watch until closed, reconnecting after a lost connection with growing pauses."""
        watch = _started(self._watch)
        pause = RECONNECT_FIRST
        try:
            while not self._stopping.is_set():
                connected_at = time.monotonic()
                try:
                    watch.watch()
                    return
                except Exception as exc:
                    if self._stopping.is_set():
                        return
                    log.warning(
                        "watching mailbox %s of %s failed (%s: %s); reconnecting",
                        watch.mailbox,
                        watch.settings.where,
                        type(exc).__name__,
                        exc,
                    )
                watch.close()
                if time.monotonic() - connected_at >= HEALTHY_AFTER:
                    pause = RECONNECT_FIRST
                pause = self._reconnect(watch, pause)
        finally:
            watch.close()

    def _reconnect(self, watch: MailboxWatch, pause: float) -> float:
        """Open `watch` again (waiting `pause` first, longer after each failure); the next
        pause."""
        while not self._stopping.wait(pause):
            pause = min(pause * 2, RECONNECT_MAX)
            try:
                watch.open()
                return pause
            except MailServerError as exc:
                log.warning("%s; trying again in %ss", exc, pause)
        return pause

    def _fetched(self, mailbox: str, uid: int, raw: bytes) -> None:
        mail = read_mail(raw, own_address=self._settings.address)
        self._in_loop(lambda: self._queue.put_nowait((uid, mail)))

    def _in_loop(self, action: Callable[[], None]) -> None:
        """Run `action` on the event loop: now when called there, else as soon as it can."""
        if threading.get_ident() == self._loop_thread:
            action()
        else:
            _started(self._loop).call_soon_threadsafe(action)


def _started(value: T | None) -> T:
    if value is None:
        raise TransportError("the email transport is not started")
    return value


def _require(settings: EmailChannelSettings) -> None:
    missing = [
        f"channels.email.{name}"
        for name in ("address", "username", "imap_host", "smtp_host")
        if not getattr(settings, name)
    ]
    if missing:
        raise TransportError(f"set {', '.join(missing)} to use the email channel")
    if "@" not in settings.address:
        raise TransportError(f"channels.email.address {settings.address!r} is not a mail address")


def _password(settings: EmailChannelSettings) -> str:
    if settings.password is not None:
        return settings.password.get_secret_value()
    if settings.password_file is None:
        raise TransportError(
            "set channels.email.password or channels.email.password_file to use the email channel"
        )
    try:
        return settings.password_file.read_text().strip()
    except OSError as exc:
        raise TransportError(
            f"channels.email.password_file {settings.password_file} cannot be read: "
            f"{exc.strerror or exc}"
        ) from None
