"""The Mind hands its CA to Face and the Hand in a container deployment (`ca_copies`)."""

from __future__ import annotations

import stat
from pathlib import Path

from mind.management.ca_copies import copy_ca
from tobe.config import ServerTlsSettings


def tls_in(directory: Path, ca: bytes = b"CA one\n") -> ServerTlsSettings:
    """TLS settings naming server files in `directory`, with `ca.pem` beside them."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "ca.pem").write_bytes(ca)
    return ServerTlsSettings(cert_file=directory / "server.pem", key_file=directory / "server.key")


def test_the_ca_beside_the_certificate_reaches_face_and_the_hand_owner_only(
    tmp_path: Path,
) -> None:
    services = tmp_path / "credentials"
    written = copy_ca(tls_in(tmp_path / "tls"), services)
    assert written == [services / "face" / "ca.pem", services / "hand" / "ca.pem"]
    for path in written:
        assert path.read_bytes() == b"CA one\n"
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert not (services / "awareness").exists()  # Awareness never dials the Mind


def test_an_unchanged_ca_is_left_alone_and_a_new_one_replaces_it(tmp_path: Path) -> None:
    services = tmp_path / "credentials"
    copy_ca(tls_in(tmp_path / "tls"), services)
    assert copy_ca(tls_in(tmp_path / "tls"), services) == []
    renewed = copy_ca(tls_in(tmp_path / "tls", b"CA two\n"), services)
    assert [path.read_bytes() for path in renewed] == [b"CA two\n", b"CA two\n"]
    assert sorted(p.name for p in (services / "face").iterdir()) == ["ca.pem"]  # no temp left


def test_nothing_is_copied_without_tls_or_without_a_ca_beside_the_certificate(
    tmp_path: Path,
) -> None:
    services = tmp_path / "credentials"
    assert copy_ca(ServerTlsSettings(), services) == []
    public = ServerTlsSettings(
        cert_file=tmp_path / "public" / "server.pem", key_file=tmp_path / "public" / "server.key"
    )
    assert copy_ca(public, services) == []
    assert not services.exists()
