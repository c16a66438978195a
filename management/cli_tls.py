"""`tobe admin tls …`: a private CA, the listeners' server certificate, Hands' client ones.

Files go into `<data dir>/tls` unless `--dir` says otherwise: `ca.pem`/`ca.key`,
`server.pem`/`server.key`, and `client-<name>.pem`/`.key` per client. All are 0600; nothing
existing is replaced without `--force`. The commands work without a running Mind.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import click

from management.certificate_files import CA_CERT, SERVER_CERT, SERVER_KEY
from management.certificate_files import CA_KEY as CA_KEY_FILE
from management.certificates import (
    CertificateError,
    Issued,
    certificate_file,
    create_ca,
    issue,
    key_file,
    load_ca,
    write_files,
)
from management.cli_support import AdminOptions
from tobe.runtime.tls import fingerprint

DEFAULT_HOSTS = ("localhost", "127.0.0.1")
CLIENT_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")


def _directory(directory: Path | None) -> Path:
    if directory is None:
        directory = click.get_current_context().ensure_object(AdminOptions).settings().tls_dir
    return directory.resolve()


def _write(directory: Path, files: dict[str, tuple[bytes, int]], force: bool) -> None:
    try:
        written = write_files(directory, files, force=force)
    except (CertificateError, OSError) as exc:
        raise click.ClickException(str(exc)) from None
    click.echo("Wrote " + ", ".join(str(path) for path in written))


def _toml(path: Path) -> str:
    return json.dumps(str(path))  # a TOML basic string


directory_option = click.option(
    "--dir",
    "directory",
    type=click.Path(file_okay=False, path_type=Path),
    help="Directory of the CA and certificates (default: <data dir>/tls).",
)
force_option = click.option("--force", is_flag=True, help="Replace files that already exist.")


@click.group()
def tls() -> None:
    """A private CA and certificates for TLS to the Mind and Face (Hands on other machines)."""


@tls.command()
@click.option(
    "--host",
    "hosts",
    multiple=True,
    help="A host name or IP address clients dial (repeatable; default: localhost, 127.0.0.1).",
)
@directory_option
@force_option
def init(hosts: tuple[str, ...], directory: Path | None, force: bool) -> None:
    """Create a CA and a server certificate for the Mind's and Face's listeners."""
    target = _directory(directory)
    names = list(dict.fromkeys(hosts or DEFAULT_HOSTS))
    ca = create_ca()
    server = issue(ca, names[0], hosts=names)
    files = {
        CA_CERT: certificate_file(ca.certificate_pem()),
        CA_KEY_FILE: key_file(ca.key_pem()),
        SERVER_CERT: certificate_file(server.certificate_pem()),
        SERVER_KEY: key_file(server.key_pem()),
    }
    _write(target, files, force)
    ca_fingerprint = fingerprint(ca.certificate)
    click.echo(f"Server certificate for: {', '.join(names)}")
    click.echo(f"CA SHA-256 fingerprint: {ca_fingerprint}")
    click.echo(
        f"""
To serve TLS on the Mind's listener, add to its config.toml ([face.tls] alike for Face):

  [mind.tls]
  cert_file = {_toml(target / SERVER_CERT)}
  key_file = {_toml(target / SERVER_KEY)}

or set TOBE_MIND__TLS__CERT_FILE and TOBE_MIND__TLS__KEY_FILE to those files.
Copy {CA_CERT} to each Hand's machine and start the Hand with

  tobe hand serve --mind {names[0]}:7410 --ca {CA_CERT} --ca-fingerprint {ca_fingerprint}

{CA_KEY_FILE} signs certificates: keep it private. `tobe admin tls client NAME` issues a
Hand's client certificate (mTLS)."""
    )


@tls.command()
@click.argument("name")
@directory_option
@force_option
def client(name: str, directory: Path | None, force: bool) -> None:
    """Issue a client certificate NAME (e.g. a Hand's) signed by the CA of `tls init`."""
    if not CLIENT_NAME.match(name):
        raise click.BadParameter(
            "letters, digits, '.', '_' and '-' only (at most 64, not starting with one of the "
            "punctuation marks)",
            param_hint="NAME",
        )
    target = _directory(directory)
    try:
        ca: Issued = load_ca(target)
    except CertificateError as exc:
        raise click.ClickException(str(exc)) from None
    issued = issue(ca, name)
    cert_name, key_name = f"client-{name}.pem", f"client-{name}.key"
    files = {
        cert_name: certificate_file(issued.certificate_pem()),
        key_name: key_file(issued.key_pem()),
    }
    _write(target, files, force)
    click.echo(
        f"""
To require client certificates on the Mind's listener, add to [mind.tls]:

  client_ca_file = {_toml(target / CA_CERT)}
  require_client_cert = true

Copy {cert_name}, {key_name} (keep it private) and {CA_CERT} to the Hand's machine
and start the Hand with

  tobe hand serve --mind <host>:7410 --ca {CA_CERT} --cert {cert_name} --key {key_name}"""
    )
