"""Ask a provider which models it offers: one cheap call that also proves the key works.

Used by `tobe models`, `tobe setup`, `tobe doctor` and `tobe up` (is the provider reachable,
is the key accepted) and by the catalog's acceptance of models an OpenAI-compatible server
lists. Wire facts: OpenAI-compatible servers (OpenAI, vLLM, llama.cpp, Ollama's `/v1`) answer
`GET {base}/models` with `{"data": [{"id": …}]}` (vLLM adds `max_model_len`, OpenRouter
`context_length`); Anthropic `GET {base}/v1/models` pages with
`has_more`/`last_id`; Gemini `GET {base}/v1beta/models` pages with `nextPageToken` and names
models `models/<id>`, with their token limits.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import httpx

from mind.providers.anthropic import API_VERSION
from tobe.api_keys import api_key, key_variables
from tobe.config import ProviderSettings

DEFAULT_BASE_URLS = {
    "openai": "https://api.openai.com/v1",
    "anthropic": "https://api.anthropic.com",
    "gemini": "https://generativelanguage.googleapis.com",
}
PAGE_LIMIT = 20


@dataclass(frozen=True)
class ListedModel:
    """A model the provider lists; limits only where the listing gives them (Gemini)."""

    id: str
    context_window: int | None = None
    max_output: int | None = None
    # Who the server says owns the model (vLLM says "vllm", llama-server "llamacpp").
    owned_by: str = ""


class ListingError(Exception):
    """The provider did not list its models; the message says what to fix.

    `problem` is what happened without the fix, for a caller that offers its own (`tobe setup`
    asks again). Not a refusal: the operator's commands and the Mind's start-up print it."""

    def __init__(self, problem: str, fix: str = "") -> None:
        super().__init__(f"{problem}; {fix}" if fix else problem)
        self.problem = problem


class ProviderUnreachable(ListingError):
    """No HTTP answer: wrong base URL, server down, DNS, TLS."""


class KeyRejected(ListingError):
    """The provider answered 401 or 403: the API key is missing, wrong or revoked."""


def base_url(settings: ProviderSettings) -> str:
    return (settings.base_url or DEFAULT_BASE_URLS.get(settings.kind, "")).rstrip("/")


def is_self_hosted(settings: ProviderSettings) -> bool:
    """An OpenAI-compatible server other than OpenAI's API (Ollama, vLLM, llama.cpp, …)."""
    return settings.kind == "openai" and base_url(settings) != DEFAULT_BASE_URLS["openai"]


async def list_models(
    settings: ProviderSettings,
    *,
    timeout: float = 10.0,
    transport: httpx.AsyncBaseTransport | None = None,
) -> list[ListedModel]:
    """The models `settings`' provider lists, sorted by id."""
    if settings.kind not in DEFAULT_BASE_URLS:
        raise ListingError(f"provider kind {settings.kind!r} has no model listing")
    async with httpx.AsyncClient(timeout=timeout, transport=transport) as client:
        if settings.kind == "openai":
            models = await _openai(client, settings)
        elif settings.kind == "anthropic":
            models = await _anthropic(client, settings)
        else:
            models = await _gemini(client, settings)
    return sorted(models, key=lambda model: model.id)


async def _openai(client: httpx.AsyncClient, settings: ProviderSettings) -> list[ListedModel]:
    key = api_key(settings)
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    body = await _get(client, settings, f"{base_url(settings)}/models", headers, {})
    return [
        ListedModel(
            str(item["id"]),
            _int(item.get("max_model_len") or item.get("context_length")),
            owned_by=str(item.get("owned_by") or ""),
        )
        for item in _items(body, "data")
        if "id" in item
    ]


async def _anthropic(client: httpx.AsyncClient, settings: ProviderSettings) -> list[ListedModel]:
    headers = {"x-api-key": api_key(settings) or "", "anthropic-version": API_VERSION}
    models: list[ListedModel] = []
    params: dict[str, str] = {"limit": "1000"}
    for _ in range(PAGE_LIMIT):
        body = await _get(client, settings, f"{base_url(settings)}/v1/models", headers, params)
        models += [ListedModel(str(item["id"])) for item in _items(body, "data") if "id" in item]
        if not body.get("has_more") or not body.get("last_id"):
            break
        params = {"limit": "1000", "after_id": str(body["last_id"])}
    return models


async def _gemini(client: httpx.AsyncClient, settings: ProviderSettings) -> list[ListedModel]:
    headers = {"x-goog-api-key": api_key(settings) or ""}
    base = base_url(settings)
    if not base.rsplit("/", 1)[-1].startswith("v1"):
        base += "/v1beta"
    models: list[ListedModel] = []
    params: dict[str, str] = {"pageSize": "1000"}
    for _ in range(PAGE_LIMIT):
        body = await _get(client, settings, f"{base}/models", headers, params)
        for item in _items(body, "models"):
            methods = item.get("supportedGenerationMethods") or ["generateContent"]
            if "name" not in item or "generateContent" not in methods:
                continue
            models.append(
                ListedModel(
                    str(item["name"]).removeprefix("models/"),
                    _int(item.get("inputTokenLimit")),
                    _int(item.get("outputTokenLimit")),
                )
            )
        token = body.get("nextPageToken")
        if not token:
            break
        params = {"pageSize": "1000", "pageToken": str(token)}
    return models


async def _get(
    client: httpx.AsyncClient,
    settings: ProviderSettings,
    url: str,
    headers: dict[str, str],
    params: dict[str, str],
) -> dict[str, Any]:
    try:
        response = await client.get(url, headers=headers, params=params)
    except httpx.InvalidURL as exc:
        raise ListingError(
            f"{settings.kind}: the base URL {url!r} is not valid ({exc}); fix [provider] base_url"
        ) from None
    except httpx.HTTPError as exc:
        reason = str(exc) or type(exc).__name__
        raise ProviderUnreachable(
            f"{settings.kind}: cannot reach {url} ({reason})",
            "check [provider] base_url (TOBE_PROVIDER__BASE_URL) and that the server is running",
        ) from None
    if response.status_code in (401, 403):
        raise KeyRejected(
            f"{settings.kind}: the API key was rejected (HTTP {response.status_code} from {url})",
            "store a valid one with `tobe setup` or set "
            + " / ".join(["TOBE_PROVIDER__API_KEY", *key_variables(settings.kind)]),
        )
    if response.status_code >= 400:
        raise ListingError(
            f"{settings.kind}: listing models failed with HTTP {response.status_code} from {url}",
            "check [provider] base_url (TOBE_PROVIDER__BASE_URL)",
        )
    try:
        body = response.json()
    except ValueError:
        raise ListingError(f"{settings.kind}: {url} did not answer JSON") from None
    if not isinstance(body, dict):
        raise ListingError(f"{settings.kind}: {url} answered JSON that is not an object")
    return body


def _items(body: dict[str, Any], field: str) -> list[dict[str, Any]]:
    items = body.get(field)
    return [item for item in items if isinstance(item, dict)] if isinstance(items, list) else []


def _int(value: Any) -> int | None:
    try:
        number = int(value)
    except (TypeError, ValueError):
        return None
    return number if number > 0 else None
