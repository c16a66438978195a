"""One structured-output call to the provider: a JSON answer, validated, retried once.

Prompt-based, so wire-agnostic: the stage's system prompt carries the JSON Schema of the
expected answer and asks for JSON only; no tools, no wire-specific "response format". It works
the same on every wire adapter (OpenAI-compatible, Anthropic, Gemini) and on the Scripted
provider.

The answer is parsed (a surrounding ```json fence is tolerated), validated against the schema
(`jsonschema`), then by the stage's own `check` (what a schema cannot say). A provider error,
an answer that does not parse, violates the schema or fails the check is retried once: the
retry repeats the conversation (the input, the bad answer, a message naming exactly what was
wrong), so the model can correct itself. Still wrong: `MalformedAnswer`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import best_match

from mind.providers.base import (
    Provider,
    ProviderMessage,
    ProviderRequest,
    ProviderResult,
    StreamEvent,
    ThinkingLevel,
)

# An answer's own checks: None when it holds, else what is wrong (shown to the model).
Check = Callable[[Any], str | None]

_FENCE = re.compile(r"^```[a-zA-Z]*\s*\n(.*)\n\s*```$", re.DOTALL)
# Room for a plan of a dozen steps with their purposes.
MAX_OUTPUT_TOKENS = 2048


class MalformedAnswer(Exception):
    """The stage's answer was unusable twice; `category` is safe to log (no model text).

    Internal: the action layer records it as the stage's failed outcome; no client sees it."""

    def __init__(self, stage: str, why: str, category: str) -> None:
        super().__init__(f"{stage}: {why}")
        self.stage = stage
        self.why = why
        self.category = category


@dataclass(frozen=True)
class _Problem:
    why: str
    category: str


@dataclass(frozen=True)
class Stage:
    """One stage's call: its name, system prompt, answer schema and own checks."""

    name: str
    prompt: str
    schema: dict[str, Any]
    check: Check | None = None

    def system(self) -> str:
        schema = json.dumps(self.schema, indent=1, sort_keys=True)
        return (
            f"{self.prompt}\n\nAnswer with one JSON object and nothing else (no prose, no "
            f"code fence), valid against this JSON Schema:\n{schema}"
        )


def _ignore(event: StreamEvent) -> None:
    return None


def parse(text: str) -> Any:
    """The JSON in `text`, without a surrounding code fence; ValueError when it does not
    parse."""
    body = text.strip()
    fenced = _FENCE.match(body)
    if fenced:
        body = fenced.group(1).strip()
    return json.loads(body)


def _problem(stage: Stage, result: ProviderResult) -> tuple[Any, _Problem | None]:
    if result.error is not None:
        kind = result.error.kind.value
        return None, _Problem(
            f"provider error ({kind}): {result.error.message}", f"provider {kind}"
        )
    try:
        value = parse(result.text)
    except ValueError as exc:
        return None, _Problem(f"the answer is not JSON: {exc}", "not JSON")
    error = best_match(Draft202012Validator(stage.schema).iter_errors(value))
    if error is not None:
        where = "/".join(str(part) for part in error.absolute_path) or "the top level"
        return None, _Problem(
            f"the answer violates the schema at {where}: {error.message}", "schema violation"
        )
    why = stage.check(value) if stage.check is not None else None
    if why is not None:
        return None, _Problem(why, "check failed")
    return value, None


async def _call(
    provider: Provider, stage: Stage, messages: list[ProviderMessage]
) -> tuple[Any, _Problem | None, str]:
    """The parsed answer or its problem, and the answer's text."""
    request = ProviderRequest(
        system=stage.system(),
        messages=messages,
        thinking=ThinkingLevel.OFF,
        max_output_tokens=MAX_OUTPUT_TOKENS,
    )
    result = await provider.complete(request, _ignore)
    value, problem = _problem(stage, result)
    return value, problem, result.text


async def ask(provider: Provider, stage: Stage, text: str) -> Any:
    """The stage's validated JSON answer to `text`; MalformedAnswer after a failed retry."""
    first = [ProviderMessage(role="user", text=text)]
    value, problem, answer = await _call(provider, stage, first)
    if problem is None:
        return value
    retry = [
        *first,
        ProviderMessage(role="assistant", text=answer.strip() or "(no answer)"),
        ProviderMessage(
            role="user",
            text=f"Your answer could not be used: {problem.why}. Answer again with the JSON "
            "object only.",
        ),
    ]
    value, problem, _ = await _call(provider, stage, retry)
    if problem is None:
        return value
    raise MalformedAnswer(stage.name, problem.why, problem.category)
