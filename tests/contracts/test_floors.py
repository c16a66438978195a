"""The Mind's floors hold, and the import-linter contracts that say so would catch a break.

`lint-imports` reads the contracts in `pyproject.toml` (`[tool.importlinter]`). The planted
cases run it on a copy of the packages with one bad import added, so a contract that stopped
checking anything (a layer renamed away, a typo in a module name) fails here.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")


def _lint(root: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(root)}
    return subprocess.run(
        [str(LINT_IMPORTS), str(root / "pyproject.toml"), "--no-cache"],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.fixture(scope="module")
def copy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The packages the contracts name and the contracts themselves, outside the checkout."""
    root = tmp_path_factory.mktemp("floors")
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    for package in ("mind", "tobe"):
        shutil.copytree(ROOT / package, root / package, ignore=ignore)
    shutil.copy(ROOT / "pyproject.toml", root / "pyproject.toml")
    return root


def _plant(root: Path, module: str, source: str) -> Path:
    path = root.joinpath(*module.split(".")).with_suffix(".py")
    path.write_text(f'"""Planted."""\n\n{source}\n', encoding="utf-8")
    return path


def test_the_checkout_keeps_every_contract() -> None:
    result = _lint(ROOT)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "BROKEN" not in result.stdout


def test_an_upward_import_breaks_the_floors(copy: Path) -> None:
    planted = _plant(copy, "mind.store.planted", "from mind.api import mind_servicer")
    try:
        result = _lint(copy)
    finally:
        planted.unlink()
    assert result.returncode == 1
    assert "The Mind's floors BROKEN" in result.stdout
    assert "mind.store.planted -> mind.api.mind_servicer" in result.stdout


def test_a_proto_in_domain_code_breaks_the_edges_contract(copy: Path) -> None:
    planted = _plant(copy, "mind.memory.planted", "from tobe.v1 import common_pb2")
    try:
        result = _lint(copy)
    finally:
        planted.unlink()
    assert result.returncode == 1
    assert "Protos stay at the edges BROKEN" in result.stdout
    assert "mind.memory.planted -> tobe.v1.common_pb2" in result.stdout


def test_every_mind_subpackage_stands_on_a_floor() -> None:
    """A new package outside the list would be unchecked by the layers contract."""
    import tomllib

    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    contracts = config["tool"]["importlinter"]["contracts"]
    layers = next(c["layers"] for c in contracts if c["type"] == "layers")
    named = {name.strip() for layer in layers for name in layer.split("|")}
    packages = {
        f"mind.{path.stem if path.is_file() else path.name}"
        for path in (ROOT / "mind").iterdir()
        if (path.is_dir() and (path / "__init__.py").is_file())
        or (path.suffix == ".py" and path.name != "__init__.py")
    }
    assert sorted(packages - named) == []
