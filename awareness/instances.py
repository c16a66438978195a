"""Where an adapter's instance files live: `<awareness data dir>/adapters/<instance>/`.

`<instance>` is the adapter's name for its default instance and `<name>@<label>` for each
further configured one (two mail accounts: `email@work`, `email@home`). A labelled instance
exists once its directory holds a `config.json` (written by a person, or created from the
default by registering `<name>@<label>`); Awareness registers every such instance at start.

An adapter's code directory may be read-only (the built-ins inside an installed package, a
root-owned environment run by another user) and is no place for secrets, so its instance
`config.json` and its `data/` live under the Awareness data directory, keyed by the adapter's
directory name: runtime adapter ids change at every registration, the name does not.

Earlier versions kept both beside the code. When the instance directory lacks them, they are
copied from there once and a log line says so; the originals are left in place, because the
code directory may not be writable.
"""

from __future__ import annotations

import logging
import shutil
from pathlib import Path

from awareness.config_files import INSTANCE_FILE
from awareness.loader import is_extra_instance
from tobe.runtime.private_files import create_once

DATA_DIR = "data"
# A data/ copy in progress; a crash mid-copy leaves it, and the next start copies again.
_COPYING = ".data.copying"

log = logging.getLogger(__name__)


def prepare(name: str, code_dir: Path, root: Path) -> Path:
    """Create (and migrate into) the directory of instance `name`; return it.

    Raises OSError when the instance directory cannot be created or written.
    """
    instance = root / name
    instance.mkdir(parents=True, exist_ok=True)
    if name == code_dir.name:  # only a default instance ever lived beside the code
        _migrate_config(name, code_dir, instance)
        _migrate_data(name, code_dir, instance)
    (instance / DATA_DIR).mkdir(exist_ok=True)
    return instance


def labelled(root: Path) -> list[str]:
    """Names of the labelled instances configured under `root`, sorted."""
    if not root.is_dir():
        return []
    return sorted(
        child.name
        for child in root.iterdir()
        if is_extra_instance(child.name) and (child / INSTANCE_FILE).is_file()
    )


def _migrate_config(name: str, code_dir: Path, instance: Path) -> None:
    old, new = code_dir / INSTANCE_FILE, instance / INSTANCE_FILE
    if new.exists() or not old.is_file():
        return
    create_once(new, old.read_bytes())
    log.warning(
        "adapter %s: copied its config.json from %s to %s; only the copy is used from now on, "
        "remove the old file",
        name,
        old,
        new,
    )


def _migrate_data(name: str, code_dir: Path, instance: Path) -> None:
    old, new = code_dir / DATA_DIR, instance / DATA_DIR
    if new.exists() or not old.is_dir():
        return
    staging = instance / _COPYING
    shutil.rmtree(staging, ignore_errors=True)
    shutil.copytree(old, staging, symlinks=True)
    staging.rename(new)
    log.warning(
        "adapter %s: copied its data/ from %s to %s; only the copy is used from now on, "
        "remove the old directory",
        name,
        old,
        new,
    )
