"""One room timeline event, as the `Inbound` it is for the bridge (or nothing).

People's `m.room.message` events of msgtype `m.text`/`m.notice` become text, `m.image` an
image (its caption, when the event has a separate `filename`, the text), and `m.reaction`
annotations a reaction to their target. Everything else is not for the bridge: state events,
other msgtypes, and edits (`m.replace`), which would make the agent answer one message twice.
"""

from __future__ import annotations

import mimetypes
from collections.abc import Awaitable, Callable
from typing import Any

from face.channels.transport import Image, Inbound

TEXT_MSGTYPES = frozenset({"m.text", "m.notice"})

# Downloads an `mxc://` URI's bytes; returns None when the media cannot be had for good.
Download = Callable[[str], Awaitable[bytes | None]]


def without_reply_fallback(body: str) -> str:
    """`body` without the `> <@user> quoted` lines a reply starts with (older clients add them)."""
    lines = body.split("\n")
    quoted = 0
    while quoted < len(lines) and lines[quoted].startswith(">"):
        quoted += 1
    if quoted == 0:
        return body
    rest = lines[quoted:]
    if rest and rest[0] == "":
        rest = rest[1:]
    return "\n".join(rest)


def _relation(content: dict[str, Any]) -> dict[str, Any]:
    relates_to = content.get("m.relates_to")
    return relates_to if isinstance(relates_to, dict) else {}


def _reply_target(content: dict[str, Any]) -> str:
    in_reply_to = _relation(content).get("m.in_reply_to")
    if isinstance(in_reply_to, dict) and isinstance(in_reply_to.get("event_id"), str):
        return str(in_reply_to["event_id"])
    return ""


async def to_inbound(
    event: dict[str, Any],
    *,
    room_id: str,
    direct: bool,
    display_name: str,
    download: Download,
) -> Inbound | None:
    """The item `event` is for the bridge, or None when it is nothing the bridge acts on."""
    content = event.get("content")
    if not isinstance(content, dict) or "state_key" in event:
        return None
    common: dict[str, Any] = {
        "id": str(event["event_id"]),
        "sender": str(event["sender"]),
        "thread": room_id,
        "direct": direct,
        "display_name": display_name,
    }
    if event.get("type") == "m.reaction":
        relation = _relation(content)
        key, target = relation.get("key"), relation.get("event_id")
        if relation.get("rel_type") != "m.annotation" or not key or not target:
            return None
        return Inbound(**common, reaction=str(key), reply_to=str(target))
    if event.get("type") != "m.room.message" or _relation(content).get("rel_type") == "m.replace":
        return None
    msgtype = content.get("msgtype")
    body = content.get("body")
    if not isinstance(body, str):
        return None
    reply_to = _reply_target(content)
    if msgtype in TEXT_MSGTYPES:
        text = without_reply_fallback(body) if reply_to else body
        return Inbound(**common, text=text, reply_to=reply_to)
    if msgtype == "m.image":
        return await _image(content, body, common, reply_to, download)
    return None


async def _image(
    content: dict[str, Any],
    body: str,
    common: dict[str, Any],
    reply_to: str,
    download: Download,
) -> Inbound | None:
    url = content.get("url")
    if not isinstance(url, str):
        return None  # an encrypted file (`file`), which a plain room does not carry
    filename = content.get("filename")
    name = filename if isinstance(filename, str) and filename else body
    caption = body if isinstance(filename, str) and filename and body != filename else ""
    info = content.get("info")
    mimetype = info.get("mimetype") if isinstance(info, dict) else None
    if not isinstance(mimetype, str) or not mimetype:
        mimetype = mimetypes.guess_type(name)[0] or "application/octet-stream"
    data = await download(url)
    images = (Image(media_type=mimetype, data=data, name=name),) if data is not None else ()
    if not images and not caption:
        return None
    return Inbound(**common, text=caption, images=images, reply_to=reply_to)
