"""The servicer edge that checks every call of a service against `tobe.scopes.REQUIRED`.

`@require_scopes("tobe.v1.Mind")` wraps each gRPC method of the servicer class: a call whose
credential lacks the scope its method needs (a gateway's `gateway`), or whose `on_behalf_of`
principal lacks the method's own (`chat`, `approve`, `post`), raises NotAllowed naming the
scope before the method runs; `@status_codes` above it answers PERMISSION_DENIED. A method
with no entry in the map stops the class from being defined at all.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
from collections.abc import AsyncIterator, Callable, Mapping
from typing import Any, TypeVar

from mind.credentials.interceptor import current_identity
from mind.errors import NotAllowed
from tobe.runtime.status import rpc_names
from tobe.scopes import REQUIRED, Requirement, missing_scope_message

Servicer = TypeVar("Servicer", bound=type)
Method = Callable[..., Any]


def refusal(requirement: Requirement, action: str, request: object) -> str | None:
    """Why the current caller may not make `action` with `request`; None when it may."""
    if requirement.scope is not None:
        identity = current_identity()
        kind_fits = requirement.kind is None or identity.kind == requirement.kind
        if not kind_fits or not identity.has_scope(requirement.scope):
            whose = f"this {identity.kind} credential"
            lacking = missing_scope_message(requirement.scope, action, whose=whose)
            return f"{lacking}: {requirement.guard}" if requirement.guard else lacking
    if requirement.user_scope is not None:
        who = getattr(request, "on_behalf_of", None)
        if requirement.user_scope not in tuple(getattr(who, "scopes", ())):
            principal = getattr(who, "principal", "") or "the client"
            whose = f"{principal}'s credential"
            return missing_scope_message(requirement.user_scope, action, whose=whose)
    return None


def require_scopes(
    service: str, required: Mapping[str, Requirement] = REQUIRED
) -> Callable[[Servicer], Servicer]:
    """Class decorator: every gRPC method of the servicer of `service` (its full name) checks
    its requirement first. TypeError when a method has none."""

    def decorate(servicer: Servicer) -> Servicer:
        unmapped = [name for name in rpc_names(servicer) if f"/{service}/{name}" not in required]
        if unmapped:
            raise TypeError(f"no scope declared in tobe.scopes.REQUIRED for {service}: {unmapped}")
        for name in rpc_names(servicer):
            method = vars(servicer).get(name)
            if method is not None:
                setattr(servicer, name, _checked(method, name, required[f"/{service}/{name}"]))
        return servicer

    return decorate


def _checked(method: Method, action: str, requirement: Requirement) -> Method:
    def check(request: object) -> None:
        message = refusal(requirement, action, request)
        if message is not None:
            raise NotAllowed(message)

    if inspect.isasyncgenfunction(method):

        @functools.wraps(method)
        async def stream(self: Any, request: Any, context: Any) -> AsyncIterator[Any]:
            check(request)
            async with contextlib.aclosing(method(self, request, context)) as responses:
                async for response in responses:
                    yield response

        return stream

    @functools.wraps(method)
    async def call(self: Any, request: Any, context: Any) -> Any:
        check(request)
        return await method(self, request, context)

    return call
