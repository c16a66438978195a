"""Errors of the gateway, carrying the gRPC status code name the servicer ends or answers with.

GatewayError            a status for one command or one connection
└── MindCallError       the Mind answered a call with this status (or was unreachable)
    └── FaceUnavailable the Face itself cannot serve (no link to the Mind, own credential
                        refused): UNAVAILABLE, never blaming the client's credential
"""

from __future__ import annotations


class GatewayError(Exception):
    """`code` is a `grpc.StatusCode` name such as "NOT_FOUND"; `message` is for people."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message


class MindCallError(GatewayError):
    """A call to the Mind failed with this status."""


class FaceUnavailable(MindCallError):
    """The Face cannot serve anyone; `message` names why (`face.mind_trouble`)."""

    def __init__(self, message: str) -> None:
        super().__init__("UNAVAILABLE", message)
