"""TLS that stays on: a data directory whose Mind served TLS refuses a plaintext start.

A configuration that loses its TLS settings (a dropped compose override, an edited config
file) would otherwise bring the Mind back serving plaintext without a word. The first start
with TLS on a TCP listener leaves `<data dir>/tls-served`; a later start without TLS on a TCP
listener is refused while that record exists, unless `mind.allow_plaintext` says plaintext is
meant, which clears the record. Unix sockets never carry TLS, so they are not concerned.
"""

from __future__ import annotations

from pathlib import Path

from tobe.runtime.private_files import create_once

RECORD = "tls-served"


class PlaintextRefused(Exception):
    """The Mind served TLS on this data directory before and has no TLS settings now."""


def record_path(data_dir: Path) -> Path:
    return data_dir / RECORD


def plaintext_refusal(data_dir: Path, listen: str, tls_on: bool) -> str | None:
    """Why a Mind listening on `listen` (TLS or not) must not start here, or None."""
    record = record_path(data_dir)
    if tls_on or listen.startswith("unix:") or not record.exists():
        return None
    return (
        f"the Mind served TLS on this data directory before ({record}) but mind.tls is not set "
        "now: set mind.tls.cert_file and key_file (TOBE_MIND__TLS__CERT_FILE, "
        "TOBE_MIND__TLS__KEY_FILE) again, or mind.allow_plaintext = true "
        "(TOBE_MIND__ALLOW_PLAINTEXT=true) to serve plaintext on purpose"
    )


def settle(data_dir: Path, listen: str, tls_on: bool, allow_plaintext: bool) -> str | None:
    """Record TLS, or refuse plaintext after TLS; returns a warning when plaintext was allowed.

    Raises PlaintextRefused with the one-line reason.
    """
    if listen.startswith("unix:"):
        return None
    record = record_path(data_dir)
    if tls_on:
        create_once(record, f"TLS on {listen}\n".encode())
        return None
    refusal = plaintext_refusal(data_dir, listen, tls_on)
    if refusal is None:
        return None
    if not allow_plaintext:
        raise PlaintextRefused(refusal)
    record.unlink(missing_ok=True)
    return (
        f"serving plaintext on {listen} although this data directory's Mind served TLS before "
        "(mind.allow_plaintext is set); a later start with TLS records it again"
    )
