"""The feeds adapter against a real HTTP server serving real RSS, Atom and broken documents."""

from __future__ import annotations

import base64
import json
import signal
from collections.abc import Iterator
from typing import Any

import pytest
from awareness_harness import BUILTIN, AwarenessProcess, Client, add_adapter, next_batch
from feed_server import FeedServer
from helpers.eventually import eventually, eventually_async

from awareness.adapters.feeds.state import SEEN_PER_FEED, FeedState
from tobe.v1 import awareness_pb2 as pb

RSS, ATOM = "/news.rss", "/blog.atom"
API_KEY = "feed-api-key-0c4e7d2b91"
PASSWORD = "feed-password-5a8f3e16"

NEW_ITEM = """
    <item>
      <title>Harbour festival &amp; fireworks</title>
      <link>https://news.example.org/2025/03/festival</link>
      <guid isPermaLink="false">news-example-4712</guid>
      <pubDate>Wed, 05 Mar 2025 07:00:00 -0500</pubDate>
      <dc:creator>Ana Silva</dc:creator>
      <description><![CDATA[<p>Three days of <i>live music</i> on the pier.</p>
        <script>alert("x")</script><p>Entry is free.</p>]]></description>
    </item>
"""
NEW_ENTRY = """
  <entry>
    <title>Restoring an old plane</title>
    <link rel="alternate" type="text/html" href="/2025/old-plane"/>
    <id>urn:uuid:2f1c3e8a-8d0b-4f7e-9a55-0c1d2e3f4a5b</id>
    <published>2025-03-05T14:30:00.250+02:00</published>
    <updated>2025-03-05T15:00:00+02:00</updated>
    <summary type="text">Flatten the sole, then &lt;sharpen&gt; the iron.</summary>
  </entry>
"""


@pytest.fixture
def feed_server() -> Iterator[FeedServer]:
    server = FeedServer()
    server.publish_file(RSS, "news.rss", "application/rss+xml; charset=utf-8")
    server.publish_file(ATOM, "blog.atom", "application/atom+xml")
    server.publish_file("/broken.xml", "broken.xml", "application/xml")
    server.publish("/page.html", b"<html><body><p>Not a feed.</p></body></html>", "text/html")
    server.start()
    try:
        yield server
    finally:
        server.stop()


def _configure(awareness: AwarenessProcess, feeds: list[dict[str, Any]], **overrides: Any) -> None:
    add_adapter(awareness.adapters_dir, BUILTIN / "feeds")
    config = {
        "auto_start": True,
        "feeds": [{"trust": "high", **feed} for feed in feeds],
        "poll_interval": 1,
        "timeout": 10,
        "emit_existing": False,
        "max_entries_per_poll": 20,
    }
    awareness.write_config("feeds", config | overrides)


async def _status(client: Client, adapter_id: str) -> dict[str, dict[str, Any]]:
    reply = await client.observe(adapter_id, "feeds")
    assert reply["status"] == "success", reply
    return {feed["url"]: feed for feed in reply["result"]["feeds"]}


async def _read_all_fetched(client: Client, adapter_id: str) -> None:
    async def fetched() -> list[bool]:
        return [f["last_success"] is not None for f in (await _status(client, adapter_id)).values()]

    await eventually_async(fetched, what="every feed fetched once", until=all)


async def _observed_until_marker(stream, client: Client) -> list[pb.Observation]:
    """The feed observations the stream carries up to a high-trust probe marker emitted now.

    The tests' feeds are high-trust too, so nothing emitted before the marker is held back.
    """
    marker = await client.emit(await client.adapter_id("probe"), "high")
    entries: list[pb.Observation] = []
    while True:
        for observation in (await next_batch(stream)).observations:
            if observation.id == marker:
                return entries
            if observation.adapter_name == "feeds":
                entries.append(observation)


def _content(observation: pb.Observation) -> dict[str, Any]:
    return json.loads(observation.content_json)


def _rounds_after(server: FeedServer, path: str, count: int) -> None:
    """Wait until `path` was requested `count` more times: the rounds before have finished."""
    start = len(server.seen(path))
    eventually(
        lambda: len(server.seen(path)) >= start + count, what=f"{count} more polls of {path}"
    )


