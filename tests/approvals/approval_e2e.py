"""Helpers of the approval end-to-end tests: a Hand on a thread and a gateway client."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from typing import Annotated, Any

import grpc
from helpers.mind_events import events_until
from pydantic import Field

from hand import Hand
from tobe.v1 import common_pb2, events_pb2, mind_pb2, mind_pb2_grpc

SECRET_PIN = "PIN-7731-do-not-log"
SensitiveText = Annotated[str, Field(json_schema_extra={"x-sensitive": True})]
OWNER_SCOPES = ("chat", "approve")

SCRIPT = f"""
runs:
  - match: "^save-approve"
    steps:
      - tool_calls:
          - name: laptop__save_note
            arguments: {{name: "a.txt", text: "hello", pin: "{SECRET_PIN}"}}
      - {{expect: {{last_role: tool, last_contains: "saved a.txt"}}, text: "saved it"}}
  - match: "^save-deny"
    steps:
      - tool_calls:
          - name: laptop__save_note
            arguments: {{name: "b.txt", text: "no", pin: "{SECRET_PIN}"}}
      - expect: {{last_role: tool, last_is_error: true, last_contains: "not today"}}
        text: "understood, not saved"
  - match: ".*"
    steps:
      - {{text: "echo"}}
"""


class HandThread:
    """The `laptop` Hand (SDK) on its own thread and loop; counts the executions of its tool.

    `build` replaces that Hand with another one (e.g. the reference Hand).
    """

    def __init__(self, address: str, token: str, build: Callable[[], Hand] | None = None) -> None:
        self.executions: list[dict[str, str]] = []
        self._address, self._token = address, token
        self._builder = build
        self._loop: asyncio.AbstractEventLoop | None = None
        self._task: asyncio.Task[None] | None = None
        self._thread: threading.Thread | None = None

    def _build(self) -> Hand:
        if self._builder is not None:
            return self._builder()
        hand = Hand("laptop")
        executions = self.executions

        @hand.tool(effect="workspace_write")
        async def save_note(name: str, text: str, pin: SensitiveText) -> str:
            """Save a note in the workspace."""
            executions.append({"name": name, "text": text})
            return f"saved {name}"

        return hand

    def start(self, timeout: float = 30) -> None:
        hand, loop = self._build(), asyncio.new_event_loop()
        self._loop = loop
        self._thread = threading.Thread(target=self._run, args=(hand, loop), daemon=True)
        self._thread.start()
        attached = asyncio.run_coroutine_threadsafe(
            asyncio.wait_for(hand.attached.wait(), timeout), loop
        )
        attached.result(timeout + 5)

    def _run(self, hand: Hand, loop: asyncio.AbstractEventLoop) -> None:
        asyncio.set_event_loop(loop)
        self._task = loop.create_task(hand.serve(self._address, self._token))
        try:
            loop.run_until_complete(self._task)
        except BaseException:  # cancelled at stop
            pass
        finally:
            leftovers = asyncio.all_tasks(loop)
            for task in leftovers:
                task.cancel()
            loop.run_until_complete(asyncio.gather(*leftovers, return_exceptions=True))
            loop.close()

    def stop(self) -> None:
        if self._loop is not None and self._task is not None:
            self._loop.call_soon_threadsafe(self._task.cancel)
        if self._thread is not None:
            self._thread.join(15)

    def restart(self) -> None:
        """A fresh Hand process: connects at once instead of after its reconnect backoff."""
        self.stop()
        self.start()


class Client:
    """A gateway-side client of the Mind service acting for `alice`."""

    def __init__(self, address: str, gateway_metadata: tuple[tuple[str, str], ...]) -> None:
        self.channel = grpc.insecure_channel(address)
        self.stub = mind_pb2_grpc.MindStub(self.channel)
        self.md = gateway_metadata

    def close(self) -> None:
        self.channel.close()

    @staticmethod
    def who(principal: str = "alice", scopes: tuple[str, ...] = OWNER_SCOPES) -> Any:
        return mind_pb2.OnBehalfOf(principal=principal, scopes=list(scopes))

    def create(self, key: str) -> None:
        request = mind_pb2.CreateConversationRequest(on_behalf_of=self.who(), key=key)
        self.stub.CreateConversation(request, metadata=self.md, timeout=10)

    def send(self, key: str, text: str, mode: int = common_pb2.DETAIL_MODE_TRANSPARENT) -> str:
        request = mind_pb2.SendChatRequest(
            on_behalf_of=self.who(),
            conversation_key=key,
            text=text,
            idempotency_key=text,
            detail_mode=mode,
        )
        return self.stub.SendChat(request, metadata=self.md, timeout=15).run_id

    def decide(
        self,
        approval_id: str,
        decision: int,
        reason: str = "",
        principal: str = "alice",
        scopes: tuple[str, ...] = OWNER_SCOPES,
    ) -> common_pb2.Approval:
        request = mind_pb2.DecideApprovalRequest(
            on_behalf_of=self.who(principal, scopes),
            approval_id=approval_id,
            decision=decision,
            reason=reason,
        )
        return self.stub.DecideApproval(request, metadata=self.md, timeout=15).approval

    def snapshot(self, key: str) -> Any:
        request = mind_pb2.GetSnapshotRequest(on_behalf_of=self.who(), conversation_key=key)
        return self.stub.GetSnapshot(request, metadata=self.md, timeout=10)

    def history(self, key: str) -> Any:
        request = mind_pb2.GetHistoryRequest(
            on_behalf_of=self.who(),
            conversation_key=key,
            limit=1000,
            detail_mode=common_pb2.DETAIL_MODE_TRANSPARENT,
        )
        return self.stub.GetHistory(request, metadata=self.md, timeout=10)

    def wait_for(
        self,
        done: Callable[[list[events_pb2.Event]], bool],
        after_id: int = 0,
        timeout: float = 90,
    ) -> list[events_pb2.Event]:
        """Durable events after `after_id` (replay, then live) until `done(events)` holds."""
        return events_until(self.stub, self.md, done, after_id=after_id, timeout=timeout)


def approvals_in(events: list[events_pb2.Event], key: str) -> list[common_pb2.Approval]:
    return [
        e.approval_changed
        for e in events
        if e.WhichOneof("payload") == "approval_changed" and e.conversation_key == key
    ]


def pending_approval(key: str) -> Callable[[list[events_pb2.Event]], bool]:
    def done(events: list[events_pb2.Event]) -> bool:
        return any(
            a.decision == common_pb2.APPROVAL_DECISION_UNSPECIFIED
            for a in approvals_in(events, key)
        )

    return done


def run_ended(key: str, trigger: str = "") -> Callable[[list[events_pb2.Event]], bool]:
    def done(events: list[events_pb2.Event]) -> bool:
        return any(
            e.WhichOneof("payload") == "run_changed"
            and e.conversation_key == key
            and e.run_changed.state in (common_pb2.RUN_STATE_COMPLETED, common_pb2.RUN_STATE_FAILED)
            and (not trigger or e.run_changed.trigger == trigger)
            for e in events
        )

    return done


def finished_runs(events: list[events_pb2.Event], key: str) -> list[common_pb2.Run]:
    return [
        e.run_changed
        for e in events
        if e.WhichOneof("payload") == "run_changed"
        and e.conversation_key == key
        and e.run_changed.state != common_pb2.RUN_STATE_RUNNING
    ]
