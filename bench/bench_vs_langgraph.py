"""The same scripted one-tool turn through ToBe and through LangGraph, in one run, side by side.

A turn: a user message; the model asks for one tool, `lookup(key)`, which returns a short
string; the model answers. Every conversation sends its turns back to back; all of them run at
once (`--conversations`, default 20). Every system is started first; then each is measured in
turn, window by window (`--rounds` windows of `--seconds` / `--rounds` each), so that a load
that comes and goes on the machine falls on all of them alike. Before a system's first window
it warms up (`--warmup`); between windows the previous system's last turns drain. Completed
turns are counted, and each turn's latency is kept for p50 and p99.

* ToBe: Awareness, the Mind, Face and a Hand run as separate processes on a fresh data
  directory. The Mind plays a Scripted provider and serves each conversation's owner through
  Face: one FaceGateway connection per conversation (its own principal), sending `send_chat`
  and waiting for the run's terminal `run_changed` on that connection. `lookup` runs on a real
  SDK Hand (read-only, so the default policy allows it without a person).
* LangGraph: `create_react_agent` with a chat model that asks for the same tool and then
  answers, checkpointed by `AsyncSqliteSaver` on a file (WAL, as the saver sets it), one
  `thread_id` per conversation, in this process.

`--synchronous` sets SQLite's `PRAGMA synchronous` on both sides: ToBe through
`TOBE_STORE__SQLITE_SYNCHRONOUS`, LangGraph on its connection. SQLite's default, and so
LangGraph's, is FULL, which is the comparison that counts (equal durability). LangGraph runs
with its default `durability="async"` (a step's checkpoint commits while the next step runs,
all of them before `ainvoke` returns); one more row shows `durability="sync"`, where each step
commits before the next starts, as ToBe's store does.

Besides turns/s and latency, the table shows CPU per turn (ToBe: the Mind's own, from
/proc/<pid>/stat; the other three services on a line below; LangGraph: this whole process,
load generator included) and the store's work per turn: ToBe's is read inside the Mind by a
hook loaded through `sitecustomize` (the store's own counters of units, commits and reads:
read transactions and single-statement reads); LangGraph's is its saver's commits (one per
checkpoint and per batch of pending writes).

ToBe runs with the entry decision layer off, doing LangGraph's work; `--decision-layer` adds a
row with it on (one more model call per turn, the extractor's, answered "ordinary chat").

`--targets` runs exactly the rows the performance targets name and prints each target with
its figure and whether it is met:

* through the Face, ToBe with `synchronous=FULL` against LangGraph with FULL: at least 2.5×;
* ToBe's default configuration (the decision layer on, SQLite's `synchronous` at ToBe's
  default, NORMAL; the Scripted provider answering the extractor's stage) against LangGraph's
  plain loop (its defaults: FULL, `durability="async"`): at least 1.5×;
* p99 at most 2× p50 on each ToBe row, with 20 conversations.

Reproduce (from the repository root, after `pip install -e '.[bench]'`):

    python bench/bench_vs_langgraph.py --seconds 20
    python bench/bench_vs_langgraph.py --seconds 20 --synchronous full --decision-layer
    python bench/bench_vs_langgraph.py --seconds 20 --targets
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import os
import signal
import statistics
import sys
import tempfile
import time
import uuid
import warnings
from collections.abc import Awaitable, Callable, Iterator, Sequence
from contextlib import AsyncExitStack, ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc

TESTS = Path(__file__).resolve().parents[1] / "tests"
sys.path[:0] = [str(TESTS), str(TESTS / "awareness"), str(TESTS / "remote")]

from awareness_harness import TOKEN as AWARENESS_TOKEN  # noqa: E402
from awareness_harness import new_process as new_awareness  # noqa: E402
from helpers.face_client import TERMINAL_RUN_STATES, FaceClient  # noqa: E402
from helpers.face_process import FaceProcess, running_face  # noqa: E402
from helpers.mind_process import MindProcess, issue_token, running_mind  # noqa: E402
from remote_processes import HandProcess  # noqa: E402

from tobe.v1 import common_pb2, face_pb2  # noqa: E402

SCRIPT = """
runs:
  - match: ".*"
    steps:
      - text: "checking"
        tool_calls: [{name: laptop__lookup, arguments: {key: k}}]
      - {expect: {last_role: tool}, text: "done"}
