"""`tobe setup` finds the model servers running on this machine and writes a configuration
with the window the chosen server reports for its model."""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from helpers.local_servers import local_server
from helpers.ports import free_port

pytestmark = pytest.mark.e2e


def _env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TOBE_")}
    env = {k: v for k, v in env.items() if not k.endswith(("_API_KEY", "_BASE_URL"))}
    env.update(
        TOBE_CONFIG=str(home / "config.toml"), TOBE_DATA_DIR=str(home / "data"), NO_COLOR="1"
    )
    return env


def _setup(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tobe", "setup", *args],
        env=_env(home),
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_setup_finds_local_servers_and_writes_the_window_the_server_reports(tmp_path: Path):
    quiet = free_port()  # nothing listens there: skipped without a word
    with (
        local_server("ollama", port=free_port(), loaded_window=8192, max_window=32768) as ollama,
        local_server("llama-server", port=free_port(), loaded_window=16384) as llama,
    ):
        ports = ",".join(str(p) for p in (quiet, ollama.port, llama.port))
        result = _setup(tmp_path, "--scan", ports, "--yes")
    assert result.returncode == 0, result.stderr
    found = [line for line in result.stdout.splitlines() if line.startswith("Found ")]
    assert found == [
        f"Found Ollama at {ollama.base_url}: {ollama.model} (window 8192)",
        f"Found llama-server at {llama.base_url}: {llama.model} (window 16384)",
    ]
    config = tomllib.loads((tmp_path / "config.toml").read_text())
    provider = config["provider"]
    assert (provider["kind"], provider["base_url"], provider["model"]) == (
        "openai",
        ollama.base_url,
        ollama.model,
    )
    (entry,) = provider["models"]
    assert (entry["id"], entry["context_window"], entry["max_output"]) == (
        ollama.model,
        8192,
        2048,
    )
    assert "8192 tokens, is in [[provider.models]]" in result.stdout


def test_setup_scan_refuses_what_is_not_a_list_of_ports(tmp_path: Path):
    result = _setup(tmp_path, "--scan", "80,abc", "--yes")
    assert result.returncode == 2
    assert "'80,abc' is not a list of ports" in result.stderr
    assert not (tmp_path / "config.toml").exists()
