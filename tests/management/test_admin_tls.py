"""`tobe admin tls init` and `tobe admin tls client`: files, permissions, no overwrite, SANs,
the fingerprint and the configuration they print."""

from __future__ import annotations

import stat
from pathlib import Path

from cryptography import x509
from cryptography.x509.oid import ExtendedKeyUsageOID
from helpers.admin_cli import Admin

from tobe.runtime.private_files import tighten
from tobe.runtime.tls import fingerprint

FILES = ("ca.pem", "ca.key", "server.pem", "server.key")


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def certificate(path: Path) -> x509.Certificate:
    return x509.load_pem_x509_certificate(path.read_bytes())


def sans(path: Path) -> tuple[list[str], list[str]]:
    names = certificate(path).extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    return names.get_values_for_type(x509.DNSName), [
        str(a) for a in names.get_values_for_type(x509.IPAddress)
    ]


def test_init_writes_the_ca_and_server_certificate_into_the_data_directory_owner_only(
    admin: Admin, data_dir: Path
) -> None:
    admin.run("tls", "init")
    directory = data_dir / "tls"
    assert sorted(p.name for p in directory.iterdir()) == sorted(FILES)
    assert mode(directory) == 0o700
    assert {name: mode(directory / name) for name in FILES} == dict.fromkeys(FILES, 0o600)
    warnings: list[str] = []
    assert tighten(data_dir, warnings.append) == []  # what the Mind checks at every start
    assert warnings == []


def test_init_certifies_localhost_and_127_0_0_1_by_default_and_the_hosts_given(
    admin: Admin, data_dir: Path, tmp_path: Path
) -> None:
    admin.run("tls", "init")
    assert sans(data_dir / "tls" / "server.pem") == (["localhost"], ["127.0.0.1"])
    other = tmp_path / "certs"
    admin.run("tls", "init", "--dir", str(other), "--host", "mind.example", "--host", "10.0.0.5")
    assert sans(other / "server.pem") == (["mind.example"], ["10.0.0.5"])


def test_the_server_certificate_is_signed_by_the_ca_for_server_authentication(
    admin: Admin, data_dir: Path
) -> None:
    admin.run("tls", "init")
    ca, server = (
        certificate(data_dir / "tls" / "ca.pem"),
        certificate(data_dir / "tls" / "server.pem"),
    )
    server.verify_directly_issued_by(ca)
    usage = server.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    assert list(usage) == [ExtendedKeyUsageOID.SERVER_AUTH]
    assert ca.extensions.get_extension_for_class(x509.BasicConstraints).value.ca


def test_init_prints_the_ca_fingerprint_and_the_config_lines_but_no_key(
    admin: Admin, data_dir: Path
) -> None:
    output = admin.run("tls", "init").output
    directory = data_dir / "tls"
    assert f"CA SHA-256 fingerprint: {fingerprint(certificate(directory / 'ca.pem'))}" in output
    assert "[mind.tls]" in output
    assert f'cert_file = "{directory / "server.pem"}"' in output
    assert f'key_file = "{directory / "server.key"}"' in output
    assert "--ca ca.pem --ca-fingerprint" in output
    assert "PRIVATE KEY" not in output


def test_init_never_overwrites_existing_files_without_force(admin: Admin, data_dir: Path) -> None:
    admin.run("tls", "init")
    directory = data_dir / "tls"
    before = {name: (directory / name).read_bytes() for name in FILES}
    refused = admin.run("tls", "init", ok=False)
    assert "--force" in refused.output and str(directory / "ca.pem") in refused.output
    assert {name: (directory / name).read_bytes() for name in FILES} == before
    admin.run("tls", "init", "--force")
    assert (directory / "ca.pem").read_bytes() != before["ca.pem"]
    assert mode(directory / "ca.key") == 0o600


def test_client_issues_a_client_certificate_signed_by_the_ca(admin: Admin, data_dir: Path) -> None:
    admin.run("tls", "init")
    output = admin.run("tls", "client", "laptop").output
    directory = data_dir / "tls"
    issued = certificate(directory / "client-laptop.pem")
    issued.verify_directly_issued_by(certificate(directory / "ca.pem"))
    usage = issued.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    assert list(usage) == [ExtendedKeyUsageOID.CLIENT_AUTH]
    assert mode(directory / "client-laptop.key") == mode(directory / "client-laptop.pem") == 0o600
    assert "require_client_cert = true" in output
    assert "--cert client-laptop.pem --key client-laptop.key" in output
    assert "PRIVATE KEY" not in output
    assert "already exist" in admin.run("tls", "client", "laptop", ok=False).output


def test_client_without_a_ca_says_to_run_init_first(admin: Admin) -> None:
    assert "tobe admin tls init" in admin.run("tls", "client", "laptop", ok=False).output


def test_client_refuses_a_name_that_is_not_a_plain_file_name(admin: Admin) -> None:
    admin.run("tls", "init")
    assert "NAME" in admin.run("tls", "client", "../escape", ok=False).output
