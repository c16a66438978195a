"""`tobe admin conversations compact` against a running Mind with a scripted model: the running
Mind compacts, the answer says what was summarised, and the audit row records it."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers.admin_cli import Admin
from helpers.mind_gateway import Gateway
from helpers.mind_process import MindProcess, running_mind

from tobe.v1 import events_pb2

pytestmark = pytest.mark.e2e
KEY = "p_ops"
SCRIPT = """
runs:
  - match: ".*"
    steps:
      - {text: "noted"}
"""


@pytest.fixture
def mind(tmp_path: Path) -> Iterator[MindProcess]:
    script = tmp_path / "script.yaml"
    script.write_text(SCRIPT)
    # Compaction needs the model's context window; this one is far from full after a few chats.
    model = {"id": "roomy", "context_window": 100_000, "max_output": 256}
    window = {"TOBE_PROVIDER__MODEL": "roomy", "TOBE_PROVIDER__MODELS": json.dumps([model])}
    with running_mind(tmp_path, script=script, **window) as process:
        yield process


def test_an_operator_compacts_a_conversation_through_the_running_mind(mind: MindProcess) -> None:
    gateway = Gateway.connect(mind)
    try:
        gateway.create(KEY)
        after = gateway.head()
        for n in range(6):
            sent = gateway.send(KEY, f"message {n}", f"ops-{n}")
            gateway.wait_runs_ended(after, {sent.run_id})
        admin = Admin(mind.data_dir)
        compacted = admin.json("conversations", "compact", KEY)
        assert compacted["key"] == KEY and compacted["trigger"] == "requested"
        assert compacted["generation"] == 1 and compacted["messages_summarised"] > 0
        (entry,) = admin.json("audit", "--action", "conversation.compact")
        assert entry["target"] == KEY
        assert entry["details"] == {
            field: compacted[field]
            for field in ("generation", "through_message_id", "messages_summarised")
        }
        (event,) = [
            e.context_compacted
            for e in gateway.replay(after)[0]
            if e.WhichOneof("payload") == "context_compacted"
        ]
        assert event.trigger == events_pb2.COMPACTION_TRIGGER_REQUESTED
        assert event.generation == 1
    finally:
        gateway.close()


def test_an_unknown_conversation_is_not_found_and_not_audited(mind: MindProcess) -> None:
    admin = Admin(mind.data_dir)
    result = admin.run("conversations", "compact", "p_nobody", ok=False)
    assert "no conversation 'p_nobody'" in result.stderr
    assert admin.json("audit") == []
