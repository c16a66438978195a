"""An MCP tool result as the text the model sees; `isError` becomes the tool's error.

Text blocks are kept as they are; structured content is given as JSON when the result has no
text (servers that return both put the same JSON in a text block); an embedded text resource
is its text under its URI; binary content (images, audio, blob resources) and resource links
become a note naming what they were, so the model knows it exists.
"""

from __future__ import annotations

import base64
import binascii
import json

from mcp import types

from hand._tools import ToolError


def _size(data: str) -> int:
    try:
        return len(base64.b64decode(data, validate=True))
    except (binascii.Error, ValueError):
        return len(data)


def _block(block: types.ContentBlock) -> str:
    if isinstance(block, types.TextContent):
        return block.text
    if isinstance(block, types.ImageContent):
        return f"[image: {block.mime_type}, {_size(block.data)} bytes]"
    if isinstance(block, types.AudioContent):
        return f"[audio: {block.mime_type}, {_size(block.data)} bytes]"
    if isinstance(block, types.EmbeddedResource):
        resource = block.resource
        if isinstance(resource, types.TextResourceContents):
            return f"[resource {resource.uri}]\n{resource.text}"
        kind = resource.mime_type or "binary"
        return f"[resource {resource.uri}: {kind}, {_size(resource.blob)} bytes]"
    return f"[resource link {block.name}: {block.uri}]"


def result_text(result: types.CallToolResult) -> str:
    """The model's view of a result; raises ToolError with that view when `isError` is set."""
    parts = [_block(block) for block in result.content]
    has_text = any(isinstance(block, types.TextContent) for block in result.content)
    if result.structured_content is not None and not has_text:
        parts.insert(0, json.dumps(result.structured_content, ensure_ascii=False))
    text = "\n\n".join(parts)
    if result.is_error:
        raise ToolError(text or "the MCP tool reported an error")
    return text
