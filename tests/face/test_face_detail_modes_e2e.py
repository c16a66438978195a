"""The detail mode of the admitting connection is a ceiling for every other viewer."""

from __future__ import annotations

import uuid

import pytest
from helpers.face_client import FaceClient, run_ended
from helpers.face_process import FaceProcess
from helpers.mind_process import MindProcess

from tobe.v1 import common_pb2, face_pb2

pytestmark = pytest.mark.e2e
TRANSPARENT = common_pb2.DETAIL_MODE_TRANSPARENT
SUMMARY = common_pb2.DETAIL_MODE_SUMMARY


async def ask_time(client: FaceClient, key: str) -> str:
    reply = await client.command(
        send_chat=face_pb2.SendChatCommand(
            conversation_key=key, text="time please", idempotency_key=uuid.uuid4().hex
        )
    )
    assert reply.HasField("send_chat"), reply
    return reply.send_chat.run_id


def tools_of(client: FaceClient, run_id: str) -> list[common_pb2.ToolProjection]:
    return [
        e.tool_changed
        for e in client.events
        if e.HasField("tool_changed") and e.tool_changed.run_id == run_id
    ]


def tool_results_of(client: FaceClient, run_id: str) -> list[str]:
    return [
        e.message_appended.text
        for e in client.events
        if e.HasField("message_appended")
        and e.message_appended.run_id == run_id
        and e.message_appended.role == common_pb2.MESSAGE_ROLE_TOOL
    ]


async def test_summary_admissions_stay_summary_and_transparent_ones_are_downgraded(
    mind: MindProcess, face: FaceProcess
) -> None:
    token = mind.client_tokens["alice"]
    summary = await FaceClient.connect(face.address, token, mode=SUMMARY)
    transparent = await FaceClient.connect(face.address, token, mode=TRANSPARENT)
    try:
        for client in (summary, transparent):
            await client.command(subscribe=face_pb2.SubscribeCommand(after_id=0))
        await summary.command(create_conversation=face_pb2.CreateConversationCommand(key="p_modes"))

        # Admitted by the summary connection: nobody ever sees raw arguments or results.
        quiet_run = await ask_time(summary, "p_modes")
        for client in (summary, transparent):
            await client.wait_event(run_ended(quiet_run))
            tools = tools_of(client, quiet_run)
            assert {t.status for t in tools} >= {
                common_pb2.TOOL_STATUS_RUNNING,
                common_pb2.TOOL_STATUS_SUCCEEDED,
            }
            for tool in tools:
                assert tool.admitted_mode == SUMMARY and tool.shown_mode == SUMMARY
                assert tool.arguments_json == "" and tool.result_text == ""
                assert tool.arguments_summary
            assert tool_results_of(client, quiet_run) == [""]
        snapshot = (
            await transparent.command(snapshot=face_pb2.SnapshotCommand(conversation_key="p_modes"))
        ).snapshot
        assert snapshot.tools and all(t.arguments_json == "" for t in snapshot.tools)

        # Admitted by the transparent connection: raw for it, downgraded for the other.
        open_run = await ask_time(transparent, "p_modes")
        for client in (summary, transparent):
            await client.wait_event(run_ended(open_run))
        shown = tools_of(transparent, open_run)[-1]
        assert shown.shown_mode == TRANSPARENT and "UTC" in shown.arguments_json
        assert shown.result_text and "utc" in tool_results_of(transparent, open_run)[0]
        downgraded = tools_of(summary, open_run)[-1]
        assert downgraded.admitted_mode == TRANSPARENT and downgraded.shown_mode == SUMMARY
        assert downgraded.arguments_json == "" and downgraded.result_text == ""
        assert tool_results_of(summary, open_run) == [""]
        assert any(e.HasField("thinking_delta") for e in transparent.events)
        assert not any(e.HasField("thinking_delta") for e in summary.events)
        assert all(
            not e.message_appended.thinking
            for e in summary.events
            if e.HasField("message_appended")
        )
    finally:
        await summary.close()
        await transparent.close()
