"""Errors end `tobe` with one line and the right status: no traceback unless asked for."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from tobe.cli import main

BAD_KIND = "[provider] kind: 'openia' is not one of scripted, openai, anthropic, gemini"


def _tobe(args: list[str], config: Path, data_dir: Path) -> subprocess.CompletedProcess[str]:
    env = {name: value for name, value in os.environ.items() if not name.startswith("TOBE_")}
    env.update(TOBE_CONFIG=str(config), TOBE_DATA_DIR=str(data_dir))
    return subprocess.run(
        [sys.executable, "-m", "tobe", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )


@pytest.fixture
def bad_config(tmp_path: Path) -> Path:
    config = tmp_path / "config.toml"
    config.write_text('[mind]\nlisten = "127.0.0.1:0"\n\n[provider]\nkind = "openia"\n')
    return config


@pytest.mark.parametrize("command", [["mind", "serve"], ["up"]])
def test_a_bad_config_ends_a_service_start_with_one_line(
    command: list[str], bad_config: Path, tmp_path: Path
) -> None:
    done = _tobe(command, bad_config, tmp_path / "data")
    assert done.returncode == 2
    assert done.stderr == f"Error: {bad_config}:5: {BAD_KIND}\n"
    assert done.stdout == ""
    assert not (tmp_path / "data").exists()  # it changed nothing


@pytest.mark.parametrize("command", [["chat"], ["admin", "status"]])
def test_a_bad_config_ends_a_client_command_with_one_line(
    command: list[str], bad_config: Path, tmp_path: Path
) -> None:
    env = {"TOBE_CONFIG": str(bad_config), "TOBE_DATA_DIR": str(tmp_path / "data")}
    result = CliRunner().invoke(main, command, env=env)
    assert result.exit_code == 2
    assert result.stderr == f"Error: {bad_config}:5: {BAD_KIND}\n"


@pytest.fixture
def explode() -> Iterator[None]:
    """A `tobe explode` command failing with an error no one anticipated."""

    @click.command("explode")
    def command() -> None:
        raise RuntimeError("the flux capacitor is empty")

    main.add_command(command)
    try:
        yield
    finally:
        main.commands.pop("explode")


def test_an_unexpected_error_is_one_line_naming_where_its_traceback_went(
    explode: None, tmp_path: Path
) -> None:
    (tmp_path / "data").mkdir(mode=0o700)
    env = {"TOBE_DATA_DIR": str(tmp_path / "data"), "TOBE_CONFIG": str(tmp_path / "none.toml")}
    result = CliRunner().invoke(main, ["explode"], env=env)
    log = tmp_path / "data" / "logs" / "cli.log"
    assert result.exit_code == 1
    assert result.stderr == (
        "Error: `tobe explode` failed: RuntimeError: the flux capacitor is empty "
        f"(traceback in {log}; `tobe --verbose …` prints it)\n"
    )
    assert "Traceback (most recent call last)" in log.read_text()
    assert oct(log.stat().st_mode & 0o777) == oct(0o600)


def test_verbose_prints_the_traceback(explode: None, tmp_path: Path) -> None:
    env = {"TOBE_DATA_DIR": str(tmp_path / "data"), "TOBE_CONFIG": str(tmp_path / "none.toml")}
    result = CliRunner().invoke(main, ["--verbose", "explode"], env=env)
    assert result.exit_code == 1
    assert "Traceback (most recent call last)" in result.stderr
    assert result.stderr.endswith(
        "Error: `tobe explode` failed: RuntimeError: the flux capacitor is empty\n"
    )
    assert not (tmp_path / "data" / "logs").exists()


def test_a_file_that_cannot_be_read_is_named(tmp_path: Path) -> None:
    @click.command("read")
    def command() -> None:
        (tmp_path / "missing.txt").read_text()

    main.add_command(command)
    try:
        result = CliRunner().invoke(main, ["read"])
    finally:
        main.commands.pop("read")
    assert result.exit_code == 1
    assert result.stderr == f"Error: {tmp_path / 'missing.txt'}: No such file or directory\n"


def test_a_message_of_several_lines_is_cut_to_its_first_without_a_data_directory(
    tmp_path: Path,
) -> None:
    @click.command("verbose-failure")
    def command() -> None:
        raise ConnectionError("connection refused\n\tIs the server running?\n(background)")

    env = {"TOBE_DATA_DIR": str(tmp_path / "data"), "TOBE_CONFIG": str(tmp_path / "none.toml")}
    main.add_command(command)
    try:
        result = CliRunner().invoke(main, ["verbose-failure"], env=env)
    finally:
        main.commands.pop("verbose-failure")
    [line] = result.stderr.splitlines()
    prefix = (
        "Error: `tobe verbose-failure` failed: ConnectionError: connection refused (traceback in "
    )
    assert line.startswith(prefix)
    # No data directory is created for it: the traceback went to a temporary file.
    log = Path(line.removeprefix(prefix).split(";")[0])
    assert "ConnectionError: connection refused\n\tIs the server running?" in log.read_text()
    log.unlink()
    assert not (tmp_path / "data").exists()
