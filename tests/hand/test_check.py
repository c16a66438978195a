"""`tobe hand check` against real Hand processes: the reference Hand passes every scenario, and
Hands broken in one behaviour each fail the scenario that checks it, with the contract's words."""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from hand.check.scenarios import SCENARIOS, TRICKY_ARGUMENTS

ROOT = Path(__file__).resolve().parents[2]
PROTO = ROOT / "proto" / "tobe" / "v1" / "hand.proto"
VECTORS = ROOT / "proto" / "tobe" / "v1" / "testdata" / "arguments_digest_vectors.json"
# Only to keep a broken run from hanging the suite.
RUN_LIMIT = 150


def _normalized(text: str) -> str:
    return " ".join(text.split())


def test_every_scenario_quotes_the_proto_comments_verbatim() -> None:
    comments = _normalized(
        " ".join(
            line.strip().removeprefix("//")
            for line in PROTO.read_text().splitlines()
            if line.strip().startswith("//")
        )
    )
    for scenario in SCENARIOS:
        for passage in scenario.quote:
            assert _normalized(passage) in comments, (scenario.name, passage)


def test_the_approval_arguments_are_digest_test_vector_inputs() -> None:
    inputs = {vector["arguments_json"] for vector in json.loads(VECTORS.read_text())["vectors"]}
    for arguments in TRICKY_ARGUMENTS:
        vector = re.sub(r'^\{"text":"[a-z]+",', "{", arguments)
        assert vector in inputs, arguments


@contextlib.contextmanager
def processes() -> Iterator[list[subprocess.Popen[str]]]:
    started: list[subprocess.Popen[str]] = []
    try:
        yield started
    finally:
        for process in started:
            if process.poll() is None:
                process.kill()
            process.wait(10)


