"""`tobe setup`, `tobe models` and a Mind on a model only a local server knows, end to end.

One local OpenAI-compatible server (it lists `mock-1` and `gpt-4o`, streams a recorded answer,
and answers 401 without its key) serves the module. Commands run as real `python -m tobe`
processes; the interactive setup is driven through a pseudo-terminal.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import grpc
import pexpect
import pytest
from helpers.mind_events import events_until
from helpers.mind_process import MindProcess, run_mind_command, running_mind
from model_server import ModelServer, openai_pages

from tobe.runtime.statelock import StateLock
from tobe.v1 import common_pb2, events_pb2, mind_pb2, mind_pb2_grpc

pytestmark = pytest.mark.e2e

KEY = "sk-local-e2e-7f1c"
EXISTING = """# my settings
[mind]
step_limit = 12  # keep this comment

[[provider.models]]
id = "tiny"
context_window = 4096
max_output = 1024
"""


@pytest.fixture(scope="module")
def server() -> Iterator[ModelServer]:
    with ModelServer(openai_pages("mock-1", "gpt-4o"), key=KEY) as running:
        yield running


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("TOBE_") and not k.endswith(("_API_KEY", "_BASE_URL"))
    }
    env.update(
        TOBE_CONFIG=str(tmp_path / "config.toml"),
        TOBE_DATA_DIR=str(tmp_path / "data"),
        NO_COLOR="1",
    )
    env.update(extra)
    return env


def _tobe(env: dict[str, str], *args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tobe", *args],
        env=env,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
    )


def _store_bytes(tmp_path: Path) -> bytes:
    return b"".join(p.read_bytes() for p in (tmp_path / "data").glob("tobe.db*"))


def test_interactive_setup_repeats_on_a_rejected_key_then_stores_it_sealed(tmp_path, server):
    config = tmp_path / "config.toml"
    config.write_text(EXISTING)
    child = pexpect.spawn(
        sys.executable,
        ["-m", "tobe", "setup"],
        env=_env(tmp_path),
        encoding="utf-8",
        timeout=30,
    )
    try:
        child.expect_exact("Provider")
        child.sendline("openai")
        child.expect_exact("Base URL")
        child.sendline(server.url + "/v1")
        child.expect_exact("API key (Enter for none)")
        child.sendline("sk-wrong-key")
        child.expect_exact("the API key was rejected (HTTP 401")
        child.expect_exact("Provider")
        child.sendline("")
        child.expect_exact(f"Base URL [{server.url}/v1]")
        child.sendline("")
        child.expect_exact("API key")
        child.sendline(KEY)
        child.expect(r"(\d+)\. mock-1  \(not in the catalog")
        number = child.match.group(1)
        child.expect_exact("Model number")
        child.sendline(number)
        child.expect_exact("Wrote")
        child.expect(pexpect.EOF)
        transcript = child.before
    finally:
        child.close(force=True)
    assert child.exitstatus == 0
    assert "sk-wrong-key" not in transcript and KEY not in transcript
    text = config.read_text()
    assert text.startswith("# my settings\n[mind]\nstep_limit = 12  # keep this comment\n")
    assert 'id = "tiny"' in text
    assert 'kind = "openai"' in text and 'model = "mock-1"' in text
    assert f'base_url = "{server.url}/v1"' in text
    assert stat.S_IMODE(config.stat().st_mode) == 0o600
    assert KEY not in text and KEY.encode() not in _store_bytes(tmp_path)
    shown = _tobe(_env(tmp_path), "setup", "--show-key")
    assert shown.stdout.strip().startswith("A key for openai is stored, ending in 7f1c")


def test_scripted_setup_with_a_rejected_key_exits_1_and_writes_nothing(tmp_path, server):
    result = _tobe(
        _env(tmp_path),
        *("setup", "--provider", "openai", "--base-url", server.url + "/v1", "--yes"),
        "--api-key-stdin",
        stdin="sk-wrong-key\n",
    )
    assert result.returncode == 1
    (line,) = result.stderr.strip().splitlines()
    assert "API key was rejected" in line and "sk-wrong-key" not in line
    assert not (tmp_path / "config.toml").exists()
    assert not (tmp_path / "data" / "credentials" / "secrets.key").exists()


def test_setup_moves_a_key_from_the_config_file_into_the_store(tmp_path, server):
    config = tmp_path / "config.toml"
    config.write_text(
        f'[provider]\nkind = "openai"\nbase_url = "{server.url}/v1"\napi_key = "{KEY}"\n'
    )
    result = _tobe(_env(tmp_path), "setup", "--yes", "--model", "mock-1")
    assert result.returncode == 0, result.stderr
    assert "Removed [provider] api_key" in result.stdout and KEY not in result.stdout
    assert KEY not in config.read_text() and 'model = "mock-1"' in config.read_text()
    shown = _tobe(_env(tmp_path), "setup", "--show-key")
    assert "ending in 7f1c" in shown.stdout


def test_setup_while_a_mind_holds_the_data_directory_stops_before_asking_anything(tmp_path, server):
    with StateLock(tmp_path / "data", "tobe mind serve on 127.0.0.1:7410"):
        result = _tobe(_env(tmp_path), "setup", stdin="openai\n")
    assert result.returncode == 1
    assert "Provider" not in result.stdout
    assert result.stderr.strip() == (
        f"Error: tobe mind serve on 127.0.0.1:7410 (pid {os.getpid()}) holds the data directory "
        f"{tmp_path / 'data'}; stop the Mind (Ctrl-C in `tobe up`) and run this again — the "
        "Mind reads the provider key only when it starts"
    )
    assert not (tmp_path / "config.toml").exists()


def test_a_config_file_it_cannot_read_stops_setup_before_the_key_is_stored(tmp_path, server):
    config = tmp_path / "config.toml"
    config.write_text("[provider\nkind = 'openai'\n")
    result = _tobe(
        _env(tmp_path, LOCAL_KEY=KEY, TOBE_CONFIG=str(tmp_path / "other.toml")),
        *("setup", "--config", str(config), "--provider", "openai", "--yes"),
        *("--base-url", server.url + "/v1", "--api-key-env", "LOCAL_KEY", "--model", "mock-1"),
    )
    assert result.returncode == 2
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith(f"Error: {config}:1:10: invalid TOML: ")
    assert config.read_text() == "[provider\nkind = 'openai'\n"
    assert not (tmp_path / "data" / "credentials" / "secrets.key").exists()


def test_scripted_setup_takes_a_catalog_id_anthropic_lists_with_a_date_and_its_thinking(
    tmp_path,
):
    pages = {"/v1/models": {"": {"data": [{"id": "claude-sonnet-4-5-20250929"}]}}}
    with ModelServer(pages, key=KEY) as anthropic:
        result = _tobe(
            _env(tmp_path, LOCAL_KEY=KEY),
            *("setup", "--provider", "anthropic", "--base-url", anthropic.url, "--yes"),
            *("--api-key-env", "LOCAL_KEY", "--model", "claude-sonnet-4-5", "--thinking", "high"),
        )
        wrong = _tobe(
            _env(tmp_path, LOCAL_KEY=KEY),
            *("setup", "--provider", "anthropic", "--base-url", anthropic.url, "--yes"),
            *("--api-key-env", "LOCAL_KEY", "--model", "claude-sonnet-4-5", "--thinking", "max"),
        )
    assert result.returncode == 0, result.stderr
    text = (tmp_path / "config.toml").read_text()
    assert 'model = "claude-sonnet-4-5"' in text and 'thinking = "high"' in text
    assert wrong.returncode == 1
    assert wrong.stderr.strip() == (
        "Error: --thinking 'max': claude-sonnet-4-5 supports off, minimal, low, medium, high, xhigh"
    )


@pytest.fixture(scope="module")
def configured(server: ModelServer, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A directory set up by a scripted `tobe setup` for the local server's `mock-1`."""
    home = tmp_path_factory.mktemp("configured")
    result = _tobe(
        _env(home, LOCAL_KEY=KEY),
        *("setup", "--provider", "openai", "--base-url", server.url + "/v1"),
        *("--api-key-env", "LOCAL_KEY", "--model", "mock-1", "--yes"),
    )
    assert result.returncode == 0, result.stderr
    return home


