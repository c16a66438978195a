"""A schedule's due times fire exactly once, on the conversation's owner, with several Minds on
one PostgreSQL database: real Mind processes, a real server, the Scripted model with the decision
layer on, and time read from one file the test moves, which every Mind reads.

Every Mind runs the scheduler; a Mind claims only the due times of the conversations it serves
(mind/scheduler/service.py), and a proactive run can only happen where the conversation's actor
holds its lease. Each Mind's script makes the proactive run send a reminder naming that Mind, so
what is posted says where each firing ran. The conversation is made through mind a and the action
asked through another Mind (forwarded to a): every due time fires once, on a, and a keeps the
lease at its first epoch. When a is killed with SIGKILL, the due times that come while its lease
runs out wait; mind b then takes the conversation over and fires each of them (the Minds catch
up: `[scheduler] catch_up`), and every later one, once. A due time a claimed but had not yet
delivered when it was killed is delivered by mind b, which takes the conversation over for it
even though nothing else is due.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from helpers.clock_file import set_clock
from helpers.eventually import eventually
from helpers.mind_gateway import Gateway
from helpers.mind_process import MindProcess
from helpers.shared_database import SharedDatabase, shared_database
from helpers.store_backend import rows

from mind.scheduler import records
from mind.store.database import Database

pytestmark = pytest.mark.e2e
LEASE_SECONDS = "2"
KEY = "p_standup"
T0 = datetime(2026, 12, 3, 9, 0, tzinfo=UTC)
TEN = datetime(2026, 12, 3, 10, 0, tzinfo=UTC)
HOURLY = {"kind": "interval", "every_seconds": 3600, "start_at": TEN.isoformat()}
ASKED = "remind me of the stand-up"


def reminder(node_id: str) -> str:
    """What a proactive run on `node_id` sends."""
    return f"Stand-up in five minutes (sent by {node_id})."


def _rule(stage: str, match: str, answer: dict[str, Any]) -> dict[str, Any]:
    about = {"extract": "The owner's input:\n", "evaluate": "(?m)^goal: ", "plan": "(?m)^title: "}
    return {"stage": stage, "match": about[stage] + match, "answers": [answer]}


def script(node_id: str) -> dict[str, Any]:
    """The decision layer turns ASKED into an hourly action; its proactive run names `node_id`."""
    goal, title = "Remind of the stand-up", "Stand-up"
    planned = {
        "verdict": "planned",
        "reason": "the owner asked for it",
        "title": title,
        "actions": ["send_message"],
        "trigger": HOURLY,
    }
    steps = {"steps": [{"order": 1, "action": "send_message", "purpose": "remind", "after": []}]}
    extracted = {"tendencies": [{"goal": goal, "evidence": "it"}], "pending": []}
    return {
        "decisions": [
            _rule("extract", ASKED, extracted),
            _rule("evaluate", goal, planned),
            _rule("plan", title, steps),
        ],
        "runs": [
            {"match": f"^{ASKED}", "steps": [{"text": "I will."}]},
            {
                "match": f"Scheduled action '{title}'",
                "steps": [
                    {
                        "tool_calls": [
                            {"name": "send_message", "arguments": {"text": reminder(node_id)}}
                        ]
                    }
                ],
            },
        ],
    }


def due(hour: int) -> datetime:
    return TEN + timedelta(hours=hour)


def occasion(hour: int) -> str:
    return f"time:{due(hour).isoformat()}"


@dataclass
class Cluster:
    database: SharedDatabase
    clock: Path
    minds: dict[str, MindProcess]

    def gateway(self, node_id: str) -> Gateway:
        return Gateway.connect(self.minds[node_id])

    def query(self, sql: str, *args: object) -> list[tuple[Any, ...]]:
        return rows(self.database.url, sql, *args)

    def lease(self) -> tuple[str, int]:
        [(node_id, epoch)] = self.query(
            "SELECT node_id, epoch FROM conversation_leases WHERE conversation_key = ?", KEY
        )
        return str(node_id), int(epoch)

    def firings(self) -> list[tuple[int, str, str, str]]:
        """(id, occasion, outcome, run id) of every firing, in claim order."""
        found = self.query("SELECT id, occasion, outcome, run_id FROM firings ORDER BY id")
        return [(int(i), str(o), str(out), str(run)) for i, o, out, run in found]

    def ended(self, hour: int) -> bool:
        """Whether the firing due at `hour` was claimed and has ended."""
        found = self.query("SELECT outcome FROM firings WHERE occasion = ?", occasion(hour))
        return bool(found) and all(outcome != "running" for (outcome,) in found)

    def fire(self, hour: int) -> None:
        """Move the clock just past due time `hour` and wait for its firing to end."""
        set_clock(self.clock, due(hour) + timedelta(seconds=1))
        self.wait_ended(hour)

    def wait_ended(self, hour: int) -> None:
        eventually(
            lambda: self.ended(hour),
            what=f"the firing due at {due(hour)} claimed and ended",
            context=self.logs,
        )

    def posts(self) -> list[tuple[int, str]]:
        """(firing id, text) of every message a schedule posted, in order."""
        found = self.query(
            "SELECT payload, text FROM messages WHERE conversation_key = ? ORDER BY id", KEY
        )
        payloads = [(json.loads(payload or "{}"), text) for payload, text in found]
        return [
            (int(payload["firing_id"]), str(text))
            for payload, text in payloads
            if str(payload.get("posted_by", "")).startswith("schedule:")
        ]

    def failures(self) -> list[str]:
        """What the Minds logged as failed (a turn of the scheduler, a delivery, a write)."""
        return [
            line
            for mind in self.minds.values()
            for line in mind.output
            if " ERROR " in line or line.startswith("Traceback")
        ]

    def logs(self) -> str:
        return "\n".join(
            line
            for node_id, mind in self.minds.items()
            for line in [f"{node_id}:", *mind.output[-30:]]
        )


@contextmanager
def running_cluster(tmp_path: Path, *node_ids: str) -> Iterator[Cluster]:
    """Minds `node_ids` on one fresh database, started together, all reading one clock file."""
    clock = tmp_path / "now"
    set_clock(clock, T0)
    with shared_database() as database:
        minds = {}
        for node_id in node_ids:
            path = tmp_path / f"{node_id}.json"
            path.write_text(json.dumps(script(node_id)), encoding="utf-8")
            minds[node_id] = database.mind(
                tmp_path / node_id,
                path,
                TOBE_MIND__NODE_ID=node_id,
                TOBE_MIND__LEASE_SECONDS=LEASE_SECONDS,
                TOBE_ACTIONS__ENABLED="true",
                TOBE_SCHEDULER__CLOCK_FILE=str(clock),
                TOBE_SCHEDULER__MAX_SLEEP="0.1",
                # Every due time a takeover finds missed fires, oldest first.
                TOBE_SCHEDULER__CATCH_UP="true",
            )
        starting = [threading.Thread(target=mind.start) for mind in minds.values()]
        try:
            for thread in starting:
                thread.start()
            for thread in starting:
                thread.join()
            cluster = Cluster(database, clock, minds)
            missing = [node_id for node_id, mind in minds.items() if not mind.address]
            assert not missing, f"not started: {missing}\n{cluster.logs()}"
            yield cluster
        finally:
            for thread in starting:
                if thread.is_alive():
                    thread.join()
            for mind in minds.values():
                mind.kill()


def ask_for_the_reminder(cluster: Cluster, made_on: str, asked_on: str) -> str:
    """Make KEY through `made_on` (which takes its lease), ask for the hourly reminder through
    `asked_on`; the action's id."""
    maker, asker = cluster.gateway(made_on), cluster.gateway(asked_on)
    try:
        maker.create(KEY)
        asker.send(KEY, ASKED, "ask")
        (action,) = eventually(
            lambda: asker.snapshot(KEY).scheduled_actions,
            what="the action asked",
            context=cluster.logs,
        )
        return str(action.id)
    finally:
        maker.close()
        asker.close()


