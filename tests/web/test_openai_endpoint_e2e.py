"""The official `openai` Python SDK against the Face's OpenAI-compatible endpoint, with a real
Mind (Scripted provider), a real Face and a real Hand whose tool needs an approval."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import grpc
import httpx
import openai
import pytest
from helpers.eventually import eventually
from helpers.mind_process import issue_token
from playwright.sync_api import BrowserContext, expect
from web_stack import PRINCIPAL, Stack, running_stack
from web_steps import sign_in

from tobe.v1 import common_pb2, mind_pb2, mind_pb2_grpc

pytestmark = pytest.mark.e2e

CONVERSATION = "X-ToBe-Conversation"
PLAIN_REPLY = "You said something; here is **bold**."


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    with running_stack(tmp_path_factory.mktemp("openai"), clients=(PRINCIPAL,)) as started:
        yield started


def client(stack: Stack, token: str | None = None) -> openai.OpenAI:
    return openai.OpenAI(
        base_url=f"http://{stack.face.web_address}/v1",
        api_key=token or stack.mind.client_tokens[PRINCIPAL],
        max_retries=0,
        timeout=60,
    )


def streamed(stack: Stack, messages: list[dict[str, str]], **options: object) -> tuple[str, str]:
    """The streamed reply's text and the conversation it went to."""
    with client(stack).chat.completions.with_streaming_response.create(
        model="default",
        messages=messages,  # type: ignore[arg-type]
        stream=True,
        **options,  # type: ignore[arg-type]
    ) as response:
        key = response.headers[CONVERSATION]
        text = "".join(
            part.choices[0].delta.content or "" for part in response.parse() if part.choices
        )
    return text, key


def person_messages(stack: Stack, key: str) -> list[str]:
    return [m.text for m in stack.history(key).messages if m.role == common_pb2.MESSAGE_ROLE_USER]


def test_models_are_the_agents_profiles(stack: Stack) -> None:
    names = {model.id for model in client(stack).models.list()}
    assert {"default", "coach"} <= names


def test_a_streamed_reply_continues_the_same_conversation_on_the_next_request(
    stack: Stack,
) -> None:
    first, key = streamed(stack, [{"role": "user", "content": "hello there"}])
    assert first == PLAIN_REPLY

    # The app sends the whole history back; the agent gets only the new message.
    history = [
        {"role": "user", "content": "hello there"},
        {"role": "assistant", "content": first},
        {"role": "user", "content": "tour of the tools"},
    ]
    second, again = streamed(stack, history, extra_headers={CONVERSATION: key})
    assert again == key
    assert "`current_time`" in second  # the tool call, told as a line
    assert second.endswith(
        "It is *evening* in Paris.\n\n- **bold** point\n- a [link](https://example.com/docs)\n\n```\nprint('hi')\n```"
    )
    assert person_messages(stack, key) == ["hello there", "tour of the tools"]


def test_an_unnamed_history_finds_its_conversation_and_a_user_name_keeps_one(stack: Stack) -> None:
    opening = f"opening {uuid.uuid4().hex[:6]}"
    first, key = streamed(stack, [{"role": "user", "content": opening}])
    history = [
        {"role": "user", "content": opening},
        {"role": "assistant", "content": first},
        {"role": "user", "content": "and then?"},
    ]
    _, found = streamed(stack, history)
    assert found == key
    assert person_messages(stack, key) == [opening, "and then?"]

    name = f"app-user-{uuid.uuid4().hex[:6]}"
    _, named = streamed(stack, [{"role": "user", "content": "one"}], user=name)
    _, named_again = streamed(stack, [{"role": "user", "content": "two"}], user=name)
    assert named == named_again != key
    assert person_messages(stack, named) == ["one", "two"]


def test_a_whole_reply_comes_back_when_not_streamed(stack: Stack) -> None:
    raw = client(stack).chat.completions.with_raw_response.create(
        model="coach", messages=[{"role": "user", "content": "how far today?"}]
    )
    reply = raw.parse()
    assert reply.choices[0].message.content == PLAIN_REPLY
    assert reply.choices[0].finish_reason == "stop"
    assert stack.snapshot(raw.headers[CONVERSATION]).conversation.profile == "coach"


def test_a_history_that_differs_from_the_conversation_is_refused_and_changes_nothing(
    stack: Stack,
) -> None:
    _, key = streamed(stack, [{"role": "user", "content": "the real first"}])
    rewritten = [
        {"role": "user", "content": "an edited first"},
        {"role": "assistant", "content": "whatever"},
        {"role": "user", "content": "next"},
    ]
    with pytest.raises(openai.ConflictError, match="never rewrites it"):
        client(stack).chat.completions.create(
            model="default",
            messages=rewritten,
            extra_headers={CONVERSATION: key},  # type: ignore[arg-type]
        )
    assert person_messages(stack, key) == ["the real first"]


