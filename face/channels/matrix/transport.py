"""The agent as a Matrix bot user: `Transport` over the client-server API, with mautrix.

mautrix-python's `ClientAPI` makes the requests (typed, asyncio on aiohttp, few dependencies,
and it picks the authenticated media endpoints `/_matrix/client/v1/media` when the homeserver
announces Matrix v1.11, else the legacy ones); this module reads the raw /sync responses
itself, because what it may acknowledge, and when, is the transport's own contract.

- Login with the password once; the access token and device id are kept in the state, so a
  restart comes back as the same device, whose transaction ids the homeserver remembers: a
  `send` repeated with the same key (transaction id derived from it) shows once.
- The first sync ever only takes its `next_batch` (and joins pending invites, without their
  earlier messages): a new bot answers nothing that was said before it started.
- Invites are joined. A room is `direct` while exactly the bot and the sender are joined.
  Encrypted rooms are not read: the bot says so once per room (a plain notice) and ignores them.
- Connection failures, server errors and rate limits in the sync loop are retried with backoff;
  a revoked token logs in again; anything else the homeserver refuses ends `inbound()` with
  `TransportError`.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import io
import json
import logging
from collections.abc import AsyncIterator, Coroutine, Iterator
from typing import Any, TypeVar

import aiohttp
import PIL.Image
from mautrix.api import Method, Path
from mautrix.client import ClientAPI
from mautrix.errors import MatrixConnectionError, MatrixInvalidToken, MatrixRequestError
from mautrix.types import ContentURI, EventType, RoomID, SyncToken, UserID

from face.channels.matrix.cursor import SyncCursor
from face.channels.matrix.events import to_inbound
from face.channels.matrix.formatting import HTML_FORMAT, text_content, to_html
from face.channels.transport import Image, Inbound, TransportError, TransportState
from tobe.config import MatrixChannelSettings

log = logging.getLogger(__name__)

T = TypeVar("T")

ACCESS_TOKEN = "matrix.access_token"
DEVICE_ID = "matrix.device_id"
LOGGED_IN_AS = "matrix.user_id"
ENCRYPTION_NOTICE = "matrix.encryption_notice:"  # + room id: the room was told once

SYNC_TIMEOUT_MS = 30_000
TYPING_TIMEOUT_MS = 30_000
RETRY_FIRST_DELAY = 1.0
RETRY_MAX_DELAY = 30.0

# The first sync brings no history; later ones bring enough of it that a busy room has no gap.
_FIRST_SYNC_FILTER = json.dumps({"room": {"timeline": {"limit": 0}}, "presence": {"types": []}})
_SYNC_FILTER = json.dumps({"room": {"timeline": {"limit": 100}}, "presence": {"types": []}})

ENCRYPTED_ROOM_NOTICE = (
    "This chat is end-to-end encrypted, which this bot does not support: it cannot read the "
    "messages here. Please start a new direct chat with it with encryption turned off."
)


def transaction_id(key: str, part: str) -> str:
    """The transaction id of one event a `send` with `key` makes, the same on every retry."""
    return f"tobe.{hashlib.sha256(key.encode()).hexdigest()[:40]}.{part}"


class MatrixTransport:
    """One Matrix account, as `face.channels.transport.Transport`."""

    name = "matrix"
    edits = True

    def __init__(self, settings: MatrixChannelSettings, state: TransportState) -> None:
        self._settings = settings
        self._state = state
        self._cursor = SyncCursor(state)
        self._client: ClientAPI | None = None
        self._password = ""
        self._closed = asyncio.Event()
        # Rooms joined from the first sync's invites: what was said there before is history.
        self._history_rooms: set[str] = set()
        self._encrypted: dict[str, bool] = {}
        self._members: dict[str, dict[str, str]] = {}

    # -- lifecycle ---------------------------------------------------------------------------

    async def start(self) -> None:
        settings = self._settings
        if not settings.homeserver or not settings.user_id:
            raise TransportError(
                "Matrix: set channels.matrix.homeserver and channels.matrix.user_id"
            )
        self._password = self._read_password()
        self._client = ClientAPI(
            UserID(settings.user_id),
            base_url=settings.homeserver,
            client_session=aiohttp.ClientSession(),
            default_retry_count=0,
            log=logging.getLogger(f"{__name__}.http"),
        )
        try:
            await self._log_in()
        except BaseException:
            await self._client.api.session.close()
            raise

    async def close(self) -> None:
        self._closed.set()
        if self._client is not None:
            await self._client.api.session.close()

    def _read_password(self) -> str:
        settings = self._settings
        if settings.password is not None:
            password = settings.password.get_secret_value()
        elif settings.password_file is not None:
            try:
                password = settings.password_file.read_text().strip()
            except OSError as error:
                raise TransportError(
                    f"Matrix: cannot read channels.matrix.password_file "
                    f"{settings.password_file}: {error.strerror}"
                ) from None
        else:
            password = ""
        if not password:
            raise TransportError(
                "Matrix: set channels.matrix.password or channels.matrix.password_file"
            )
        return password

    async def _log_in(self) -> None:
        """Reuse the stored token when it is still this account's, else log in as the stored
        device (a new one the first time)."""
        client = self._api
        user_id = self._settings.user_id
        token, device = self._state.get(ACCESS_TOKEN), self._state.get(DEVICE_ID)
        if self._state.get(LOGGED_IN_AS) != user_id:
            token = device = None
        if token and device:
            client.api.token = token
            try:
                with _as_transport_error("checking the stored login", self._settings):
                    whoami = await client.whoami()
            except TransportError as error:
                if not isinstance(error.__cause__, MatrixInvalidToken):
                    raise
            else:
                if whoami.user_id == user_id and whoami.device_id == device:
                    client.device_id = whoami.device_id
                    return
            client.api.token = ""
        with _as_transport_error("logging in", self._settings):
            response = await client.login(
                identifier=UserID(user_id),
                password=self._password,
                device_name=self._settings.device_name,
                device_id=device,
            )
        self._state.put(LOGGED_IN_AS, user_id)
        self._state.put(DEVICE_ID, response.device_id)
        self._state.put(ACCESS_TOKEN, response.access_token)
        log.info("logged in to Matrix as %s (device %s)", user_id, response.device_id)

    @property
    def _api(self) -> ClientAPI:
        if self._client is None:
            raise TransportError("Matrix: the transport is not started")
        return self._client

    # -- inbound -----------------------------------------------------------------------------

    async def inbound(self) -> AsyncIterator[Inbound]:
        delay = RETRY_FIRST_DELAY
        while not self._closed.is_set():
            try:
                closed, batch = await self._unless_closed(self._next_batch())
                if closed or batch is None:
                    return
                token, items = batch
            except MatrixInvalidToken:
                log.warning("the Matrix homeserver no longer knows the access token; logging in")
                await self._log_in()
                continue
            except (MatrixRequestError, MatrixConnectionError, aiohttp.ClientError) as error:
                if isinstance(error, MatrixRequestError) and not _passing(error):
                    raise _transport_error(error, "syncing", self._settings) from error
                log.warning("Matrix sync failed (%s); retrying in %.0f s", error, delay)
                closed, _ = await self._unless_closed(asyncio.sleep(delay))
                if closed:
                    return
                delay = min(delay * 2, RETRY_MAX_DELAY)
                continue
            delay = RETRY_FIRST_DELAY
            self._cursor.fetched(token, [item.id for item in items])
            for item in items:
                yield item

    async def handled(self, item: Inbound) -> None:
        self._cursor.handled(item.id)

    async def _unless_closed(self, work: Coroutine[Any, Any, T]) -> tuple[bool, T | None]:
        """(False, `work`'s result), or (True, None) once the transport is closed (`work` is
        then cancelled: a request on the closed session would fail)."""
        task = asyncio.ensure_future(work)
        closed = asyncio.ensure_future(self._closed.wait())
        try:
            await asyncio.wait({task, closed}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            closed.cancel()
        if self._closed.is_set():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
            return True, None
        return False, task.result()

    async def _next_batch(self) -> tuple[str, list[Inbound]]:
        """The next sync's token and items (its invites joined, its encrypted rooms told)."""
        first = self._cursor.fresh
        response = await self._sync(first=first)
        return response["next_batch"], await self._read_batch(response, first=first)

    async def _sync(self, *, first: bool) -> dict[str, Any]:
        response: dict[str, Any] = await self._api.sync(
            since=SyncToken(self._cursor.next_since) if self._cursor.next_since else None,
            timeout=0 if first else SYNC_TIMEOUT_MS,
            filter_id=_FIRST_SYNC_FILTER if first else _SYNC_FILTER,  # type: ignore[arg-type]
        )
        return response

    async def _read_batch(self, response: dict[str, Any], *, first: bool) -> list[Inbound]:
        """Join invites, refuse encrypted rooms, and turn the batch's events into items."""
        rooms = response.get("rooms", {})
        for room_id in rooms.get("invite", {}):
            await self._join(room_id)
            if first:
                self._history_rooms.add(room_id)
        if first:
            return []
        items: list[Inbound] = []
        for room_id, room in rooms.get("join", {}).items():
            events = room.get("timeline", {}).get("events", [])
            state = room.get("state", {}).get("events", [])
            if room.get("timeline", {}).get("limited") and self._own_join(events) is None:
                log.warning("Matrix room %s had more new events than one sync brings", room_id)
            self._learn_state(room_id, state + events)
            if await self._is_encrypted(room_id):
                await self._refuse_encrypted(room_id)
                continue
            if room_id in self._history_rooms:
                events = self._after_own_join(events)
                self._history_rooms.discard(room_id)
            for event in events:
                item = await self._to_inbound(room_id, event)
                if item is not None:
                    items.append(item)
        return items

    async def _join(self, room_id: str) -> None:
        try:
            await self._api.join_room_by_id(RoomID(room_id))
        except MatrixRequestError as error:
            log.warning("cannot join the Matrix room %s the bot was invited to: %s", room_id, error)
        else:
            log.info("joined the Matrix room %s", room_id)

    def _own_join(self, events: list[dict[str, Any]]) -> int | None:
        """The index of the bot's own join among `events`, the last one if several."""
        for index in range(len(events) - 1, -1, -1):
            event = events[index]
            if (
                event.get("type") == "m.room.member"
                and event.get("state_key") == self._settings.user_id
                and event.get("content", {}).get("membership") == "join"
            ):
                return index
        return None

    def _after_own_join(self, events: list[dict[str, Any]]) -> list[dict[str, Any]]:
        joined = self._own_join(events)
        return events if joined is None else events[joined + 1 :]

    def _learn_state(self, room_id: str, events: list[dict[str, Any]]) -> None:
        for event in events:
            if "state_key" not in event:
                continue
            if event.get("type") == "m.room.encryption":
                self._encrypted[room_id] = True
            elif event.get("type") == "m.room.member":
                self._members.pop(room_id, None)

    async def _is_encrypted(self, room_id: str) -> bool:
        if room_id not in self._encrypted:
            try:
                await self._api.api.request(
                    Method.GET, Path.v3.rooms[room_id].state["m.room.encryption"]
                )
            except MatrixRequestError as error:
                if error.http_status != 404:
                    raise
                self._encrypted[room_id] = False
            else:
                self._encrypted[room_id] = True
        return self._encrypted[room_id]

    async def _refuse_encrypted(self, room_id: str) -> None:
        said = ENCRYPTION_NOTICE + room_id
        if self._state.get(said):
            return
        content = {"msgtype": "m.notice", "body": ENCRYPTED_ROOM_NOTICE}
        await self._api.send_message_event(
            RoomID(room_id),
            EventType.ROOM_MESSAGE,
            content,  # type: ignore[arg-type]
            txn_id=transaction_id(said, "notice"),
        )
        self._state.put(said, "1")
        log.info("told the encrypted Matrix room %s that it is not read", room_id)

    async def _joined_members(self, room_id: str) -> dict[str, str]:
        """The room's joined members and their display names (cached until one changes)."""
        if room_id not in self._members:
            response = await self._api.api.request(
                Method.GET, Path.v3.rooms[room_id].joined_members
            )
            joined = response.get("joined", {})
            self._members[room_id] = {
                user: str(profile.get("display_name") or "") for user, profile in joined.items()
            }
        return self._members[room_id]

    async def _to_inbound(self, room_id: str, event: dict[str, Any]) -> Inbound | None:
        sender = event.get("sender")
        if sender == self._settings.user_id or not isinstance(event.get("event_id"), str):
            return None
        if self._cursor.was_handled(event["event_id"]):
            return None
        members = await self._joined_members(room_id)
        direct = len(members) == 2 and sender in members and self._settings.user_id in members
        display_name = members.get(str(sender)) or str(sender).removeprefix("@").split(":")[0]
        return await to_inbound(
            event,
            room_id=room_id,
            direct=direct,
            display_name=display_name,
            download=self._download,
        )

    async def _download(self, url: str) -> bytes | None:
        try:
            return await self._api.download_media(ContentURI(url))
        except aiohttp.ClientResponseError as error:
            if error.status >= 500:
                raise
            log.warning("cannot download the Matrix media %s: HTTP %s", url, error.status)
            return None

    # -- outbound ----------------------------------------------------------------------------

    async def send(
        self, thread: str, text: str, *, key: str, images: tuple[Image, ...] = ()
    ) -> str:
        event_id = ""
        with _as_transport_error(f"sending to {thread}", self._settings):
            for index, image in enumerate(images):
                content = await self._image_content(image)
                event_id = await self._put(thread, content, transaction_id(key, f"image{index}"))
            if text or not images:
                event_id = await self._put(thread, text_content(text), transaction_id(key, "text"))
        return event_id

    async def edit(self, thread: str, message_id: str, text: str) -> None:
        new_content = text_content(text)
        content = {
            "msgtype": "m.text",
            "body": f"* {text}",
            "format": HTML_FORMAT,
            "formatted_body": f"* {to_html(text)}",
            "m.new_content": new_content,
            "m.relates_to": {"rel_type": "m.replace", "event_id": message_id},
        }
        with _as_transport_error(f"editing a message in {thread}", self._settings):
            await self._put(thread, content, self._api.api.get_txn_id())

    async def typing(self, thread: str, active: bool) -> None:
        with _as_transport_error(f"showing typing in {thread}", self._settings):
            await self._api.set_typing(RoomID(thread), TYPING_TIMEOUT_MS if active else 0)

    async def _put(self, room_id: str, content: dict[str, Any], txn_id: str) -> str:
        event_id = await self._api.send_message_event(
            RoomID(room_id),
            EventType.ROOM_MESSAGE,
            content,  # type: ignore[arg-type]
            txn_id=txn_id,
        )
        return str(event_id)

    async def _image_content(self, image: Image) -> dict[str, Any]:
        name = image.name or "image"
        url = await self._api.upload_media(image.data, mime_type=image.media_type, filename=name)
        info: dict[str, Any] = {"mimetype": image.media_type, "size": len(image.data)}
        try:
            with PIL.Image.open(io.BytesIO(image.data)) as decoded:
                info["w"], info["h"] = decoded.size
        except (OSError, ValueError, PIL.Image.DecompressionBombError):
            pass  # the size is optional: a client sizes the image once loaded
        return {"msgtype": "m.image", "body": name, "url": str(url), "info": info}