def check_fired_once_each(cluster: Cluster, hours: range, sent_by: list[str]) -> None:
    """Due times `hours` fired once each, in order, every one sent; each firing posted its
    reminder once, from the Mind `sent_by` names for it, and ran one proactive run."""
    firings = cluster.firings()
    assert [found for _, found, _, _ in firings] == [occasion(hour) for hour in hours]
    assert {outcome for _, _, outcome, _ in firings} == {"sent"}
    assert cluster.posts() == [
        (firing_id, reminder(node_id))
        for (firing_id, _, _, _), node_id in zip(firings, sent_by, strict=True)
    ]
    proactive = cluster.query("SELECT id, state FROM runs WHERE trigger = 'schedule'")
    assert sorted(run for _, _, _, run in firings) == sorted(run for run, _ in proactive)
    assert {state for _, state in proactive} == {"completed"}
    # No Mind tried what it may not do: claim a conversation it does not serve, or deliver
    # there (the fence and the lease would refuse it, and it would log the failure).
    assert cluster.failures() == []


def test_each_due_time_fires_once_on_the_owner_while_three_minds_run_the_scheduler(
    tmp_path: Path,
) -> None:
    with running_cluster(tmp_path, "mind-a", "mind-b", "mind-c") as cluster:
        schedule_id = ask_for_the_reminder(cluster, made_on="mind-a", asked_on="mind-b")
        assert cluster.lease() == ("mind-a", 1)
        # Stored by mind a, the owner, whom mind b forwarded the request to.
        [(stored_for,)] = cluster.query("SELECT conversation_key FROM scheduled_actions")
        assert stored_for == KEY

        hours = range(6)
        for hour in hours:
            cluster.fire(hour)
            # The owner never changed: mind b or c would have had to take the lease (a new
            # epoch) to run anything of the conversation.
            assert cluster.lease() == ("mind-a", 1)

        check_fired_once_each(cluster, hours, ["mind-a"] * len(hours))
        gateway = cluster.gateway("mind-c")
        try:
            posted = [
                message.text
                for message in gateway.history(KEY).messages
                if message.posted_by == f"schedule:{schedule_id}"
            ]
        finally:
            gateway.close()
        assert posted == [reminder("mind-a")] * len(hours)


