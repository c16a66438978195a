"""The adapter's config (already checked against its schema) read into typed settings.

Topic filters are checked here, at registration, so a malformed one names its config field
instead of failing later at the broker.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from aiomqtt import Topic


@dataclass(frozen=True)
class Subscription:
    topic: str
    trust: str
    qos: int
    title: str


@dataclass(frozen=True)
class Settings:
    host: str
    port: int
    username: str
    password: str
    tls: bool
    ca_file: str
    client_id: str
    keepalive: int
    subscriptions: tuple[Subscription, ...]
    retained: bool
    publish_topics: tuple[str, ...]
    max_payload_bytes: int

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    def subscription_for(self, topic: Topic) -> Subscription | None:
        """The first configured filter `topic` matches (config order decides overlaps)."""
        return next((s for s in self.subscriptions if topic.matches(s.topic)), None)

    def may_publish(self, topic: Topic) -> bool:
        return any(topic.matches(allowed) for allowed in self.publish_topics)


def read(config: dict[str, Any]) -> Settings:
    """Typed settings; ValueError naming the field for a malformed topic filter."""
    subscriptions = tuple(
        Subscription(
            topic=_filter(item["topic"], f"subscriptions[{index}].topic"),
            trust=item.get("trust", "low"),
            qos=item.get("qos", 0),
            title=item.get("title", ""),
        )
        for index, item in enumerate(config["subscriptions"])
    )
    return Settings(
        host=config["host"],
        port=config["port"],
        username=config.get("username", ""),
        password=config.get("password", ""),
        tls=config.get("tls", False),
        ca_file=config.get("ca_file", ""),
        client_id=config.get("client_id", ""),
        keepalive=config.get("keepalive", 60),
        subscriptions=subscriptions,
        retained=config.get("retained", False),
        publish_topics=_filters(config.get("publish_topics", []), "publish_topics"),
        max_payload_bytes=config.get("max_payload_bytes", 65536),
    )


def _filters(values: Sequence[str], field: str) -> tuple[str, ...]:
    return tuple(_filter(value, f"{field}[{index}]") for index, value in enumerate(values))


def _filter(value: str, field: str) -> str:
    from aiomqtt import Wildcard  # loaded only when a filter is configured

    try:
        Wildcard(value)
    except ValueError:
        raise ValueError(
            f"config field {field} is not a valid MQTT topic filter: {value!r} "
            "('+' and '#' must fill a whole level, '#' only as the last one)"
        ) from None
    return value
