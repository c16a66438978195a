"""The Awareness adapters' health as the Mind last read it, for status and doctor."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime


@dataclass(frozen=True)
class AdapterHealth:
    """One Awareness adapter's health, as Awareness reports it."""

    instance: str
    adapter_id: str
    state: str
    last_error: str
    restarts: int
    next_restart_at: datetime | None


@dataclass(frozen=True)
class AdapterReport:
    adapters: tuple[AdapterHealth, ...] = ()
    # Why the adapters could not be read; "" when they were (or Awareness is not configured).
    error: str = ""
