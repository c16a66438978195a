"""Text embeddings from a provider, for semantic recall (`mind.recall.semantic`).

Three wire formats, one call each that embeds a batch of texts:

* OpenAI-compatible: `POST {base}/embeddings` with `{"model", "input": [...]}`, answered
  `{"data": [{"index", "embedding"}]}` (OpenAI, and the local servers speaking its API);
* Ollama: `POST {base}/api/embed` with `{"model", "input": [...]}`, answered
  `{"embeddings": [[...]]}`;
* Gemini: `POST {base}/v1beta/models/{model}:batchEmbedContents` with one request per text,
  answered `{"embeddings": [{"values": [...]}]}` in the order asked.

A failure is an `EmbeddingError` whose message never holds the key: `rejected` when the
server refused the texts themselves (asking again with the same texts fails the same way),
otherwise the server may answer later (down, overloaded, a bad key being fixed).

`httpx` is loaded by the first call: a Mind without semantic recall never loads it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from tobe.runtime.redact import MASK, redact

EmbeddingKind = Literal["openai", "ollama", "gemini"]

DEFAULT_BASE_URLS: dict[EmbeddingKind, str] = {
    "openai": "https://api.openai.com/v1",
    "ollama": "http://127.0.0.1:11434",
    "gemini": "https://generativelanguage.googleapis.com",
}
# Statuses that say the texts themselves were refused (too long, malformed), not the caller.
_REJECTED = {400, 413, 422}


class EmbeddingError(Exception):
    def __init__(self, message: str, *, rejected: bool = False) -> None:
        super().__init__(message)
        self.rejected = rejected


@dataclass(frozen=True)
class Embedder:
    """One provider's embedding model; `name` ("kind:model") is what a stored vector records."""

    kind: EmbeddingKind
    model: str
    base_url: str = ""
    api_key: str = field(default="", repr=False)
    timeout: float = 30.0

    @property
    def name(self) -> str:
        return f"{self.kind}:{self.model}"

    async def embed(self, texts: list[str]) -> list[list[float]]:
        """One vector per text, in order; EmbeddingError when the server does not give them."""
        import httpx

        url, body, headers = self._request(texts)
        try:
            async with httpx.AsyncClient(timeout=self.timeout) as client:
                response = await client.post(url, json=body, headers=headers)
        except httpx.HTTPError as exc:
            raise EmbeddingError(self._scrub(f"{self.name}: {type(exc).__name__}: {exc}")) from None
        if response.status_code >= 300:
            detail = self._scrub(response.text[:300])
            raise EmbeddingError(
                f"{self.name}: HTTP {response.status_code}: {detail}",
                rejected=response.status_code in _REJECTED,
            )
        try:
            vectors = self._vectors(response.json())
        except (ValueError, KeyError, TypeError, IndexError) as exc:
            raise EmbeddingError(f"{self.name}: unreadable answer ({exc})") from None
        if len(vectors) != len(texts) or not all(vectors):
            raise EmbeddingError(f"{self.name}: {len(vectors)} vectors for {len(texts)} texts")
        return vectors

    def _request(self, texts: list[str]) -> tuple[str, dict[str, Any], dict[str, str]]:
        base = (self.base_url or DEFAULT_BASE_URLS[self.kind]).rstrip("/")
        match self.kind:
            case "openai":
                headers = {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}
                return f"{base}/embeddings", {"model": self.model, "input": texts}, headers
            case "ollama":
                return f"{base}/api/embed", {"model": self.model, "input": texts}, {}
            case "gemini":
                if not base.rsplit("/", 1)[-1].startswith("v1"):
                    base += "/v1beta"
                model = f"models/{self.model}"
                requests = [{"model": model, "content": {"parts": [{"text": t}]}} for t in texts]
                return (
                    f"{base}/{model}:batchEmbedContents",
                    {"requests": requests},
                    {"x-goog-api-key": self.api_key},
                )

    def _vectors(self, body: Any) -> list[list[float]]:
        match self.kind:
            case "openai":
                data = sorted(body["data"], key=lambda item: int(item.get("index", 0)))
                return [[float(x) for x in item["embedding"]] for item in data]
            case "ollama":
                return [[float(x) for x in vector] for vector in body["embeddings"]]
            case "gemini":
                return [[float(x) for x in item["values"]] for item in body["embeddings"]]

    def _scrub(self, text: str) -> str:
        if self.api_key:
            text = text.replace(self.api_key, MASK)
        return redact(text)
