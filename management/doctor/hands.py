"""The Hands attached to the running Mind (as `tobe admin status` lists them)."""

from __future__ import annotations

import asyncio

from management.connection import ManagementUnavailable
from management.doctor.calls import status
from management.doctor.report import Finding, Status
from management.doctor.state import Doctor

CHECK = "hands"


def check_hands(doctor: Doctor) -> list[Finding]:
    settings = doctor.settings
    if settings is None:
        return [Finding(Status.SKIP, CHECK, "the configuration does not load")]
    if not doctor.online:
        return [
            Finding(Status.SKIP, CHECK, "ToBe is not running (no Mind serves this data directory)")
        ]
    try:
        found = asyncio.run(status(settings))
    except ManagementUnavailable as exc:
        return [Finding(Status.FAIL, CHECK, str(exc))]
    if not found.hands:
        return [
            Finding(
                Status.WARN,
                CHECK,
                "no Hand is attached: the model has no tools on a device",
                "`tobe up` runs the local Hand; for another one see docs/hands.md",
            )
        ]
    hands = ", ".join(f"{hand.name} ({hand.principal}, {hand.tools} tools)" for hand in found.hands)
    return [Finding(Status.OK, CHECK, f"attached: {hands}")]
