"""The Hand SDK on its own: tool declarations, validation, results, offers and policy."""

from __future__ import annotations

import asyncio
import json

import pytest

import hand
from hand import (
    Effect,
    Hand,
    InvalidArguments,
    ToolError,
    ToolFunction,
    ToolOutput,
    add_conformance_tools,
    report_progress,
)
from tobe.runtime.backoff import Backoff
from tobe.runtime.digest import arguments_digest, canonical_json
from tobe.v1 import hand_pb2


def test_public_exports_are_pinned() -> None:
    assert sorted(hand.__all__) == [
        "ClientTls",
        "Effect",
        "Hand",
        "HandRefused",
        "InvalidArguments",
        "Offer",
        "Policy",
        "SchemaTool",
        "TlsConfigError",
        "Tool",
        "ToolError",
        "ToolFunction",
        "ToolOutput",
        "add_conformance_tools",
        "client_tls",
        "report_progress",
    ]


def test_schema_comes_from_type_hints_and_docstring() -> None:
    def search(pattern: str, limit: int = 10, paths: list[str] | None = None) -> list[str]:
        """Search files.

        Long description that the model does not need.
        """
        return []

    tool = ToolFunction.wrap(search, effect="read_only")
    schema = tool.json_schema
    assert tool.description == "Search files."
    assert schema["type"] == "object" and schema["required"] == ["pattern"]
    assert schema["properties"]["limit"] == {"default": 10, "title": "Limit", "type": "integer"}
    assert schema["additionalProperties"] is False


def test_untyped_parameter_is_refused_at_declaration() -> None:
    def untyped(value) -> str:
        return str(value)

    with pytest.raises(TypeError, match="needs a type hint"):
        ToolFunction.wrap(untyped)


def test_invalid_tool_name_is_refused() -> None:
    with pytest.raises(ValueError, match="must match"):
        ToolFunction.wrap(lambda: None, name="Bad-Name")


def test_tool_names_fit_the_64_characters_a_model_sees_under_the_longest_hand_name() -> None:
    longest = ToolFunction.wrap(lambda: None, name="t" * 47)
    assert len(f"{'h' * 15}__{longest.name}") == 64
    with pytest.raises(ValueError, match="must match"):
        ToolFunction.wrap(lambda: None, name="t" * 48)


def test_same_tool_twice_is_refused() -> None:
    h = Hand("laptop")

    @h.tool
    def one() -> str:
        """One."""
        return "1"

    with pytest.raises(ValueError, match="declared twice"):
        h.add_tool(ToolFunction.wrap(one))


async def test_arguments_are_validated_with_a_readable_message() -> None:
    async def add(a: int, b: int) -> int:
        return a + b

    tool = ToolFunction.wrap(add)
    assert (await tool.call({"a": 1, "b": 2})).text == "3"
    with pytest.raises(InvalidArguments, match="b: Field required"):
        await tool.call({"a": 1})
    with pytest.raises(InvalidArguments, match="c: Extra inputs are not permitted"):
        await tool.call({"a": 1, "b": 2, "c": 3})


async def test_results_are_text_or_json() -> None:
    def greet(name: str) -> str:
        return f"hello {name}"

    def data() -> dict[str, object]:
        return {"é": [1, 2]}

    assert (await ToolFunction.wrap(greet).call({"name": "ö"})).text == "hello ö"
    assert json.loads((await ToolFunction.wrap(data).call({})).text) == {"é": [1, 2]}
    assert (await ToolFunction.wrap(greet).call({"name": "ö"})).images == ()


async def test_a_tool_output_brings_its_images_with_its_text() -> None:
    png = b"\x89PNG\r\n\x1a\n-pixels"

    async def shot() -> ToolOutput:
        return ToolOutput("the screen", images=[("image/png", png)])

    output = await ToolFunction.wrap(shot).call({})
    assert output == ToolOutput("the screen", images=[("image/png", png)])


async def test_tool_functions_still_work_when_called_directly() -> None:
    async def step(n: int) -> int:
        report_progress("outside a Hand this goes nowhere", 0.5)
        return n

    assert await step(2) == 2
    with pytest.raises(ValueError, match="between 0 and 1"):
        report_progress("bad", 2.0)


