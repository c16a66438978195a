"""Initiative through a real Mind (Scripted model, the decision layer on, time read from a file
the test moves): a reminder fires once at its time and posts itself; an interval action fires
and posts each interval, once, across a kill -9 and a downtime; a proactive run can only read,
ends in send or skip and leaves nothing for the next run; a person's message aborts it and is
answered first."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from helpers.clock_file import set_clock
from helpers.eventually import eventually
from helpers.mind_gateway import Gateway, ended_runs, payloads
from helpers.mind_process import MindProcess, running_mind
from helpers.store_backend import rows

from mind.agent.proactive import ABORTED_BY_MESSAGE
from tobe.v1 import common_pb2, events_pb2

pytestmark = pytest.mark.e2e

T0 = datetime(2026, 12, 3, 9, 0, tzinfo=UTC)
TEN = datetime(2026, 12, 3, 10, 0, tzinfo=UTC)
WRITES = ["memory_write", "memory_delete"]
MEMORY_NOTE = "shown for this proactive run only"


def _tendency(goal: str, evidence: str) -> dict[str, Any]:
    return {"tendencies": [{"goal": goal, "evidence": evidence}], "pending": []}


def _planned(title: str, trigger: dict[str, Any], actions: list[str]) -> dict[str, Any]:
    return {
        "verdict": "planned",
        "reason": "the owner asked for it later",
        "title": title,
        "actions": actions,
        "trigger": trigger,
    }


def _steps(*actions: str) -> dict[str, Any]:
    return {
        "steps": [
            {"order": n, "action": action, "purpose": "as asked", "after": [n - 1] if n > 1 else []}
            for n, action in enumerate(actions, start=1)
        ]
    }


HOURLY = {"kind": "interval", "every_seconds": 3600, "start_at": TEN.isoformat()}


# Where each stage's input names what it is about (the rest repeats the conversation).
# Each stage's own input, at the start of a line: the stages' context also names goals and
# titles (of the scheduled and waiting actions), which must not answer for the input.
_ABOUT = {"extract": "The owner's input:\n", "evaluate": "(?m)^goal: ", "plan": "(?m)^title: "}


def _rule(stage: str, match: str, answer: dict[str, Any]) -> dict[str, Any]:
    return {"stage": stage, "match": _ABOUT[stage] + match, "answers": [answer]}


def _fires(title: str, *steps: dict[str, Any]) -> dict[str, Any]:
    return {"match": f"Scheduled action '{title}'", "steps": list(steps)}


def _call(name: str, **arguments: Any) -> dict[str, Any]:
    return {"name": name, "arguments": arguments}


SCRIPT = {
    "decisions": [
        _rule("extract", "remind me to call mum", _tendency("Remind the owner to call mum", "it")),
        _rule(
            "evaluate",
            "Remind the owner to call mum",
            _planned("Call mum", {"kind": "at", "at": TEN.isoformat()}, ["send_message"]),
        ),
        _rule("plan", "Call mum", _steps("send_message")),
        _rule("extract", "check the build every hour", _tendency("Check the build hourly", "it")),
        _rule(
            "evaluate", "Check the build hourly", _planned("Build watch", HOURLY, ["send_message"])
        ),
        _rule("plan", "Build watch", _steps("send_message")),
        _rule("extract", "remember the disk threshold", _tendency("Keep the threshold", "it")),
        _rule(
            "evaluate",
            "Keep the threshold",
            {
                "verdict": "immediate",
                "reason": "the owner asked",
                "title": "Keep threshold",
                "actions": ["memory_write"],
            },
        ),
        _rule("plan", "Keep threshold", _steps("memory_write")),
        _rule("extract", "watch my disk every hour", _tendency("Watch the disk hourly", "it")),
        _rule(
            "evaluate",
            "Watch the disk",
            _planned("Disk watch", HOURLY, ["current_time", "send_message"]),
        ),
        _rule("plan", "Disk watch", _steps("current_time", "send_message")),
        _rule("extract", "stay quiet every hour", _tendency("Stay quiet hourly", "it")),
        _rule("evaluate", "Stay quiet", _planned("Quiet watch", HOURLY, ["send_message"])),
        _rule("plan", "Quiet watch", _steps("send_message")),
        _rule("extract", "ping me every hour", _tendency("Ping the owner hourly", "it")),
        _rule("evaluate", "Ping the owner", _planned("Slow ping", HOURLY, ["send_message"])),
        _rule("plan", "Slow ping", _steps("send_message")),
    ],
    "runs": [
        {"match": "^remind me to call mum", "steps": [{"text": "I will remind you at ten."}]},
        {"match": "^check the build every hour", "steps": [{"text": "Watching the build."}]},
        {
            "match": "^remember the disk threshold",
            "steps": [
                {"tool_calls": [_call("memory_write", key="disk-threshold", text="90%")]},
                {"text": "Kept."},
            ],
        },
        {"match": "^watch my disk every hour", "steps": [{"text": "Watching the disk."}]},
        {"match": "^stay quiet every hour", "steps": [{"text": "I will stay quiet."}]},
        {"match": "^ping me every hour", "steps": [{"text": "I will ping you."}]},
        {
            "match": "^what did you check",
            "steps": [
                {
                    "expect": {
                        "request_contains": ["Disk at 42%."],
                        "request_excludes": [
                            MEMORY_NOTE,
                            "- disk-threshold: 90%",
                            "Scheduled action 'Disk watch'",
                            "Scheduled action 'Quiet watch'",
                            "nothing new on the disk",
                        ],
                    },
                    "text": "I told you the disk was at 42%.",
                }
            ],
        },
        {"match": "^hello there", "steps": [{"text": "Hello! You come first."}]},
        _fires(
            "Call mum",
            {
                "expect": {"tools_include": ["send_message", "skip"], "tools_exclude": WRITES},
                "tool_calls": [_call("send_message", text="Time to call mum.")],
            },
        ),
        _fires("Build watch", {"tool_calls": [_call("send_message", text="Build checked.")]}),
        _fires(
            "Disk watch",
            {
                "expect": {
                    "tools_include": ["send_message", "skip", "current_time", "memory_read"],
                    "tools_exclude": WRITES,
                    "request_contains": [MEMORY_NOTE, "- disk-threshold: 90%"],
                },
                "tool_calls": [_call("memory_write", key="disk-threshold", text="10%")],
            },
            {
                "expect": {"last_role": "tool", "last_is_error": True},
                "tool_calls": [_call("current_time")],
            },
            {
                "expect": {"last_role": "tool", "last_is_error": False},
                "tool_calls": [_call("send_message", text="Disk at 42%.")],
            },
        ),
        _fires("Quiet watch", {"tool_calls": [_call("skip", reason="nothing new on the disk")]}),
        _fires(
            "Slow ping",
            {"delay": 60, "tool_calls": [_call("send_message", text="ping, much later")]},
        ),
    ],
}


@dataclass
class Clocked:
    mind: MindProcess
    clock: Path
    gateway: Gateway

    def set(self, moment: datetime) -> None:
        set_clock(self.clock, moment)

    def chat(self, key: str, text: str) -> list[events_pb2.Event]:
        after = self.gateway.head()
        sent = self.gateway.send(key, text, f"{key}-{text}")
        events = self.gateway.wait_runs_ended(after, {sent.run_id})
        (ended,) = [r for r in payloads(events, "run_changed") if r.id == sent.run_id][-1:]
        assert ended.state == common_pb2.RUN_STATE_COMPLETED, ended.reason
        return events

    def scheduled(self, key: str) -> common_pb2.ScheduledAction:
        (action,) = self.gateway.snapshot(key).scheduled_actions
        return action

    def rows(self, sql: str, *args: object) -> list[tuple[Any, ...]]:
        return rows(self.mind.url, sql, *args)


@pytest.fixture
def clocked(tmp_path: Path) -> Iterator[Clocked]:
    script, clock = tmp_path / "script.json", tmp_path / "now"
    script.write_text(json.dumps(SCRIPT), encoding="utf-8")
    set_clock(clock, T0)
    with running_mind(
        tmp_path,
        script=script,
        TOBE_ACTIONS__ENABLED="true",
        TOBE_SCHEDULER__CLOCK_FILE=str(clock),
        TOBE_SCHEDULER__MAX_SLEEP="0.2",
    ) as mind:
        gateway = Gateway.connect(mind)
        try:
            yield Clocked(mind, clock, gateway)
        finally:
            gateway.close()


def _posted(events: list[events_pb2.Event], schedule_id: str) -> list[str]:
    return [
        m.text
        for m in payloads(events, "message_appended")
        if m.posted_by == f"schedule:{schedule_id}"
    ]


def _last_outcome(events: list[events_pb2.Event], schedule_id: str) -> int:
    changes = [s for s in payloads(events, "schedule_changed") if s.id == schedule_id]
    ended = [s for s in changes if s.last_firing.outcome != common_pb2.FIRING_OUTCOME_RUNNING]
    return ended[-1].last_firing.outcome if ended else common_pb2.FIRING_OUTCOME_UNSPECIFIED


def _firing_ended(schedule_id: str, count: int):
    """Until the schedule's `count`th firing ended (its event names the outcome)."""

    def done(events: list[events_pb2.Event]) -> bool:
        return any(
            s.id == schedule_id
            and s.firing_count == count
            and s.last_firing.outcome != common_pb2.FIRING_OUTCOME_RUNNING
            for s in payloads(events, "schedule_changed")
        )

    return done


