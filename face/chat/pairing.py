"""`/pair` in `tobe chat`: sign another device (a browser) in as the person chatting.

Face asks the Mind for a one-time pairing code for this connection's principal (`pair_device`)
and answers with the code and the sign-in link of the web client it serves (empty when it
serves none). The code works once, until it expires: the link and the expiry are printed
beside it, so the person knows how long they have.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from rich.console import Console
from rich.text import Text

from face.chat.session import ChatSession
from tobe.v1 import face_pb2


async def pair(session: ChatSession, console: Console) -> None:
    reply = await session.command(pair_device=face_pb2.PairDeviceCommand())
    for line in pairing_lines(reply.pair_device, datetime.now(UTC)):
        console.print(Text(line))


def pairing_lines(reply: face_pb2.PairDeviceReply, now: datetime) -> list[str]:
    """The code and whom it signs in, where to open it, and until when it works (local time)."""
    pairing = reply.pairing
    where = (
        f"open {reply.url} in a browser to sign it in"
        if reply.url
        else "this Face serves no web client (face.web.enabled is off): no link to open"
    )
    expires = pairing.expires_at.ToDatetime(tzinfo=UTC)
    return [
        f"pairing code {pairing.code} signs a device in as {pairing.principal}",
        where,
        f"it works once, until {expires.astimezone():%H:%M:%S} ({_until(expires - now)})",
    ]


def _until(left: timedelta) -> str:
    """`in 5 min`, `in 40 s`, or `expired`."""
    seconds = int(left.total_seconds())
    if seconds <= 0:
        return "expired"
    return f"in {seconds} s" if seconds < 60 else f"in {round(seconds / 60)} min"
