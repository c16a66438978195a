"""How messages and tool calls look in `tobe chat`: the same while a reply runs and in history.

A tool call is two lines, `⚙ tool arguments` when it starts and `✓ tool result` when it ends
(✗ failed, ⊘ denied or cancelled, ↷ skipped), and a third, `[image]` per image, when its result
brought images; a conversation opened later shows each assistant message followed by its calls'
lines, rebuilt from the snapshot's tool projections. A widget message is one line, its card:
`▣ title — type · summary (widget ID; /widget ID to show)`. A message quoting another is
preceded by `> speaker: text` (`> speaker's image #id` for a quoted image); a forwarded chat
record follows its message, one `│ speaker: text` line per item.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence

from rich.console import RenderableType
from rich.markdown import Markdown
from rich.text import Text

from tobe.v1 import common_pb2

RESULT_PREVIEW_CHARS = 600
# A `delegate` call's child run: its lines' lead, and the state of a call awaiting approval.
CHILD_INDENT = "    ↳ "
CHILD_WAITING = "waiting for your approval"
FORWARDED_ITEM_CHARS = 80
# Characters of a widget's summary on its card's line.
CARD_SUMMARY_CHARS = 120
TOOL_MARKS = {
    common_pb2.TOOL_STATUS_SUCCEEDED: ("✓", "green"),
    common_pb2.TOOL_STATUS_FAILED: ("✗", "red"),
    common_pb2.TOOL_STATUS_DENIED: ("⊘", "red"),
    common_pb2.TOOL_STATUS_SKIPPED: ("↷", "yellow"),
    common_pb2.TOOL_STATUS_CANCELLED: ("⊘", "yellow"),
}


def message_renderables(message: common_pb2.Message) -> list[RenderableType]:
    """A stored message as printed; a tool message only marks its images (its call's lines
    show the rest), and only to a viewer shown them (a summary view has none)."""
    role = message.role
    if role == common_pb2.MESSAGE_ROLE_TOOL:
        marks = " ".join("[image]" for _ in message.images)
        return [Text(f"  {marks}", style="dim")] if marks else []
    if role == common_pb2.MESSAGE_ROLE_USER:
        images = " ".join("[image]" for _ in message.images)
        text = f"{images} {message.text}" if images and message.text else images or message.text
        said: list[RenderableType] = [quote_line(message.quote)] if message.reply_to else []
        said.append(Text.assemble(("you› ", "bold cyan"), text))
        return said + forwarded_lines(message.forwarded)
    if role == common_pb2.MESSAGE_ROLE_ASSISTANT and message.HasField("widget"):
        return [card_line(message.widget)]
    if role == common_pb2.MESSAGE_ROLE_ASSISTANT:
        shown: list[RenderableType] = []
        if message.posted_by:
            # Written by code, not the model: a reply all the same, marked as posted.
            shown.append(Text(f"posted by {message.posted_by}", style="dim"))
        if message.text:
            shown.append(Markdown(message.text))
        return shown
    if role == common_pb2.MESSAGE_ROLE_NOTE:
        return [Text(f"note: {message.text}", style="magenta")]
    return []


def quote_line(quote: common_pb2.Quote) -> Text:
    """`> speaker: text`, or `> speaker's image #id` when the quoted message has images."""
    if quote.has_images:
        return Text(f"> {quote.speaker}'s image #{quote.message_id}", style="dim")
    return Text(f"> {quote.speaker}: {quote.text}", style="dim")


def forwarded_lines(items: Sequence[common_pb2.ForwardedItem]) -> list[RenderableType]:
    """A forwarded chat record, compactly: a title, then a line per item."""
    if not items:
        return []
    lines: list[RenderableType] = [Text(f"  ↪ forwarded chat record, {len(items)} messages")]
    for item in items:
        text = " ".join(item.text.split())
        if len(text) > FORWARDED_ITEM_CHARS:
            text = text[: FORWARDED_ITEM_CHARS - 1] + "…"
        images = "".join(" [image]" for _ in item.images)
        lines.append(Text.assemble("  │ ", (f"{item.speaker}: ", "bold"), text, (images, "dim")))
    return lines


def card_line(card: common_pb2.WidgetCard) -> Text:
    """A widget message's card on one line, saying how to see its records."""
    summary = " ".join(card.summary.split())
    if len(summary) > CARD_SUMMARY_CHARS:
        summary = summary[:CARD_SUMMARY_CHARS] + "…"
    return Text.assemble(
        ("▣ ", "bold blue"),
        (card.title, "bold"),
        f" — {card.type}",
        f" · {summary}" if summary else "",
        (f" (widget {card.id}; /widget {card.id} to show)", "dim"),
    )


