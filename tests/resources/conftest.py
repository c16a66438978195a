"""Fixtures for resources: a tool context for a conversation."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from mind.tools.base import DetailMode, ToolContext


@pytest.fixture
def tool_context() -> Callable[[str], ToolContext]:
    """A tool call's context in the conversation with this key."""

    def context(conversation_key: str) -> ToolContext:
        return ToolContext(
            conversation_key=conversation_key,
            run_id="run_1",
            tool_call_id="call_1",
            principal="alice",
            detail_mode=DetailMode.TRANSPARENT,
            report_progress=lambda message, fraction: None,
        )

    return context
