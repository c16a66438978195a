"""A serving process's side of the runtime file: publish where it listens, and explain a
listen address it could not bind in one line.

Every `tobe … serve` publishes its bound address (the real port when it was given port 0, and
the CA that verifies it when it serves TLS) so that `tobe up` and the client commands find it
in `<data_dir>/runtime.json` (`tobe.runtime.addresses`), and withdraws it when it stops.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator
from pathlib import Path

from tobe.config import ServerTlsSettings
from tobe.runtime.addresses import publish, withdraw
from tobe.runtime.ports import holder
from tobe.runtime.server import BindError

log = logging.getLogger(__name__)

# Where `tobe admin tls init` writes the CA beside a listener's certificate
# (`management.certificates.CA_CERT`).
CA_FILE_NAME = "ca.pem"


@contextlib.contextmanager
def published_address(
    data_dir: Path, service: str, address: str, tls: ServerTlsSettings | None = None
) -> Iterator[None]:
    """Publish `service` at `address` for the duration of the block."""
    publish(data_dir, service, address, ca_file=ca_file_of(tls) if tls is not None else "")
    try:
        yield
    finally:
        withdraw(data_dir, service)


def ca_file_of(tls: ServerTlsSettings) -> str:
    """The CA file beside a TLS listener's certificate, "" when plaintext or when none is there."""
    if tls.cert_file is None:
        return ""
    candidate = (tls.cert_file.parent / CA_FILE_NAME).resolve()
    return str(candidate) if candidate.is_file() else ""


def bind_failure(data_dir: Path, service: str, error: BindError, section: str | None = None) -> str:
    """One line for a listen address `service` could not bind: where, why, who holds it, and
    the setting to change (`listen` of `section`, default the service's own section). The
    traceback goes to the log at DEBUG only."""
    log.debug("binding %s failed", error.address, exc_info=error)
    held = holder(data_dir, error.address)
    who = f", held by {held}" if held else ""
    section = section or service
    variable = f"TOBE_{section.upper().replace('.', '__')}__{error.setting.upper()}"
    alternative = ", or give `tobe up` another --port-base" if error.setting == "listen" else ""
    return (
        f"{service} cannot listen on {error.address}: {error.reason}{who}; change "
        f"[{section}] {error.setting} ({variable}){alternative}"
    )
