"""TLS for `Hand.serve` from files: the CA to trust and, for mTLS, the Hand's certificate."""

from __future__ import annotations

from pathlib import Path

from tobe.config import ClientTlsSettings
from tobe.runtime.tls import ClientTls, load_client_tls


def client_tls(
    ca_file: str | Path | None = None,
    *,
    cert_file: str | Path | None = None,
    key_file: str | Path | None = None,
    ca_fingerprint: str = "",
) -> ClientTls:
    """Trust the CA in `ca_file` (None: the system roots) and, with `cert_file` and `key_file`,
    present that client certificate; `ca_fingerprint` pins the CA (SHA-256, as `tobe admin tls
    init` prints it). Raises `TlsConfigError` naming the argument and the file at fault.
    """
    settings = ClientTlsSettings(
        ca_file=Path(ca_file) if ca_file is not None else None,
        cert_file=Path(cert_file) if cert_file is not None else None,
        key_file=Path(key_file) if key_file is not None else None,
        ca_fingerprint=ca_fingerprint,
    )
    return load_client_tls(settings, {name: name for name in ClientTlsSettings.model_fields})
