"""The compose deployment as local processes: first start provisions, a chat uses the Hand,
`tobe chat` runs in the Mind's container as documented."""

from __future__ import annotations

import json
import shutil
import stat
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import pexpect
import pytest
from compose_topology import REPO, LocalTopology, group_is_empty, load_compose
from helpers.face_client import FaceClient, run_ended

from tobe.v1 import common_pb2, face_pb2

pytestmark = pytest.mark.e2e
SCRIPT = Path(__file__).with_name("chat_script.yaml")
NOTE = "Remember: the compose topology works."
DOCKER_GUIDE = REPO / "docs" / "docker.md"
CHAT = ["tobe", "chat", "--address", "face:7420"]


@pytest.fixture
def topology() -> Iterator[LocalTopology]:
    # A short base path: the Management socket lives under it (Unix socket paths are short).
    workdir = Path(tempfile.mkdtemp(prefix="tobe-compose-"))
    local = LocalTopology(
        load_compose(),
        workdir,
        # What an operator would put in docker/.env (with the script mounted into the image).
        overrides={
            "mind": {"TOBE_PROVIDER__KIND": "scripted", "TOBE_PROVIDER__SCRIPT": str(SCRIPT)}
        },
    )
    try:
        yield local
    finally:
        local.down()
        shutil.rmtree(workdir, ignore_errors=True)


def only_secret(directory: Path, name: str) -> str:
    assert sorted(p.name for p in directory.iterdir()) == [name]
    assert stat.S_IMODE((directory / name).stat().st_mode) == 0o600
    return (directory / name).read_text().strip()


def tool_calls(client: FaceClient, run_id: str) -> list[common_pb2.ToolProjection]:
    return [
        e.tool_changed
        for e in client.events
        if e.HasField("tool_changed") and e.tool_changed.run_id == run_id
    ]


def assistant_text(client: FaceClient, run_id: str) -> str:
    return "".join(
        e.message_appended.text
        for e in client.events
        if e.HasField("message_appended")
        and e.message_appended.run_id == run_id
        and e.message_appended.role == common_pb2.MESSAGE_ROLE_ASSISTANT
    )


async def test_compose_services_start_healthy_and_a_chat_turn_reads_a_file_on_the_hand(
    topology: LocalTopology,
) -> None:
    (topology.volume("workspace") / "notes.txt").write_text(NOTE + "\n")

    topology.up()
    assert topology.started[0] == "mind"

    # First start: each service's secret is in its own volume, owner-only; the client
    # credential stays in the Mind's data volume.
    secrets = {
        name: only_secret(topology.volume(f"{name}-credentials"), f"{name}.token")
        for name in ("face", "hand", "awareness")
    }
    assert len(set(secrets.values())) == 3
    own = topology.volume("mind-data") / "credentials"
    assert sorted(p.name for p in own.iterdir()) == ["client.token"]
    client_token = (own / "client.token").read_text().strip()
    assert client_token not in secrets.values()

    client = await FaceClient.connect(topology.published("face", 7420), client_token)
    try:
        await client.command(subscribe=face_pb2.SubscribeCommand(after_id=0))
        created = await client.command(
            create_conversation=face_pb2.CreateConversationCommand(key="p_compose")
        )
        assert not created.HasField("error"), created
        reply = await client.command(
            send_chat=face_pb2.SendChatCommand(
                conversation_key="p_compose",
                text="What do my notes say?",
                idempotency_key=uuid.uuid4().hex,
            )
        )
        assert reply.HasField("send_chat"), reply
        run_id = reply.send_chat.run_id
        ended = await client.wait_event(run_ended(run_id))
        assert ended.run_changed.state == common_pb2.RUN_STATE_COMPLETED, ended

        final = {call.tool: call for call in tool_calls(client, run_id)}
        assert set(final) == {"workspace__read_file", "awareness_observe"}
        read = final["workspace__read_file"]
        assert read.status == common_pb2.TOOL_STATUS_SUCCEEDED, read.result_text
        assert read.hand_id and NOTE in read.result_text
        # The Mind reached Awareness with the link token it provisioned.
        observed = final["awareness_observe"]
        assert observed.status == common_pb2.TOOL_STATUS_SUCCEEDED, observed.result_text
        assert "the compose topology works" in assistant_text(client, run_id)
    finally:
        await client.close()

    # `tobe admin status` in the Mind's container finds Face where compose says it listens.
    command, env, cwd = topology.exec_in("mind", ["tobe", "admin", "status", "--json"])
    status = subprocess.run(command, env=env, cwd=cwd, capture_output=True, text=True, timeout=60)
    assert status.returncode == 0, status.stdout + status.stderr
    face = json.loads(status.stdout)["face"]
    assert (face["status"], face["address"]) == ("SERVING", topology.map_value("mind", "face:7420"))

    # Chat in the Mind's container as the Docker guide says, Face named by --address.
    assert f"exec mind {' '.join(CHAT)}" in DOCKER_GUIDE.read_text()
    command, env, cwd = topology.exec_in("mind", [*CHAT, "--conversation", "p_compose"])
    chat = pexpect.spawn(
        command[0],
        command[1:],
        env={**env, "TERM": "xterm"},
        cwd=cwd,
        encoding="utf-8",
        timeout=60,
        dimensions=(50, 160),
    )
    try:
        chat.expect("the compose topology works")  # the conversation's history, from Face
        chat.sendline("/quit")
        chat.expect(pexpect.EOF)
    finally:
        chat.close(force=True)

    pids = {name: c.process.pid for name, c in topology.containers.items() if c.process}
    codes = topology.down()
    assert codes == {name: 0 for name in pids}, codes
    assert all(group_is_empty(pid) for pid in pids.values())
