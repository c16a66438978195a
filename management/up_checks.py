"""What `tobe up` checks before it claims anything: nobody else runs ToBe on the data
directory, every listen address is free, and the provider answers.

Each failed check is one line naming what is wrong and the setting or option that fixes it.
The provider check is one cheap model listing, made by `tobe mind check-provider` in a child
process with the Mind's environment (so with the key the Mind will use), watched from a thread
while the services start, so it costs no start time; and the provider's adapter, the store's
driver and the key store never load into `tobe up`, which runs for as long as ToBe does.

An unreachable provider refuses the start, as a rejected key does: a dead base URL otherwise
surfaces only as the first turn's failure, long after "ToBe is up." was claimed. A server that
is reachable but cannot list its models is only warned about, since the Mind may still work.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from dataclasses import dataclass
from pathlib import Path

from management.up_plan import WEB, listen_option, listen_setting, listen_variable
from tobe.runtime.addresses import runtime_file
from tobe.runtime.ports import bind_problem, holder, running_services
from tobe.runtime.statelock import StateLockBusy, is_locked

PROVIDER_TIMEOUT = 8.0
# How long the checking process may take in all: its start, then the listing.
CHECK_DEADLINE = PROVIDER_TIMEOUT + 20.0
CHECK_COMMAND = ("-m", "tobe", "mind", "check-provider", "--timeout", str(PROVIDER_TIMEOUT))


def data_dir_owner(data_dir: Path) -> str | None:
    """One line when another ToBe owns the data directory (its services published there, or
    a process holds its state lock); None when it is free."""
    services = running_services(data_dir)
    if services:
        listing = ", ".join(
            f"{name} at {entry.address} (pid {entry.pid})"
            for name, entry in sorted(services.items())
        )
        return (
            f"ToBe is already running on {data_dir} ({listing}, per {runtime_file(data_dir)}); "
            "stop it first, or start this one with another --data-dir"
        )
    if is_locked(data_dir):
        lock = data_dir / "state.lock"
        busy = StateLockBusy(lock, lock.read_text(errors="replace").strip())
        return f"{busy}; stop it first, or start this one with another --data-dir"
    return None


def port_problems(data_dir: Path, addresses: dict[str, str]) -> list[str]:
    """One line per listen address that cannot be bound, with its holder and the fix."""
    lines = []
    for service, address in addresses.items():
        problem = bind_problem(address)
        if problem is None:
            continue
        held = holder(data_dir, address)
        who = f", held by {held}" if held else ""
        fix = (
            f"change {listen_setting(service)} ({listen_variable(service)}, "
            f"{listen_option(service)}) or use another --port-base"
        )
        if service == WEB:
            fix += ", or start without the web client (--no-web)"
        lines.append(f"{service} cannot listen on {address}: {problem}{who}; {fix}")
    return lines


@dataclass
class ProviderVerdict:
    """What the listing call said: `refusal` stops the start, `warning` is printed."""

    refusal: str | None = None
    warning: str | None = None


class ProviderCheck:
    """One model listing against the provider, in a child process watched by a thread."""

    def __init__(self, env: dict[str, str]) -> None:
        # The Mind's environment: the provider `tobe up` chose, the data directory whose
        # stored key it falls back on.
        self.env = env
        self.verdict = ProviderVerdict()
        self._thread = threading.Thread(target=self._run, name="provider-check", daemon=True)

    def start(self) -> ProviderCheck:
        self._thread.start()
        return self

    def result(self) -> ProviderVerdict:
        """The verdict, once the listing answered or timed out."""
        self._thread.join(CHECK_DEADLINE + 2)
        return self.verdict

    def refusal(self) -> str | None:
        """Why the start must stop, as soon as the listing said so; None meanwhile."""
        return self.verdict.refusal

    def _run(self) -> None:
        try:
            done = subprocess.run(
                [sys.executable, *CHECK_COMMAND],
                env=self.env,
                stdin=subprocess.DEVNULL,
                capture_output=True,
                text=True,
                timeout=CHECK_DEADLINE,
            )
        except subprocess.TimeoutExpired:
            why = f"no answer within {CHECK_DEADLINE:g} s"
            self.verdict = ProviderVerdict(warning=f"provider check inconclusive: {why}")
            return
        self.verdict = printed_verdict(done)


def printed_verdict(done: subprocess.CompletedProcess[str]) -> ProviderVerdict:
    """What the checking process printed; a warning with its last error line when it printed
    no verdict (it failed before it could list)."""
    lines = done.stdout.strip().splitlines()
    try:
        found = json.loads(lines[-1]) if done.returncode == 0 and lines else None
    except ValueError:
        found = None
    if isinstance(found, dict):
        return ProviderVerdict(refusal=found.get("refusal"), warning=found.get("warning"))
    why = (done.stderr.strip().splitlines() or [f"it exited with {done.returncode}"])[-1]
    return ProviderVerdict(warning=f"provider check inconclusive: {why}")