def test_remind_me_at_t_fires_once_at_t_and_posts_the_reminder(clocked: Clocked):
    key = clocked.gateway.create("p_remind")
    clocked.chat(key, "remind me to call mum at ten")
    action = clocked.scheduled(key)
    assert action.title == "Call mum" and action.trigger.WhichOneof("kind") == "at"
    assert action.next_fire_at.ToDatetime(tzinfo=UTC) == TEN

    after = clocked.gateway.head()
    clocked.set(TEN - timedelta(seconds=1))
    time.sleep(1.0)  # the loop looks several times and leaves it alone
    assert clocked.gateway.replay(after)[0] == []

    clocked.set(TEN + timedelta(seconds=1))
    fired = clocked.gateway.wait_for(after, _firing_ended(action.id, 1))
    assert _posted(fired, action.id) == ["Time to call mum."]
    assert _last_outcome(fired, action.id) == common_pb2.FIRING_OUTCOME_SENT

    later = clocked.gateway.head()
    clocked.set(TEN + timedelta(hours=5))
    time.sleep(1.0)
    assert payloads(clocked.gateway.replay(later)[0], "schedule_changed") == []
    assert clocked.gateway.snapshot(key).scheduled_actions == []  # finished: never again
    assert clocked.rows("SELECT count(*) FROM firings") == [(1,)]


