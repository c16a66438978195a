"""Memory through real processes: the model's tools with the Scripted provider, the owner
through Face and `tobe admin` (online and offline), events to subscribers, and a restart."""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest
from click.testing import CliRunner
from helpers import store_backend
from helpers.face_client import FaceClient
from helpers.face_process import FaceProcess, running_face
from helpers.mind_gateway import Gateway, payloads
from helpers.mind_process import MindProcess, running_mind

from tobe.cli import main
from tobe.v1 import common_pb2, face_pb2, mind_pb2

pytestmark = pytest.mark.e2e
KB16 = 16 * 1024


def _call(name: str, **arguments: object) -> dict[str, object]:
    return {"name": name, "arguments": arguments}


def _step(expect: dict[str, object] | None, calls: list[dict[str, object]]) -> dict[str, object]:
    step: dict[str, object] = {"tool_calls": calls}
    if expect is not None:
        step["expect"] = {"last_role": "tool", **expect}
    return step


def _ok(text: str) -> dict[str, object]:
    return {"last_is_error": False, "last_contains": text}


def _refused(reason: str) -> dict[str, object]:
    return {"last_is_error": True, "last_contains": reason}


# Each step's expectation is on the previous step's last tool result: a run completes only if
# every one held (a failed expectation fails the run).
RUNS = [
    {
        "match": "^remember",
        "steps": [
            _step(None, [_call("memory_write", key="diet", text="no peanuts")]),
            _step(_ok('"written":"diet"'), [_call("memory_write", key="city", text="Lyon")]),
            _step(_ok('"count":2'), [_call("memory_list")]),
            _step(_ok('{"entries":[{"key":"city","bytes":4'), [_call("memory_read", key="diet")]),
            _step(
                _ok("no peanuts"),
                [_call("memory_write", key="diet", text="no peanuts, no shellfish")],
            ),
            _step(_ok('"count":2'), [_call("memory_read", key="diet")]),
            _step(_ok("no peanuts, no shellfish"), [_call("memory_delete", key="city")]),
            _step(_ok('"existed":true'), [_call("memory_delete", key="city")]),
            _step(_ok('"existed":false'), [_call("memory_read", key="city")]),
            {"expect": _refused("no memory entry 'city'"), "text": "remembered"},
        ],
    },
    {
        "match": "^bad keys",
        "steps": [
            _step(None, [_call("memory_write", key="k" * 65, text="x")]),
            _step(
                _refused("is 65 characters long; at most 64 are allowed"),
                [_call("memory_write", key="two words", text="x")],
            ),
            _step(_refused("contains whitespace"), [_call("memory_write", key="a/b", text="x")]),
            _step(
                _refused("contains '/'"),
                [_call("memory_write", key="big", text="x" * (KB16 + 1))],
            ),
            {
                "expect": _refused(f"is {KB16 + 1} bytes (UTF-8); an entry holds at most {KB16}"),
                "text": "refused",
            },
        ],
    },
    {
        "match": "^fill entries",
        "steps": [
            _step(None, [_call("memory_write", key=f"e{n:02}", text="x") for n in range(64)]),
            _step(None, [_call("memory_write", key="e64", text="x")]),
            {"expect": _refused("already has 64 entries, the most allowed (64)"), "text": "full"},
        ],
    },
    {
        "match": "^fill bytes",
        "steps": [
            _step(
                None, [_call("memory_write", key=f"b{n:02}", text="x" * KB16) for n in range(16)]
            ),
            _step(None, [_call("memory_write", key="one-more", text="x")]),
            {
                "expect": _refused("a conversation holds at most 262144 bytes (256 KB)"),
                "text": "full",
            },
        ],
    },
]


