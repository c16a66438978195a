"""The MCP servers file, tool names and effects, and results as the model sees them."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest
from mcp import types

from hand import Effect, InvalidArguments, SchemaTool, ToolError
from hand.mcp.config import McpConfigError, ServerConfig, load_config
from hand.mcp.results import result_output
from hand.mcp.tools import effect_of, hand_tools, unknown_names

TINY_PNG = "iVBORw0KGgo="  # 8 bytes


def _load(tmp_path: Path, content: Any) -> None:
    path = tmp_path / "mcp.json"
    path.write_text(content if isinstance(content, str) else json.dumps(content))
    load_config(path)


@pytest.mark.parametrize(
    ("content", "says"),
    [
        ("{not json", "not JSON (Expecting property name"),
        ({"servers": {}}, "key mcpServers: Field required"),
        ({"mcpServers": {}}, "`mcpServers` names no server"),
        ({"mcpServers": {"a": {}}}, "server 'a', key (the server): give either `command`"),
        ({"mcpServers": {"a": {"command": "x", "url": "http://h"}}}, "give either `command`"),
        ({"mcpServers": {"a": {"url": "ftp://h"}}}, "`url` must start with http://"),
        ({"mcpServers": {"a": {"command": "x", "effect": "big"}}}, "server 'a', key effect:"),
        ({"mcpServers": {"a": {"command": "x", "timeout": 0}}}, "key timeout: Input should be"),
        ({"mcpServers": {"a": {"command": "x", "colour": 1}}}, "key colour: Extra inputs"),
        (
            {"mcpServers": {"a": {"command": "x", "sandbox": {"read_only": ["lib"]}}}},
            "key sandbox.read_only: 'lib' must be an absolute path",
        ),
    ],
)
def test_a_bad_servers_file_is_one_line_naming_the_server_and_key(
    tmp_path: Path, content: Any, says: str
) -> None:
    with pytest.raises(McpConfigError) as caught:
        _load(tmp_path, content)
    message = str(caught.value)
    assert says in message and "\n" not in message and str(tmp_path) in message


def test_a_config_error_never_shows_a_secret_value(tmp_path: Path) -> None:
    headers = {"Authorization": ["Bearer s3cret-value"]}
    with pytest.raises(McpConfigError) as caught:
        _load(tmp_path, {"mcpServers": {"a": {"url": "http://h", "headers": headers}}})
    assert "key headers.Authorization" in str(caught.value)
    assert "s3cret" not in str(caught.value)


def test_a_missing_file_is_named(tmp_path: Path) -> None:
    with pytest.raises(McpConfigError, match="cannot read it"):
        load_config(tmp_path / "absent.json")


def _tool(name: str = "t", **hints: bool) -> types.Tool:
    annotations = types.ToolAnnotations(**hints) if hints else None
    return types.Tool(name=name, input_schema={"type": "object"}, annotations=annotations)


LOCAL = ServerConfig(command="x")


@pytest.mark.parametrize(
    ("hints", "effect"),
    [
        ({}, Effect.EXTERNAL_SIDE_EFFECT),
        ({"read_only_hint": True}, Effect.READ_ONLY),
        ({"read_only_hint": False}, Effect.EXTERNAL_SIDE_EFFECT),
        ({"open_world_hint": False}, Effect.EXTERNAL_SIDE_EFFECT),
        ({"open_world_hint": False, "destructive_hint": False}, Effect.WORKSPACE_WRITE),
        ({"open_world_hint": True, "destructive_hint": False}, Effect.EXTERNAL_SIDE_EFFECT),
    ],
)
def test_annotations_map_to_effects_and_no_annotation_is_not_read_only(
    hints: dict[str, bool], effect: Effect
) -> None:
    assert effect_of(LOCAL, _tool(**hints)) is effect


def test_the_config_overrides_the_hints_per_tool_then_per_server() -> None:
    config = ServerConfig(
        command="x", effect="read_only", tools={"w": {"effect": "workspace_write"}}
    )
    assert effect_of(config, _tool("w", read_only_hint=True)) is Effect.WORKSPACE_WRITE
    assert effect_of(config, _tool("other")) is Effect.READ_ONLY


async def _never(tool: str, arguments: dict[str, Any]) -> str:
    raise AssertionError("not called")


def test_tool_names_are_lowered_and_sanitised_and_colliding_or_long_ones_left_out() -> None:
    listed = [_tool("Read-File"), _tool("read_file"), _tool("x" * 60), _tool("ok")]
    tools = hand_tools("My.Server", LOCAL, listed, _never)
    assert [t.name for t in tools] == ["my_server__read_file", "my_server__ok"]


def test_allow_hide_and_tools_naming_tools_the_server_does_not_list_are_named() -> None:
    listed = [_tool("read"), _tool("write")]
    config = ServerConfig(
        command="x",
        allow=["read", "raed"],
        hide=["delete"],
        tools={"write": {"effect": "read_only"}, "wirte": {"effect": "read_only"}},
    )
    assert unknown_names(config, listed) == (
        "`allow` names 'raed'; `hide` names 'delete'; `tools` names 'wirte', "
        "which it does not list (it lists read, write)"
    )
    exact = ServerConfig(
        command="x", allow=["read"], hide=["write"], tools={"read": {"effect": "read_only"}}
    )
    assert unknown_names(exact, listed) is None
    assert unknown_names(LOCAL, []) is None


def test_a_schema_tool_validates_arguments_against_its_json_schema() -> None:
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
    tool = SchemaTool("count", "Count.", Effect.READ_ONLY, schema, _never_run)
    assert tool.validate({"n": 3}) == {"n": 3}
    with pytest.raises(InvalidArguments, match="n: 'x' is not of type 'integer'"):
        tool.validate({"n": "x"})
    with pytest.raises(InvalidArguments, match="arguments: 'n' is a required property"):
        tool.validate({})


async def _never_run(arguments: dict[str, Any]) -> str:
    raise AssertionError("not called")


def test_a_schema_tool_refuses_an_invalid_schema_or_name() -> None:
    with pytest.raises(ValueError, match="invalid JSON Schema"):
        SchemaTool("count", "", Effect.READ_ONLY, {"type": "nonsense"}, _never_run)
    with pytest.raises(ValueError, match="must match"):
        SchemaTool("Count", "", Effect.READ_ONLY, {"type": "object"}, _never_run)


def test_result_content_becomes_text_images_notes_and_structured_json() -> None:
    result = types.CallToolResult(
        content=[
            types.TextContent(text="hello"),
            types.ImageContent(data=TINY_PNG, mime_type="image/png"),
            types.EmbeddedResource(
                resource=types.TextResourceContents(uri="file:///a.txt", text="inside")
            ),
            types.ResourceLink(name="b", uri="file:///b.txt"),
        ]
    )
    output = result_output(result)
    assert output.text == (
        "hello\n\n[image 1: image/png, 8 bytes]\n\n[resource file:///a.txt]\ninside"
        "\n\n[resource link b: file:///b.txt]"
    )
    assert output.images == [("image/png", base64.b64decode(TINY_PNG))]
    structured = types.CallToolResult(content=[], structured_content={"sum": 3})
    assert json.loads(result_output(structured).text) == {"sum": 3}


def test_image_resources_travel_as_images_and_bad_base64_stays_a_note() -> None:
    result = types.CallToolResult(
        content=[
            types.EmbeddedResource(
                resource=types.BlobResourceContents(
                    uri="file:///chart.png", mime_type="image/png", blob=TINY_PNG
                )
            ),
            types.ImageContent(data="not base64!", mime_type="image/png"),
        ]
    )
    output = result_output(result)
    assert output.images == [("image/png", base64.b64decode(TINY_PNG))]
    assert "[resource file:///chart.png] [image 1: image/png" in output.text
    assert "[image: image/png, not valid base64]" in output.text


def test_an_error_result_is_a_tool_error_with_its_text() -> None:
    failed = types.CallToolResult(content=[types.TextContent(text="no such file")], is_error=True)
    with pytest.raises(ToolError, match="^no such file$"):
        result_output(failed)
