"""The web client's third-party code: scripts/vendor_web.py copies exactly what the lock file
installs, `--check` catches any drift, and the committed copies are the pinned versions."""

from __future__ import annotations

import importlib.util
import json
import re
import shutil
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]
VENDOR = ROOT / "face" / "web" / "static" / "vendor"


def load_script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("vendor_web", ROOT / "scripts" / "vendor_web.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """A repository root whose node_modules holds (fake) packages."""
    modules = tmp_path / "face" / "web" / "node_modules"
    for source, _ in load_script().COPIES:
        path = modules / source
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"contents of {source}\n")
    return tmp_path


def test_copies_then_check_passes(tree: Path) -> None:
    script = load_script()
    assert script.main([], root=tree) == 0
    assert script.main(["--check"], root=tree) == 0
    copied = tree / "face" / "web" / "static" / "vendor" / "purify.es.js"
    assert copied.read_text() == "contents of dompurify/dist/purify.es.mjs\n"


def test_check_fails_on_an_edited_copy_and_on_a_stray_file(
    tree: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    script = load_script()
    script.main([], root=tree)
    vendor = tree / "face" / "web" / "static" / "vendor"
    (vendor / "marked.esm.js").write_text("edited by hand\n")
    (vendor / "extra.js").write_text("\n")
    assert script.main(["--check"], root=tree) == 1
    errors = capsys.readouterr().err
    assert "face/web/static/vendor/marked.esm.js differs" in errors
    assert "face/web/static/vendor/extra.js is not a vendored copy" in errors


def test_missing_packages_say_to_run_npm_ci(tree: Path) -> None:
    shutil.rmtree(tree / "face" / "web" / "node_modules" / "marked")
    with pytest.raises(SystemExit) as stopped:
        load_script().main(["--check"], root=tree)
    assert "npm ci --prefix face/web" in str(stopped.value.code)


def test_the_committed_copies_are_the_versions_the_lock_file_pins() -> None:
    lock = json.loads((ROOT / "face" / "web" / "package-lock.json").read_text())
    pinned = {
        name: lock["packages"][f"node_modules/{name}"]["version"]
        for name in ("marked", "dompurify", "axe-core")
    }
    package = json.loads((ROOT / "face" / "web" / "package.json").read_text())
    assert {**package["dependencies"], **package["devDependencies"]} == pinned
    marked = re.search(r"marked v(\S+)", (VENDOR / "marked.esm.js").read_text()[:200])
    purify = re.search(r"DOMPurify (\S+)", (VENDOR / "purify.es.js").read_text()[:200])
    axe = re.search(r"axe v(\S+)", (VENDOR / "axe.min.js").read_text()[:200])
    assert marked is not None and marked.group(1) == pinned["marked"]
    assert purify is not None and purify.group(1) == pinned["dompurify"]
    assert axe is not None and axe.group(1) == pinned["axe-core"]


def test_the_accessibility_checker_is_for_tests_and_never_loaded_by_the_page() -> None:
    page = (ROOT / "face" / "web" / "static" / "index.html").read_text()
    scripts = "".join(
        path.read_text() for path in (ROOT / "face" / "web" / "static" / "js").iterdir()
    )
    assert "axe" not in page and "axe.min.js" not in scripts
    lock = json.loads((ROOT / "face" / "web" / "package-lock.json").read_text())
    assert lock["packages"]["node_modules/axe-core"]["dev"] is True