class Admin:
    """`tobe admin` in this process against the Mind's data directory (online while the Mind
    runs, offline under the state lock otherwise)."""

    def __init__(self, data_dir: Path) -> None:
        self._env = {
            "TOBE_DATA_DIR": str(data_dir),
            "TOBE_CONFIG": str(data_dir / "absent.toml"),
            **store_backend.environment(data_dir),
        }

    def run(self, *args: str) -> str:
        result = CliRunner().invoke(main, ["admin", *args], env=self._env)
        assert result.exit_code == 0, (result.output, result.exception)
        return result.stdout

    def json(self, *args: str) -> Any:
        return json.loads(self.run(*args, "--json"))


@pytest.fixture(scope="module")
def mind() -> Iterator[MindProcess]:
    # Short, so the Management socket's path stays below the Unix limit.
    root = Path(tempfile.mkdtemp(prefix="tmem-"))
    script = root / "script.yaml"
    script.write_text(json.dumps({"runs": RUNS}), encoding="utf-8")  # JSON is YAML
    try:
        with running_mind(root, script=script) as process:
            yield process
    finally:
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
def gateway(mind: MindProcess) -> Iterator[Gateway]:
    client = Gateway.connect(mind)
    try:
        yield client
    finally:
        client.close()


def chat(gateway: Gateway, key: str, text: str) -> tuple[str, list]:
    """Send `text`, wait for its run to complete; its id and the events from the send on."""
    after = gateway.head()
    sent = gateway.send(key, text, f"{key}-{text}")
    events = gateway.wait_runs_ended(after, {sent.run_id})
    (ended,) = [r for r in payloads(events, "run_changed") if r.id == sent.run_id][-1:]
    assert (ended.state, ended.reason) == (common_pb2.RUN_STATE_COMPLETED, ""), ended.reason
    return sent.run_id, events


def list_memory(
    gateway: Gateway, key: str, principal: str = "alice"
) -> mind_pb2.ListMemoryResponse:
    request = mind_pb2.ListMemoryRequest(on_behalf_of=gateway.who(principal), conversation_key=key)
    return gateway.stub.ListMemory(request, metadata=gateway.md, timeout=10)


def test_the_model_writes_lists_reads_overwrites_and_deletes_and_subscribers_hear_of_it(
    gateway: Gateway,
) -> None:
    key = gateway.create("p_notebook")

    run_id, events = chat(gateway, key, "remember my diet")

    changes = [
        (c.key, c.deleted, c.size_bytes, c.run_id) for c in payloads(events, "memory_changed")
    ]
    assert changes == [
        ("diet", False, 10, run_id),
        ("city", False, 4, run_id),
        ("diet", False, 24, run_id),
        ("city", True, 0, run_id),
    ]
    memory = list_memory(gateway, key)
    assert [(e.key, e.text) for e in memory.entries] == [("diet", "no peanuts, no shellfish")]
    assert memory.total_bytes == 24


def test_each_key_rule_and_the_text_limit_reach_the_model_as_the_tool_error(
    gateway: Gateway,
) -> None:
    key = gateway.create("p_badkeys")

    chat(gateway, key, "bad keys")

    errors = [
        m.text for m in gateway.history(key).messages if m.role == common_pb2.MESSAGE_ROLE_TOOL
    ]
    assert len(errors) == 4 and all("memory" in text for text in errors)
    assert list_memory(gateway, key).entries == []


def test_the_65th_entry_is_refused_to_the_model(gateway: Gateway) -> None:
    key = gateway.create("p_entries")

    chat(gateway, key, "fill entries")

    assert [e.key for e in list_memory(gateway, key).entries] == [f"e{n:02}" for n in range(64)]


def test_a_write_past_256_kb_in_all_is_refused_to_the_model(gateway: Gateway) -> None:
    key = gateway.create("p_bytes")

    chat(gateway, key, "fill bytes")

    memory = list_memory(gateway, key)
    assert memory.total_bytes == 16 * KB16 and "one-more" not in {e.key for e in memory.entries}


