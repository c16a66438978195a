"""`web_search` through SearXNG's JSON API: `GET {base}/search?q=…&format=json`.

SearXNG answers `{"query", "number_of_results", "results": [{"url", "title", "content",
"engine", …}], "answers", "suggestions", "unresponsive_engines": [[engine, reason]], …}`;
the tool makes a numbered list of title, URL and snippet of it. The instance is the
operator's (`hand.web.search_url`), usually on their own network, so it is not behind the
address guard; the result's URLs are, when the model fetches them.
"""

from __future__ import annotations

from typing import Any

from hand._tools import ToolError
from hand.web.fetch import USER_AGENT

MAX_SNIPPET = 300


def _answers(document: dict[str, Any]) -> list[str]:
    found: list[str] = []
    for answer in document.get("answers") or []:
        text = answer.get("answer") if isinstance(answer, dict) else answer
        if isinstance(text, str) and text.strip():
            found.append(text.strip())
    return found


def _listing(query: str, document: dict[str, Any], count: int) -> str:
    results = [r for r in document.get("results") or [] if isinstance(r, dict) and r.get("url")]
    lines = [f"Search: {query}"]
    lines += [f"Answer: {answer}" for answer in _answers(document)]
    if not results:
        lines.append("No results.")
    for number, result in enumerate(results[:count], start=1):
        title = " ".join(str(result.get("title") or result["url"]).split())
        lines.append(f"{number}. {title}")
        lines.append(f"   {result['url']}")
        snippet = " ".join(str(result.get("content") or "").split())
        if snippet:
            cut = snippet[:MAX_SNIPPET] + ("…" if len(snippet) > MAX_SNIPPET else "")
            lines.append(f"   {cut}")
    suggestions = [s for s in document.get("suggestions") or [] if isinstance(s, str)]
    if suggestions:
        lines.append("Suggestions: " + "; ".join(suggestions[:5]))
    silent = [
        str(entry[0])
        for entry in document.get("unresponsive_engines") or []
        if isinstance(entry, list | tuple) and entry
    ]
    if silent and not results:
        lines.append("Engines that did not answer: " + ", ".join(silent))
    return "\n".join(lines)


class SearxngSearch:
    """One SearXNG instance, asked within `timeout` seconds."""

    def __init__(self, base_url: str, timeout: float) -> None:
        self.endpoint = base_url.rstrip("/") + "/search"
        self.timeout = timeout

    async def search(self, query: str, count: int) -> str:
        import httpx  # loaded by the first search, as `hand.web.fetch` loads it

        if not query.strip():
            raise ToolError("the search query is empty")
        params = {"q": query, "format": "json"}
        try:
            async with httpx.AsyncClient(
                timeout=self.timeout, headers={"User-Agent": USER_AGENT}
            ) as client:
                response = await client.get(self.endpoint, params=params)
        except httpx.TimeoutException:
            raise ToolError(
                f"the search backend at {self.endpoint} did not answer within {self.timeout:g} s"
            ) from None
        except httpx.HTTPError as exc:
            raise ToolError(
                f"the search backend at {self.endpoint} is unreachable: {exc}"
            ) from None
        if response.status_code == 403:
            raise ToolError(
                f"the search backend at {self.endpoint} refused the JSON format (HTTP 403): "
                "SearXNG answers so when `json` is missing from `search.formats` in its "
                "settings.yml"
            )
        if response.status_code != 200:
            reason = response.reason_phrase or ""
            raise ToolError(
                f"the search backend at {self.endpoint} answered HTTP "
                f"{response.status_code} {reason}".rstrip()
            )
        try:
            document = response.json()
        except ValueError:
            kind = response.headers.get("content-type", "unknown")
            raise ToolError(
                f"the search backend at {self.endpoint} did not answer JSON ({kind}); "
                "is hand.web.search_url the base URL of a SearXNG instance?"
            ) from None
        if not isinstance(document, dict):
            raise ToolError(f"the search backend at {self.endpoint} answered JSON of another shape")
        return _listing(query, document, count)
