"""Shared plumbing of the `tobe admin` commands: options, one call per command, error text."""

from __future__ import annotations

import asyncio
import getpass
import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, TypeVar

import click
import grpc
from google.protobuf.message import Message

from management.render import Printer
from tobe.config import Settings, load_settings
from tobe.runtime.logs import configure_logging

CALL_TIMEOUT = 60.0
# How long `tobe admin status` waits for Face's health answer (as long as for Awareness's).
FACE_TIMEOUT = 1.0
_DURATION = re.compile(r"(\d+)([smhdw])")
_UNITS = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days", "w": "weeks"}

Command = TypeVar("Command", bound=Callable[..., Any])


@dataclass
class AdminOptions:
    as_json: bool = False
    verbose: bool = False
    wait: float = 5.0
    data_dir: Path | None = None

    def settings(self) -> Settings:
        if self.data_dir is not None:
            return load_settings(data_dir=self.data_dir)
        return load_settings()


def _set_json(ctx: click.Context, _param: click.Parameter, value: bool) -> None:
    if value:
        ctx.ensure_object(AdminOptions).as_json = True


def _set_verbose(ctx: click.Context, _param: click.Parameter, value: bool) -> None:
    if value:
        ctx.ensure_object(AdminOptions).verbose = True


def output_options(command: Command) -> Command:
    """`--json` and `--verbose`, accepted on the `admin` group and on every command."""
    command = click.option(
        "--verbose",
        "-v",
        is_flag=True,
        expose_value=False,
        callback=_set_verbose,
        help="Say which mode (online or offline) answered, and log progress to stderr.",
    )(command)
    return click.option(
        "--json",
        "as_json",
        is_flag=True,
        expose_value=False,
        callback=_set_json,
        help="Print JSON for scripts instead of tables.",
    )(command)


def printer() -> Printer:
    return Printer(as_json=click.get_current_context().ensure_object(AdminOptions).as_json)


def operator_name() -> str:
    """Who runs the command, recorded as the actor of audit rows."""
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return f"uid:{os.getuid()}"


def _describe(error: grpc.aio.AioRpcError, settings: Settings) -> str:
    details = error.details() or error.code().name
    if error.code() in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED):
        return (
            f"{details} (the Management service for {settings.data_dir} did not complete the "
            "call; if the Mind is stopping or busy, retry in a moment)"
        )
    return details


def call(rpc: str, request: Message, *, timeout: float = CALL_TIMEOUT) -> Any:
    """Make one Management call, online or offline, and return its response.

    Refusals and unreachable services end the command with exit status 1 and the reason.
    `timeout` is for calls that are slow by nature (a compaction waits for the model).
    """
    # Imported here: the store and gRPC stacks are heavy, and every `tobe` command (even
    # `tobe --help`) imports this module.
    from management.connection import ManagementUnavailable, connect
    from mind.management import ACTOR_METADATA

    options = click.get_current_context().ensure_object(AdminOptions)
    settings = options.settings()
    configure_logging("DEBUG" if options.verbose else "WARNING", process="tobe-admin")

    async def run() -> Any:
        async with connect(settings, wait=options.wait) as connection:
            if options.verbose:
                click.echo(f"mode: {connection.description}", err=True)
            method = getattr(connection.stub, rpc)
            return await method(
                request, metadata=((ACTOR_METADATA, operator_name()),), timeout=timeout
            )

    try:
        return asyncio.run(run())
    except ManagementUnavailable as error:
        raise click.ClickException(str(error)) from None
    except grpc.aio.AioRpcError as error:
        raise click.ClickException(_describe(error, settings)) from None


def parse_when(text: str, *, ago: bool) -> datetime:
    """An ISO 8601 time (naive means local time) or a duration like 30d, 12h, 1w2d.

    A duration counts forward from now (`ago=False`, for expiries) or back (`ago=True`).
    """
    if re.fullmatch(r"(?:\d+[smhdw])+", text):
        delta = timedelta()
        for amount, unit in _DURATION.findall(text):
            delta += timedelta(**{_UNITS[unit]: int(amount)})
        now = datetime.now(UTC)
        return now - delta if ago else now + delta
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise click.BadParameter(
            f"{text!r} is neither a time (2026-12-31T18:00, 2026-12-31T18:00Z) "
            "nor a duration (30d, 12h, 45m, 2w)"
        ) from None
    if moment.tzinfo is None:
        moment = moment.astimezone()
    return moment.astimezone(UTC)


def face_health() -> dict[str, str]:
    """Where Face of this data directory listens and what its health check answers.

    Asked by the CLI itself, not the Mind: Face dials the Mind, so only the data directory
    (runtime file or settings) knows where Face is, and it answers with the Mind stopped too.
    """
    from tobe.runtime.probes import probe, target

    settings = click.get_current_context().ensure_object(AdminOptions).settings()
    found = asyncio.run(probe(target(settings, "face"), FACE_TIMEOUT))
    return {"address": found.address, "status": found.status, "detail": found.detail}


def web_health() -> dict[str, str] | None:
    """Where Face serves the web client (its address and the URL people open) and what its
    `/healthz` answers; None when no Face of this data directory published one."""
    from tobe.runtime.probes import probe, web_target
    from tobe.runtime.web_url import web_base_url

    settings = click.get_current_context().ensure_object(AdminOptions).settings()
    where = web_target(settings)
    if where is None:
        return None
    found = asyncio.run(probe(where, FACE_TIMEOUT))
    url = web_base_url(
        found.address, tls=where.tls is not None, public_url=settings.face.web.public_url
    )
    return {"address": found.address, "url": url, "status": found.status, "detail": found.detail}
