"""The enabled channels (`[channels.matrix]`, `[channels.email]`): complete settings, a password
file only its owner can read, a profile that exists, and the network reachable from here (the
homeserver answers its version list; the IMAP and SMTP servers accept a connection).

Nothing logs in: a wrong password shows in the channels process's log (`<data dir>/logs/
channels.log` under `tobe up`), which names the account's problem in one line.
"""

from __future__ import annotations

import socket
import stat
from pathlib import Path

from management.doctor.report import Finding, Status
from management.doctor.state import Doctor
from tobe.config import (
    ChannelSettings,
    EmailChannelSettings,
    MatrixChannelSettings,
    Settings,
)

CHECK = "channels"
# Longest a homeserver or a mail server may take to answer.
NETWORK_TIMEOUT = 5.0
# The profile every installation has (`mind.profiles.model.DEFAULT_NAME`).
BUILT_IN_PROFILE = "default"


def check_channels(doctor: Doctor) -> list[Finding]:
    settings = doctor.settings
    if settings is None:
        return [Finding(Status.SKIP, CHECK, "the configuration does not load")]
    from face.channels.networks import enabled_networks

    networks = enabled_networks(settings.channels)
    if not networks:
        return [
            Finding(
                Status.SKIP,
                CHECK,
                "channels are off (no [channels.matrix] or [channels.email] is enabled)",
            )
        ]
    findings: list[Finding] = []
    for network in networks:
        findings += channel_findings(network.name, network.settings(settings.channels), settings)
    return findings


def channel_findings(name: str, section: ChannelSettings, settings: Settings) -> list[Finding]:
    """What is wrong with one enabled channel, one line each; one OK line when nothing is."""
    check = f"channel {name}"
    problems = _missing(name, section) + _password_file(name, section)
    problems += _profile(name, section, settings)
    if not problems:
        problems = _unreachable(name, section)
    if problems:
        return [Finding(Status.FAIL, check, text, fix) for text, fix in problems]
    return [Finding(Status.OK, check, _reached(section))]


def _missing(name: str, section: ChannelSettings) -> list[tuple[str, str]]:
    required: dict[str, object] = {}
    if isinstance(section, MatrixChannelSettings):
        required = {"homeserver": section.homeserver, "user_id": section.user_id}
    elif isinstance(section, EmailChannelSettings):
        required = {
            "address": section.address,
            "username": section.username,
            "imap_host": section.imap_host,
            "smtp_host": section.smtp_host,
        }
    problems = [
        (
            f"channels.{name}.{key} is not set",
            f"set {key} in [channels.{name}] (see docs/channels.md)",
        )
        for key, value in required.items()
        if not value
    ]
    if (
        getattr(section, "password", None) is None
        and getattr(section, "password_file", None) is None
    ):
        problems.append(
            (
                f"channels.{name} has no password",
                f"set password_file (a file only you can read) or password in [channels.{name}]",
            )
        )
    return problems


def _password_file(name: str, section: ChannelSettings) -> list[tuple[str, str]]:
    path: Path | None = getattr(section, "password_file", None)
    if path is None:
        return []
    setting = f"channels.{name}.password_file"
    try:
        mode = path.stat().st_mode
        path.read_bytes()
    except FileNotFoundError:
        return [(f"{setting} {path} does not exist", "write the password there, or fix the path")]
    except OSError as exc:
        return [(f"{setting} {path} cannot be read: {exc.strerror}", "make it readable by you")]
    if mode & (stat.S_IRWXG | stat.S_IRWXO):
        return [
            (
                f"{setting} {path} can be read by others (mode {stat.S_IMODE(mode):04o})",
                f"chmod 600 {path}",
            )
        ]
    return []


def _profile(name: str, section: ChannelSettings, settings: Settings) -> list[tuple[str, str]]:
    if not section.profile:
        return []
    known = {BUILT_IN_PROFILE, settings.profiles.default}
    known |= {entry.name for entry in settings.profiles.profile}
    if section.profile in known or settings.profiles.factory:
        # A factory may make any profile a conversation names: the Mind says at its start.
        return []
    return [
        (
            f"channels.{name}.profile {section.profile!r} is no profile: the known ones are "
            f"{', '.join(sorted(known))}",
            "name one of them, or declare it in [[profiles.profile]]",
        )
    ]


def _unreachable(name: str, section: ChannelSettings) -> list[tuple[str, str]]:
    if isinstance(section, MatrixChannelSettings):
        problem = matrix_problem(section.homeserver)
        return [] if problem is None else [(problem, f"check channels.{name}.homeserver")]
    if isinstance(section, EmailChannelSettings):
        problems = []
        for kind, host, port in (
            ("IMAP", section.imap_host, section.imap_port),
            ("SMTP", section.smtp_host, section.smtp_port),
        ):
            problem = tcp_problem(host, port)
            if problem is not None:
                setting = f"channels.{name}.{kind.lower()}_host and {kind.lower()}_port"
                problems.append((f"the {kind} server {problem}", f"check {setting}"))
        return problems
    return []


def matrix_problem(homeserver: str) -> str | None:
    """Why the homeserver's client-server API does not answer here, or None when it does."""
    import httpx  # here: `tobe doctor` loads no HTTP client while channels are off

    url = f"{homeserver.rstrip('/')}/_matrix/client/versions"
    try:
        response = httpx.get(url, timeout=NETWORK_TIMEOUT, follow_redirects=True)
    except httpx.HTTPError as exc:
        return f"the homeserver does not answer at {url}: {str(exc) or type(exc).__name__}"
    if response.status_code != 200:
        return f"the homeserver answers {url} with HTTP {response.status_code}"
    try:
        versions = response.json().get("versions")
    except (ValueError, AttributeError):
        versions = None
    if not isinstance(versions, list) or not versions:
        return f"{url} answers, but not with a Matrix version list: is it a homeserver?"
    return None


def tcp_problem(host: str, port: int) -> str | None:
    """Why `host:port` accepts no connection from here, or None when it does."""
    try:
        with socket.create_connection((host, port), timeout=NETWORK_TIMEOUT):
            return None
    except OSError as exc:
        return f"at {host}:{port} accepts no connection: {exc.strerror or exc}"


def _reached(section: ChannelSettings) -> str:
    if isinstance(section, MatrixChannelSettings):
        return f"{section.user_id} on {section.homeserver}: the homeserver answers"
    if isinstance(section, EmailChannelSettings):
        return (
            f"{section.address}: IMAP {section.imap_host}:{section.imap_port} and SMTP "
            f"{section.smtp_host}:{section.smtp_port} accept connections"
        )
    return "enabled"
