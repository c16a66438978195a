"""The Mind's CA certificate, handed to the services that dial it in a container deployment.

With TLS on the Mind's listener (`mind.tls`), Face and the Hand must trust the CA that signed
its certificate. `tobe mind serve --provision DIR` copies `ca.pem` from beside
`mind.tls.cert_file` (where `tobe admin tls init` writes it) into `DIR/face/` and `DIR/hand/`,
the credentials volumes those services mount, on every start: a new CA reaches them with the
next start of the Mind, and nobody copies it by hand.
"""

from __future__ import annotations

import os
from pathlib import Path

from tobe.config import ServerTlsSettings
from tobe.runtime.private_files import FILE_MODE, private_directory

CA_FILE = "ca.pem"
# The services whose volumes get the CA: those that dial the Mind.
DIALLERS = ("face", "hand")


def copy_ca(tls: ServerTlsSettings, services_dir: Path) -> list[Path]:
    """Copy the Mind's CA into each dialler's directory when it changed; returns the copies
    written. Nothing when TLS is off or no `ca.pem` lies beside the certificate (a certificate
    from a public CA, which the services trust already)."""
    if tls.cert_file is None:
        return []
    source = tls.cert_file.parent / CA_FILE
    if not source.is_file():
        return []
    content = source.read_bytes()
    written: list[Path] = []
    for service in DIALLERS:
        target = private_directory(services_dir / service) / CA_FILE
        if target.is_file() and target.read_bytes() == content:
            continue
        _replace(target, content)
        written.append(target)
    return written


def _replace(path: Path, content: bytes) -> None:
    """Write `path` whole through a temporary file (0600): a reader never sees half a CA."""
    temporary = path.with_name(f".{path.name}.tmp")
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, FILE_MODE)
    with os.fdopen(descriptor, "wb") as handle:
        handle.write(content)
    os.replace(temporary, path)
