"""`tobe up` with OpenTelemetry's standard variables, exporting to an OTLP receiver served in
the test: one turn with a Hand tool call is one trace, Face → Mind → Hand correctly parented;
metrics arrive over OTLP and on each service's Prometheus endpoint; a sealed turn's spans carry
none of its tool's arguments or results, though `telemetry.content` is on."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pexpect
import pytest
from helpers import otlp_receiver
from helpers.eventually import eventually
from helpers.otlp_receiver import ReceivedSpan, Receiver
from helpers.ports import free_port, is_free
from helpers.up_process import printed, spawn, up_env
from prometheus_client.parser import text_string_to_metric_families

from mind.credentials.local_user import local_user

pytestmark = pytest.mark.e2e

SCRIPT = """\
runs:
  - match: "look around"
    steps:
      - text: "Looking."
        tool_calls:
          - name: local__list_files
            arguments: {path: "."}
      - expect: {last_role: tool}
        text: "Looked around."
"""


ARGUMENT = "VAULT-ARG-3317"
RESULT = "VAULT-RESULT-8049"

SEALED_SCRIPT = f"""\
runs:
  - match: "open the vault"
    steps:
      - tool_calls:
          - name: vault__secret
            arguments: {{key: "{ARGUMENT}"}}
      - expect: {{last_role: tool}}
        text: "Opened the vault."
"""

# A Hand with one sensitive tool, exporting its spans like the services (the SDK's `serve`
# leaves telemetry to its program).
VAULT_HAND = f"""
import asyncio, os, sys

from hand import Hand
from tobe.config import TelemetrySettings
from tobe.runtime.logs import configure_logging
from tobe.telemetry import setup

configure_logging("INFO", process="hand")
setup.configure(TelemetrySettings(), "hand")
hand = Hand("vault")


@hand.tool(effect="read_only", sensitive=True, dataset="vault.secrets")
async def secret(key: str) -> str:
    \"\"\"A secret by its key.\"\"\"
    return "secret " + key + ": {RESULT}"


asyncio.run(hand.serve(sys.argv[1], os.environ["TOBE_HAND_TOKEN"]))
"""


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    yield from otlp_receiver.serving()


def _prometheus_base() -> int:
    """A port whose next three are free too: the four services' scrape ports."""
    while True:
        base = free_port()
        if all(is_free(base + offset) for offset in range(4)):
            return base


def _ask(env: dict[str, str], text: str, answer: str) -> None:
    chat = spawn(["chat"], env)
    try:
        chat.expect("you› ")
        chat.sendline(text)
        chat.expect_exact(answer)
        chat.expect("you› ")
        chat.sendline("/quit")
        chat.expect(pexpect.EOF, timeout=30)
    finally:
        chat.close(force=True)


def _turn_trace(spans: list[ReceivedSpan]) -> list[ReceivedSpan]:
    """The spans of the trace that holds the Hand's execution (empty until it arrived)."""
    executions = [
        s for s in spans if s.service == "tobe-hand" and s.span.name.startswith("execute_tool")
    ]
    if not executions:
        return []
    trace = executions[0].trace_id
    return [s for s in spans if s.trace_id == trace]


def _ancestors(span: ReceivedSpan, by_id: dict[str, ReceivedSpan]) -> list[ReceivedSpan]:
    chain = []
    while span.parent_id in by_id:
        span = by_id[span.parent_id]
        chain.append(span)
    return chain


def test_a_turn_with_a_hand_call_is_one_trace_across_face_mind_and_hand_and_metrics_arrive(
    tmp_path: Path, receiver: Receiver
) -> None:
    script = tmp_path / "script.yaml"
    script.write_text(SCRIPT)
    prometheus = _prometheus_base()
    env = up_env(tmp_path / "data")
    env.update(
        TOBE_PROVIDER__KIND="scripted",
        TOBE_PROVIDER__SCRIPT=str(script),
        TOBE_ACTIONS__ENABLED="false",
        OTEL_EXPORTER_OTLP_ENDPOINT=receiver.endpoint,
        OTEL_EXPORTER_OTLP_PROTOCOL="grpc",
        OTEL_EXPORTER_OTLP_INSECURE="true",
        OTEL_BSP_SCHEDULE_DELAY="100",
        OTEL_METRIC_EXPORT_INTERVAL="500",
        TOBE_TELEMETRY__CONTENT="true",
        TOBE_TELEMETRY__PROMETHEUS_PORT=str(prometheus),
    )
    up = spawn(["up"], env)
    try:
        up.expect("ToBe is up.")
        _ask(env, "look around", "Looked around.")
        trace = eventually(
            lambda: _turn_trace(receiver.received.spans()),
            what="the turn's trace with the Hand's span",
            until=lambda spans: (
                {"tobe-face", "tobe-mind", "tobe-hand"} <= {s.service for s in spans}
            ),
            context=lambda: repr([(s.service, s.span.name) for s in receiver.received.spans()]),
        )
        by_id = {s.span_id: s for s in trace}
        execution = next(s for s in trace if s.service == "tobe-hand")
        chain = [(s.service, s.span.name) for s in _ancestors(execution, by_id)]
        # Hand ← the Mind's run of the call ← its tool call ← the turn ← SendChat (Mind) ←
        # SendChat (Face's client) ← the Face's frame: one line of parents, no gap.
        assert chain[0] == ("tobe-mind", "run local__list_files"), chain
        assert ("tobe-mind", "tool local__list_files") in chain, chain
        assert ("tobe-mind", "turn") in chain, chain
        assert chain[-1][0] == "tobe-face", chain
        root = _ancestors(execution, by_id)[-1]
        assert not root.parent_id, "the Face's span starts the trace"
        tool = next(s for s in trace if s.span.name == "tool local__list_files")
        assert tool.attributes["gen_ai.tool.name"] == "local__list_files"
        # telemetry.content is on and the turn is not sealed: the arguments are there.
        assert '"path"' in str(tool.attributes["gen_ai.tool.call.arguments"])
        chats = [s for s in trace if s.span.name.startswith("chat ")]
        assert chats and all("gen_ai.usage.output_tokens" in s.attributes for s in chats)

        # Each process exports on its own interval: both sets are waited for.
        eventually(
            receiver.received.metric_names,
            what="the Mind's turn metrics and the Face's connections over OTLP",
            until=lambda got: (
                {"tobe.turns.started", "tobe.turns.finished", "tobe.tool.calls"}
                <= got.get("tobe-mind", set())
                and "tobe.face.connections" in got.get("tobe-face", set())
            ),
        )

        with urllib.request.urlopen(f"http://127.0.0.1:{prometheus}/metrics", timeout=10) as r:
            families = {f.name: f for f in text_string_to_metric_families(r.read().decode())}
        started = families["tobe_turns_started"]
        assert (
            sum(sample.value for sample in started.samples if sample.name.endswith("_total")) >= 1
        )
        assert "tobe_tool_calls" in families
    finally:
        up.kill(signal.SIGINT)
        up.expect(pexpect.EOF, timeout=60)
        up.close()
    assert up.exitstatus == 0, printed(up)


