"""The awareness tools name each call by the adapter action it reaches, with the effect the
adapter declared for it, and the tool runtime authorizes the call under that name (unit tests
of `mind.awareness.catalog`, `mind.awareness.tools` and `ToolRuntime._authorize`)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from mind.awareness.catalog import AdapterCatalog
from mind.awareness.errors import AwarenessLinkError
from mind.awareness.tools import AwarenessInteractTool, AwarenessObserveTool
from mind.conversation.history import HistoryMessage
from mind.core.tool_runtime import Admission, RunScope, Terminal, ToolRuntime
from mind.providers.base import ToolCall
from mind.tools.authorizer import CallUnderReview, Verdict
from mind.tools.base import CallClass, DetailMode, Effect
from tobe.v1 import awareness_pb2 as pb


def _adapter(adapter_id: str, name: str, instance: str = "") -> dict[str, Any]:
    listed: dict[str, Any] = {
        "adapter_id": adapter_id,
        "name": name,
        "description": f"{name} things",
        "read_actions": [{"name": "inbox", "effect": "read_only"}],
        "write_actions": [
            {"name": "send", "effect": "external_side_effect"},
            {"name": "file", "effect": "workspace_write"},
            {"name": "purge", "effect": "unknown"},
        ],
    }
    if instance:
        listed["instance"] = instance
    return listed


class FakeAwareness:
    """Answers `list_adapters` with `adapters` (one list per call, the last one repeated)."""

    def __init__(self, *lists: list[dict[str, Any]], reachable: bool = True) -> None:
        self.lists = list(lists)
        self.reachable = reachable
        self.listed = 0
        self.interactions: list[str] = []

    async def observe(
        self, call_id: str, adapter_id: str, action: str, args: dict[str, Any]
    ) -> pb.ToolCallResult:
        if not self.reachable:
            raise AwarenessLinkError("UNAVAILABLE", "connection refused")
        adapters = self.lists[min(self.listed, len(self.lists) - 1)]
        self.listed += 1
        content = {"status": "success", "adapters": adapters}
        return pb.ToolCallResult(call_id=call_id, content_json=json.dumps(content))

    async def interact(
        self, call_id: str, adapter_id: str, action: str, args: dict[str, Any]
    ) -> pb.ToolCallResult:
        self.interactions.append(action)
        return pb.ToolCallResult(call_id=call_id, content_json='{"status": "success"}')


def _tools(awareness: FakeAwareness) -> tuple[AwarenessInteractTool, AwarenessObserveTool]:
    catalog = AdapterCatalog(awareness)  # type: ignore[arg-type]
    return (
        AwarenessInteractTool(awareness, catalog),  # type: ignore[arg-type]
        AwarenessObserveTool(awareness, catalog),  # type: ignore[arg-type]
    )


def _call(adapter_id: str, action: str) -> dict[str, Any]:
    return {"adapter_id": adapter_id, "action": action, "args": {}}


async def test_a_write_action_is_named_by_instance_and_judged_by_its_declared_effect() -> None:
    awareness = FakeAwareness([_adapter("a1", "email", "email@work"), _adapter("a2", "probe")])
    interact, _ = _tools(awareness)
    send = await interact.classify(_call("a1", "send"))
    file = await interact.classify(_call("a1", "file"))
    purge = await interact.classify(_call("a1", "purge"))
    default = await interact.classify(_call("a2", "send"))
    assert send == CallClass(
        "email@work.send", Effect.EXTERNAL_SIDE_EFFECT, ("email.send", "awareness_interact")
    )
    assert (file.name, file.effect) == ("email@work.file", Effect.WORKSPACE_WRITE)
    assert (purge.name, purge.effect) == ("email@work.purge", Effect.UNKNOWN)
    # The default instance is named by its adapter: no alias repeats the name.
    assert default == CallClass("probe.send", Effect.EXTERNAL_SIDE_EFFECT, ("awareness_interact",))
    assert awareness.listed == 1  # the list is kept


async def test_a_call_nobody_can_judge_has_an_unknown_effect() -> None:
    awareness = FakeAwareness([_adapter("a1", "email")])
    interact, _ = _tools(awareness)
    unknown_action = await interact.classify(_call("a1", "inbox"))
    unknown_adapter = await interact.classify(_call("zz", "send"))
    unreachable, _ = _tools(FakeAwareness(reachable=False))
    no_answer = await unreachable.classify(_call("a1", "send"))
    for judged in (unknown_action, unknown_adapter, no_answer):
        assert judged == CallClass("awareness_interact", Effect.UNKNOWN)


async def test_an_adapter_missing_from_the_kept_list_is_asked_for_once_more() -> None:
    awareness = FakeAwareness([_adapter("a1", "email")], [_adapter("a2", "email")])
    interact, _ = _tools(awareness)
    await interact.classify(_call("a1", "send"))
    again = await interact.classify(_call("a2", "send"))
    assert (again.name, awareness.listed) == ("email.send", 2)
    await interact.classify(_call("zz", "send"))
    assert awareness.listed == 3


async def test_a_read_action_is_read_only_under_its_own_name() -> None:
    awareness = FakeAwareness([_adapter("a1", "email", "email@work")])
    _, observe = _tools(awareness)
    inbox = await observe.classify(_call("a1", "inbox"))
    engine = await observe.classify({"action": "drain"})
    assert inbox == CallClass(
        "email@work.inbox", Effect.READ_ONLY, ("email.inbox", "awareness_observe")
    )
    assert engine == CallClass("awareness_observe", Effect.READ_ONLY)


class Denying:
    def __init__(self) -> None:
        self.reviewed: list[CallUnderReview] = []

    def begin_shutdown(self) -> None: ...

    async def authorize(self, call: CallUnderReview) -> Verdict:
        self.reviewed.append(call)
        return Verdict.deny("not today")


class Terminals:
    def __init__(self) -> None:
        self.finished: list[Terminal] = []

    async def admit(self, admission: Admission) -> None: ...

    async def finish(self, terminal: Terminal) -> HistoryMessage:
        self.finished.append(terminal)
        return HistoryMessage(
            id=1, role="tool", text=terminal.model_text, created_at=datetime.now(UTC)
        )

    async def skip(self, admission: Admission, terminal: Terminal) -> HistoryMessage:
        return await self.finish(terminal)


async def test_the_runtime_authorizes_the_call_under_the_name_and_effect_of_its_action() -> None:
    awareness = FakeAwareness([_adapter("a1", "email", "email@work")])
    interact, _ = _tools(awareness)
    authorizer, journal = Denying(), Terminals()
    scope = RunScope(
        conversation_key="p_mail",
        run_id="run_1",
        principal="awareness",
        detail_mode=DetailMode.SUMMARY,
        journal=journal,
        report_progress=lambda *_: None,
        trust="medium",
        origin="a medium-trust observation from email@work (INBOX)",
    )
    arguments = _call("a1", "file")
    call = ToolCall(id="call_1", name=interact.name, arguments=arguments, raw_arguments="{}")
    await ToolRuntime(authorizer).execute(call, interact, scope)
    [reviewed] = authorizer.reviewed
    assert (reviewed.tool, reviewed.effect, reviewed.aliases) == (
        "email@work.file",
        Effect.WORKSPACE_WRITE,
        ("email.file", "awareness_interact"),
    )
    assert (reviewed.run_trust, reviewed.run_origin) == (scope.trust, scope.origin)
    assert journal.finished[0].status == "denied" and awareness.interactions == []
