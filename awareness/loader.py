"""Finding adapters by directory name and importing their entry module afresh.

Only a plain directory name is accepted: no separators, no `.`/`..`, nothing absolute. An
instance name is such a name, optionally followed by `@<label>` (another configured instance of
the same code: `email@work`). Each import uses a new module name, so re-registering runs the
adapter's current code.
"""

from __future__ import annotations

import importlib.util
import itertools
import re
import sys
from collections.abc import Sequence
from pathlib import Path

from awareness.adapter import Adapter
from awareness.errors import AdapterLoadError

ENTRY_MODULE = "adapter.py"
_PLAIN_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,63}")
_INSTANCE_NAME = re.compile(
    r"(?P<adapter>[A-Za-z0-9][A-Za-z0-9_-]{0,63})(@(?P<label>[A-Za-z0-9][A-Za-z0-9_-]{0,31}))?"
)
_import_counter = itertools.count(1)


def check_name(name: str) -> None:
    """Refuse anything but a plain directory name."""
    if not _PLAIN_NAME.fullmatch(name):
        raise AdapterLoadError(
            f"adapter name {name!r} is not a plain directory name "
            "(letters, digits, '_' and '-'; no paths, separators, '.' or '..')"
        )


def adapter_of(instance: str) -> str:
    """The adapter (code directory) name of an instance name; refuses anything else."""
    match = _INSTANCE_NAME.fullmatch(instance)
    if match is None:
        raise AdapterLoadError(
            f"adapter name {instance!r} is not a plain directory name, optionally followed by "
            "@<label> for another instance (letters, digits, '_' and '-'; no paths, "
            "separators, '.' or '..')"
        )
    return match["adapter"]


def is_extra_instance(name: str) -> bool:
    """Whether `name` names a labelled instance (`email@work`)."""
    match = _INSTANCE_NAME.fullmatch(name)
    return match is not None and match["label"] is not None


def find_adapter_dir(name: str, roots: Sequence[Path]) -> Path:
    """The directory `<root>/<name>` of the first root that has one."""
    check_name(name)
    for root in roots:
        candidate = root / name
        if candidate.is_dir() and (candidate / ENTRY_MODULE).is_file():
            return candidate
    searched = ", ".join(str(r) for r in roots)
    raise AdapterLoadError(f"no adapter directory named {name!r} with {ENTRY_MODULE} in {searched}")


def scan(roots: Sequence[Path]) -> list[str]:
    """Adapter names under the roots, first root winning on duplicates, sorted."""
    names: set[str] = set()
    for root in roots:
        if not root.is_dir():
            continue
        for child in root.iterdir():
            if _PLAIN_NAME.fullmatch(child.name) and (child / ENTRY_MODULE).is_file():
                names.add(child.name)
    return sorted(names)


def import_adapter_class(directory: Path) -> type[Adapter]:
    """Import `<directory>/adapter.py` under a fresh module name and return its ADAPTER."""
    module_name = f"_awareness_adapter_{directory.name.replace('-', '_')}_{next(_import_counter)}"
    spec = importlib.util.spec_from_file_location(
        module_name, directory / ENTRY_MODULE, submodule_search_locations=[str(directory)]
    )
    if spec is None or spec.loader is None:
        raise AdapterLoadError(f"cannot import {directory.name}/{ENTRY_MODULE}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    try:
        spec.loader.exec_module(module)
    except Exception as exc:
        sys.modules.pop(module_name, None)
        raise AdapterLoadError(
            f"importing {directory.name}/{ENTRY_MODULE} failed: {type(exc).__name__}: {exc}"
        ) from exc
    cls = getattr(module, "ADAPTER", None)
    if not (isinstance(cls, type) and issubclass(cls, Adapter)):
        sys.modules.pop(module_name, None)
        raise AdapterLoadError(
            f"{directory.name}/{ENTRY_MODULE} must define ADAPTER, "
            "a subclass of awareness.adapter.Adapter"
        )
    return cls


def forget_module(cls: type[Adapter]) -> None:
    """Drop an unregistered adapter's modules so their memory can be reclaimed."""
    prefix = cls.__module__
    for name in [n for n in sys.modules if n == prefix or n.startswith(prefix + ".")]:
        sys.modules.pop(name, None)
