"""The MQTT adapter inside a real Awareness process, against a real Mosquitto broker."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import aiomqtt
import pytest
from awareness_harness import BUILTIN, AwarenessProcess, Client, add_adapter, next_batch
from helpers.eventually import eventually_async
from mosquitto import MOSQUITTO_PASSWD, Mosquitto, running_mosquitto

from tobe.v1 import awareness_pb2 as pb
from tobe.v1 import common_pb2

MQTT = BUILTIN / "mqtt"


@pytest.fixture
def broker() -> Iterator[Mosquitto]:
    with running_mosquitto() as mosquitto:
        yield mosquitto


async def _started(awareness: AwarenessProcess, broker: Mosquitto, **config: Any) -> Client:
    """Awareness running the adapter (connected and subscribed) with `config` over the default."""
    add_adapter(awareness.adapters_dir, MQTT)
    default = json.loads((MQTT / "config.default.json").read_text())
    awareness.write_config(
        "mqtt", {**default, "auto_start": True, "host": "127.0.0.1", "port": broker.port, **config}
    )
    awareness.start()
    client = Client(awareness.target)
    await _adapter_in(client, "running")
    return client


async def _adapter_in(client: Client, state: str) -> pb.AdapterInfo:
    async def info() -> pb.AdapterInfo:
        [adapter] = [a for a in await client.adapters() if a.name == "mqtt"]
        return adapter

    return await eventually_async(
        info, until=lambda a: a.state == state, what=f"the mqtt adapter {state}"
    )


async def _publish(broker: Mosquitto, topic: str, payload: bytes | str, retain: bool = False):
    """Publish as another client; QoS 1, so the broker has it when this returns."""
    async with aiomqtt.Client("127.0.0.1", broker.port) as publisher:
        await publisher.publish(topic, payload, qos=1, retain=retain)


async def _observations(stream, count: int) -> list[pb.Observation]:
    seen: list[pb.Observation] = []
    while len(seen) < count:
        seen += (await next_batch(stream)).observations
    return seen


def _content(observation: pb.Observation) -> dict[str, Any]:
    return json.loads(observation.content_json)


async def test_messages_on_subscribed_topics_are_observed_with_their_subscriptions_trust(
    awareness_dirs: AwarenessProcess, broker: Mosquitto
):
    client = await _started(
        awareness_dirs,
        broker,
        subscriptions=[
            {"topic": "home/alarm/#", "trust": "high", "title": "Alarm"},
            {"topic": "home/+/temperature"},
        ],
    )
    stream = client.subscribe()
    await _publish(broker, "home/kitchen/humidity", "40")
    await _publish(broker, "home/kitchen/temperature", '{"celsius": 21.5}')
    await _publish(broker, "home/alarm/door", "open")
    await _publish(broker, "home/alarm/camera", b"\xff\xd8\x00")

    by_topic = {_content(o)["topic"]: o for o in await _observations(stream, 3)}
    assert set(by_topic) == {"home/kitchen/temperature", "home/alarm/door", "home/alarm/camera"}
    temperature, door, camera = (
        by_topic[t] for t in ("home/kitchen/temperature", "home/alarm/door", "home/alarm/camera")
    )
    assert (temperature.trust, door.trust, camera.trust) == (
        pb.TRUST_LOW,
        pb.TRUST_HIGH,
        pb.TRUST_HIGH,
    )
    assert (door.source_key, door.source_title) == ("home/alarm/#", "Alarm")
    assert (temperature.source_key, temperature.source_title) == ("home/+/temperature",) * 2
    assert _content(temperature)["payload"] == {"celsius": 21.5}
    assert _content(door) == {
        "kind": "mqtt_message",
        "topic": "home/alarm/door",
        "subscription": "home/alarm/#",
        "payload": "open",
        "binary": False,
        "oversized": False,
        "size_bytes": 4,
        "qos": 0,
        "retained": False,
    }
    assert (_content(camera)["payload"], _content(camera)["binary"]) == ("/9gA", True)

    adapter_id = await client.adapter_id("mqtt")
    values = (await client.observe(adapter_id, "last_values"))["result"]["values"]
    assert [v["topic"] for v in values] == sorted(by_topic)
    alarm = (await client.observe(adapter_id, "last_values", topic="home/alarm/+"))["result"]
    assert [v["payload"] for v in alarm["values"]] == ["/9gA", "open"]
    listed = (await client.observe(adapter_id, "subscriptions"))["result"]
    assert listed["connected"] is True
    assert [(s["topic"], s["trust"]) for s in listed["subscriptions"]] == [
        ("home/alarm/#", "high"),
        ("home/+/temperature", "low"),
    ]
    assert all(s["last_message_at"] for s in listed["subscriptions"])
    stream.cancel()
    await client.close()


async def test_publish_reaches_another_subscriber_only_on_allowed_topics(
    awareness_dirs: AwarenessProcess, broker: Mosquitto
):
    client = await _started(awareness_dirs, broker, publish_topics=["home/lights/+/set"])
    adapter_id = await client.adapter_id("mqtt")
    [adapter] = [a for a in await client.adapters() if a.adapter_id == adapter_id]
    [publish] = adapter.write_actions
    assert publish.effect == common_pb2.EFFECT_CLASS_EXTERNAL_SIDE_EFFECT
    async with aiomqtt.Client("127.0.0.1", broker.port) as subscriber:
        await subscriber.subscribe("home/#", qos=1)
        messages = subscriber.messages

        sent = await client.interact(
            adapter_id, "publish", topic="home/lights/kitchen/set", payload={"on": True}, qos=1
        )
        assert sent["status"] == "success", sent
        received = await asyncio.wait_for(anext(messages), 15)
        assert (received.topic.value, received.payload) == (
            "home/lights/kitchen/set",
            b'{"on":true}',
        )

        outside = await client.interact(adapter_id, "publish", topic="home/alarm/off", payload="1")
        assert outside["status"] == "error"
        assert "publish_topics" in outside["error"] and "home/lights/+/set" in outside["error"]
        wildcard = await client.interact(
            adapter_id, "publish", topic="home/lights/+/set", payload=""
        )
        assert wildcard["status"] == "error" and "wildcards" in wildcard["error"]

        # The refused ones never reached the broker: the next message is the next allowed one.
        await client.interact(adapter_id, "publish", topic="home/lights/hall/set", payload="off")
        received = await asyncio.wait_for(anext(messages), 15)
        assert (received.topic.value, received.payload) == ("home/lights/hall/set", b"off")
    await client.close()


async def test_a_retained_value_is_observed_once_across_reconnections(
    awareness_dirs: AwarenessProcess, broker: Mosquitto
):
    await _publish(broker, "home/mode", "away", retain=True)
    client = await _started(
        awareness_dirs, broker, retained=True, subscriptions=[{"topic": "home/#", "trust": "high"}]
    )
    stream = client.subscribe()
    [mode] = await _observations(stream, 1)
    assert (_content(mode)["payload"], _content(mode)["retained"]) == ("away", True)

    # A new registration subscribes again and the broker sends the retained value again.
    await client.unregister(await client.adapter_id("mqtt"))
    registered = await client.register("mqtt")
    assert json.loads(registered.content_json)["status"] == "success"
    await _adapter_in(client, "running")
    await _publish(broker, "home/marker", "m")
    [marker] = await _observations(stream, 1)
    assert _content(marker)["topic"] == "home/marker"
    stream.cancel()
    await client.close()


@pytest.mark.skipif(not MOSQUITTO_PASSWD.exists(), reason="needs mosquitto_passwd")
async def test_a_wrong_password_fails_the_adapter_with_an_error_that_hides_the_password(
    awareness_dirs: AwarenessProcess,
):
    wrong = "wrong-password-5b7e21"
    with running_mosquitto({"alice": "right-password-c04d"}) as broker:
        add_adapter(awareness_dirs.adapters_dir, MQTT)
        default = json.loads((MQTT / "config.default.json").read_text())
        awareness_dirs.write_config(
            "mqtt",
            {
                **default,
                "auto_start": True,
                "host": "127.0.0.1",
                "port": broker.port,
                "username": "alice",
                "password": wrong,
            },
        )
        awareness_dirs.start()
        client = Client(awareness_dirs.target)
        info = await _adapter_in(client, "failed")
        assert "cannot connect to the MQTT broker" in info.last_error
        assert "'alice'" in info.last_error and "Not authorized" in info.last_error
        assert wrong not in info.last_error
        assert wrong not in info.config_json
        assert wrong not in awareness_dirs.stderr()
        await client.close()


async def test_the_adapter_fails_while_the_broker_is_down_and_recovers_when_it_is_back(
    awareness_dirs: AwarenessProcess, broker: Mosquitto
):
    client = await _started(
        awareness_dirs,
        broker,
        subscriptions=[{"topic": "home/#", "trust": "high"}],
        publish_topics=["home/#"],
    )
    adapter_id = await client.adapter_id("mqtt")
    stream = client.subscribe()
    await _publish(broker, "home/before", "1")
    [before] = await _observations(stream, 1)
    assert _content(before)["topic"] == "home/before"

    broker.stop()
    failed = await _adapter_in(client, "failed")
    # The loss, or a reconnection refused while the broker is still down.
    assert f"the MQTT broker at 127.0.0.1:{broker.port}" in failed.last_error
    refused = await client.interact(adapter_id, "publish", topic="home/meanwhile", payload="x")
    assert refused["status"] == "error" and "not connected" in refused["error"]

    broker.start()
    running = await _adapter_in(client, "running")
    assert running.restarts >= 1
    # The adapter's own publish comes back through its subscription, then another client's.
    sent = await client.interact(adapter_id, "publish", topic="home/after", payload="2", qos=1)
    assert sent["status"] == "success", sent
    await _publish(broker, "home/other", "3")
    await _publish(broker, "home/marker", "4")
    topics = [_content(o)["topic"] for o in await _observations(stream, 3)]
    assert sorted(topics) == ["home/after", "home/marker", "home/other"]
    stream.cancel()
    await client.close()
