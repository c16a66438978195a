"""What the browser tests run against: a real Mind (Scripted provider), a real Face serving the
web client, and a real Hand (SDK) whose tool needs an approval; plus the ground truth read from
the Mind itself.

Playwright's sync API keeps an event loop running on the test's thread, so everything here that
runs asyncio code of its own (issuing credentials, the Hand, `tobe admin`) runs on another
thread (`off_loop`).
"""

from __future__ import annotations

import asyncio
import io
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import grpc
from helpers.face_process import FaceProcess, running_face
from helpers.mind_process import MindProcess, issue_token, running_mind, store_url
from PIL import Image

from hand import Hand, ToolOutput, report_progress
from mind.store.migrate import upgrade
from tobe.v1 import (
    common_pb2,
    management_pb2,
    management_pb2_grpc,
    mind_pb2,
    mind_pb2_grpc,
)

PRINCIPAL = "alice"
OFF_LOOP_TIMEOUT = 60.0
T = TypeVar("T")

# `tour`: Markdown, a tool call and a Markdown answer (the screenshot). `slow`: a reply whose
# second step comes seconds after its first, long enough to restart Face in between. `evil`:
# markup a model could be tricked into writing. `save`: a Hand tool that needs an approval.
# `remember`: the model writes a memory entry. `long`: a reply taller than the screen. `wide
# table`: a table wider than a phone and a URL longer than a line. `שלום`: a reply in Hebrew and
# Arabic. `screenshot`: a Hand tool that answers with a picture.
LONG_REPLY_LINES = 40
SCRIPT = """
runs:
  - match: "^remember"
    steps:
      - tool_calls:
          - name: memory_write
            arguments: {key: "diet", text: "no peanuts <b>ever</b>"}
      - {expect: {last_role: tool}, text: "I will **remember** that."}
  - match: "^tour"
    steps:
      - text: "Let me **check the time** first."
        chunks: 4
        tool_calls:
          - name: current_time
            arguments: {timezone: "Europe/Paris"}
      - text: "It is *evening* in Paris.\\n\\n- **bold** point\\n- a [link](https://example.com/docs)\\n\\n```\\nprint('hi')\\n```"
        chunks: 5
  - match: "^slow"
    steps:
      - text: "Step one **begins**."
        chunks: 3
        tool_calls:
          - name: current_time
            arguments: {timezone: "UTC"}
      - {delay: 4, text: "Step two *ends*.", chunks: 3}
  - match: "^evil"
    steps:
      - text: >-
          Look: <script>window.pwned=1</script> and
          <img src=x onerror="window.pwned=2"> end.
  - match: "^wide table"
    steps:
      - text: |-
          | planet | distance | moons | atmosphere | discovered | notes |
          |---|---|---|---|---|---|
          | Mercury | 57909227 | none | exosphere | antiquity | closest |
          | Jupiter | 778340821 | ninety-five | hydrogen | antiquity | largest |

          See https://example.com/a/very/long/path/that/never/breaks/anywhere/at/all/1234567890abcdef
  - match: "^שלום"
    steps:
      - text: "שלום! זו **תשובה** בעברית.\\n\\nمرحبا بك."
  - match: "^save"
    steps:
      - tool_calls:
          - name: laptop__save_note
            arguments: {name: "plan.txt", text: "buy milk"}
      - {expect: {last_role: tool}, text: "The note is **saved**."}
  - match: "^screenshot"
    steps:
      - tool_calls:
          - name: laptop__snap_screen
            arguments: {}
      - {expect: {last_role: tool}, text: "Here is the **screen**."}
  - match: "quoting that reply"
    steps:
      - expect: {last_contains: "[quote assistant: You said something; here is **bold**.]"}
        text: "Quote **received**."
  - match: "^long"
    steps:
      - {text: "LONG_REPLY", chunks: 3}
  - match: ".*"
    steps:
      - {text: "You said something; here is **bold**.", chunks: 3}
""".replace(
    "LONG_REPLY",
    "\\n".join(f"- point {n} of a long answer" for n in range(1, LONG_REPLY_LINES + 1)),
)