def test_canonical_digest_is_stable_across_key_order_and_unicode() -> None:
    assert canonical_json({"b": 1, "a": "é"}) == '{"a":"é","b":1}'
    assert arguments_digest({"b": 1, "a": "é"}) == arguments_digest({"a": "é", "b": 1})
    assert len(arguments_digest({})) == 64


class Recorder(Hand):
    """A Hand whose frames are collected instead of sent over a stream."""

    def __init__(self) -> None:
        super().__init__("laptop")
        self.sent: list[hand_pb2.AttachRequest] = []

    def attach(self) -> None:
        """Act as attached from now on: a change of tools is then sent (`tools_changed`)."""
        self._outbox = asyncio.Queue()

    def _send(self, frame: hand_pb2.AttachRequest) -> bool:
        self.sent.append(frame)
        return True

    def kinds(self) -> list[str]:
        return [frame.WhichOneof("frame") for frame in self.sent]


def offer(tool: str, arguments: dict[str, object], digest: str = "") -> hand_pb2.TaskOffer:
    frame = hand_pb2.TaskOffer(
        task_id="t_1", attempt=1, tool=tool, arguments_json=json.dumps(arguments)
    )
    if digest:
        frame.approval.approval_id = "ap_1"
        frame.approval.arguments_digest = digest
    return frame


async def finished(h: Recorder) -> None:
    for job in [held.job for held in h.held.values() if held.job is not None]:
        await job


async def test_offer_runs_the_tool_and_reports_progress_then_result() -> None:
    h = Recorder()

    @h.tool(effect=Effect.READ_ONLY)
    async def count(upto: int) -> int:
        """Count."""
        report_progress("half", 0.5)
        return upto

    h._on_offer(offer("count", {"upto": 3}))
    await finished(h)
    assert h.kinds() == ["accepted", "progress", "result"]
    assert h.sent[1].progress.fraction == 0.5
    assert h.sent[2].result.ok and h.sent[2].result.output == "3"
    assert "t_1" in h.held, "the result is held until the Mind acknowledges it"
    h._on_ack(ack_of(h.sent[2]))
    assert h.held == {}


def ack_of(frame: hand_pb2.AttachRequest) -> hand_pb2.ReportAck:
    """The Mind's OK ack of a report: its task, attempt, kind and seq."""
    kind = frame.WhichOneof("frame")
    report = getattr(frame, kind)
    return hand_pb2.ReportAck(
        task_id=report.task_id,
        attempt=report.attempt,
        status=hand_pb2.ACK_STATUS_OK,
        kind=hand_pb2.ReportKind.Value(f"REPORT_KIND_{kind.upper()}"),
        seq=frame.seq,
    )


async def test_only_the_results_own_ack_releases_it() -> None:
    """A progress frame's ack arriving after the result went out must not release the result:
    the result would then never be resent if the stream dropped before its own ack."""
    h = Recorder()

    @h.tool
    async def count(upto: int) -> int:
        """Count."""
        report_progress("half", 0.5)
        return upto

    h._on_offer(offer("count", {"upto": 3}))
    await finished(h)
    accepted, progress, result = h.sent
    assert len({accepted.seq, progress.seq, result.seq}) == 3, "each report has its own seq"
    for early in (accepted, progress):
        h._on_ack(ack_of(early))
        assert "t_1" in h.held, f"the {early.WhichOneof('frame')} ack released the result"
    resent = ack_of(result)
    resent.seq += 1
    h._on_ack(resent)
    assert "t_1" in h.held, "an ack naming another seq released the result"
    h._on_ack(ack_of(result))
    assert h.held == {}


async def test_sync_tool_progress_arrives_before_its_result() -> None:
    h = Recorder()

    @h.tool
    def slow(n: int) -> int:
        """Runs in a worker thread."""
        report_progress("working", None)
        return n

    h._on_offer(offer("slow", {"n": 1}))
    await finished(h)
    assert h.kinds() == ["accepted", "progress", "result"]
    assert h.sent[1].progress.fraction == -1.0


