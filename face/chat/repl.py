"""The `tobe chat` loop: read input, run slash commands, send messages, wait for the reply.

Input: a line ending with `\\` continues on the next line; a line with only `\"\"\"` starts or
ends a block sent as one message. Ctrl-C while a reply runs cancels the run; Ctrl-D or `/quit`
leaves.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import threading
import uuid
from collections.abc import Callable

from rich.console import Console
from rich.text import Text

from face.chat import actions, branches, choices, pairing, widgets
from face.chat.attach import ImageRefused, read_image, split_argument
from face.chat.conversations import Conversations, NoSuchChoice
from face.chat.render import Renderer
from face.chat.session import ChatSession, CommandFailed
from tobe.config import MindSettings
from tobe.v1 import common_pb2, events_pb2, face_pb2, mind_pb2

HELP = (
    "/new [title]  start a conversation   /list  your conversations, numbered, newest first\n"
    "/switch N|KEY  open the N-th of /list, or a conversation by its key   /help  this list\n"
    "/cancel  stop the running reply   /compact  summarise older messages to free context\n"
    "/memory  what this conversation remembers   /forget <key>  delete one memory entry\n"
    "/schedules  what this conversation has scheduled   /pause <id>  /resume <id>  "
    "/unschedule <id>  pause, resume or delete one\n"
    "/actions  actions waiting for your confirmation   /confirm <id>   /decline <id>\n"
    "/amend <id> <change>  have a waiting action planned again with the change\n"
    "/profile [name]  list or switch profiles   /hand <name>|all  which Hand's tools to use\n"
    "/widget <id>  a widget's records, as tables (its id is on the widget's line)\n"
    "/image PATH [text]  send an image (PNG, JPEG, WebP, GIF) with optional text\n"
    "/reply ID text  quote message ID in your message   /reply  the last messages with their ids\n"
    "/branch [ID]  go on from the last message (or message ID) in a new conversation\n"
    "/pair  a one-time code and link that sign a browser (the web client) in as you\n"
    '/quit  leave   (end a line with \\ or use """ for multi-line input)\n'
    "approval requests: y = approve once, a = always in this conversation, n [reason] = deny"
)
APPROVAL_PROMPT = "approve? [y]es once / [a]lways here / [n]o [reason]: "
_ANSWERS = {
    "y": common_pb2.APPROVAL_DECISION_APPROVE_ONCE,
    "a": common_pb2.APPROVAL_DECISION_APPROVE_CONVERSATION,
    "n": common_pb2.APPROVAL_DECISION_DENY,
}
BLOCK = '"""'
_SCHEDULE_CHANGES = {
    "/pause": common_pb2.SCHEDULE_CHANGE_PAUSE,
    "/resume": common_pb2.SCHEDULE_CHANGE_RESUME,
    "/unschedule": common_pb2.SCHEDULE_CHANGE_DELETE,
}
# How many recent messages `/reply` offers, and who said them.
REPLY_CHOICES = 10
_SPEAKERS = {common_pb2.MESSAGE_ROLE_USER: "you", common_pb2.MESSAGE_ROLE_ASSISTANT: "ToBe"}

# Makes the session that hands events and status lines to the renderer's callbacks.
SessionFactory = Callable[[Callable[[events_pb2.Event], None], Callable[[str], None]], ChatSession]


