"""A trace starts in the browser: each command the web client sends carries a W3C
`traceparent` of a new trace, and the Face's span for it (exported over OTLP to a receiver
served in the test) has that trace id and the page's span as its parent."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator

import pytest
from helpers import otlp_receiver
from helpers.eventually import eventually
from helpers.otlp_receiver import Receiver
from playwright.sync_api import BrowserContext, WebSocket, expect
from web_stack import Stack, running_stack
from web_steps import new_conversation, send, sign_in

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def receiver() -> Iterator[Receiver]:
    yield from otlp_receiver.serving()


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory, receiver: Receiver) -> Iterator[Stack]:
    """The browser tests' stack with the Mind and the Face exporting spans to `receiver`."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.endpoint)
        patch.setenv("OTEL_EXPORTER_OTLP_INSECURE", "true")
        patch.setenv("OTEL_METRICS_EXPORTER", "none")
        patch.setenv("OTEL_BSP_SCHEDULE_DELAY", "100")
        with running_stack(tmp_path_factory.mktemp("web-trace")) as started:
            yield started


def _sent_send_chat(frames: list[str]) -> dict[str, object]:
    """The frame the page sent for the message (a Mind call `sendChat`)."""
    parsed = [json.loads(frame) for frame in frames]
    return next(f for f in parsed if "sendChat" in f.get("mind", {}))


def test_a_sent_message_starts_a_trace_in_the_page_that_the_faces_span_continues(
    new_context: Callable[..., BrowserContext], stack: Stack, receiver: Receiver
) -> None:
    page = new_context().new_page()
    sent: list[str] = []

    def watch(socket: WebSocket) -> None:
        socket.on("framesent", lambda payload: sent.append(str(payload)))

    page.on("websocket", watch)
    sign_in(page, stack)
    new_conversation(page, "traced")
    send(page, "hello there")
    expect(page.locator("#log article.assistant").last).to_contain_text("You said something")

    frame = _sent_send_chat(sent)
    version, trace_id, span_id, flags = frame["traceContext"]["traceparent"].split("-")  # type: ignore[index]
    assert (version, flags, len(trace_id), len(span_id)) == ("00", "01", 32, 16)
    others = {
        json.loads(f)["traceContext"]["traceparent"].split("-")[1]
        for f in sent
        if "traceContext" in json.loads(f)
    }
    assert len(others) > 1, "every command starts a trace of its own"

    face = eventually(
        lambda: [
            s
            for s in receiver.received.spans()
            if s.service == "tobe-face" and s.trace_id == trace_id
        ],
        what="the Face's span of the sent message",
        context=lambda: repr([(s.service, s.span.name) for s in receiver.received.spans()]),
    )
    frame_span = next(s for s in face if s.span.name == "face mind")
    assert frame_span.parent_id == span_id
    # The trace goes on into the Mind: its turn for this message is in the page's trace.
    eventually(
        lambda: {
            s.span.name
            for s in receiver.received.spans()
            if s.service == "tobe-mind" and s.trace_id == trace_id
        },
        what="the Mind's spans in the page's trace",
        until=lambda names: "turn" in names,
    )
