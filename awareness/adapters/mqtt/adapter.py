"""MQTT: messages on subscribed topic filters become observations; the agent may publish.

Each configured subscription is a topic filter with its own trust and its own conversation
(`source_key` is the filter, not the topic, so a busy `home/#` stays one conversation). A
message is attributed to the first filter it matches, in config order.

`start` connects and subscribes; `run` receives until the connection is lost and then raises,
so the engine's supervisor reconnects with backoff. Messages published while the adapter was
disconnected are not delivered later (clean sessions), except retained ones: with `retained`
on, the value a topic holds at subscription time is observed, and only when it differs from the
last payload observed on that topic (kept in `data/observed.json`), so reconnecting never
observes the same retained value twice.

`publish` writes only to topics matching a `publish_topics` filter: none by default.

aiomqtt (with paho under it) is loaded by the first connection or topic the adapter reads:
registering an MQTT adapter that is not started loads neither.
"""

from __future__ import annotations

import contextlib
import ssl
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from awareness.adapter import Action, ActionFailed, Adapter, AdapterContext, Effect

from . import payloads, settings

if TYPE_CHECKING:
    from aiomqtt import Client, Message
    from paho.mqtt.reasoncodes import ReasonCode

OBSERVED = "observed.json"  # in data/: topic -> digest of the last observed payload


