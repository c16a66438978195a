"""The web client's first token after the provider's first byte, and what 100 browsers cost.

A real `tobe mind serve` whose provider is a local server on the OpenAI-compatible wire (a
child process of this script that answers each request 200 ms later, as a model's first
token would come, streaming server-sent events: it prints the monotonic time just before it
writes the first byte, and sends the rest 50 ms later, so the first token travels alone),
and a real `tobe face serve` with the web client. The client is a WebSocket speaking the web
client's exact protocol (protobuf JSON text frames on `/ws`, the session cookie, `hello`,
`subscribe`, `send_chat`), so the time a frame is read here is the time a browser's socket
would have it.

* first token: for each turn, the time from the provider's first byte to the first
  `text_delta` frame read from Face's socket; median and p90 of `--turns` (target: at most
  30 ms). The baseline, in the same run: a bare relay (uvicorn + Starlette in a process of
  its own) that streams the same provider's answer with httpx and sends its first chunk as
  one WebSocket frame: what one HTTP read and one WebSocket write through uvicorn cost.
* connections: Face's RSS before and after `--connections` more sockets, each signed in
  (the cookie), welcomed and subscribed to the events as the web client is, with a snapshot
  of the conversation taken; the growth and its cost per connection (target: at most
  50 MiB for 100).

Reproduce (from the repository root):

    python bench/bench_web.py [--turns 40] [--connections 100]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import re
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from helpers.face_process import FaceProcess, running_face
from helpers.mind_process import running_mind
from helpers.web_client import WebClient, open_socket

from tobe.v1 import common_pb2, face_pb2

TOKENS = ["Hello", " there", ",", " this", " is", " the", " answer", "."]
WARM_UP = 3
# Seconds the provider thinks before its first byte (a model's time to first token).
FIRST_AFTER = 0.2
# Seconds between the answer's first chunk and the rest.
REST_AFTER = 0.05
# How a message names its turn, for the provider to say which answer it timed.
TURN = re.compile(r"turn (\d+)")
TERMINAL = {
    common_pb2.RUN_STATE_COMPLETED,
    common_pb2.RUN_STATE_FAILED,
    common_pb2.RUN_STATE_CANCELLED,
    common_pb2.RUN_STATE_INTERRUPTED,
}


# -- the provider: OpenAI-compatible chat completions, streamed -----------------------------------


def _chunk(delta: dict[str, object], finish: str | None = None) -> bytes:
    body = {
        "id": "chatcmpl-bench",
        "object": "chat.completion.chunk",
        "created": 0,
        "model": "bench",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }
    return b"data: " + json.dumps(body).encode() + b"\n\n"


async def _provider_request(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    with contextlib.suppress(ConnectionError, asyncio.IncompleteReadError):
        await _answer(reader, writer)


async def _answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    head = await reader.readuntil(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    length = next(
        (int(line.split(":", 1)[1]) for line in lines if line.lower().startswith("content-length")),
        0,
    )
    body = await reader.readexactly(length)
    if lines[0].startswith("GET") and "/models" in lines[0]:
        listing = json.dumps({"object": "list", "data": [{"id": "bench", "object": "model"}]})
        writer.write(
            b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n"
            + f"Content-Length: {len(listing)}\r\n\r\n{listing}".encode()
        )
    elif not lines[0].startswith("POST") or "/chat/completions" not in lines[0]:
        writer.write(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
    else:
        headers = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n"
        first = _chunk({"role": "assistant", "content": TOKENS[0]})
        await asyncio.sleep(FIRST_AFTER)
        turns = [int(number) for number in TURN.findall(body.decode())]
        print(f"first {time.monotonic()} {max(turns, default=-1)}", flush=True)
        writer.write(headers + first)
        await writer.drain()
        # The rest comes later, so what is measured is the first token on its own.
        await asyncio.sleep(REST_AFTER)
        for token in TOKENS[1:]:
            writer.write(_chunk({"content": token}))
        writer.write(_chunk({}, "stop") + b"data: [DONE]\n\n")
    await writer.drain()
    writer.close()


async def serve_provider() -> None:
    server = await asyncio.start_server(_provider_request, "127.0.0.1", 0)
    print(f"port {server.sockets[0].getsockname()[1]}", flush=True)
    await server.serve_forever()


# -- the baseline: a bare relay of the provider's first chunk through uvicorn ---------------------


def serve_relay(provider: str) -> None:
    import httpx
    import uvicorn
    from starlette.applications import Starlette
    from starlette.routing import WebSocketRoute
    from starlette.websockets import WebSocket, WebSocketDisconnect

    async def relay(websocket: WebSocket) -> None:
        await websocket.accept()
        async with httpx.AsyncClient() as http:
            with contextlib.suppress(WebSocketDisconnect):
                while True:
                    await relay_one(websocket, http, await websocket.receive_text())

    async def relay_one(websocket: WebSocket, http: httpx.AsyncClient, text: str) -> None:
        message = {"role": "user", "content": text}
        request = {"model": "bench", "stream": True, "messages": [message]}
        url = f"http://{provider}/v1/chat/completions"
        async with http.stream("POST", url, json=request) as answer:
            sent = False
            async for chunk in answer.aiter_text():
                if not sent:
                    await websocket.send_text(chunk)
                    sent = True

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    print(f"port {sock.getsockname()[1]}", flush=True)
    app = Starlette(routes=[WebSocketRoute("/ws", relay)])
    config = uvicorn.Config(app, lifespan="off", log_config=None, access_log=False)
    uvicorn.Server(config).run(sockets=[sock])


# -- measuring ------------------------------------------------------------------------------------


async def child(*arguments: str) -> tuple[asyncio.subprocess.Process, str]:
    process = await asyncio.create_subprocess_exec(
        sys.executable, __file__, *arguments, stdout=asyncio.subprocess.PIPE
    )
    assert process.stdout is not None
    line = (await process.stdout.readline()).decode().split()
    return process, line[1]


def start_provider() -> tuple[subprocess.Popen[str], str]:
    provider = subprocess.Popen(
        [sys.executable, __file__, "--provider"], stdout=subprocess.PIPE, text=True
    )
    assert provider.stdout is not None
    return provider, provider.stdout.readline().split()[1]


async def first_byte(provider: subprocess.Popen[str], turn: int) -> float:
    """When the provider wrote the first byte of its answer to turn `turn` (it prints it as it
    does; answers to other requests, such as a conversation's title, are passed over)."""
    assert provider.stdout is not None
    while True:
        line = await asyncio.get_running_loop().run_in_executor(None, provider.stdout.readline)
        if not line:
            raise RuntimeError("the provider ended")
        _, at, answered = line.split()
        if int(answered) == turn:
            return float(at)


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


async def baseline_delays(provider: subprocess.Popen[str], port: str, turns: int) -> list[float]:
    relay, relay_port = await child("--relay", f"127.0.0.1:{port}")
    try:
        for _ in range(50):
            try:
                socket_ = await open_socket(f"127.0.0.1:{relay_port}", None)
                break
            except OSError:
                await asyncio.sleep(0.1)
        delays = []
        for turn in range(turns + WARM_UP):
            await socket_.send(f"turn {turn}")
            await socket_.recv()
            received = time.monotonic()
            sent_at = await first_byte(provider, turn)
            if turn >= WARM_UP:
                delays.append(received - sent_at)
        await socket_.close()
        await asyncio.sleep(REST_AFTER * 2)  # the last answer ends before the relay goes
        return delays
    finally:
        relay.kill()
        await relay.wait()


async def face_delays(
    client: WebClient, provider: subprocess.Popen[str], turns: int
) -> list[float]:
    await client.command(subscribe=face_pb2.SubscribeCommand(after_id=0))
    await client.command(create_conversation=face_pb2.CreateConversationCommand(key="p_web"))
    delays = []
    for turn in range(turns + WARM_UP):
        await client.command(
            send_chat=face_pb2.SendChatCommand(
                conversation_key="p_web", text=f"turn {turn}", idempotency_key=uuid.uuid4().hex
            )
        )
        await client.wait_frame(lambda f: f.event.WhichOneof("payload") == "text_delta")
        received = time.monotonic()
        sent_at = await first_byte(provider, turn)
        if turn >= WARM_UP:
            delays.append(received - sent_at)
        await client.wait_frame(
            lambda f: (
                f.event.WhichOneof("payload") == "run_changed"
                and f.event.run_changed.state in TERMINAL
            )
        )
    return delays


async def connection_cost(web: str, token: str, pid: int, connections: int) -> tuple[float, float]:
    """Face's RSS (MiB) before and after `connections` signed-in, subscribed sockets."""
    before = rss_mib(pid)
    clients = []
    try:
        for _ in range(connections):
            client = await WebClient.connect(web, token)
            await client.command(subscribe=face_pb2.SubscribeCommand(after_id=0))
            await client.command(snapshot=face_pb2.SnapshotCommand(conversation_key="p_web"))
            clients.append(client)
        await asyncio.sleep(1)  # let every replay end before reading the size
        return before, rss_mib(pid)
    finally:
        await asyncio.gather(*(client.close() for client in clients))


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"no VmRSS for {pid}")


