"""The shipped adapters (webhook, clock, files), each run inside a real Awareness process."""

from __future__ import annotations

import base64
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
import pytest
from awareness_harness import BUILTIN, AwarenessProcess, Client, add_adapter, next_batch
from awareness_images import png

from tobe.v1 import awareness_pb2 as pb

WEBHOOK_SECRET = "webhook-secret-7c1e0b9a44"


def _configure(awareness: AwarenessProcess, name: str, **overrides) -> Path:
    directory = add_adapter(awareness.adapters_dir, BUILTIN / name)
    config = json.loads((directory / "config.default.json").read_text())
    awareness.write_config(name, {**config, **overrides})
    return directory


class _Callback(BaseHTTPRequestHandler):
    """Records what the webhook adapter posts to its callback URL."""

    received: list[tuple[str, dict]] = []

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        self.received.append((self.headers.get("Authorization", ""), json.loads(body)))
        self.send_response(204)
        self.end_headers()

    def log_message(self, format: str, *args) -> None:
        """Quiet."""


@pytest.fixture
def callback() -> Iterator[tuple[str, list]]:
    received: list[tuple[str, dict]] = []
    handler = type("Handler", (_Callback,), {"received": received})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/hook", received
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
async def webhook(awareness_dirs: AwarenessProcess, callback):
    url, _ = callback
    _configure(
        awareness_dirs,
        "webhook",
        auto_start=True,
        port=0,
        secret=WEBHOOK_SECRET,
        trust="high",
        callback_url=url,
        callback_token="callback-token-123456",
    )
    awareness_dirs.start()
    client = Client(awareness_dirs.target)
    adapter_id = await client.adapter_id("webhook")
    endpoint = await client.observe(adapter_id, "endpoint")
    try:
        yield client, adapter_id, endpoint["result"]["url"]
    finally:
        await client.close()


async def test_webhook_media_reaches_the_agent_as_a_ref_and_replies_get_the_file(
    webhook, awareness_dirs: AwarenessProcess, callback
):
    client, adapter_id, url = webhook
    data = png(3, 5)
    stream = client.subscribe()
    async with httpx.AsyncClient() as http:
        response = await http.post(
            url,
            headers={"Authorization": f"Bearer {WEBHOOK_SECRET}"},
            json={
                "text": "look at this",
                "from": "alice",
                "media": [{"filename": "pic.png", "data_base64": base64.b64encode(data).decode()}],
            },
        )
    assert response.status_code == 202
    [observation] = (await next_batch(stream)).observations
    assert observation.id == response.json()["id"]
    assert observation.trust == pb.TRUST_HIGH
    assert observation.actor == pb.OBSERVATION_ACTOR_SERVICE
    assert json.loads(observation.content_json) == {"text": "look at this", "from": "alice"}
    [ref] = observation.media
    assert (ref.mime_type, ref.width, ref.height, ref.size_bytes) == ("image/png", 3, 5, len(data))

    reply = await client.interact(adapter_id, "reply", text="nice", media=[ref.ref])
    assert reply["status"] == "success", reply
    data_dir = awareness_dirs.instance_dir("webhook") / "data"
    outbox = data_dir / "outbox" / reply["result"]["reply_id"]
    [stored] = [p for p in outbox.iterdir() if p.name != "message.json"]
    assert stored.read_bytes() == data
    recorded = await client.observe(adapter_id, "outbox")
    assert recorded["result"]["replies"][0]["text"] == "nice"
    [(authorization, posted)] = callback[1]
    assert authorization == "Bearer callback-token-123456"
    assert posted["text"] == "nice"
    assert base64.b64decode(posted["media"][0]["data_base64"]) == data
    stream.cancel()


async def test_webhook_refuses_posts_without_the_secret(webhook, awareness_dirs: AwarenessProcess):
    client, _, url = webhook
    async with httpx.AsyncClient() as http:
        missing = await http.post(url, json={"text": "hi"})
        wrong = await http.post(url, headers={"Authorization": "Bearer nope"}, json={"text": "x"})
        bad = await http.post(
            url, headers={"Authorization": f"Bearer {WEBHOOK_SECRET}"}, content=b"[1, 2]"
        )
    assert (missing.status_code, wrong.status_code, bad.status_code) == (401, 401, 400)
    assert (await client.observe("", "drain"))["observations"] == []
    [info] = [a for a in await client.adapters() if a.name == "webhook"]
    assert WEBHOOK_SECRET not in str(info)
    assert WEBHOOK_SECRET not in awareness_dirs.stderr()


async def test_webhook_without_a_secret_is_registered_but_not_running(
    awareness_dirs: AwarenessProcess,
):
    _configure(awareness_dirs, "webhook", auto_start=True, port=0)
    awareness_dirs.start()
    client = Client(awareness_dirs.target)
    [info] = [a for a in await client.adapters() if a.name == "webhook"]
    assert not info.running
    assert "secret" in info.last_error
    await client.close()


async def test_clock_schedule_and_timer_fire_as_signals(awareness_dirs: AwarenessProcess):
    _configure(
        awareness_dirs,
        "clock",
        trust="high",
        schedules=[{"name": "tick", "every_seconds": 1, "note": "n"}],
    )
    awareness_dirs.start()
    client = Client(awareness_dirs.target)
    clock = await client.adapter_id("clock")
    stream = client.subscribe()
    [tick] = (await next_batch(stream)).observations
    assert tick.actor == pb.OBSERVATION_ACTOR_SIGNAL
    assert json.loads(tick.content_json)["name"] == "tick"

    await client.unregister(clock)
    config_path = awareness_dirs.instance_dir("clock") / "config.json"
    config = json.loads(config_path.read_text())
    config_path.write_text(json.dumps({**config, "schedules": []}))
    clock = (await client.register("clock")).adapter_id
    timer = await client.interact(clock, "set_timer", note="tea", in_seconds=0.2)
    assert timer["status"] == "success"
    # Skip any tick published before the unregister finished.
    while True:
        [signal] = (await next_batch(stream)).observations
        content = json.loads(signal.content_json)
        if content["kind"] == "timer":
            break
    assert content["note"] == "tea" and content["timer_id"] == timer["result"]["timer_id"]
    listed = await client.observe(clock, "list")
    assert listed["result"]["timers"] == []
    stream.cancel()
    await client.close()


async def test_files_watcher_reports_new_files_with_media(awareness_dirs: AwarenessProcess):
    folder = awareness_dirs.root / "inbox"
    folder.mkdir()
    (folder / "old.txt").write_text("baseline")
    _configure(
        awareness_dirs,
        "files",
        auto_start=True,
        folder=str(folder),
        poll_seconds=0.2,
        trust="high",
    )
    awareness_dirs.start()
    client = Client(awareness_dirs.target)
    stream = client.subscribe()
    files = await client.adapter_id("files")
    listed = await client.observe(files, "list")
    assert [f["name"] for f in listed["result"]["files"]] == ["old.txt"]
    data = png(2, 2)
    (folder / "new.png").write_bytes(data)
    [observation] = (await next_batch(stream)).observations
    assert observation.actor == pb.OBSERVATION_ACTOR_SIGNAL
    assert json.loads(observation.content_json)["event"] == "created"
    assert json.loads(observation.content_json)["name"] == "new.png"
    [ref] = observation.media
    assert (ref.mime_type, ref.size_bytes, ref.filename) == ("image/png", len(data), "new.png")
    stream.cancel()
    await client.close()
