"""No handwritten module under `mind/` is longer than 500 lines.

A module that long holds more than one job; split it along its seams instead of raising the
limit. Generated code lives in `tobe/v1`, so everything under `mind/` counts.
"""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MAX_LINES = 500


def line_count(path: Path) -> int:
    return len(path.read_text(encoding="utf-8").splitlines())


def test_no_module_under_mind_is_longer_than_500_lines() -> None:
    offenders = sorted(
        (str(path.relative_to(ROOT)), lines)
        for path in (ROOT / "mind").rglob("*.py")
        if (lines := line_count(path)) > MAX_LINES
    )
    assert not offenders, f"modules longer than {MAX_LINES} lines (split them): " + ", ".join(
        f"{path} ({lines})" for path, lines in offenders
    )
