"""One structured-output call to the provider: a JSON answer, validated, retried once.

The request carries the stage's JSON Schema twice: in the system prompt (which asks for JSON
only), and as the request's `output`, which each wire adapter holds the model to as the
model's catalog entry says (`structured_output`: an OpenAI-compatible `response_format`,
Anthropic's forced tool call, Gemini's `responseJsonSchema`; "none": the prompt alone). So the
same stage works on every wire, on a small local model that cannot be held to a schema, and
on the Scripted provider.

The answer is read tolerantly (`candidates`): the whole text, else each fenced block, else
each JSON object found in the prose, in that order; the first candidate valid against the
schema (`jsonschema`) and the stage's own `check` (what a schema cannot say) is the answer. A
provider error, or an answer none of whose candidates holds, is retried once: the retry
repeats the conversation (the input, the bad answer, a message naming exactly what was wrong),
so the model can correct itself. Still wrong: `MalformedAnswer`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from mind.providers.base import (
    OutputSchema,
    Provider,
    ProviderMessage,
    ProviderRequest,
    ProviderResult,
    StreamEvent,
    ThinkingLevel,
)

# An answer's own checks: None when it holds, else what is wrong (shown to the model).
Check = Callable[[Any], str | None]

# A fenced block anywhere in the text: its body.
_FENCE = re.compile(r"```[a-zA-Z]*[ \t]*\n(.*?)```", re.DOTALL)
_DECODER = json.JSONDecoder()
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


def candidates(text: str) -> Iterator[Any]:
    """The JSON values `text` may mean, most likely first: the whole text, each fenced
    block's body, then each JSON object that starts at a `{` of the text (prose around it,
    braces inside its strings and a code fence's markers do not matter)."""
    body = text.strip()
    try:
        yield json.loads(body)
    except ValueError:
        pass
    for fenced in _FENCE.finditer(body):
        try:
            yield json.loads(fenced.group(1))
        except ValueError:
            pass
    start = body.find("{")
    while start != -1:
        try:
            value, end = _DECODER.raw_decode(body, start)
        except ValueError:
            start = body.find("{", start + 1)
            continue
        yield value
        start = body.find("{", end)


def _problem(stage: Stage, result: ProviderResult) -> tuple[Any, _Problem | None]:
    """The first candidate of the answer that holds, or the first candidate's problem."""
    if result.error is not None:
        kind = result.error.kind.value
        return None, _Problem(
            f"provider error ({kind}): {result.error.message}", f"provider {kind}"
        )
    first: _Problem | None = None
    for value in candidates(result.text):
        problem = _invalid(stage, value)
        if problem is None:
            return value, None
        first = first or problem
    return None, first or _Problem("the answer holds no JSON object", "not JSON")


def _invalid(stage: Stage, value: Any) -> _Problem | None:
    from jsonschema import Draft202012Validator  # loaded by the first decision, not at start
    from jsonschema.exceptions import best_match

    error = best_match(Draft202012Validator(stage.schema).iter_errors(value))
    if error is not None:
        where = "/".join(str(part) for part in error.absolute_path) or "the top level"
        return _Problem(
            f"the answer violates the schema at {where}: {error.message}", "schema violation"
        )
    why = stage.check(value) if stage.check is not None else None
    if why is not None:
        return _Problem(why, "check failed")
    return None


async def _call(
    provider: Provider, stage: Stage, messages: list[ProviderMessage]
) -> tuple[Any, _Problem | None, str]:
    """The parsed answer or its problem, and the answer's text."""
    request = ProviderRequest(
        system=stage.system(),
        messages=messages,
        thinking=ThinkingLevel.OFF,
        max_output_tokens=MAX_OUTPUT_TOKENS,
        output=OutputSchema(stage.name, stage.schema),
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
