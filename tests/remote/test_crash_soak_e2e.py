"""Crash soak: the Mind is killed (-9) at random points while scripted conversations run tool
calls on a real Hand, with and without approvals. After the last restart every acknowledged
message exists once, no call executed twice on the Hand, every tool projection's terminal
agrees with its task's, and no run is left running.

Bounded: about 40 s of kills (at least five, however slow a loaded machine makes each restart)
and at most 60 s to settle. `TOBE_SOAK_SEED` replays a run.
"""

from __future__ import annotations

import os
import random
import time
from collections import Counter
from pathlib import Path

import grpc
import pytest
from crash_checks import check_exactly_once, executions, mark_script, read_store, start_marking_hand
from helpers.eventually import eventually
from helpers.mind_process import MindProcess, issue_token, running_mind
from remote_processes import Chat

pytestmark = [pytest.mark.e2e, pytest.mark.long_running]

CONVERSATIONS = 4
MESSAGES_EACH = 8
KILL_PHASE = 40.0
# Kills the phase goes on for even after KILL_PHASE: a loaded machine restarts slowly.
MIN_KILLS = 5
SETTLE = 60.0


def label(conversation: int, message: int) -> str:
    return f"c{conversation}m{message}"


def tool_of(name: str) -> str:
    """Every other call needs a person's approval (`mark`); the rest run unasked (`peek`)."""
    return "mark" if int(name.split("m")[1]) % 2 == 0 else "peek"


def try_call(action) -> bool:
    try:
        action()
        return True
    except grpc.RpcError:
        return False  # the Mind is down or restarting: try again later


def approve_pending(chat: Chat, mind) -> None:
    for approval in read_store(mind).approvals:
        if approval.decision is None:
            try_call(lambda a=approval: chat.approve(a.id))


def quiet(mind, acknowledged: dict[str, str]) -> bool:
    store = read_store(mind)
    user_texts = Counter(m.text for m in store.messages if m.role == "user")
    return (
        all(user_texts[text] >= 1 for text in acknowledged.values())
        and not any(run.state == "running" for run in store.runs)
        and not any(p.status == "running" for p in store.projections)
        and not any(a.decision is None for a in store.approvals)
    )


def settled(mind: MindProcess, chat: Chat, acknowledged: dict[str, str]) -> bool:
    """Quiet yet? If not, approve what waits for a person meanwhile."""
    if quiet(mind, acknowledged):
        return True
    approve_pending(chat, mind)
    return False


def test_kill_9_at_random_points_keeps_every_message_and_runs_each_call_at_most_once(
    tmp_path: Path,
) -> None:
    seed = int(os.environ.get("TOBE_SOAK_SEED", random.randrange(1 << 30)))
    rng = random.Random(seed)
    print(f"soak seed {seed}")
    labels = [label(c, m) for c in range(CONVERSATIONS) for m in range(MESSAGES_EACH)]
    script = tmp_path / "script.yaml"
    script.write_text(mark_script(labels, seconds=0.6, tool=tool_of))
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    with running_mind(tmp_path, script=script, clients=()) as mind:
        token = issue_token(mind.url, kind="hand", principal="laptop", scopes=["serve:alice"])
        hand = start_marking_hand(mind, workspace, token)
        chat = Chat(mind.address, mind.gateway_metadata)
        acknowledged: dict[str, str] = {}  # idempotency key -> text
        kills = 0
        try:
            hand.wait_attached()
            keys = [f"p_soak{c}" for c in range(CONVERSATIONS)]
            for key in keys:
                assert try_call(lambda k=key: chat.create(k))
            pending = [(keys[c], label(c, m)) for m in range(MESSAGES_EACH) for c in range(4)]
            started = time.monotonic()
            next_kill = started + rng.uniform(0.3, 2.5)
            while time.monotonic() - started < KILL_PHASE or kills < MIN_KILLS:
                if pending:
                    key, name = pending[0]
                    text = f"mark {name}"
                    if try_call(lambda k=key, t=text, i=name: chat.send(k, t, i)):
                        acknowledged[name] = text
                        pending.pop(0)
                approve_pending(chat, mind)
                if time.monotonic() >= next_kill:
                    address = mind.address
                    mind.kill()
                    kills += 1
                    time.sleep(rng.uniform(0.0, 1.0))
                    mind.start(address)
                    # Kill the Mind, not the Hand's chances: calls need it attached to run.
                    hand.wait_attached(kills + 1)
                    next_kill = time.monotonic() + rng.uniform(0.3, 2.5)
                time.sleep(rng.uniform(0.05, 0.4))
            eventually(
                lambda: settled(mind, chat, acknowledged),
                SETTLE,
                interval=0.3,
                what=f"the Mind to settle (seed {seed})",
            )
        finally:
            chat.close()
            hand.kill()
        store = read_store(mind)
    user_texts = Counter(m.text for m in store.messages if m.role == "user")
    assert all(user_texts[text] == 1 for text in acknowledged.values()), f"seed {seed}"
    check_exactly_once(store, executions(workspace))
    assert len(acknowledged) >= CONVERSATIONS * 2, f"too few messages got through (seed {seed})"
    # Work really happened across the kills: most calls ran, each at most once.
    ran = sum(executions(workspace).values())
    assert ran >= len(acknowledged) // 2, f"{ran} of {len(acknowledged)} calls ran (seed {seed})"
