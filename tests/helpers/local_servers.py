"""Fake local model servers — llama-server, Ollama, vLLM, LM Studio — speaking their own APIs.

`local_server(kind, …)` builds one (a context manager serving from a thread); its `base_url`
ends in `/v1`, what `[provider] base_url` takes. Each records every chat request as a
`ChatRecord` (`chats`) and every other path asked (`gets`), so a test can see which window
endpoints were probed and whether any request went over the window. The shapes and their
sources are in `local_server_kinds`; the tokenizer and the model's answers in `local_model`.

Run as a process for CLI tests (from the repository root):
`python -m tests.helpers.local_servers KIND --port N [--model M] [--loaded-window W]
[--max-window W] [--reply-chars C]` prints its base URL once it listens, and serves until
SIGTERM or SIGINT.
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading

from .local_server_base import ChatRecord, LocalServer
from .local_server_kinds import KINDS, LlamaServer, LmStudioServer, OllamaServer, VllmServer

__all__ = [
    "DEFAULT_MODELS",
    "KINDS",
    "ChatRecord",
    "LlamaServer",
    "LmStudioServer",
    "LocalServer",
    "OllamaServer",
    "VllmServer",
    "local_server",
]

# Model ids as each server names them, none of them in the catalog.
DEFAULT_MODELS = {
    "llama-server": "qwen2.5-7b-instruct-q4_k_m",
    "ollama": "qwen2.5:latest",
    "vllm": "Qwen/Qwen2.5-7B-Instruct",
    "lmstudio": "qwen2.5-7b-instruct",
}


def local_server(
    kind: str,
    *,
    model: str | None = None,
    loaded_window: int = 4096,
    max_window: int = 32768,
    port: int = 0,
    reply_chars: int = 400,
) -> LocalServer:
    """A fake `kind` server (not started: use it as a context manager)."""
    if kind not in KINDS:
        raise ValueError(f"unknown local server kind {kind!r}; one of {sorted(KINDS)}")
    return KINDS[kind](
        model=model or DEFAULT_MODELS[kind],
        loaded_window=loaded_window,
        max_window=max_window,
        port=port,
        reply_chars=reply_chars,
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m tests.helpers.local_servers")
    parser.add_argument("kind", choices=sorted(KINDS))
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--model")
    parser.add_argument("--loaded-window", type=int, default=4096)
    parser.add_argument("--max-window", type=int, default=32768)
    parser.add_argument("--reply-chars", type=int, default=400)
    args = parser.parse_args(argv)
    stop = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stop.set())
    server = local_server(
        args.kind,
        model=args.model,
        loaded_window=args.loaded_window,
        max_window=args.max_window,
        port=args.port,
        reply_chars=args.reply_chars,
    )
    with server:
        print(server.base_url, flush=True)
        stop.wait()


if __name__ == "__main__":
    main(sys.argv[1:])