async def test_tool_error_becomes_a_failed_result() -> None:
    h = Recorder()

    @h.tool
    async def fails() -> str:
        """Always fails."""
        raise ToolError("disk is full")

    h._on_offer(offer("fails", {}))
    await finished(h)
    result = h.sent[-1].result
    assert not result.ok and result.error == "disk is full" and not result.cancelled


async def test_cancel_frame_cancels_the_running_coroutine() -> None:
    h = Recorder()
    started = asyncio.Event()

    @h.tool
    async def forever() -> str:
        """Waits."""
        started.set()
        await asyncio.Event().wait()
        return ""

    h._on_offer(offer("forever", {}))
    await started.wait()
    h._on_cancel(hand_pb2.TaskCancel(task_id="t_1", attempt=2, reason="stale attempt"))
    await asyncio.sleep(0)
    assert not h.held["t_1"].job.done(), "a cancel for another attempt is ignored"
    h._on_cancel(hand_pb2.TaskCancel(task_id="t_1", attempt=1, reason="user"))
    await finished(h)
    result = h.sent[-1].result
    assert result.cancelled and not result.ok


async def test_policy_and_digest_mismatch_reject_offers() -> None:
    h = Recorder()
    h.policy = lambda o: "writes are off" if o.arguments.get("write") else None

    @h.tool
    async def act(write: bool) -> str:
        """Acts."""
        return "done"

    h._on_offer(offer("act", {"write": True}))
    h._on_offer(offer("act", {"write": False}, digest=arguments_digest({"write": True})))
    h._on_offer(offer("missing", {}))
    assert h.kinds() == ["rejected", "rejected", "rejected"]
    reasons = [frame.rejected.reason for frame in h.sent]
    assert reasons[0] == "writes are off"
    assert "digest mismatch" in reasons[1]
    assert "no tool 'missing'" in reasons[2]
    h._on_offer(offer("act", {"write": False}, digest=arguments_digest({"write": False})))
    await finished(h)
    assert h.kinds()[3:] == ["accepted", "result"]


async def test_an_offer_whose_arguments_do_not_match_the_schema_is_rejected() -> None:
    h = Recorder()
    add_conformance_tools(h)
    h._on_offer(offer("conformance_echo", {}))
    h._on_offer(offer("conformance_echo", {"text": 7}))
    assert h.kinds() == ["rejected", "rejected"]
    assert "text: Field required" in h.sent[0].rejected.reason
    h._on_offer(offer("conformance_echo", {"text": "hi", "extra": 1.0}))
    await finished(h)
    assert h.kinds()[2:] == ["accepted", "result"]
    assert h.sent[3].result.output == "hi"


async def test_reconnect_hello_lists_running_and_finished_tasks() -> None:
    h = Recorder()
    gate = asyncio.Event()

    @h.tool
    async def wait(name: str) -> str:
        """Waits for the gate."""
        if name == "slow":
            await gate.wait()
        return name

    h._on_offer(offer("wait", {"name": "quick"}))
    await finished(h)
    second = offer("wait", {"name": "slow"})
    second.task_id = "t_2"
    h._on_offer(second)
    states = {t.task_id: t.state for t in h._hello().held_tasks}
    assert states == {
        "t_1": hand_pb2.HELD_TASK_STATE_FINISHED,
        "t_2": hand_pb2.HELD_TASK_STATE_RUNNING,
    }
    h.sent.clear()
    h._on_reconcile(
        hand_pb2.Reconcile(task_id="t_1", attempt=1, action=hand_pb2.RECONCILE_ACTION_RESEND_RESULT)
    )
    h._on_reconcile(
        hand_pb2.Reconcile(task_id="t_2", attempt=1, action=hand_pb2.RECONCILE_ACTION_DROP)
    )
    assert h.kinds() == ["result"] and h.sent[0].result.output == "quick"
    assert set(h.held) == {"t_1"}
    gate.set()


