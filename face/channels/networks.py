"""The networks a channel can be on: each one's settings section and its transport.

The one place that names the transports' classes. They are imported only when a channel of
their network runs, so a process that runs Matrix loads no mail code and the reverse.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import cast

from face.channels.state import ChannelState
from face.channels.transport import Transport
from tobe.config import ChannelSettings, ChannelsSettings


@dataclass(frozen=True)
class Network:
    # The channel's name: its `[channels.<name>]` section and its rows in the state file.
    name: str
    # `module:Class` of its transport, constructed as `Class(settings, state.values(name))`.
    transport: str

    def settings(self, channels: ChannelsSettings) -> ChannelSettings:
        section: ChannelSettings = getattr(channels, self.name)
        return section

    def factory(self, channels: ChannelsSettings, state: ChannelState) -> Callable[[], Transport]:
        """Makes a new transport of this channel each time it is called."""
        settings = self.settings(channels)

        def make() -> Transport:
            module, attribute = self.transport.split(":")
            kind = getattr(importlib.import_module(module), attribute)
            return cast(Transport, kind(settings, state.values(self.name)))

        return make


NETWORKS = (
    Network("matrix", "face.channels.matrix.transport:MatrixTransport"),
    Network("email", "face.channels.email.transport:EmailTransport"),
)


def enabled_networks(channels: ChannelsSettings) -> list[Network]:
    return [network for network in NETWORKS if network.settings(channels).enabled]


def network_named(name: str) -> Network | None:
    return next((network for network in NETWORKS if network.name == name), None)
