"""One registered adapter: its code, config, instance and actions."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from awareness.adapter import Action, Adapter
from awareness.config_files import redacted
from awareness.model import Effect


@dataclass
class RegisteredAdapter:
    adapter_id: str
    name: str
    directory: Path
    cls: type[Adapter]
    instance: Adapter
    config: dict[str, Any]
    schema: dict[str, Any]
    auto_start: bool
    conversation_key: str
    read_actions: dict[str, Action] = field(default_factory=dict)
    write_actions: dict[str, Action] = field(default_factory=dict)
    running: bool = False
    # Why the adapter is not running, when start or stop failed (already scrubbed).
    last_error: str = ""
    # False once unregistering has finished: emits are refused from then on.
    accepting: bool = True

    def describe(self) -> dict[str, Any]:
        """The adapter as `list_adapters` shows it; sensitive values masked."""
        return {
            "adapter_id": self.adapter_id,
            "name": self.name,
            "description": self.cls.description,
            "auto_start": self.auto_start,
            "running": self.running,
            "last_error": self.last_error,
            "read_actions": [_action(a, write=False) for a in self.read_actions.values()],
            "write_actions": [_action(a, write=True) for a in self.write_actions.values()],
            "config_schema": self.schema,
            "config": redacted(self.config, self.schema),
        }


def _action(action: Action, *, write: bool) -> dict[str, Any]:
    return {
        "name": action.name,
        "description": action.description,
        "args_schema": action.args_schema,
        "effect": action.effect.value if write else Effect.READ_ONLY.value,
    }