async def test_entries_published_after_subscribing_become_observations_with_their_fields(
    awareness_dirs: AwarenessProcess, feed_server: FeedServer
):
    atom = {
        "url": feed_server.url(ATOM),
        "title": "Workshop notes",
        "headers": {"X-Api-Key": API_KEY},
        "username": "reader",
        "password": PASSWORD,
    }
    _configure(awareness_dirs, [{"url": feed_server.url(RSS)}, atom])
    awareness_dirs.start()
    client = Client(awareness_dirs.target)
    stream = client.subscribe()
    feeds = await client.adapter_id("feeds")
    await _read_all_fetched(client, feeds)

    feed_server.add_entry(RSS, NEW_ITEM)
    feed_server.add_entry(ATOM, NEW_ENTRY)
    observed: list[pb.Observation] = []
    while len(observed) < 2:
        observed += [
            o for o in (await next_batch(stream)).observations if o.adapter_name == "feeds"
        ]
    by_feed = {o.source_key: o for o in observed}
    rss, atom_entry = by_feed[feed_server.url(RSS)], by_feed[feed_server.url(ATOM)]
    assert _content(rss) == {
        "kind": "feed_entry",
        "feed_url": feed_server.url(RSS),
        "feed_title": "Harbour Town News",
        "entry_id": "news-example-4712",
        "title": "Harbour festival & fireworks",
        "link": "https://news.example.org/2025/03/festival",
        "published": "2025-03-05T12:00:00+00:00",
        "author": "Ana Silva",
        "summary": "Three days of live music on the pier.\nEntry is free.",
    }
    assert _content(atom_entry) == {
        "kind": "feed_entry",
        "feed_url": feed_server.url(ATOM),
        "feed_title": "Workshop notes",
        "entry_id": "urn:uuid:2f1c3e8a-8d0b-4f7e-9a55-0c1d2e3f4a5b",
        "title": "Restoring an old plane",
        "link": feed_server.url("/2025/old-plane"),
        "published": "2025-03-05T12:30:00+00:00",
        "author": "Ole Brandt",
        "summary": "Flatten the sole, then <sharpen> the iron.",
    }
    assert (rss.source_title, atom_entry.source_title) == ("Harbour Town News", "Workshop notes")
    assert {(o.actor, o.trust) for o in observed} == {(pb.OBSERVATION_ACTOR_SERVICE, pb.TRUST_HIGH)}
    # The entries the feeds held when first fetched were never observed.
    assert await _observed_until_marker(stream, client) == []

    [atom_request, *_] = feed_server.seen(ATOM)
    assert atom_request.headers["x-api-key"] == API_KEY
    credentials = base64.b64encode(f"reader:{PASSWORD}".encode()).decode()
    assert atom_request.headers["authorization"] == f"Basic {credentials}"
    [info] = [a for a in await client.adapters() if a.name == "feeds"]
    stream.cancel()
    await client.close()
    assert awareness_dirs.stop(signal.SIGTERM) == 0
    for secret in (API_KEY, PASSWORD):
        assert secret not in str(info) and secret not in awareness_dirs.all_stderr()


async def test_a_restart_observes_only_what_was_published_meanwhile_and_polls_conditionally(
    awareness_dirs: AwarenessProcess, feed_server: FeedServer
):
    urls = [feed_server.url(RSS), feed_server.url(ATOM)]
    _configure(
        awareness_dirs,
        [{"url": url} for url in urls],
        emit_existing=True,
        max_entries_per_poll=1,
    )
    awareness_dirs.start()
    client = Client(awareness_dirs.target)
    stream = client.subscribe()
    existing: list[pb.Observation] = []
    while len(existing) < 4:
        batch = await next_batch(stream)
        existing += batch.observations
    # Oldest first, one per feed and round; the RSS item with neither title, link nor guid is
    # skipped.
    assert [_content(o)["entry_id"] for o in existing if o.source_key == urls[0]] == [
        "https://news.example.org/2025/03/fish-market",
        "news-example-4711",
    ]
    assert [_content(o)["entry_id"] for o in existing if o.source_key == urls[1]] == [
        "tag:workshop.example.net,2025:table-top",
        "tag:workshop.example.net,2025:card-scraper",
    ]
    # Unchanged feeds are asked for conditionally, and the server's 304 observes nothing.
    for path in (RSS, ATOM):
        eventually(lambda p=path: [r for r in feed_server.seen(p) if r.status == 304], what="304")
        conditional = next(r for r in feed_server.seen(path) if r.status == 304)
        assert {"if-none-match", "if-modified-since"} <= set(conditional.headers)
    assert await _observed_until_marker(stream, client) == []
    cursor = batch.publish_seq
    stream.cancel()
    await client.close()
    assert awareness_dirs.stop(signal.SIGTERM) == 0

    feed_server.add_entry(RSS, NEW_ITEM)
    awareness_dirs.start()
    client = Client(awareness_dirs.target)
    stream = client.subscribe(cursor)
    for path in (RSS, ATOM):
        _rounds_after(feed_server, path, 2)
    after = await _observed_until_marker(stream, client)
    assert [_content(o)["entry_id"] for o in after] == ["news-example-4712"]
    stream.cancel()
    await client.close()


