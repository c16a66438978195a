"""Regenerate the Python contracts in tobe/v1 from proto/tobe/v1 (the one documented command).

Usage: python scripts/gen_proto.py [--check]

With --check, generate into a temporary directory and exit 1 when the result differs from
what is committed, so CI fails on drift.
"""

from __future__ import annotations

import filecmp
import shutil
import sys
import tempfile
from pathlib import Path

import grpc_tools
from grpc_tools import protoc

ROOT = Path(__file__).resolve().parent.parent
PROTO_ROOT = ROOT / "proto"
PACKAGE = Path("tobe") / "v1"
INIT_TEXT = '"""Generated contracts of package tobe.v1. Do not edit: run scripts/gen_proto.py."""\n'


def generate(out_root: Path) -> None:
    """Run protoc (python, grpc and mypy-protobuf .pyi outputs) into out_root/tobe/v1."""
    (out_root / PACKAGE).mkdir(parents=True, exist_ok=True)
    protos = sorted(str(p.relative_to(PROTO_ROOT)) for p in (PROTO_ROOT / PACKAGE).glob("*.proto"))
    well_known = Path(grpc_tools.__file__).parent / "_proto"
    # mypy-protobuf installs its plugins beside the interpreter; name them explicitly so the
    # script works without an activated virtualenv.
    bindir = Path(sys.executable).parent
    args = [
        "protoc",
        f"--plugin=protoc-gen-mypy={bindir / 'protoc-gen-mypy'}",
        f"--plugin=protoc-gen-mypy_grpc={bindir / 'protoc-gen-mypy_grpc'}",
        f"-I{PROTO_ROOT}",
        f"-I{well_known}",
        f"--python_out={out_root}",
        f"--grpc_python_out={out_root}",
        f"--mypy_out={out_root}",
        f"--mypy_grpc_out={out_root}",
        *protos,
    ]
    if protoc.main(args) != 0:
        raise SystemExit("protoc failed")
    (out_root / PACKAGE / "__init__.py").write_text(INIT_TEXT)


def differences(a: Path, b: Path) -> list[str]:
    cmp = filecmp.dircmp(a, b, ignore=["__pycache__"])
    diffs = [f"only in committed: {n}" for n in cmp.left_only]
    diffs += [f"missing from committed: {n}" for n in cmp.right_only]
    diffs += [f"differs: {n}" for n in cmp.diff_files]
    # dircmp compares shallowly by stat; confirm content for the "same" ones.
    diffs += [
        f"differs: {n}" for n in cmp.same_files if (a / n).read_bytes() != (b / n).read_bytes()
    ]
    return diffs


def main() -> int:
    check = "--check" in sys.argv[1:]
    if not check:
        target = ROOT / PACKAGE
        if target.exists():
            shutil.rmtree(target)
        generate(ROOT)
        print(f"generated {target.relative_to(ROOT)}")
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        generate(Path(tmp))
        diffs = differences(ROOT / PACKAGE, Path(tmp) / PACKAGE)
    if diffs:
        print("generated contracts are stale; run: python scripts/gen_proto.py", file=sys.stderr)
        print("\n".join(diffs), file=sys.stderr)
        return 1
    print("generated contracts are up to date")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
