"""A Mind client as a gateway sees it (service credential, on_behalf_of) and event helpers,
shared by the Mind's end-to-end tests."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass

import grpc

from helpers.mind_events import events_until, replay
from helpers.mind_process import MindProcess
from tobe.v1 import common_pb2, events_pb2, mind_pb2, mind_pb2_grpc

# What a person signed in on a paired device may do: the scopes `who` gives by default.
PERSON_SCOPES = ("chat", "approve")

SCRIPT = """
runs:
  - match: "^time"
    steps:
      - thinking: "I should look at the clock."
        text: "Let me check."
        chunks: 2
        tool_calls:
          - name: current_time
            arguments: {timezone: "UTC"}
      - expect: {last_role: tool, last_contains: '"utc"'}
        text: "Done: here is the time."
  - match: "^slow-model"
    steps:
      - {delay: 120, text: "never said"}
  - match: "^slow-tool"
    steps:
      - text: "waiting"
        tool_calls: [{name: wait, arguments: {seconds: 120}}, {name: current_time, arguments: {}}]
      - {text: "waited"}
  - match: "^short-wait"
    steps:
      - text: "two calls"
        tool_calls: [{name: wait, arguments: {seconds: 2}}, {name: current_time, arguments: {}}]
      - {text: "both done"}
  - match: "^pause"
    steps:
      - {delay: 2, text: "paused"}
  - match: "^change of plan"
    steps:
      - {expect: {last_role: user, last_contains: "change of plan"}, text: "Understood."}
  - match: "^bad-args"
    steps:
      - tool_calls: [{name: wait, arguments: {seconds: "soon"}}]
      - expect: {last_role: tool, last_is_error: true, last_contains: "schema"}
        text: "I called the tool wrongly."
  - match: "^bad-json"
    steps:
      - tool_calls: [{name: current_time, raw_arguments: "{not json"}]
      - {expect: {last_is_error: true, last_contains: "not valid JSON"}, text: "noted"}
  - match: ".*"
    steps:
      - {text: "echo"}
"""

TERMINAL_RUN_STATES = {
    common_pb2.RUN_STATE_COMPLETED,
    common_pb2.RUN_STATE_FAILED,
    common_pb2.RUN_STATE_CANCELLED,
    common_pb2.RUN_STATE_INTERRUPTED,
}
TRANSPARENT = common_pb2.DETAIL_MODE_TRANSPARENT
SUMMARY = common_pb2.DETAIL_MODE_SUMMARY


@dataclass
class Gateway:
    """A synchronous gateway client of a running Mind."""

    mind: MindProcess
    channel: grpc.Channel
    stub: mind_pb2_grpc.MindStub

    @classmethod
    def connect(cls, mind: MindProcess) -> Gateway:
        channel = grpc.insecure_channel(mind.address)
        return cls(mind, channel, mind_pb2_grpc.MindStub(channel))

    def close(self) -> None:
        self.channel.close()

    @property
    def md(self) -> tuple[tuple[str, str], ...]:
        return self.mind.gateway_metadata

    @staticmethod
    def who(principal: str, *scopes: str) -> mind_pb2.OnBehalfOf:
        """`principal` with `scopes`; by default those of a paired device (chat, approve)."""
        return mind_pb2.OnBehalfOf(principal=principal, scopes=list(scopes or PERSON_SCOPES))

    def create(self, key: str, principal: str = "alice", members: tuple[str, ...] = ()) -> str:
        request = mind_pb2.CreateConversationRequest(
            on_behalf_of=self.who(principal), key=key, members=list(members)
        )
        return self.stub.CreateConversation(request, metadata=self.md, timeout=10).conversation.key

    def send(
        self,
        key: str,
        text: str,
        idem: str,
        *,
        principal: str = "alice",
        steer: bool = False,
        mode: int = TRANSPARENT,
    ) -> mind_pb2.SendChatResponse:
        request = mind_pb2.SendChatRequest(
            on_behalf_of=self.who(principal),
            conversation_key=key,
            text=text,
            idempotency_key=idem,
            steer=steer,
            detail_mode=mode,
        )
        return self.stub.SendChat(request, metadata=self.md, timeout=15)

    def snapshot(self, key: str, principal: str = "alice", mode: int = TRANSPARENT):
        request = mind_pb2.GetSnapshotRequest(
            on_behalf_of=self.who(principal), conversation_key=key, detail_mode=mode
        )
        return self.stub.GetSnapshot(request, metadata=self.md, timeout=10)

    def history(self, key: str, principal: str = "alice", mode: int = TRANSPARENT):
        request = mind_pb2.GetHistoryRequest(
            on_behalf_of=self.who(principal), conversation_key=key, detail_mode=mode, limit=1000
        )
        return self.stub.GetHistory(request, metadata=self.md, timeout=10)

    def head(self) -> int:
        """The latest durable event id (from a full replay's marker)."""
        return self.replay(0)[1]

    def replay(self, after_id: int) -> tuple[list[events_pb2.Event], int]:
        """Every durable event after `after_id`, and the ReplayDone id."""
        return replay(self.stub, self.md, after_id)

    def wait_for(
        self,
        after_id: int,
        done: Callable[[list[events_pb2.Event]], bool],
        *,
        include_ephemeral: bool = False,
        timeout: float = 60,
    ) -> list[events_pb2.Event]:
        """Events after `after_id` (replay, then live) until `done(events)` holds."""
        return events_until(
            self.stub,
            self.md,
            done,
            after_id=after_id,
            include_ephemeral=include_ephemeral,
            timeout=timeout,
        )

    def listen(self, after_id: int, *, include_ephemeral: bool = False) -> Listener:
        """A subscription read on a thread; returns once its replay is done."""
        listener = Listener(self, after_id, include_ephemeral)
        listener.start()
        return listener

    def wait_runs_ended(self, after_id: int, run_ids: set[str], **kw) -> list[events_pb2.Event]:
        return self.wait_for(after_id, lambda evs: run_ids <= ended_runs(evs), **kw)


class Listener:
    """Collects a subscription's events on a background thread."""

    def __init__(self, gateway: Gateway, after_id: int, include_ephemeral: bool) -> None:
        self.events: list[events_pb2.Event] = []
        self._changed = threading.Condition()
        self._replayed = threading.Event()
        self._stream = gateway.stub.Subscribe(
            mind_pb2.SubscribeRequest(after_id=after_id, include_ephemeral=include_ephemeral),
            metadata=gateway.md,
            timeout=120,
        )
        self._thread = threading.Thread(target=self._read, daemon=True)

    def start(self) -> None:
        self._thread.start()
        assert self._replayed.wait(30), "no ReplayDone"

    def _read(self) -> None:
        try:
            for item in self._stream:
                if item.HasField("replay_done"):
                    self._replayed.set()
                    continue
                with self._changed:
                    self.events.append(item.event)
                    self._changed.notify_all()
        except grpc.RpcError:
            pass

    def wait(self, done: Callable[[list[events_pb2.Event]], bool], timeout: float = 60) -> list:
        with self._changed:
            assert self._changed.wait_for(lambda: done(self.events), timeout), "timed out"
            return list(self.events)

    def close(self) -> None:
        self._stream.cancel()
        self._thread.join(10)


def ended_runs(events: list[events_pb2.Event]) -> set[str]:
    return {
        e.run_changed.id
        for e in events
        if e.WhichOneof("payload") == "run_changed" and e.run_changed.state in TERMINAL_RUN_STATES
    }


def payloads(events: list[events_pb2.Event], kind: str) -> list:
    return [getattr(e, kind) for e in events if e.WhichOneof("payload") == kind]
