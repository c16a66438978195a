"""`/pair` in `tobe chat`: the `pair_device` command, and what it prints of Face's reply (the
code, whom it signs in, the link or that there is none, and until when it works)."""

from __future__ import annotations

import io
from datetime import UTC, datetime, timedelta
from typing import Any

from google.protobuf.timestamp_pb2 import Timestamp
from rich.console import Console

from face.chat import pairing
from tobe.v1 import common_pb2, face_pb2

NOW = datetime(2026, 12, 4, 16, 0, tzinfo=UTC)


def reply(url: str, left: timedelta) -> face_pb2.PairDeviceReply:
    expires = Timestamp()
    expires.FromDatetime(NOW + left)
    code = common_pb2.PairingCode(code="ABCDE-12345", principal="alice", expires_at=expires)
    return face_pb2.PairDeviceReply(pairing=code, url=url)


def local_time(left: timedelta) -> str:
    return f"{(NOW + left).astimezone():%H:%M:%S}"


def test_the_code_is_printed_with_its_link_and_when_it_expires() -> None:
    url = "http://127.0.0.1:7421/#pair=ABCDE-12345"
    lines = pairing.pairing_lines(reply(url, timedelta(minutes=5)), NOW)
    assert lines == [
        "pairing code ABCDE-12345 signs a device in as alice",
        f"open {url} in a browser to sign it in",
        f"it works once, until {local_time(timedelta(minutes=5))} (in 5 min)",
    ]


def test_a_face_without_a_web_client_says_so_instead_of_a_link() -> None:
    lines = pairing.pairing_lines(reply("", timedelta(seconds=40)), NOW)
    assert lines[1] == "this Face serves no web client (face.web.enabled is off): no link to open"
    assert lines[2].endswith("(in 40 s)")


class RecordingSession:
    def __init__(self) -> None:
        self.commands: list[dict[str, Any]] = []

    async def command(self, **frame: Any) -> face_pb2.Reply:
        self.commands.append(frame)
        return face_pb2.Reply(pair_device=reply("http://h:1/#pair=ABCDE-12345", timedelta(0)))


async def test_pair_sends_pair_device_with_the_default_lifetime() -> None:
    session, out = RecordingSession(), io.StringIO()
    await pairing.pair(session, Console(file=out, width=200))  # type: ignore[arg-type]
    assert session.commands == [{"pair_device": face_pb2.PairDeviceCommand()}]
    assert "ABCDE-12345" in out.getvalue()
    assert "open http://h:1/#pair=ABCDE-12345 in a browser" in out.getvalue()
