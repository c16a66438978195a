"""`tobe up --install-service`: a systemd user unit that runs this `tobe up` at login.

The unit runs the same Python and the same `tobe up`, its options written as the `TOBE_*`
variables they stand for (`UpOptions.environment`), with the data directory and the config
file named explicitly: a unit does not see the shell it was written from. Provider keys are
never written into it (`tobe setup` stores the key where the Mind finds it). systemd sends
SIGTERM to `tobe up` alone (`KillMode=mixed`), which stops its services in order; what is
left after `TimeoutStopSec` is killed. `Restart=on-failure` restarts `tobe up` itself when it
fails (e.g. every service left stopped); `tobe up` restarts its own services.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

UNIT_NAME = "tobe.service"
# The shell variables a unit does not carry over: keys stay out of unit files.
PROVIDER_VARIABLES = (
    "ANTHROPIC_API_KEY",
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "GEMINI_API_KEY",
    "GOOGLE_API_KEY",
)
ENABLE_COMMAND = f"systemctl --user daemon-reload && systemctl --user enable --now {UNIT_NAME}"


def unit_directory(env: dict[str, str]) -> Path:
    """`$XDG_CONFIG_HOME/systemd/user` (default `~/.config/systemd/user`)."""
    config_home = env.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(config_home) / "systemd" / "user"


def _quote(word: str, *, command: bool) -> str:
    """`word` as one systemd word: `%` specifiers and (on a command line) `$` expansions
    escaped, quoted when it holds anything but plain characters."""
    escaped = word.replace("\\", "\\\\").replace('"', '\\"').replace("%", "%%")
    if command:
        escaped = escaped.replace("$", "$$")
    plain = escaped == word and word and not any(c.isspace() or c in "'\";" for c in word)
    return word if plain else f'"{escaped}"'


def unit_text(environment: dict[str, str]) -> str:
    """The unit running `tobe up` with this Python and `environment`."""
    command = " ".join(_quote(word, command=True) for word in (sys.executable, "-m", "tobe", "up"))
    lines = [
        "# Written by `tobe up --install-service`; run that again to rewrite it.",
        "[Unit]",
        "Description=ToBe, a personal AI agent (tobe up)",
        "After=network-online.target",
        "Wants=network-online.target",
        "",
        "[Service]",
        "Type=simple",
        f"ExecStart={command}",
        *(
            f"Environment={_quote(f'{name}={value}', command=False)}"
            for name, value in sorted(environment.items())
        ),
        "Restart=on-failure",
        "RestartSec=5",
        "KillMode=mixed",
        "TimeoutStopSec=45",
        "",
        "[Install]",
        "WantedBy=default.target",
        "",
    ]
    return "\n".join(lines)


def install_unit(environment: dict[str, str], env: dict[str, str]) -> tuple[Path, bool]:
    """Write the unit (owner-only directory, file readable by its owner only: it names the
    data directory); returns its path and whether it replaced another."""
    directory = unit_directory(env)
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / UNIT_NAME
    replaced = path.exists()
    temporary = path.with_suffix(".tmp")
    temporary.write_text(unit_text(environment))
    os.chmod(temporary, 0o600)
    os.replace(temporary, path)
    return path, replaced


def left_behind(written: dict[str, str], env: dict[str, str]) -> list[str]:
    """The variables of this shell that ToBe reads and the unit does not carry over."""
    return sorted(
        name
        for name in env
        if (name.startswith("TOBE_") and name not in written) or name in PROVIDER_VARIABLES
    )
