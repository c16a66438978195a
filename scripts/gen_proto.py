"""Regenerate the Python contracts from proto/ (the one documented command).

Usage: python scripts/gen_proto.py [--check]

Two contracts: ToBe's own (proto/tobe/v1 -> tobe/v1, messages, gRPC stubs and .pyi stubs)
and the standard server reflection v1 (proto/grpc/reflection/v1 -> tobe/grpc_reflection_v1,
messages and .pyi only: protoc's gRPC stub would import it as `grpc.reflection.v1`, inside
grpcio's own package, so `tobe.runtime.reflection` registers that service itself). Each
package holds generated files only.

With --check, generate into a temporary directory and exit 1 when the result differs from
what is committed, so CI fails on drift.
"""

from __future__ import annotations

import filecmp
import shutil
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import grpc_tools
from grpc_tools import protoc

ROOT = Path(__file__).resolve().parent.parent
PROTO_ROOT = ROOT / "proto"
DO_NOT_EDIT = "Do not edit: run scripts/gen_proto.py."


@dataclass(frozen=True)
class Contract:
    """One proto package and the Python package its generated code lives in."""

    proto_dir: Path  # under proto/; also the proto package (tobe/v1 is `tobe.v1`)
    package: Path  # under the repository root
    grpc: bool  # generate gRPC stubs: only where `package` is `proto_dir`, as they import it

    @property
    def init_text(self) -> str:
        name = ".".join(self.proto_dir.parts)
        return f'"""Generated contracts of package {name}. {DO_NOT_EDIT}"""\n'


CONTRACTS = (
    Contract(Path("tobe") / "v1", Path("tobe") / "v1", grpc=True),
    Contract(Path("grpc") / "reflection" / "v1", Path("tobe") / "grpc_reflection_v1", grpc=False),
)


def generate(out_root: Path) -> None:
    """Run protoc for every contract; its files land in out_root/<contract.package>."""
    for contract in CONTRACTS:
        with tempfile.TemporaryDirectory() as raw:
            _protoc(contract, Path(raw))
            target = out_root / contract.package
            target.mkdir(parents=True, exist_ok=True)
            for generated in sorted((Path(raw) / contract.proto_dir).iterdir()):
                shutil.copyfile(generated, target / generated.name)
        (target / "__init__.py").write_text(contract.init_text)


def _protoc(contract: Contract, out: Path) -> None:
    """Python and mypy-protobuf .pyi outputs (and gRPC ones, if asked) of one contract."""
    protos = sorted(
        str(p.relative_to(PROTO_ROOT)) for p in (PROTO_ROOT / contract.proto_dir).glob("*.proto")
    )
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
        f"--python_out={out}",
        f"--mypy_out={out}",
    ]
    if contract.grpc:
        args += [f"--grpc_python_out={out}", f"--mypy_grpc_out={out}"]
    if protoc.main([*args, *protos]) != 0:
        raise SystemExit("protoc failed")


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
        for contract in CONTRACTS:
            shutil.rmtree(ROOT / contract.package, ignore_errors=True)
        generate(ROOT)
        print("generated " + ", ".join(str(c.package) for c in CONTRACTS))
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        generate(Path(tmp))
        diffs = [
            f"{contract.package}: {diff}"
            for contract in CONTRACTS
            for diff in differences(ROOT / contract.package, Path(tmp) / contract.package)
        ]
    if diffs:
        print("generated contracts are stale; run: python scripts/gen_proto.py", file=sys.stderr)
        print("\n".join(diffs), file=sys.stderr)
        return 1
    print("generated contracts are up to date")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
