"""A request body that is not protobuf is INVALID_ARGUMENT on every server of a real Mind."""

from __future__ import annotations

from collections.abc import Iterator

import grpc
import pytest
from helpers.mind_gateway import SCRIPT
from helpers.mind_process import MindProcess, issue_token, running_mind, store_url
from helpers.raw_calls import UNDECODABLE, refusal, wait_for_lines

from mind.store.migrate import upgrade
from tobe.runtime.channel import bearer_metadata
from tobe.v1 import hand_pb2

pytestmark = pytest.mark.e2e

HELLO = hand_pb2.AttachRequest(hello=hand_pb2.HandHello(name="laptop")).SerializeToString()
REFUSED = "could not be decoded"


class Mind:
    def __init__(self, process: MindProcess, hand_token: str) -> None:
        self.process = process
        self.hand_metadata = bearer_metadata(hand_token)
        self.management = f"unix:{process.data_dir / 'mind.sock'}"


@pytest.fixture(scope="module")
def mind(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Mind]:
    root = tmp_path_factory.mktemp("undecodable")
    script = root / "script.yaml"
    script.write_text(SCRIPT)
    data_dir = root / "data"
    data_dir.mkdir()
    upgrade(store_url(data_dir))
    hand_token = issue_token(store_url(data_dir), kind="hand", principal="laptop", scopes=[])
    with running_mind(root, script=script) as process:
        yield Mind(process, hand_token)


CASES = [
    # (server, method, request streaming, response streaming, frames before the bad one)
    ("mind", "/tobe.v1.Mind/SendChat", False, False, ()),
    ("mind", "/tobe.v1.Mind/Subscribe", False, True, ()),
    ("handlink", "/tobe.v1.HandLink/Attach", True, True, ()),
    ("handlink", "/tobe.v1.HandLink/Attach", True, True, (HELLO,)),
    ("management", "/tobe.v1.Management/GetStatus", False, False, ()),
]


@pytest.mark.parametrize(
    ("server", "method", "request_streaming", "response_streaming", "before"),
    CASES,
    ids=[
        "mind-unary",
        "mind-server-stream",
        "handlink-first-frame",
        "handlink-later-frame",
        "management-unary",
    ],
)
async def test_an_undecodable_request_is_invalid_argument_with_one_log_line_and_no_traceback(
    mind: Mind,
    server: str,
    method: str,
    request_streaming: bool,
    response_streaming: bool,
    before: tuple[bytes, ...],
) -> None:
    process = mind.process
    target = mind.management if server == "management" else process.address
    metadata = {"mind": process.gateway_metadata, "handlink": mind.hand_metadata, "management": ()}[
        server
    ]
    logged_before = len(process.output)

    error = await refusal(
        target,
        method,
        request_streaming=request_streaming,
        response_streaming=response_streaming,
        metadata=metadata,
        frames=(*before, UNDECODABLE),
    )

    message = error.details() or ""
    assert error.code() == grpc.StatusCode.INVALID_ARGUMENT, message
    assert message.startswith("request could not be decoded as tobe.v1."), message
    new_lines = lambda: process.output[logged_before:]  # noqa: E731
    refused = wait_for_lines(new_lines, REFUSED, 1)
    assert len(refused) == 1 and method in refused[0], new_lines()
    assert not [line for line in new_lines() if "Traceback" in line or "Unexpected" in line]


async def test_a_hand_whose_frame_did_not_decode_is_detached(mind: Mind) -> None:
    """The stream's handler ends, so the Hand no longer holds its name."""
    process = mind.process
    logged_before = len(process.output)
    await refusal(
        process.address,
        "/tobe.v1.HandLink/Attach",
        request_streaming=True,
        response_streaming=True,
        metadata=mind.hand_metadata,
        frames=(HELLO, UNDECODABLE),
    )
    detached = wait_for_lines(lambda: process.output[logged_before:], "hand laptop detached", 1)
    assert detached, process.output[logged_before:]