def test_an_interval_action_fires_each_interval_once_across_a_kill_9_and_a_downtime(
    clocked: Clocked,
):
    key = clocked.gateway.create("p_hourly")
    clocked.chat(key, "check the build every hour")
    schedule = clocked.scheduled(key).id

    start = clocked.gateway.head()
    clocked.set(TEN + timedelta(seconds=5))
    clocked.gateway.wait_for(start, _firing_ended(schedule, 1))

    # The second firing: killed as soon as it is claimed, wherever its run is.
    claimed = clocked.gateway.head()
    clocked.set(TEN + timedelta(hours=1, seconds=5))
    clocked.gateway.wait_for(
        claimed,
        lambda events: any(
            s.id == schedule and s.firing_count == 2 for s in payloads(events, "schedule_changed")
        ),
    )
    clocked.mind.kill()
    clocked.mind.start()
    clocked.gateway.close()
    clocked.gateway = Gateway.connect(clocked.mind)
    clocked.gateway.wait_for(claimed, _firing_ended(schedule, 2))

    # Down for four due times: one firing for all of them, then on the hour again.
    clocked.mind.terminate()
    clocked.set(TEN + timedelta(hours=5, minutes=30))
    clocked.mind.start()
    clocked.gateway.close()
    clocked.gateway = Gateway.connect(clocked.mind)
    clocked.gateway.wait_for(claimed, _firing_ended(schedule, 3))
    action = clocked.scheduled(key)
    assert action.firing_count == 3
    assert action.next_fire_at.ToDatetime(tzinfo=UTC) == TEN + timedelta(hours=6)

    firings = clocked.rows("SELECT id, occasion, run_id FROM firings ORDER BY id")
    assert [occasion for _, occasion, _ in firings] == [
        f"time:{(TEN + timedelta(hours=h)).isoformat()}" for h in (0, 1, 5)
    ]
    for firing_id, _, run_id in firings:
        [inputs] = clocked.rows(
            "SELECT count(*) FROM inputs WHERE idempotency_key = ?", f"firing:{firing_id}"
        )
        assert inputs == (1,), f"firing {firing_id} was queued {inputs[0]} times"
        assert run_id, f"firing {firing_id} never started its run"
    runs = clocked.rows(
        "SELECT state, count(*) FROM runs WHERE trigger = 'schedule' GROUP BY state"
    )
    # The killed firing's run, if it had started, was interrupted and ran again.
    assert dict(runs).get("completed") == 3 and set(dict(runs)) <= {
        "completed",
        "interrupted",
    }, runs
    outcomes = clocked.rows("SELECT id, outcome, detail FROM firings")
    [(posts,)] = clocked.rows(
        "SELECT count(*) FROM messages WHERE text = 'Build checked.' AND run_id IS NULL"
    )
    assert [outcome for _, outcome, _ in outcomes] == ["sent"] * 3, outcomes
    assert posts == 3, "a firing posted twice, or not at all"


