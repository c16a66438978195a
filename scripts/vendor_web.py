"""Copy the web client's third-party code into face/web/static/vendor (the one documented way).

Usage: npm ci --prefix face/web && python scripts/vendor_web.py [--check]

The browser client has no build step: it imports `marked` (Markdown) and `dompurify` (HTML
sanitising) as ES modules from static/vendor. `axe-core` (accessibility rules) is copied there
for the browser tests, which load it into the page they check; index.html never loads it.
Their versions are pinned in face/web/package.json and package-lock.json; this script copies
each package's ESM build (axe-core's minified script) and licence files from
face/web/node_modules, byte for byte, under a `.js` name (a module script is refused unless
served as JavaScript, and `.mjs` is not known to every MIME table). The copies are committed,
so a `pip install` runs the client without npm.

With --check, exit 1 when a committed copy differs from what node_modules holds (or is
missing, or a file in static/vendor is not one of the copies), so CI fails on drift.
"""

from __future__ import annotations

import filecmp
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
WEB = Path("face") / "web"

# (file in node_modules, name in static/vendor)
COPIES = (
    ("marked/lib/marked.esm.js", "marked.esm.js"),
    ("marked/LICENSE", "marked.LICENSE.txt"),
    ("dompurify/dist/purify.es.mjs", "purify.es.js"),
    ("dompurify/LICENSE", "dompurify.LICENSE.txt"),
    ("dompurify/LICENSE-MPL", "dompurify.LICENSE-MPL.txt"),
    ("axe-core/axe.min.js", "axe.min.js"),
    ("axe-core/LICENSE", "axe-core.LICENSE.txt"),
)


def sources(root: Path) -> list[tuple[Path, Path]]:
    """Each (source, target) pair; SystemExit when node_modules lacks a source."""
    modules, vendor = root / WEB / "node_modules", root / WEB / "static" / "vendor"
    pairs = [(modules / source, vendor / target) for source, target in COPIES]
    missing = [str(source.relative_to(root)) for source, _ in pairs if not source.is_file()]
    if missing:
        sys.exit(
            f"missing {', '.join(missing)}: run `npm ci --prefix face/web` first "
            "(it installs the versions pinned in face/web/package-lock.json)"
        )
    return pairs


def check(root: Path, pairs: list[tuple[Path, Path]]) -> list[str]:
    """What differs between node_modules and the committed copies."""
    problems = [
        f"{target.relative_to(root)} differs from {source.relative_to(root)}"
        for source, target in pairs
        if not target.is_file() or not filecmp.cmp(source, target, shallow=False)
    ]
    expected = {target for _, target in pairs}
    vendor = root / WEB / "static" / "vendor"
    problems += [
        f"{path.relative_to(root)} is not a vendored copy"
        for path in sorted(vendor.iterdir() if vendor.is_dir() else [])
        if path not in expected
    ]
    return problems


def main(argv: list[str], root: Path = ROOT) -> int:
    pairs = sources(root)
    if "--check" in argv:
        problems = check(root, pairs)
        for problem in problems:
            print(problem, file=sys.stderr)
        if problems:
            print("run: python scripts/vendor_web.py", file=sys.stderr)
        return 1 if problems else 0
    for source, target in pairs:
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, target)
    print(f"copied {len(pairs)} files into {WEB / 'static' / 'vendor'}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
