"""The Scripted provider: a deterministic model that plays a script (see `script.py`).

For tests and the offline demo only. It keeps no state between requests: what to answer is
derived from the request, so concurrent conversations play the same script independently.
"""

from __future__ import annotations

import asyncio
import json
import re
from dataclasses import replace
from pathlib import Path
from typing import Any

from mind.actions.prompts import EVALUATOR_MARK, EXTRACTOR_MARK, PLANNER_MARK
from mind.context.budget import ByIdentity
from mind.context.prompt import SUMMARISER_PROMPT
from mind.core.prompt import NOTE_MARK, is_time_note, posted_note
from mind.core.view import is_runtime_note, strip_stamp
from mind.providers.base import (
    ErrorKind,
    EventSink,
    ProviderError,
    ProviderMessage,
    ProviderRequest,
    ProviderResult,
    StopReason,
    TextDelta,
    ThinkingBlock,
    ThinkingDelta,
    ToolCall,
    ToolCallDelta,
    Usage,
)
from mind.providers.catalog import ModelInfo
from mind.providers.vision import blind_text, sees_images
from mind.scripted.script import Expectation, Script, ScriptedStep, ScriptedToolCall, load_script

# How the summariser's system prompt starts (the rest depends on the summary length asked).
_SUMMARISER = SUMMARISER_PROMPT.split("{", 1)[0]
# The decision layer's stages, by the first line of their system prompts.
_STAGES = {EXTRACTOR_MARK: "extract", EVALUATOR_MARK: "evaluate", PLANNER_MARK: "plan"}
_ORDINARY = '{"tendencies": [], "pending": []}'
# How a message posted by code starts, as the model sees it.
_POSTED = f"{NOTE_MARK} {posted_note('', '').split(' by ', 1)[0]} by "
# Digest of the person's messages for a summary with no scripted text.
_PERSON_LINE = re.compile(r"GMT\] User: (.{0,80})")


def prompt_tokens(request: ProviderRequest) -> int:
    """The scripted model's token count: UTF-8 bytes / 4, plus 4 per message."""
    size = len(request.system.encode())
    for tool in request.tools:
        size += _MEASURED.chars(tool.parameters, _schema_bytes) + len(tool.description.encode())
    for message in request.messages:
        size += _MEASURED.chars(message, _message_bytes)
    return size // 4 + 1000 * sum(len(message.images) for message in request.messages)


# The tool schemas and rendered messages come back request after request: measured once.
_MEASURED = ByIdentity()


def _schema_bytes(parameters: dict[str, Any]) -> int:
    return len(json.dumps(parameters).encode())


def _message_bytes(message: ProviderMessage) -> int:
    size = len(message.text.encode()) + 16
    size += sum(len(call.raw_arguments.encode()) for call in message.tool_calls)
    return size + sum(len(block.text.encode()) for block in message.thinking)


def _digest(request: ProviderRequest) -> str:
    """A summary naming what the person said, within the output the request allows."""
    source = request.messages[-1].text if request.messages else ""
    earlier = ""
    if source.startswith("Earlier summary:\n"):
        earlier = source.split("\n", 1)[1].split("\n\nMessages to fold", 1)[0]
    said = "; ".join(match.strip() for match in _PERSON_LINE.findall(source))
    text = f"{earlier} | then the user said: {said}" if earlier else f"The user said: {said}"
    limit = 4 * (request.max_output_tokens or 256)
    return text if len(text) <= limit else "…" + text[-(limit - 1) :]