def test_models_marks_what_the_mind_accepts_and_says_in_one_line_when_it_cannot_list(
    configured,
):
    text = _tobe(_env(configured), "models")
    assert text.returncode == 0, text.stderr
    assert "  gpt-4o                                   in the catalog" in text.stdout
    assert (
        " *mock-1                                   served by this server (context 4096 assumed"
        in text.stdout
    )
    report = json.loads(_tobe(_env(configured), "models", "--json").stdout)
    accepted = {row["id"]: row["accepted"] for row in report["listed"]}
    assert accepted == {"gpt-4o": "catalog", "mock-1": "defaults"}
    assert report["configured_model"] == "mock-1"
    dead = _tobe(_env(configured, TOBE_PROVIDER__BASE_URL="http://127.0.0.1:9/v1"), "models")
    assert dead.returncode == 1
    (line,) = dead.stderr.strip().splitlines()
    assert line.startswith("Cannot list models: openai: cannot reach http://127.0.0.1:9/v1")


def _one_turn(mind: MindProcess) -> tuple[int, list[str]]:
    channel = grpc.insecure_channel(mind.address)
    stub, md = mind_pb2_grpc.MindStub(channel), mind.gateway_metadata
    who = mind_pb2.OnBehalfOf(principal="alice", scopes=["chat"])
    try:
        key = stub.CreateConversation(
            mind_pb2.CreateConversationRequest(on_behalf_of=who, key="p_local"),
            metadata=md,
            timeout=10,
        ).conversation.key
        sent = stub.SendChat(
            mind_pb2.SendChatRequest(
                on_behalf_of=who, conversation_key=key, text="hello", idempotency_key="s-1"
            ),
            metadata=md,
            timeout=15,
        )

        def ended(events: list[events_pb2.Event]) -> bool:
            run = events[-1].run_changed
            return run.id == sent.run_id and run.state == common_pb2.RUN_STATE_COMPLETED

        events_until(stub, md, ended, timeout=60, what="the turn to complete")
        history = stub.GetHistory(
            mind_pb2.GetHistoryRequest(on_behalf_of=who, conversation_key=key, limit=10),
            metadata=md,
            timeout=10,
        )
        return len(history.messages), [m.text for m in history.messages]
    finally:
        channel.close()


