"""How a connection's ending looks on the WebSocket: 4000 + the gRPC status number, the message
as reason cut to what a close frame carries, and 1000 for a clean end."""

from __future__ import annotations

from face.web.socket import MAX_REASON_BYTES, close_code, close_reason


def test_each_status_closes_with_4000_plus_its_number_and_a_clean_end_with_1000() -> None:
    assert close_code("OK") == 1000
    assert close_code("INVALID_ARGUMENT") == 4003
    assert close_code("RESOURCE_EXHAUSTED") == 4008
    assert close_code("FAILED_PRECONDITION") == 4009
    assert close_code("UNAVAILABLE") == 4014
    assert close_code("UNAUTHENTICATED") == 4016


def test_a_long_reason_is_cut_to_123_bytes_never_inside_a_character() -> None:
    assert close_reason("credential revoked") == "credential revoked"
    cut = close_reason("é" * 100)  # two bytes each: 61 fit
    assert cut == "é" * 61 and len(cut.encode()) <= MAX_REASON_BYTES
    assert len(close_reason("x" * 500).encode()) == MAX_REASON_BYTES
