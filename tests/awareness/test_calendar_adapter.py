"""The calendar adapter against a real Radicale server, inside a real Awareness process."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from awareness_harness import BUILTIN, AwarenessProcess, Client, add_adapter, next_batch
from helpers.eventually import eventually_async
from radicale_server import PASSWORD, USERNAME, Radicale, running_radicale

from tobe.v1 import awareness_pb2 as pb
from tobe.v1 import common_pb2

BERLIN = ZoneInfo("Europe/Berlin")


@pytest.fixture
def radicale() -> Iterator[Radicale]:
    with running_radicale() as server:
        yield server


@pytest.fixture
def remote(radicale: Radicale) -> Iterator[Any]:
    """The test's own caldav client: seeds events and checks what the server holds."""
    with radicale.client() as client:
        yield client


@pytest.fixture
def work(remote: Any) -> Any:
    return remote.get_principal().make_calendar(name="Work")


def _configure(awareness: AwarenessProcess, radicale: Radicale, **overrides: Any) -> None:
    directory = add_adapter(awareness.adapters_dir, BUILTIN / "calendar")
    config = json.loads((directory / "config.default.json").read_text())
    awareness.write_config(
        "calendar",
        {
            **config,
            "auto_start": True,
            "url": radicale.url,
            "username": USERNAME,
            "password": PASSWORD,
            "poll_interval": 1,
            **overrides,
        },
    )


@pytest.fixture
async def client(awareness_dirs: AwarenessProcess) -> AsyncIterator[Client]:
    c = Client(awareness_dirs.target)
    try:
        yield c
    finally:
        await c.close()


def _now() -> datetime:
    return datetime.now(UTC).replace(microsecond=0)


async def _info(client: Client) -> pb.AdapterInfo:
    [info] = [a for a in await client.adapters() if a.name == "calendar"]
    return info


async def _state(client: Client, state: str) -> pb.AdapterInfo:
    return await eventually_async(
        lambda: _info(client), until=lambda info: info.state == state, what=f"calendar {state}"
    )


@dataclass
class Seen:
    content: dict[str, Any]
    source_key: str
    source_title: str
    publish_seq: int


async def _next_observation(stream: Any) -> Seen:
    batch = await next_batch(stream)
    [observation] = batch.observations
    return Seen(
        json.loads(observation.content_json),
        observation.source_key,
        observation.source_title,
        batch.publish_seq,
    )


def _marker(calendar: Any, summary: str, start: datetime) -> None:
    calendar.add_event(summary=summary, dtstart=start, dtend=start + timedelta(minutes=1))


async def test_events_are_created_moved_and_deleted_on_the_server_through_the_actions(
    awareness_dirs: AwarenessProcess, radicale: Radicale, remote: Any, work: Any, client: Client
) -> None:
    remote.get_principal().make_calendar(name="Home")
    _configure(awareness_dirs, radicale, calendars=["Work"], time_zone="Europe/Berlin")
    awareness_dirs.start()
    calendar = await client.adapter_id("calendar")
    info = await _info(client)
    assert {a.name: a.effect for a in info.write_actions} == dict.fromkeys(
        ["create_event", "move_event", "delete_event"], common_pb2.EFFECT_CLASS_EXTERNAL_SIDE_EFFECT
    )
    assert PASSWORD not in str(info)
    listed = await client.observe(calendar, "calendars")
    assert listed["result"]["calendars"] == [{"name": "Work", "url": str(work.url)}]

    start = (_now() + timedelta(hours=2)).astimezone(BERLIN)
    created = await client.interact(
        calendar,
        "create_event",
        summary="Dentist",
        start=start.isoformat(),
        duration=45,
        location="Main St 1",
    )
    assert created["status"] == "success", created
    uid = created["result"]["uid"]
    stored = work.get_event_by_uid(uid).get_icalendar_component()
    assert (str(stored["summary"]), str(stored["location"])) == ("Dentist", "Main St 1")
    assert (stored.start, stored.end) == (start, start + timedelta(minutes=45))

    events = await client.observe(calendar, "events")
    assert events["result"]["events"] == [
        {
            "uid": uid,
            "calendar": "Work",
            "summary": "Dentist",
            "start": start.isoformat(),
            "end": (start + timedelta(minutes=45)).isoformat(),
            "all_day": False,
            "location": "Main St 1",
            "description": "",
        }
    ]

    later = start + timedelta(days=1, hours=3)
    moved = await client.interact(calendar, "move_event", uid=uid, start=later.isoformat())
    assert moved["status"] == "success", moved
    stored = work.get_event_by_uid(uid).get_icalendar_component()
    assert (stored.start, stored.end) == (later, later + timedelta(minutes=45))

    deleted = await client.interact(calendar, "delete_event", uid=uid)
    assert deleted["result"] == {"deleted": uid, "calendar": "Work"}
    assert work.get_events() == []

    unknown = await client.interact(calendar, "delete_event", uid=uid)
    assert unknown["status"] == "error"
    assert f"no event with uid '{uid}' in calendars 'Work'" in unknown["error"]
    unwatched = await client.interact(
        calendar, "create_event", calendar="Home", summary="x", start=start.isoformat(), duration=5
    )
    assert "no calendar named 'Home' (calendars: 'Work')" in unwatched["error"]


