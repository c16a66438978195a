"""How the `tobe` command ends on an error: one line a person can act on, never a traceback.

- A configuration error (`tobe.config.ConfigError`): each problem on its own `Error:` line
  (file and line, or the `TOBE_*` variable), exit status 2 like a usage error.
- Another error a person causes (a file they named cannot be read, the data directory is
  held, TLS files that do not fit): `Error: <what>`, exit status 1.
- Anything else is a bug or an environment failure: one line saying which command failed with
  what, and where its traceback went: `<data dir>/logs/cli.log` (redacted like every log; a
  temporary file when there is no data directory yet), or stderr with `tobe --verbose` /
  `TOBE_VERBOSE=1`. A `… serve` command writes it to stderr,
  which is its service log under `tobe up`.
"""

from __future__ import annotations

import logging
import os
import sys
import tempfile
import traceback
from pathlib import Path
from typing import IO

import click

CONFIG_EXIT = 2
ERROR_LOG = "cli.log"


class PersonError(click.ClickException):
    """An error whose message says what to fix; shown as `Error:` lines without a traceback."""

    def __init__(self, lines: list[str]) -> None:
        super().__init__("\n".join(lines))
        self.lines = lines

    def show(self, file: IO[str] | None = None) -> None:
        for line in self.lines:
            click.echo(f"Error: {line}", err=file is None, file=file)


class ConfigProblem(PersonError):
    """The configuration cannot be used: exit status 2, like a usage error."""

    exit_code = CONFIG_EXIT


def translate(error: Exception, command: str, *, verbose: bool) -> click.ClickException:
    """The click exception that ends `command` after `error` escaped it."""
    from tobe.config import ConfigError
    from tobe.runtime.statelock import StateLockBusy
    from tobe.runtime.tls import TlsConfigError

    if isinstance(error, ConfigError):
        return ConfigProblem(error.problems)
    if isinstance(error, StateLockBusy | TlsConfigError):
        return PersonError([str(error)])
    if isinstance(error, OSError) and error.filename is not None:
        return PersonError([_os_error(error)])
    return PersonError([_unexpected(error, command, verbose=verbose)])


def _os_error(error: OSError) -> str:
    target = str(error.filename)
    if error.filename2 is not None:
        target += f" -> {error.filename2}"
    return f"{target}: {error.strerror or error}"


def _unexpected(error: Exception, command: str, *, verbose: bool) -> str:
    first_line = next(iter(str(error).splitlines()), "")
    summary = f"`{command}` failed: {type(error).__name__}: {first_line}".rstrip(": ")
    if verbose or command.endswith(" serve"):
        traceback.print_exception(error, file=sys.stderr)
        return summary
    where = _log_traceback(error, command)
    return f"{summary} (traceback in {where}; `tobe --verbose …` prints it)"


def _log_traceback(error: Exception, command: str) -> Path:
    """Append the traceback, redacted, to the data directory's CLI log; returns the file."""
    from tobe.runtime.private_files import private_directory, private_file
    from tobe.runtime.redact import RedactingFilter

    data_dir = _data_dir()
    try:
        if not data_dir.is_dir():
            # Not created just for this: an error leaves no data directory behind.
            raise FileNotFoundError(data_dir)
        path = private_file(private_directory(data_dir / "logs") / ERROR_LOG)
    except OSError:
        descriptor, name = tempfile.mkstemp(prefix="tobe-error-", suffix=".log")
        os.close(descriptor)
        path = Path(name)
    handler = logging.FileHandler(path, encoding="utf-8")
    handler.setFormatter(logging.Formatter("%(asctime)s %(message)s"))
    handler.addFilter(RedactingFilter())
    logger = logging.Logger("tobe.cli")
    logger.addHandler(handler)
    logger.error("`%s` failed", command, exc_info=error)
    handler.close()
    return path


def _data_dir() -> Path:
    from tobe.config import default_data_dir, load_settings

    try:
        return load_settings().data_dir
    except Exception:
        return default_data_dir()