"""
HAND_PROGRAM = '''
import asyncio, logging, os, sys

from hand import Hand

logging.basicConfig(level=logging.INFO)
hand = Hand("laptop")


@hand.tool(effect="read_only")
async def lookup(key: str) -> str:
    """Look a key up."""
    return f"value of {key}"


asyncio.run(hand.serve(sys.argv[1], os.environ["TOBE_HAND_TOKEN"]))
'''
# Loaded by the Mind's interpreter only (PYTHONPATH): writes the store's own counters (units
# written, commits that held them, reads) to $BENCH_TRANSACTIONS_FILE on SIGUSR1.
TRANSACTION_COUNTER = """
import os
import signal

from mind.store import database

stores = []
real_init = database.Database.__init__


def init(self, writer, read_engine):
    real_init(self, writer, read_engine)
    stores.append(self)


def dump(_signum, _frame):
    units = sum(store.stats.units for store in stores)
    commits = sum(store.stats.commits for store in stores)
    reads = sum(store.stats.reads for store in stores)
    path = os.environ["BENCH_TRANSACTIONS_FILE"]
    with open(path + ".tmp", "w") as out:
        out.write(f"{units} {commits} {reads}")
    os.replace(path + ".tmp", path)


database.Database.__init__ = init
signal.signal(signal.SIGUSR1, dump)
"""
USER_TEXT = "look it up"
# The unmeasured time before each window after a system's first: the previous row's last
# turns drain (its background work, such as indexing, settles).
DRAIN = 1.0
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


@dataclass
class Probe:
    """Counters read at the start and the end of the measured window."""

    cpu: dict[str, float]
    units: int = 0
    commits: int = 0
    reads: int = 0


@dataclass
class Result:
    system: str
    synchronous: str
    seconds: float
    latencies: list[float]
    before: Probe
    after: Probe
    # Whose CPU the `cpu ms/turn` column shows; the others are listed below the table.
    main_process: str
    # Whether units and reads are counted (ToBe) or only commits are known (LangGraph).
    counts_units: bool
    ratio: float | None = None

    @property
    def turns(self) -> int:
        return len(self.latencies)

    @property
    def rate(self) -> float:
        return self.turns / self.seconds

    def per_turn(self, value: float) -> float:
        return value / self.turns if self.turns else float("nan")

    def cpu_per_turn(self, process: str) -> float:
        return self.per_turn(self.after.cpu[process] - self.before.cpu[process])

    def percentile(self, q: int) -> float:
        if len(self.latencies) < 2:
            return float("nan")
        return statistics.quantiles(self.latencies, n=100, method="inclusive")[q - 1]


@dataclass(frozen=True)
class Row:
    """A row of the table: ToBe (`durability` empty) or LangGraph with that durability."""

    system: str
    synchronous: str
    decisions: bool = False
    durability: str = ""


@dataclass
class Arm:
    """A row's running system: how to drive one turn and read its counters; the figures of
    its windows summed."""

    row: Row
    main_process: str
    counts_units: bool
    turn: Callable[[int], Awaitable[None]]
    probe: Callable[[], Probe]
    latencies: list[float] = field(default_factory=list)
    spent: Probe | None = None

    def add(self, latencies: list[float], before: Probe, after: Probe) -> None:
        self.latencies += latencies
        spent = self.spent or Probe({name: 0.0 for name in after.cpu})
        self.spent = Probe(
            {name: spent.cpu[name] + after.cpu[name] - before.cpu[name] for name in after.cpu},
            spent.units + after.units - before.units,
            spent.commits + after.commits - before.commits,
            spent.reads + after.reads - before.reads,
        )

    def result(self, seconds: float) -> Result:
        assert self.spent is not None, "measured at least once"
        return Result(
            self.row.system,
            self.row.synchronous.upper(),
            seconds,
            self.latencies,
            Probe({name: 0.0 for name in self.spent.cpu}),
            self.spent,
            main_process=self.main_process,
            counts_units=self.counts_units,
        )


def cpu_seconds(pid: int) -> float:
    """User plus system CPU time of a process, from /proc (fields 14 and 15 of stat)."""
    stat = Path(f"/proc/{pid}/stat").read_text()
    fields = stat.rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS


def own_cpu_seconds() -> float:
    times = os.times()
    return times.user + times.system


async def drive(
    turn: Callable[[int], Awaitable[None]],
    conversations: int,
    warmup: float,
    seconds: float,
    probe: Callable[[], Probe],
) -> tuple[list[float], Probe, Probe]:
    """Run `turn(i)` back to back for every conversation `i`; keep the latencies of the turns
    that ended inside the measured window, and probe the counters at its start and end."""
    window_start = time.perf_counter() + warmup
    window_end = window_start + seconds
    latencies: list[float] = []

    async def conversation(index: int) -> None:
        while (began := time.perf_counter()) < window_end:
            await turn(index)
            ended = time.perf_counter()
            if window_start <= ended <= window_end:
                latencies.append(ended - began)

    async def probes() -> tuple[Probe, Probe]:
        await asyncio.sleep(window_start - time.perf_counter())
        before = await asyncio.to_thread(probe)
        await asyncio.sleep(window_end - time.perf_counter())
        return before, await asyncio.to_thread(probe)

    probing = asyncio.create_task(probes())
    await asyncio.gather(*(conversation(i) for i in range(conversations)))
    before, after = await probing
    return latencies, before, after


# -- ToBe ------------------------------------------------------------------------------------


class FaceConversation:
    """One client connection to Face driving one conversation of its own principal."""

    def __init__(self, client: FaceClient, key: str) -> None:
        self.client = client
        self.key = key
        self.replies: dict[str, asyncio.Future[face_pb2.Reply]] = {}
        self.waiting: dict[str, asyncio.Future[None]] = {}
        self.ended: set[str] = set()
        self.ids = itertools.count(1)
        self.reader: asyncio.Task[None] | None = None

    @classmethod
    async def open(cls, address: str, token: str, key: str) -> FaceConversation:
        conversation = cls(await FaceClient.connect(address, token, reading=False), key)
        conversation.reader = asyncio.create_task(conversation.read())
        await conversation.command(create_conversation=face_pb2.CreateConversationCommand(key=key))
        await conversation.command(subscribe=face_pb2.SubscribeCommand(after_id=0))
        return conversation

    async def read(self) -> None:
        """Route replies and run ends to whoever waits for them; a failure fails them all."""
        try:
            while (frame := await self.client.call.read()) is not grpc.aio.EOF:
                if frame.HasField("reply"):
                    self.replies.pop(frame.reply.request_id).set_result(frame.reply)
                elif frame.HasField("resync"):
                    raise RuntimeError(f"Face asked {self.key} to resync: {frame.resync.reason}")
                elif frame.HasField("event") and frame.event.HasField("run_changed"):
                    self.run_changed(frame.event.run_changed)
            raise RuntimeError(f"Face closed the connection of {self.key}")
        except Exception as exc:
            for future in [*self.replies.values(), *self.waiting.values()]:
                if not future.done():
                    future.set_exception(exc)
            raise

    def run_changed(self, run: Any) -> None:
        if run.state not in TERMINAL_RUN_STATES:
            return
        if run.state != common_pb2.RUN_STATE_COMPLETED:
            raise RuntimeError(f"run {run.id} of {self.key} ended in state {run.state}")
        future = self.waiting.pop(run.id, None)
        if future is None:
            self.ended.add(run.id)
        else:
            future.set_result(None)

    async def command(self, **frame: Any) -> face_pb2.Reply:
        request_id = f"r{next(self.ids)}"
        reply = self.replies[request_id] = asyncio.get_running_loop().create_future()
        await self.client.call.write(face_pb2.ConnectRequest(request_id=request_id, **frame))
        done = await reply
        if done.HasField("error"):
            raise RuntimeError(f"{self.key}: {done.error.message}")
        return done

    async def turn(self) -> None:
        reply = await self.command(
            send_chat=face_pb2.SendChatCommand(
                conversation_key=self.key, text=USER_TEXT, idempotency_key=uuid.uuid4().hex
            )
        )
        run_id = reply.send_chat.run_id
        if run_id in self.ended:
            self.ended.discard(run_id)
            return
        ended = self.waiting[run_id] = asyncio.get_running_loop().create_future()
        await ended

    async def close(self) -> None:
        if self.reader is not None:
            self.reader.cancel()
        await self.client.close()


@dataclass
class Platform:
    mind: MindProcess
    face: FaceProcess
    users: Sequence[str]
    transactions_file: Path
    # Process ids by service, for their CPU time.
    processes: dict[str, int]

    def probe(self) -> Probe:
        units, commits, reads = self.transactions()
        return Probe(
            {name: cpu_seconds(pid) for name, pid in self.processes.items()}, units, commits, reads
        )

    def transactions(self) -> tuple[int, int, int]:
        """Ask the Mind's transaction counter for its counts (see TRANSACTION_COUNTER)."""
        self.transactions_file.unlink(missing_ok=True)
        assert self.mind.process is not None
        os.kill(self.mind.process.pid, signal.SIGUSR1)
        deadline = time.monotonic() + 10
        while not self.transactions_file.exists():
            if time.monotonic() > deadline:
                raise RuntimeError("the Mind did not report its transaction counts")
            time.sleep(0.002)
        units, commits, reads = self.transactions_file.read_text().split()
        return int(units), int(commits), int(reads)


