"""Registering adapters by directory name only, re-registering, and config validation."""

from __future__ import annotations

import json

import grpc
import pytest
from awareness_harness import PROBE, AwarenessProcess, Client, add_adapter


@pytest.mark.parametrize("name", ["../x", "/tmp/x", "a/b", "..", ".", "", "probe/../probe"])
async def test_register_refuses_anything_but_a_plain_directory_name(
    shared_client: Client, name: str
):
    client = shared_client
    before = [a.adapter_id for a in await client.adapters()]
    result = await client.register(name)
    content = json.loads(result.content_json)
    assert content["status"] == "error"
    assert "plain directory name" in content["error"]
    assert [a.adapter_id for a in await client.adapters()] == before


async def test_register_of_a_missing_directory_is_a_clear_error(shared_client: Client):
    client = shared_client
    content = json.loads((await client.register("nosuch")).content_json)
    assert content["status"] == "error"
    assert "no adapter directory named 'nosuch'" in content["error"]


async def test_reregister_gives_a_new_id_and_rereads_an_edited_config(
    shared_awareness: AwarenessProcess, shared_client: Client
):
    client = shared_client
    add_adapter(shared_awareness.adapters_dir, PROBE, "edited")
    old_id = (await client.register("edited")).adapter_id
    assert (await client.observe(old_id, "settings"))["result"] == {"greeting": "hello"}
    result = await client.unregister(old_id)
    assert json.loads(result.content_json) == {
        "status": "success",
        "unregistered": old_id,
        "name": "edited",
    }
    config_path = shared_awareness.instance_dir("edited") / "config.json"
    config = json.loads(config_path.read_text())
    config_path.write_text(json.dumps({**config, "greeting": "bonjour"}))

    registered = await client.register("edited")
    new_id = registered.adapter_id
    assert new_id and new_id != old_id
    assert json.loads(registered.content_json)["adapter"]["config"]["greeting"] == "bonjour"
    assert (await client.observe(new_id, "settings"))["result"] == {"greeting": "bonjour"}
    stale = await client.observe(old_id, "settings")
    assert stale["status"] == "error" and "no adapter with id" in stale["error"]


async def test_reregister_runs_the_current_code(
    shared_awareness: AwarenessProcess, shared_client: Client
):
    client = shared_client
    add_adapter(shared_awareness.adapters_dir, PROBE, "recoded")
    old_id = (await client.register("recoded")).adapter_id
    await client.unregister(old_id)
    entry = shared_awareness.adapters_dir / "recoded" / "adapter.py"
    entry.write_text(
        entry.read_text().replace('"greeting": self.context.config["greeting"]', '"greeting": "v2"')
    )
    new_id = (await client.register("recoded")).adapter_id
    assert (await client.observe(new_id, "settings"))["result"] == {"greeting": "v2"}


async def test_invalid_config_names_the_field_and_the_adapter_is_not_registered(
    shared_awareness: AwarenessProcess, shared_client: Client
):
    client = shared_client
    add_adapter(shared_awareness.adapters_dir, PROBE, "broken")
    shared_awareness.write_config("broken", {"api_key": "k" * 12, "greeting": 7})
    content = json.loads((await client.register("broken")).content_json)
    assert content["status"] == "error"
    assert "greeting" in content["error"] and "string" in content["error"]
    assert "broken" not in [a.name for a in await client.adapters()]


async def test_missing_config_is_created_from_the_default_on_first_registration(
    shared_awareness: AwarenessProcess, shared_client: Client
):
    client = shared_client
    fresh = add_adapter(shared_awareness.adapters_dir, PROBE, "fresh")
    created = shared_awareness.instance_dir("fresh") / "config.json"
    assert not created.exists()
    result = await client.register("fresh")
    assert json.loads(result.content_json)["status"] == "success"
    assert json.loads(created.read_text()) == json.loads(
        (fresh / "config.default.json").read_text()
    )
    assert not (fresh / "config.json").exists()


async def test_interact_without_adapter_id_is_invalid_argument(shared_client: Client):
    client = shared_client
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await client.interact("", "emit", trust="high")
    assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT


async def test_adapter_runtime_files_are_confined_to_its_data_directory(shared_client: Client):
    client = shared_client
    probe = await client.adapter_id("probe")
    inside = await client.interact(probe, "write_data", path="notes/a.txt")
    assert inside["status"] == "success"
    for path in ("../escape.txt", "/tmp/escape.txt", "notes/../../escape.txt"):
        outside = await client.interact(probe, "write_data", path=path)
        assert outside["status"] == "error", path
        assert "outside the adapter's data/ directory" in outside["error"]
