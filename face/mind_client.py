"""The gateway's client of the Mind: one channel, the gateway's service credential, and the
mapping of gRPC failures to `MindCallError` so that nothing else in Face handles grpc errors;
a failure of the Face itself (the Mind unreachable, the Face's own credential refused) is a
`FaceUnavailable` naming it, never blamed on the client's credential.

The calls a client makes go through `call`, by the Mind method's name; the gateway's own calls
(authentication, pairing redemption, sign-out, the event feed) have a method each.

A Face given several Minds (on one database) holds a channel to each and calls the current one;
the event feed, which notices first when that Mind is gone, moves on with `fail_over`. A call
already made on the old channel ends as it would have with one Mind.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncGenerator, Sequence
from dataclasses import dataclass

import grpc
from google.protobuf.message import Message

from face.connection import Identity
from face.errors import FaceUnavailable, MindCallError
from face.mind_trouble import cannot_reach, credential_refused
from tobe.mind_answers import AUTHENTICATION_UNAVAILABLE, CLIENT_CREDENTIAL_REFUSED
from tobe.runtime.channel import Request, Response, ServiceClient
from tobe.runtime.tls import ClientTls
from tobe.v1 import events_pb2, mind_pb2, mind_pb2_grpc

log = logging.getLogger(__name__)

# Unary calls to the Mind that take longer than this are reported as UNAVAILABLE.
CALL_TIMEOUT = 60.0


def _error(exc: grpc.aio.AioRpcError) -> MindCallError:
    code = exc.code()
    if code in (grpc.StatusCode.DEADLINE_EXCEEDED, grpc.StatusCode.CANCELLED):
        return MindCallError("UNAVAILABLE", f"the Mind did not answer: {exc.details()}")
    return MindCallError(code.name, exc.details() or code.name.lower())


def _unary_error(exc: grpc.aio.AioRpcError) -> MindCallError:
    """`_error`, knowing that a unary call carries only the Face's own credential: an
    UNAUTHENTICATED answer that is not about a client token the Face asked about is the Mind
    refusing the Face itself, which no client can fix."""
    error = _error(exc)
    if error.code == "UNAUTHENTICATED" and error.message != CLIENT_CREDENTIAL_REFUSED:
        return FaceUnavailable(credential_refused(error.message))
    return error


@dataclass(frozen=True)
class MindTarget:
    """One Mind the Face may dial, and how (None: plaintext)."""

    address: str
    tls: ClientTls | None = None


class MindClient:
    def __init__(
        self,
        targets: str | Sequence[MindTarget],
        token: str,
        *,
        tls: ClientTls | None = None,
        max_send_bytes: int | None = None,
    ) -> None:
        """`targets`: one address (dialled with `tls`) or the Minds in order of preference.
        `max_send_bytes`: the largest request forwarded (Face's largest client frame)."""
        if isinstance(targets, str):
            targets = [MindTarget(targets, tls)]
        self._minds: list[ServiceClient[mind_pb2_grpc.MindAsyncStub]] = [
            ServiceClient(
                target.address,
                token,
                mind_pb2_grpc.MindStub,
                _unary_error,
                timeout=CALL_TIMEOUT,
                tls=target.tls,
                max_send_bytes=max_send_bytes,
            )
            for target in targets
        ]
        self._current = 0
        # Set by every call the Mind answers: the event feed, waiting to try the Mind again,
        # tries at once (the Mind is back).
        self.answered = asyncio.Event()

    @property
    def _mind(self) -> ServiceClient[mind_pb2_grpc.MindAsyncStub]:
        return self._minds[self._current]

    @property
    def address(self) -> str:
        """The address of the Mind calls go to now."""
        return self._mind.address

    @property
    def addresses(self) -> list[str]:
        return [mind.address for mind in self._minds]

    def fail_over(self) -> bool:
        """Move to the next Mind, round-robin; False (and stay) when there is only one."""
        if len(self._minds) < 2:
            return False
        before = self.address
        self._current = (self._current + 1) % len(self._minds)
        log.warning("the Face switches from the Mind at %s to the Mind at %s", before, self.address)
        return True

    async def dial(self, patience: float) -> None:
        """Return once the channel to the current Mind is connected; UNAVAILABLE when it is not
        within `patience` seconds (a Mind refusing connections, or one that never answers)."""
        if not await self._mind.connects(patience):
            raise MindCallError("UNAVAILABLE", f"no connection within {patience:g}s")

    async def _unary(
        self,
        method: grpc.aio.UnaryUnaryMultiCallable[Request, Response],
        request: Request,
        *,
        timeout: float | None = None,
    ) -> Response:
        response = await self._mind.unary(method, request, timeout=timeout)
        self.answered.set()
        return response

    async def close(self) -> None:
        for mind in self._minds:
            await mind.close()

    async def authenticate(self, client_token: str) -> Identity:
        """The identity behind a client's credential. A failure names its real cause: the
        client's credential (UNAUTHENTICATED), or the Face itself (UNAVAILABLE) when it cannot
        reach the Mind or the Mind refuses the Face's own credential."""
        try:
            response = await self._unary(
                self._mind.stub.Authenticate, mind_pb2.AuthenticateRequest(token=client_token)
            )
        except MindCallError as exc:
            raise self._authentication_failure(exc) from exc
        identity = response.identity
        return Identity(identity.principal, tuple(identity.scopes), identity.credential_id)

    def _authentication_failure(self, error: MindCallError) -> MindCallError:
        if isinstance(error, FaceUnavailable):
            return error
        if error.code == "UNAVAILABLE" and error.message != AUTHENTICATION_UNAVAILABLE:
            # gRPC nests its reasons ("failed to connect…: …: Connection refused"): the last.
            why = error.message.rsplit(": ", 1)[-1]
            return FaceUnavailable(cannot_reach(self.address, why))
        # Authenticate needs only the gateway scope: a refusal is of the Face's credential.
        if error.code == "PERMISSION_DENIED":
            return FaceUnavailable(credential_refused(error.message))
        return error

    async def call(self, method: str, request: Message, *, timeout: float | None = None) -> Message:
        """One unary call of the Mind service by its name (`SendChat`), made as it is: what
        each call may carry is the contract's business (`face.forwarding`). `timeout`: for a
        call slow by nature; CALL_TIMEOUT otherwise."""
        stub_method: grpc.aio.UnaryUnaryMultiCallable[Message, Message] = getattr(
            self._mind.stub, method
        )
        try:
            return await self._unary(stub_method, request, timeout=timeout)
        except MindCallError as exc:
            if exc.code != "UNAVAILABLE" or isinstance(exc, FaceUnavailable):
                raise
            if self._mind.connected():
                raise  # the Mind's own answer (shutting down, a dependency away)
            # No Mind answered: the transport's text would blame nobody the client knows.
            why = exc.message.rsplit(": ", 1)[-1]
            raise FaceUnavailable(cannot_reach(self.address, why)) from exc

    async def redeem_pairing_code(
        self, code: str, device: str, device_id: str = ""
    ) -> mind_pb2.RedeemPairingCodeResponse:
        request = mind_pb2.RedeemPairingCodeRequest(code=code, device=device, device_id=device_id)
        return await self._unary(self._mind.stub.RedeemPairingCode, request)

    async def report_revocation(self, credential_id: str, closed: int) -> None:
        request = mind_pb2.ReportRevocationRequest(credential_id=credential_id, closed=closed)
        await self._unary(self._mind.stub.ReportRevocation, request)

    async def sign_out(self, token: str) -> mind_pb2.SignOutResponse:
        return await self._unary(self._mind.stub.SignOut, mind_pb2.SignOutRequest(token=token))

    async def subscribe(
        self, after_id: int, *, include_ephemeral: bool, reports_revocations: bool = False
    ) -> AsyncGenerator[events_pb2.Event | mind_pb2.ReplayDone, None]:
        """Mind.Subscribe as events and a ReplayDone marker; the end of the stream raises too.
        `reports_revocations`: this gateway answers each revocation with `report_revocation`."""
        call = self._mind.stub.Subscribe(
            mind_pb2.SubscribeRequest(
                after_id=after_id,
                include_ephemeral=include_ephemeral,
                reports_revocations=reports_revocations,
            ),
            metadata=self._mind.metadata,
        )
        try:
            async for item in call:
                if item.WhichOneof("item") == "replay_done":
                    yield item.replay_done
                else:
                    yield item.event
        except grpc.aio.AioRpcError as exc:
            raise _error(exc) from exc
        finally:
            call.cancel()
        raise MindCallError("UNAVAILABLE", "the Mind ended the event stream")
