"""The Scripted provider's script: a validated description of model responses.

A script lists `runs`. The run to play is the first whose `match` (a regular expression,
searched) matches the user message that started the run — the last user message of the
request that is not a platform note. Within it, the step played is the provider call index
inside the run: the number of assistant messages after that user message. Both are derived
from the request alone, so any number of conversations can play one script at once.

A request from the compaction engine (its system prompt is the summariser's) is answered by the
first of `summaries` whose `match` is found in its input, else with a digest of the person's
messages in it. With a model entry (`[provider] model` naming a `[[provider.models]]` entry),
the provider reports prompt tokens (UTF-8 bytes / 4, plus 4 per message) and refuses, as a
real one does, a request whose prompt plus requested output exceeds the context window, with
error kind `context_overflow`.

Images: the model sees them only when its model entry says `vision = true`; otherwise (no
entry, or `vision = false`) each image reaches it as the text
`[image: the current model cannot see images]`, as with a real adapter. `expect: {images: N}`
checks how many images the last message (before platform notes) carries as the model sees
them: 0 for a blind model, whose `last_contains` then finds the placeholder.
`expect: {start_images: N}` counts them on the message that started the run instead, which
for a run an observation started is its platform note.
`expect: {request_contains: [...], request_excludes: [...]}` search the whole request (system
prompt, texts, thinking, tool-call arguments).

The decision layer's structured calls (`mind.actions`; recognised by their system prompt's
first line) are answered by `decisions`: the first rule of the request's `stage` (`extract`,
`evaluate` or `plan`) whose `match` is found in the stage's input (the request's first
message: the input text, the recent conversation, the pending actions, the tendency or the
action being planned) plays its answer number i for attempt i, counted as the assistant
messages in the request (a retry carries the bad answer), so a rule can script a malformed
first answer and a valid second one, or two malformed ones. An answer is JSON text (played
as it is, valid or not) or an object (played as JSON). With no matching rule, `extract`
answers `{"tendencies": [], "pending": []}` (ordinary chat) and `evaluate` and `plan` answer
a protocol error, which the layer counts as a malformed answer.

```yaml
decisions:
  - stage: extract
    match: "turn the heating off"
    answers:
      - "this is not JSON"                      # attempt 1: malformed
      - {tendencies: [{goal: "Turn the heating off", evidence: "turn the heating off"}],
         pending: []}
  - stage: evaluate
    match: "heating"
    answers: [{verdict: confirm, timing: immediate, title: "Heating off",
               reason: "changes the house", actions: [heating_set]}]
  - stage: plan
    match: "Heating off"
    answers: [{steps: [{order: 1, action: heating_set, purpose: "off", after: []}]}]
```

```yaml
summaries:
  - {match: "secret plan", error: "refused", error_kind: request}
runs:
  - match: "what time"
    steps:
      - thinking: "The user wants the time."
        text: "Let me look."
        chunks: 3                 # stream the text as 3 deltas
        tool_calls:
          - name: current_time
            arguments: {timezone: "Europe/Paris"}
      - expect: {last_role: tool, last_contains: "utc", tools_exclude: [wait]}
        text: "Done."
  - match: "what is in this picture"
    steps:
      - expect: {last_role: user, images: 1}
        text: "A cat."
  - match: ".*"
    steps:
      - {delay: 0.5, error: "upstream overloaded", error_kind: unavailable}
```
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError, model_validator

from mind.providers.base import ErrorKind, StopReason


class ScriptError(ValueError):
    """The script file is missing, does not parse or does not validate."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ScriptedToolCall(_Strict):
    name: str = Field(min_length=1)
    # Exactly one of them: a JSON object, or raw text sent as the arguments (may be invalid).
    arguments: dict[str, Any] | None = None
    raw_arguments: str | None = None
    # Arguments copied from the JSON object the last message holds (a tool's result): argument
    # name -> the object's key, e.g. {widget_id: widget_id} for an id only the result knows.
    # One the result lacks is left out.
    arguments_from_last: dict[str, str] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _one_form(self) -> ScriptedToolCall:
        if self.arguments is not None and self.raw_arguments is not None:
            raise ValueError("give either `arguments` or `raw_arguments`, not both")
        if self.arguments_from_last and self.raw_arguments is not None:
            raise ValueError("`arguments_from_last` adds to `arguments`, not to `raw_arguments`")
        return self

    def raw(self, last_text: str = "") -> str:
        if self.raw_arguments is not None:
            return self.raw_arguments
        arguments = dict(self.arguments or {})
        if self.arguments_from_last:
            try:
                found = json.loads(last_text)
            except json.JSONDecodeError:
                found = None
            if isinstance(found, dict):
                arguments |= {
                    name: found[key]
                    for name, key in self.arguments_from_last.items()
                    if key in found
                }
        return json.dumps(arguments, separators=(",", ":"))


