"""`current_time` tells the Mind's clock (the one schedules run on), not the host's."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

from mind.core.tool_registry import ToolRegistry
from mind.scripted.provider import ScriptedProvider
from mind.server import build
from mind.tools.base import ToolContext
from mind.tools.builtin import builtin_tools
from tobe.config import load_settings
from tobe.provider_detect import DEMO_SCRIPT

SET_TIME = datetime(2031, 5, 17, 6, 30, tzinfo=UTC)


async def _told(registry: ToolRegistry, context: ToolContext, **arguments: str) -> dict[str, str]:
    tool = registry.tools_for("p_time")["current_time"]
    outcome = await tool.run(arguments, context)
    assert outcome.ok, outcome.error
    told: dict[str, str] = json.loads(outcome.output)
    return told


async def test_the_time_tool_reports_the_clock_it_is_given(
    tool_context: Callable[[str], ToolContext],
) -> None:
    registry = ToolRegistry(builtin_tools(lambda: SET_TIME))
    told = await _told(registry, tool_context("p_time"), timezone="Asia/Tokyo")
    assert told == {
        "utc": "2031-05-17T06:30:00+00:00",
        "timezone": "Asia/Tokyo",
        "local": "2031-05-17T15:30:00+09:00",
    }


async def test_the_minds_time_tool_reads_the_scheduler_clock_file(
    tmp_path: Path, tool_context: Callable[[str], ToolContext]
) -> None:
    clock_file = tmp_path / "clock"
    clock_file.write_text(SET_TIME.isoformat())
    settings = load_settings(data_dir=tmp_path, scheduler={"clock_file": clock_file})
    app = build(settings, ScriptedProvider.from_file(DEMO_SCRIPT))
    try:
        told = await _told(app.tools, tool_context("p_time"))
        assert told == {"utc": "2031-05-17T06:30:00+00:00"}
        clock_file.write_text("2031-05-18T00:00:00+00:00")
        assert (await _told(app.tools, tool_context("p_time")))["utc"].startswith("2031-05-18")
    finally:
        await app.database.close()
