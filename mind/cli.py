"""`tobe mind …`: run the Mind process."""

from __future__ import annotations

import asyncio
import json
import logging
from pathlib import Path

import click

from tobe.config import Settings, load_settings
from tobe.runtime.container import PROVISION_VARIABLE
from tobe.runtime.import_pause import collector_paused
from tobe.runtime.logs import configure_logging
from tobe.runtime.private_files import private_umask, tighten
from tobe.runtime.statelock import StateLock, StateLockBusy
from tobe.telemetry import setup as telemetry_setup

log = logging.getLogger("mind")


def _provision(settings: Settings, services_dir: Path | None) -> None:
    """Create the credentials the other services need: in their own directories under
    `services_dir` (containers, with the Mind's CA when it serves TLS), or in the data
    directory (`tobe up`)."""
    from mind.management.ca_copies import copy_ca
    from mind.management.local_credentials import awareness_token_file, provision
    from mind.store.upgrade_child import StoreUpgradeError

    try:
        created = provision(
            settings, lock_timeout=settings.mind.lock_timeout, services_dir=services_dir
        )
    except (StateLockBusy, StoreUpgradeError) as exc:
        raise click.ClickException(f"cannot create the service credentials: {exc}") from exc
    if created:
        where = services_dir or settings.credentials_dir
        log.info("created credentials: %s (under %s)", ", ".join(created), where)
    if services_dir is not None:
        for copy in copy_ca(settings.mind.tls, services_dir):
            log.info("copied the Mind's CA certificate to %s", copy)
    link = settings.awareness
    if services_dir is not None and link.token is None and link.token_file is None:
        link.token_file = awareness_token_file(services_dir)


@click.group()
def mind() -> None:
    """The Mind: agent core, conversations and the store."""


@mind.command()
@click.option("--listen", default=None, help="host:port or unix:/path (default: [mind] listen).")
@click.option(
    "--provision",
    "services_dir",
    type=click.Path(file_okay=False, path_type=Path),
    envvar=PROVISION_VARIABLE,
    help="First create the other services' credentials under DIR/<service>/ (Face, Hand, "
    "Awareness link; a container deployment) and read the Awareness link token from there "
    f"(default: ${PROVISION_VARIABLE}).",
)
@click.option(
    "--provision-local",
    is_flag=True,
    help="First create the local credentials (Face, the Hand, the local user) in the data "
    "directory's credentials/, as `tobe up` has it do.",
)
@click.option(
    "--node-id",
    default=None,
    help="This Mind's name among several on one PostgreSQL database (default: [mind] node_id).",
)
def serve(
    listen: str | None, services_dir: Path | None, provision_local: bool, node_id: str | None
) -> None:
    """Serve the Mind service; holds the data directory's state lock while it runs."""
    if services_dir is not None and provision_local:
        raise click.UsageError(
            f"--provision (or ${PROVISION_VARIABLE}) and --provision-local exclude each other"
        )
    # First, so that a configuration error ends the start before the Mind's stack is loaded.
    settings = load_settings(**({"mind": {"node_id": node_id}} if node_id is not None else {}))
    # Imported here so that every other `tobe` command starts without the Mind's stack.
    with collector_paused():
        from mind.credentials.provider_keys import ProviderKeyError, stored_keys
        from mind.profiles.errors import ProfileError
        from mind.providers.factory import ProviderConfigError
        from mind.scripted.configured import build_provider
        from mind.scripted.script import ScriptError
        from tobe.runtime.publishing import bind_failure
        from tobe.runtime.server import BindError
        from tobe.runtime.tls import TlsConfigError, server_tls
        from tobe.runtime.tls_record import PlaintextRefused, plaintext_refusal, settle

    configure_logging(settings.log_level, process="mind", format=settings.log.format)
    telemetry_setup.configure(settings.telemetry, "mind")
    private_umask()
    tighten(settings.data_dir, log.warning)
    address = listen or settings.mind.listen
    try:
        tls = server_tls(settings.mind.tls, "mind.tls")
    except TlsConfigError as exc:
        raise click.ClickException(f"cannot start the Mind: {exc}") from None
    # Before anything is provisioned or locked: a refused start changes nothing.
    refusal = plaintext_refusal(settings.data_dir, address, tls is not None)
    if refusal is not None and not settings.mind.allow_plaintext:
        raise click.ClickException(f"cannot start the Mind: {refusal}")
    # Before the state lock and the Mind's stack are loaded: a wrong model or key stops the
    # start at once (reading the stored key needs no lock).
    stored_key = stored_keys(settings)
    try:
        provider = build_provider(
            settings.provider, stored_key=stored_key, cache_dir=settings.data_dir
        )
    except (ProviderConfigError, ScriptError, ProviderKeyError) as exc:
        raise click.ClickException(f"cannot start the Mind: provider: {exc}") from exc
    with collector_paused():
        from mind.server import build, serve
        from mind.store.schema_head import upgrade_when_behind
        from mind.store.upgrade_child import StoreUpgradeError

    if services_dir is not None or provision_local:
        _provision(settings, services_dir)
    lock = StateLock(settings.data_dir, f"tobe mind serve on {address}")
    try:
        lock.acquire(settings.mind.lock_timeout)
    except StateLockBusy as exc:
        raise click.ClickException(
            f"{exc}; waited {settings.mind.lock_timeout:g} s for the state lock"
        ) from exc
    try:
        try:
            allowed = settle(
                settings.data_dir, address, tls is not None, settings.mind.allow_plaintext
            )
        except PlaintextRefused as exc:
            raise click.ClickException(f"cannot start the Mind: {exc}") from None
        if allowed is not None:
            log.warning("%s", allowed)
        try:
            upgrade_when_behind(settings.store_url)
        except StoreUpgradeError as exc:
            raise click.ClickException(f"cannot start the Mind: {exc}") from None
        try:
            app = build(settings, provider, stored_key=stored_key)
        except ProfileError as exc:
            raise click.ClickException(f"cannot start the Mind: {exc}") from exc
        except ProviderConfigError as exc:
            # A component's own provider (`mind.server.own_provider`), named in the message.
            raise click.ClickException(f"cannot start the Mind: {exc}") from exc
        try:
            asyncio.run(serve(app, address, tls))
        except BindError as exc:
            raise click.ClickException(bind_failure(settings.data_dir, "mind", exc)) from None
    finally:
        lock.release()


@mind.command("check-provider", hidden=True)
@click.option("--timeout", type=float, default=8.0, help="Seconds the model listing may take.")
def check_provider(timeout: float) -> None:
    """List the provider's models once, with the key the Mind would use, and print the verdict
    as one JSON line (`tobe up` runs this in a child process): `refusal` when the Mind could
    not work with it (nobody answers, the key is refused or cannot be read), `warning` when
    the answer proves nothing, neither when it answered."""
    from mind.credentials.provider_keys import ProviderKeyError, stored_keys
    from mind.providers.listing import KeyRejected, ListingError, ProviderUnreachable, list_models
    from tobe.api_keys import with_api_key

    settings = load_settings()
    verdict: dict[str, str] = {}
    try:
        provider = with_api_key(settings.provider, stored_keys(settings))
        asyncio.run(list_models(provider, timeout=timeout))
    except (ProviderUnreachable, KeyRejected, ProviderKeyError) as exc:
        verdict = {"refusal": f"provider check failed: {exc}"}
    except ListingError as exc:
        verdict = {"warning": f"provider check inconclusive: {exc}"}
    click.echo(json.dumps(verdict))
