"""Each channel kept running on its own: one that fails is logged in one line (no secret) and
started again with a new transport after a growing delay, while the others keep running."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator

import pytest

from face.channels.keeper import STABLE_RUN, Channel, ChannelKeeper
from face.channels.transport import Image, Inbound, Transport, TransportError

PASSWORD = "s3cret-hunter2"


class StubTransport:
    """A transport whose first `failures` runs fail, as a homeserver that is down would."""

    edits = False

    def __init__(self, name: str, made: list[StubTransport]) -> None:
        self.name = name
        self.closed = False
        made.append(self)

    async def start(self) -> None: ...

    async def close(self) -> None:
        self.closed = True

    async def _nothing(self) -> AsyncIterator[Inbound]:
        for item in ():
            yield item

    def inbound(self) -> AsyncIterator[Inbound]:
        return self._nothing()

    async def handled(self, item: Inbound) -> None: ...

    async def send(
        self, thread: str, text: str, *, key: str, images: tuple[Image, ...] = ()
    ) -> str:
        return key

    async def edit(self, thread: str, message_id: str, text: str) -> None: ...

    async def typing(self, thread: str, active: bool) -> None: ...


class Recorder:
    """The run function and the clock the keeper is given: `failing` runs fail twice (the
    error naming the password, as a careless library might), then run until cancelled."""

    def __init__(self, failing: str, failures: int = 2) -> None:
        self.failing = failing
        self.failures = failures
        self.runs: dict[str, int] = {}
        self.delays: list[float] = []
        self.now = 0.0
        self.running: dict[str, asyncio.Event] = {}

    def running_event(self, name: str) -> asyncio.Event:
        return self.running.setdefault(name, asyncio.Event())

    async def run(self, name: str, transport: Transport) -> None:
        self.runs[name] = self.runs.get(name, 0) + 1
        if name == self.failing and self.runs[name] <= self.failures:
            raise TransportError(f"login refused for password={PASSWORD}\n({PASSWORD})")
        self.running_event(name).set()
        await asyncio.Event().wait()

    async def sleep(self, delay: float) -> None:
        self.delays.append(delay)
        self.now += delay
        await asyncio.sleep(0)  # the delay passes at once, but the others get their turn

    def clock(self) -> float:
        return self.now


async def test_a_failing_channel_restarts_with_growing_delays_and_the_other_keeps_running(
    caplog: pytest.LogCaptureFixture,
) -> None:
    made: list[StubTransport] = []
    recorder = Recorder(failing="matrix")
    channels = [
        Channel("matrix", lambda: StubTransport("matrix", made), (PASSWORD,)),
        Channel("email", lambda: StubTransport("email", made)),
    ]
    keeper = ChannelKeeper(channels, recorder.run, sleep=recorder.sleep, clock=recorder.clock)
    assert keeper.status() == "NOT_SERVING (starting matrix, email)"
    with caplog.at_level(logging.INFO, logger="face.channels"):
        task = asyncio.create_task(keeper.run())
        await recorder.running_event("matrix").wait()
        await recorder.running_event("email").wait()
        assert keeper.status() == "SERVING"
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    assert recorder.runs == {"matrix": 3, "email": 1}
    # 1 s, then 2 s (less up to 10 % jitter): a new transport for each run, each one closed.
    assert len(recorder.delays) == 2
    assert 0.9 <= recorder.delays[0] <= 1.0 and 1.8 <= recorder.delays[1] <= 2.0
    assert [t.name for t in made].count("matrix") == 3
    assert all(transport.closed for transport in made)
    lines = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert len(lines) == 2
    assert all(line.startswith("channel matrix stopped: login refused") for line in lines)
    assert all("\n" not in line for line in lines)
    assert PASSWORD not in caplog.text


async def test_a_channel_that_ran_a_while_before_failing_waits_the_first_delay_again() -> None:
    runs = 0
    delays: list[float] = []
    now = 0.0
    done = asyncio.Event()

    async def run(name: str, transport: Transport) -> None:
        nonlocal runs, now
        runs += 1
        if runs == 4:
            done.set()
            await asyncio.Event().wait()
        if runs == 3:
            now += STABLE_RUN  # the third run lasted a minute before its network went away
        raise TransportError("the homeserver went away")

    async def sleep(delay: float) -> None:
        delays.append(delay)

    made: list[StubTransport] = []
    keeper = ChannelKeeper(
        [Channel("matrix", lambda: StubTransport("matrix", made))],
        run,
        sleep=sleep,
        clock=lambda: now,
    )
    task = asyncio.create_task(keeper.run())
    await done.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert [round(delay) for delay in delays] == [1, 2, 1]


async def test_a_transport_that_cannot_be_made_is_a_failure_of_its_channel_alone(
    caplog: pytest.LogCaptureFixture,
) -> None:
    recorder = Recorder(failing="")
    made: list[StubTransport] = []

    def broken() -> Transport:
        raise ModuleNotFoundError("No module named 'face.channels.matrix'")

    keeper = ChannelKeeper(
        [Channel("matrix", broken), Channel("email", lambda: StubTransport("email", made))],
        recorder.run,
        sleep=recorder.sleep,
        clock=recorder.clock,
    )
    task = asyncio.create_task(keeper.run())
    await recorder.running_event("email").wait()
    while len(recorder.delays) < 3:
        await asyncio.sleep(0)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert keeper.status() == "SERVING"
    assert recorder.runs == {"email": 1}
    assert "channel matrix stopped: ModuleNotFoundError: No module named" in caplog.text
