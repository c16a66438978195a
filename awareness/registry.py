"""One registered adapter: its code, config, instance and actions."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from awareness.adapter import Action, Adapter
from awareness.config_files import redacted
from awareness.model import AdapterState, Effect


@dataclass
class RegisteredAdapter:
    adapter_id: str
    # The adapter's code directory name (`email`) and the configured instance (`email@work`).
    name: str
    instance_name: str
    directory: Path
    cls: type[Adapter]
    instance: Adapter
    config: dict[str, Any]
    schema: dict[str, Any]
    auto_start: bool
    conversation_key: str
    read_actions: dict[str, Action] = field(default_factory=dict)
    write_actions: dict[str, Action] = field(default_factory=dict)
    # Kept by the adapter's supervisor (`awareness.supervisor`).
    state: AdapterState = AdapterState.STOPPED
    state_since: datetime = field(default_factory=lambda: datetime.now(UTC))
    # The last failure (already scrubbed); kept after a successful restart.
    last_error: str = ""
    restarts: int = 0
    next_restart_at: datetime | None = None
    # False once unregistering has finished: emits are refused from then on.
    accepting: bool = True

    @property
    def running(self) -> bool:
        return self.state is AdapterState.RUNNING

    def describe(self) -> dict[str, Any]:
        """The adapter as `list_adapters` shows it; sensitive values masked."""
        return {
            "adapter_id": self.adapter_id,
            "name": self.name,
            "instance": self.instance_name,
            "description": self.cls.description,
            "auto_start": self.auto_start,
            "running": self.running,
            "state": self.state.value,
            "state_since": self.state_since.isoformat(),
            "last_error": self.last_error,
            "restarts": self.restarts,
            "next_restart_at": self.next_restart_at.isoformat() if self.next_restart_at else None,
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