BENCH_MODEL = {"id": "bench-model", "context_window": 128_000, "max_output": 16_384}


@contextmanager
def tobe_platform(
    root: Path, synchronous: str, conversations: int, decisions: bool = False
) -> Iterator[Platform]:
    """Awareness, Mind, Face and the Hand on a fresh data directory under `root`."""
    root.mkdir(parents=True)
    script = root / "script.yaml"
    script.write_text(SCRIPT)
    hooks = root / "hooks"
    hooks.mkdir()
    (hooks / "sitecustomize.py").write_text(TRANSACTION_COUNTER)
    transactions_file = root / "transactions"
    python_path = os.pathsep.join(filter(None, [str(hooks), os.environ.get("PYTHONPATH")]))
    users = tuple(f"user{index:02d}" for index in range(conversations))
    with new_awareness() as awareness:
        awareness.start()
        assert awareness.process is not None
        with (
            running_mind(
                root,
                script=script,
                clients=users,
                TOBE_STORE__SQLITE_SYNCHRONOUS=synchronous,
                # The entry decision layer costs one extractor call per message (answered
                # "ordinary chat" by the Scripted model); off, ToBe does LangGraph's work.
                TOBE_ACTIONS__ENABLED="true" if decisions else "false",
                # A model with a known window, as every wire provider's is: each request is
                # measured against the context budget, as in a real deployment.
                TOBE_PROVIDER__MODEL="bench-model",
                TOBE_PROVIDER__MODELS=json.dumps([BENCH_MODEL]),
                TOBE_MIND__AWARENESS_ADDRESS=awareness.target,
                TOBE_AWARENESS__TOKEN=AWARENESS_TOKEN,
                PYTHONPATH=python_path,
                BENCH_TRANSACTIONS_FILE=str(transactions_file),
            ) as mind,
            running_face(mind) as face,
        ):
            token = issue_token(mind.url, kind="hand", principal="laptop", scopes=["serve-all"])
            program = root / "lookup_hand.py"
            program.write_text(HAND_PROGRAM)
            workspace = root / "workspace"
            workspace.mkdir()
            hand = HandProcess(mind.address, token, workspace, program=program)
            try:
                hand.start()
                hand.wait_attached()
                assert mind.process and face.process and hand.process
                yield Platform(
                    mind,
                    face,
                    users,
                    transactions_file,
                    {
                        "mind": mind.process.pid,
                        "face": face.process.pid,
                        "hand": hand.process.pid,
                        "awareness": awareness.process.pid,
                    },
                )
            finally:
                hand.kill()


