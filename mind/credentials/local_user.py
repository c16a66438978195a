"""Who the local user is: the principal `tobe up` gives their client credential."""

from __future__ import annotations

import getpass


def local_user() -> str:
    """The principal of the local user's client credential: the login name, else "local"."""
    try:
        name = getpass.getuser()
    except (KeyError, OSError):
        name = ""
    cleaned = "".join(c for c in name if not c.isspace())
    return cleaned or "local"
