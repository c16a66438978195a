"""How the Face says that it, not the person, is what cannot work: its link to the Mind is
down, or the Mind refuses the Face's own credential. Shown by Face's health
(`tobe health`, `tobe admin status`) and in the error a connecting client gets.
"""

from __future__ import annotations


def cannot_reach(address: str, why: str) -> str:
    return f"the Face cannot reach the Mind at {address} ({why})"


def connecting(address: str) -> str:
    return f"the Face is connecting to the Mind at {address}"


def credential_refused(why: str) -> str:
    # Short enough for a WebSocket close frame (123 bytes); the Face's log says how to fix it.
    return f"the Face's own credential was refused ({why}): an operator must replace it"


def is_face_trouble(details: str) -> bool:
    """Whether a status's text is the Face saying it cannot serve (not a transport's text)."""
    return details.startswith(FACE_TROUBLE_PREFIX)


FACE_TROUBLE_PREFIX = "the Face"
