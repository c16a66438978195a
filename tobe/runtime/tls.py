"""TLS credentials for TCP listeners and channels, read and checked once, at start.

A server's certificate and key (and, for mTLS, the CA of its clients) come from a
`ServerTlsSettings` section; a client trusts a CA file, or the system roots, and may present
a certificate of its own. Every problem (a missing or unreadable file, something that is not
PEM, a key that does not belong to its certificate, a CA whose fingerprint is not the pinned
one) is a `TlsConfigError` naming the setting and the file, so a misconfigured process refuses
to start with one sentence instead of failing every handshake later. Key material is never
part of a message.

`cryptography` is imported only where a certificate or key is read: a process without TLS
(the default on one machine) never loads it; `grpc` only where credentials are made, so `tobe
up`, which checks the TLS settings for its services but dials none of them, never loads it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from tobe.config import ClientTlsSettings, ServerTlsSettings

if TYPE_CHECKING:
    import grpc
    from cryptography import x509
    from cryptography.hazmat.primitives.asymmetric.types import PrivateKeyTypes

# A target with one of these prefixes is dialled over TLS even when no CA or certificate is
# given (the system roots are trusted then).
TLS_SCHEMES = ("tls://", "https://")


class TlsConfigError(ValueError):
    """TLS is configured in a way that cannot work; the message names the setting and file."""


@dataclass(frozen=True)
class ServerTls:
    """A listener's certificate chain and key, and the CA its clients' certificates must have."""

    certificate_chain: bytes
    private_key: bytes
    client_ca: bytes | None
    require_client_cert: bool

    def credentials(self) -> grpc.ServerCredentials:
        import grpc

        return grpc.ssl_server_credentials(
            [(self.private_key, self.certificate_chain)],
            root_certificates=self.client_ca,
            require_client_auth=self.require_client_cert,
        )


@dataclass(frozen=True)
class ClientTls:
    """What a channel trusts (None: the system roots) and the certificate it presents, if any."""

    root_certificates: bytes | None = None
    certificate_chain: bytes | None = None
    private_key: bytes | None = None

    def credentials(self) -> grpc.ChannelCredentials:
        import grpc

        return grpc.ssl_channel_credentials(
            root_certificates=self.root_certificates,
            private_key=self.private_key,
            certificate_chain=self.certificate_chain,
        )


def client_certificates(tls: ServerTls) -> str:
    """What a listener asks of its clients, for the start-up log."""
    if tls.require_client_cert:
        return "client certificates required"
    if tls.client_ca is not None:
        return "client certificates checked when presented"
    return "no client certificates"


def fingerprint(certificate: x509.Certificate) -> str:
    """SHA-256 of the certificate's DER bytes, as colon-separated upper-case hex."""
    from cryptography.hazmat.primitives import serialization

    digest = hashlib.sha256(certificate.public_bytes(serialization.Encoding.DER)).digest()
    return ":".join(f"{byte:02X}" for byte in digest)


def split_target(target: str) -> tuple[str, bool]:
    """The address to dial and whether the target asked for TLS (`tls://host:port`)."""
    for scheme in TLS_SCHEMES:
        if target.startswith(scheme):
            return target.removeprefix(scheme), True
    return target, False


def _read(path: Path, label: str) -> bytes:
    try:
        return path.read_bytes()
    except OSError as exc:
        raise TlsConfigError(f"{label}: cannot read {path}: {exc.strerror or exc}") from None


def _certificates(path: Path, label: str) -> tuple[bytes, list[x509.Certificate]]:
    from cryptography import x509

    data = _read(path, label)
    try:
        certificates = x509.load_pem_x509_certificates(data)
    except ValueError:
        certificates = []
    if not certificates:
        raise TlsConfigError(f"{label}: {path} holds no PEM certificate")
    return data, certificates


def _private_key(path: Path, label: str) -> tuple[bytes, PrivateKeyTypes]:
    from cryptography.hazmat.primitives import serialization

    data = _read(path, label)
    try:
        key = serialization.load_pem_private_key(data, password=None)
    except (ValueError, TypeError):
        raise TlsConfigError(f"{label}: {path} is not an unencrypted PEM private key") from None
    return data, key


