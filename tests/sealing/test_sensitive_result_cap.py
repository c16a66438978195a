"""A sensitive tool's result is cut to 512 KiB with a marker saying how much there was."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from mind.conversation.history import HistoryMessage
from mind.core.tool_runtime import Admission, RunScope, Terminal, ToolRuntime
from mind.providers.base import ToolCall
from mind.sealing.limits import SENSITIVE_RESULT_LIMIT, capped_result
from mind.tools.authorizer import AllowAll
from mind.tools.base import DetailMode, Effect, ToolContext, ToolOutcome

T = datetime(2026, 9, 10, 14, 0, 30, tzinfo=UTC)
BIG = "é" * SENSITIVE_RESULT_LIMIT  # two bytes each: 1 MiB of UTF-8


class MailDump:
    """A tool that answers with a megabyte; sensitive or not."""

    description = "Every mail."
    parameters: dict[str, Any] = {"type": "object"}
    effect = Effect.READ_ONLY
    hand_id = ""
    dataset = "mail"

    def __init__(self, name: str, sensitive: bool) -> None:
        self.name, self.sensitive = name, sensitive

    async def run(self, arguments: dict[str, Any], context: ToolContext) -> ToolOutcome:
        return ToolOutcome(ok=True, output=BIG)


class Journal:
    def __init__(self) -> None:
        self.terminals: list[Terminal] = []

    async def admit(self, admission: Admission) -> None:
        return None

    async def finish(self, terminal: Terminal) -> HistoryMessage:
        self.terminals.append(terminal)
        return HistoryMessage(1, "tool", terminal.model_text, T)

    async def skip(self, admission: Admission, terminal: Terminal) -> HistoryMessage:
        return await self.finish(terminal)


async def _result_of(tool: MailDump, sensitive: dict[str, str]) -> Terminal:
    journal = Journal()
    scope = RunScope(
        "p_c",
        "run_1",
        "alice",
        DetailMode.TRANSPARENT,
        journal,
        lambda *a: None,
        sensitive=sensitive,
    )
    await ToolRuntime(AllowAll()).execute(ToolCall("c1", tool.name, {}, "{}"), tool, scope)
    (terminal,) = journal.terminals
    return terminal


async def test_a_sealed_runs_sensitive_result_is_capped_with_a_marker() -> None:
    terminal = await _result_of(MailDump("mail_dump", True), {"mail_dump": "mail"})

    text = terminal.model_text
    assert len(text.encode("utf-8")) <= SENSITIVE_RESULT_LIMIT
    assert text.endswith(
        "[truncated: this sensitive result was 1,048,576 bytes; only the first part is shown, "
        "within 524,288 bytes; ask for less to see the rest]"
    )
    assert text.startswith("é" * 1000) and not terminal.is_error
    # What is stored (the projection, sealed later) is the capped text too.
    assert terminal.result_projection == {"text": text}


async def test_a_result_of_a_tool_that_is_not_sensitive_is_kept_whole() -> None:
    terminal = await _result_of(MailDump("mail_list", False), {})

    assert terminal.model_text == BIG


def test_a_result_within_the_limit_is_unchanged_and_a_cut_never_splits_a_character() -> None:
    fits = "a" * SENSITIVE_RESULT_LIMIT
    assert capped_result(fits) == fits

    cut = capped_result("a" + BIG)  # odd offset: a byte cut would land inside an "é"
    kept = cut.split("\n[truncated:")[0]
    assert kept[0] == "a" and set(kept[1:]) == {"é"}
    assert len(cut.encode("utf-8")) <= SENSITIVE_RESULT_LIMIT
