"""The offline demo's reply tells a person how to configure a real model where they are: the
configuration file on a host, docker/.env in the container layout (TOBE_SERVICE set)."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

import pytest

from mind.conversation.history import HistoryMessage
from mind.core.view import provider_messages
from mind.providers.base import ProviderRequest
from mind.scripted.configured import build_provider
from tobe.config import ProviderSettings

T = datetime(2026, 9, 10, 14, 0, 30, tzinfo=UTC)


def demo_reply(text: str) -> str:
    """What the demo model (no provider configured) answers to `text`."""
    provider = build_provider(ProviderSettings())
    request = ProviderRequest(
        system="sys",
        messages=provider_messages([HistoryMessage(1, "user", text, T)], T),
        tools=[],
    )
    result = asyncio.run(provider.complete(request, lambda event: None))
    return result.text


def test_on_a_host_the_demo_reply_points_to_the_configuration_file(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("TOBE_SERVICE", raising=False)
    reply = demo_reply("hello")
    assert "offline demo model" in reply
    assert "[provider] kind, model and api_key in the configuration file" in reply
    assert "docker/.env" not in reply


def test_in_a_container_the_demo_reply_points_to_docker_env_and_compose(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("TOBE_SERVICE", "mind")
    reply = demo_reply("hello")
    assert "offline demo model" in reply
    assert "docker/.env" in reply
    assert "docker compose -f docker/compose.yaml up -d" in reply
    assert "configuration file" not in reply