def _matching_pair(
    cert_path: Path, key_path: Path, cert_label: str, key_label: str
) -> tuple[bytes, bytes]:
    """The certificate chain and key, refused unless the key belongs to the first certificate."""
    from cryptography.hazmat.primitives import serialization

    chain, certificates = _certificates(cert_path, cert_label)
    key_bytes, key = _private_key(key_path, key_label)
    spki = serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
    if key.public_key().public_bytes(*spki) != certificates[0].public_key().public_bytes(*spki):
        raise TlsConfigError(
            f"{key_label}: the key in {key_path} does not belong to the certificate in "
            f"{cert_path} ({cert_label})"
        )
    return chain, key_bytes


def server_tls(settings: ServerTlsSettings, section: str) -> ServerTls | None:
    """The listener credentials of `settings` (named `section`, e.g. `mind.tls`), or None when
    TLS is off; raises TlsConfigError when they cannot work."""

    def label(name: str) -> str:
        return f"{section}.{name} (TOBE_{section.upper().replace('.', '__')}__{name.upper()})"

    if settings.cert_file is None and settings.key_file is None:
        if settings.client_ca_file is not None or settings.require_client_cert:
            raise TlsConfigError(
                f"{label('client_ca_file')} and {section}.require_client_cert need TLS: "
                f"set {label('cert_file')} and {label('key_file')} too"
            )
        return None
    if settings.cert_file is None or settings.key_file is None:
        missing = "cert_file" if settings.cert_file is None else "key_file"
        raise TlsConfigError(f"{label(missing)} is not set; TLS needs both cert_file and key_file")
    chain, key = _matching_pair(
        settings.cert_file, settings.key_file, label("cert_file"), label("key_file")
    )
    client_ca = None
    if settings.client_ca_file is not None:
        client_ca, _ = _certificates(settings.client_ca_file, label("client_ca_file"))
    elif settings.require_client_cert:
        raise TlsConfigError(
            f"{section}.require_client_cert is set but {label('client_ca_file')} is not: "
            "name the CA whose client certificates are accepted"
        )
    return ServerTls(chain, key, client_ca, settings.require_client_cert)


def setting_names(section: str) -> dict[str, str]:
    """How a `ClientTlsSettings` section's fields are named in messages: `hand.tls.ca_file`."""
    return {name: f"{section}.{name}" for name in ClientTlsSettings.model_fields}


def client_tls(
    settings: ClientTlsSettings, target: str, names: Mapping[str, str]
) -> tuple[str, ClientTls | None]:
    """The address to dial and its TLS credentials for `target`: None (plaintext) unless a
    field of `settings` is set or the target starts with `tls://`.

    `names` maps each field of `settings` to how the user set it (a setting or a command-line
    option), for the error messages.
    """
    address, asked = split_target(target)
    if not asked and settings == ClientTlsSettings():
        return address, None
    if address.startswith("unix:"):
        raise TlsConfigError(f"{target}: TLS is for host:port addresses, not Unix sockets")
    return address, load_client_tls(settings, names)


def load_client_tls(settings: ClientTlsSettings, names: Mapping[str, str]) -> ClientTls:
    """The files of `settings` read and checked: the CA (None: system roots), the pin, the
    client certificate and its key."""
    roots = None
    if settings.ca_file is not None:
        roots, certificates = _certificates(settings.ca_file, names["ca_file"])
        if settings.ca_fingerprint:
            _check_pin(settings, certificates[0], names)
    elif settings.ca_fingerprint:
        raise TlsConfigError(f"{names['ca_fingerprint']} needs {names['ca_file']}: the CA to check")
    if (settings.cert_file is None) != (settings.key_file is None):
        missing = "cert_file" if settings.cert_file is None else "key_file"
        raise TlsConfigError(
            f"{names[missing]} is missing: a client certificate needs both "
            f"{names['cert_file']} and {names['key_file']}"
        )
    chain = key = None
    if settings.cert_file is not None and settings.key_file is not None:
        chain, key = _matching_pair(
            settings.cert_file, settings.key_file, names["cert_file"], names["key_file"]
        )
    return ClientTls(roots, chain, key)


def _check_pin(settings: ClientTlsSettings, ca: x509.Certificate, names: Mapping[str, str]) -> None:
    expected = settings.ca_fingerprint.replace(":", "").strip().lower()
    actual = fingerprint(ca)
    if actual.replace(":", "").lower() != expected:
        raise TlsConfigError(
            f"{names['ca_file']}: the CA in {settings.ca_file} has the SHA-256 fingerprint "
            f"{actual}, not the one given in {names['ca_fingerprint']}"
        )
