"""Email: one account's new mail (IMAP) becomes observations; `send` submits mail (SMTP).

Each watched mailbox has its own IMAP connection and thread, waiting in IDLE when the server
offers it (polling otherwise, or when `imap.idle` is false). Mail already in a mailbox when it
is first watched is not news; after that each message is observed once, across restarts, by
its (UIDVALIDITY, UID) kept in `data/positions.json` (see `positions`). A lost connection
fails the adapter through `context.fail`; the engine reconnects it by starting it again, and
mail that arrived meanwhile is observed then.

Observations: actor `user`, `kind: mail`, one source per mailbox; attachments up to
`max_attachment_bytes` arrive as media. Read actions `recent` and `fetch` open a connection of
their own; `send` is an external side effect (the Mind asks before it runs).
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Callable
from email.utils import parseaddr
from typing import Any

from awareness.adapter import Action, ActionFailed, Adapter, AdapterContext, Effect, MediaInput
from tobe.mail.imap_session import ImapSettings, MailServerError, close, open_imap
from tobe.mail.mailbox_watch import MailboxWatch
from tobe.mail.smtp_send import SmtpSettings, send

from .compose import check_addresses, compose
from .mail_parse import parse_headers, parse_mail
from .positions import Positions

# Seconds `stop` waits for the watcher threads to log out (within the engine's stop_timeout).
STOP_WAIT = 5.0
log = logging.getLogger(__name__)

_MAILBOX = {"type": "string", "minLength": 1, "description": "Mailbox name (default INBOX)."}
_ONE_LINE = {"type": "string", "pattern": "^[^\\r\\n]*$"}
_ADDRESSES = {"type": "array", "items": {**_ONE_LINE, "minLength": 3}}


class EmailAdapter(Adapter):
    description = "One mail account: new mail arrives as observations; send mail over SMTP."
    auto_start = False

    def __init__(self, context: AdapterContext) -> None:
        super().__init__(context)
        config = context.config
        imap, smtp = config["imap"], config["smtp"]
        self.imap = ImapSettings(
            imap["host"], imap["port"], imap["security"], imap["username"], imap["password"]
        )
        self.smtp = SmtpSettings(
            smtp["host"],
            smtp["port"],
            smtp["security"],
            smtp["username"],
            smtp["password"],
            smtp["from_address"],
        )
        self.mailboxes: list[str] = list(imap.get("mailboxes", ["INBOX"]))
        self.use_idle = bool(imap.get("idle", True))
        self.poll_interval = float(imap.get("poll_interval", 60))
        self.trust = config["trust"]
        self.max_body_chars = int(config["max_body_chars"])
        self.max_attachment_bytes = int(config["max_attachment_bytes"])
        self._stopping = threading.Event()
        self._threads: list[threading.Thread] = []

    # -- watching ---------------------------------------------------------------------------

    async def start(self) -> None:
        for field in ("host", "username"):
            if not getattr(self.imap, field):
                raise ValueError(f"config field imap.{field} must be set")
        self._stopping = threading.Event()
        positions = Positions(self.context)
        watches: list[MailboxWatch] = []
        try:
            for mailbox in self.mailboxes:
                watch = MailboxWatch(
                    settings=self.imap,
                    mailbox=mailbox,
                    positions=positions,
                    deliver=self._observe,
                    use_idle=self.use_idle,
                    poll_interval=self.poll_interval,
                    stopping=self._stopping,
                )
                await asyncio.to_thread(watch.open)
                watches.append(watch)
        except BaseException:
            for opened in watches:
                await asyncio.to_thread(opened.close)
            raise
        self._threads = [
            threading.Thread(target=self._watch, args=(w,), name=f"email-{w.mailbox}", daemon=True)
            for w in watches
        ]
        for thread in self._threads:
            thread.start()

    async def stop(self) -> None:
        self._stopping.set()
        deadline = time.monotonic() + STOP_WAIT
        for thread in self._threads:
            await asyncio.to_thread(thread.join, max(0.0, deadline - time.monotonic()))
            if thread.is_alive():
                log.warning("%s did not end within %ss", thread.name, STOP_WAIT)
        self._threads = []

    def _watch(self, watch: MailboxWatch) -> None:
        try:
            watch.watch()
        except Exception as exc:
            if not self._stopping.is_set():
                self.context.fail(
                    f"watching mailbox {watch.mailbox!r} of {self.imap.where} failed: "
                    f"{type(exc).__name__}: {exc}"
                )
        finally:
            watch.close()

    def _observe(self, mailbox: str, uid: int, raw: bytes) -> None:
        mail = parse_mail(raw, mailbox=mailbox, uid=uid, max_body_chars=self.max_body_chars)
        media = []
        for attachment, listed in zip(mail.attachments, mail.content["attachments"], strict=True):
            if len(attachment.data) <= self.max_attachment_bytes:
                media.append(MediaInput(filename=attachment.filename, data=attachment.data))
            else:
                listed["too_large_for_media"] = True
        self.context.emit(
            actor=self._actor(mail.content["from"]),
            trust=self.trust,
            content=mail.content,
            media=media,
            source_key=mailbox,
            source_title=f"{self.imap.username} {mailbox}",
        )

    def _actor(self, sender: str) -> str:
        """`user` for mail the owner sent from this account (its own address); anyone else's
        mail is `service`: another party took part in it."""
        address = parseaddr(sender)[1].casefold()
        own = {a.casefold() for a in (self.smtp.from_address, self.imap.username) if "@" in a}
        return "user" if address and address in own else "service"

    # -- actions ----------------------------------------------------------------------------

    def read_actions(self) -> list[Action]:
        return [
            Action(
                "recent",
                "Headers of the latest messages in a mailbox, newest first.",
                self._recent,
                {
                    "type": "object",
                    "additionalProperties": False,
                    "properties": {
                        "mailbox": _MAILBOX,
                        "limit": {"type": "integer", "minimum": 1, "maximum": 100},
                    },
                },
            ),
            Action(
                "fetch",
                "One message (by the uid its observation or `recent` gave) as text.",
                self._fetch,
                {
                    "type": "object",
                    "additionalProperties": False,
                    "required": ["uid"],
                    "properties": {"mailbox": _MAILBOX, "uid": {"type": "integer", "minimum": 1}},
                },
            ),
        ]

    def write_actions(self) -> list[Action]:
        return [
            Action(
                "send",
                "Send a mail from this account; media refs become attachments.",
                self._send,
                {
                    "type": "object",
                    "additionalProperties": False,
                    "required": ["to", "subject", "text"],
                    "properties": {
                        "to": {**_ADDRESSES, "minItems": 1},
                        "cc": _ADDRESSES,
                        "subject": _ONE_LINE,
                        "text": {"type": "string"},
                        "in_reply_to": _ONE_LINE,
                        "media": {
                            "type": "array",
                            "items": {"type": "string", "pattern": "^media:[0-9a-f]{64}$"},
                        },
                    },
                },
                effect=Effect.EXTERNAL_SIDE_EFFECT,
            )
        ]

    async def _recent(self, args: dict[str, Any]) -> dict[str, Any]:
        mailbox = args.get("mailbox", "INBOX")
        return await asyncio.to_thread(self._read, self._recent_in, mailbox, args.get("limit", 10))

    def _recent_in(self, client: Any, mailbox: str, limit: int) -> dict[str, Any]:
        uids = sorted(client.search(["ALL"]))[-limit:]
        fetched = client.fetch(uids, ["BODY.PEEK[HEADER]", "RFC822.SIZE"]) if uids else {}
        messages = [
            {
                "uid": uid,
                **parse_headers(fetched[uid][b"BODY[HEADER]"]),
                "size": fetched[uid][b"RFC822.SIZE"],
            }
            for uid in reversed(uids)
            if uid in fetched
        ]
        return {"mailbox": mailbox, "messages": messages}

    async def _fetch(self, args: dict[str, Any]) -> dict[str, Any]:
        mailbox = args.get("mailbox", "INBOX")
        return await asyncio.to_thread(self._read, self._fetch_in, mailbox, args["uid"])

    def _fetch_in(self, client: Any, mailbox: str, uid: int) -> dict[str, Any]:
        fetched = client.fetch([uid], ["BODY.PEEK[]"]).get(uid)
        if fetched is None:
            raise ActionFailed(f"mailbox {mailbox!r} has no message with uid {uid}")
        raw = fetched[b"BODY[]"]
        return parse_mail(raw, mailbox=mailbox, uid=uid, max_body_chars=self.max_body_chars).content

    def _read(
        self, reader: Callable[..., dict[str, Any]], mailbox: str, *args: Any
    ) -> dict[str, Any]:
        """Run `reader(client, mailbox, *args)` on a connection of its own, read-only."""
        if not self.imap.host:
            raise ActionFailed("config field imap.host must be set")
        try:
            client = open_imap(self.imap)
        except MailServerError as exc:
            raise ActionFailed(str(exc)) from None
        try:
            try:
                client.select_folder(mailbox, readonly=True)
            except Exception as exc:
                raise ActionFailed(f"mailbox {mailbox!r} cannot be opened: {exc}") from None
            return reader(client, mailbox, *args)
        finally:
            close(client)

    async def _send(self, args: dict[str, Any]) -> dict[str, Any]:
        if not (self.smtp.host and self.smtp.from_address):
            raise ActionFailed("config fields smtp.host and smtp.from_address must be set to send")
        to, cc = args["to"], args.get("cc", [])
        try:
            check_addresses("to", to)
            check_addresses("cc", cc)
        except ValueError as exc:
            raise ActionFailed(str(exc)) from None
        media = args.get("media", [])
        message = compose(
            from_address=self.smtp.from_address,
            to=to,
            cc=cc,
            subject=args["subject"],
            text=args["text"],
            in_reply_to=args.get("in_reply_to", ""),
            media=media,
        )
        try:
            await asyncio.to_thread(send, self.smtp, message)
        except MailServerError as exc:
            raise ActionFailed(str(exc)) from None
        return {
            "message_id": message["Message-ID"],
            "to": to,
            "cc": cc,
            "attachments": [item["filename"] for item in media],
        }


ADAPTER = EmailAdapter
