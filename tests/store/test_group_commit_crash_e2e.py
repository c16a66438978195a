"""kill -9 of the Mind while its writer holds a group of executed but uncommitted units: no
caller of the group was acknowledged, and after the restart none of their changes exists."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import grpc
import pytest
from helpers.eventually import eventually
from helpers.mind_gateway import SCRIPT, Gateway
from helpers.mind_process import running_mind

from tobe.v1 import common_pb2

pytestmark = pytest.mark.e2e

SENDS = 6

# Loaded into the Mind through PYTHONPATH. Once `hold` exists, the writer thread sleeps after
# its next commit (so the units arriving meanwhile queue into one group), then stops forever
# inside the commit of the first group of two or more units, after running them, and says how
# many it holds. Everything else is the Mind's own code.
HOOK = """
import os
import threading
import time

from sqlalchemy import Engine, event

from mind.store import group_writer

HOLD = os.environ["TEST_WRITER_HOLD"]
group_size = threading.local()
real_commit_group = group_writer.GroupWriter._commit


def commit_group(self, group):
    group_size.value = len(group)
    real_commit_group(self, group)
    if os.path.exists(HOLD) and len(group) == 1:
        time.sleep(0.5)


@event.listens_for(Engine, "commit")
def before_commit(connection):
    if getattr(group_size, "value", 0) >= 2 and os.path.exists(HOLD):
        with open(HOLD + ".held", "w") as out:
            out.write(str(group_size.value))
        time.sleep(3600)


group_writer.GroupWriter._commit = commit_group
"""


def test_units_held_in_an_uncommitted_group_were_never_acknowledged(tmp_path: Path) -> None:
    hooks = tmp_path / "hooks"
    hooks.mkdir()
    (hooks / "sitecustomize.py").write_text(HOOK)
    hold = tmp_path / "hold"
    script = tmp_path / "script.yaml"
    script.write_text(SCRIPT)
    # The hooks come first; the code under test stays importable as the caller found it.
    path = os.pathsep.join(filter(None, [str(hooks), os.environ.get("PYTHONPATH", "")]))
    with running_mind(tmp_path, script=script, PYTHONPATH=path, TEST_WRITER_HOLD=str(hold)) as mind:
        gateway = Gateway.connect(mind)
        keys = [gateway.create(f"p_held_{n}") for n in range(SENDS)]
        hold.touch()
        acknowledged: dict[str, int] = {}
        refused: dict[str, grpc.StatusCode] = {}

        def send(key: str) -> None:
            try:
                response = gateway.send(key, f"hello {key}", f"idem-{key}")
                acknowledged[key] = response.message_id
            except grpc.RpcError as error:
                refused[key] = error.code()

        senders = [threading.Thread(target=send, args=(key,)) for key in keys]
        for sender in senders:
            sender.start()
        held = Path(f"{hold}.held")
        eventually(held.exists, 30, what="the writer holding a group", interval=0.01)
        time.sleep(0.3)  # anything acknowledged wrongly would have reached the client by now
        held_units = int(held.read_text())
        before_kill = dict(acknowledged)
        mind.kill()
        for sender in senders:
            sender.join(30)
        gateway.close()

        assert held_units >= 2
        assert len(before_kill) < SENDS, "every send was acknowledged: none was in the group"
        hold.unlink()
        mind.start()
        gateway = Gateway.connect(mind)
        try:
            for key in keys:
                messages = gateway.history(key).messages
                texts = [m.text for m in messages if m.role == common_pb2.MESSAGE_ROLE_USER]
                if key in before_kill:
                    assert texts == [f"hello {key}"], f"{key} was acknowledged but is not stored"
                else:
                    assert texts == [], f"{key} was never acknowledged but was stored"
                    assert refused.get(key) == grpc.StatusCode.UNAVAILABLE
        finally:
            gateway.close()
