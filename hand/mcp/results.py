"""An MCP tool result as what the model gets; `isError` becomes the tool's error.

Text blocks are kept as they are; structured content is given as JSON when the result has no
text (servers that return both put the same JSON in a text block); an embedded text resource
is its text under its URI. Images (image content, and embedded blob resources of an image
type) travel as the result's images, each also named in the text where it stood so the model
knows the order; audio, other binary resources and resource links become a note naming what
they were. Bytes that are not valid base64 stay a note: the Mind checks the images it gets.
"""

from __future__ import annotations

import base64
import binascii
import json

from mcp import types

from hand._tools import ToolError, ToolOutput


def _decoded(data: str) -> bytes | None:
    try:
        return base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        return None


def _size(data: str) -> int:
    decoded = _decoded(data)
    return len(data) if decoded is None else len(decoded)


def _block(block: types.ContentBlock, images: list[tuple[str, bytes]]) -> str:
    if isinstance(block, types.TextContent):
        return block.text
    if isinstance(block, types.ImageContent):
        return _image(block.mime_type, block.data, images)
    if isinstance(block, types.AudioContent):
        return f"[audio: {block.mime_type}, {_size(block.data)} bytes]"
    if isinstance(block, types.EmbeddedResource):
        resource = block.resource
        if isinstance(resource, types.TextResourceContents):
            return f"[resource {resource.uri}]\n{resource.text}"
        kind = resource.mime_type or "binary"
        if kind.startswith("image/"):
            return f"[resource {resource.uri}] " + _image(kind, resource.blob, images)
        return f"[resource {resource.uri}: {kind}, {_size(resource.blob)} bytes]"
    return f"[resource link {block.name}: {block.uri}]"


def _image(media_type: str, data: str, images: list[tuple[str, bytes]]) -> str:
    decoded = _decoded(data)
    if decoded is None:
        return f"[image: {media_type}, not valid base64]"
    images.append((media_type, decoded))
    return f"[image {len(images)}: {media_type}, {len(decoded)} bytes]"


def result_output(result: types.CallToolResult) -> ToolOutput:
    """The model's view of a result; raises ToolError with its text when `isError` is set."""
    images: list[tuple[str, bytes]] = []
    parts = [_block(block, images) for block in result.content]
    has_text = any(isinstance(block, types.TextContent) for block in result.content)
    if result.structured_content is not None and not has_text:
        parts.insert(0, json.dumps(result.structured_content, ensure_ascii=False))
    text = "\n\n".join(parts)
    if result.is_error:
        raise ToolError(text or "the MCP tool reported an error")
    return ToolOutput(text, images)