class Expectation(_Strict):
    """Checks on the request; the first failure ends the step with stop reason `error`."""

    # Role of the last message before the current-time note: user, assistant or tool.
    last_role: Literal["user", "assistant", "tool"] | None = None
    last_contains: str | None = None
    last_is_error: bool | None = None
    system_contains: str | None = None
    # Images the last message carries as the model sees them (0 when it cannot see images).
    images: int | None = Field(default=None, ge=0)
    # The same for the message that started the run: a person's, or an observation note.
    start_images: int | None = Field(default=None, ge=0)
    tools_include: list[str] = Field(default_factory=list)
    # Tools that must not be offered (a profile or an active Hand left them out).
    tools_exclude: list[str] = Field(default_factory=list)
    # Texts that must (or must not) appear anywhere in the request: the system prompt, and
    # every message's text, thinking and tool-call arguments (e.g. that a sensitive turn's
    # values are gone from a later turn's history).
    request_contains: list[str] = Field(default_factory=list)
    request_excludes: list[str] = Field(default_factory=list)


class ScriptedStep(_Strict):
    text: str = ""
    # Deltas the text (and thinking) is streamed in.
    chunks: int = Field(default=1, ge=1)
    thinking: str = ""
    tool_calls: list[ScriptedToolCall] = Field(default_factory=list)
    # Seconds to wait before answering (cancellable).
    delay: float = Field(default=0.0, ge=0)
    error: str | None = None
    error_kind: ErrorKind = ErrorKind.STREAM
    stop_reason: StopReason | None = None
    expect: Expectation | None = None


def _compiles(value: str) -> str:
    try:
        re.compile(value)
    except re.error as exc:
        raise ValueError(f"`match` is not a valid regular expression: {exc}") from exc
    return value


# A `match`: a regular expression, checked when the script is read.
Pattern = Annotated[str, AfterValidator(_compiles)]


class ScriptedRun(_Strict):
    match: Pattern
    steps: list[ScriptedStep] = Field(min_length=1)


class ScriptedSummary(_Strict):
    """How a summarising request (a compaction's) is answered, when `match` (a regular
    expression) is found in its input; `text` None means the built-in digest."""

    match: Pattern = ""
    text: str | None = None
    delay: float = Field(default=0.0, ge=0)
    error: str | None = None
    error_kind: ErrorKind = ErrorKind.STREAM


class ScriptedDecision(_Strict):
    """How the decision layer's structured calls of one stage are answered (see above)."""

    stage: Literal["extract", "evaluate", "plan"]
    match: Pattern = ""
    answers: list[str | dict[str, Any]] = Field(min_length=1)

    def answer(self, attempt: int) -> str | None:
        """The text played for `attempt` (0-based); None past the last answer."""
        if attempt >= len(self.answers):
            return None
        answer = self.answers[attempt]
        return answer if isinstance(answer, str) else json.dumps(answer)


class Script(_Strict):
    runs: list[ScriptedRun] = Field(min_length=1)
    summaries: list[ScriptedSummary] = Field(default_factory=list)
    decisions: list[ScriptedDecision] = Field(default_factory=list)

    def decision_for(self, stage: str, text: str) -> ScriptedDecision | None:
        for rule in self.decisions:
            if rule.stage == stage and re.search(rule.match, text):
                return rule
        return None

    def summary_for(self, text: str) -> ScriptedSummary:
        for summary in self.summaries:
            if re.search(summary.match, text):
                return summary
        return ScriptedSummary()

    def run_for(self, message: str) -> tuple[int, ScriptedRun] | None:
        for index, run in enumerate(self.runs):
            if re.search(run.match, message):
                return index, run
        return None


def parse_script(text: str, source: str) -> Script:
    """Parse YAML (a superset of JSON) and validate; ScriptError names `source` and the problem."""
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ScriptError(f"{source}: not valid YAML/JSON: {exc}") from exc
    if not isinstance(data, dict):
        raise ScriptError(f"{source}: the script must be a mapping with a `runs` list")
    try:
        return Script.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc']) or '<root>'}: {err['msg']}"
            for err in exc.errors()
        )
        raise ScriptError(f"{source}: invalid script: {problems}") from exc


def load_script(path: Path) -> Script:
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise ScriptError(f"{path}: cannot read the script: {exc.strerror or exc}") from exc
    return parse_script(text, str(path))
