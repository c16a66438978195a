"""Webhook inbox: authenticated JSON posts on loopback become observations.

Request: `POST /` with `Authorization: Bearer <secret>` and a JSON object body. Every field but
`media` becomes the observation's content. `media` is an optional list of
`{"filename": str, "data_base64": str}`; each file is stored by the media pipeline and reaches
the agent as a MediaRef. Trust and actor come from the config, never from the sender.
Responses: 202 `{"id": <observation id>}`, 400 bad body, 401 bad token, 413 too large.

Replies (`reply` write action) are recorded under `data/outbox/<id>/` with copies of their
media files, and POSTed to `callback_url` when one is configured.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import hmac
import json
import logging
import threading
import uuid
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from awareness.adapter import Action, ActionFailed, Adapter, AdapterContext, MediaInput

MIN_SECRET_LENGTH = 16
log = logging.getLogger(__name__)


class BadRequest(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


class WebhookAdapter(Adapter):
    description = "HTTP inbox on loopback: authenticated JSON posts become observations."
    auto_start = False

    def __init__(self, context: AdapterContext) -> None:
        super().__init__(context)
        self.config = context.config
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    def read_actions(self) -> list[Action]:
        return [
            Action("endpoint", "The URL the inbox listens on (while running).", self._endpoint),
            Action(
                "outbox",
                "Replies recorded so far, newest first.",
                self._outbox,
                {
                    "type": "object",
                    "additionalProperties": False,
                    "properties": {"limit": {"type": "integer", "minimum": 1, "maximum": 200}},
                },
            ),
        ]

    def write_actions(self) -> list[Action]:
        return [
            Action(
                "reply",
                "Send a reply (text and optional media refs) back through the webhook.",
                self._reply,
                {
                    "type": "object",
                    "additionalProperties": False,
                    "required": ["text"],
                    "properties": {
                        "text": {"type": "string"},
                        "in_reply_to": {"type": "string"},
                        "media": {
                            "type": "array",
                            "items": {"type": "string", "pattern": "^media:[0-9a-f]{64}$"},
                        },
                    },
                },
            )
        ]

    # -- inbox ----------------------------------------------------------------------------

    async def start(self) -> None:
        if len(self.config["secret"]) < MIN_SECRET_LENGTH:
            raise ValueError(
                f"config field secret must be set to at least {MIN_SECRET_LENGTH} characters"
            )
        handler = type("Handler", (_InboxHandler,), {"adapter": self})
        self._server = ThreadingHTTPServer((self.config["host"], self.config["port"]), handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, name="webhook-inbox", daemon=True
        )
        self._thread.start()

    async def stop(self) -> None:
        if self._server is None:
            return
        # shutdown() blocks until serve_forever returns; keep the event loop free meanwhile,
        # because a request being handled may be waiting on the loop to accept its emit.
        await asyncio.to_thread(self._server.shutdown)
        self._server.server_close()
        self._server = None

    def accept(self, authorization: str, body: bytes) -> str:
        """Authenticate and turn one posted body into an observation; returns its id."""
        expected = f"Bearer {self.config['secret']}".encode()
        if not hmac.compare_digest(authorization.encode(), expected):
            raise BadRequest(401, "missing or wrong bearer token")
        try:
            payload = json.loads(body)
        except (json.JSONDecodeError, UnicodeDecodeError):
            raise BadRequest(400, "body is not JSON") from None
        if not isinstance(payload, dict):
            raise BadRequest(400, "body must be a JSON object")
        media = [_media_input(item) for item in payload.pop("media", None) or []]
        return self.context.emit(
            actor=self.config["actor"],
            trust=self.config["trust"],
            content=payload,
            media=media,
        )

    # -- actions --------------------------------------------------------------------------

    async def _endpoint(self, args: dict[str, Any]) -> dict[str, Any]:
        if self._server is None:
            raise ActionFailed("the webhook inbox is not running")
        host, port = self._server.server_address[:2]
        # An AF_INET server's host is a str; the stubs allow the bytes a caller may bind to.
        return {"url": f"http://{host}:{port}/"}  # type: ignore[str-bytes-safe]

    async def _outbox(self, args: dict[str, Any]) -> dict[str, Any]:
        root = self.context.data_path("outbox")
        records = sorted(root.glob("*/message.json"), key=lambda p: p.stat().st_mtime, reverse=True)
        limit = args.get("limit", 20)
        return {"replies": [json.loads(p.read_text()) for p in records[:limit]]}

    async def _reply(self, args: dict[str, Any]) -> dict[str, Any]:
        reply_id = uuid.uuid4().hex
        folder = self.context.data_path("outbox", reply_id)
        folder.mkdir(parents=True)
        files = []
        for index, item in enumerate(args.get("media", [])):
            name = f"{index}-{Path(item['filename'] or 'media').name}"
            target = self.context.data_path("outbox", reply_id, name)
            target.write_bytes(Path(item["path"]).read_bytes())
            files.append({"ref": item["ref"], "filename": name, "mime_type": item["mime_type"]})
        record = {
            "id": reply_id,
            "text": args["text"],
            "in_reply_to": args.get("in_reply_to", ""),
            "media": files,
            "sent_at": datetime.now(UTC).isoformat(),
        }
        self.context.data_path("outbox", reply_id, "message.json").write_text(json.dumps(record))
        if self.config.get("callback_url"):
            await self._post_callback(record, folder)
        return {"reply_id": reply_id, "media": files}

    async def _post_callback(self, record: dict[str, Any], folder: Path) -> None:
        body = {
            **record,
            "media": [{**m, "data_base64": _b64(folder / m["filename"])} for m in record["media"]],
        }
        headers = {}
        if self.config.get("callback_token"):
            headers["Authorization"] = f"Bearer {self.config['callback_token']}"
        import httpx  # loaded by the first callback, not with Awareness

        async with httpx.AsyncClient(timeout=30) as client:
            try:
                response = await client.post(
                    self.config["callback_url"], json=body, headers=headers
                )
            except httpx.HTTPError as exc:
                raise ActionFailed(
                    f"reply recorded but the callback failed: {type(exc).__name__}"
                ) from None
        if response.status_code >= 300:
            raise ActionFailed(
                f"reply recorded but the callback answered HTTP {response.status_code}"
            )


def _b64(path: Path) -> str:
    return base64.b64encode(path.read_bytes()).decode()


def _media_input(item: Any) -> MediaInput:
    if not isinstance(item, dict) or not isinstance(item.get("data_base64"), str):
        raise BadRequest(400, "each media item needs filename and data_base64")
    try:
        data = base64.b64decode(item["data_base64"], validate=True)
    except binascii.Error:
        raise BadRequest(400, "media data_base64 is not valid base64") from None
    return MediaInput(filename=str(item.get("filename") or "upload"), data=data)


class _InboxHandler(BaseHTTPRequestHandler):
    adapter: WebhookAdapter

    def do_POST(self) -> None:
        try:
            length = int(self.headers.get("Content-Length") or 0)
            if length > self.adapter.config["max_body_bytes"]:
                raise BadRequest(413, "body too large")
            body = self.rfile.read(length)
            observation_id = self.adapter.accept(self.headers.get("Authorization", ""), body)
        except BadRequest as exc:
            self._answer(exc.status, {"error": str(exc)})
            return
        except Exception:
            # Through logging, whose handlers scrub secrets (socketserver would print raw).
            log.exception("webhook post failed")
            self._answer(500, {"error": "the observation could not be accepted"})
            return
        self._answer(202, {"id": observation_id})

    def _answer(self, status: int, payload: dict[str, Any]) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:
        """Request lines are not logged: they would go to stderr unfiltered."""


ADAPTER = WebhookAdapter