def tobe_platforms(
    stack: ExitStack, rows: Sequence[Row], conversations: int, tmp: Path
) -> dict[Row, Platform]:
    """ToBe's services started for each ToBe row, until `stack` closes (before the event loop
    of the measurement: starting them runs loops of their own)."""
    return {
        row: stack.enter_context(
            tobe_platform(
                tmp / f"tobe-{row.synchronous}{'-decisions' if row.decisions else ''}",
                row.synchronous,
                conversations,
                row.decisions,
            )
        )
        for row in rows
        if not row.durability
    }


async def tobe_arm(stack: AsyncExitStack, row: Row, platform: Platform) -> Arm:
    """The row's conversations opened on its started services, until `stack` closes."""
    opened = []
    for user in platform.users:
        opened.append(
            await FaceConversation.open(
                platform.face.address, platform.mind.client_tokens[user], f"p_bench_{user}"
            )
        )
        stack.push_async_callback(opened[-1].close)
    return Arm(row, "mind", True, lambda index: opened[index].turn(), platform.probe)


# -- LangGraph -------------------------------------------------------------------------------


def langgraph_agent(saver: Any) -> Any:
    """`create_react_agent` with a model that asks for `lookup` once, then answers."""
    from langchain_core.language_models.chat_models import BaseChatModel
    from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
    from langchain_core.outputs import ChatGeneration, ChatResult
    from langchain_core.tools import tool
    from langgraph.prebuilt import create_react_agent

    class ScriptedChatModel(BaseChatModel):
        """Plays the same two steps as the ToBe script, without threads or I/O."""

        @property
        def _llm_type(self) -> str:
            return "scripted"

        def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> ScriptedChatModel:
            return self

        def _generate(
            self,
            messages: list[BaseMessage],
            stop: Any = None,
            run_manager: Any = None,
            **kwargs: Any,
        ) -> ChatResult:
            if isinstance(messages[-1], ToolMessage):
                answer = AIMessage(content="done")
            else:
                call = {
                    "name": "lookup",
                    "args": {"key": "k"},
                    "id": uuid.uuid4().hex,
                    "type": "tool_call",
                }
                answer = AIMessage(content="checking", tool_calls=[call])
            return ChatResult(generations=[ChatGeneration(message=answer)])

        async def _agenerate(
            self,
            messages: list[BaseMessage],
            stop: Any = None,
            run_manager: Any = None,
            **kwargs: Any,
        ) -> ChatResult:
            return self._generate(messages)

    @tool
    async def lookup(key: str) -> str:
        """Look a key up."""
        return f"value of {key}"

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # create_react_agent is deprecated in favour of langchain
        return create_react_agent(ScriptedChatModel(), [lookup], checkpointer=saver)


