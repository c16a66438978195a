"""Which Minds a Face is built to dial: every address of `face.mind_addresses`, in order, each
with the `face.mind_tls` settings."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import SecretStr

from face.server import FaceConfigError, build
from management.certificates import certificate_file, create_ca, write_files
from tobe.config import ClientTlsSettings, FaceSettings, Settings


def settings(tmp_path: Path, face: FaceSettings) -> Settings:
    face.mind_token = SecretStr("tobe_face_token")
    return Settings(data_dir=tmp_path, face=face)


def test_a_face_given_several_minds_dials_the_first(tmp_path: Path) -> None:
    minds = ["127.0.0.1:7410", "127.0.0.1:7411", "unix:/run/tobe/mind.sock"]
    gateway = build(settings(tmp_path, FaceSettings(mind_addresses=minds)))
    assert gateway.mind.addresses == minds
    assert gateway.mind.address == "127.0.0.1:7410"


def test_the_mind_tls_settings_apply_to_every_address(tmp_path: Path) -> None:
    write_files(tmp_path, {"ca.pem": certificate_file(create_ca().certificate_pem())}, force=False)
    face = FaceSettings(
        mind_addresses=["127.0.0.1:7410", "unix:/run/tobe/mind.sock"],
        mind_tls=ClientTlsSettings(ca_file=tmp_path / "ca.pem"),
    )
    # The second address gets the TLS settings too, which a Unix socket cannot take.
    with pytest.raises(FaceConfigError, match="unix:/run/tobe/mind.sock: TLS is for host:port"):
        build(settings(tmp_path, face))