def _passing(error: MatrixRequestError) -> bool:
    """Whether a later try may succeed: the homeserver is failing or rate-limiting for now."""
    return error.http_status >= 500 or error.http_status == 429


@contextlib.contextmanager
def _as_transport_error(doing: str, settings: MatrixChannelSettings) -> Iterator[None]:
    try:
        yield
    except (MatrixRequestError, MatrixConnectionError, aiohttp.ClientError) as error:
        raise _transport_error(error, doing, settings) from error


def _transport_error(
    error: Exception, doing: str, settings: MatrixChannelSettings
) -> TransportError:
    """One line for people: what failed and what to check. Never the password."""
    if isinstance(error, MatrixRequestError):
        if doing == "logging in" and error.errcode == "M_FORBIDDEN":
            return TransportError(
                f"Matrix: the homeserver refused the login of {settings.user_id}: check "
                "channels.matrix.password (or password_file) and user_id"
            )
        return TransportError(
            f"Matrix: {doing} failed: the homeserver answered {error.http_status} "
            f"{error.errcode or ''} {error.message or ''}".rstrip()
        )
    return TransportError(
        f"Matrix: {doing} failed: cannot reach the homeserver {settings.homeserver} ({error}); "
        "check channels.matrix.homeserver and that it is up"
    )
