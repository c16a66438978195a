"""Where the running services listen: `<data_dir>/runtime.json`, written by the services.

A service publishes its address once it is bound (the real port when it was asked for port 0)
and withdraws it when it stops; an entry whose process is gone is ignored. Client commands
(`tobe chat`, `tobe admin`, `tobe health`, a Hand started by `tobe hand serve`) dial what
`address_of` says: an address set explicitly (flag, `TOBE_*` variable, config file) wins, then
the published one, then the built-in default. So `tobe up --port-base 9000` needs nothing more
from the clients than the same data directory.

Writers take an exclusive `flock` on `runtime.lock` and replace the file atomically, so
services starting together never lose each other's entries and readers never see half a file.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path

from pydantic import BaseModel

RUNTIME_FILE = "runtime.json"
LOCK_FILE = "runtime.lock"


@dataclass(frozen=True)
class Published:
    """One running service's address, as it published it."""

    address: str
    pid: int
    # CA that verifies the service's TLS certificate; "" when it serves plaintext.
    ca_file: str = ""


def runtime_file(data_dir: Path) -> Path:
    return data_dir / RUNTIME_FILE


def publish(data_dir: Path, service: str, address: str, *, ca_file: str = "") -> None:
    """Record that this process serves `service` at `address`."""
    with _locked(data_dir):
        entries = _read(data_dir)
        entries[service] = Published(address, os.getpid(), ca_file)
        _write(data_dir, entries)


def withdraw(data_dir: Path, service: str) -> None:
    """Remove this process's entry for `service`; another process's entry stays."""
    if not runtime_file(data_dir).exists():
        return
    with _locked(data_dir):
        entries = _read(data_dir)
        entry = entries.get(service)
        if entry is not None and entry.pid == os.getpid():
            del entries[service]
            _write(data_dir, entries)


def published(data_dir: Path) -> dict[str, Published]:
    """The entries of services whose process is still alive."""
    return {name: entry for name, entry in _read(data_dir).items() if alive(entry.pid)}


def address_of(data_dir: Path, service: str, section: BaseModel, field: str) -> str:
    """Where to dial `service`: `section.field` if set explicitly, else where it published,
    else `section.field`'s default."""
    configured = str(getattr(section, field))
    if field in section.model_fields_set:
        return configured
    entry = published(data_dir).get(service)
    return entry.address if entry is not None else configured


def alive(pid: int) -> bool:
    """Whether process `pid` exists (one of another user's counts)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _read(data_dir: Path) -> dict[str, Published]:
    try:
        raw = json.loads(runtime_file(data_dir).read_text())
    except (FileNotFoundError, json.JSONDecodeError, UnicodeDecodeError):
        return {}
    services = raw.get("services") if isinstance(raw, dict) else None
    if not isinstance(services, dict):
        return {}
    entries: dict[str, Published] = {}
    for name, value in services.items():
        try:
            entries[str(name)] = Published(
                str(value["address"]), int(value["pid"]), str(value.get("ca_file", ""))
            )
        except (KeyError, TypeError, ValueError, AttributeError):
            continue
    return entries


def _write(data_dir: Path, entries: dict[str, Published]) -> None:
    target = runtime_file(data_dir)
    temporary = target.with_name(f".{RUNTIME_FILE}.{os.getpid()}")
    body = {"services": {name: asdict(entry) for name, entry in sorted(entries.items())}}
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "w") as handle:
        json.dump(body, handle, indent=2)
        handle.write("\n")
    os.replace(temporary, target)


@contextlib.contextmanager
def _locked(data_dir: Path) -> Iterator[None]:
    data_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    descriptor = os.open(data_dir / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX)
        yield
    finally:
        os.close(descriptor)