def _chunks(text: str, count: int) -> list[str]:
    if not text:
        return []
    size = max(1, -(-len(text) // count))
    return [text[i : i + size] for i in range(0, len(text), size)]


def _is_observation_note(message: ProviderMessage) -> bool:
    """A note that can start a run (an observation's, a firing's): not the time note, and not
    a message posted by code, which starts nothing."""
    body = strip_stamp(message.text)
    return (
        message.role == "user"
        and is_runtime_note(message.text)
        and not is_time_note(body)
        and not body.startswith(_POSTED)
    )


def _run_start(messages: list[ProviderMessage]) -> int:
    """Index of the message that started the current run, or -1.

    A run starts with a person's message, or with a platform note (an observation) that
    arrived after the previous run had ended (its last assistant message called no tools).
    """
    start = -1
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        if message.role == "user" and not is_runtime_note(message.text):
            start = index
            break
    ended = -1
    for index in range(len(messages) - 1, start, -1):
        if messages[index].role == "assistant" and not messages[index].tool_calls:
            ended = index
            break
    if ended >= 0 or start < 0:
        note = next(
            (i for i in range(ended + 1, len(messages)) if _is_observation_note(messages[i])),
            None,
        )
        if note is not None:
            return note
    return start


def _position(
    messages: list[ProviderMessage],
) -> tuple[ProviderMessage | None, int, ProviderMessage | None]:
    """(the run's starting message, step index, last message before notes)."""
    start = _run_start(messages)
    last = next(
        (m for m in reversed(messages) if not (m.role == "user" and is_runtime_note(m.text))),
        None,
    )
    if start < 0:
        return None, 0, last
    step = sum(1 for m in messages[start + 1 :] if m.role == "assistant")
    return messages[start], step, last


def _check(
    expect: Expectation,
    request: ProviderRequest,
    start: ProviderMessage | None,
    last: ProviderMessage | None,
) -> str | None:
    """The first failed expectation, described; None when all hold."""
    last_text = strip_stamp(last.text) if last else ""
    if expect.last_role and (last is None or last.role != expect.last_role):
        got = last.role if last else "none"
        return f"expected the last message to be {expect.last_role}, got {got}"
    if expect.last_contains is not None and expect.last_contains not in last_text:
        return (
            f"expected the last message to contain {expect.last_contains!r}, "
            f"got {last_text[:200]!r}"
        )
    if expect.last_is_error is not None and (last is None or last.is_error != expect.last_is_error):
        return f"expected the last message is_error={expect.last_is_error}"
    if expect.system_contains is not None and expect.system_contains not in request.system:
        return f"expected the system prompt to contain {expect.system_contains!r}"
    carried = len(last.images) if last else 0
    if expect.images is not None and carried != expect.images:
        return f"expected the last message to carry {expect.images} images, got {carried}"
    started_with = len(start.images) if start else 0
    if expect.start_images is not None and started_with != expect.start_images:
        return (
            f"expected the run's starting message to carry {expect.start_images} images, "
            f"got {started_with}"
        )
    offered = {tool.name for tool in request.tools}
    missing = [name for name in expect.tools_include if name not in offered]
    if missing:
        return f"expected tools {missing} to be offered; offered: {sorted(offered)}"
    unwanted = [name for name in expect.tools_exclude if name in offered]
    if unwanted:
        return f"expected tools {unwanted} not to be offered; offered: {sorted(offered)}"
    if expect.request_contains or expect.request_excludes:
        whole = request_text(request)
        absent = [text for text in expect.request_contains if text not in whole]
        if absent:
            return f"expected the request to contain {absent}"
        present = [text for text in expect.request_excludes if text in whole]
        if present:
            return f"expected the request not to contain {present}"
    return None


def request_text(request: ProviderRequest) -> str:
    """Everything a request shows the model, as one text: the system prompt, and each
    message's text, thinking and tool-call arguments."""
    parts = [request.system]
    for message in request.messages:
        parts.append(message.text)
        parts.extend(block.text for block in message.thinking)
        parts.extend(f"{call.name} {call.raw_arguments}" for call in message.tool_calls)
    return "\n".join(parts)


def _blind(request: ProviderRequest) -> ProviderRequest:
    """The request as a model that cannot see images gets it: placeholders for images."""
    messages = [
        replace(m, text=blind_text(m.text, m.images), images=[]) if m.images else m
        for m in request.messages
    ]
    return replace(request, messages=messages)


def _tool_call(
    index: int, run_index: int, step: int, call: ScriptedToolCall, last_text: str
) -> ToolCall:
    raw = call.raw(last_text)
    call_id = f"script_{run_index}_{step}_{index}"
    try:
        parsed = json.loads(raw)
    except json.JSONDecodeError as exc:
        return ToolCall(call_id, call.name, None, raw, f"arguments are not valid JSON: {exc}")
    if not isinstance(parsed, dict):
        return ToolCall(call_id, call.name, None, raw, "arguments are not a JSON object")
    return ToolCall(call_id, call.name, parsed, raw)


class ScriptedProvider:
    """Plays `script`; see the module docstrings for how a response is chosen."""

    name = "scripted"

    def __init__(
        self, script: Script, model: str = "script", info: ModelInfo | None = None
    ) -> None:
        self.script = script
        self.model = model
        # The model's catalog entry, when it has one: its window is then enforced, and images
        # are seen only when it says `vision` (without one, the model is blind).
        self.info = info

    @classmethod
    def from_file(cls, path: Path, info: ModelInfo | None = None) -> ScriptedProvider:
        return cls(load_script(path), model=info.id if info else Path(path).name, info=info)

    async def complete(self, request: ProviderRequest, on_event: EventSink) -> ProviderResult:
        if not sees_images(self.info):
            request = _blind(request)
        tokens = prompt_tokens(request)
        refused = self._overflow(request, tokens)
        if refused is not None:
            return refused
        if request.system.startswith(_SUMMARISER):
            return await self._summarise(request, tokens)
        stage = next(
            (name for mark, name in _STAGES.items() if request.system.startswith(mark)), ""
        )
        if stage:
            return self._decide(stage, request, tokens)
        result = await self._respond(request, on_event)
        result.usage = Usage(tokens, result.usage.output_tokens)
        return result

    def _overflow(self, request: ProviderRequest, tokens: int) -> ProviderResult | None:
        if self.info is None:
            return None
        output = request.max_output_tokens or self.info.max_output
        if tokens + output <= self.info.context_window:
            return None
        return ProviderResult(
            stop_reason=StopReason.ERROR,
            error=ProviderError(
                ErrorKind.CONTEXT_OVERFLOW,
                f"prompt is too long: {tokens} tokens + {output} output > "
                f"{self.info.context_window} maximum",
                400,
            ),
            model=self.model,
        )

    async def _summarise(self, request: ProviderRequest, tokens: int) -> ProviderResult:
        source = request.messages[-1].text if request.messages else ""
        rule = self.script.summary_for(source)
        if rule.delay:
            await asyncio.sleep(rule.delay)
        if rule.error is not None:
            return ProviderResult(
                stop_reason=StopReason.ERROR,
                error=ProviderError(rule.error_kind, rule.error),
                model=self.model,
            )
        text = rule.text if rule.text is not None else _digest(request)
        usage = Usage(tokens, len(text) // 4)
        return ProviderResult(text=text, usage=usage, model=self.model)

    def _decide(self, stage: str, request: ProviderRequest, tokens: int) -> ProviderResult:
        """A decision-layer stage's answer; see `decisions` in the script module."""
        source = request.messages[0].text if request.messages else ""
        attempt = sum(1 for message in request.messages if message.role == "assistant")
        rule = self.script.decision_for(stage, source)
        if rule is None:
            if stage == "extract":
                return ProviderResult(text=_ORDINARY, usage=Usage(tokens, 8), model=self.model)
            return self._error(f"no scripted `{stage}` decision matches its input")
        text = rule.answer(attempt)
        if text is None:
            return self._error(
                f"the scripted `{stage}` decision {rule.match!r} has {len(rule.answers)} "
                f"answers; attempt {attempt + 1} was requested"
            )
        return ProviderResult(text=text, usage=Usage(tokens, len(text) // 4), model=self.model)

    async def _respond(self, request: ProviderRequest, on_event: EventSink) -> ProviderResult:
        start, step_index, last = _position(request.messages)
        started_by = strip_stamp(start.text) if start else ""
        chosen = self.script.run_for(started_by)
        if chosen is None:
            return self._error(f"no scripted run matches the message {started_by[:200]!r}")
        run_index, run = chosen
        if step_index >= len(run.steps):
            return self._error(
                f"scripted run {run_index} ({run.match!r}) has {len(run.steps)} steps; "
                f"step {step_index} was requested"
            )
        step = run.steps[step_index]
        if step.delay:
            await asyncio.sleep(step.delay)
        if step.expect is not None:
            failure = _check(step.expect, request, start, last)
            if failure is not None:
                return self._error(f"run {run_index} step {step_index}: {failure}")
        return self._play(
            step, run_index, step_index, on_event, strip_stamp(last.text) if last else ""
        )

    def _play(
        self,
        step: ScriptedStep,
        run_index: int,
        step_index: int,
        on_event: EventSink,
        last_text: str = "",
    ) -> ProviderResult:
        for piece in _chunks(step.thinking, step.chunks):
            on_event(ThinkingDelta(piece))
        for piece in _chunks(step.text, step.chunks):
            on_event(TextDelta(piece))
        calls = [
            _tool_call(i, run_index, step_index, c, last_text)
            for i, c in enumerate(step.tool_calls)
        ]
        for index, call in enumerate(calls):
            on_event(ToolCallDelta(index, call.id, call.name, call.raw_arguments))
        usage = Usage(output_tokens=(len(step.text) + len(step.thinking)) // 4 + len(calls))
        thinking = [ThinkingBlock(text=step.thinking)] if step.thinking else []
        if step.error is not None:
            return ProviderResult(
                text=step.text,
                thinking=thinking,
                usage=usage,
                stop_reason=StopReason.ERROR,
                error=ProviderError(step.error_kind, step.error),
                model=self.model,
            )
        stop = step.stop_reason or (StopReason.TOOL_USE if calls else StopReason.STOP)
        return ProviderResult(
            text=step.text,
            thinking=thinking,
            tool_calls=calls,
            usage=usage,
            stop_reason=stop,
            model=self.model,
        )

    def _error(self, message: str) -> ProviderResult:
        return ProviderResult(
            stop_reason=StopReason.ERROR,
            error=ProviderError(ErrorKind.PROTOCOL, message),
            model=self.model,
        )

    async def aclose(self) -> None:
        return None
