"""Domain errors → gRPC status codes: the one mapping every servicer uses.

Each package keeps one table next to its servicer, exception type → status code, and decorates
the servicer class with it: `@status_codes(TABLE)`. Every gRPC method of the class then ends a
call that raises

- an error of a type in the table (or of a subclass: the most specific entry wins) with that
  code and the error's message, which domain errors write for the client to read;
- anything else with INTERNAL and a fixed message, the traceback going to the log only: an
  unexpected error's text may carry anything, so the client learns nothing from it.

Only the types a table names are refusals: a bare `ValueError` is a bug, not bad input.
`context.abort` inside a method and cancellation pass through untouched. Where the status or
the message depends on the error (a relayed status, a message that must leave details out),
the table's entry is a function of the error returning both.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import logging
from collections.abc import AsyncIterator, Callable, Mapping
from types import MappingProxyType
from typing import Any, NoReturn, TypeVar

import grpc

log = logging.getLogger(__name__)

# A status code (the message is the error's), or a function giving the code and message.
Rule = grpc.StatusCode | Callable[[Any], tuple[grpc.StatusCode, str]]
StatusTable = Mapping[type[Exception], Rule]

INTERNAL_MESSAGE = "internal error (the server logged it)"

Servicer = TypeVar("Servicer", bound=type)
Method = Callable[..., Any]


def status_of(error: Exception, table: StatusTable) -> tuple[grpc.StatusCode, str] | None:
    """The code and message `table` gives `error` by its most specific listed type, if any."""
    for kind in type(error).__mro__:
        rule = table.get(kind)
        if isinstance(rule, grpc.StatusCode):
            return rule, str(error)
        if rule is not None:
            return rule(error)
    return None


def rpc_names(servicer: type) -> list[str]:
    """The gRPC methods of a servicer class: those of the generated base it implements."""
    names = [
        name
        for base in servicer.__mro__
        if base.__module__.endswith("_pb2_grpc")
        for name, value in vars(base).items()
        if callable(value) and not name.startswith("_")
    ]
    if not names:
        raise TypeError(f"{servicer.__name__} implements no generated gRPC servicer")
    return names


def status_codes(table: StatusTable) -> Callable[[Servicer], Servicer]:
    """Class decorator: every gRPC method the servicer defines maps its errors by `table`."""
    frozen = MappingProxyType(dict(table))

    def decorate(servicer: Servicer) -> Servicer:
        for name in rpc_names(servicer):
            method = vars(servicer).get(name)
            if method is not None:
                setattr(servicer, name, _mapped(method, f"{servicer.__name__}.{name}", frozen))
        # Marks the class as mapped; a class decorator cannot declare the attribute it adds.
        servicer.status_table = frozen  # type: ignore[attr-defined]
        return servicer

    return decorate


async def _end(
    context: grpc.aio.ServicerContext[Any, Any], rpc: str, error: Exception, table: StatusTable
) -> NoReturn:
    status = status_of(error, table)
    if status is None:
        log.error("%s failed", rpc, exc_info=error)
        await context.abort(grpc.StatusCode.INTERNAL, INTERNAL_MESSAGE)
    else:
        code, message = status
        log.info("%s refused: %s %s", rpc, code.name, message)
        await context.abort(code, message)
    raise AssertionError("abort returned")  # it always raises


def _mapped(method: Method, rpc: str, table: StatusTable) -> Method:
    if inspect.isasyncgenfunction(method):

        @functools.wraps(method)
        async def stream(
            self: Any, request: Any, context: grpc.aio.ServicerContext[Any, Any]
        ) -> AsyncIterator[Any]:
            try:
                async with contextlib.aclosing(method(self, request, context)) as responses:
                    async for response in responses:
                        yield response
            except grpc.aio.AbortError:
                raise
            except Exception as error:
                await _end(context, rpc, error, table)

        return stream

    @functools.wraps(method)
    async def call(self: Any, request: Any, context: grpc.aio.ServicerContext[Any, Any]) -> Any:
        try:
            return await method(self, request, context)
        except grpc.aio.AbortError:
            raise
        except Exception as error:
            await _end(context, rpc, error, table)

    return call
