"""Secret token files, shared by every process that writes or reads one.

A service's secret lives in `<directory>/<name>.token` (file 0600, directory 0700): `tobe up`
writes Face's, the Hand's and the local client's there for the services to read, and the Mind
and Awareness share the Awareness link token the same way. Each file holds one secret on one
line; secrets never reach a log.

The Awareness link token's source is the first that is set: `awareness.token`,
`awareness.token_file`, else `<data_dir>/credentials/awareness.token`, created on first use so
that a Mind and an Awareness on one machine share it without setup.
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path

from tobe.config import Settings
from tobe.runtime.private_files import DIRECTORY_MODE, FILE_MODE, create_once

AWARENESS = "awareness"


class TokenUnavailable(RuntimeError):
    """A token file that must exist is missing or empty; the message names it."""


def token_file(directory: Path, name: str) -> Path:
    """Where the token called `name` lives in `directory`."""
    return directory / f"{name}.token"


def write_token(path: Path, secret: str) -> None:
    """Replace `path` atomically with `secret`, owner-only from the first byte."""
    temporary = path.with_suffix(".tmp")
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, FILE_MODE)
    with os.fdopen(descriptor, "w") as handle:
        handle.write(secret + "\n")
    os.chmod(temporary, FILE_MODE)
    os.replace(temporary, path)


def create_token(path: Path) -> None:
    """A new random token at `path` (0600), unless a file is already there.

    Linked into place, so two processes creating it at once end up sharing one token.
    """
    path.parent.mkdir(parents=True, exist_ok=True, mode=DIRECTORY_MODE)
    create_once(path, (secrets.token_urlsafe(32) + "\n").encode())


def awareness_token_file(settings: Settings) -> Path:
    """The Awareness link token's file, as configured or by default."""
    return settings.awareness.token_file or token_file(settings.credentials_dir, AWARENESS)


def awareness_token(settings: Settings, *, create: bool) -> str:
    """The Awareness link token; with `create`, the default file is made when missing."""
    if settings.awareness.token is not None:
        return settings.awareness.token.get_secret_value()
    path = awareness_token_file(settings)
    if create and settings.awareness.token_file is None and not path.exists():
        create_token(path)
    try:
        token = path.read_text(encoding="utf-8").strip()
    except FileNotFoundError:
        raise TokenUnavailable(f"the Awareness service token file {path} does not exist") from None
    if not token:
        raise TokenUnavailable(f"the Awareness service token file {path} is empty")
    return token
