"""Sensitive config values stay out of list_adapters, logs and errors; calls need the token."""

from __future__ import annotations

import json
import signal

import grpc
import pytest
from awareness_harness import PROBE, AwarenessProcess, Client, add_adapter
from grpc_health.v1 import health_pb2, health_pb2_grpc

SECRET = json.loads((PROBE / "config.default.json").read_text())["api_key"]


async def test_sensitive_values_never_appear_in_listings_errors_or_logs(
    awareness: AwarenessProcess, client: Client
):
    probe = await client.adapter_id("probe")
    [info] = [a for a in await client.adapters() if a.adapter_id == probe]
    assert SECRET not in str(info)
    assert json.loads(info.config_json)["api_key"] == "[REDACTED]"
    assert json.loads(info.config_json)["greeting"] == "hello"
    assert json.loads(info.config_schema_json)["properties"]["api_key"]["x-sensitive"] is True

    listed = await client.observe("", "list_adapters")
    assert SECRET not in json.dumps(listed)

    # The adapter raises with the key in its message: the agent sees it masked.
    leaked = await client.interact(probe, "leak")
    assert leaked["status"] == "error"
    assert "upstream refused key [REDACTED]" in leaked["error"]
    assert SECRET not in json.dumps(leaked)

    # An invalid config for a sensitive field names the field only.
    add_adapter(awareness.adapters_dir, PROBE, "broken")
    awareness.write_config("broken", {"api_key": 12345678, "greeting": "x"})
    refused = json.loads((await client.register("broken")).content_json)
    assert "api_key" in refused["error"] and "12345678" not in refused["error"]

    assert awareness.stop(signal.SIGTERM) == 0
    logs = awareness.all_stderr()
    # The probe logged its key at start and the leak action's traceback went to the log.
    assert "probe starting with api key [REDACTED]" in logs
    assert "upstream refused key [REDACTED]" in logs
    assert SECRET not in logs
    assert "12345678" not in logs


async def test_calls_without_the_service_token_are_unauthenticated(awareness: AwarenessProcess):
    for token in ("", "wrong-token"):
        client = Client(awareness.target, token=token)
        with pytest.raises(grpc.aio.AioRpcError) as caught:
            await client.adapters()
        assert caught.value.code() == grpc.StatusCode.UNAUTHENTICATED
        stream = client.subscribe()
        with pytest.raises(grpc.aio.AioRpcError) as caught:
            await stream.read()
        assert caught.value.code() == grpc.StatusCode.UNAUTHENTICATED
        await client.close()
    assert "test-service-token" not in awareness.stderr()


async def test_health_stays_public(awareness: AwarenessProcess):
    async with grpc.aio.insecure_channel(awareness.target) as channel:
        reply = await health_pb2_grpc.HealthStub(channel).Check(
            health_pb2.HealthCheckRequest(service="tobe.v1.Awareness")
        )
    assert reply.status == health_pb2.HealthCheckResponse.SERVING
