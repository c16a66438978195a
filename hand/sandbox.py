"""Where the reference Hand's commands run: in an OS sandbox that sees only the workspace.

Checking a command's arguments cannot keep a program inside the workspace: a symlink (`cat
link`), a recursive search, an option hiding a path (`--files0-from=../x`) or an interpreter
(`python3 -c …`) all reach past such checks. So each command runs under bubblewrap (`bwrap`):

- new user, PID, IPC, UTS, cgroup and network namespaces; the network is the host's only when
  `allow_network` is set (then also the resolver and CA files of /etc below);
- a new session (no terminal injection), no capabilities, a fresh /proc, a minimal /dev, an
  empty tmpfs /tmp, an environment of only PATH, HOME (the workspace), TMPDIR and the locale;
- read-only: /usr and the root-level system directories (/bin, /sbin, /lib*; symlinks stay
  symlinks), and from /etc only what dynamic linking, Debian's alternatives, time zones and
  name-service lookups need (`ETC_ENTRIES`; no account database: programs see numeric ids);
- read-write: the workspace, at its own path, as the working directory.

Nothing else of the host exists inside: not $HOME, not the data directory or its credentials,
not the Hand's environment. The PID namespace ends with its first process, whose host pid bwrap
reports (`--info-fd`), so killing that process kills every process the command started
(`hand.started_command`). `--die-with-parent` ends bwrap with its parent and the sandbox with
bwrap, but each asks the kernel for that only after some setup, too late for a Hand killed as a
command starts; what ends a command with a dead Hand is `hand.command_guard` (Linux).

Where no sandbox can run (no bubblewrap, no user namespaces, e.g. inside most containers), the
operator may opt in to `Unconfined` commands instead; `tobe hand serve` refuses to start
otherwise, and the Hand `tobe up` runs starts without `run_command` (`sandbox_problem` says
why, to `tobe up`'s banner and `tobe doctor` as well).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple, Protocol

from hand._tools import ToolError

# The PATH inside the sandbox; the programs found there are the host's, read-only.
SANDBOX_PATH = "/usr/local/bin:/usr/bin:/bin:/usr/local/sbin:/usr/sbin:/sbin"
ROOT_SYSTEM_DIRS = ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
ETC_ENTRIES = (
    "ld.so.cache",
    "ld.so.conf",
    "ld.so.conf.d",
    "alternatives",
    "localtime",
    "nsswitch.conf",
)
NETWORK_ETC_ENTRIES = (
    "resolv.conf",
    "hosts",
    "host.conf",
    "gai.conf",
    "ssl",
    "ca-certificates",
)
LOCALE_VARIABLES = ("LANG", "LC_ALL", "LC_CTYPE", "TZ")
PROBE_TIMEOUT = 30.0


class Report(NamedTuple):
    """A pipe on which bwrap reports its sandbox's first process (`--info-fd`): the child gets
    `write`, the caller reads `read` (`hand.started_command`)."""

    read: int
    write: int


class Launch(NamedTuple):
    """The process the OS starts for a command."""

    argv: list[str]
    env: dict[str, str]
    report: Report | None = None


class Confinement(Protocol):
    def launch(
        self, argv: list[str], workspace: Path, cwd: Path, *, report: bool = False
    ) -> Launch:
        """How to start `argv` in `cwd` (inside `workspace`); ToolError when it cannot run.
        With `report`, a sandbox says on a pipe which process to kill to end it all."""
        ...


def _program_missing(name: str) -> ToolError:
    return ToolError(f"program {name!r} is not installed on this Hand")


@dataclass(frozen=True)
class Sandbox:
    """Runs each command under bubblewrap, seeing only the workspace and the system files."""

    bwrap: str = "bwrap"
    allow_network: bool = False

    def launch(
        self, argv: list[str], workspace: Path, cwd: Path, *, report: bool = False
    ) -> Launch:
        bwrap = shutil.which(self.bwrap)
        if bwrap is None:
            raise ToolError(f"the command sandbox {self.bwrap!r} is not installed on this Hand")
        if shutil.which(argv[0], path=SANDBOX_PATH) is None:
            raise _program_missing(argv[0])
        options = self._options(workspace, cwd)
        pipe = Report(*os.pipe()) if report else None
        if pipe is not None:
            options += ["--info-fd", str(pipe.write)]
        return Launch([bwrap, *options, "--", *argv], {"PATH": SANDBOX_PATH}, pipe)

    def probe(self, workspace: Path) -> str | None:
        """Run `true` in the sandbox: None when it works, else why it does not."""
        if shutil.which(self.bwrap) is not None and shutil.which("true", path=SANDBOX_PATH) is None:
            # Systems whose programs live outside /usr and /bin (Nix, Guix): nothing can run.
            return (
                f"this system keeps no programs where the sandbox looks ({SANDBOX_PATH}); "
                "they live elsewhere (e.g. /nix/store), out of the sandbox's view"
            )
        try:
            launch = self.launch(["true"], workspace, workspace)
            done = subprocess.run(
                launch.argv, env=launch.env, capture_output=True, text=True, timeout=PROBE_TIMEOUT
            )
        except ToolError as exc:
            return str(exc)
        except (OSError, subprocess.TimeoutExpired) as exc:
            return f"{self.bwrap} could not be run: {exc}"
        if done.returncode != 0:
            detail = done.stderr.strip() or f"exit code {done.returncode}"
            return f"{self.bwrap} cannot create the sandbox: {detail}"
        return None

    def server_argv(
        self, argv: list[str], read_write: list[Path], read_only: list[Path], cwd: Path
    ) -> list[str]:
        """The bwrap command line running a long-lived server (e.g. an MCP server) that sees
        `read_write` and `read_only` besides the system files, in `cwd`.

        Unlike a command's, the environment is not cleared: the server gets the one bwrap is
        started with (what the server was configured with, which may hold secrets that must not
        appear on a command line), with PATH, HOME and TMPDIR set for inside the sandbox.
        """
        bwrap = shutil.which(self.bwrap)
        if bwrap is None:
            raise ToolError(f"the sandbox {self.bwrap!r} is not installed on this Hand")
        options = self._system_options()
        for path in read_only:
            options += ["--ro-bind", str(path), str(path)]
        for path in read_write:
            options += ["--bind", str(path), str(path)]
        options += ["--chdir", str(cwd)]
        for key, value in {"PATH": SANDBOX_PATH, "HOME": "/tmp", "TMPDIR": "/tmp"}.items():
            options += ["--setenv", key, value]
        return [bwrap, *options, "--", *argv]

    def _options(self, workspace: Path, cwd: Path) -> list[str]:
        options = self._system_options()
        options += ["--bind", str(workspace), str(workspace), "--chdir", str(cwd), "--clearenv"]
        environment = {"PATH": SANDBOX_PATH, "HOME": str(workspace), "TMPDIR": "/tmp"}
        environment |= {k: os.environ[k] for k in LOCALE_VARIABLES if k in os.environ}
        for key, value in environment.items():
            options += ["--setenv", key, value]
        return options

    def _system_options(self) -> list[str]:
        """Namespaces, /proc, /dev, /tmp and the system's read-only files."""
        options = ["--unshare-all"]
        if self.allow_network:
            options.append("--share-net")
        options += [
            "--die-with-parent",
            "--new-session",
            "--cap-drop",
            "ALL",
            "--proc",
            "/proc",
            "--dev",
            "/dev",
            "--tmpfs",
            "/tmp",
            "--ro-bind",
            "/usr",
            "/usr",
        ]
        for directory in ROOT_SYSTEM_DIRS:
            if os.path.islink(directory):
                options += ["--symlink", os.readlink(directory), directory]
            else:
                options += ["--ro-bind-try", directory, directory]
        etc = ETC_ENTRIES + (NETWORK_ETC_ENTRIES if self.allow_network else ())
        for entry in etc:
            options += ["--ro-bind-try", f"/etc/{entry}", f"/etc/{entry}"]
        return options


def sandbox_problem(bwrap: str = "bwrap", allow_network: bool = False) -> str | None:
    """Why commands cannot be sandboxed on this machine (None: they can), found by running
    `true` in a sandbox like a command's, around a scratch workspace."""
    with tempfile.TemporaryDirectory(prefix="tobe-sandbox-probe-") as scratch:
        return Sandbox(bwrap, allow_network=allow_network).probe(Path(scratch))


@dataclass(frozen=True)
class Unconfined:
    """Runs commands as the Hand's user with everything it can reach: only by explicit opt-in.

    The Hand's own settings (`TOBE_*`, which may hold its credential) are kept from commands.
    """

    def launch(
        self, argv: list[str], workspace: Path, cwd: Path, *, report: bool = False
    ) -> Launch:
        environment = {k: v for k, v in os.environ.items() if not k.startswith("TOBE_")}
        if shutil.which(argv[0], path=environment.get("PATH", os.defpath)) is None:
            raise _program_missing(argv[0])
        return Launch(list(argv), environment)
