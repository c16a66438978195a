"""A transport's `TransportState` in a dict: a restart is a new transport on the same object."""

from __future__ import annotations


class MemoryState:
    def __init__(self) -> None:
        self.values: dict[str, str] = {}

    def get(self, key: str) -> str | None:
        return self.values.get(key)

    def put(self, key: str, value: str) -> None:
        self.values[key] = value
