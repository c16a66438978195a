"""The provider view: stored history → the messages one provider request carries.

A pure function, recomputed from the complete history before every provider request:

* every message's text starts with its time in GMT to the second: `[2026-09-10 14:00:30 GMT] `;
* runtime notes become user messages, marked as platform notes;
* messages map one to one, in order: adjacent user messages are NOT merged;
* an assistant tool call without a stored result (the run was cancelled or the process died
  before it ran) gets a synthesized error result, so every provider accepts the history;
* a tool call and its result carry the id the model gave the call, so the model gets its own
  ids back; the Mind's id stands in where the model sent none (history stored before the
  model's id was kept has none either) or where the model gave one id to several calls of the
  same message, which would leave their results ambiguous;
* a message with images (a tool result's too) starts with `[image #<message id>]` (after its
  stamp), then its text, then the images; an image whose bytes are gone is replaced by
  `[image could not be read]` after the text (whether the model sees the images is its
  adapter's business: one that cannot gets a placeholder instead);
* a person's message quoting another starts with a line `[quote <speaker>: <text>]`, or for a
  quoted message with images `[quote <speaker>'s image #<id>]` (before an image marker of its
  own); one forwarding a chat record ends with the record, an item per line as
  `<speaker>: <text>`, each item's images marked `[forwarded image <n>]` after its text and,
  for a model that sees images, sent right there (`ProviderMessage.parts`; `images` holds the
  message's own, then the record's in order);
* a message posted by code (a welcome, an error reply, a client's post) becomes a platform
  note saying so: the model did not write it, and a history that starts with, or repeats, the
  assistant's turn is refused by some wires;
* a current-time note is appended for this request only; it is never stored; given the
  person's time zone, it also says the local time there;
* with a context summary (compaction), the view starts with a note carrying it, stamped with
  the time it was written, and goes on with the messages after the ones it covers.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime

from mind.conversation.history import ContextSummary, HistoryMessage, gmt_stamp
from mind.core.prompt import (
    FORWARDED_RECORD,
    IMAGE_UNREADABLE,
    NOTE_MARK,
    current_time_note,
    forwarded_image_marker,
    image_marker,
    is_time_note,
    posted_note,
    quote_line,
    summary_note,
)
from mind.providers.base import ImagePart, ProviderMessage, ToolCall

NOT_EXECUTED = "error: this tool call was not executed (the run ended before it ran)"


def strip_stamp(text: str) -> str:
    """The text without a leading GMT stamp (for readers of rendered messages)."""
    if text.startswith("[") and " GMT] " in text[:32]:
        return text.split(" GMT] ", 1)[1]
    return text


def is_runtime_note(text: str) -> bool:
    """True for a rendered user message that is a platform note, not something a person said."""
    body = strip_stamp(text)
    return body.startswith(NOTE_MARK) or is_time_note(body)


def _wire_ids(calls: Sequence[ToolCall]) -> dict[str, str]:
    """The Mind id of each call → the id its provider sees (see the module docstring)."""
    issued = Counter(call.provider_id for call in calls)
    return {
        call.id: call.provider_id if call.provider_id and issued[call.provider_id] == 1 else call.id
        for call in calls
    }


def _with_images(message: HistoryMessage, text: str) -> str:
    """`text` marked with the message's images, and a placeholder per unreadable one."""
    if not message.images and not message.unreadable_images:
        return text
    lines = [f"{image_marker(message.id)} {text}" if text else image_marker(message.id)]
    lines.extend(IMAGE_UNREADABLE for _ in range(message.unreadable_images))
    return "\n".join(lines)


def _person_said(message: HistoryMessage, stamp: str) -> ProviderMessage:
    """A person's message: its quote line, text and images, then the record it forwards;
    with a record's images, `parts` puts each item's images right after its text."""
    lines = [quote_line(message.quote)] if message.quote is not None else []
    if text := _with_images(message, message.text):
        lines.append(text)
    images = list(message.images)
    parts: list[str | ImagePart] = []
    if message.forwarded:
        lines.append(FORWARDED_RECORD)
        parts = ["\n".join(lines), *message.images]
        lines = []
    for entry in message.forwarded:
        lines.append(f"{entry.speaker}: {entry.text}")
        lines.extend(IMAGE_UNREADABLE for _ in range(entry.unreadable_images))
        for image in entry.images:
            images.append(image)
            lines.append(forwarded_image_marker(len(images) - len(message.images)))
        if entry.images:
            parts.extend(["\n".join(lines), *entry.images])
            lines = []
    if not parts:
        return ProviderMessage(role="user", text=stamp + "\n".join(lines), images=images)
    if lines:
        parts.append("\n".join(lines))
    parts[0] = stamp + str(parts[0])
    said = "\n".join(part for part in parts if isinstance(part, str))
    with_images = len(images) > len(message.images)
    return ProviderMessage(
        role="user", text=said, images=images, parts=parts if with_images else []
    )


