"""The services a running `tobe up` supervises: a FAIL for each one it left stopped.

`tobe up` restarts a service that fails, until its start limit; then it leaves it stopped and
records it, with its last error line and log (`management.up_state`), as it does one that
exited by itself. ToBe then runs without
it (no Face: no client reaches the Mind; no Hand: no tools), which only its log explains.
"""

from __future__ import annotations

from management.doctor.report import Finding, Status
from management.doctor.state import Doctor
from management.up_state import running_up

CHECK = "services"


def check_services(doctor: Doctor) -> list[Finding]:
    settings = doctor.settings
    if settings is None:
        return [Finding(Status.SKIP, CHECK, "the configuration does not load")]
    state = running_up(settings.data_dir)
    if state is None:
        text = f"no `tobe up` supervises services on {settings.data_dir}"
        return [Finding(Status.SKIP, CHECK, text)]
    if not state.stopped:
        names = ", ".join(state.services)
        return [Finding(Status.OK, CHECK, f"`tobe up` (pid {state.pid}) runs {names}")]
    return [
        Finding(
            Status.FAIL,
            CHECK,
            f"{stopped.name} {stopped.reason} and `tobe up` (pid {state.pid}) left it stopped. "
            f"{'Last error' if stopped.failed else 'Its last log line'}: {stopped.last_line} "
            f"(log {stopped.log})",
            f"read {stopped.log}, correct the cause, then restart `tobe up` (Ctrl-C, and start "
            "it again)",
        )
        for stopped in state.stopped
    ]
