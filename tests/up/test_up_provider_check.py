"""`tobe up`'s provider check, made by `tobe mind check-provider` in a child process: the
verdict it prints, and what `tobe up` makes of a check that printed none."""

from __future__ import annotations

import http.server
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers.handler_server import serving
from helpers.up_process import clean_env

from management.up_checks import ProviderVerdict, printed_verdict


class _NotJson(http.server.BaseHTTPRequestHandler):
    """An OpenAI-compatible base URL whose model listing answers HTML."""

    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.end_headers()
        self.wfile.write(b"<html>not a model list</html>")

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def html_server() -> Iterator[str]:
    with serving(_NotJson) as url:
        yield url


def check_provider(tmp_path: Path, base_url: str) -> dict[str, str]:
    env = clean_env()
    env.update(
        TOBE_DATA_DIR=str(tmp_path / "data"),
        TOBE_CONFIG=str(tmp_path / "absent.toml"),
        TOBE_PROVIDER__KIND="openai",
        TOBE_PROVIDER__MODEL="gpt-4o",
        TOBE_PROVIDER__BASE_URL=base_url,
        OPENAI_API_KEY="sk-test",
    )
    done = subprocess.run(
        [sys.executable, "-m", "tobe", "mind", "check-provider", "--timeout", "5"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    verdict: dict[str, str] = json.loads(done.stdout)
    return verdict


def test_a_provider_that_answers_but_lists_nothing_is_only_warned_about(
    tmp_path: Path, html_server: str
) -> None:
    verdict = check_provider(tmp_path, html_server)
    assert list(verdict) == ["warning"]
    assert verdict["warning"].startswith("provider check inconclusive: ")
    assert "did not answer JSON" in verdict["warning"]


def test_the_verdict_the_check_printed_is_the_one_tobe_up_acts_on() -> None:
    printed = '{"refusal": "provider check failed: the API key was rejected"}\n'
    done = subprocess.CompletedProcess(["check"], 0, stdout=printed, stderr="")
    assert printed_verdict(done) == ProviderVerdict(
        refusal="provider check failed: the API key was rejected"
    )
    answered = subprocess.CompletedProcess(["check"], 0, stdout="{}\n", stderr="")
    assert printed_verdict(answered) == ProviderVerdict()


def test_a_check_that_printed_no_verdict_is_a_warning_naming_its_last_error_line() -> None:
    failed = subprocess.CompletedProcess(
        ["check"], 1, stdout="", stderr="Traceback (most recent call last):\nOSError: gone\n"
    )
    assert printed_verdict(failed) == ProviderVerdict(
        warning="provider check inconclusive: OSError: gone"
    )
    silent = subprocess.CompletedProcess(["check"], -9, stdout="", stderr="")
    assert printed_verdict(silent) == ProviderVerdict(
        warning="provider check inconclusive: it exited with -9"
    )
