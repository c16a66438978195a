"""The bottom of the terminal while a reply runs: the text streaming in and the tools running.

Everything here is provisional and drawn in a transient live region: streamed text stands in
for its step's message until that durable message arrives (then it is dropped and the message
is printed, once), and a spinner stands for each running tool until its result line is
printed. The region is erased before any line is printed above it and drawn again below, so no
spinner frame is left behind and no streamed text ends up on the screen twice, whatever order
the ephemeral deltas and the durable events arrive in. Deltas are kept per step because the
next step's text may stream in before the previous step's last durable event.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from rich.console import Console, Group, RenderableType
from rich.live import Live
from rich.markdown import Markdown
from rich.segment import Segment, Segments
from rich.spinner import Spinner
from rich.text import Text


@dataclass
class _Step:
    text: str = ""
    thinking: str = ""


@dataclass
class _Tool:
    name: str
    progress: str = ""
    # Lines drawn under the spinner (a `delegate` call's child run).
    nested: list[Text] = field(default_factory=list)


class LiveRegion:
    def __init__(self, console: Console) -> None:
        self._console = console
        self._live: Live | None = None
        self._steps: dict[int, _Step] = {}
        self._tools: dict[str, _Tool] = {}
        # While the person answers a prompt nothing is drawn over it.
        self._paused = False
        # The prompt waiting for a line on the bottom row ("" when none): lines printed
        # meanwhile take its place and it is written again below them.
        self.prompt = ""

    def print(self, *renderables: RenderableType) -> None:
        """Print lines above the region (which is drawn again below them), and above a
        waiting prompt (written again below them; what was typed stays in the line)."""
        self._hide()
        prompt = self.prompt if self._console.is_terminal else ""
        if prompt:
            self._console.file.write("\r\x1b[2K")
        for renderable in renderables:
            self._console.print(renderable)
        if prompt:
            self._console.file.write(prompt)
            self._console.file.flush()
        self._draw()

    def stream(self, step: int, text: str, *, thinking: bool = False) -> None:
        streamed = self._steps.setdefault(step, _Step())
        if thinking:
            streamed.thinking += text
        else:
            streamed.text += text
        # Markdown is rendered again on each draw: deltas wait for the next tick (12 a second).
        self._draw(at_once=False)

    def streamed_step(self, text: str) -> int | None:
        """The step whose streamed text is `text` (a message tells no step of its own)."""
        wanted = text.strip()
        found = [step for step, streamed in self._steps.items() if streamed.text.strip() == wanted]
        return min(found) if wanted and found else None

    def drop_through(self, step: int) -> None:
        """Forget what streamed up to `step`: its durable message is printed instead, and an
        earlier step still here ended without one (a retried overflow, an empty reply)."""
        for ended in [s for s in self._steps if s <= step]:
            del self._steps[ended]
        self._draw()

    def tool_started(self, call_id: str, name: str) -> None:
        self._tools[call_id] = _Tool(name)
        self._draw()

    def tool_progress(self, call_id: str, line: str) -> None:
        """Show a running tool's latest progress beside its spinner (one line when piped)."""
        tool = self._tools.get(call_id)
        if tool is None:
            return  # late progress of a call that already ended
        tool.progress = line
        if self._console.is_terminal:
            self._draw()
        else:
            self.print(Text(f"  … {line}", style="dim"))

    def tool_nested(self, call_id: str, lines: list[Text]) -> None:
        """Draw `lines` under a running tool's spinner (only on a terminal: when piped, the
        call's end prints them once)."""
        tool = self._tools.get(call_id)
        if tool is not None:
            tool.nested = lines
            if self._console.is_terminal:
                self._draw()

    def tool_ended(self, call_id: str) -> None:
        self._tools.pop(call_id, None)
        self._draw()

    def running(self, call_id: str) -> bool:
        return call_id in self._tools

    def finish(self) -> str:
        """End the run: erase the region and return the text no durable message replaced
        (what streamed before a cancel or a failure)."""
        leftover = "".join(step.text for _, step in sorted(self._steps.items()))
        self._steps.clear()
        self._tools.clear()
        self._hide()
        return leftover

    def pause(self) -> None:
        self._paused = True
        self._hide()

    def resume(self) -> None:
        self._paused = False
        self._draw()

    def _draw(self, *, at_once: bool = True) -> None:
        parts = self._parts()
        if not parts or self._paused:
            self._hide()
            return
        if self._live is None:
            self._live = Live(
                Group(*parts), console=self._console, refresh_per_second=12, transient=True
            )
            self._live.start(refresh=True)
        else:
            self._live.update(Group(*parts), refresh=at_once)

    def _parts(self) -> list[RenderableType]:
        streamed: list[RenderableType] = []
        for _, step in sorted(self._steps.items()):
            if step.thinking:
                streamed.append(Text(step.thinking, style="dim italic"))
            if step.text:
                streamed.append(Markdown(step.text))
        spinners: list[RenderableType] = []
        for tool in self._tools.values():
            doing = f" running {tool.name}" + (f" — {tool.progress}" if tool.progress else "")
            spinners.append(Spinner("dots", text=Text(doing, style="yellow")))
            spinners.extend(tool.nested)
        room = self._console.height - len(spinners) - 1
        return [*self._tail(streamed, room), *spinners]

    def _tail(self, parts: list[RenderableType], room: int) -> list[RenderableType]:
        """The last `room` lines of what streamed: a region taller than the screen could not
        be erased, and the newest text is what a person follows."""
        if not parts:
            return []
        lines = self._console.render_lines(Group(*parts), pad=False)
        if len(lines) <= room:
            return parts
        kept = lines[-max(room, 1) :]
        return [Segments([segment for line in kept for segment in (*line, Segment.line())])]

    def _hide(self) -> None:
        if self._live is not None:
            self._live.stop()
            self._live = None
