"""Loading TLS credentials: what turns TLS on, and the errors that name the setting and file."""

from __future__ import annotations

from pathlib import Path

import pytest
from cryptography import x509

from management.certificates import certificate_file, create_ca, issue, key_file, write_files
from tobe.config import ClientTlsSettings, ServerTlsSettings
from tobe.runtime.tls import (
    TlsConfigError,
    client_tls,
    fingerprint,
    server_tls,
    setting_names,
)

NAMES = setting_names("hand.tls")


@pytest.fixture
def certs(tmp_path: Path) -> Path:
    ca = create_ca()
    server, client = issue(ca, "localhost", hosts=["localhost"]), issue(ca, "laptop")
    files = {
        "ca.pem": certificate_file(ca.certificate_pem()),
        "server.pem": certificate_file(server.certificate_pem()),
        "server.key": key_file(server.key_pem()),
        "client.pem": certificate_file(client.certificate_pem()),
        "client.key": key_file(client.key_pem()),
    }
    write_files(tmp_path, files, force=False)
    return tmp_path


def test_tls_is_off_when_nothing_is_configured() -> None:
    assert server_tls(ServerTlsSettings(), "mind.tls") is None
    assert client_tls(ClientTlsSettings(), "127.0.0.1:7410", NAMES) == ("127.0.0.1:7410", None)


def test_a_tls_scheme_dials_tls_trusting_the_system_roots() -> None:
    address, tls = client_tls(ClientTlsSettings(), "tls://mind.example:7410", NAMES)
    assert address == "mind.example:7410"
    assert tls is not None and tls.root_certificates is None and tls.certificate_chain is None


def test_a_server_with_certificate_and_key_serves_tls_requiring_client_certificates(
    certs: Path,
) -> None:
    settings = ServerTlsSettings(
        cert_file=certs / "server.pem",
        key_file=certs / "server.key",
        client_ca_file=certs / "ca.pem",
        require_client_cert=True,
    )
    tls = server_tls(settings, "mind.tls")
    assert tls is not None and tls.require_client_cert
    assert tls.client_ca == (certs / "ca.pem").read_bytes()


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        ({"cert_file": "missing.pem", "key_file": "server.key"}, "mind.tls.cert_file"),
        ({"cert_file": "server.pem"}, "mind.tls.key_file (TOBE_MIND__TLS__KEY_FILE) is not set"),
        ({"cert_file": "server.pem", "key_file": "client.key"}, "does not belong"),
        ({"cert_file": "server.key", "key_file": "server.key"}, "holds no PEM certificate"),
        ({"cert_file": "server.pem", "key_file": "server.pem"}, "not an unencrypted PEM private"),
        (
            {"cert_file": "server.pem", "key_file": "server.key", "require_client_cert": True},
            "mind.tls.client_ca_file",
        ),
        ({"client_ca_file": "ca.pem"}, "need TLS"),
    ],
    ids=["missing", "no key", "foreign key", "not a cert", "not a key", "no client CA", "no cert"],
)
def test_a_broken_server_configuration_is_refused_naming_the_setting(
    certs: Path, fields: dict[str, object], expected: str
) -> None:
    values = {k: certs / v if isinstance(v, str) else v for k, v in fields.items()}
    with pytest.raises(TlsConfigError, match=expected.replace("(", r"\(").replace(")", r"\)")):
        server_tls(ServerTlsSettings.model_validate(values), "mind.tls")


def test_the_error_names_the_file_and_never_the_key(certs: Path) -> None:
    settings = ServerTlsSettings(cert_file=certs / "server.pem", key_file=certs / "client.key")
    with pytest.raises(TlsConfigError) as caught:
        server_tls(settings, "mind.tls")
    message = str(caught.value)
    assert str(certs / "client.key") in message and "PRIVATE KEY" not in message


def test_a_pinned_ca_fingerprint_accepts_its_ca_and_refuses_another(certs: Path) -> None:
    pin = fingerprint(x509.load_pem_x509_certificate((certs / "ca.pem").read_bytes()))
    good = ClientTlsSettings(ca_file=certs / "ca.pem", ca_fingerprint=pin.lower())
    assert client_tls(good, "127.0.0.1:7410", NAMES)[1] is not None
    bad = ClientTlsSettings(ca_file=certs / "ca.pem", ca_fingerprint="00" * 32)
    with pytest.raises(TlsConfigError, match="hand.tls.ca_fingerprint"):
        client_tls(bad, "127.0.0.1:7410", NAMES)


def test_a_client_certificate_needs_its_key(certs: Path) -> None:
    settings = ClientTlsSettings(ca_file=certs / "ca.pem", cert_file=certs / "client.pem")
    with pytest.raises(TlsConfigError, match="hand.tls.key_file is missing"):
        client_tls(settings, "127.0.0.1:7410", NAMES)


def test_tls_to_a_unix_socket_is_refused(certs: Path) -> None:
    settings = ClientTlsSettings(ca_file=certs / "ca.pem")
    with pytest.raises(TlsConfigError, match="not Unix sockets"):
        client_tls(settings, "unix:/tmp/mind.sock", NAMES)
