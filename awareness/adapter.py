"""The adapter contract: what a module under an adapters root must provide.

An adapter is a directory `<root>/<name>/` holding

- `adapter.py`, the entry module, with a module attribute `ADAPTER`: a subclass of `Adapter`;
- `config.default.json`, a runnable default configuration (tracked);
- `config.schema.json`, a JSON Schema (draft 2020-12) of the configuration with a
  `description` per field and `"x-sensitive": true` on the subschemas whose values must never
  be shown (tracked). A mark counts wherever it sits (behind `$ref`, in any `allOf`/`anyOf`/
  `oneOf` or `if`/`then`/`else` branch, under `patternProperties`…; `awareness.sensitive`);
  a marked object or array is hidden whole. References must point into the schema itself.

plus any modules it imports. The code directory is only read (it may be read-only, e.g. inside
an installed package). Each configured instance of an adapter has an instance directory
`<awareness data dir>/adapters/<instance>/` (`awareness.instances`), where `<instance>` is the
adapter's name for its default instance and `<name>@<label>` for more (two mail accounts:
`email@work`, `email@home`), holding

- `config.json`, the instance configuration, created atomically from the default on first
  instantiation and validated against the schema;
- `data/`, the only place the adapter writes runtime files; use `AdapterContext.data_path`,
  which refuses paths outside it.

Config keys the engine itself reads (declare them in the schema when used):
`auto_start` (bool, overrides the class default) and `conversation` (string: the conversation
key observations are routed to; empty or absent means the owner's default conversation).

Actions are `Action` objects: a name, a description, a JSON Schema for `args` (validated before
the handler runs), the effect class of running it (read actions are read-only; a write action
declares `workspace_write` or `external_side_effect`, the default) and an async handler taking
the args dict and returning a JSON-serialisable value (reported as `result`; values its
optional `result_schema` marks `x-sensitive` are masked, and so is a sensitive config value
inside any string of it; emitted `content` likewise). Raise `ActionFailed` to report an error
to the agent. Write actions receive `args["media"]` already resolved: each
`media:<sha256>` ref becomes a dict `{ref, path, mime_type, size_bytes, width, height,
filename}` whose `path` is the stored file.

Adapters whose sources send HTML turn it into text with `tobe.html_text.html_to_text`.

Lifecycle, supervised by the engine (`awareness.supervisor`): `start` connects and prepares
(bounded by `[awareness] start_timeout`); then `run`, when the adapter defines it, is the
adapter's long-lived work (a receive loop) as one task; `stop` ends every task or thread the
adapter started (bounded by `stop_timeout`). A `start` or `run` that raises, a `run` that
returns while the adapter should be running, or a `context.fail(error)` from a callback or a
thread marks the adapter failed: it is stopped and started again after a backoff delay
(1 s doubling to 30 s), so an adapter reconnects by failing. `start`, `run` and `stop` are
awaited on the engine's event loop; `AdapterContext.emit` and `fail` may be called from the loop
or from any thread.
"""

from __future__ import annotations

import json
import os
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from awareness.errors import DataPathError
from awareness.model import Actor, Effect, Trust

__all__ = [
    "Action",
    "ActionFailed",
    "Actor",
    "Adapter",
    "AdapterContext",
    "Effect",
    "MediaInput",
    "Trust",
]

ActionHandler = Callable[[dict[str, Any]], Awaitable[Any]]


@dataclass(frozen=True)
class Action:
    name: str
    description: str
    handler: ActionHandler
    # JSON Schema of the args object.
    args_schema: dict[str, Any] = field(
        default_factory=lambda: {"type": "object", "properties": {}, "additionalProperties": False}
    )
    # What running it changes; ignored for read actions (always read-only).
    effect: Effect = Effect.EXTERNAL_SIDE_EFFECT
    # JSON Schema of the result; only its `x-sensitive` marks are used (those values masked).
    # Checked at registration: an invalid one, or one referring outside itself, is refused.
    result_schema: dict[str, Any] | None = None


@dataclass(frozen=True)
class MediaInput:
    """Inbound media handed to `emit`: either bytes or a readable file."""

    filename: str
    data: bytes | None = None
    path: Path | None = None


class ActionFailed(Exception):
    """Raised by an action handler; its message is shown to the agent as the error."""


