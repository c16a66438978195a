"""What profile code is given besides its profile: a cancellation signal, and the one error
its platform calls raise.

A `CancelSignal` fires once, with a reason, and stays fired: when the conversation's run is
cancelled or stopped, when the conversation is deleted, when its actor is evicted. Code waits
on it (`wait`), polls it (`cancelled`) or is called back (`add_callback`); `any_of` joins
signals, as a client made `with_signal` does.

Every platform call (`mind.agent.platform`) that fails raises `PlatformRequestError`, which
carries only a status code name (`INVALID_ARGUMENT`, `NOT_FOUND`, `FAILED_PRECONDITION`, ...):
the reason stays in the Mind, as it does for the model's widget tools. A call refused because
its signal fired raises `PlatformCancelled` (code `CANCELLED`).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from mind import errors

log = logging.getLogger(__name__)

# Why a conversation's scope closed (the signal's `reason`).
CANCELLED = "cancelled"
STOPPED = "stopped"
DELETED = "deleted"
EVICTED = "evicted"

_CODES: tuple[tuple[type[errors.MindError], str], ...] = (
    (errors.InvalidInput, "INVALID_ARGUMENT"),
    (errors.NotFound, "NOT_FOUND"),
    (errors.AlreadyExists, "ALREADY_EXISTS"),
    (errors.WrongState, "FAILED_PRECONDITION"),
    (errors.Unavailable, "UNAVAILABLE"),
    (errors.NotAllowed, "PERMISSION_DENIED"),
    (errors.Unauthenticated, "UNAUTHENTICATED"),
)


class PlatformRequestError(Exception):
    """A platform call failed; `code` is all it says (read the state again before retrying)."""

    def __init__(self, code: str) -> None:
        super().__init__(f"platform request failed ({code})")
        self.code = code


class PlatformCancelled(PlatformRequestError):
    """The call's signal fired before it could commit: it changed nothing."""

    def __init__(self) -> None:
        super().__init__("CANCELLED")


def code_of(error: errors.MindError) -> str:
    """The status code name of a refusal's kind (`mind.status_codes` names the same codes)."""
    return next((code for kind, code in _CODES if isinstance(error, kind)), "INTERNAL")


class CancelSignal:
    """Fires once (`cancel`), like an `asyncio.Event` that is never cleared."""

    def __init__(self) -> None:
        self._event = asyncio.Event()
        self._reason = ""
        self._callbacks: list[Callable[[str], object]] = []

    @property
    def cancelled(self) -> bool:
        return self._event.is_set()

    @property
    def reason(self) -> str:
        """Why it fired ("" while it has not)."""
        return self._reason

    async def wait(self) -> str:
        """Wait until it fires; its reason."""
        await self._event.wait()
        return self._reason

    def add_callback(self, callback: Callable[[str], object]) -> None:
        """Call `callback(reason)` when it fires (at once if it has); one that raises is logged."""
        if self.cancelled:
            _call(callback, self._reason)
        else:
            self._callbacks.append(callback)

    def cancel(self, reason: str) -> None:
        """Fire with `reason`; a signal that already fired keeps its first reason."""
        if self.cancelled:
            return
        self._reason = reason
        self._event.set()
        callbacks, self._callbacks = self._callbacks, []
        for callback in callbacks:
            _call(callback, reason)

    def check(self) -> None:
        """PlatformCancelled once it fired."""
        if self.cancelled:
            raise PlatformCancelled()


def any_of(*signals: CancelSignal) -> CancelSignal:
    """A signal that fires when the first of `signals` does, with its reason."""
    joined = CancelSignal()
    for signal in signals:
        signal.add_callback(joined.cancel)
    return joined


def _call(callback: Callable[[str], object], reason: str) -> None:
    try:
        callback(reason)
    except Exception:  # profile code: its failure must not stop the others
        log.exception("a cancellation callback raised")
