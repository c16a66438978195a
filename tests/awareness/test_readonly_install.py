"""Awareness installed read-only (as in the image) and run by another user keeps its files apart.

The image installs the project into a root-owned environment and runs every service as an
unprivileged user; built-in adapters then sit in a directory that user cannot write. Here the
project is installed non-editable into a temp directory (`pip install --target`), made
read-only, and served by uid 65534 with a data directory of its own. The dependencies come from
this test run's environment, read-only too.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from awareness_harness import PROBE, AwarenessProcess, Client, add_adapter

REPO = Path(__file__).resolve().parents[2]
# What docker/Dockerfile copies into its build stage.
SOURCES = ("pyproject.toml", "README.md", "tobe", "mind", "hand", "face", "awareness", "management")
BUILTINS = ("clock", "email", "files", "webhook")
OTHER_UID = 65534


def _as_other_user() -> list[str]:
    """The command prefix that runs a program as OTHER_UID (needs root)."""
    if os.geteuid() != 0:
        pytest.skip("running Awareness as a second user needs root (CI runs as root)")
    if shutil.which("setpriv"):
        return [
            "setpriv",
            f"--reuid={OTHER_UID}",
            f"--regid={OTHER_UID}",
            "--clear-groups",
            "--",
        ]
    return ["runuser", "-u", "nobody", "--"]


def _interpreter_for(prefix: list[str]) -> str:
    """A Python of this run's version that the other user may execute.

    This run's own interpreter may sit where only root can read (a pyenv under /root); the same
    version installed system-wide loads this run's compiled dependencies just as well.
    """
    version = f"{sys.version_info.major}.{sys.version_info.minor}"
    candidates = [
        sys.executable,
        os.path.realpath(sys.executable),
        shutil.which(f"python{version}"),
        f"/usr/local/bin/python{version}",
        f"/usr/bin/python{version}",
    ]
    check = f"import sys; assert '%d.%d' % sys.version_info[:2] == {version!r}"
    for candidate in filter(None, candidates):
        ran = subprocess.run(
            [*prefix, candidate, "-c", check], capture_output=True, env={"PATH": os.defpath}
        )
        if ran.returncode == 0:
            return candidate
    raise AssertionError(f"no Python {version} that uid {OTHER_UID} may run: tried {candidates}")


def _install(target: Path, workdir: Path) -> None:
    source = workdir / "src"
    source.mkdir()
    for name in SOURCES:
        path = REPO / name
        if path.is_dir():
            shutil.copytree(
                path,
                source / name,
                ignore=shutil.ignore_patterns("__pycache__", "config.json", "data"),
            )
        else:
            shutil.copy2(path, source / name)
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--quiet",
            "--no-deps",
            "--no-index",
            "--no-build-isolation",
            "--target",
            str(target),
            str(source),
        ],
        check=True,
        capture_output=True,
    )
    shutil.rmtree(source)


def _snapshot(*roots: Path) -> dict[str, tuple[int, int]]:
    return {
        str(p): (p.stat().st_mode, p.stat().st_mtime_ns)
        for root in roots
        for p in sorted(root.rglob("*"))
    }


@pytest.fixture
def readonly_install() -> Iterator[tuple[AwarenessProcess, list[str]]]:
    """A prepared process and the command prefix running this Python as the other user."""
    prefix = _as_other_user()
    python = _interpreter_for(prefix)
    root = Path(tempfile.mkdtemp(prefix="aw-ro-"))
    root.chmod(0o755)
    site = root / "site"
    _install(site, root)
    adapters = root / "adapters"
    adapters.mkdir()
    add_adapter(adapters, PROBE)
    data = root / "data"
    data.mkdir(mode=0o700)
    os.chown(data, OTHER_UID, OTHER_UID)
    subprocess.run(["chmod", "-R", "a-w", str(site), str(adapters)], check=True)
    paths = sysconfig.get_paths()
    dependencies = dict.fromkeys([paths["purelib"], paths["platlib"]])
    run_as = [*prefix, python]
    proc = AwarenessProcess(
        root,
        adapters,
        data,
        data / "a.sock",
        extra_env={
            "TOBE_AWARENESS__BUILTIN_ADAPTERS": "true",
            "PYTHONPATH": os.pathsep.join([str(site), *dependencies]),
            "PYTHONDONTWRITEBYTECODE": "1",
            "HOME": str(data),
        },
        command=[*run_as, "-m", "tobe", "awareness", "serve"],
    )
    try:
        yield proc, run_as
    finally:
        if proc.process is not None:
            proc.process.kill()
            proc.process.wait()
        shutil.rmtree(root, ignore_errors=True)


async def test_a_read_only_install_run_as_another_user_serves_with_adapter_files_in_its_data_dir(
    readonly_install: tuple[AwarenessProcess, list[str]],
):
    proc, run_as = readonly_install
    site = proc.root / "site"
    imported = subprocess.run(
        [*run_as, "-c", "import awareness; print(awareness.__file__)"],
        env=proc.env(),
        cwd=proc.root,
        capture_output=True,
        text=True,
        check=True,
    )
    assert imported.stdout.strip() == str(site / "awareness" / "__init__.py")
    before = _snapshot(site, proc.adapters_dir)

    proc.start()
    client = Client(proc.target)
    adapters = {a.name: a for a in await client.adapters()}
    await client.close()

    assert sorted(adapters) == sorted([*BUILTINS, "probe"])
    assert adapters["clock"].running, adapters["clock"].last_error
    for name in adapters:
        instance = proc.instance_dir(name)
        assert (instance / "config.json").is_file(), name
        assert (instance / "data").is_dir(), name
        assert (instance / "config.json").stat().st_uid == OTHER_UID
    webhook = proc.instance_dir("webhook") / "config.json"
    assert json.loads(webhook.read_text()) == json.loads(
        (site / "awareness" / "adapters" / "webhook" / "config.default.json").read_text()
    )
    assert proc.stop() == 0
    # Nothing was written into the install or the adapters directory.
    assert _snapshot(site, proc.adapters_dir) == before
