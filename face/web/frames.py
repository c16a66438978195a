"""Frames of the web transport: FaceGateway's ConnectRequest and ConnectResponse as protobuf
JSON text (`google.protobuf.json_format`, the standard mapping browsers can read without a
protobuf runtime: camelCase names, enum names, int64 as strings, bytes as base64).
"""

from __future__ import annotations

from google.protobuf import json_format

from face.errors import GatewayError
from tobe.v1 import face_pb2

# Slack over the protobuf size for a JSON frame: base64 makes bytes (images) 4/3 as long, and
# names and quotes come on top.
JSON_OVERHEAD_BYTES = 64 * 1024
MALFORMED = "malformed frame: not a ConnectRequest in protobuf JSON"


def max_json_frame_bytes(max_frame_bytes: int) -> int:
    """The largest JSON text frame accepted when protobuf frames may be `max_frame_bytes`."""
    return max_frame_bytes * 4 // 3 + JSON_OVERHEAD_BYTES


def request_from_json(text: str) -> face_pb2.ConnectRequest:
    """A client frame; GatewayError INVALID_ARGUMENT when it is not one."""
    try:
        return json_format.Parse(text, face_pb2.ConnectRequest())
    except json_format.ParseError:
        raise GatewayError("INVALID_ARGUMENT", MALFORMED) from None


def response_json(seq: int, body: bytes) -> str:
    """A serialized ConnectResponse (shared between connections) as this connection's frame."""
    response = face_pb2.ConnectResponse.FromString(body)
    response.seq = seq
    return json_format.MessageToJson(response, indent=None, ensure_ascii=False)
