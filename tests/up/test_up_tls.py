"""`tobe up` with TLS (and mTLS) on the Mind's and Face's listeners, certificates made by
`tobe admin tls`, and `tobe chat` trusting the CA."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pexpect
import pytest
from helpers.up_process import chat_once, gone, printed, service_pids, spawn, up_env

pytestmark = pytest.mark.e2e


def admin_tls(env: dict[str, str], *args: str) -> None:
    subprocess.run(
        [sys.executable, "-m", "tobe", "admin", "tls", *args],
        env=env,
        check=True,
        stdout=subprocess.DEVNULL,
    )


def configured(tmp_path: Path, sections: dict[str, dict[str, object]]) -> dict[str, str]:
    """The environment of `tobe up` with a config.toml holding `sections` and a CA, a server
    certificate and client certificates for Face and the Hand in `<tmp>/tls`."""
    env = up_env(tmp_path / "data")
    tls = tmp_path / "tls"
    admin_tls(env, "init", "--dir", str(tls))
    for name in ("face", "hand"):
        admin_tls(env, "client", name, "--dir", str(tls))
    lines = []
    for section, values in sections.items():
        lines.append(f"[{section}]")
        for key, value in values.items():
            text = json.dumps(str(tls / value) if isinstance(value, str) else value)
            lines.append(f"{key} = {text}")
    config = tmp_path / "config.toml"
    config.write_text("\n".join(lines) + "\n")
    env["TOBE_CONFIG"] = str(config)
    return env


def stop(up: pexpect.spawn) -> None:
    pids = service_pids(printed(up))
    up.kill(2)
    up.expect(pexpect.EOF, timeout=60)
    up.close()
    assert up.exitstatus == 0
    assert all(gone(pid) for pid in pids)


SERVER = {"cert_file": "server.pem", "key_file": "server.key"}


def test_up_serves_tls_and_chat_trusting_the_ca_works(tmp_path: Path) -> None:
    env = configured(tmp_path, {"mind.tls": SERVER, "face.tls": SERVER})
    ca = tmp_path / "tls" / "ca.pem"
    up = spawn(["up"], env)
    try:
        up.expect("ToBe is up.")
        up.expect(f"tobe chat --ca {ca}")
        up.expect(f"tobe hand serve --mind HOST:\\d+ --ca {ca}")
        chat_once(env, "hello", "--ca", str(ca))
        # Face published its CA beside its address: chat needs no --ca.
        chat_once(env, "hello again")
        stop(up)
    finally:
        up.close(force=True)


def test_up_serves_a_mind_requiring_client_certificates_to_its_face_and_hand(
    tmp_path: Path,
) -> None:
    mind = {**SERVER, "client_ca_file": "ca.pem", "require_client_cert": True}
    face = {"cert_file": "client-face.pem", "key_file": "client-face.key"}
    hand = {"cert_file": "client-hand.pem", "key_file": "client-hand.key"}
    env = configured(tmp_path, {"mind.tls": mind, "face.mind_tls": face, "hand.tls": hand})
    up = spawn(["up"], env)
    try:
        up.expect("ToBe is up.")
        up.expect("--cert client-NAME.pem --key client-NAME.key")
        chat_once(env, "hello")
        stop(up)
    finally:
        up.close(force=True)


def test_up_refuses_mtls_without_client_certificates_naming_the_settings(tmp_path: Path) -> None:
    mind = {**SERVER, "client_ca_file": "ca.pem", "require_client_cert": True}
    env = configured(tmp_path, {"mind.tls": mind})
    up = spawn(["up"], env)
    try:
        up.expect(pexpect.EOF, timeout=60)
        up.close()
    finally:
        up.close(force=True)
    output = printed(up)
    assert up.exitstatus != 0
    assert "face.mind_tls.cert_file and face.mind_tls.key_file" in output
    assert "Traceback" not in output
    assert service_pids(output) == []
