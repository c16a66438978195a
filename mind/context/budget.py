"""How many tokens a provider request may take, and how many a request will take.

The budget comes from the model catalog: the prompt may fill the context window minus the
output each request asks for and a reserve. The size of a request is estimated, since no
tokenizer ships with the installed packages for every provider: the last request the provider
reported usage for is the anchor, and what differs from it is counted in characters at a
characters-per-token ratio calibrated per conversation against the usage each provider reports
(see `TokenEstimator`). Everything the request carries counts: the system prompt, the tool
definitions, every message (thinking and tool-call arguments included), images and the time
note.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from mind.conversation.history import HistoryMessage
from mind.providers.base import ProviderMessage, ProviderRequest, ThinkingBlock, ToolCall, Usage
from mind.providers.catalog import OUTPUT_SHARE, ModelInfo
from tobe.config import ContextSettings

# Providers bill an image at roughly a fixed number of tokens (Anthropic ~1,600 for a
# 1,092×1,092 image; OpenAI's high detail 765–1,105): the larger, to stay under the window.
IMAGE_TOKENS = 1_600
# Role markers and separators each message costs on every wire, in characters.
MESSAGE_OVERHEAD_CHARS = 16
# Calibrated ratios outside these bounds come from a usage report that cannot be right.
_RATIO_BOUNDS = (0.5, 12.0)
# Weight of the newest observation in the calibrated ratio.
_SMOOTHING = 0.5


@dataclass(frozen=True)
class Budget:
    context_window: int
    # What each request asks the model for at most (and so what the window must leave free).
    output_tokens: int
    reserve_tokens: int

    @property
    def prompt_limit(self) -> int:
        """The most tokens a request's prompt may take."""
        return max(0, self.context_window - self.output_tokens - self.reserve_tokens)

    def narrowed(self, window: int) -> Budget:
        """This budget for a smaller window (one the server said it has), by the same rule."""
        output = min(self.output_tokens, max(1, window // OUTPUT_SHARE))
        return Budget(window, output, min(self.reserve_tokens, window // 8))

    @classmethod
    def of(cls, info: ModelInfo, settings: ContextSettings) -> Budget:
        window = info.context_window
        # The reply's share follows the window: a small window keeps most of itself for the
        # conversation (`OUTPUT_SHARE`); a large one gives the reply what the model allows.
        output = min(info.max_output, settings.max_output_tokens, max(1, window // OUTPUT_SHARE))
        # A model whose window is small next to the reserve keeps an eighth of it as reserve.
        reserve = min(settings.reserve_tokens, window // 8)
        return cls(window, output, reserve)


@dataclass(frozen=True)
class Size:
    """What a request carries: characters of text and JSON, and images."""

    chars: int
    images: int = 0

    def __add__(self, other: Size) -> Size:
        return Size(self.chars + other.chars, self.images + other.images)


class ByIdentity:
    """Sizes of objects that come back request after request (rendered messages the provider
    view keeps, tool schemas), remembered by identity: every step of every run measures its
    whole request, and measuring it again from scratch was most of the budget's cost. Each
    entry holds its object, so the id cannot be reused while it is remembered."""

    def __init__(self, limit: int = 16_384) -> None:
        self._limit = limit
        self._seen: dict[int, tuple[object, int]] = {}

    def chars(self, item: object, measure: Callable[[Any], int]) -> int:
        hit = self._seen.get(id(item))
        if hit is not None and hit[0] is item:
            return hit[1]
        if len(self._seen) >= self._limit:
            self._seen.clear()
        value = measure(item)
        self._seen[id(item)] = (item, value)
        return value


_MEASURED = ByIdentity()


def _content_chars(
    text: str, tool_name: str, thinking: Iterable[ThinkingBlock], calls: Iterable[ToolCall]
) -> int:
    chars = MESSAGE_OVERHEAD_CHARS + len(text) + len(tool_name)
    for block in thinking:
        chars += len(block.text) + len(block.signature or "") + len(block.redacted_data or "")
    for call in calls:
        chars += MESSAGE_OVERHEAD_CHARS + len(call.name) + len(call.raw_arguments)
        if not call.raw_arguments and call.arguments is not None:
            chars += len(json.dumps(call.arguments, ensure_ascii=False))
    return chars


def _message_chars(message: ProviderMessage) -> int:
    return _content_chars(message.text, message.tool_name, message.thinking, message.tool_calls)


def _schema_chars(schema: dict[str, Any]) -> int:
    return len(json.dumps(schema, ensure_ascii=False, separators=(",", ":")))


# `[YYYY-MM-DD HH:MM:SS GMT] `: the stamp the provider view puts before every message.
_STAMP_CHARS = 26


def history_size(message: HistoryMessage) -> Size:
    """A stored message's size as the provider view will render it (stamp included)."""
    chars = _content_chars(message.text, message.tool_name, message.thinking, message.tool_calls)
    return Size(_STAMP_CHARS + chars, len(message.images))


def fixed_size(request: ProviderRequest) -> Size:
    """The system prompt and the tool definitions."""
    chars = len(request.system)
    for tool in request.tools:
        chars += len(tool.name) + len(tool.description)
        chars += _MEASURED.chars(tool.parameters, _schema_chars)
    return Size(chars)


def request_size(request: ProviderRequest) -> Size:
    chars, images = fixed_size(request).chars, 0
    for message in request.messages:
        chars += _MEASURED.chars(message, _message_chars)
        images += len(message.images)
    return Size(chars, images)


@dataclass
class _Calibration:
    ratio: float
    # The last request usage was reported for: its size and its prompt tokens.
    anchor: Size | None = None
    anchor_tokens: int = 0


class TokenEstimator:
    """Token estimates per conversation, calibrated against the usage providers report."""

    def __init__(self, chars_per_token: float) -> None:
        self._default = chars_per_token
        self._conversations: dict[str, _Calibration] = {}

    def _of(self, key: str) -> _Calibration:
        calibration = self._conversations.get(key)
        if calibration is None:
            calibration = self._conversations[key] = _Calibration(self._default)
        return calibration

    def ratio(self, key: str) -> float:
        return self._of(key).ratio

    def tokens(self, key: str, size: Size) -> int:
        """Tokens of `size` on its own (a message, a summary), at the conversation's ratio."""
        return math.ceil(size.chars / self._of(key).ratio) + size.images * IMAGE_TOKENS

    def estimate(self, key: str, size: Size) -> int:
        """Prompt tokens of a request of this size: the anchor's reported tokens plus the
        difference from the anchor at the calibrated ratio."""
        calibration = self._of(key)
        anchor = calibration.anchor
        if anchor is None:
            return self.tokens(key, size)
        difference = (size.chars - anchor.chars) / calibration.ratio
        images = (size.images - anchor.images) * IMAGE_TOKENS
        return max(0, math.ceil(calibration.anchor_tokens + difference + images))

    def observe(self, key: str, size: Size, usage: Usage) -> None:
        """A provider reported `usage` for a request of `size`: calibrate."""
        if usage.input_tokens <= 0:
            return
        text_tokens = usage.input_tokens - size.images * IMAGE_TOKENS
        if text_tokens <= 0:
            return
        calibration = self._of(key)
        observed = size.chars / text_tokens
        low, high = _RATIO_BOUNDS
        if not low <= observed <= high:
            return
        calibration.ratio = _SMOOTHING * observed + (1 - _SMOOTHING) * calibration.ratio
        calibration.anchor = size
        calibration.anchor_tokens = usage.input_tokens

    def observe_overflow(self, key: str, size: Size, at_least: int) -> None:
        """The provider refused a request of `size` as longer than it takes: it had at least
        `at_least` tokens, so the ratio was too high; lower it so that it would have shown."""
        calibration = self._of(key)
        text_tokens = max(1, at_least - size.images * IMAGE_TOKENS)
        calibration.ratio = max(_RATIO_BOUNDS[0], min(calibration.ratio, size.chars / text_tokens))
        calibration.anchor = size
        calibration.anchor_tokens = at_least

    def forget(self, key: str) -> None:
        self._conversations.pop(key, None)