class Emitter(Protocol):
    def __call__(
        self,
        *,
        actor: Actor,
        trust: Trust,
        content: dict[str, Any],
        media: Sequence[MediaInput],
        conversation_key: str | None,
        source_key: str,
        source_title: str,
    ) -> str: ...


class FailureReporter(Protocol):
    def __call__(self, error: BaseException | str) -> None: ...


class AdapterContext:
    """What the engine hands an adapter: its identity, config, data directory, `emit` and `fail`.

    `directory` is the adapter's code directory (read it, never write it); `data_dir` is the
    `data/` of its instance directory under the Awareness data directory. `instance_name` is
    the configured instance (`email@work`), `adapter_name` its code directory's name.
    """

    def __init__(
        self,
        *,
        adapter_id: str,
        adapter_name: str,
        directory: Path,
        instance_dir: Path,
        config: dict[str, Any],
        emitter: Emitter,
        failure_reporter: FailureReporter,
        instance_name: str = "",
    ) -> None:
        self.adapter_id = adapter_id
        self.adapter_name = adapter_name
        self.instance_name = instance_name or adapter_name
        self.directory = directory
        self.config = config
        self.data_dir = instance_dir / "data"
        self._emitter = emitter
        self._failure_reporter = failure_reporter

    def data_path(self, *parts: str) -> Path:
        """A path inside this adapter's `data/`; raises DataPathError for anything outside it."""
        self.data_dir.mkdir(parents=True, exist_ok=True)
        root = self.data_dir.resolve()
        candidate = root.joinpath(*parts).resolve()
        if candidate != root and root not in candidate.parents:
            shown = "/".join(parts)
            raise DataPathError(f"path {shown!r} is outside the adapter's data/ directory")
        return candidate

    def load_json(self, name: str) -> Any | None:
        """The JSON document an adapter keeps in `data/<name>`; None before the first save."""
        try:
            return json.loads(self.data_path(name).read_text())
        except FileNotFoundError:
            return None

    def save_json(self, name: str, document: Any) -> None:
        """Replace `data/<name>` with `document` whole (a crash leaves the old or the new)."""
        target = self.data_path(name)
        temp = self.data_path(f"{name}.tmp")
        temp.write_text(json.dumps(document, indent=1))
        os.replace(temp, target)

    def emit(
        self,
        *,
        actor: Actor | str,
        trust: Trust | str,
        content: dict[str, Any],
        media: Sequence[MediaInput] = (),
        conversation_key: str | None = None,
        source_key: str = "",
        source_title: str = "",
    ) -> str:
        """Hand an observation to the engine; returns its id.

        When this returns the observation is committed to the journal: a HIGH/MAX one
        published, a LOW/MEDIUM one held until its aggregation window publishes it (after a
        crash, at the next start); OFF observations are dropped by the engine. `source_key`
        names the source within this instance (a chat id, a mailbox, a feed URL): the Mind
        keeps each source's observations in a conversation of their own, titled
        `source_title`. Values the adapter's `content_schema` marks `x-sensitive` are masked.
        """
        return self._emitter(
            actor=Actor(actor),
            trust=Trust(trust),
            content=content,
            media=media,
            conversation_key=conversation_key,
            source_key=source_key,
            source_title=source_title,
        )

    def fail(self, error: BaseException | str) -> None:
        """Report that the adapter stopped working (a lost connection seen by a callback or a
        thread): the engine stops it and starts it again after a backoff delay."""
        self._failure_reporter(error)


class Adapter:
    """Base class of adapters; subclasses override what they need."""

    description: str = ""
    auto_start: bool = False
    # JSON Schema of emitted `content`; only its `x-sensitive` marks are used (values masked).
    # Checked at registration like `Action.result_schema`.
    content_schema: dict[str, Any] | None = None

    def __init__(self, context: AdapterContext) -> None:
        self.context = context

    def read_actions(self) -> Sequence[Action]:
        return ()

    def write_actions(self) -> Sequence[Action]:
        return ()

    async def start(self) -> None:
        """Connect and begin listening; raise to fail (the engine retries with backoff)."""

    async def stop(self) -> None:
        """Stop listening; must end every task or thread `start` began."""

    # Optional: `async def run(self) -> None`, the adapter's long-lived work, started after
    # `start` as one supervised task (see the module docstring). Not defined here, so the
    # engine can tell the adapters that have one.