def run_check(tmp_path: Path, hand_command: list[str], *only: str) -> tuple[int, str]:
    """Run `tobe hand check` and the Hand `hand_command` (given the address and token file
    as its last two arguments); returns the check's exit status and output."""
    token_file = tmp_path / "check-token"
    env = {k: v for k, v in os.environ.items() if not k.startswith("TOBE_")}
    env.update(
        TOBE_CONFIG=str(tmp_path / "absent.toml"),
        TOBE_DATA_DIR=str(tmp_path / "data"),
        PYTHONPATH=str(ROOT),
    )
    options = [argument for name in only for argument in ("--only", name)]
    with processes() as started:
        check = subprocess.Popen(
            [sys.executable, "-m", "tobe", "hand", "check", "--token-file", str(token_file)]
            + ["--timeout", "60", *options],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        started.append(check)
        assert check.stdout is not None
        lines: list[str] = []
        address = ""
        for line in check.stdout:
            lines.append(line)
            if line.startswith("HandLink for the check: "):
                address = line.split()[-1]
                break
        assert address, "".join(lines)
        assert token_file.stat().st_mode & 0o777 == 0o600
        hand_log = tmp_path / "hand.log"
        with hand_log.open("w") as hand_output:
            hand = subprocess.Popen(
                [*hand_command, address, str(token_file)],
                env=env,
                stdout=hand_output,
                stderr=subprocess.STDOUT,
                text=True,
            )
        started.append(hand)
        reader = threading.Thread(target=lambda: lines.extend(check.stdout or ()), daemon=True)
        reader.start()
        status = check.wait(RUN_LIMIT)
        reader.join(10)
    if status != 0:  # what the Hand under test said, to tell why it failed
        lines.append(f"--- the Hand's output ---\n{hand_log.read_text(errors='replace')}")
    return status, "".join(lines)


def reference_hand(tmp_path: Path) -> list[str]:
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    script = tmp_path / "reference.sh"
    script.write_text(
        f'exec "{sys.executable}" -m tobe hand serve --name laptop --conformance '
        f'--workspace "{workspace}" --mind "$1" --token-file "$2"\n'
    )
    return ["sh", str(script)]


def node_hand() -> list[str]:
    """The Node.js example Hand (`examples/node-hand`) with the conformance tools; fails,
    never skips, without Node or the example's packages (CI installs both)."""
    example = ROOT / "examples" / "node-hand"
    node = shutil.which("node")
    assert node is not None, "Node.js is missing: install nodejs (CI does, see .ci/run)"
    assert (example / "node_modules").is_dir(), f"run `npm ci --prefix {example}` first"
    return [
        "sh",
        "-c",
        f'exec "{node}" "{example / "hand.js"}" --conformance --token-file "$2" "$1"',
        "node-hand",
    ]


def sdk_hand(tmp_path: Path, source: str) -> list[str]:
    """A Hand program with the conformance tools; `source` defines `hand`."""
    program = tmp_path / "broken_hand.py"
    program.write_text(
        "import asyncio, sys\n"
        "from pathlib import Path\n"
        "import hand._hand\n"
        "from hand import Hand, add_conformance_tools\n"
        f"{source}\n"
        "add_conformance_tools(hand)\n"
        "asyncio.run(hand.serve(sys.argv[1], Path(sys.argv[2]).read_text().strip()))\n"
    )
    return [sys.executable, str(program)]


def failed(output: str) -> set[str]:
    return set(re.findall(r"^FAIL (\S+)$", output, re.MULTILINE))


def test_the_reference_hand_passes_every_scenario(tmp_path: Path) -> None:
    status, output = run_check(tmp_path, reference_hand(tmp_path))
    assert status == 0, output
    assert f"{len(SCENARIOS)} passed, 0 failed" in output


def test_the_node_example_hand_passes_every_scenario(tmp_path: Path) -> None:
    status, output = run_check(tmp_path, node_hand())
    assert status == 0, output
    assert f"{len(SCENARIOS)} passed, 0 failed" in output


BROKEN = {
    "accepts-a-wrong-digest": (
        "hand._hand._digest_problem = lambda arguments, digest: None\nhand = Hand('broken')",
        ("approvals",),
        "accepted a conformance_write offer whose approval digest is not the digest",
    ),
    "sends-the-result-twice": (
        "class Broken(Hand):\n"
        "    def _send_result(self, held):\n"
        "        super()._send_result(held)\n"
        "        super()._send_result(held)\n"
        "hand = Broken('broken')",
        ("normal",),
        "after the result's ack, the Hand still sent result",
    ),
    "ignores-cancels": (
        "class Broken(Hand):\n"
        "    def _on_cancel(self, cancel):\n"
        "        pass\n"
        "hand = Broken('broken')",
        ("cancel",),
        "the Hand did not stop and report a cancelled result",
    ),
    "skips-accepted-without-the-grant": (
        "class Broken(Hand):\n"
        "    @property\n"
        "    def _result_accepted(self):\n"
        "        return True\n"
        "    @_result_accepted.setter\n"
        "    def _result_accepted(self, value):\n"
        "        pass\n"
        "hand = Broken('broken')",
        # Without the grant every offer must be answered first: approvals' offers too.
        ("normal", "approvals"),
        "the first report after the offer was result",
    ),
    "never-accepts-a-running-task-when-granted": (
        "class Broken(Hand):\n"
        "    def _confirm(self, held):\n"
        "        pass\n"
        "hand._hand.ACCEPT_DELAY = 10\n"
        "hand = Broken('broken')",
        ("granted",),
        "the first report of a task still running was progress",
    ),
}


@pytest.mark.parametrize("broken", sorted(BROKEN))
def test_a_broken_hand_fails_the_scenario_that_checks_its_fault(
    tmp_path: Path, broken: str
) -> None:
    source, scenarios, explanation = BROKEN[broken]
    only = ("normal", "cancel", "approvals", "granted")
    status, output = run_check(tmp_path, sdk_hand(tmp_path, source), *only)
    assert status == 1, output
    assert failed(output) == set(scenarios), output
    quote = next(s.quote for s in SCENARIOS if s.name == scenarios[0])
    assert f"hand.proto says: {' … '.join(quote)}" in output
    assert explanation in output


def test_a_hand_without_the_conformance_tools_is_refused(tmp_path: Path) -> None:
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    script = tmp_path / "plain.sh"
    script.write_text(
        f'exec "{sys.executable}" -m tobe hand serve --name laptop '
        f'--workspace "{workspace}" --mind "$1" --token-file "$2"\n'
    )
    status, output = run_check(tmp_path, ["sh", str(script)], "normal")
    assert status == 1, output
    assert "lacks the conformance tools conformance_echo, conformance_wait" in output