async def langgraph_arm(stack: AsyncExitStack, row: Row, tmp: Path) -> Arm:
    """LangGraph's agent on its saver's connection for `row`, until `stack` closes."""
    import aiosqlite
    from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

    class CountingSaver(AsyncSqliteSaver):
        """The saver, counting its commits (each `aput` and `aput_writes` commits once)."""

        commits = 0

        async def aput(self, *args: Any, **kwargs: Any) -> Any:
            done = await super().aput(*args, **kwargs)
            self.commits += 1
            return done

        async def aput_writes(self, *args: Any, **kwargs: Any) -> None:
            await super().aput_writes(*args, **kwargs)
            self.commits += 1

    path = tmp / f"langgraph-{row.synchronous}-{row.durability}.db"
    connection = await stack.enter_async_context(aiosqlite.connect(path))
    await connection.execute(f"PRAGMA synchronous={row.synchronous.upper()}")
    saver = CountingSaver(connection)
    await saver.setup()
    agent = langgraph_agent(saver)

    async def turn(index: int) -> None:
        await agent.ainvoke(
            {"messages": [("user", USER_TEXT)]},
            {"configurable": {"thread_id": f"t{index}"}},
            durability=row.durability,
        )

    def probe() -> Probe:
        return Probe({"this process": own_cpu_seconds()}, commits=saver.commits)

    return Arm(row, "this process", False, turn, probe)