async def test_an_event_about_to_start_is_observed_once_across_a_restart_and_again_when_moved(
    awareness_dirs: AwarenessProcess, radicale: Radicale, work: Any, client: Client
) -> None:
    now = _now()
    standup = work.add_event(
        summary="Standup",
        dtstart=now + timedelta(minutes=10),
        dtend=now + timedelta(minutes=25),
        location="Room 4",
        description="Sprint review",
    )
    work.add_event(
        summary="Later", dtstart=now + timedelta(hours=2), dtend=now + timedelta(hours=3)
    )
    # A daily series begun yesterday: only today's occurrence is due.
    daily = work.add_event(
        summary="Daily",
        dtstart=now + timedelta(minutes=5) - timedelta(days=1),
        dtend=now + timedelta(minutes=6) - timedelta(days=1),
        rrule={"FREQ": "DAILY"},
    )
    _configure(awareness_dirs, radicale, time_zone="Europe/Berlin")
    awareness_dirs.start()
    stream = client.subscribe()

    first, second = await _next_observation(stream), await _next_observation(stream)
    assert (first.content["summary"], first.content["uid"]) == ("Daily", daily.id)
    assert first.content["start"] == (now + timedelta(minutes=5)).astimezone(BERLIN).isoformat()
    assert second.content == {
        "kind": "calendar_event",
        "uid": standup.id,
        "calendar": "Work",
        "summary": "Standup",
        "start": (now + timedelta(minutes=10)).astimezone(BERLIN).isoformat(),
        "end": (now + timedelta(minutes=25)).astimezone(BERLIN).isoformat(),
        "all_day": False,
        "location": "Room 4",
        "description": "Sprint review",
        "minutes_until_start": second.content["minutes_until_start"],
    }
    assert 0 < second.content["minutes_until_start"] <= 10
    assert (second.source_key, second.source_title) == (str(work.url), "Work")

    # Each marker starts after the events above: a repeat would be observed before it.
    _marker(work, "Marker 1", now + timedelta(minutes=13))
    marker = await _next_observation(stream)
    assert marker.content["summary"] == "Marker 1"
    stream.cancel()
    awareness_dirs.stop()
    awareness_dirs.start()
    stream = client.subscribe(after_seq=marker.publish_seq)
    _marker(work, "Marker 2", now + timedelta(minutes=14))
    assert (await _next_observation(stream)).content["summary"] == "Marker 2"

    calendar = await client.adapter_id("calendar")
    new_start = (now + timedelta(minutes=12)).astimezone(BERLIN).isoformat()
    moved = await client.interact(calendar, "move_event", uid=standup.id, start=new_start)
    assert moved["status"] == "success", moved
    again = (await _next_observation(stream)).content
    assert (again["uid"], again["start"]) == (standup.id, new_start)
    stream.cancel()


async def test_a_wrong_password_fails_the_adapter_with_an_error_that_does_not_show_it(
    awareness_dirs: AwarenessProcess, radicale: Radicale, client: Client
) -> None:
    wrong = "wrong-password-77a1c3"
    _configure(awareness_dirs, radicale, password=wrong)
    awareness_dirs.start()
    failed = await _state(client, "failed")
    assert f"the CalDAV server at {radicale.url} refused user '{USERNAME}'" in failed.last_error
    assert "check username and password" in failed.last_error
    assert wrong not in str(failed)
    assert wrong not in awareness_dirs.stderr()


async def test_the_adapter_fails_while_the_server_is_down_and_recovers_without_repeating_itself(
    awareness_dirs: AwarenessProcess, radicale: Radicale, work: Any, client: Client
) -> None:
    now = _now()
    _marker(work, "Standup", now + timedelta(minutes=10))
    _configure(awareness_dirs, radicale)
    awareness_dirs.start()
    calendar = await client.adapter_id("calendar")
    stream = client.subscribe()
    assert (await _next_observation(stream)).content["summary"] == "Standup"

    radicale.stop()
    failed = await _state(client, "failed")
    assert f"cannot reach the CalDAV server at {radicale.url}" in failed.last_error
    down = await client.observe(calendar, "events")
    assert "not connected to its server" in down["error"]

    radicale.start()
    _marker(work, "Review", now + timedelta(minutes=12))
    recovered = await _state(client, "running")
    assert recovered.restarts >= 1
    # Starts after Standup: a repeat of Standup would be observed first.
    assert (await _next_observation(stream)).content["summary"] == "Review"
    events = await client.observe(calendar, "events")
    assert [e["summary"] for e in events["result"]["events"]] == ["Standup", "Review"]
    stream.cancel()
