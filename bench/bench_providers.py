"""Parsing throughput of each provider adapter, against reading the same bytes raw with httpx.

Each adapter streams a large response built from its recorded events (tests/providers/data),
served by the local wire server over a loopback socket in 16 KiB chunks. The baseline reads
the identical response with a plain `httpx.AsyncClient.stream(...).aiter_bytes()` in the same
run, so the ratio is the cost of SSE parsing, JSON decoding and assembly on top of transport.

Reproduce:

    python bench/bench_providers.py [--events 20000] [--repeat 5]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "providers"))

from provider_kit import make_provider
from provider_wire import Reply, WireServer, cassette_bodies, data_file, split

from mind.providers.base import ProviderMessage, ProviderRequest

CHUNK = 16 * 1024
WORDS = ["stream ", "of ", "tokens ", "from ", "a ", "model, ", "über ", "fast\n"]


def _recorded_event(data: bytes, marker: bytes, separator: bytes) -> dict:
    """The JSON of the first recorded event containing `marker`, as a template."""
    for block in data.split(separator):
        if marker in block:
            line = next(x for x in block.split(b"\n") if x.startswith(b"data:"))
            return json.loads(line.removeprefix(b"data:"))
    raise LookupError(marker)


def openai_stream(count: int) -> bytes:
    template = _recorded_event(data_file("openai/reasoning_length.sse"), b"Autumn", b"\n\n")
    out = []
    for i in range(count):
        template["choices"][0]["delta"] = {"content": WORDS[i % len(WORDS)]}
        out.append(b"data: " + json.dumps(template).encode() + b"\n\n")
    template["choices"][0]["delta"], template["choices"][0]["finish_reason"] = {}, "stop"
    out.append(b"data: " + json.dumps(template).encode() + b"\n\ndata: [DONE]\n\n")
    return b"".join(out)


def anthropic_stream(count: int) -> bytes:
    recorded = data_file("anthropic/basic_response.txt")
    blocks = recorded.split(b"\n\n")
    head = [b for b in blocks if b"message_start" in b or b"content_block_start" in b]
    tail = [
        b
        for b in blocks
        if b"content_block_stop" in b or b"message_delta" in b or b"message_stop" in b
    ]
    template = _recorded_event(recorded, b"text_delta", b"\n\n")
    deltas = []
    for i in range(count):
        template["delta"]["text"] = WORDS[i % len(WORDS)]
        deltas.append(b"event: content_block_delta\ndata: " + json.dumps(template).encode())
    return b"\n\n".join([*head, *deltas, *tail]) + b"\n\n"


def gemini_stream(count: int) -> bytes:
    recorded = cassette_bodies("gemini/tool_call_thought_signature.yaml")[1]
    template = _recorded_event(recorded, b"The capital", b"\r\n\r\n")
    out = []
    for i in range(count):
        template["candidates"][0]["content"]["parts"] = [{"text": WORDS[i % len(WORDS)]}]
        if i == count - 1:
            template["candidates"][0]["finishReason"] = "STOP"
        out.append(b"data: " + json.dumps(template).encode() + b"\r\n\r\n")
    return b"".join(out)


STREAMS = {"openai": openai_stream, "anthropic": anthropic_stream, "gemini": gemini_stream}
REQUEST = ProviderRequest("", [ProviderMessage("user", "go")])


async def _raw(client: httpx.AsyncClient, server: WireServer, body: bytes) -> float:
    server.play(Reply(chunks=split(body, list(range(CHUNK, len(body), CHUNK)))))
    start = time.perf_counter()
    received = 0
    async with client.stream("POST", server.url + "/raw", json={}) as response:
        async for chunk in response.aiter_bytes():
            received += len(chunk)
    elapsed = time.perf_counter() - start
    assert received == len(body)
    return elapsed


async def _adapter(kind: str, server: WireServer, body: bytes, expected_text: int) -> float:
    provider = make_provider(kind, server)
    try:
        server.play(Reply(chunks=split(body, list(range(CHUNK, len(body), CHUNK)))))
        start = time.perf_counter()
        result = await provider.complete(REQUEST, lambda event: None)
        elapsed = time.perf_counter() - start
    finally:
        await provider.aclose()
    assert result.error is None, result.error
    assert len(result.text) == expected_text
    return elapsed


async def main(events: int, repeat: int) -> None:
    server = WireServer().start()
    try:
        async with httpx.AsyncClient(timeout=60) as client:
            print(
                f"{'adapter':<10} {'MiB':>6} {'raw MiB/s':>10} {'adapter MiB/s':>14} {'ratio':>6}"
            )
            for kind, build in STREAMS.items():
                body = build(events)
                text_length = sum(len(WORDS[i % len(WORDS)]) for i in range(events))
                raw = min([await _raw(client, server, body) for _ in range(repeat)])
                parsed = min(
                    [await _adapter(kind, server, body, text_length) for _ in range(repeat)]
                )
                mib = len(body) / 2**20
                print(
                    f"{kind:<10} {mib:>6.2f} {mib / raw:>10.1f} {mib / parsed:>14.1f} "
                    f"{parsed / raw:>6.1f}x"
                )
    finally:
        server.stop()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=20_000)
    parser.add_argument("--repeat", type=int, default=5)
    options = parser.parse_args()
    asyncio.run(main(options.events, options.repeat))