# Profiles besides `default` to switch conversations to: `coach`, and `broken`, which names a
# platform tool there is not (switching to it is refused).
CONFIG = """
[[profiles.profile]]
name = "coach"
description = "a running coach"
persona = "You are a running coach. Keep answers short."
platform_tools = ["current_time"]
hand_tools = false

[[profiles.profile]]
name = "broken"
description = "offers a tool that does not exist"
platform_tools = ["no_such_tool"]
"""


def _screen_png() -> bytes:
    """A small picture of a screen, made here so no binary file is needed."""
    out = io.BytesIO()
    Image.new("RGB", (320, 200), (30, 120, 90)).save(out, "PNG")
    return out.getvalue()


SCREEN_PNG = _screen_png()

_executor = ThreadPoolExecutor(max_workers=2, thread_name_prefix="off-loop")


def off_loop(function: Callable[..., T], *args: Any) -> T:
    """Run `function(*args)` on a thread without Playwright's running event loop."""
    return _executor.submit(function, *args).result(OFF_LOOP_TIMEOUT)


class LaptopHand:
    """The `laptop` Hand on its own thread and loop; its `save_note` needs an approval."""

    def __init__(self, address: str, token: str) -> None:
        self.saved: list[str] = []
        self._address, self._token = address, token
        self._loop = asyncio.new_event_loop()
        self._task: asyncio.Task[None] | None = None
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _build(self) -> Hand:
        hand = Hand("laptop")
        saved = self.saved

        @hand.tool(effect="workspace_write")
        async def save_note(name: str, text: str) -> str:
            """Save a note in the workspace."""
            report_progress("writing", 0.5)
            saved.append(name)
            return f"saved {name}"

        @hand.tool(effect="read_only")
        async def snap_screen() -> ToolOutput:
            """Take a picture of the screen."""
            return ToolOutput("the screen", images=[("image/png", SCREEN_PNG)])

        return hand

    def start(self, timeout: float = 30) -> None:
        hand = self._build()
        self._thread.start()
        attached = asyncio.run_coroutine_threadsafe(self._attach(hand, timeout), self._loop)
        attached.result(timeout + 5)

    async def _attach(self, hand: Hand, timeout: float) -> None:
        self._task = asyncio.create_task(hand.serve(self._address, self._token))
        await asyncio.wait_for(hand.attached.wait(), timeout)

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        self._loop.run_forever()
        leftovers = asyncio.all_tasks(self._loop)
        for task in leftovers:
            task.cancel()
        self._loop.run_until_complete(asyncio.gather(*leftovers, return_exceptions=True))
        self._loop.close()

    def stop(self) -> None:
        if self._task is not None:
            self._loop.call_soon_threadsafe(self._task.cancel)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(15)