async def test_a_malformed_feed_is_reported_while_the_good_ones_keep_working(
    awareness_dirs: AwarenessProcess, feed_server: FeedServer
):
    broken, page, missing = (feed_server.url(p) for p in ("/broken.xml", "/page.html", "/gone"))
    good = feed_server.url(RSS)
    _configure(awareness_dirs, [{"url": url} for url in (broken, page, missing, good)])
    awareness_dirs.start()
    client = Client(awareness_dirs.target)
    stream = client.subscribe()
    feeds = await client.adapter_id("feeds")
    await eventually_async(
        lambda: _status(client, feeds),
        until=lambda status: (
            all(f["last_error"] for u, f in status.items() if u != good) and status[good]["ok"]
        ),
        what="the three bad feeds failed and the good one read",
    )
    feed_server.add_entry(RSS, NEW_ITEM)
    [observation] = (await next_batch(stream)).observations
    assert _content(observation)["entry_id"] == "news-example-4712"

    status = await _status(client, feeds)
    assert "malformed feed with no usable entries" in status[broken]["last_error"]
    assert "not an RSS, Atom or RDF feed" in status[page]["last_error"]
    assert status[missing]["last_error"] == "HTTP 404 Not Found"
    assert [status[u]["ok"] for u in (broken, page, missing)] == [False, False, False]
    assert (status[good]["title"], status[good]["last_error"]) == ("Harbour Town News", "")
    assert status[good]["entries_seen"] == 3
    [info] = [a for a in await client.adapters() if a.name == "feeds"]
    assert info.state == "running"

    latest = await client.observe(feeds, "entries", url=good, limit=2)
    assert latest["status"] == "success", latest
    assert [(e["entry_id"], e["seen"]) for e in latest["result"]["entries"]] == [
        ("news-example-4712", True),
        ("news-example-4711", True),
    ]
    refused = await client.observe(feeds, "entries", url=broken)
    assert refused["status"] == "error"
    assert "malformed feed" in refused["error"]
    unknown = await client.observe(feeds, "entries", url="https://elsewhere.example/feed")
    assert "is not a configured feed" in unknown["error"]
    stream.cancel()
    await client.close()


def test_seen_ids_are_bounded_but_keep_every_entry_still_in_the_feed():
    state = FeedState()
    state.remember(f"old-{n}" for n in range(SEEN_PER_FEED))
    state.remember(["new-1", "new-2"])
    assert len(state.seen) == SEEN_PER_FEED
    assert state.seen[-2:] == ["new-1", "new-2"] and "old-0" not in state.seen
    huge = [f"entry-{n}" for n in range(SEEN_PER_FEED + 5)]
    state.remember(huge)
    assert sorted(state.seen) == sorted(huge)


async def test_the_adapter_fails_while_its_feed_server_is_down_and_recovers_without_repeats(
    awareness_dirs: AwarenessProcess, feed_server: FeedServer
):
    url = feed_server.url(RSS)
    _configure(awareness_dirs, [{"url": url}])
    awareness_dirs.start()
    client = Client(awareness_dirs.target)
    stream = client.subscribe()
    feeds = await client.adapter_id("feeds")
    await _read_all_fetched(client, feeds)

    async def info() -> pb.AdapterInfo:
        [adapter] = [a for a in await client.adapters() if a.adapter_id == feeds]
        return adapter

    feed_server.stop()
    failed = await eventually_async(info, until=lambda a: a.state == "failed", what="failed")
    assert "no feed could be read" in failed.last_error and url in failed.last_error
    status = (await _status(client, feeds))[url]
    assert not status["ok"] and "ConnectError" in status["last_error"]

    feed_server.add_entry(RSS, NEW_ITEM)
    feed_server.start()
    [observation] = (await next_batch(stream, timeout=60)).observations
    assert _content(observation)["entry_id"] == "news-example-4712"
    assert (await info()).state == "running"
    _rounds_after(feed_server, RSS, 2)
    assert await _observed_until_marker(stream, client) == []
    assert (await _status(client, feeds))[url]["ok"]
    stream.cancel()
    await client.close()
