"""Every `tobe admin` command gives the same results online (a real Mind) and offline.

One scenario runs every command, once against a fresh data directory with no Mind and once
against a fresh data directory served by a running `tobe mind serve`. Ids, prefixes, secrets
and times differ by nature, so they are replaced by stable placeholders before comparing.
`conversations compact` is the one command that differs by design: only the running Mind calls
the model (`test_admin_offline_commands.py` and `test_admin_compact_e2e.py` show each side).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from admin_mind import mind_running
from admin_store import seed_conversations
from helpers.admin_cli import Admin

from mind.store.migrate import upgrade

pytestmark = pytest.mark.e2e

# Fields the online Mind adds to `status`: compared separately.
LIVE_STATUS_FIELDS = (
    "mode",
    "face",
    "services",
    "hands",
    "gateway_subscribers",
    "data_dir",
    "database_url",
    "database_size_bytes",
)


class Normaliser:
    """Replaces run-specific values by placeholders numbered in order of appearance."""

    PATTERNS = (
        ("cred", re.compile(r"cred_[0-9a-f]{24}")),
        ("secret", re.compile(r"tobe_[0-9a-f]{16}_[A-Za-z0-9_-]{43}")),
        ("time", re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|\+00:00)")),
    )

    def __init__(self) -> None:
        self.seen: dict[str, str] = {}

    def __call__(self, value: Any) -> Any:
        if isinstance(value, dict):
            return {k: self(v) for k, v in value.items() if k not in ("prefix", "id", "time")}
        if isinstance(value, list):
            return [self(item) for item in value]
        if isinstance(value, str):
            for name, pattern in self.PATTERNS:
                value = pattern.sub(lambda m, n=name: self._placeholder(n, m.group(0)), value)
            return value
        return value

    def _placeholder(self, name: str, raw: str) -> str:
        if name == "time":
            return "<time>"
        if raw not in self.seen:
            self.seen[raw] = f"<{name}{len(self.seen)}>"
        return self.seen[raw]


def scenario(admin: Admin) -> list[Any]:
    """Every command once, with refusals; returns the normalised outputs in order."""
    out: list[Any] = []
    norm = Normaliser()

    def record(*args: str) -> Any:
        document = admin.json(*args)
        out.append(norm(document))
        return document

    def refused(*args: str) -> None:
        # Only the refusal itself: log lines that other tests' logger levels let through differ.
        stderr = admin.run(*args, ok=False).stderr
        errors = [line for line in stderr.splitlines() if line.startswith("Error:")]
        out.append(("refused", args[:2], norm("\n".join(errors))))

    status = record("status")
    out[-1] = {k: v for k, v in out[-1].items() if k not in LIVE_STATUS_FIELDS}
    hand = record(
        "credentials",
        "create",
        "--kind",
        "hand",
        "--principal",
        "laptop",
        "--scope",
        "serve-all",
        "--label",
        "desk",
    )["credential"]["id"]
    client = record(
        "credentials",
        "create",
        "--kind",
        "client",
        "--principal",
        "alice",
        "--expires",
        "2999-01-01T00:00Z",
    )["credential"]["id"]
    record(
        "credentials", "create", "--kind", "service", "--principal", "face", "--scope", "gateway"
    )
    record("credentials", "list")
    record("credentials", "list", "--kind", "hand")
    record("credentials", "list", "--principal", "alice")
    record("credentials", "show", hand)
    record("credentials", "revoke", hand)
    refused("credentials", "revoke", hand)
    refused("credentials", "rotate", hand)
    record("credentials", "rotate", client)
    record("credentials", "list", "--all")
    refused("credentials", "show", "cred_000000000000000000000000")
    refused("credentials", "create", "--kind", "client", "--principal", "two words")
    seed_conversations(admin.store_url)
    record("conversations", "list")
    record("conversations", "list", "--owner", "bob")
    record("conversations", "show", "g_team")
    record("conversations", "delete", "g_team", "--yes")
    refused("conversations", "show", "g_team")
    refused("conversations", "delete", "g_team", "--yes")
    record("conversations", "list")
    record("audit")
    record("audit", "--action", "credential.")
    record("audit", "--target", client, "--limit", "1")
    assert status["schema_revision"]
    return out


def test_every_command_gives_the_same_results_online_and_offline(tmp_path: Path) -> None:
    offline_dir = tmp_path / "off"
    online_dir = Path(str(tmp_path / "on"))
    offline = Admin(offline_dir)
    upgrade(offline.store_url)
    assert "mode: offline" in offline.run("--verbose", "status").stderr
    offline_results = scenario(offline)

    online = Admin(online_dir)
    online_dir.mkdir()
    with mind_running(online_dir):
        assert "mode: online" in online.run("--verbose", "status").stderr
        online_results = scenario(online)
        status = online.json("status")
    assert status["mode"] == "online"
    assert {s["name"]: s["state"] for s in status["services"]}["management"] == "serving"
    assert online_results == offline_results
