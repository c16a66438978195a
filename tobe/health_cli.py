"""`tobe health`: probe ToBe services with the gRPC health protocol (used by HEALTHCHECK).

`--target` probes one address; `--all` probes every service of the data directory (see
`tobe.runtime.probes`; the web client over HTTP), one line each. A service not serving says
why when it knows (`tobe.runtime.health_reason`), printed in parentheses.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import click
import grpc

from tobe.config import ClientTlsSettings, load_settings
from tobe.runtime.health import check_reason
from tobe.runtime.probes import Probe, probe_all, targets
from tobe.tls_options import TlsOptions, tls_client_options


@click.command("health")
@click.option("--target", help="host:port, tls://host:port or unix:/path of the service.")
@click.option(
    "--all",
    "check_all",
    is_flag=True,
    help="Check every service of the data directory (Mind, Face and its web client, "
    "Awareness, the local Hand).",
)
@click.option(
    "--data-dir",
    type=click.Path(file_okay=False, path_type=Path),
    help="With --all: the data directory (default: TOBE_DATA_DIR or the XDG data directory).",
)
@click.option("--service", default="", help="Service name to check; empty checks the server.")
@click.option("--timeout", default=3.0, show_default=True, help="Seconds to wait for an answer.")
@tls_client_options
def health(
    target: str | None,
    check_all: bool,
    data_dir: Path | None,
    service: str,
    timeout: float,
    tls: TlsOptions,
) -> None:
    """Exit 0 when the service (with --all: every service) answers SERVING, 1 otherwise."""
    if check_all == (target is not None):
        raise click.UsageError("pass either --target ADDRESS or --all")
    if target is not None:
        _one(target, service, timeout, tls)
        return
    settings = load_settings(data_dir=data_dir) if data_dir else load_settings()
    probes = asyncio.run(probe_all(targets(settings), timeout))
    for line in _lines(probes):
        click.echo(line)
    if not all(item.serving for item in probes):
        raise SystemExit(1)


def _one(target: str, service: str, timeout: float, tls: TlsOptions) -> None:
    address, channel_tls = tls.resolve(ClientTlsSettings(), target)
    try:
        status, why = asyncio.run(check_reason(address, service, timeout, tls=channel_tls))
    except grpc.aio.AioRpcError as exc:
        raise click.ClickException(f"{target}: {exc.code().name}: {exc.details()}") from exc
    click.echo(f"{target} {service or '(server)'}: {status}" + (f" ({why})" if why else ""))
    if status != "SERVING":
        raise SystemExit(1)


def _lines(probes: list[Probe]) -> list[str]:
    """`<service>  <address>  <status> (<why>)`, the columns aligned."""
    name_width = max(len(item.service) for item in probes)
    address_width = max(len(item.address) for item in probes)
    return [
        f"{item.service:<{name_width}}  {item.address:<{address_width}}  {item.status}"
        + (f" ({item.detail})" if item.detail else "")
        for item in probes
    ]
