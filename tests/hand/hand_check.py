"""Running `tobe hand check` against a real Hand process, for the check's tests: the check and
the Hand under test are started, the Hand dialling the check's address with its token file."""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# Only to keep a broken run from hanging the suite.
RUN_LIMIT = 150


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