def call_line(tool: common_pb2.ToolProjection) -> Text:
    """`⚙ tool [on hand] arguments`: raw arguments when shown transparently, else the summary."""
    arguments = pretty_json(tool.arguments_json) or tool.arguments_summary
    where = f" on {tool.hand_id}" if tool.hand_id else ""
    return Text.assemble(
        ("⚙ ", "yellow"), (tool.tool, "bold yellow"), (where, "yellow"), " ", arguments
    )


def result_line(tool: common_pb2.ToolProjection) -> Text:
    """`✓ tool result`: the raw result (cut at RESULT_PREVIEW_CHARS) or its summary."""
    return _result(tool.tool, tool.status, tool.result_text or tool.result_summary)


def history_renderables(
    messages: Sequence[common_pb2.Message],
    tools: Sequence[common_pb2.ToolProjection],
    children: Sequence[common_pb2.ChildView] = (),
) -> Iterator[RenderableType]:
    """A snapshot's messages in order, each assistant message followed by its calls' lines
    (a `delegate` call's followed by its child run's).

    A call whose projection is missing is shown from its tool message (status from `is_error`).
    """
    projections = {tool.tool_call_id: tool for tool in tools}
    views = {view.tool_call_id: view for view in children}
    results = {m.tool_call_id: m for m in messages if m.role == common_pb2.MESSAGE_ROLE_TOOL}
    for message in messages:
        yield from message_renderables(message)
        for call in message.tool_calls:
            projection = projections.get(call.id)
            if projection is not None:
                yield call_line(projection)
                if projection.status != common_pb2.TOOL_STATUS_RUNNING:
                    yield result_line(projection)
                if call.id in views:
                    yield from child_lines(views[call.id])
                continue
            yield Text.assemble(("⚙ ", "yellow"), (call.name, "bold yellow"))
            answer = results.get(call.id)
            if answer is not None:
                status = (
                    common_pb2.TOOL_STATUS_FAILED
                    if answer.is_error
                    else common_pb2.TOOL_STATUS_SUCCEEDED
                )
                yield _result(call.name, status, answer.text or answer.result_summary)


def child_lines(view: common_pb2.ChildView, awaiting: frozenset[str] = frozenset()) -> list[Text]:
    """The nested lines of `view`; a running call in `awaiting` waits for the person."""
    lines: list[Text] = []
    earlier = view.calls_total - len(view.calls)
    if earlier > 0:
        lines.append(
            Text(f"{CHILD_INDENT}… {earlier} earlier call{'s' if earlier > 1 else ''}", "dim")
        )
    for call in view.calls:
        mark, style = TOOL_MARKS.get(call.status, ("⚙", "yellow"))
        state = common_pb2.ToolStatus.Name(call.status).removeprefix("TOOL_STATUS_").lower()
        if call.status == common_pb2.TOOL_STATUS_RUNNING and call.tool_call_id in awaiting:
            state = CHILD_WAITING
        summaries = " → ".join(s for s in (call.arguments_summary, call.result_summary) if s)
        lines.append(
            Text.assemble(
                (f"{CHILD_INDENT}{mark} ", style),
                (call.tool, f"bold {style}"),
                f" {state}",
                (f" — {summaries}" if summaries else "", "dim"),
            )
        )
    if view.latest_text:
        lines.append(Text(f"{CHILD_INDENT}› {view.latest_text}", style="cyan"))
    return lines


def pretty_json(text: str) -> str:
    if not text:
        return ""
    try:
        return json.dumps(json.loads(text), ensure_ascii=False)
    except ValueError:
        return text


def _result(tool: str, status: common_pb2.ToolStatus.ValueType, result: str) -> Text:
    mark, style = TOOL_MARKS.get(status, ("•", "white"))
    if len(result) > RESULT_PREVIEW_CHARS:
        result = result[:RESULT_PREVIEW_CHARS] + f"… ({len(result)} chars)"
    return Text.assemble((f"{mark} {tool} ", style), (result, "dim"))
