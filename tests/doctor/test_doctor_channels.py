"""`tobe doctor` on the channels: off when none is enabled; for each enabled one, the settings
it lacks, a password file others can read, a profile that does not exist, and a network that
does not answer, each in one line with its fix; OK when the homeserver answers or the mail
servers accept connections."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler
from pathlib import Path

from doctor_run import doctor_env, run_doctor
from helpers.handler_server import serving
from helpers.ports import free_port

from management.doctor.channels import check_channels
from management.doctor.report import Finding, Status
from management.doctor.state import Doctor
from tobe.config import EmailChannelSettings, MatrixChannelSettings, ProfileEntry, Settings


class Homeserver(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        found = self.path == "/_matrix/client/versions"
        body = json.dumps({"versions": ["v1.11"]} if found else {"errcode": "M_UNRECOGNIZED"})
        self.send_response(200 if found else 404)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(body.encode())

    def log_message(self, *args: object) -> None: ...


@contextmanager
def listening() -> Iterator[int]:
    """A loopback port that accepts connections, as a mail server's would."""
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        yield server.getsockname()[1]


def findings(settings: Settings) -> list[Finding]:
    return check_channels(Doctor(fix=False, settings=settings))


def mailbox(imap_port: int, smtp_port: int, **more: object) -> EmailChannelSettings:
    """The agent's mailbox on loopback ports, with `more` settings."""
    return EmailChannelSettings.model_validate(
        {
            "enabled": True,
            "address": "agent@example.org",
            "username": "agent",
            "password": "hunter2",
            "imap_host": "127.0.0.1",
            "imap_port": imap_port,
            "smtp_host": "127.0.0.1",
            "smtp_port": smtp_port,
            **more,
        }
    )


def password_file(tmp_path: Path, mode: int = 0o600) -> Path:
    path = tmp_path / "bot.password"
    path.write_text("hunter2\n")
    path.chmod(mode)
    return path


def test_doctor_says_channels_are_off_when_none_is_enabled(tmp_path: Path) -> None:
    env = doctor_env(tmp_path / "data", tmp_path / "none.toml")
    assert run_doctor(env)[1]["channels"] == [
        "skip channels are off (no [channels.matrix] or [channels.email] is enabled)"
    ]


def test_a_homeserver_that_answers_is_ok(tmp_path: Path) -> None:
    with serving(Homeserver) as base:
        homeserver = base.removesuffix("/v1")
        settings = Settings(data_dir=tmp_path)
        settings.channels.matrix = MatrixChannelSettings(
            enabled=True,
            homeserver=homeserver,
            user_id="@tobe:example.org",
            password_file=password_file(tmp_path),
        )
        assert findings(settings) == [
            Finding(
                Status.OK,
                "channel matrix",
                f"@tobe:example.org on {homeserver}: the homeserver answers",
            )
        ]


def test_missing_settings_are_named_each_with_its_fix(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path)
    settings.channels.matrix = MatrixChannelSettings(enabled=True, user_id="@tobe:example.org")
    assert [(f.status, f.text, f.fix) for f in findings(settings)] == [
        (
            Status.FAIL,
            "channels.matrix.homeserver is not set",
            "set homeserver in [channels.matrix] (see docs/channels.md)",
        ),
        (
            Status.FAIL,
            "channels.matrix has no password",
            "set password_file (a file only you can read) or password in [channels.matrix]",
        ),
    ]


def test_a_password_file_others_can_read_or_that_is_missing_fails(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path)
    exposed = password_file(tmp_path, 0o644)
    settings.channels.matrix = MatrixChannelSettings(
        enabled=True,
        homeserver="http://127.0.0.1:1",
        user_id="@tobe:example.org",
        password_file=exposed,
    )
    [finding] = findings(settings)
    assert (finding.status, finding.fix) == (Status.FAIL, f"chmod 600 {exposed}")
    assert finding.text == (
        f"channels.matrix.password_file {exposed} can be read by others (mode 0644)"
    )
    settings.channels.matrix.password_file = tmp_path / "absent"
    [missing] = findings(settings)
    assert missing.text == f"channels.matrix.password_file {tmp_path / 'absent'} does not exist"


def test_a_profile_that_does_not_exist_fails_unless_declared(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path)
    with listening() as imap, listening() as smtp:
        settings.channels.email = mailbox(
            imap, smtp, imap_security="none", smtp_security="none", profile="mail"
        )
        [finding] = findings(settings)
        assert (finding.status, finding.check) == (Status.FAIL, "channel email")
        assert finding.text == (
            "channels.email.profile 'mail' is no profile: the known ones are default"
        )
        settings.profiles.profile = [ProfileEntry(name="mail", platform_tools=[])]
        [ok] = findings(settings)
        assert (ok.status, ok.text) == (
            Status.OK,
            f"agent@example.org: IMAP 127.0.0.1:{imap} and SMTP 127.0.0.1:{smtp} accept "
            "connections",
        )


def test_mail_servers_and_a_homeserver_that_do_not_answer_are_named(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path)
    closed = free_port()
    settings.channels.email = mailbox(closed, closed)
    settings.channels.matrix = MatrixChannelSettings(
        enabled=True,
        homeserver=f"http://127.0.0.1:{closed}",
        user_id="@tobe:example.org",
        password="hunter2",
    )
    found = findings(settings)
    assert [(f.status, f.check) for f in found] == [
        (Status.FAIL, "channel matrix"),
        (Status.FAIL, "channel email"),
        (Status.FAIL, "channel email"),
    ]
    assert found[0].text.startswith(
        f"the homeserver does not answer at http://127.0.0.1:{closed}/_matrix/client/versions"
    )
    assert found[1].text.startswith(f"the IMAP server at 127.0.0.1:{closed} accepts no connection")
    assert found[2].fix == "check channels.email.smtp_host and smtp_port"
    assert all("hunter2" not in f.text + f.fix for f in found)