async def test_a_hand_requiring_bindings_rejects_only_effectful_offers_without_one() -> None:
    h = Recorder()
    h.require_binding = True

    @h.tool(effect="external_side_effect")
    async def send(text: str) -> str:
        """Sends."""
        return text

    @h.tool
    async def look(text: str) -> str:
        """Looks."""
        return text

    h._on_offer(offer("send", {"text": "hi"}))
    assert h.kinds() == ["rejected"]
    assert "requires an approval binding for external_side_effect tools" in (
        h.sent[0].rejected.reason
    )
    h._on_offer(offer("look", {"text": "hi"}))
    await finished(h)
    h.sent.clear()
    bound = offer("send", {"text": "hi"}, digest=arguments_digest({"text": "hi"}))
    bound.task_id = "t_2"
    h._on_offer(bound)
    await finished(h)
    assert h.kinds() == ["accepted", "result"]


async def test_a_ping_is_answered_at_once_with_a_heartbeat() -> None:
    h = Recorder()
    await h._handle(hand_pb2.AttachResponse(ping=hand_pb2.Ping()), Backoff())
    assert h.kinds() == ["heartbeat"]


def text_tool(name: str) -> ToolFunction:
    def answer(text: str) -> str:
        """Answer the text."""
        return text

    return ToolFunction.wrap(answer, name=name)


def declared(frame: hand_pb2.AttachRequest) -> list[str]:
    return [tool.name for tool in frame.tools_changed.tools]


async def test_tool_changes_of_one_turn_are_sent_as_one_tools_changed_with_the_whole_set() -> None:
    h = Recorder()
    h.add_tool(text_tool("keep"))
    h.add_tool(text_tool("drop"))
    await asyncio.sleep(0)
    assert h.sent == [], "a Hand not attached sends nothing: its next hello declares its tools"

    h.attach()
    h.remove_tool("drop")
    h.add_tool(text_tool("late"))
    assert h.sent == [], "sent once the turn is over"
    await asyncio.sleep(0)
    assert h.kinds() == ["tools_changed"]
    assert declared(h.sent[0]) == ["keep", "late"]
    assert [tool.name for tool in h._hello().tools] == ["keep", "late"]

    h.replace_tools([])
    await asyncio.sleep(0)
    assert h.kinds() == ["tools_changed", "tools_changed"] and declared(h.sent[1]) == []


def test_bad_tool_changes_are_refused_and_change_nothing() -> None:
    h = Recorder()
    h.add_tool(text_tool("keep"))
    with pytest.raises(ValueError, match="no tool 'missing'"):
        h.remove_tool("missing")
    twice = [text_tool("same"), text_tool("same")]
    with pytest.raises(ValueError, match="'same' is declared twice"):
        h.replace_tools(twice)
    assert list(h.tools) == ["keep"]


async def test_an_offer_for_a_withdrawn_tool_is_rejected_and_a_running_one_finishes() -> None:
    h = Recorder()
    release = asyncio.Event()

    @h.tool
    async def slow(n: int) -> int:
        """Wait until released."""
        await release.wait()
        return n

    h.attach()
    h._on_offer(offer("slow", {"n": 1}))
    h.remove_tool("slow")
    second = offer("slow", {"n": 2})
    second.task_id = "t_2"
    h._on_offer(second)
    release.set()
    await finished(h)
    await asyncio.sleep(0)
    reports = {f.WhichOneof("frame"): f for f in h.sent}
    assert reports["rejected"].rejected.task_id == "t_2"
    assert "no tool 'slow'" in reports["rejected"].rejected.reason
    assert reports["result"].result.task_id == "t_1" and reports["result"].result.ok


async def test_a_frame_written_as_the_stream_ends_ends_the_writer_not_the_hand() -> None:
    """gRPC refuses a write on a finished call with InvalidStateError; the writer stops and the
    reader reports the ending (it used to escape the stream's cleanup and stop the Hand)."""

    class FinishedCall:
        async def write(self, _frame: object) -> None:
            raise asyncio.InvalidStateError("RPC already finished.")

    outbox: asyncio.Queue[hand_pb2.AttachRequest] = asyncio.Queue()
    outbox.put_nowait(hand_pb2.AttachRequest(heartbeat=hand_pb2.Heartbeat()))
    await asyncio.wait_for(Hand("h")._write(FinishedCall(), outbox), 5)  # type: ignore[arg-type]
