"""What the fake local servers share: a tokenizer, the "model" that answers, and request reading.

The tokenizer is deterministic so a test can predict every count: a text costs
ceil(utf-8 bytes / 4) tokens; each message adds `MESSAGE_TOKENS` for the chat template's role
markers and the prompt ends with `REPLY_PRIMER` tokens opening the assistant's turn (as a
template's `add_generation_prompt` does); the JSON of `tools` is counted like text, because
every one of these servers renders the tool schemas into the prompt. Images count
`IMAGE_TOKENS` each, the order of one CLIP embedding block.

The model behaves like a small local one: asked for structured output in a form its server
honours, it answers a JSON value valid against the schema (checked with `jsonschema`); asked
nothing, it answers prose, whatever the system prompt begs for. It never calls tools.
"""

from __future__ import annotations

import json
import math
from typing import Any

import jsonschema

MESSAGE_TOKENS = 4
REPLY_PRIMER = 3
IMAGE_TOKENS = 256
PROSE = (
    "Here is a plain answer in prose, the way a small local model writes it even when it "
    "was asked for JSON. It talks about the question, repeats itself a little, and ends. "
)


def text_tokens(text: str) -> int:
    return math.ceil(len(text.encode("utf-8")) / 4)


def content_tokens(content: Any) -> int:
    """A message's `content`: a string, or OpenAI content parts (text and images)."""
    if isinstance(content, str):
        return text_tokens(content)
    if isinstance(content, list):
        total = 0
        for part in content:
            if not isinstance(part, dict):
                continue
            if part.get("type") == "text":
                total += text_tokens(str(part.get("text", "")))
            elif part.get("type") in ("image_url", "input_image"):
                total += IMAGE_TOKENS
        return total
    return 0


def message_tokens(message: dict[str, Any]) -> int:
    total = MESSAGE_TOKENS + content_tokens(message.get("content"))
    if message.get("tool_calls"):
        total += text_tokens(json.dumps(message["tool_calls"]))
    return total


def prompt_tokens(messages: list[dict[str, Any]], tools: Any = None) -> int:
    """The prompt a request's messages and tools render to, in tokens."""
    total = REPLY_PRIMER + sum(message_tokens(m) for m in messages if isinstance(m, dict))
    if tools:
        total += text_tokens(json.dumps(tools))
    return total


def prose(chars: int) -> str:
    """`chars` characters of deterministic ASCII prose."""
    return (PROSE * (chars // len(PROSE) + 1))[:chars]


def clip_to_tokens(text: str, tokens: int) -> str:
    """The first `tokens` tokens of ASCII `text` (4 characters each)."""
    return text[: max(tokens, 0) * 4]


def json_answer(schema: dict[str, Any] | None) -> str:
    """The smallest JSON value the schema allows; `{}` for JSON mode without a schema."""
    if schema is None:
        return "{}"
    value = _value(schema, schema)
    jsonschema.validate(value, schema)
    return json.dumps(value)


def _resolve(schema: dict[str, Any], root: dict[str, Any]) -> dict[str, Any]:
    ref = schema.get("$ref")
    if not isinstance(ref, str) or not ref.startswith("#/"):
        return schema
    target: Any = root
    for part in ref[2:].split("/"):
        target = target[part]
    return _resolve(target, root)


def _value(schema: Any, root: dict[str, Any]) -> Any:
    if not isinstance(schema, dict):
        return None
    schema = _resolve(schema, root)
    if "const" in schema:
        return schema["const"]
    if schema.get("enum"):
        return schema["enum"][0]
    for key in ("anyOf", "oneOf"):
        if schema.get(key):
            return _value(schema[key][0], root)
    if schema.get("allOf"):
        merged: dict[str, Any] = {}
        for part in schema["allOf"]:
            merged.update(_resolve(part, root))
        return _value(merged, root)
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = kind[0] if kind else None
    if kind is None:
        kind = "object" if "properties" in schema else None
    if kind == "object":
        properties = schema.get("properties", {})
        return {name: _value(properties.get(name, {}), root) for name in schema.get("required", [])}
    if kind == "array":
        return [_value(schema.get("items", {}), root) for _ in range(schema.get("minItems", 0))]
    if kind == "string":
        return "x" * schema.get("minLength", 0)
    if kind in ("integer", "number"):
        low = schema.get("minimum", schema.get("exclusiveMinimum", -1) + 1)
        return max(0, low) if "maximum" not in schema else min(max(0, low), schema["maximum"])
    if kind == "boolean":
        return False
    return None