# -- measuring -------------------------------------------------------------------------------


async def measure(
    rows: Sequence[Row], platforms: dict[Row, Platform], args: argparse.Namespace, tmp: Path
) -> list[Result]:
    """Open every row's system, then measure them in turn, `--rounds` windows each: a load
    that changes while the benchmark runs (other work on the machine) falls on every row
    alike, so the ratios stay fair."""
    async with AsyncExitStack() as stack:
        arms = [
            await (
                langgraph_arm(stack, row, tmp)
                if row.durability
                else tobe_arm(stack, row, platforms[row])
            )
            for row in rows
        ]
        window = args.seconds / args.rounds
        for round_ in range(args.rounds):
            for arm in arms:
                # The first window warms its system up; later ones only let the previous
                # row's last turns drain.
                warmup = args.warmup if round_ == 0 else min(args.warmup, DRAIN)
                arm.add(*await drive(arm.turn, args.conversations, warmup, window, arm.probe))
        return [arm.result(args.seconds) for arm in arms]


# -- report ----------------------------------------------------------------------------------


def print_table(results: list[Result], conversations: int) -> None:
    baseline = {r.synchronous: r for r in results if r.system == "LangGraph"}
    for result in results:
        if result.system == "ToBe" and result.synchronous in baseline:
            result.ratio = result.rate / baseline[result.synchronous].rate
    print(f"\n{conversations} conversations at once, one tool call per turn")
    header = (
        f"{'system':<30} {'sync':<6} {'turns/s':>8} {'p50 ms':>8} {'p99 ms':>8} "
        f"{'ratio':>6} {'cpu ms/turn':>12} {'units/turn':>10} {'commits/turn':>13} "
        f"{'reads/turn':>10}"
    )
    print(header)
    print("-" * len(header))
    for r in results:
        ratio = f"{r.ratio:.2f}" if r.ratio is not None else ""
        cpu = r.cpu_per_turn(r.main_process) * 1000
        units = f"{r.per_turn(r.after.units - r.before.units):.1f}" if r.counts_units else ""
        reads = f"{r.per_turn(r.after.reads - r.before.reads):.1f}" if r.counts_units else ""
        commits = r.per_turn(r.after.commits - r.before.commits)
        print(
            f"{r.system:<30} {r.synchronous:<6} {r.rate:8.1f} {r.percentile(50) * 1000:8.1f} "
            f"{r.percentile(99) * 1000:8.1f} {ratio:>6} {cpu:12.2f} {units:>10} "
            f"{commits:13.1f} {reads:>10}"
        )
    print(
        "\nratio: ToBe turns/s / LangGraph turns/s (same synchronous, LangGraph's default "
        "durability)"
    )
    print("cpu ms/turn: ToBe = the Mind process; LangGraph = this process (load generator too)")
    for r in results:
        others = [name for name in r.after.cpu if name != r.main_process]
        if others:
            spent = ", ".join(f"{name} {r.cpu_per_turn(name) * 1000:.2f}" for name in others)
            print(f"  {r.system} {r.synchronous}: other services, cpu ms/turn: {spent}")
    print(
        "units/turn: units of work the Mind's store committed; commits/turn: the commits "
        "that held them (group commit; LangGraph: the saver's commits); reads/turn: the "
        "Mind's reads of the store"
    )


