"""Edit the `[provider]` table of the operator's config file in place (for `tobe setup`).

tomlkit keeps what the operator wrote around it: other sections, `[[provider.models]]`,
comments and order. The file is replaced atomically and is owner-only (0600): it may hold other
secrets the operator put there. The API key is never written; one left in `[provider] api_key`
would win over the stored key, so it is removed.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import tomlkit
from tomlkit.exceptions import TOMLKitError
from tomlkit.items import AoT, Table

from tobe.runtime.private_files import FILE_MODE


class ConfigEditError(Exception):
    """The file cannot be read as TOML or written; the message names it."""


def edit_provider(
    path: Path,
    kind: str,
    base_url: str,
    model: str,
    thinking: str,
    entry: dict[str, object] | None = None,
) -> tuple[str, bool]:
    """The file's text with `[provider]` kind, base_url ("" removes it), model and thinking
    set, and `entry` as the `[[provider.models]]` entry of its id (replacing one with that
    id), and whether an `api_key` was removed from it; `write_private` saves it."""
    document = _read(path)
    table = document.get("provider")
    if table is None:
        table = tomlkit.table()
        document["provider"] = table
    if not isinstance(table, Table):
        raise ConfigEditError(f"{path}: [provider] is not a table; fix it or move the file away")
    table["kind"] = kind
    if base_url:
        table["base_url"] = base_url
    elif "base_url" in table:
        del table["base_url"]
    table["model"] = model
    table["thinking"] = thinking
    removed = "api_key" in table
    if removed:
        del table["api_key"]
    if entry is not None:
        _put_model(path, table, entry)
    return tomlkit.dumps(document), removed


def _put_model(path: Path, table: Table, entry: dict[str, object]) -> None:
    models = table.get("models")
    if models is None:
        models = tomlkit.aot()
        table["models"] = models
    if not isinstance(models, AoT):
        raise ConfigEditError(
            f"{path}: provider.models is not a list of [[provider.models]] tables; fix it"
        )
    item = tomlkit.table()
    item.comment("learned from the model's server by `tobe setup`")
    for name, value in entry.items():
        item[name] = value
    for index, existing in enumerate(models):
        if existing.get("id") == entry["id"]:
            models[index] = item
            return
    models.append(item)


def _read(path: Path) -> tomlkit.TOMLDocument:
    try:
        return tomlkit.parse(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return tomlkit.document()
    except (OSError, UnicodeDecodeError, TOMLKitError) as exc:
        raise ConfigEditError(f"cannot edit {path}: {exc}; fix it or move it away") from None


def write_private(path: Path, text: str) -> None:
    """Replace `path` with `text` atomically, mode 0600."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        descriptor, temporary = tempfile.mkstemp(dir=path.parent, prefix=".config-")
        try:
            os.fchmod(descriptor, FILE_MODE)
            with os.fdopen(descriptor, "w", encoding="utf-8") as out:
                out.write(text)
            os.replace(temporary, path)
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise
    except OSError as exc:
        raise ConfigEditError(f"cannot write {path}: {exc.strerror or exc}") from None
