"""A request body that is not protobuf is INVALID_ARGUMENT on a real Awareness process."""

from __future__ import annotations

import grpc
import pytest
from awareness_harness import TOKEN, AwarenessProcess
from helpers.raw_calls import refusal, wait_for_lines

from tobe.runtime.channel import bearer_metadata


@pytest.mark.parametrize(
    ("method", "response_streaming"),
    [
        ("/tobe.v1.Awareness/ListAdapters", False),
        ("/tobe.v1.Awareness/SubscribeObservations", True),
    ],
)
async def test_an_undecodable_request_is_invalid_argument_with_one_log_line_and_no_traceback(
    shared_awareness: AwarenessProcess, method: str, response_streaming: bool
) -> None:
    logged_before = len(shared_awareness.stderr().splitlines())

    error = await refusal(
        shared_awareness.target,
        method,
        request_streaming=False,
        response_streaming=response_streaming,
        metadata=bearer_metadata(TOKEN),
    )

    assert error.code() == grpc.StatusCode.INVALID_ARGUMENT, error.details()
    assert (error.details() or "").startswith("request could not be decoded as tobe.v1.")
    new_lines = lambda: shared_awareness.stderr().splitlines()[logged_before:]  # noqa: E731
    refused = wait_for_lines(new_lines, "could not be decoded", 1)
    assert len(refused) == 1 and method in refused[0], new_lines()
    assert not [line for line in new_lines() if "Traceback" in line or "Unexpected" in line]