class ChatRepl:
    def __init__(
        self,
        console: Console,
        session_factory: SessionFactory,
        *,
        max_image_bytes: int = MindSettings().max_image_bytes,
    ) -> None:
        """`max_image_bytes`: the largest image `/image` sends (the Mind's `max_image_bytes`)."""
        self.console = console
        self.max_image_bytes = max_image_bytes
        self.renderer = Renderer(console)
        self.session: ChatSession = session_factory(self.renderer.on_event, self.renderer.status)
        self.session.on_snapshot_required = self._restart_from_snapshot
        self.conversations = Conversations(self.session, console)
        self._approvals: asyncio.Queue[common_pb2.Approval] = asyncio.Queue()
        self.renderer.on_approval_request = self._approvals.put_nowait

    async def run(self, conversation: str | None) -> None:
        """Chat until /quit or Ctrl-D; a credential refused meanwhile (revoked) ends it at
        once with the session's FatalSessionError, whatever the chat was waiting for."""
        await self.session.start()
        talk = asyncio.ensure_future(self._talk(conversation))
        ended = asyncio.ensure_future(self.session.ended())
        try:
            await asyncio.wait({talk, ended}, return_when=asyncio.FIRST_COMPLETED)
            if ended.done():
                asking = bool(self.renderer.live.prompt)
                talk.cancel()
                await asyncio.gather(talk, return_exceptions=True)
                self.renderer.live.finish()
                if asking:
                    self.console.print()  # the line that ends it starts below the prompt
                ended.result()
            await talk
        finally:
            ended.cancel()
            await self.session.close()

    async def _talk(self, conversation: str | None) -> None:
        self.console.print(
            Text(f"connected as {self.session.principal}; /help lists the commands", style="dim")
        )
        await self._open(conversation or await self.conversations.newest_chat_or_new())
        while True:
            while not self._approvals.empty():
                await self._answer(self._approvals.get_nowait())
            # A run someone else started (an observation's, a follow-up) is not drawn over
            # the line being typed; its messages still print as they arrive.
            self.renderer.live.pause()
            text = await self._read_message()
            self.renderer.live.resume()
            if text is None or text.strip() == "/quit":
                return
            if not text.strip():
                continue
            if text.startswith("/"):
                await self._slash(text.strip())
            else:
                await self._send(text)

    # -- conversations --------------------------------------------------------------------------

    async def _open(self, key: str) -> None:
        reply = await self.session.call(
            face_pb2.MindCall(
                get_snapshot=mind_pb2.GetSnapshotRequest(conversation_key=key, message_limit=20)
            )
        )
        snapshot = reply.get_snapshot
        self.renderer.conversation = key
        title = snapshot.conversation.title or key
        kind = snapshot.conversation.kind
        marked = f" [{kind}]" if kind and kind != "chat" else ""
        self.console.rule(Text(f"{title} ({key}){marked}", style="bold"))
        if origin := branches.origin_line(snapshot.conversation):
            self.renderer.status(origin)
        self.renderer.show_history(snapshot.messages, snapshot.tools, snapshot.children)
        for approval in snapshot.pending_approvals:
            self.renderer.on_event(
                events_pb2.Event(conversation_key=key, approval_changed=approval)
            )
        for action in snapshot.pending_actions:
            self.renderer.on_event(events_pb2.Event(conversation_key=key, action_changed=action))
        await self.session.subscribe(snapshot.last_event_id)

    async def _restart_from_snapshot(self) -> None:
        self.renderer.status("missed too much while away; reloading the conversation")
        await self._open(self.renderer.conversation)

    async def _slash(self, line: str) -> None:
        name, _, argument = line.partition(" ")
        try:
            if name == "/new":
                await self._open(await self.conversations.create(argument.strip()))
            elif name == "/list":
                await self.conversations.show_list(self.renderer.conversation)
            elif name == "/switch" and argument.strip():
                await self._open(await self.conversations.resolve(argument.strip()))
            elif name == "/cancel":
                await self.session.call(
                    face_pb2.MindCall(
                        cancel_run=mind_pb2.CancelRunRequest(
                            conversation_key=self.renderer.conversation
                        )
                    )
                )
            elif name == "/compact":
                await self._compact()
            elif name == "/memory":
                await self._memory()
            elif name == "/forget" and argument.strip():
                await self._forget(argument.strip())
            elif name == "/schedules":
                await self._schedules()
            elif name in _SCHEDULE_CHANGES and argument.strip():
                await self._change_schedule(name, argument.strip())
            elif name == "/actions":
                await actions.show(self.session, self.console, self.renderer.conversation)
            elif name in actions.DECISIONS and argument.strip():
                await actions.decide(self.session, self.console, name, argument)
            elif name == "/profile":
                await choices.profile(
                    self.session, self.console, self.renderer.conversation, argument.strip()
                )
            elif name == "/hand" and argument.strip():
                await choices.hand(
                    self.session, self.console, self.renderer.conversation, argument.strip()
                )
            elif name == "/widget" and argument.strip():
                await widgets.show(
                    self.session, self.console, self.renderer.conversation, argument.strip()
                )
            elif name == "/image":
                await self._send_image(argument)
            elif name == "/reply":
                await self._reply(argument)
            elif name == "/branch":
                made = await branches.branch(self.session, self.renderer.conversation, argument)
                await self._open(made.key)
            elif name == "/pair":
                await pairing.pair(self.session, self.console)
            elif name == "/help":
                self.console.print(Text(HELP, style="dim"))
            else:
                self.console.print(Text(f"unknown command {line}\n{HELP}", style="dim"))
        except CommandFailed as exc:
            self.console.print(Text(exc.message, style="red"))
        except NoSuchChoice as exc:
            self.console.print(Text(str(exc), style="red"))

    async def _compact(self) -> None:
        """Compact the current conversation now; its reply says what was summarised."""
        key = self.renderer.conversation
        self.renderer.status("compacting (after the running reply, if any)…")
        reply = await self.session.call(
            face_pb2.MindCall(
                compact_conversation=mind_pb2.CompactConversationRequest(conversation_key=key)
            )
        )
        self.renderer.show_compaction(key, reply.compact_conversation.compaction)

    async def _memory(self) -> None:
        """The conversation's memory: one line per entry, its key and the start of its text."""
        key = self.renderer.conversation
        reply = await self.session.call(
            face_pb2.MindCall(list_memory=mind_pb2.ListMemoryRequest(conversation_key=key))
        )
        self.renderer.show_memory(reply.list_memory)

    async def _forget(self, memory_key: str) -> None:
        reply = await self.session.call(
            face_pb2.MindCall(
                delete_memory=mind_pb2.DeleteMemoryRequest(
                    conversation_key=self.renderer.conversation, key=memory_key
                )
            )
        )
        existed = reply.delete_memory.existed
        self.renderer.status(f"forgot {memory_key}" if existed else f"no memory {memory_key!r}")

    async def _schedules(self) -> None:
        """The conversation's scheduled actions that may still fire, from its snapshot."""
        reply = await self.session.call(
            face_pb2.MindCall(
                get_snapshot=mind_pb2.GetSnapshotRequest(
                    conversation_key=self.renderer.conversation, message_limit=1
                )
            )
        )
        self.renderer.show_schedules(reply.get_snapshot.scheduled_actions)

    async def _change_schedule(self, name: str, schedule_id: str) -> None:
        reply = await self.session.call(
            face_pb2.MindCall(
                change_schedule=mind_pb2.ChangeScheduleRequest(
                    schedule_id=schedule_id, change=_SCHEDULE_CHANGES[name]
                )
            )
        )
        self.renderer.show_schedule_change(reply.change_schedule.scheduled)

    # -- chatting -------------------------------------------------------------------------------

    async def _send_image(self, argument: str) -> None:
        path, text = split_argument(argument)
        try:
            attachment = read_image(path, self.max_image_bytes)
        except ImageRefused as exc:
            self.console.print(Text(str(exc), style="red"))
            return
        self.console.print(Text(attachment.label(), style="cyan"))
        upload = common_pb2.ImageUpload(media_type=attachment.media_type, data=attachment.data)
        await self._send(text, [upload])

    async def _reply(self, argument: str) -> None:
        """`/reply ID text` sends `text` quoting message ID; `/reply` alone lists the last
        messages with their ids, to pick one."""
        target, _, text = argument.strip().partition(" ")
        if not target:
            await self._list_for_reply()
            return
        if not target.lstrip("#").isdigit() or not text.strip():
            self.console.print(
                Text("usage: /reply ID text  (/reply lists message ids)", style="red")
            )
            return
        await self._send(text.strip(), reply_to=int(target.lstrip("#")))

    async def _list_for_reply(self) -> None:
        reply = await self.session.call(
            face_pb2.MindCall(
                get_snapshot=mind_pb2.GetSnapshotRequest(
                    conversation_key=self.renderer.conversation, message_limit=REPLY_CHOICES * 4
                )
            )
        )
        said = [
            m for m in reply.get_snapshot.messages if m.role in _SPEAKERS and (m.text or m.images)
        ][-REPLY_CHOICES:]
        if not said:
            self.renderer.status("nothing to reply to yet")
        for message in said:
            text = " ".join(message.text.split())[:80] or "[image]"
            who = _SPEAKERS[message.role]
            self.console.print(Text.assemble((f"#{message.id} ", "bold"), f"{who}: {text}"))

    async def _send(
        self,
        text: str,
        images: list[common_pb2.ImageUpload] | None = None,
        reply_to: int = 0,
    ) -> None:
        self.renderer.sent_texts.append(text)
        try:
            sent = await self.session.send_chat(
                mind_pb2.SendChatRequest(
                    conversation_key=self.renderer.conversation,
                    text=text,
                    idempotency_key=uuid.uuid4().hex,
                    images=images or [],
                    reply_to=reply_to,
                )
            )
        except CommandFailed as exc:
            self.renderer.sent_texts.remove(text)
            self.console.print(Text(exc.message, style="red"))
            return
        if sent.queued or not sent.run_id:
            self.renderer.status("queued behind the running reply")
            return
        await self._wait_for_run(sent.run_id)

    async def _wait_for_run(self, run_id: str) -> None:
        """Wait for the run to end; Ctrl-C cancels it."""
        loop = asyncio.get_running_loop()
        cancel = lambda: asyncio.ensure_future(self._cancel_quietly())  # noqa: E731
        loop.add_signal_handler(signal.SIGINT, cancel)
        finished = asyncio.ensure_future(self.renderer.run_finished(run_id).wait())
        try:
            while not finished.done():
                asked = asyncio.ensure_future(self._approvals.get())
                await asyncio.wait({finished, asked}, return_when=asyncio.FIRST_COMPLETED)
                if asked.done():
                    await self._answer(asked.result())
                else:
                    asked.cancel()
        finally:
            finished.cancel()
            loop.remove_signal_handler(signal.SIGINT)

    async def _answer(self, approval: common_pb2.Approval) -> None:
        """Ask y / a / n for a pending approval and send the decision; what streams and runs
        is drawn again once answered."""
        try:
            await self._decide(approval)
        finally:
            self.renderer.live.resume()

    async def _decide(self, approval: common_pb2.Approval) -> None:
        while True:
            line = await self._ask(APPROVAL_PROMPT)
            word, _, reason = (line or "n").strip().partition(" ")
            decision = _ANSWERS.get(word.lower()[:1])
            if decision is not None:
                break
            self.console.print(Text("answer y, a or n", style="dim"))
        try:
            await self.session.call(
                face_pb2.MindCall(
                    decide_approval=mind_pb2.DecideApprovalRequest(
                        approval_id=approval.id, decision=decision, reason=reason.strip()
                    )
                )
            )
        except CommandFailed as exc:
            self.console.print(Text(exc.message, style="red"))

    async def _cancel_quietly(self) -> None:
        with contextlib.suppress(CommandFailed):
            await self.session.call(
                face_pb2.MindCall(
                    cancel_run=mind_pb2.CancelRunRequest(
                        conversation_key=self.renderer.conversation
                    )
                )
            )

    async def _ask(self, prompt: str) -> str | None:
        """One line typed after `prompt`; lines printed while it waits go above it."""
        self.console.file.write(prompt)
        self.console.file.flush()
        self.renderer.live.prompt = prompt
        try:
            return await _read_line()
        finally:
            self.renderer.live.prompt = ""

    async def _read_message(self) -> str | None:
        lines: list[str] = []
        block = False
        while True:
            prompt = "you› " if not lines else "...  "
            line = await self._ask(prompt)
            if line is None:
                return "\n".join(lines) if lines else None
            if line.strip() == BLOCK:
                if block:
                    return "\n".join(lines)
                block = True
                continue
            if block:
                lines.append(line)
            elif line.endswith("\\"):
                lines.append(line[:-1])
            else:
                lines.append(line)
                return "\n".join(lines)


async def _read_line() -> str | None:
    """input() on a daemon thread, so that leaving never waits for a pending read."""
    loop = asyncio.get_running_loop()
    future: asyncio.Future[str | None] = loop.create_future()

    def read() -> None:
        try:
            line: str | None = input()
        except EOFError:
            line = None

        def deliver() -> None:
            if not future.done():
                future.set_result(line)

        loop.call_soon_threadsafe(deliver)

    threading.Thread(target=read, daemon=True).start()
    return await future
