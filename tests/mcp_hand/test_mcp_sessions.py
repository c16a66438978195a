"""The MCP servers of a Hand, in process, against the remote test server: tools declared,
allowed and hidden, list changes followed, calls bounded by their timeout."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
from helpers.eventually import eventually_async
from remote_server import TOKEN, RemoteServer, start_remote_server

from hand import Effect, Hand, ToolError
from hand.mcp.config import McpConfig
from hand.mcp.host import McpHost
from hand.sandbox import Sandbox


@pytest.fixture
def remote() -> Iterator[RemoteServer]:
    record, stop = start_remote_server()
    try:
        yield record
    finally:
        stop()


def _config(remote: RemoteServer, **keys: Any) -> McpConfig:
    server = {"url": remote.url, "headers": {"Authorization": f"Bearer {TOKEN}"}} | keys
    return McpConfig.model_validate({"mcpServers": {"remote": server}})


@pytest.fixture
async def hosted(remote: RemoteServer, request: pytest.FixtureRequest) -> AsyncIterator[Hand]:
    hand = Hand("laptop")
    host = McpHost(hand, _config(remote, **getattr(request, "param", {})), Sandbox())
    await host.start(30)
    try:
        yield hand
    finally:
        await host.stop()


async def test_a_servers_tools_are_declared_with_their_schema_and_effect(hosted: Hand) -> None:
    shout = hosted.tools["remote__shout"]
    assert shout.effect is Effect.READ_ONLY
    assert shout.json_schema["properties"]["text"]["type"] == "string"
    assert (await shout.call({"text": "hey"})).text == "HEY"


@pytest.mark.parametrize(
    "hosted",
    [
        {
            "allow": ["shout", "refuse"],
            "hide": ["refuse"],
            "tools": {"shout": {"effect": "external_side_effect"}},
        }
    ],
    indirect=True,
)
async def test_the_config_allows_hides_and_overrides_tools(hosted: Hand) -> None:
    assert sorted(hosted.tools) == ["remote__shout"]
    assert hosted.tools["remote__shout"].effect is Effect.EXTERNAL_SIDE_EFFECT


async def test_arguments_that_break_the_schema_are_refused_before_the_call(hosted: Hand) -> None:
    with pytest.raises(ToolError, match="text"):
        await hosted.tools["remote__shout"].call({"text": 5})


async def test_an_error_result_is_a_tool_error(hosted: Hand) -> None:
    with pytest.raises(ToolError, match="the remote tool refuses"):
        await hosted.tools["remote__refuse"].call({})


async def test_a_tool_list_change_declares_the_new_tools(hosted: Hand) -> None:
    assert "remote__extra" not in hosted.tools
    await hosted.tools["remote__grow"].call({})
    await eventually_async(lambda: "remote__extra" in hosted.tools, what="the new tool")
    assert (await hosted.tools["remote__extra"].call({})).text == "extra here"


@pytest.mark.parametrize("hosted", [{"timeout": 0.5}], indirect=True)
async def test_a_call_past_its_timeout_fails_and_is_cancelled_on_the_server(
    hosted: Hand, remote: RemoteServer
) -> None:
    with pytest.raises(ToolError, match="^MCP server remote: wait_forever did not finish within"):
        await hosted.tools["remote__wait_forever"].call({})
    # Waits on this loop: the cancellation is posted by the client's transport running here.
    await eventually_async(lambda: "cancelled" in remote.seen, what="the server's cancel")


async def test_a_server_listing_its_tools_after_the_start_warns_of_unknown_names(
    remote: RemoteServer, caplog: pytest.LogCaptureFixture
) -> None:
    """The start checks the servers that listed their tools within its wait; one that lists
    them later cannot stop a Hand already serving, so a name it lacks is logged instead."""
    hand = Hand("laptop")
    host = McpHost(hand, _config(remote, allow=["shout", "shuot"]), Sandbox())
    await host.start(0)
    try:
        await eventually_async(lambda: "remote__shout" in hand.tools, what="the late tools")
        warnings = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
        assert any(
            message.startswith("MCP server remote: `allow` names 'shuot', which it does not list")
            for message in warnings
        ), warnings
        assert sorted(hand.tools) == ["remote__shout"]
    finally:
        await host.stop()
