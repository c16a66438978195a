"""The client TLS options of `tobe hand serve`, `tobe chat` and `tobe health`.

`--ca`, `--ca-fingerprint`, `--cert` and `--key` override the command's configured
`ClientTlsSettings` (if it has a section), and a problem with them ends the command with a
message naming the option and the file.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click

from tobe.config import ClientTlsSettings
from tobe.runtime.tls import ClientTls, TlsConfigError, client_tls

# Each field of ClientTlsSettings and the option that sets it.
OPTIONS = {
    "ca_file": "--ca",
    "ca_fingerprint": "--ca-fingerprint",
    "cert_file": "--cert",
    "key_file": "--key",
}


@dataclass(frozen=True)
class TlsOptions:
    """The TLS options as given on the command line (None: not given)."""

    ca_file: Path | None = None
    ca_fingerprint: str | None = None
    cert_file: Path | None = None
    key_file: Path | None = None

    def resolve(
        self, configured: ClientTlsSettings, target: str, section: str | None = None
    ) -> tuple[str, ClientTls | None]:
        """The address to dial and its TLS credentials: the options over `configured` (the
        settings section named `section`, if any)."""
        given = {name: value for name, value in vars(self).items() if value is not None}
        settings = configured.model_copy(update=given)
        names = {
            name: f"{option} ({section}.{name})" if section else option
            for name, option in OPTIONS.items()
        }
        try:
            return client_tls(settings, target, names)
        except TlsConfigError as exc:
            raise click.ClickException(str(exc)) from None


def tls_client_options(command: Callable[..., None]) -> Callable[..., None]:
    """Add the TLS options to a click command, which receives them as `tls: TlsOptions`."""

    @functools.wraps(command)
    def with_tls(
        *args: Any,
        ca: Path | None,
        ca_fingerprint: str | None,
        cert: Path | None,
        key: Path | None,
        **kwargs: Any,
    ) -> None:
        command(*args, tls=TlsOptions(ca, ca_fingerprint, cert, key), **kwargs)

    file = click.Path(dir_okay=False, path_type=Path)
    options = [
        click.option("--ca", type=file, help="Dial over TLS, trusting the CA in this PEM file."),
        click.option(
            "--ca-fingerprint",
            help="SHA-256 fingerprint the --ca file must have (as `tobe admin tls init` prints).",
        ),
        click.option("--cert", type=file, help="Client certificate (PEM) to present: mTLS."),
        click.option("--key", type=file, help="Private key (PEM) of --cert."),
    ]
    for option in reversed(options):
        with_tls = option(with_tls)
    return with_tls
