"""The versions a bug report needs: ToBe, Python, gRPC, protobuf, SQLite and the store's schema."""

from __future__ import annotations

import platform
import sqlite3
from importlib.metadata import version

from management.doctor.report import Finding, Status
from management.doctor.state import Doctor
from tobe import __version__


def check_versions(doctor: Doctor) -> list[Finding]:
    store = "unread" if doctor.store_revision is None else doctor.store_revision or "empty"
    text = (
        f"tobe {__version__}, Python {platform.python_version()}, grpcio {version('grpcio')}, "
        f"protobuf {version('protobuf')}, SQLite {sqlite3.sqlite_version}, store {store}"
    )
    return [Finding(Status.OK, "versions", text)]
