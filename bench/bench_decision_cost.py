"""What the decision layer costs per ordinary message: model requests and tokens, side by side.

An ordinary message is a chat message with no action in it (the Extractor finds nothing, so
the layer ends after its first stage). Three configurations of one real Mind process, each
sent the same messages in one conversation:

- layer off (`[actions] enabled = false`): the baseline, the turn's own request only;
- layer on, with structured output (`structured_output = "json_schema"`): the server holds the
  Extractor's answer to its schema;
- layer on, without it (`structured_output = "none"`): the model answers the Extractor in
  prose first, as small local models do, then JSON amid prose once corrected: the tolerant
  reading and the one retry.

The model is a deterministic local server on the OpenAI-compatible wire
(`tests/helpers/json_model_server.py`): JSON when `response_format` asks for it, prose
otherwise, and `usage` of ceil(bytes / 4) for the request's messages and tool schemas and for
the answer. The
figures are counts, not timings, so they are the same on every machine; a real model's token
counts differ by its tokenizer, the ratios much less.

Reproduce (from the repository root):

    python bench/bench_decision_cost.py --messages 10
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import uuid
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from helpers.json_model_server import JsonModelServer, answer, prompt_tokens, tokens
from helpers.mind_gateway import Gateway, payloads
from helpers.mind_process import running_mind

from tobe.v1 import common_pb2

MODEL = "local-model"
MESSAGES = (
    "Good morning! How did you sleep?",
    "I read an article about octopuses today; they have three hearts.",
    "What do you think makes a good weekend?",
    "My sister is visiting next month, we haven't seen each other in a year.",
    "I tried a new bread recipe, it came out a bit dense.",
    "Do you know any good books about the history of maps?",
    "The weather has been strange lately, warm then cold.",
    "I'm thinking about learning to play the piano.",
    "Tell me something interesting about the moon.",
    "Thanks for chatting, that was nice.",
)


@dataclass(frozen=True)
class Config:
    name: str
    enabled: bool
    structured_output: str


CONFIGS = (
    Config("layer off", False, "json_schema"),
    Config("layer on, structured output", True, "json_schema"),
    Config("layer on, no structured output", True, "none"),
)


@dataclass(frozen=True)
class Cost:
    requests: int
    prompt_tokens: int
    completion_tokens: int


def run(config: Config, texts: list[str]) -> Cost:
    """Send `texts` as one conversation to a Mind configured by `config`; what it asked of
    the model."""
    server = JsonModelServer().start()
    entry = {
        "id": MODEL,
        "context_window": 32768,
        "max_output": 1024,
        "structured_output": config.structured_output,
    }
    env = {
        "TOBE_PROVIDER__KIND": "openai",
        "TOBE_PROVIDER__BASE_URL": server.url,
        "TOBE_PROVIDER__MODEL": MODEL,
        "TOBE_PROVIDER__MODELS": json.dumps([entry]),
        "TOBE_ACTIONS__ENABLED": "true" if config.enabled else "false",
    }
    try:
        with tempfile.TemporaryDirectory(prefix="tdc-") as root:
            with running_mind(Path(root), script=None, **env) as mind:
                gateway = Gateway.connect(mind)
                try:
                    _converse(gateway, texts)
                finally:
                    gateway.close()
    finally:
        server.stop()
    asked = server.requests
    return Cost(
        requests=len(asked),
        prompt_tokens=sum(prompt_tokens(body) for body in asked),
        completion_tokens=sum(tokens(answer(body)) for body in asked),
    )


def _converse(gateway: Gateway, texts: list[str]) -> None:
    key = gateway.create(f"p_{uuid.uuid4().hex[:12]}")
    for text in texts:
        start = gateway.head()
        run_id = gateway.send(key, text, uuid.uuid4().hex).run_id
        events = gateway.wait_runs_ended(start, {run_id})
        ended = [r for r in payloads(events, "run_changed") if r.id == run_id][-1]
        if ended.state != common_pb2.RUN_STATE_COMPLETED:
            raise SystemExit(f"a run did not complete: {ended.reason}")
    notes = [m for m in gateway.snapshot(key).messages if m.role == common_pb2.MESSAGE_ROLE_NOTE]
    if notes:
        raise SystemExit("an ordinary message left a note; the benchmark measures none")


def _ratio(value: float, base: float) -> str:
    return f"{value / base:.2f}x" if base else "-"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--messages", type=int, default=len(MESSAGES))
    args = parser.parse_args()
    texts = [MESSAGES[i % len(MESSAGES)] for i in range(args.messages)]
    costs = {config.name: run(config, texts) for config in CONFIGS}
    base = costs[CONFIGS[0].name]
    n = len(texts)
    header = (
        f"{'configuration':<32}{'requests/msg':>13}{'prompt tok/msg':>16}"
        f"{'completion tok/msg':>20}{'requests':>10}{'prompt':>9}{'completion':>12}"
    )
    print(f"{n} ordinary messages in one conversation; ratios to the layer turned off")
    print(header)
    for name, cost in costs.items():
        print(
            f"{name:<32}{cost.requests / n:>13.2f}{cost.prompt_tokens / n:>16.0f}"
            f"{cost.completion_tokens / n:>20.0f}"
            f"{_ratio(cost.requests, base.requests):>10}"
            f"{_ratio(cost.prompt_tokens, base.prompt_tokens):>9}"
            f"{_ratio(cost.completion_tokens, base.completion_tokens):>12}"
        )
    print(f"\nreproduce: python bench/bench_decision_cost.py --messages {n}")


if __name__ == "__main__":
    main()
