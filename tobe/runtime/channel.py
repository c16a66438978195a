"""Client channels with keepalive, and the bearer-token call credential."""

from __future__ import annotations

import grpc

from tobe.runtime.server import DEFAULT_MAX_MESSAGE_BYTES

KEEPALIVE_OPTIONS = [
    ("grpc.keepalive_time_ms", 20_000),
    ("grpc.keepalive_timeout_ms", 10_000),
    ("grpc.keepalive_permit_without_calls", 1),
    ("grpc.http2.max_pings_without_data", 0),
    # gRPC's own reconnect backoff follows the platform policy: 1 s doubling to 30 s.
    ("grpc.initial_reconnect_backoff_ms", 1_000),
    ("grpc.min_reconnect_backoff_ms", 1_000),
    ("grpc.max_reconnect_backoff_ms", 30_000),
    ("grpc.max_receive_message_length", DEFAULT_MAX_MESSAGE_BYTES),
    ("grpc.max_send_message_length", DEFAULT_MAX_MESSAGE_BYTES),
]


def bearer_metadata(token: str) -> tuple[tuple[str, str], ...]:
    """Call metadata that authenticates with a credential secret."""
    return (("authorization", f"Bearer {token}"),)


def open_channel(
    target: str, *, extra_options: list[tuple[str, int | str]] | None = None
) -> grpc.aio.Channel:
    """An insecure aio channel (loopback, Unix socket or a private network) with keepalive.

    `target` is `host:port` or `unix:/path`.
    """
    return grpc.aio.insecure_channel(target, options=KEEPALIVE_OPTIONS + (extra_options or []))


def unix_target(path: str) -> str:
    return f"unix:{path}"
