"""The store's migration run in a short-lived child process, so the caller never loads Alembic.

Alembic and the migration scripts cost the process that imports them about 12 MiB for the rest
of its life. The Mind runs for months and migrates only on a first start or after an update,
so it has a child do it and waits for it. The child writes its error to the inherited stderr
(the Mind's log); the caller gets its last line.

    TOBE_UPGRADE_STORE_URL=sqlite:///path/tobe.db python -m mind.store.upgrade_child
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections import deque

# The URL goes in the environment, not in argv: a PostgreSQL URL may hold a password, and any
# user on the machine can read another's argv.
URL_VARIABLE = "TOBE_UPGRADE_STORE_URL"


class StoreUpgradeError(RuntimeError):
    """The child could not migrate the store; the message is its last error line."""


def upgrade_in_child(url: str) -> None:
    """Migrate the store at `url` to the packaged head in a child process; StoreUpgradeError
    when it fails."""
    child = subprocess.Popen(
        [sys.executable, "-m", __name__],
        env={**os.environ, URL_VARIABLE: url},
        stdin=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert child.stderr is not None
    last: deque[str] = deque(maxlen=1)
    for line in child.stderr:
        sys.stderr.write(line)
        if line.strip():
            last.append(line.strip())
    if child.wait() != 0:
        why = last[0] if last else f"status {child.returncode}"
        raise StoreUpgradeError(f"migrating the store failed: {why}")


def main() -> None:
    from mind.store.migrate import upgrade

    upgrade(os.environ[URL_VARIABLE])


if __name__ == "__main__":
    main()