@dataclass
class Stack:
    mind: MindProcess
    face: FaceProcess
    hand: LaptopHand

    @property
    def base_url(self) -> str:
        return f"http://{self.face.web_address}/"

    def _stub(self) -> tuple[grpc.Channel, mind_pb2_grpc.MindStub]:
        channel = grpc.insecure_channel(self.mind.address)
        return channel, mind_pb2_grpc.MindStub(channel)

    def _management(self) -> tuple[grpc.Channel, management_pb2_grpc.ManagementStub]:
        """The running Mind's Management service, on its socket (as `tobe admin` finds it)."""
        channel = grpc.insecure_channel(f"unix:{self.mind.data_dir / 'mind.sock'}")
        return channel, management_pb2_grpc.ManagementStub(channel)

    def pairing_code(self, principal: str = PRINCIPAL) -> str:
        """A fresh one-time code for `principal`, made as `tobe admin pair` makes it."""
        channel, stub = self._management()
        with channel:
            request = management_pb2.ManagementCreatePairingCodeRequest(principal=principal)
            return stub.CreatePairingCode(request, timeout=15).pairing.code

    def client_credentials(self, principal: str = PRINCIPAL) -> set[str]:
        """Ids of the principal's live client credentials (one per browser signed in)."""
        channel, stub = self._management()
        with channel:
            request = management_pb2.ListCredentialsRequest(
                principal=principal, kind=management_pb2.CREDENTIAL_KIND_CLIENT
            )
            return {c.id for c in stub.ListCredentials(request, timeout=15).credentials}

    def admin(self, *args: str) -> None:
        """`tobe admin ARGS` as an operator runs it, against the running Mind."""
        result = subprocess.run(
            [sys.executable, "-m", "tobe", "admin", *args],
            env=self.mind.env,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert result.returncode == 0, result.stderr

    def say(self, key: str, text: str) -> None:
        """Send `text` to the conversation as another of alice's clients does."""
        channel, stub = self._stub()
        with channel:
            stub.SendChat(
                mind_pb2.SendChatRequest(
                    on_behalf_of=_alice(),
                    conversation_key=key,
                    text=text,
                    idempotency_key=f"{key}-{text}",
                ),
                metadata=self.mind.gateway_metadata,
                timeout=15,
            )

    def snapshot(self, key: str) -> mind_pb2.GetSnapshotResponse:
        """The conversation as the Mind has it now (its profile, its scheduled actions)."""
        channel, stub = self._stub()
        with channel:
            return stub.GetSnapshot(
                mind_pb2.GetSnapshotRequest(on_behalf_of=_alice(), conversation_key=key),
                metadata=self.mind.gateway_metadata,
                timeout=15,
            )

    def memory(self, key: str) -> dict[str, str]:
        """The conversation's memory entries (key → text), as the Mind has them."""
        channel, stub = self._stub()
        with channel:
            listed = stub.ListMemory(
                mind_pb2.ListMemoryRequest(on_behalf_of=_alice(), conversation_key=key),
                metadata=self.mind.gateway_metadata,
                timeout=15,
            )
        return {entry.key: entry.text for entry in listed.entries}

    def usage(self, key: str) -> mind_pb2.GetConversationUsageResponse:
        """The conversation's token usage, as the Mind reports it."""
        channel, stub = self._stub()
        with channel:
            return stub.GetConversationUsage(
                mind_pb2.GetConversationUsageRequest(on_behalf_of=_alice(), conversation_key=key),
                metadata=self.mind.gateway_metadata,
                timeout=15,
            )

    def schedules(self, key: str) -> dict[str, common_pb2.ScheduleState.ValueType]:
        """The state of each scheduled action of the conversation, ended ones included."""
        channel, stub = self._stub()
        with channel:
            listed = stub.ListActions(
                mind_pb2.ListActionsRequest(
                    on_behalf_of=_alice(), conversation_key=key, include_ended=True
                ),
                metadata=self.mind.gateway_metadata,
                timeout=15,
            )
        return {action.id: action.state for action in listed.scheduled}

    def history(self, key: str) -> mind_pb2.GetHistoryResponse:
        """Every stored message of `key` and its tool projections, as the Mind has them."""
        channel, stub = self._stub()
        with channel:
            return stub.GetHistory(
                mind_pb2.GetHistoryRequest(
                    on_behalf_of=_alice(),
                    conversation_key=key,
                    limit=500,
                    detail_mode=common_pb2.DETAIL_MODE_TRANSPARENT,
                ),
                metadata=self.mind.gateway_metadata,
                timeout=15,
            )


def _alice() -> mind_pb2.OnBehalfOf:
    return mind_pb2.OnBehalfOf(principal=PRINCIPAL, scopes=["chat"])


@contextmanager
def running_stack(
    root: Path,
    *,
    seed: Callable[[str], None] | None = None,
    script_text: str = SCRIPT,
    clients: tuple[str, ...] = (),
    **mind_env: str,
) -> Iterator[Stack]:
    """Mind, Hand and Face (web on a free port), started off the test's loop; all cleaned up.
    `seed(store_url)` writes into the migrated store before the Mind starts (nothing else has
    it open then); `script_text` is the Scripted provider's script, `clients` the principals
    given client tokens (`Stack.mind.client_tokens`), `mind_env` more of the Mind's settings."""
    script = root / "script.yaml"
    script.write_text(script_text)
    config = root / "config.toml"
    config.write_text(CONFIG)
    if seed is not None:
        url = store_url(root / "data")
        upgrade(url)
        off_loop(seed, url)
    with ExitStack() as stack:
        mind = off_loop(
            stack.enter_context,
            running_mind(root, script=script, clients=clients, TOBE_CONFIG=str(config), **mind_env),
        )
        token = off_loop(
            lambda: issue_token(mind.url, kind="hand", principal="laptop", scopes=["serve:alice"])
        )
        hand = LaptopHand(mind.address, token)
        off_loop(hand.start)
        stack.callback(hand.stop)
        face = off_loop(stack.enter_context, running_face(mind))
        yield Stack(mind, face, hand)
