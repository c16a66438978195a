"""`web_search` against a fake SearXNG (a local HTTP server answering SearXNG's JSON shape),
and which web tools a Hand declares for which settings."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest
from helpers.ports import free_port
from web_site import Site, serving

from hand import Effect, Hand, ToolError
from hand.web.tools import WebTools
from tobe.config import WebToolSettings


@pytest.fixture
def searxng() -> Iterator[Site]:
    with serving("127.0.0.1") as running:
        yield running


def search_tool(base_url: str, **settings: Any) -> Hand:
    hand = Hand("web")
    WebTools(WebToolSettings(search_url=base_url, **settings)).declare(hand)
    return hand


async def search(hand: Hand, query: str, count: int = 8) -> str:
    return (await hand.tools["web_search"].call({"query": query, "count": count})).text


async def search_error(hand: Hand, query: str = "rust option") -> str:
    with pytest.raises(ToolError) as caught:
        await search(hand, query)
    return str(caught.value)


async def test_results_become_a_numbered_list_of_title_url_and_snippet(searxng: Site) -> None:
    text = await search(search_tool(searxng.url("/")), "rust option")
    assert searxng.search_queries == [{"q": ["rust option"], "format": ["json"]}]
    lines = text.splitlines()
    assert lines[:6] == [
        "Search: rust option",
        "1. std::option - Rust",
        "   https://doc.rust-lang.org/std/option/",
        "   Optional values. Type Option represents an optional value.",
        "2. Defining an Enum - The Rust Programming Language",
        "   https://doc.rust-lang.org/book/ch06-01-defining-an-enum.html",
    ]
    assert lines[6].startswith("   The Option enum and its advantages") and lines[6].endswith("…")
    assert len(lines[6]) == 3 + 300 + 1
    assert lines[7:] == [
        "3. A third result",
        "   https://example.org/third",
        "Suggestions: rust option unwrap; rust option map",
    ]


async def test_count_limits_the_results(searxng: Site) -> None:
    text = await search(search_tool(searxng.url("")), "rust option", count=1)
    assert "1. std::option - Rust" in text
    assert "2." not in text


async def test_no_results_says_so_and_names_engines_that_did_not_answer(searxng: Site) -> None:
    searxng.searxng_answer = (
        200,
        "application/json",
        b'{"query":"x","results":[],"answers":[],"suggestions":[],'
        b'"unresponsive_engines":[["google","timeout"],["brave","too many requests"]]}',
    )
    text = await search(search_tool(searxng.url("/")), "x")
    assert text == "Search: x\nNo results.\nEngines that did not answer: google, brave"


async def test_json_format_disabled_in_searxng_is_explained(searxng: Site) -> None:
    searxng.searxng_answer = (403, "text/html", b"<html><body>403 Forbidden</body></html>")
    problem = await search_error(search_tool(searxng.url("/")))
    assert problem == (
        f"the search backend at {searxng.url('/search')} refused the JSON format (HTTP 403): "
        "SearXNG answers so when `json` is missing from `search.formats` in its settings.yml"
    )


async def test_an_error_status_is_named(searxng: Site) -> None:
    searxng.searxng_answer = (429, "text/plain", b"slow down")
    problem = await search_error(search_tool(searxng.url("/")))
    assert problem == (
        f"the search backend at {searxng.url('/search')} answered HTTP 429 Too Many Requests"
    )


async def test_an_answer_that_is_not_json_is_explained(searxng: Site) -> None:
    searxng.searxng_answer = (200, "text/html", b"<html><body>results</body></html>")
    problem = await search_error(search_tool(searxng.url("/")))
    assert problem == (
        f"the search backend at {searxng.url('/search')} did not answer JSON (text/html); "
        "is hand.web.search_url the base URL of a SearXNG instance?"
    )


async def test_an_unreachable_backend_is_named() -> None:
    base = f"http://127.0.0.1:{free_port()}"
    problem = await search_error(search_tool(base))
    assert problem.startswith(f"the search backend at {base}/search is unreachable: ")


async def test_an_empty_query_is_refused_without_asking(searxng: Site) -> None:
    assert await search_error(search_tool(searxng.url("/")), "  ") == "the search query is empty"
    assert searxng.search_queries == []


def declared(**settings: Any) -> dict[str, Effect]:
    hand = Hand("web")
    WebTools(WebToolSettings(**settings)).declare(hand)
    return {name: tool.effect for name, tool in hand.tools.items()}


def test_web_fetch_is_on_by_default_and_search_needs_a_backend() -> None:
    assert declared() == {"web_fetch": Effect.READ_ONLY}
    assert declared(fetch=False) == {}
    assert declared(search_url="http://127.0.0.1:8888") == {
        "web_fetch": Effect.READ_ONLY,
        "web_search": Effect.READ_ONLY,
    }


def test_the_browser_reads_freely_and_acts_only_through_approvals() -> None:
    tools = declared(fetch=False, browser=True)
    assert tools == {
        "browser_open": Effect.READ_ONLY,
        "browser_read": Effect.READ_ONLY,
        "browser_screenshot": Effect.READ_ONLY,
        "browser_click": Effect.EXTERNAL_SIDE_EFFECT,
        "browser_type": Effect.EXTERNAL_SIDE_EFFECT,
    }


def test_declaring_the_web_tools_imports_neither_the_extractor_nor_playwright() -> None:
    """A Hand that never fetches nor browses does not pay for importing them."""
    program = (
        "import sys\n"
        "from hand import Hand\n"
        "from hand.web.tools import WebTools\n"
        "from tobe.config import WebToolSettings\n"
        "WebTools(WebToolSettings(browser=True, search_url='http://x')).declare(Hand('w'))\n"
        "print(sorted(m for m in ('trafilatura', 'playwright') if m in sys.modules))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, check=True, timeout=60
    )
    assert done.stdout.strip() == "[]"