def test_memory_survives_a_mind_restart(mind: MindProcess) -> None:
    before = Gateway.connect(mind)
    try:
        key = before.create("p_restart")
        chat(before, key, "remember across a restart")
    finally:
        before.close()

    mind.restart()

    after = Gateway.connect(mind)
    try:
        memory = list_memory(after, key)
        assert [(e.key, e.text) for e in memory.entries] == [("diet", "no peanuts, no shellfish")]
    finally:
        after.close()


@pytest.fixture
def face(mind: MindProcess) -> Iterator[FaceProcess]:
    with running_face(mind) as process:
        yield process


async def test_through_face_members_list_and_only_the_owner_deletes(
    mind: MindProcess, gateway: Gateway, face: FaceProcess
) -> None:
    key = gateway.create("g_family", members=("bob",))
    chat(gateway, key, "remember for the family")
    alice = await FaceClient.connect(face.address, mind.client_tokens["alice"])
    bob = await FaceClient.connect(face.address, mind.client_tokens["bob"])
    try:
        await bob.command(subscribe=face_pb2.SubscribeCommand(after_id=gateway.head()))

        listed = await bob.command(list_memory=face_pb2.ListMemoryCommand(conversation_key=key))
        refused = await bob.command(
            delete_memory=face_pb2.DeleteMemoryCommand(conversation_key=key, key="diet")
        )
        deleted = await alice.command(
            delete_memory=face_pb2.DeleteMemoryCommand(conversation_key=key, key="diet")
        )
        again = await alice.command(
            delete_memory=face_pb2.DeleteMemoryCommand(conversation_key=key, key="diet")
        )
        event = await bob.wait_event(lambda e: e.HasField("memory_changed"))

        assert [(e.key, e.text) for e in listed.list_memory.entries] == [
            ("diet", "no peanuts, no shellfish")
        ]
        assert refused.error.code == grpc.StatusCode.PERMISSION_DENIED.value[0]
        assert deleted.delete_memory.existed and not again.delete_memory.existed
        assert (event.conversation_key, event.memory_changed.key) == (key, "diet")
        assert event.memory_changed.deleted and event.memory_changed.run_id == ""
        assert list_memory(gateway, key).entries == []
    finally:
        await alice.close()
        await bob.close()


def test_the_operator_lists_and_deletes_online_with_an_audit_row(
    mind: MindProcess, gateway: Gateway
) -> None:
    key = gateway.create("p_operated")
    chat(gateway, key, "remember for the operator")
    admin = Admin(mind.data_dir)

    listed = admin.json("memory", "list", key)
    deleted = admin.json("memory", "delete", key, "diet")
    missing = admin.json("memory", "delete", key, "diet")

    assert [(e["key"], e["text"]) for e in listed["entries"]] == [
        ("diet", "no peanuts, no shellfish")
    ]
    assert listed["total_bytes"] == 24
    assert deleted["existed"] is True and missing["existed"] is False
    audited = [
        (e["target"], e["details"])
        for e in admin.json("audit", "--action", "memory.delete", "--target", key)
    ]
    assert audited == [
        (key, {"key": "diet", "existed": False}),
        (key, {"key": "diet", "existed": True}),
    ]
    assert list_memory(gateway, key).entries == []


def test_the_operator_lists_and_deletes_offline_and_deleting_a_conversation_counts_its_memory(
    mind: MindProcess,
) -> None:
    gateway = Gateway.connect(mind)
    try:
        key = gateway.create("p_offline")
        chat(gateway, key, "remember for later")
    finally:
        gateway.close()
    mind.terminate()
    admin = Admin(mind.data_dir)
    try:
        assert "offline" in admin.run("status")
        listed = admin.json("memory", "list", key)
        deleted = admin.json("memory", "delete", key, "diet")
        removed = admin.json("conversations", "delete", "p_notebook", "--yes")["removed"]
        (audited,) = admin.json("audit", "--action", "memory.delete", "--target", key)
    finally:
        mind.start()

    assert [e["key"] for e in listed["entries"]] == ["diet"]
    assert deleted["existed"] is True and audited["details"] == {"key": "diet", "existed": True}
    assert removed["memory_entries"] == 1
