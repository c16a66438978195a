"""Code named in the configuration: `package.module:attribute` import paths."""

from __future__ import annotations

import importlib
from typing import Any

from mind.profiles.errors import ProfileError


def import_path(path: str, what: str) -> Any:
    """The attribute `path` names; ProfileError naming `what` and the path when it is not there."""
    module_name, sep, attribute = path.partition(":")
    if not sep or not module_name or not attribute:
        raise ProfileError(f"{what} {path!r} is not an import path like 'package.module:name'")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise ProfileError(f"{what} {path!r}: cannot import {module_name}: {exc}") from exc
    found: Any = module
    for part in attribute.split("."):
        if not hasattr(found, part):
            raise ProfileError(f"{what} {path!r}: {module_name} has no {attribute!r}")
        found = getattr(found, part)
    if not callable(found):
        raise ProfileError(f"{what} {path!r} is not callable")
    return found
