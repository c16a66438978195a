"""What `tobe chat` prints when its output is not a terminal (piped to a file or a program)."""

from __future__ import annotations

import io

from rich.console import Console

from face.chat.render import Renderer
from tobe.v1 import common_pb2, events_pb2

KEY = "p_chat"


def _event(**payload: object) -> events_pb2.Event:
    return events_pb2.Event(conversation_key=KEY, **payload)  # type: ignore[arg-type]


def test_a_streamed_reply_ends_its_line_when_output_is_piped() -> None:
    output = io.StringIO()
    renderer = Renderer(Console(file=output, width=80))
    renderer.conversation = KEY
    renderer.on_event(_event(text_delta=events_pb2.TextDelta(run_id="r", step=0, text="saved it")))
    renderer.on_event(
        _event(
            message_appended=common_pb2.Message(
                role=common_pb2.MESSAGE_ROLE_ASSISTANT, run_id="r", text="saved it"
            )
        )
    )
    renderer.status("next line")
    lines = [line.strip() for line in output.getvalue().splitlines()]
    assert lines == ["saved it", "next line"]


def _compacted(
    generation: int, trigger: events_pb2.CompactionTrigger.ValueType
) -> events_pb2.ContextCompacted:
    return events_pb2.ContextCompacted(
        generation=generation,
        through_message_id=60,
        messages_summarised=48,
        tokens_before=41_200,
        tokens_after=9_800,
        trigger=trigger,
        summary_calls=1,
    )


def test_a_compaction_event_is_one_line_naming_what_triggered_it() -> None:
    output = io.StringIO()
    renderer = Renderer(Console(file=output, width=200))
    renderer.conversation = KEY
    for generation, trigger in enumerate(
        (
            events_pb2.COMPACTION_TRIGGER_REQUESTED,
            events_pb2.COMPACTION_TRIGGER_BUDGET,
            events_pb2.COMPACTION_TRIGGER_OVERFLOW,
        ),
        start=1,
    ):
        renderer.on_event(_event(context_compacted=_compacted(generation, trigger)))
    assert output.getvalue().splitlines() == [
        "compacted: 48 messages summarised (generation 1); context ~41,200 → ~9,800 tokens",
        "compacted (context budget reached): 48 messages summarised (generation 2); "
        "context ~41,200 → ~9,800 tokens",
        "compacted (the model's context window overflowed): 48 messages summarised "
        "(generation 3); context ~41,200 → ~9,800 tokens",
    ]


def test_a_compact_reply_and_its_event_are_shown_once_whichever_comes_first() -> None:
    output = io.StringIO()
    renderer = Renderer(Console(file=output, width=200))
    renderer.conversation = KEY
    requested = events_pb2.COMPACTION_TRIGGER_REQUESTED
    renderer.show_compaction(KEY, _compacted(1, requested))
    renderer.on_event(_event(context_compacted=_compacted(1, requested)))
    renderer.on_event(_event(context_compacted=_compacted(2, requested)))
    renderer.show_compaction(KEY, _compacted(2, requested))
    lines = output.getvalue().splitlines()
    assert [line.split(";")[0] for line in lines] == [
        "compacted: 48 messages summarised (generation 1)",
        "compacted: 48 messages summarised (generation 2)",
    ]


def test_a_compaction_elsewhere_is_not_drawn_in_the_current_conversation() -> None:
    output = io.StringIO()
    renderer = Renderer(Console(file=output, width=200))
    renderer.conversation = KEY
    renderer.on_event(
        events_pb2.Event(
            conversation_key="p_other",
            context_compacted=_compacted(1, events_pb2.COMPACTION_TRIGGER_BUDGET),
        )
    )
    assert output.getvalue() == ""


def test_a_posted_message_is_shown_as_a_reply_marked_with_who_posted_it() -> None:
    output = io.StringIO()
    renderer = Renderer(Console(file=output, width=80))
    renderer.conversation = KEY
    renderer.on_event(
        _event(
            message_appended=common_pb2.Message(
                role=common_pb2.MESSAGE_ROLE_ASSISTANT, text="Build finished.", posted_by="ci"
            )
        )
    )
    lines = [line.strip() for line in output.getvalue().splitlines()]
    assert lines == ["posted by ci", "Build finished."]


def test_a_proactive_run_shows_only_what_it_sent() -> None:
    output = io.StringIO()
    renderer = Renderer(Console(file=output, width=200))
    renderer.conversation = KEY
    running = common_pb2.Run(id="p", trigger="schedule", state=common_pb2.RUN_STATE_RUNNING)
    steps = [
        _event(run_changed=running),
        _event(
            message_appended=common_pb2.Message(
                role=common_pb2.MESSAGE_ROLE_NOTE, run_id="p", text="Scheduled action fired"
            )
        ),
        _event(text_delta=events_pb2.TextDelta(run_id="p", step=0, text="let me look")),
        _event(
            message_appended=common_pb2.Message(
                role=common_pb2.MESSAGE_ROLE_ASSISTANT, run_id="p", text="let me look"
            )
        ),
        _event(
            tool_changed=common_pb2.ToolProjection(
                run_id="p", tool="current_time", status=common_pb2.TOOL_STATUS_SUCCEEDED
            )
        ),
        _event(
            run_changed=common_pb2.Run(
                id="p", trigger="schedule", state=common_pb2.RUN_STATE_CANCELLED, reason="aborted"
            )
        ),
        _event(
            message_appended=common_pb2.Message(
                role=common_pb2.MESSAGE_ROLE_ASSISTANT, posted_by="schedule:sch_1", text="Disk ok."
            )
        ),
    ]
    for event in steps:
        renderer.on_event(event)
    lines = [line.strip() for line in output.getvalue().splitlines()]
    assert lines == ["posted by schedule:sch_1", "Disk ok."]
    assert renderer.run_finished("p").is_set()


def test_a_pending_approval_shows_what_started_the_run_that_asks() -> None:
    output = io.StringIO()
    renderer = Renderer(Console(file=output, width=120))
    renderer.conversation = KEY
    origin = "a medium-trust observation from email@work (INBOX)"
    approval = common_pb2.Approval(
        id="ap_1",
        conversation_key=KEY,
        tool="email@work.send",
        decision_text="send the reply",
        origin=origin,
    )
    renderer.on_event(_event(approval_changed=approval))
    renderer.on_event(_event(approval_changed=common_pb2.Approval(id="ap_2", tool="x")))
    lines = [line.strip() for line in output.getvalue().splitlines()]
    assert lines[1:3] == ["send the reply", f"asked by a run started by {origin}"]
    assert sum("asked by a run started by" in line for line in lines) == 1
