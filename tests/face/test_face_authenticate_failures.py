"""`MindClient` names the real cause of a failure: the client's credential only when the Mind
refused that credential; the Face itself (UNAVAILABLE) when the Mind cannot be reached or
refuses the Face's own credential, on `authenticate` and on every other call (end to end:
tests/face/test_face_health_e2e.py). The Mind's answers are real gRPC errors, mapped by the
client's own error mapping; only the channel is left out."""

from __future__ import annotations

from typing import Any, NoReturn

import grpc
import pytest

from face.errors import FaceUnavailable, MindCallError
from face.mind_client import MindClient
from tobe.mind_answers import AUTHENTICATION_UNAVAILABLE, CLIENT_CREDENTIAL_REFUSED

ADDRESS = "mind.example:7421"
OWN_REFUSED = "the Face's own credential was refused ({}): an operator must replace it"


def failing(code: str, message: str) -> MindClient:
    """A client whose calls to the Mind all end with this status (no channel is opened)."""
    client = MindClient(ADDRESS, "tobe_face_token")
    answer = grpc.aio.AioRpcError(
        grpc.StatusCode[code], grpc.aio.Metadata(), grpc.aio.Metadata(), details=message
    )

    async def unary(*_: Any, **__: Any) -> NoReturn:
        raise client._mind._error(answer)

    client._mind.unary = unary  # type: ignore[method-assign]
    return client


@pytest.mark.parametrize(
    ("code", "message", "expected"),
    [
        (
            "UNAVAILABLE",
            "failed to connect to all addresses; last error: UNKNOWN: ipv4:127.0.0.1:7421: "
            "Connection refused",
            f"the Face cannot reach the Mind at {ADDRESS} (Connection refused)",
        ),
        (
            "UNAUTHENTICATED",
            "invalid, revoked or expired credential",
            OWN_REFUSED.format("invalid, revoked or expired credential"),
        ),
        (
            "PERMISSION_DENIED",
            "this credential lacks scope 'gateway'",
            OWN_REFUSED.format("this credential lacks scope 'gateway'"),
        ),
    ],
)
async def test_a_failure_of_the_face_itself_is_unavailable_naming_it(
    code: str, message: str, expected: str
) -> None:
    with pytest.raises(FaceUnavailable) as raised:
        await failing(code, message).authenticate("tobe_client_token")
    assert (raised.value.code, raised.value.message) == ("UNAVAILABLE", expected)


@pytest.mark.parametrize(
    ("code", "message"),
    [
        ("UNAUTHENTICATED", CLIENT_CREDENTIAL_REFUSED),
        ("UNAVAILABLE", AUTHENTICATION_UNAVAILABLE),
    ],
)
async def test_the_minds_own_answer_about_the_client_is_relayed_as_it_is(
    code: str, message: str
) -> None:
    with pytest.raises(MindCallError) as raised:
        await failing(code, message).authenticate("tobe_client_token")
    assert not isinstance(raised.value, FaceUnavailable)
    assert (raised.value.code, raised.value.message) == (code, message)


async def test_any_call_the_mind_refuses_for_the_faces_own_credential_says_so() -> None:
    client = failing("UNAUTHENTICATED", "invalid, revoked or expired credential")
    with pytest.raises(FaceUnavailable) as raised:
        await client.redeem_pairing_code("ABCDE-12345", "phone")
    assert raised.value.message == OWN_REFUSED.format("invalid, revoked or expired credential")


async def test_a_sign_out_with_a_bad_client_token_stays_unauthenticated() -> None:
    client = failing("UNAUTHENTICATED", CLIENT_CREDENTIAL_REFUSED)
    with pytest.raises(MindCallError) as raised:
        await client.sign_out("tobe_client_token")
    assert not isinstance(raised.value, FaceUnavailable)
    assert raised.value.code == "UNAUTHENTICATED"
