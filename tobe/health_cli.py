"""`tobe health`: probe a ToBe service with the gRPC health protocol (used by HEALTHCHECK)."""

from __future__ import annotations

import asyncio

import click
import grpc

from tobe.runtime.health import check


@click.command("health")
@click.option("--target", required=True, help="host:port or unix:/path of the service.")
@click.option("--service", default="", help="Service name to check; empty checks the server.")
@click.option("--timeout", default=3.0, show_default=True, help="Seconds to wait for an answer.")
def health(target: str, service: str, timeout: float) -> None:
    """Exit 0 when the service answers SERVING, 1 otherwise."""
    try:
        status = asyncio.run(check(target, service, timeout))
    except grpc.aio.AioRpcError as exc:
        raise click.ClickException(f"{target}: {exc.code().name}: {exc.details()}") from exc
    click.echo(f"{target} {service or '(server)'}: {status}")
    if status != "SERVING":
        raise SystemExit(1)