def test_an_unknown_model_and_a_malformed_request_are_refused(stack: Stack) -> None:
    with pytest.raises(openai.NotFoundError, match="none of the agent's profiles"):
        client(stack).chat.completions.create(
            model="gpt-9", messages=[{"role": "user", "content": "hi"}]
        )
    response = httpx.post(
        f"http://{stack.face.web_address}/v1/chat/completions",
        headers={"Authorization": f"Bearer {stack.mind.client_tokens[PRINCIPAL]}"},
        json={"model": "default", "messages": [{"role": "assistant", "content": "hi"}]},
    )
    assert response.status_code == 400
    assert "the last message must be the person's" in response.json()["error"]["message"]


def test_a_revoked_or_chatless_credential_is_refused(stack: Stack) -> None:
    with pytest.raises(openai.AuthenticationError):
        client(stack, "not-a-token").models.list()

    chatless = issue_token(stack.mind.url, kind="client", principal="carol", scopes=["approve"])
    with pytest.raises(openai.PermissionDeniedError, match="`chat` scope"):
        client(stack, chatless).chat.completions.create(
            model="default", messages=[{"role": "user", "content": "hi"}]
        )

    revoked = issue_token(stack.mind.url, kind="client", principal="dave", scopes=["chat"])
    assert client(stack, revoked).models.list().data
    (credential,) = stack.client_credentials("dave")
    stack.admin("credentials", "revoke", credential)
    with pytest.raises(openai.AuthenticationError):
        client(stack, revoked).chat.completions.create(
            model="default", messages=[{"role": "user", "content": "hi"}]
        )


def decide_when_asked(stack: Stack, key: str, asked: threading.Event) -> None:
    """Approve the conversation's pending approval once the reply has shown it."""
    assert asked.wait(60)
    (approval,) = stack.snapshot(key).pending_approvals
    with grpc.insecure_channel(stack.mind.address) as channel:
        mind_pb2_grpc.MindStub(channel).DecideApproval(
            mind_pb2.DecideApprovalRequest(
                on_behalf_of=mind_pb2.OnBehalfOf(principal=PRINCIPAL, scopes=["chat", "approve"]),
                approval_id=approval.id,
                decision=common_pb2.APPROVAL_DECISION_APPROVE_ONCE,
            ),
            metadata=stack.mind.gateway_metadata,
            timeout=15,
        )


def test_an_approval_is_shown_with_a_link_and_the_reply_goes_on_once_decided(
    stack: Stack, tmp_path: Path
) -> None:
    asked = threading.Event()
    told: list[str] = []
    with client(stack).chat.completions.with_streaming_response.create(
        model="default", messages=[{"role": "user", "content": "save the plan"}], stream=True
    ) as response:
        key = response.headers[CONVERSATION]
        decider = threading.Thread(target=decide_when_asked, args=(stack, key, asked))
        decider.start()
        for part in response.parse():
            told.append(part.choices[0].delta.content or "" if part.choices else "")
            if "Approval needed" in "".join(told):
                asked.set()
        decider.join(60)
    text = "".join(told)
    assert f"{stack.base_url}#conversation={key}" in text
    assert "plan.txt" in text
    assert text.endswith("The note is **saved**.")
    assert stack.hand.saved == ["plan.txt"]


def test_a_client_that_goes_away_mid_reply_cancels_its_run(stack: Stack) -> None:
    with client(stack).chat.completions.with_streaming_response.create(
        model="default", messages=[{"role": "user", "content": "slow one"}], stream=True
    ) as response:
        key = response.headers[CONVERSATION]
        for part in response.parse():
            if part.choices and part.choices[0].delta.content:
                break  # the app's "stop": the stream is closed before the run ends

    # Not cancelled, the run would end ~4 s later with its second step stored.
    eventually(
        lambda: stack.snapshot(key),
        30,
        until=lambda s: not s.HasField("active_run"),
        what="the run to end",
    )
    assert "Step two" not in "".join(m.text for m in stack.history(key).messages)


# Last in the module: the browser keeps Playwright's event loop on the test thread from here on.
def test_a_conversation_link_opens_that_conversation_in_the_web_client(
    new_context: Callable[..., BrowserContext], stack: Stack
) -> None:
    title = f"linked {uuid.uuid4().hex[:6]}"
    _, key = streamed(stack, [{"role": "user", "content": title}])
    streamed(stack, [{"role": "user", "content": "a newer conversation"}])
    link = f"{stack.base_url}#conversation={key}"

    page = new_context().new_page()
    sign_in(page, stack)  # opens the newest conversation
    expect(page.locator("#conversation-title")).to_have_text("a newer conversation")
    page.goto(link)  # the same tab: only the fragment changes
    expect(page.locator("#conversation-title")).to_have_text(title)
    assert "#conversation=" not in page.url

    fresh = page.context.new_page()  # a new tab, signed in by its cookie
    fresh.goto(link)
    expect(fresh.locator("#conversation-title")).to_have_text(title)
    expect(fresh.locator("#message")).to_be_enabled()
