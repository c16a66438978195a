"""A private CA and the certificates it signs, for TLS between ToBe's processes.

The CA signs one server certificate (its subject alternative names are the host names and IP
addresses clients dial) and any number of client certificates (a Hand's, for mTLS). Keys are
ECDSA P-256. Files are written owner-only for keys, never over an existing file unless asked,
and only once every file of a set is known to be writable, so a refusal leaves nothing half
written.
"""

from __future__ import annotations

import datetime
import ipaddress
import os
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from management.certificate_files import CA_CERT, CA_KEY
from tobe.runtime.private_files import FILE_MODE, private_directory

CA_DAYS = 3650
LEAF_DAYS = 825


class CertificateError(RuntimeError):
    """Certificates cannot be written as asked; the message says what to do."""


@dataclass(frozen=True)
class Issued:
    """A certificate and its private key."""

    certificate: x509.Certificate
    key: ec.EllipticCurvePrivateKey

    def certificate_pem(self) -> bytes:
        return self.certificate.public_bytes(serialization.Encoding.PEM)

    def key_pem(self) -> bytes:
        return self.key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )


def _name(common_name: str) -> x509.Name:
    return x509.Name(
        [
            x509.NameAttribute(NameOID.ORGANIZATION_NAME, "ToBe"),
            x509.NameAttribute(NameOID.COMMON_NAME, common_name),
        ]
    )


def _builder(
    subject: str, issuer: x509.Name, key: ec.EllipticCurvePrivateKey, days: int
) -> x509.CertificateBuilder:
    now = datetime.datetime.now(datetime.UTC)
    return (
        x509.CertificateBuilder()
        .subject_name(_name(subject))
        .issuer_name(issuer)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=days))
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
    )


def create_ca(common_name: str = "ToBe local CA", days: int = CA_DAYS) -> Issued:
    """A self-signed CA that may sign leaf certificates only."""
    key = ec.generate_private_key(ec.SECP256R1())
    certificate = (
        _builder(common_name, _name(common_name), key, days)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .sign(key, hashes.SHA256())
    )
    return Issued(certificate, key)


def subject_alternative_name(host: str) -> x509.GeneralName:
    """An IP address SAN for an address, a DNS SAN for anything else."""
    try:
        return x509.IPAddress(ipaddress.ip_address(host))
    except ValueError:
        return x509.DNSName(host)


def issue(
    ca: Issued, common_name: str, *, hosts: list[str] | None = None, days: int = LEAF_DAYS
) -> Issued:
    """A leaf signed by `ca`: a server certificate for `hosts`, or (without) a client one."""
    key = ec.generate_private_key(ec.SECP256R1())
    usage = ExtendedKeyUsageOID.SERVER_AUTH if hosts else ExtendedKeyUsageOID.CLIENT_AUTH
    builder = (
        _builder(common_name, ca.certificate.subject, key, days)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca.key.public_key()), critical=False
        )
    )
    if hosts:
        names = [subject_alternative_name(host) for host in hosts]
        builder = builder.add_extension(x509.SubjectAlternativeName(names), critical=False)
    return Issued(builder.sign(ca.key, hashes.SHA256()), key)


def load_ca(directory: Path) -> Issued:
    """The CA that `tobe admin tls init` wrote into `directory`."""
    cert_path, key_path = directory / CA_CERT, directory / CA_KEY
    try:
        certificate = x509.load_pem_x509_certificate(cert_path.read_bytes())
        key = serialization.load_pem_private_key(key_path.read_bytes(), password=None)
    except FileNotFoundError as exc:
        raise CertificateError(
            f"no CA in {directory} ({exc.filename} is missing): run `tobe admin tls init` first"
        ) from None
    except (OSError, ValueError) as exc:
        raise CertificateError(f"cannot read the CA in {directory}: {exc}") from None
    if not isinstance(key, ec.EllipticCurvePrivateKey):
        raise CertificateError(f"{key_path} is not the EC key `tobe admin tls init` writes")
    return Issued(certificate, key)


def write_files(directory: Path, files: dict[str, tuple[bytes, int]], *, force: bool) -> list[Path]:
    """Write `files` (name -> content and mode) into `directory` (created owner-only).

    Refuses, writing nothing, when any of them exists and `force` is not set.
    """
    paths = {directory / name: content for name, content in files.items()}
    existing = [str(path) for path in paths if path.exists()]
    if existing and not force:
        raise CertificateError(
            f"{', '.join(existing)} already exist{'s' if len(existing) == 1 else ''}; "
            "pass --force to replace"
        )
    private_directory(directory)
    for path, (content, mode) in paths.items():
        path.unlink(missing_ok=True)
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
        with os.fdopen(descriptor, "wb") as file:
            file.write(content)
        os.chmod(path, mode)  # the umask may have narrowed it
    return list(paths)


def key_file(pem: bytes) -> tuple[bytes, int]:
    return pem, FILE_MODE


def certificate_file(pem: bytes) -> tuple[bytes, int]:
    """Owner-only like the keys: the data directory holds nothing other users may read (the
    Mind would tighten it and warn), and whoever needs the CA gets a copy."""
    return pem, FILE_MODE
