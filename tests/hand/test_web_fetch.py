"""`web_fetch` against a real local HTTP server: real-world pages become Markdown of their
article, redirects, content types, limits, and the address guard (loopback, private and
link-local targets refused, directly, after a redirect, and against DNS rebinding).

The site listens on loopback, which the guard refuses: the tests that read pages allow it
(`hand.web.allow`), as an operator would allow a host of their own network.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from web_site import Site, serving

from hand import Hand, ToolError
from hand.web.guard import Resolver, system_resolver
from hand.web.tools import WebTools
from tobe.config import WebToolSettings


@pytest.fixture
def site() -> Iterator[Site]:
    with serving("127.0.0.1") as running:
        yield running


def fetch_tool(resolver: Resolver = system_resolver, **settings: Any) -> Hand:
    hand = Hand("web")
    WebTools(WebToolSettings(**settings), resolver).declare(hand)
    return hand


async def fetch(hand: Hand, url: str, **arguments: Any) -> str:
    output = await hand.tools["web_fetch"].call({"url": url, **arguments})
    return output.text


async def refused(hand: Hand, url: str) -> str:
    with pytest.raises(ToolError) as caught:
        await fetch(hand, url)
    return str(caught.value)


PAGES = {
    "rustdoc-what-is-rustdoc.html": (
        "What is rustdoc? - The rustdoc book",
        [
            "The standard Rust distribution ships with a tool called `rustdoc`",
            "Basic usage",
            "Using standalone Markdown files",
            "$ rustdoc src/lib.rs",
        ],
        ["Keyboard shortcuts", "Toggle Table of Contents", "Search this book", "Navy"],
    ),
    "rust-std-option.html": (
        "std::option - Rust",
        ["represents an optional value", "Querying the variant", "Option::into_flat_iter"],
        ["In crate std", "59807616e"],
    ),
    "libffi-the-basics.html": (
        "The Basics (libffi: the portable foreign function interface library)",
        ["Call InterFace", "`ffi_prep_cif`", "ffi_call"],
        ["<div", "<a href"],
    ),
}


@pytest.mark.parametrize("page", sorted(PAGES))
async def test_a_real_page_becomes_markdown_of_its_article_without_its_navigation(
    site: Site, page: str
) -> None:
    title, present, absent = PAGES[page]
    hand = fetch_tool(allow=["127.0.0.1"])
    text = await fetch(hand, site.url(f"/pages/{page}"), max_chars=100_000)
    header, _, content = text.partition("\n\n")
    assert f"URL: {site.url(f'/pages/{page}')}" in header
    assert f"Title: {title}" in header
    assert "Content-Type: text/html" in header
    assert "Truncated" not in header
    for words in present:
        assert words in content
    for words in absent:
        assert words not in content


async def test_links_in_the_markdown_are_absolute_so_the_model_can_follow_them(
    site: Site,
) -> None:
    text = await fetch(fetch_tool(allow=["127.0.0.1"]), site.url("/pages/libffi-the-basics.html"))
    assert f"[Multiple ABIs]({site.url('/pages/Multiple-ABIs.html')})" in text


async def test_a_redirect_is_followed_and_the_result_names_the_final_url(site: Site) -> None:
    hand = fetch_tool(allow=["127.0.0.1"])
    start = site.url("/chain/4")  # five redirects
    text = await fetch(hand, start)
    assert text.startswith(f"URL: {site.url('/text')}\nRequested: {start}\n")
    assert text.endswith("\n\nplain words, café")


async def test_more_than_five_redirects_are_refused(site: Site) -> None:
    problem = await refused(fetch_tool(allow=["127.0.0.1"]), site.url("/chain/5"))
    assert problem == f"more than 5 redirects, the last to {site.url('/text')}"


async def test_json_comes_back_indented_and_text_as_is(site: Site) -> None:
    hand = fetch_tool(allow=["127.0.0.1"])
    text = await fetch(hand, site.url("/json"))
    assert "Content-Type: application/json" in text
    assert text.endswith('\n\n{\n  "name": "ToBe",\n  "tools": [\n    "web_fetch"\n  ]\n}')


async def test_html_is_decoded_in_the_charset_its_response_names(site: Site) -> None:
    text = await fetch(fetch_tool(allow=["127.0.0.1"]), site.url("/latin1"))
    assert "Café crème" in text
    assert "Déjà vu, naïve façade." in text


async def test_other_content_types_are_refused_with_what_they_are(site: Site) -> None:
    problem = await refused(fetch_tool(allow=["127.0.0.1"]), site.url("/image.png"))
    assert problem == (
        f"{site.url('/image.png')} is image/png, which web_fetch does not read "
        "(it reads HTML, text and JSON)"
    )


async def test_an_error_status_is_named(site: Site) -> None:
    problem = await refused(fetch_tool(allow=["127.0.0.1"]), site.url("/missing"))
    assert problem == f"{site.url('/missing')} answered HTTP 404 Not Found"


async def test_reading_stops_at_the_byte_limit_and_says_so(site: Site) -> None:
    hand = fetch_tool(allow=["127.0.0.1"], max_bytes=65536)
    text = await fetch(hand, site.url("/big"), max_chars=100_000)
    header, _, content = text.partition("\n\n")
    assert "Truncated: the response is larger than 65536 bytes" in header
    assert len(content) == 65536


async def test_the_output_is_cut_at_max_chars_and_says_how_to_get_more(site: Site) -> None:
    hand = fetch_tool(allow=["127.0.0.1"], max_chars=50_000)
    text = await fetch(hand, site.url("/pages/rust-std-option.html"), max_chars=1000)
    header, _, content = text.partition("\n\n")
    assert "Truncated: showing 1000 of " in header
    assert "ask with max_chars up to 50000" in header
    assert len(content) == 1000


async def test_a_server_that_stops_answering_ends_in_a_timeout(site: Site) -> None:
    hand = fetch_tool(allow=["127.0.0.1"], fetch_timeout=1.0)
    problem = await refused(hand, site.url("/slow"))
    assert problem == f"timed out after 1 s fetching {site.url('/slow')}"


async def test_only_http_and_https_are_fetched() -> None:
    hand = fetch_tool()
    assert "only http and https" in await refused(hand, "file:///etc/passwd")
    assert "only http and https" in await refused(hand, "ftp://example.org/x")


@pytest.mark.parametrize(
    ("target", "why"),
    [
        ("http://127.0.0.1:{port}/text", "refused 127.0.0.1: the address is loopback"),
        ("http://localhost:{port}/text", "refused localhost (127.0.0.1): the address is loopback"),
        ("http://[::1]:{port}/text", "refused ::1: the address is loopback"),
        (
            "http://[::ffff:127.0.0.1]:{port}/text",
            "the address is loopback (127.0.0.1 inside an IPv6 address)",
        ),
        ("http://10.0.0.1/", "refused 10.0.0.1: the address is private"),
        ("http://192.168.1.1/admin", "refused 192.168.1.1: the address is private"),
        (
            "http://169.254.169.254/latest/meta-data/",
            "refused 169.254.169.254: the address is link-local (the cloud metadata service)",
        ),
        (
            "http://2130706433:{port}/text",
            "refused 2130706433 (127.0.0.1): the address is loopback",
        ),
    ],
)
async def test_the_guard_refuses_loopback_private_and_link_local_targets(
    site: Site, target: str, why: str
) -> None:
    problem = await refused(fetch_tool(), target.format(port=site.port))
    assert why in problem
    assert "an operator may allow it in hand.web.allow" in problem
    assert site.requests == []


@pytest.mark.parametrize(
    "target",
    [
        "http://127.0.0.2:{inner}/text",
        "http://[::1]:{inner}/text",
        "http://169.254.169.254/latest/meta-data/",
        "http://10.0.0.1/",
    ],
)
async def test_a_redirect_to_a_refused_address_is_refused(site: Site, target: str) -> None:
    """The first hop is allowed (127.0.0.1 only); where it redirects to is not."""
    with serving("127.0.0.2") as inner:
        to = target.format(inner=inner.port)
        problem = await refused(fetch_tool(allow=["127.0.0.1/32"]), site.url(f"/redirect?to={to}"))
        assert problem.startswith("refused ")
        assert "hand.web.allow" in problem
        assert site.requests == [("GET", f"/redirect?to={to}")]
        assert inner.requests == []


async def test_a_rebinding_name_is_dialed_at_the_address_checked_never_resolved_again() -> None:
    """A name whose first answer passes the guard and whose later answers point inside (DNS
    rebinding). The address that passes stands in for a public one (the tests reach nothing
    beyond loopback): 127.0.0.1, allowed; the inside one is 127.0.0.2, refused. The fetch
    must reach the first and never the second."""
    answers: list[str] = []

    async def rebinding(host: str, port: int) -> list[str]:
        answer = "127.0.0.1" if not answers else "127.0.0.2"
        answers.append(answer)
        return [answer]

    with serving("127.0.0.1") as outside, serving("127.0.0.2", outside.port) as inside:
        hand = fetch_tool(rebinding, allow=["127.0.0.1/32"])
        text = await fetch(hand, f"http://rebind.test:{outside.port}/text")
        assert text.startswith(f"URL: http://rebind.test:{outside.port}/text\n")
        assert outside.requests == [("GET", "/text")]
        assert inside.requests == []
        assert answers == ["127.0.0.1"]
        # Asked again, the name now answers inside: refused before anything is dialed.
        problem = await refused(hand, f"http://rebind.test:{outside.port}/text")
        assert "refused rebind.test (127.0.0.2): the address is loopback" in problem
        assert inside.requests == []


async def test_a_host_name_allowed_by_the_operator_reaches_its_private_address(
    site: Site,
) -> None:
    async def home(host: str, port: int) -> list[str]:
        return ["127.0.0.1"]

    hand = fetch_tool(home, allow=["nas.home"])
    text = await fetch(hand, f"http://nas.home:{site.port}/text")
    assert text.endswith("plain words, café")
