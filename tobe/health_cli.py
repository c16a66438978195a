"""`tobe health`: probe a ToBe service with the gRPC health protocol (used by HEALTHCHECK)."""

from __future__ import annotations

import asyncio

import click
import grpc

from tobe.config import ClientTlsSettings
from tobe.runtime.health import check
from tobe.tls_options import TlsOptions, tls_client_options


@click.command("health")
@click.option(
    "--target", required=True, help="host:port, tls://host:port or unix:/path of the service."
)
@click.option("--service", default="", help="Service name to check; empty checks the server.")
@click.option("--timeout", default=3.0, show_default=True, help="Seconds to wait for an answer.")
@tls_client_options
def health(target: str, service: str, timeout: float, tls: TlsOptions) -> None:
    """Exit 0 when the service answers SERVING, 1 otherwise."""
    address, channel_tls = tls.resolve(ClientTlsSettings(), target)
    try:
        status = asyncio.run(check(address, service, timeout, tls=channel_tls))
    except grpc.aio.AioRpcError as exc:
        raise click.ClickException(f"{target}: {exc.code().name}: {exc.details()}") from exc
    click.echo(f"{target} {service or '(server)'}: {status}")
    if status != "SERVING":
        raise SystemExit(1)