def test_a_proactive_run_only_reads_ends_in_send_or_skip_and_leaves_no_trace(clocked: Clocked):
    key = clocked.gateway.create("p_check")
    clocked.chat(key, "remember the disk threshold")
    clocked.chat(key, "watch my disk every hour")
    clocked.chat(key, "stay quiet every hour")
    by_title = {a.title: a.id for a in clocked.gateway.snapshot(key).scheduled_actions}

    after = clocked.gateway.head()
    clocked.set(TEN + timedelta(seconds=5))
    fired = clocked.gateway.wait_for(
        after,
        lambda events: all(_firing_ended(schedule, 1)(events) for schedule in by_title.values()),
    )
    assert _posted(fired, by_title["Disk watch"]) == ["Disk at 42%."]
    assert _last_outcome(fired, by_title["Disk watch"]) == common_pb2.FIRING_OUTCOME_SENT
    assert _posted(fired, by_title["Quiet watch"]) == []
    assert _last_outcome(fired, by_title["Quiet watch"]) == common_pb2.FIRING_OUTCOME_SKIPPED
    # The write the proactive run tried was not offered, so it never ran.
    tried = [
        t
        for t in payloads(fired, "tool_changed")
        if t.tool == "memory_write" and t.status != common_pb2.TOOL_STATUS_RUNNING
    ]
    assert {t.status for t in tried} == {common_pb2.TOOL_STATUS_FAILED}
    memory = [e for e in payloads(fired, "memory_changed")]
    assert memory == []

    # The scripted model checks that the next run's request has none of it.
    clocked.chat(key, "what did you check?")


def test_a_message_from_the_user_aborts_a_proactive_run_and_is_answered_first(
    clocked: Clocked,
):
    key = clocked.gateway.create("p_abort")
    clocked.chat(key, "ping me every hour")
    schedule = clocked.scheduled(key).id

    after = clocked.gateway.head()
    clocked.set(TEN + timedelta(seconds=5))
    started = clocked.gateway.wait_for(
        after,
        lambda events: any(
            r.trigger == "schedule" and r.state == common_pb2.RUN_STATE_RUNNING
            for r in payloads(events, "run_changed")
        ),
    )
    (proactive,) = {r.id for r in payloads(started, "run_changed") if r.trigger == "schedule"}
    sent = clocked.gateway.send(key, "hello there", "hello-there")
    assert sent.run_id == ""  # queued behind the proactive run, which it ends
    events = clocked.gateway.wait_for(
        after, lambda events: _firing_ended(schedule, 1)(events) and len(ended_runs(events)) >= 2
    )
    runs = payloads(events, "run_changed")
    ended = [r for r in runs if r.id == proactive and r.state != common_pb2.RUN_STATE_RUNNING]
    assert [(r.state, r.reason) for r in ended] == [
        (common_pb2.RUN_STATE_CANCELLED, ABORTED_BY_MESSAGE)
    ]
    assert _last_outcome(events, schedule) == common_pb2.FIRING_OUTCOME_ABORTED
    # The next run to start is the one answering the person.
    starts = [r for r in runs if r.state == common_pb2.RUN_STATE_RUNNING]
    assert starts[0].id == proactive and starts[1].trigger == "followup"
    replies = [m for m in payloads(events, "message_appended") if m.run_id == starts[1].id]
    answered = eventually(
        lambda: [
            m.text
            for m in clocked.gateway.snapshot(key).messages
            if m.role == common_pb2.MESSAGE_ROLE_ASSISTANT and m.run_id == starts[1].id
        ],
        what="the reply to the person",
    )
    assert answered == ["Hello! You come first."], replies
    assert _posted(clocked.gateway.replay(after)[0], schedule) == []