def _render(message: HistoryMessage, wire_ids: dict[str, str]) -> ProviderMessage:
    stamp = gmt_stamp(message.created_at)
    if message.role == "note":
        return ProviderMessage(
            role="user",
            text=f"{stamp}{NOTE_MARK} {_with_images(message, message.text)}",
            images=list(message.images),
        )
    if message.posted_by:
        return ProviderMessage(
            role="user",
            text=f"{stamp}{NOTE_MARK} {posted_note(message.posted_by, message.text)}",
        )
    if message.role == "tool":
        return ProviderMessage(
            role="tool",
            text=stamp + _with_images(message, message.text),
            images=list(message.images),
            tool_call_id=wire_ids[message.tool_call_id],
            tool_name=message.tool_name,
            is_error=message.is_error,
        )
    if message.role == "user":
        return _person_said(message, stamp)
    return ProviderMessage(
        role=message.role,
        text=stamp + _with_images(message, message.text),
        images=list(message.images),
        thinking=list(message.thinking),
        tool_calls=[replace(call, id=wire_ids[call.id]) for call in message.tool_calls],
    )


def _missing_results(
    call_names: dict[str, str], answered: set[str], wire_ids: dict[str, str], at: datetime
) -> list[ProviderMessage]:
    stamp = gmt_stamp(at)
    return [
        ProviderMessage(
            role="tool",
            text=stamp + NOT_EXECUTED,
            tool_call_id=wire_ids[call_id],
            tool_name=name,
            is_error=True,
        )
        for call_id, name in call_names.items()
        if call_id not in answered
    ]


def provider_messages(
    history: Sequence[HistoryMessage],
    now: datetime,
    summary: ContextSummary | None = None,
    zone: str = "",
) -> list[ProviderMessage]:
    """The request messages for `history` at time `now` (see the module docstring)."""
    return ProviderView().messages(history, now, summary, zone)


def summary_message(summary: ContextSummary) -> ProviderMessage:
    """The note standing for the messages a summary covers."""
    return ProviderMessage(
        role="user",
        text=gmt_stamp(summary.created_at) + summary_note(summary.text, summary.environment),
    )


class ProviderView:
    """`provider_messages` for a transcript that only grows, rendered incrementally.

    The rendering of a message depends only on the batch it belongs to (an assistant message
    and the tool results after it), so everything before the latest batch stays as it was
    rendered. That part is kept, keyed by the ids of the messages it came from, and each step
    renders only the latest batch and what came after it. Without it, every step of every run
    rendered the whole transcript again: most of the Mind's CPU in a long conversation.
    """

    def __init__(self) -> None:
        self._ids: list[int] = []  # the messages whose rendering is kept, in order
        self._rendered: list[ProviderMessage] = []

    def messages(
        self,
        history: Sequence[HistoryMessage],
        now: datetime,
        summary: ContextSummary | None = None,
        zone: str = "",
        notes: str = "",
    ) -> list[ProviderMessage]:
        """`history` holds the messages after the ones `summary` covers (all, without one);
        `zone` is the person's time zone ("": not known); `notes` what the last note says
        of the conversation besides the time (its widgets)."""
        head = [summary_message(summary)] if summary is not None else []
        start = len(self._ids)
        if start > len(history) or [m.id for m in history[:start]] != self._ids:
            start, self._ids, self._rendered = 0, [], []  # not the transcript we rendered
        out = list(self._rendered)
        # The latest assistant message's calls (Mind id → name), their wire ids, the answered.
        pending: dict[str, str] = {}
        wire_ids: dict[str, str] = {}
        answered: set[str] = set()
        pending_at = now
        kept = (start, len(out))  # where the latest batch starts: history index, output length
        for index in range(start, len(history)):
            message = history[index]
            if message.role == "tool" and message.tool_call_id in pending:
                answered.add(message.tool_call_id)
                out.append(_render(message, wire_ids))
                continue
            if message.role == "tool":
                # A result whose call is not in the batch before it cannot be sent; skip it.
                continue
            out.extend(_missing_results(pending, answered, wire_ids, pending_at))
            kept = (index, len(out))
            pending, answered = {}, set()
            wire_ids = _wire_ids(message.tool_calls)
            if message.role == "assistant" and message.tool_calls:
                pending = {call.id: call.name for call in message.tool_calls}
                pending_at = message.created_at
            out.append(_render(message, wire_ids))
        self._ids.extend(m.id for m in history[start : kept[0]])
        self._rendered = out[: kept[1]]
        out.extend(_missing_results(pending, answered, wire_ids, pending_at))
        note = current_time_note(now, zone) + (f"\n\n{notes}" if notes else "")
        out.append(ProviderMessage(role="user", text=gmt_stamp(now) + note))
        return head + out
