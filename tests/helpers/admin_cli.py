"""`tobe admin` run in this process (click's runner) against one data directory.

Every call goes through the same mode selection, gRPC calls, servicer and service as an
operator's; only the process is shared with the test.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from click.testing import CliRunner, Result

from helpers import store_backend
from tobe.cli import main


@dataclass
class Admin:
    data_dir: Path
    # The configuration file `tobe admin` reads (e.g. `[profiles]`); None: none.
    config: Path | None = None

    @property
    def store_url(self) -> str:
        return store_backend.database_url(self.data_dir)

    def env(self) -> dict[str, str]:
        return {
            "TOBE_DATA_DIR": str(self.data_dir),
            "TOBE_CONFIG": str(self.config or self.data_dir / "absent.toml"),
            **store_backend.environment(self.data_dir),
        }

    def run(self, *args: str, ok: bool = True) -> Result:
        """`tobe admin ARGS`; asserts the exit status (0 when `ok`, non-zero otherwise)."""
        root = logging.getLogger()
        handlers, level = root.handlers[:], root.level
        try:
            result = CliRunner().invoke(main, ["admin", *args], env=self.env())
        finally:
            # The command configures process logging; give the test runner its own back.
            root.handlers[:], root.level = handlers, level
        if ok:
            assert result.exit_code == 0, (result.output, result.exception)
        else:
            assert result.exit_code != 0, result.output
        return result

    def json(self, *args: str) -> Any:
        return json.loads(self.run(*args, "--json").stdout)
