"""Test adapter: emits observations on demand so tests choose trust, actor, media and source;
`reply` is a write action with a declared effect that records what it sent in data/."""

from __future__ import annotations

import base64
import logging
from pathlib import Path
from typing import Any

from awareness.adapter import Action, ActionFailed, Adapter, Effect, MediaInput

log = logging.getLogger(__name__)


class ProbeAdapter(Adapter):
    description = "Emits observations on demand (tests only)."
    auto_start = True

    def read_actions(self) -> list[Action]:
        return [Action("settings", "The non-sensitive settings.", self._settings)]

    def write_actions(self) -> list[Action]:
        return [
            Action(
                "emit",
                "Emit one observation.",
                self._emit,
                {
                    "type": "object",
                    "required": ["trust"],
                    "properties": {
                        "trust": {"enum": ["off", "low", "medium", "high", "max"]},
                        "actor": {"type": "string"},
                        "content": {"type": "object"},
                        "attachments": {"type": "array"},
                        "source_key": {"type": "string"},
                        "source_title": {"type": "string"},
                    },
                },
            ),
            Action(
                "reply",
                "Send a reply (recorded in data/replies.txt, one line each).",
                self._reply,
                {
                    "type": "object",
                    "required": ["text"],
                    "properties": {"text": {"type": "string"}},
                    "additionalProperties": False,
                },
                effect=Effect.EXTERNAL_SIDE_EFFECT,
            ),
            Action("leak", "Fail with the API key in the message.", self._leak),
            Action(
                "write_data",
                "Write a file at a path relative to data/.",
                self._write_data,
                {
                    "type": "object",
                    "required": ["path"],
                    "properties": {"path": {"type": "string"}},
                },
            ),
            Action(
                "echo_media",
                "Return the resolved media (path and bytes as base64).",
                self._echo_media,
                {"type": "object", "properties": {"media": {"type": "array"}}},
            ),
        ]

    async def start(self) -> None:
        log.info("probe starting with api key %s", self.context.config["api_key"])

    async def _settings(self, args: dict[str, Any]) -> dict[str, Any]:
        return {"greeting": self.context.config["greeting"]}

    async def _emit(self, args: dict[str, Any]) -> dict[str, Any]:
        media = [
            MediaInput(filename=m["filename"], data=base64.b64decode(m["data_base64"]))
            for m in args.get("attachments", [])
        ]
        observation_id = self.context.emit(
            actor=args.get("actor", "service"),
            trust=args["trust"],
            content=args.get("content", {}),
            media=media,
            source_key=args.get("source_key", ""),
            source_title=args.get("source_title", ""),
        )
        return {"observation_id": observation_id}

    async def _reply(self, args: dict[str, Any]) -> dict[str, Any]:
        with self.context.data_path("replies.txt").open("a") as replies:
            replies.write(args["text"] + "\n")
        return {"sent": args["text"]}

    async def _leak(self, args: dict[str, Any]) -> None:
        raise RuntimeError(f"upstream refused key {self.context.config['api_key']}")

    async def _write_data(self, args: dict[str, Any]) -> dict[str, Any]:
        path = self.context.data_path(args["path"])
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("probe")
        return {"written": str(path)}

    async def _echo_media(self, args: dict[str, Any]) -> dict[str, Any]:
        if not args.get("media"):
            raise ActionFailed("no media")
        return {
            "media": [
                {**m, "data_base64": base64.b64encode(Path(m["path"]).read_bytes()).decode()}
                for m in args["media"]
            ]
        }


ADAPTER = ProbeAdapter
