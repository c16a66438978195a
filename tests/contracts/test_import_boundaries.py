"""Process packages meet only through contracts, the shared `tobe` package and named entry points.

Each process package (`mind`, `face`, `hand`, `awareness`, and the operator CLI `management`)
may import `tobe.*` and its own modules. It may import another process package only through
the public entry points listed in `PUBLIC`; the shared `tobe` package imports no process
package (its root command names them as strings, imported on first use). And only the gRPC
edges listed in `GRPC_EDGES` import `grpc`: domain modules never do.

Every handwritten module is read as source (nothing is imported), so a violation is reported
even on a branch that is never executed, such as an `if TYPE_CHECKING:` block.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PROCESSES = ("mind", "face", "hand", "awareness", "management")
SHARED = "tobe"
GENERATED = Path("tobe/v1")

# Importing process package -> the modules of other process packages it may import.
PUBLIC: dict[str, frozenset[str]] = {
    # `tobe admin` serves Management in-process when no Mind runs (`tobe up` imports none of
    # the Mind's code: `[tool.importlinter]` holds it to that);
    # `tobe setup` and `tobe models` list models against the catalog, ask local model servers
    # what they serve each with, and store the key;
    # `tobe doctor` reads the store's schema revision and migrates a store that is behind;
    # `tobe backup` and `tobe restore` read it, and migrate a restored store;
    # both `tobe up` and `tobe doctor` ask whether the Hand's command sandbox runs here;
    # `tobe admin channels` pairs people in the channels' state file, and `tobe doctor` checks
    # the enabled channels of the networks' registry.
    "management": frozenset(
        {
            "face.channels.state",
            "face.channels.networks",
            "hand.sandbox",
            "mind.management",
            "mind.store.migrate",
            "mind.store.engine",
            "mind.providers.listing",
            "mind.providers.server_facts",
            "mind.providers.catalog",
            "mind.credentials.provider_keys",
        }
    ),
}

# Modules that speak gRPC: servers, servicers and their status tables, interceptors, clients,
# and the command-line tools that call services. Every other handwritten module is domain code.
GRPC_EDGES = frozenset(
    {
        "awareness/auth.py",
        "awareness/servicer.py",
        "face/chat/session.py",
        "face/commands.py",
        "face/mind_client.py",
        "face/servicer.py",
        "hand/_hand.py",
        "hand/check/link.py",
        "hand/check/scenarios.py",
        "hand/check/session.py",
        "management/cli_support.py",
        "mind/credentials/interceptor.py",
        "mind/awareness/client.py",
        "mind/management/servicer.py",
        "mind/remote/servicer.py",
        "mind/status_codes.py",
        "mind/api/mind_servicer.py",
        # Forwards a conversation's calls to the Mind that owns it (a gRPC client and server).
        "mind/api/forwarding.py",
    }
)


@dataclass(frozen=True)
class Import:
    path: Path
    line: int
    statement: str
    # The module the statement brings in: `a.b` for `import a.b`, `from a.b import c`, or
    # `from a import b` when `b` is a submodule of `a`.
    target: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.statement}"


def handwritten_modules() -> list[Path]:
    roots = [*PROCESSES, SHARED]
    return sorted(
        path.relative_to(ROOT)
        for root in roots
        for path in (ROOT / root).rglob("*.py")
        if not path.relative_to(ROOT).is_relative_to(GENERATED)
    )


def _is_module(name: str) -> bool:
    base = ROOT.joinpath(*name.split("."))
    return base.with_suffix(".py").is_file() or (base / "__init__.py").is_file()


def _absolute(path: Path, node: ast.ImportFrom) -> str:
    """The module a `from` import names, with relative imports resolved against `path`."""
    if node.level == 0:
        return node.module or ""
    package = list(path.with_suffix("").parts[: -node.level])
    return ".".join([*package, *([node.module] if node.module else [])])


def imports(path: Path, source: str) -> Iterator[Import]:
    """Every import statement of the module at `path` (relative to the root) in `source`."""
    tree = ast.parse(source, filename=str(path))
    for node in ast.walk(tree):
        statement = ast.unparse(node) if isinstance(node, ast.Import | ast.ImportFrom) else ""
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield Import(path, node.lineno, statement, alias.name)
        elif isinstance(node, ast.ImportFrom):
            module = _absolute(path, node)
            for alias in node.names:
                submodule = f"{module}.{alias.name}"
                target = submodule if _is_module(submodule) else module
                yield Import(path, node.lineno, statement, target)


def _within(target: str, module: str) -> bool:
    return target == module or target.startswith(module + ".")


def boundary_violations(found: Iterator[Import]) -> list[str]:
    """Imports of another process package that are not one of its public entry points."""
    violations = []
    for item in found:
        importer = item.path.parts[0]
        imported = item.target.split(".")[0]
        if imported not in PROCESSES or imported == importer:
            continue
        if item.target in PUBLIC.get(importer, frozenset()):
            continue
        allowed = ", ".join(sorted(PUBLIC.get(importer, ()))) or "none"
        violations.append(
            f"{item}: {importer} may not import {item.target} "
            f"(public entry points of other processes for {importer}: {allowed})"
        )
    return violations


def grpc_violations(found: Iterator[Import]) -> list[str]:
    """Imports of grpc outside the shared runtime and the gRPC edges."""
    return [
        f"{item}: only gRPC edges import grpc (convert and map errors at the servicer or "
        "client, or add the module to GRPC_EDGES if it is one)"
        for item in found
        if _within(item.target, "grpc")
        and item.path.parts[0] != SHARED
        and item.path.as_posix() not in GRPC_EDGES
    ]


def all_imports() -> Iterator[Import]:
    for path in handwritten_modules():
        yield from imports(path, (ROOT / path).read_text(encoding="utf-8"))


def test_processes_import_each_other_only_through_public_entry_points() -> None:
    violations = boundary_violations(all_imports())
    assert not violations, "\n".join(violations)


def test_only_grpc_edges_import_grpc() -> None:
    violations = grpc_violations(all_imports())
    assert not violations, "\n".join(violations)


def test_every_listed_entry_point_exists_and_every_edge_imports_grpc() -> None:
    """A renamed module or a servicer that stopped needing grpc leaves no stale exemption."""
    entry_points = set().union(*PUBLIC.values())
    assert [name for name in sorted(entry_points) if not _is_module(name)] == []
    speaking = {item.path.as_posix() for item in all_imports() if _within(item.target, "grpc")}
    assert sorted(GRPC_EDGES - speaking) == []


def test_a_violation_names_the_file_line_and_import() -> None:
    source = (
        "from face.queue import Closing\n"
        "from . import projection\n"
        "from mind import credentials\n"
        "import mind.management.service\n"
        "from tobe.config import Settings\n"
    )
    found = imports(Path("face/servicer.py"), source)
    assert boundary_violations(found) == [
        "face/servicer.py:3: from mind import credentials: face may not import "
        "mind.credentials (public entry points of other processes for face: none)",
        "face/servicer.py:4: import mind.management.service: face may not import "
        "mind.management.service (public entry points of other processes for face: none)",
    ]


def test_the_cli_may_import_the_public_management_api_but_not_its_modules() -> None:
    source = (
        "from mind.management import serve_offline\n"
        "from mind import management\n"
        "from mind.management.service import ManagementService\n"
    )
    found = imports(Path("management/connection.py"), source)
    assert [line.split(": ")[0] for line in boundary_violations(found)] == [
        "management/connection.py:3"
    ]


def test_the_shared_package_imports_no_process() -> None:
    found = imports(Path("tobe/runtime/probe.py"), "from awareness.errors import PushClosed\n")
    assert len(boundary_violations(found)) == 1


def test_grpc_in_a_domain_module_names_the_file_line_and_import() -> None:
    found = imports(Path("mind/awareness/router.py"), "import json\nimport grpc\n")
    assert grpc_violations(found) == [
        "mind/awareness/router.py:2: import grpc: only gRPC edges import grpc (convert and map "
        "errors at the servicer or client, or add the module to GRPC_EDGES if it is one)"
    ]
