"""alice's Hand `laptop` with one tool whose calls wait for her approval (it writes), run as a
process of its own: gRPC threads in a test process would make pexpect's fork unsafe."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pexpect

from helpers.mind_process import MindProcess, issue_token

PROGRAM = """
import asyncio, sys
from hand import Hand

hand = Hand("laptop")

@hand.tool(effect="workspace_write")
async def save_note(name: str) -> str:
    \"\"\"Save a note in the workspace.\"\"\"
    return f"saved {name}"

async def main() -> None:
    serving = asyncio.create_task(hand.serve(sys.argv[1], sys.argv[2]))
    await hand.attached.wait()
    print("attached", flush=True)
    await serving

asyncio.run(main())
"""


@contextmanager
def laptop_hand(mind: MindProcess, directory: Path) -> Iterator[None]:
    """The Hand, attached to `mind` until the block ends."""
    script = directory / "laptop.py"
    script.write_text(PROGRAM)
    token = issue_token(mind.url, kind="hand", principal="laptop", scopes=["serve:alice"])
    hand = pexpect.spawn(
        sys.executable, [str(script), mind.address, token], env=mind.env, encoding="utf-8"
    )
    try:
        hand.expect("attached", timeout=30)
        yield
    finally:
        hand.close(force=True)