class MqttAdapter(Adapter):
    description = "MQTT broker: subscribed topics become observations; publish to allowed topics."
    auto_start = False

    def __init__(self, context: AdapterContext) -> None:
        super().__init__(context)
        self.settings = settings.read(context.config)
        self._client: Client | None = None
        self._connection: contextlib.AsyncExitStack | None = None
        self._last_values: dict[str, dict[str, Any]] = {}
        self._last_message_at: dict[str, str] = {}
        self._observed: dict[str, str] = {}

    def read_actions(self) -> list[Action]:
        return [
            Action(
                "subscriptions",
                "The subscribed topic filters, their trust, and when each last got a message.",
                self._subscriptions,
            ),
            Action(
                "last_values",
                "The latest payload seen on each topic, optionally only topics matching a filter.",
                self._last_values_action,
                {
                    "type": "object",
                    "additionalProperties": False,
                    "properties": {
                        "topic": {"type": "string", "minLength": 1},
                        "limit": {"type": "integer", "minimum": 1, "maximum": 1000},
                    },
                },
            ),
        ]

    def write_actions(self) -> list[Action]:
        return [
            Action(
                "publish",
                "Publish a message (a string as text, any other JSON value as JSON) to a topic "
                "allowed by the config's publish_topics.",
                self._publish,
                {
                    "type": "object",
                    "additionalProperties": False,
                    "required": ["topic", "payload"],
                    "properties": {
                        "topic": {"type": "string", "minLength": 1},
                        "payload": {},
                        "qos": {"enum": [0, 1, 2]},
                        "retain": {"type": "boolean"},
                    },
                },
                effect=Effect.EXTERNAL_SIDE_EFFECT,
            )
        ]

    # -- connection -----------------------------------------------------------------------

    async def start(self) -> None:
        from aiomqtt import Client, MqttError

        config = self.settings
        client = Client(
            config.host,
            config.port,
            username=config.username or None,
            password=config.password or None,
            identifier=config.client_id or None,
            keepalive=config.keepalive,
            tls_context=self._tls_context(),
        )
        connection = contextlib.AsyncExitStack()
        try:
            await connection.enter_async_context(client)
            await self._subscribe(client)
        except MqttError as exc:
            await _close(connection)
            who = f" as {config.username!r}" if config.username else ""
            raise ConnectionError(
                f"cannot connect to the MQTT broker at {config.address}{who}: {exc}"
            ) from None
        except BaseException:
            await _close(connection)
            raise
        if config.retained:
            self._observed = self.context.load_json(OBSERVED) or {}
        self._client, self._connection = client, connection

    def _tls_context(self) -> ssl.SSLContext | None:
        if not self.settings.tls:
            return None
        try:
            return ssl.create_default_context(cafile=self.settings.ca_file or None)
        except (OSError, ssl.SSLError) as exc:
            raise ValueError(
                f"config field ca_file {self.settings.ca_file!r} is not a readable PEM CA file: "
                f"{exc}"
            ) from None

    async def _subscribe(self, client: Client) -> None:
        subscriptions = self.settings.subscriptions
        if not subscriptions:
            return
        codes = await client.subscribe([(s.topic, s.qos) for s in subscriptions])
        failed = [_failed(code) for code in codes]
        refused = [s.topic for s, no in zip(subscriptions, failed, strict=True) if no]
        if refused:
            raise PermissionError(
                f"the MQTT broker at {self.settings.address} refused the subscription to "
                f"{', '.join(refused)}"
            )

    async def run(self) -> None:
        from aiomqtt import MqttError

        client = self._client
        if client is None:
            raise ConnectionError("not connected to the MQTT broker")
        try:
            async for message in client.messages:
                self._receive(message)
        except MqttError as exc:
            reason = exc.__cause__ or exc
            self._client = None
            raise ConnectionError(
                f"lost the connection to the MQTT broker at {self.settings.address}: {reason}"
            ) from None

    async def stop(self) -> None:
        self._client = None
        if self._connection is not None:
            await _close(self._connection)
            self._connection = None

    # -- observations ---------------------------------------------------------------------

    def _receive(self, message: Message) -> None:
        subscription = self.settings.subscription_for(message.topic)
        if subscription is None:
            return
        topic = message.topic.value
        now = datetime.now(UTC).isoformat()
        content = {
            "kind": "mqtt_message",
            "topic": topic,
            "subscription": subscription.topic,
            **payloads.decode(message.payload, self.settings.max_payload_bytes),
            "qos": message.qos,
            "retained": bool(message.retain),
        }
        self._last_message_at[subscription.topic] = now
        self._last_values[topic] = {**content, "received_at": now}
        if message.retain and not self.settings.retained:
            return
        fingerprint = payloads.digest(message.payload)
        if message.retain and self._observed.get(topic) == fingerprint:
            return
        self.context.emit(
            actor="signal",
            trust=subscription.trust,
            content=content,
            source_key=subscription.topic,
            source_title=subscription.title or subscription.topic,
        )
        if self.settings.retained:
            self._observed[topic] = fingerprint
            self.context.save_json(OBSERVED, self._observed)

    # -- actions --------------------------------------------------------------------------

    async def _subscriptions(self, args: dict[str, Any]) -> dict[str, Any]:
        return {
            "connected": self._client is not None,
            "broker": self.settings.address,
            "subscriptions": [
                {
                    "topic": s.topic,
                    "trust": s.trust,
                    "qos": s.qos,
                    "title": s.title,
                    "last_message_at": self._last_message_at.get(s.topic),
                }
                for s in self.settings.subscriptions
            ],
        }

    async def _last_values_action(self, args: dict[str, Any]) -> dict[str, Any]:
        from aiomqtt import Topic, Wildcard

        wanted = args.get("topic", "#")
        try:
            wildcard = Wildcard(wanted)
        except ValueError:
            raise ActionFailed(f"topic {wanted!r} is not a valid MQTT topic filter") from None
        matching = [
            value
            for topic, value in sorted(self._last_values.items())
            if Topic(topic).matches(wildcard)
        ]
        limit = args.get("limit", 100)
        return {"values": matching[:limit], "more": len(matching) > limit}

    async def _publish(self, args: dict[str, Any]) -> dict[str, Any]:
        from aiomqtt import MqttError, Topic

        name = args["topic"]
        try:
            topic = Topic(name)
        except ValueError:
            raise ActionFailed(
                f"cannot publish to {name!r}: a topic to publish to has no wildcards (+, #)"
            ) from None
        if not self.settings.may_publish(topic):
            allowed = ", ".join(self.settings.publish_topics) or "none; publishing is off"
            raise ActionFailed(
                f"publishing to {name!r} is not allowed: the topic matches no filter in the "
                f"config's publish_topics ({allowed})"
            )
        data = payloads.encode(args["payload"])
        if len(data) > self.settings.max_payload_bytes:
            raise ActionFailed(
                f"the payload is {len(data)} bytes, more than max_payload_bytes "
                f"({self.settings.max_payload_bytes})"
            )
        client = self._client
        if client is None:
            raise ActionFailed(f"not connected to the MQTT broker at {self.settings.address}")
        qos, retain = args.get("qos", 0), args.get("retain", False)
        try:
            await client.publish(name, data, qos=qos, retain=retain)
        except MqttError as exc:
            raise ActionFailed(f"publishing to {name!r} failed: {exc}") from None
        return {"topic": name, "size_bytes": len(data), "qos": qos, "retain": retain}


def _failed(code: int | ReasonCode) -> bool:
    """A SUBACK code of 128 or more refuses that filter."""
    from paho.mqtt.reasoncodes import ReasonCode

    value = code.value if isinstance(code, ReasonCode) else code
    return value >= 0x80


async def _close(connection: contextlib.AsyncExitStack) -> None:
    """Disconnect; a connection that is already gone has nothing left to close."""
    from aiomqtt import MqttError

    with contextlib.suppress(MqttError):
        await connection.aclose()


ADAPTER = MqttAdapter