def test_a_mind_on_a_listed_unknown_model_warns_once_and_answers_with_the_stored_key(
    configured, server
):
    posts_before = len(server.posts)
    with running_mind(
        configured, script=None, clients=("alice",), TOBE_CONFIG=str(configured / "config.toml")
    ) as mind:
        _count, texts = _one_turn(mind)
        output = "\n".join(mind.output)
    assert texts[-1] == "Done: here is the time."
    assert len(server.posts) == posts_before + 1
    assert output.count("is not in the catalog") == 1
    assert "[[provider.models]]" in output and "TOBE_PROVIDER__MODELS" in output
    assert KEY not in output


def test_an_unknown_model_on_the_official_api_stops_the_mind_with_the_fix(tmp_path):
    env = _env(
        tmp_path,
        TOBE_PROVIDER__KIND="openai",
        TOBE_PROVIDER__MODEL="mock-1",
        TOBE_PROVIDER__API_KEY="sk-unused",
        TOBE_MIND__LOCK_TIMEOUT="5",
    )
    result = run_mind_command(env)
    assert result.returncode == 1
    assert "unknown model 'mock-1'" in result.stderr
    assert "[[provider.models]]" in result.stderr and "TOBE_PROVIDER__MODELS" in result.stderr
    assert "Traceback" not in result.stderr and "could not be asked" not in result.stderr
