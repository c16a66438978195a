"""Test adapter: holds secrets its schemas mark through every construct, and shows them by accident.

It logs its whole config at start and raises with it (in `start` when `fail_start` is set, and
in the `leak` action); `session` returns and `notify` emits values its result and content
schemas mark, beside config secrets echoed into free text. `broken_schema` makes it declare an
invalid result or content schema.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from awareness.adapter import Action, Adapter, AdapterContext

log = logging.getLogger(__name__)

TOKEN_ARGS = {
    "type": "object",
    "required": ["token"],
    "properties": {"token": {"type": "string"}},
    "additionalProperties": False,
}
RESULT_SCHEMA = {
    "$defs": {"token": {"type": "string", "x-sensitive": True}},
    "properties": {"session": {"properties": {"token": {"$ref": "#/$defs/token"}}}},
}
CONTENT_SCHEMA = {
    "properties": {"headers": {"patternProperties": {"-token$": {"x-sensitive": True}}}},
}
INVALID_SCHEMA = {"properties": {"token": {"type": "strin"}}}


class SecretiveAdapter(Adapter):
    description = "Holds marked secrets and shows them by accident (tests only)."
    auto_start = True

    def __init__(self, context: AdapterContext) -> None:
        super().__init__(context)
        broken = context.config.get("broken_schema", "")
        self.content_schema = INVALID_SCHEMA if broken == "content" else CONTENT_SCHEMA
        self._result_schema = INVALID_SCHEMA if broken == "result" else RESULT_SCHEMA

    def read_actions(self) -> list[Action]:
        return [
            Action(
                "session",
                "Sign in: the session token is marked, the config password echoed.",
                self._session,
                TOKEN_ARGS,
                result_schema=self._result_schema,
            )
        ]

    def write_actions(self) -> list[Action]:
        return [
            Action(
                "notify",
                "Emit an observation with a marked header and an echoed config secret.",
                self._notify,
                TOKEN_ARGS,
            ),
            Action("leak", "Fail with the whole config in the message.", self._leak),
        ]

    async def start(self) -> None:
        config = json.dumps(self.context.config)
        log.info("secretive starting with config %s", config)
        if self.context.config.get("fail_start"):
            raise RuntimeError(f"cannot sign in with {config}")

    async def _session(self, args: dict[str, Any]) -> dict[str, Any]:
        return {
            "user": self.context.config["login"]["user"],
            "session": {"token": args["token"], "expires_in": 3600},
            "note": f"signed in with {self.context.config['password']}",
        }

    async def _notify(self, args: dict[str, Any]) -> dict[str, Any]:
        observation_id = self.context.emit(
            actor="service",
            trust="high",
            content={
                "from": "ann",
                "headers": {"subject": "hello", "x-session-token": args["token"]},
                "note": f"sent with {self.context.config['headers']['x-api-key']}",
            },
        )
        return {"observation_id": observation_id}

    async def _leak(self, args: dict[str, Any]) -> None:
        raise RuntimeError(f"upstream refused {json.dumps(self.context.config)}")


ADAPTER = SecretiveAdapter
