"""`tobe doctor` catches what a person gets wrong, each finding with its fix; `--fix` repairs.

Each acceptance case: bad TOML, unknown section, port in use, wrong file mode, revoked local
credential, unreachable provider, rejected key. Runs offline (no Mind), as after a failed start.
"""

from __future__ import annotations

import json
import locale
import os
import socket
import stat
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import pytest
from doctor_run import doctor_env, run_doctor, store_settings
from helpers.admin_cli import Admin
from helpers.handler_server import serving
from helpers.ports import free_port

from management.doctor.encoding import check_locale
from management.doctor.state import Doctor
from mind.management import provision

GOOD_KEY = "good-key"


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    return tmp_path / "data"


@pytest.fixture
def provisioned(data_dir: Path) -> Path:
    """A data directory as `tobe up` leaves it: store migrated, local credentials written."""
    provision(store_settings(data_dir))
    return data_dir


def test_bad_toml_is_named_by_file_and_line(tmp_path: Path, data_dir: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text('[provider]\nkind = "openai"\nmodel = \n')
    status, findings = run_doctor(doctor_env(data_dir, config))
    assert status == 1
    assert findings["config"] == [
        f"FAIL {config}:3:9: invalid TOML: Invalid value — fix: correct the TOML syntax at that "
        "line and column"
    ]
    assert findings["credentials"] == ["skip the configuration does not load"]


def test_an_unknown_section_is_named_with_the_one_meant(tmp_path: Path, data_dir: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text('[provder]\nkind = "scripted"\n')
    status, findings = run_doctor(doctor_env(data_dir, config))
    assert status == 1
    assert findings["config"] == [
        f"FAIL {config}:1: unknown section [provder]; did you mean [provider]? — fix: rename it "
        "as suggested, or remove it"
    ]


def test_a_port_in_use_names_its_holder_and_the_setting(tmp_path: Path, data_dir: Path) -> None:
    with socket.socket() as squatter:
        squatter.bind(("127.0.0.1", 0))
        squatter.listen()
        address = f"127.0.0.1:{squatter.getsockname()[1]}"
        env = doctor_env(data_dir, tmp_path / "none.toml", TOBE_FACE__LISTEN=address)
        status, findings = run_doctor(env)
    assert status == 1
    [face] = findings["port face"]
    assert face.startswith(f"FAIL {address} is in use by ")
    assert f"(pid {os.getpid()}: " in face
    assert face.endswith(
        "— fix: stop that process, or give ToBe another port with [face] listen (TOBE_FACE__LISTEN)"
    )
    assert findings["port mind"][0].startswith("ok ")


def test_a_web_client_port_in_use_names_its_holder_and_the_setting(
    tmp_path: Path, data_dir: Path
) -> None:
    with socket.socket() as squatter:
        squatter.bind(("127.0.0.1", 0))
        squatter.listen()
        address = f"127.0.0.1:{squatter.getsockname()[1]}"
        env = doctor_env(data_dir, tmp_path / "none.toml", TOBE_FACE__WEB__LISTEN=address)
        status, findings = run_doctor(env)
        # Off, it is not checked: the port may be anyone's.
        env["TOBE_FACE__WEB__ENABLED"] = "false"
        _, off = run_doctor(env)
    assert status == 1
    [web] = findings["port web"]
    assert web.startswith(f"FAIL {address} is in use by ")
    assert f"(pid {os.getpid()}: " in web
    assert web.endswith(
        "— fix: stop that process, or give ToBe another port with [face.web] listen "
        "(TOBE_FACE__WEB__LISTEN)"
    )
    assert findings["port face"][0].startswith("ok ")
    assert off["port web"] == ["skip face.web.enabled is off: Face serves no web client"]


def test_a_readable_credential_file_is_made_owner_only_by_fix(
    tmp_path: Path, provisioned: Path
) -> None:
    token = provisioned / "credentials" / "client.token"
    token.chmod(0o644)
    env = doctor_env(provisioned, tmp_path / "none.toml")
    status, findings = run_doctor(env)
    assert status == 1
    assert findings["credential files"] == [
        f"FAIL readable by other users: {token} (0644) — fix: `tobe doctor --fix` makes them "
        "owner-only (chmod go-rwx)"
    ]

    status, findings = run_doctor(env, "--fix")
    assert findings["credential files"] == [
        f"fixed removed group and other access: {token} (0644 -> owner-only)"
    ]
    assert stat.S_IMODE(token.stat().st_mode) == 0o600
    assert status == 0

    status, findings = run_doctor(env)
    assert findings["credential files"] == [f"ok {provisioned / 'credentials'}: owner-only"]


def test_a_revoked_local_credential_is_provisioned_again_by_fix(
    tmp_path: Path, provisioned: Path
) -> None:
    admin = Admin(provisioned)
    token = provisioned / "credentials" / "face.token"
    old = token.read_text()
    prefix = old.split("_")[1]
    [face] = [c for c in admin.json("credentials", "list") if c["prefix"] == prefix]
    admin.run("credentials", "revoke", face["id"])
    env = doctor_env(provisioned, tmp_path / "none.toml")

    status, findings = run_doctor(env)
    assert status == 1
    assert findings["credentials"] == [
        f"FAIL {token} was revoked (credential {face['id']}) — fix: `tobe doctor --fix` "
        "provisions them again, as `tobe up` does at its start"
    ]

    status, findings = run_doctor(env, "--fix")
    assert findings["credentials"] == [
        f"fixed {token} was revoked (credential {face['id']}): provisioned again; wrote {token} "
        "(owner-only)"
    ]
    assert token.read_text() != old

    status, findings = run_doctor(env)
    assert status == 0
    assert findings["credentials"] == ["ok face, hand, client: accepted by the store (offline)"]


class _Models(BaseHTTPRequestHandler):
    """An OpenAI-compatible `/v1/models` that accepts only GOOD_KEY."""

    def do_GET(self) -> None:
        if self.headers.get("Authorization") != f"Bearer {GOOD_KEY}":
            self._answer(401, {"error": {"message": "Incorrect API key provided"}})
        else:
            self._answer(200, {"object": "list", "data": [{"id": "local-1"}, {"id": "local-2"}]})

    def _answer(self, status: int, body: object) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture(scope="module")
def models_url() -> Iterator[str]:
    with serving(_Models) as url:
        yield url


def _provider_env(tmp_path: Path, data_dir: Path, url: str, key: str) -> dict[str, str | None]:
    return doctor_env(
        data_dir,
        tmp_path / "none.toml",
        TOBE_PROVIDER__KIND="openai",
        TOBE_PROVIDER__BASE_URL=url,
        TOBE_PROVIDER__API_KEY=key,
        TOBE_PROVIDER__MODEL="local-1",
    )


def test_an_unreachable_provider_is_named_with_its_setting(tmp_path: Path, data_dir: Path) -> None:
    url = f"http://127.0.0.1:{free_port()}/v1"
    status, findings = run_doctor(_provider_env(tmp_path, data_dir, url, GOOD_KEY))
    assert status == 1
    [provider] = findings["provider"]
    assert provider.startswith(f"FAIL openai: cannot reach {url}/models (")
    assert provider.endswith(
        "— fix: start the server, or correct [provider] base_url (TOBE_PROVIDER__BASE_URL)"
    )


def test_a_rejected_key_is_reported_and_an_accepted_one_lists_the_model(
    tmp_path: Path, data_dir: Path, models_url: str
) -> None:
    status, findings = run_doctor(_provider_env(tmp_path, data_dir, models_url, "wrong-key"))
    assert status == 1
    [provider] = findings["provider"]
    assert provider.startswith(
        f"FAIL openai: the API key was rejected (HTTP 401 from {models_url}/models)"
    )
    assert provider.endswith(
        "— fix: store a valid key with `tobe setup`, or set [provider] api_key, "
        "TOBE_PROVIDER__API_KEY or the usual variable"
    )
    assert "wrong-key" not in provider

    status, findings = run_doctor(_provider_env(tmp_path, data_dir, models_url, GOOD_KEY))
    assert findings["provider"] == [
        f"ok openai at {models_url}: key accepted, 2 models listed, 'local-1' among them"
    ]


def test_a_locale_that_is_not_utf8_is_named_with_lc_all(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(locale, "nl_langinfo", lambda _item: "ANSI_X3.4-1968")
    for name in ("LC_CTYPE", "LANG"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("LC_ALL", "C")
    [finding] = check_locale(Doctor(fix=False))
    assert finding.text.startswith("ANSI_X3.4-1968, not UTF-8 (LC_ALL=C): ToBe runs")
    assert finding.fix.startswith("export LC_ALL=C.UTF-8")


def test_a_config_file_holding_a_key_is_made_owner_only_by_fix(
    tmp_path: Path, data_dir: Path
) -> None:
    config = tmp_path / "config.toml"
    config.write_text('[provider]\nkind = "scripted"\napi_key = "sk-secret"\n')
    config.chmod(0o644)
    env = doctor_env(data_dir, config)
    exposed = f"{config} holds provider.api_key and is readable by other users (0644)"
    status, findings = run_doctor(env)
    assert status == 1
    assert findings["config"] == [f"FAIL {exposed} — fix: `tobe doctor --fix` makes it owner-only"]

    status, findings = run_doctor(env, "--fix")
    assert findings["config"] == [f"fixed {exposed}; made it owner-only"]
    assert stat.S_IMODE(config.stat().st_mode) == 0o600


def test_a_misspelled_setting_variable_is_named_and_others_are_left_alone(
    tmp_path: Path, provisioned: Path
) -> None:
    # Provisioned: on PostgreSQL the test's store is already migrated, where doctor rightly
    # expects the local credentials `tobe up` writes.
    env = doctor_env(
        provisioned,
        tmp_path / "none.toml",
        TOBE_FACE_LISTEN="127.0.0.1:1",
        TOBE_SOAK_SEED="7",
        TOBE_HAND_TOKEN="tobe_x",
        TOBE_HEALTH_TARGET="127.0.0.1:1",
    )
    status, findings = run_doctor(env)
    assert findings["config"][1:] == [
        "warn TOBE_FACE_LISTEN is not a setting, so it is ignored; did you mean "
        "TOBE_FACE__LISTEN? — fix: rename it, or unset it"
    ]
    assert status == 0


def test_bubblewrap_that_cannot_run_is_named_with_both_ways_out(
    tmp_path: Path, data_dir: Path
) -> None:
    absent = str(tmp_path / "no-such-bwrap")
    _, findings = run_doctor(
        doctor_env(data_dir, tmp_path / "absent.toml", TOBE_HAND__BWRAP=absent)
    )
    assert findings["sandbox"] == [
        f"warn run_command is withheld from the model: bubblewrap cannot run here (the command "
        f"sandbox {absent!r} is not installed on this Hand) — fix: install bubblewrap "
        "(Debian/Ubuntu: apt-get install bubblewrap) with user namespaces enabled, or run "
        "`tobe up --allow-unconfined-commands`"
    ]

    allowed = doctor_env(
        data_dir,
        tmp_path / "absent.toml",
        TOBE_HAND__BWRAP=absent,
        TOBE_HAND__ALLOW_UNCONFINED_COMMANDS="true",
    )
    [unconfined] = run_doctor(allowed)[1]["sandbox"]
    assert unconfined.startswith("warn the local Hand's commands run UNCONFINED")

    [working] = run_doctor(doctor_env(data_dir, tmp_path / "absent.toml"))[1]["sandbox"]
    assert working == (
        "ok run_command runs in a bubblewrap sandbox that sees only the Hand's workspace"
    )