def _telemetry_env(data_dir: Path, script: Path, receiver: Receiver) -> dict[str, str]:
    env = up_env(data_dir)
    env.update(
        TOBE_PROVIDER__KIND="scripted",
        TOBE_PROVIDER__SCRIPT=str(script),
        TOBE_ACTIONS__ENABLED="false",
        OTEL_EXPORTER_OTLP_ENDPOINT=receiver.endpoint,
        OTEL_EXPORTER_OTLP_PROTOCOL="grpc",
        OTEL_EXPORTER_OTLP_INSECURE="true",
        OTEL_BSP_SCHEDULE_DELAY="100",
        TOBE_TELEMETRY__CONTENT="true",
    )
    return env


def _vault_hand(env: dict[str, str], tmp_path: Path) -> subprocess.Popen[str]:
    """The vault Hand attached to `tobe up`'s Mind, under a credential made by `tobe admin`."""
    made = subprocess.run(
        [sys.executable, "-m", "tobe", "admin", "credentials", "create", "--kind", "hand"]
        + ["--principal", "vault", "--scope", f"serve:{local_user()}", "--json"],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    program = tmp_path / "vault_hand.py"
    program.write_text(VAULT_HAND)
    hand_env = {**env, "TOBE_HAND_TOKEN": json.loads(made.stdout)["secret"]}
    hand = subprocess.Popen(
        [sys.executable, str(program), env["TOBE_MIND__LISTEN"]],
        env=hand_env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    assert hand.stdout is not None
    for line in hand.stdout:
        if "attached as " in line:
            return hand
    hand.kill()
    raise AssertionError("the vault Hand did not attach")


def _strings(span: ReceivedSpan) -> list[str]:
    """Every string a span carries: its name, status, attributes and events' attributes."""
    values = [span.span.name, span.span.status.message]
    for attribute in [*span.span.attributes] + [
        a for event in span.span.events for a in event.attributes
    ]:
        values.append(attribute.key)
        values.append(str(attribute.value))
    values.extend(event.name for event in span.span.events)
    return values


def test_a_sealed_turns_spans_carry_none_of_its_tools_arguments_or_results(
    tmp_path: Path, receiver: Receiver
) -> None:
    script = tmp_path / "script.yaml"
    script.write_text(SEALED_SCRIPT)
    env = _telemetry_env(tmp_path / "data", script, receiver)
    up = spawn(["up"], env)
    hand: subprocess.Popen[str] | None = None
    try:
        up.expect("ToBe is up.")
        hand = _vault_hand(env, tmp_path)
        _ask(env, "open the vault", "Opened the vault.")

        def turn() -> list[ReceivedSpan]:
            spans = receiver.received.spans()
            executions = [s for s in spans if s.span.name == "execute_tool secret"]
            if not executions:
                return []
            return [s for s in spans if s.trace_id == executions[0].trace_id]

        trace = eventually(
            turn,
            what="the sealed turn's trace with the vault Hand's span",
            until=lambda spans: (
                {"tool vault__secret", "run vault__secret", "turn"} <= {s.span.name for s in spans}
            ),
            context=lambda: repr([(s.service, s.span.name) for s in receiver.received.spans()]),
        )
        assert {"tobe-face", "tobe-mind", "tobe-hand"} <= {s.service for s in trace}
        tool = next(s for s in trace if s.span.name == "tool vault__secret")
        assert tool.attributes["gen_ai.tool.name"] == "vault__secret"
        assert "gen_ai.tool.call.arguments" not in tool.attributes
        leaks = [
            (s.service, s.span.name, value)
            for s in receiver.received.spans()
            for value in _strings(s)
            if ARGUMENT in value or RESULT in value
        ]
        assert not leaks, leaks
    finally:
        if hand is not None:
            hand.kill()
            hand.wait(10)
        up.kill(signal.SIGINT)
        up.expect(pexpect.EOF, timeout=60)
        up.close()
    assert up.exitstatus == 0, printed(up)