def test_when_the_owner_is_killed_the_next_mind_fires_each_due_time_once(
    tmp_path: Path,
) -> None:
    with running_cluster(tmp_path, "mind-a", "mind-b") as cluster:
        ask_for_the_reminder(cluster, made_on="mind-a", asked_on="mind-b")
        for hour in (0, 1):
            cluster.fire(hour)
        assert cluster.lease() == ("mind-a", 1)

        cluster.minds["mind-a"].kill()
        # Two due times come while mind a's lease runs out: nobody may claim them yet.
        set_clock(cluster.clock, due(3) + timedelta(seconds=1))
        [(holder, running_out)] = cluster.query(
            "SELECT node_id, expires_at > now() FROM conversation_leases "
            "WHERE conversation_key = ?",
            KEY,
        )
        assert (holder, running_out) == ("mind-a", True)
        # Once it has run out, mind b takes the conversation over and fires both, oldest first.
        cluster.wait_ended(2)
        cluster.wait_ended(3)
        assert cluster.lease() == ("mind-b", 2)

        for hour in (4, 5, 6):
            cluster.fire(hour)
        assert cluster.lease() == ("mind-b", 2)
        check_fired_once_each(cluster, range(7), ["mind-a"] * 2 + ["mind-b"] * 5)


def claim_without_delivering(url: str, hour: int) -> None:
    """Claim due time `hour` of KEY in the unit the owner's scheduler commits
    (`records.claim_due`), and deliver nothing: what an owner killed between its claim and
    the delivery of its input leaves."""

    async def claim() -> None:
        database = Database.open(url)
        try:
            now = due(hour) + timedelta(seconds=1)
            claimed = await database.write(lambda tx: records.claim_due(tx, now, [KEY]))
            assert [firing.due_at for firing in claimed] == [due(hour)]
        finally:
            await database.close()

    asyncio.run(claim())


def test_a_due_time_the_killed_owner_claimed_but_never_delivered_is_fired_by_the_next_mind(
    tmp_path: Path,
) -> None:
    with running_cluster(tmp_path, "mind-a", "mind-b") as cluster:
        ask_for_the_reminder(cluster, made_on="mind-a", asked_on="mind-b")
        cluster.fire(0)
        cluster.minds["mind-a"].kill()
        claim_without_delivering(cluster.database.url, 1)
        set_clock(cluster.clock, due(1) + timedelta(seconds=1))

        # Nothing else is due: mind b takes the conversation over for the firing left behind.
        cluster.wait_ended(1)
        assert cluster.lease() == ("mind-b", 2)
        cluster.fire(2)
        check_fired_once_each(cluster, range(3), ["mind-a", "mind-b", "mind-b"])