DEFAULT_CONFIGURATION = "ToBe default configuration"
# The targets: ToBe through the Face with FULL against LangGraph with FULL; ToBe's default
# configuration against LangGraph's plain loop; p99 against p50 on every ToBe row.
FACE_RATIO = 2.5
DEFAULT_RATIO = 1.5
TAIL_RATIO = 2.0
TAIL_CONVERSATIONS = 20


def print_targets(results: list[Result], conversations: int) -> None:
    """Each target with its figure and whether it is met."""
    by_system = {(r.system, r.synchronous): r for r in results}
    langgraph = by_system[("LangGraph", "FULL")]
    rows: list[tuple[str, float, str, bool]] = []
    face = by_system[("ToBe", "FULL")].rate / langgraph.rate
    rows.append(
        (
            "through the Face, FULL on both: ToBe / LangGraph",
            face,
            f">= {FACE_RATIO}",
            face >= FACE_RATIO,
        )
    )
    default = by_system[(DEFAULT_CONFIGURATION, "NORMAL")].rate / langgraph.rate
    rows.append(
        (
            "default configuration / LangGraph's plain loop",
            default,
            f">= {DEFAULT_RATIO}",
            default >= DEFAULT_RATIO,
        )
    )
    for r in results:
        if r.system.startswith("ToBe"):
            tail = r.percentile(99) / r.percentile(50)
            rows.append(
                (
                    f"p99 / p50, {r.system} {r.synchronous}",
                    tail,
                    f"<= {TAIL_RATIO}",
                    tail <= TAIL_RATIO and conversations == TAIL_CONVERSATIONS,
                )
            )
    print(
        f"\ntargets ({conversations} conversations; the p99 target counts at {TAIL_CONVERSATIONS})"
    )
    width = max(len(name) for name, *_ in rows)
    for name, figure, wanted, met in rows:
        print(f"  {name:<{width}} {figure:6.2f}  {wanted:<7} {'met' if met else 'NOT MET'}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=20.0, help="measured time per system")
    parser.add_argument("--warmup", type=float, default=3.0, help="unmeasured time first")
    parser.add_argument("--conversations", type=int, default=20)
    parser.add_argument(
        "--rounds",
        type=int,
        default=4,
        help="windows per system, taken in turn (the measured time is split among them)",
    )
    parser.add_argument("--synchronous", choices=["normal", "full", "both"], default="both")
    parser.add_argument(
        "--decision-layer",
        action="store_true",
        help="one more ToBe row with the entry decision layer on (an extractor call per turn)",
    )
    parser.add_argument(
        "--targets",
        action="store_true",
        help="run the rows the targets name (ToBe FULL, ToBe's default configuration, "
        "LangGraph FULL) and print each target as met or not",
    )
    args = parser.parse_args()
    try:
        import langgraph.prebuilt  # noqa: F401
        from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver  # noqa: F401
    except ImportError:
        sys.exit("LangGraph is missing: pip install -e '.[bench]'")
    if args.targets:
        rows = [
            Row("ToBe", "full"),
            Row(DEFAULT_CONFIGURATION, "normal", decisions=True),
            Row("LangGraph", "full", durability="async"),
        ]
    else:
        levels = ["normal", "full"] if args.synchronous == "both" else [args.synchronous]
        rows = [Row("ToBe", level) for level in levels]
        if args.decision_layer:
            rows.append(Row("ToBe + decision layer", levels[-1], decisions=True))
        rows += [Row("LangGraph", level, durability="async") for level in levels]
        if "full" in levels:
            rows.append(Row("LangGraph durability=sync", "full", durability="sync"))
    with tempfile.TemporaryDirectory(prefix="bench-vs-langgraph-") as name, ExitStack() as stack:
        tmp = Path(name)
        platforms = tobe_platforms(stack, rows, args.conversations, tmp)
        results = asyncio.run(measure(rows, platforms, args, tmp))
    print_table(results, args.conversations)
    if args.targets:
        print_targets(results, args.conversations)


if __name__ == "__main__":
    main()
