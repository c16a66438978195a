"""The resources a run may read, and the text that lists them in the system prompt.

Reading goes through the catalog alone: a path is read only if it is listed, exactly as
listed, so `..`, absolute paths and files added after the load are refused; a listed file
that has since become a symlink leading out of its directory is refused too.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from mind.resources.scan import inside, resource_files

READ_RESOURCE = "read_resource"
HEADER = (
    f"Resources: documents you can read with `{READ_RESOURCE}`, passing a path exactly as "
    "listed here."
)


class ResourceRefused(ValueError):
    """A path the model may not read; the message is what the model sees.

    Not a client refusal: the resource tool turns it into its tool result."""


@dataclass(frozen=True)
class Resource:
    # The directory it was found in, and its path there (as listed, with `/`).
    root: Path
    relative: str

    @property
    def path(self) -> Path:
        return self.root / self.relative


@dataclass(frozen=True)
class ResourceCatalog:
    # By relative path, sorted.
    resources: dict[str, Resource] = field(default_factory=dict)

    @classmethod
    def load(cls, dirs: Sequence[Path]) -> ResourceCatalog:
        """Every resource under `dirs`; on the same relative path a later directory wins."""
        found = {
            relative.as_posix(): Resource(directory, relative.as_posix())
            for directory in dirs
            for relative in resource_files(directory)
        }
        return cls(dict(sorted(found.items())))

    def prompt(self) -> str:
        """The catalog for the system prompt; "" when there are no resources."""
        if not self.resources:
            return ""
        return "\n".join([HEADER, *(f"- {name}" for name in self.resources)])

    def read(self, path: str) -> str:
        """The text of a listed resource; raises ResourceRefused for anything else."""
        resource = self.resources.get(path)
        if resource is None:
            raise ResourceRefused(
                f"{path!r} is not in the resources catalog; pass a path exactly as listed there"
            )
        if not inside(resource.path, resource.root):
            raise ResourceRefused(f"{path!r} now leads outside its resources directory")
        try:
            return resource.path.read_text(encoding="utf-8", errors="replace")
        except OSError as exc:
            raise ResourceRefused(f"{path!r} cannot be read: {exc.strerror or exc}") from exc
