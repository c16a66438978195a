"""Values marked `x-sensitive` through any schema construct never leave a real Awareness process.

One process hosts the `secretive` test adapter twice: `secretive` serves the actions and
`secretive-failing` raises with its whole config in `start`. Their config holds one secret per
construct; action results and emitted content hold values their own schemas mark.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
from awareness_harness import HERE, AwarenessProcess, Client, add_adapter, batch_with, new_process
from helpers.eventually import eventually

SECRETIVE = HERE / "adapters" / "secretive"
DEFAULT = json.loads((SECRETIVE / "config.default.json").read_text())
MASK = "[REDACTED]"
# Where the config schema marks a secret, by the construct that marks it.
CONSTRUCTS = {
    "$ref": ("password",),
    "oneOf": ("token",),
    "anyOf": ("proxy", "password"),
    "allOf": ("login", "pin"),
    "patternProperties": ("headers", "x-api-key"),
}
HOSTED = ("secretive", "secretive-failing")


def _at(value: Any, path: tuple[str, ...]) -> Any:
    for key in path:
        value = value[key]
    return value


def _shows_unmarked_settings(config: dict[str, Any]) -> bool:
    return (config["proxy"]["url"], config["login"]["user"], config["headers"]["accept"]) == (
        "http://proxy.test:3128",
        "ann",
        "application/json",
    )


@pytest.fixture(scope="module")
def secretive() -> Iterator[AwarenessProcess]:
    with new_process() as proc:
        add_adapter(proc.adapters_dir, SECRETIVE)
        add_adapter(proc.adapters_dir, SECRETIVE, "secretive-failing")
        proc.write_config("secretive-failing", {**DEFAULT, "fail_start": True})
        proc.start()
        yield proc


@pytest.fixture
async def secretive_client(secretive: AwarenessProcess) -> AsyncIterator[Client]:
    client = Client(secretive.target)
    try:
        yield client
    finally:
        await client.close()


@pytest.mark.parametrize("construct", CONSTRUCTS)
async def test_a_config_secret_marked_through_any_construct_never_shows(
    construct: str, secretive: AwarenessProcess, secretive_client: Client
):
    path = CONSTRUCTS[construct]
    secret = _at(DEFAULT, path)

    infos = [a for a in await secretive_client.adapters() if a.name in HOSTED]
    assert sorted(a.name for a in infos) == sorted(HOSTED)
    for info in infos:
        assert secret not in str(info)
        config = json.loads(info.config_json)
        assert _at(config, path) == MASK
        assert _shows_unmarked_settings(config)

    listed = await secretive_client.observe("", "list_adapters")
    assert secret not in json.dumps(listed)
    configs = [a["config"] for a in listed["adapters"] if a["name"] in HOSTED]
    assert [_at(c, path) for c in configs] == [MASK, MASK]

    leaked = await secretive_client.interact(await secretive_client.adapter_id("secretive"), "leak")
    assert leaked["status"] == "error"
    assert "upstream refused" in leaked["error"] and MASK in leaked["error"]
    assert secret not in json.dumps(leaked)

    logs = eventually(
        secretive.stderr,
        what="the failing start in the log",
        until=lambda text: "cannot sign in with" in text,
    )
    # Both adapters logged their config at start, the failing one its exception, and the leak
    # action's traceback went to the log: all masked.
    assert logs.count("secretive starting with config") >= 2
    assert "upstream refused" in logs
    assert secret not in logs


async def test_a_result_value_its_schema_marks_and_an_echoed_config_secret_arrive_masked(
    secretive_client: Client,
):
    token = "result-token-3e8d1f07"
    adapter_id = await secretive_client.adapter_id("secretive")
    reply = await secretive_client.observe(adapter_id, "session", token=token)
    assert reply["status"] == "success", reply
    assert reply["result"] == {
        "user": "ann",
        "session": {"token": MASK, "expires_in": 3600},
        "note": f"signed in with {MASK}",
    }


async def test_a_content_value_its_schema_marks_is_masked_before_it_is_journalled(
    secretive: AwarenessProcess, secretive_client: Client
):
    token = "content-token-6a0c2b95"
    adapter_id = await secretive_client.adapter_id("secretive")
    stream = secretive_client.subscribe()
    try:
        sent = await secretive_client.interact(adapter_id, "notify", token=token)
        observation_id = sent["result"]["observation_id"]
        batch = await batch_with(stream, observation_id)
    finally:
        stream.cancel()
    [observation] = [o for o in batch.observations if o.id == observation_id]
    assert json.loads(observation.content_json) == {
        "from": "ann",
        "headers": {"subject": "hello", "x-session-token": MASK},
        "note": f"sent with {MASK}",
    }
    journal = secretive.data_dir / "awareness"
    stored = b"".join(p.read_bytes() for p in journal.glob("journal.db*"))
    assert observation_id.encode() in stored
    assert token.encode() not in stored
    assert DEFAULT["headers"]["x-api-key"].encode() not in stored


@pytest.mark.parametrize(
    "which, named",
    [("result", "result_schema of action 'session'"), ("content", "content_schema")],
)
async def test_an_invalid_result_or_content_schema_refuses_the_adapter(
    which: str, named: str, secretive: AwarenessProcess, secretive_client: Client
):
    name = f"secretive-bad-{which}"
    add_adapter(secretive.adapters_dir, SECRETIVE, name)
    secretive.write_config(name, {**DEFAULT, "broken_schema": which})
    refused = json.loads((await secretive_client.register(name)).content_json)
    assert refused["status"] == "error"
    assert f"{named} is not a valid JSON Schema: 'strin'" in refused["error"]
    assert name not in [a.name for a in await secretive_client.adapters()]