def show(name: str, delays: list[float]) -> None:
    print(f"  {name}: median {statistics.median(delays) * 1000:6.2f} ms   "
          f"p90 {percentile(delays, 0.9) * 1000:6.2f} ms")  # fmt: skip


async def measure(
    provider: subprocess.Popen[str],
    port: str,
    face: FaceProcess,
    token: str,
    turns: int,
    connections: int,
) -> tuple[list[float], list[float], float, float]:
    baseline = await baseline_delays(provider, port, turns)
    client = await WebClient.connect(face.web_address, token)
    try:
        delays = await face_delays(client, provider, turns)
    finally:
        await client.close()
    assert face.process is not None
    before, after = await connection_cost(face.web_address, token, face.process.pid, connections)
    return baseline, delays, before, after


def main(turns: int, connections: int) -> None:
    provider, port = start_provider()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            settings = {
                "TOBE_PROVIDER__KIND": "openai",
                "TOBE_PROVIDER__BASE_URL": f"http://127.0.0.1:{port}/v1",
                "TOBE_PROVIDER__MODEL": "bench",
                "TOBE_PROVIDER__API_KEY": "bench",
            }
            with running_mind(Path(tmp), script=None, clients=("alice",), **settings) as mind:
                with running_face(mind) as face:
                    baseline, delays, before, after = asyncio.run(
                        measure(provider, port, face, mind.client_tokens["alice"], turns,
                                connections)
                    )  # fmt: skip
    finally:
        provider.kill()
        provider.wait()
    print(f"first token after the provider's first byte, {turns} turns:")
    show("web client through Face", delays)
    show("bare uvicorn relay     ", baseline)
    print(f"  ratio of medians {statistics.median(delays) / statistics.median(baseline):.2f}"
          f" (target: Face's median and p90 <= 30 ms)")  # fmt: skip
    growth = after - before
    each = growth * 1024 / connections
    print(f"{connections} web connections: Face RSS {before:.1f} -> {after:.1f} MiB, "
          f"+{growth:.1f} MiB ({each:.0f} KiB each; target <= 50 MiB)")  # fmt: skip


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--turns", type=int, default=40)
    parser.add_argument("--connections", type=int, default=100)
    parser.add_argument("--provider", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--relay", help=argparse.SUPPRESS)
    arguments = parser.parse_args()
    if arguments.provider:
        asyncio.run(serve_provider())
    elif arguments.relay:
        serve_relay(arguments.relay)
    else:
        main(arguments.turns, arguments.connections)
