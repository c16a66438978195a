"""Output of `tobe admin`: plain dicts for `--json`, rich tables for people, from one shape."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from datetime import UTC, datetime
from typing import Any

from google.protobuf.message import Message
from google.protobuf.timestamp_pb2 import Timestamp
from rich.console import Console
from rich.table import Table
from rich.text import Text

from tobe import schedules
from tobe.v1 import common_pb2, events_pb2, management_pb2

PIPE_WIDTH = 200
KIND_NAMES = {
    management_pb2.CREDENTIAL_KIND_CLIENT: "client",
    management_pb2.CREDENTIAL_KIND_HAND: "hand",
    management_pb2.CREDENTIAL_KIND_SERVICE: "service",
}


def _time(message: Message, name: str) -> str | None:
    if not message.HasField(name):
        return None
    stamp: Timestamp = getattr(message, name)
    return stamp.ToDatetime(tzinfo=UTC).isoformat().replace("+00:00", "Z")


def credential_state(credential: dict[str, Any], now: datetime | None = None) -> str:
    if credential["revoked_at"]:
        return "revoked"
    expires = credential["expires_at"]
    now = now or datetime.now(UTC)
    if expires and datetime.fromisoformat(expires.replace("Z", "+00:00")) <= now:
        return "expired"
    return "active"


def credential(message: management_pb2.Credential) -> dict[str, Any]:
    result: dict[str, Any] = {
        "id": message.id,
        "kind": KIND_NAMES.get(message.kind, "unspecified"),
        "principal": message.principal,
        "scopes": list(message.scopes),
        "prefix": message.prefix,
        "label": message.label,
        "created_at": _time(message, "created_at"),
        "expires_at": _time(message, "expires_at"),
        "revoked_at": _time(message, "revoked_at"),
        "last_seen_at": _time(message, "last_seen_at"),
        "device_id": message.device_id,
    }
    result["state"] = credential_state(result)
    return result


def hand(message: management_pb2.HandStatus) -> dict[str, Any]:
    return {
        "hand_id": message.hand_id,
        "name": message.name,
        "principal": message.principal,
        "tools": message.tools,
        "connected_at": _time(message, "connected_at"),
        "version": message.version,
    }


def status(message: management_pb2.GetStatusResponse) -> dict[str, Any]:
    return {
        "mode": message.mode,
        "version": message.version,
        "data_dir": message.data_dir,
        "database_url": message.database_url,
        "database_size_bytes": message.database_size_bytes,
        "schema_revision": message.schema_revision,
        "conversations": message.conversations,
        "active_runs": message.active_runs,
        "gateway_subscribers": message.gateway_subscribers,
        "services": [
            {"name": s.name, "address": s.address, "state": s.state} for s in message.services
        ],
        "hands": [hand(h) for h in message.hands],
        "adapters": [adapter(a) for a in message.adapters],
        "adapters_error": message.adapters_error,
        "decision_failures": dict(sorted(message.decision_failures.items())),
    }


def adapter(message: management_pb2.AdapterStatus) -> dict[str, Any]:
    return {
        "instance": message.instance,
        "adapter_id": message.adapter_id,
        "state": message.state,
        "last_error": message.last_error,
        "restarts": message.restarts,
        "next_restart_at": _time(message, "next_restart_at"),
    }


def audit_entry(message: management_pb2.AuditEntry) -> dict[str, Any]:
    return {
        "id": message.id,
        "time": _time(message, "time"),
        "action": message.action,
        "actor": message.actor,
        "target": message.target,
        "details": json.loads(message.details_json or "{}"),
    }


def conversation(message: common_pb2.Conversation) -> dict[str, Any]:
    return {
        "key": message.key,
        "title": message.title,
        "owner": message.owner,
        "members": list(message.members),
        "created_at": _time(message, "created_at"),
        "last_event_id": message.last_event_id,
        "profile": message.profile,
        "active_hand": message.active_hand,
    }


def inspection(message: management_pb2.InspectConversationResponse) -> dict[str, Any]:
    return {
        "conversation": conversation(message.conversation),
        "messages": message.messages,
        "runs": message.runs,
        "tool_calls": message.tool_calls,
        "approvals": message.approvals,
    }


def deletion(message: management_pb2.DeleteConversationResponse) -> dict[str, Any]:
    return {"key": message.key, "removed": dict(sorted(message.removed.items()))}


def memory(key: str, message: management_pb2.ListConversationMemoryResponse) -> dict[str, Any]:
    return {
        "key": key,
        "entries": [
            {"key": e.key, "text": e.text, "updated_at": _time(e, "updated_at")}
            for e in message.entries
        ],
        "total_bytes": message.total_bytes,
    }


def scheduled(message: common_pb2.ScheduledAction) -> dict[str, Any]:
    return {
        "id": message.id,
        "conversation_key": message.conversation_key,
        "title": message.title,
        "goal": message.goal,
        "trigger": schedules.describe_trigger(message.trigger),
        "time_zone": message.trigger.time_zone,
        "state": schedules.state_word(message.state),
        "next_fire_at": _time(message, "next_fire_at"),
        "next_local": schedules.next_time(message),
        "firing_count": message.firing_count,
        "last_outcome": schedules.outcome_word(message),
        "catch_up": message.catch_up,
        "created_at": _time(message, "created_at"),
    }


def compaction(message: events_pb2.ContextCompacted) -> dict[str, Any]:
    return {
        "generation": message.generation,
        "through_message_id": message.through_message_id,
        "messages_summarised": message.messages_summarised,
        "tokens_before": message.tokens_before,
        "tokens_after": message.tokens_after,
        "trigger": _enum_word(
            events_pb2.CompactionTrigger.Name(message.trigger), "COMPACTION_TRIGGER_"
        ),
        "summary_calls": message.summary_calls,
        "run_id": message.run_id,
    }


def _enum_word(name: str, prefix: str) -> str:
    return name.removeprefix(prefix).lower()


def approval(message: common_pb2.Approval) -> dict[str, Any]:
    decided = message.decision != common_pb2.APPROVAL_DECISION_UNSPECIFIED
    return {
        "id": message.id,
        "conversation_key": message.conversation_key,
        "run_id": message.run_id,
        "tool_call_id": message.tool_call_id,
        "tool": message.tool,
        "effect": _enum_word(common_pb2.EffectClass.Name(message.effect), "EFFECT_CLASS_"),
        "hand_id": message.hand_id,
        "state": (
            _enum_word(common_pb2.ApprovalDecision.Name(message.decision), "APPROVAL_DECISION_")
            if decided
            else "pending"
        ),
        "reason": message.reason,
        # What the person decides on; empty only for requests older than the decision text.
        "decision_text": message.decision_text,
        # What started the run that asked; empty for a person's message.
        "origin": message.origin,
        "arguments_summary": message.arguments_summary,
        "arguments_digest": message.arguments_digest,
        "requested_at": _time(message, "requested_at"),
        "expires_at": _time(message, "expires_at"),
    }


# People


def face_line(face: dict[str, str]) -> str:
    """`serving at ADDRESS`, `not serving at ADDRESS`, or `unreachable at ADDRESS (why)`."""
    words = {"SERVING": "serving", "NOT_SERVING": "not serving", "UNREACHABLE": "unreachable"}
    word = words.get(face["status"], face["status"].lower())
    why = f" ({face['detail']})" if face["detail"] else ""
    return f"{word} at {face['address']}{why}"


def web_line(web: dict[str, str]) -> str:
    """Face's line for the web client, at the URL people open."""
    return face_line({**web, "address": web["url"]})


def human_time(value: str | None) -> str:
    return value.replace("T", " ").split(".")[0].removesuffix("Z") + "Z" if value else "-"


def decision_failures_line(failures: dict[str, int]) -> str:
    """Decision-layer stage failures since the Mind started: "none", or "extract 2, plan 1"."""
    if not failures:
        return "none"
    return ", ".join(f"{stage} {count}" for stage, count in failures.items())


def human_size(size: int) -> str:
    amount = float(size)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if amount < 1024 or unit == "GiB":
            return f"{amount:.0f} {unit}" if unit == "B" else f"{amount:.1f} {unit}"
        amount /= 1024
    raise AssertionError("unreachable")


def _table(title: str | None, columns: Sequence[str], rows: Iterable[Sequence[str]]) -> Table:
    table = Table(title=title, title_justify="left", show_edge=False, pad_edge=False)
    for column in columns:
        table.add_column(column, overflow="fold")
    for row in rows:
        # Text, not markup: labels and titles are operator data, never rich markup.
        table.add_row(*(Text(cell) for cell in row))
    return table


def _fields(pairs: Iterable[tuple[str, str]]) -> Table:
    table = Table.grid(padding=(0, 2))
    table.add_column(style="bold")
    table.add_column(overflow="fold")
    for name, value in pairs:
        table.add_row(name, Text(value))
    return table


class Printer:
    """Writes either JSON (one document per command) or tables to stdout."""

    def __init__(self, *, as_json: bool, console: Console | None = None) -> None:
        self.as_json = as_json
        self.console = console or Console(highlight=False, soft_wrap=False)
        if not self.console.is_terminal:
            # Piped output is read by people too: do not fold ids at 80 columns.
            self.console.width = PIPE_WIDTH

    def json(self, document: Any) -> None:
        self.console.out(json.dumps(document, indent=2, sort_keys=False), highlight=False)

    def _listing(
        self,
        items: list[dict[str, Any]],
        empty: str,
        columns: Sequence[str],
        row: Callable[[dict[str, Any]], Sequence[str]],
    ) -> None:
        """A list: JSON, a note when it is empty, or a table of one row per item."""
        if self.as_json:
            return self.json(items)
        if not items:
            self.console.print(empty)
            return
        self.console.print(_table(None, columns, (row(item) for item in items)))

    def credentials(self, items: list[dict[str, Any]]) -> None:
        self._listing(
            items,
            "No credentials. Create one with `tobe admin credentials create`.",
            (
                "ID",
                "KIND",
                "PRINCIPAL",
                "SCOPES",
                "PREFIX",
                "LABEL",
                "STATE",
                "CREATED",
                "EXPIRES",
                "LAST SEEN",
            ),
            lambda c: (
                c["id"],
                c["kind"],
                c["principal"],
                ",".join(c["scopes"]) or "-",
                c["prefix"],
                c["label"] or "-",
                c["state"],
                human_time(c["created_at"]),
                human_time(c["expires_at"]),
                human_time(c["last_seen_at"]),
            ),
        )

    def credential(self, item: dict[str, Any], *, extra: dict[str, Any] | None = None) -> None:
        """One credential; `extra` (secret, revoked id, disconnected) joins it in JSON."""
        if self.as_json:
            return self.json({"credential": item, **(extra or {})} if extra else item)
        pairs = [
            ("id", item["id"]),
            ("kind", item["kind"]),
            ("principal", item["principal"]),
            ("scopes", ", ".join(item["scopes"]) or "-"),
            ("prefix", item["prefix"]),
            ("label", item["label"] or "-"),
            ("state", item["state"]),
            ("created", human_time(item["created_at"])),
            ("expires", human_time(item["expires_at"])),
            ("revoked", human_time(item["revoked_at"])),
            ("last seen", human_time(item["last_seen_at"])),
        ]
        if item["device_id"]:
            pairs.append(("device", item["device_id"]))
        self.console.print(_fields(pairs))

    def whoami(self, item: dict[str, Any]) -> None:
        """A credential as `tobe admin whoami` found it, with what to do with its principal."""
        if self.as_json:
            return self.json(item)
        found = item["credential"]
        pairs = [
            ("principal", found["principal"]),
            ("kind", found["kind"]),
            ("scopes", ", ".join(found["scopes"]) or "-"),
            ("state", found["state"]),
            ("expires", human_time(found["expires_at"]) if found["expires_at"] else "never"),
            ("credential", found["id"]),
            ("from", item["source"]),
        ]
        if found["kind"] == "hand":
            pairs.append(("serves", ", ".join(item["serves"])))
        self.console.print(_fields(pairs))
        if found["kind"] == "client" and found["state"] == "active":
            principal = found["principal"]
            self.console.print(
                Text(
                    f"\nA Hand executes for your conversations with the scope serve:{principal}:"
                    f"\n  tobe admin credentials create --kind hand --principal NAME "
                    f"--scope serve:{principal}"
                )
            )

    def secret(self, secret: str) -> None:
        self.console.print()
        self.console.print("Secret (shown only this once; store it now):", style="bold")
        self.console.out(secret, highlight=False)

    def pairing(self, item: dict[str, Any], *, expires: str, note: str) -> None:
        """A new pairing code with its link; the note (web client not running) goes to
        people only."""
        if self.as_json:
            return self.json(item)
        self.console.print(Text(f"Pairing code for {item['principal']} (works once):"))
        self.console.out(item["code"], highlight=False)
        self.console.print(Text(f"Expires {expires}."))
        self.console.print(Text("Open on the device:"))
        self.console.out(item["url"], highlight=False)
        if note:
            self.console.print(Text(note))

    def note(self, text: str) -> None:
        if not self.as_json:
            self.console.print(Text(text))

    def status(self, item: dict[str, Any]) -> None:
        if self.as_json:
            return self.json(item)
        mode = item["mode"]
        running = "running (online)" if mode == "online" else "not running (offline mode)"
        pairs = [("Mind", running)]
        if item.get("face"):
            pairs.append(("Face", face_line(item["face"])))
        if item.get("web"):
            pairs.append(("web client", web_line(item["web"])))
        pairs += [
            ("version", item["version"]),
            ("data dir", item["data_dir"]),
            ("database", item["database_url"]),
            ("database size", human_size(item["database_size_bytes"])),
            ("schema revision", item["schema_revision"] or "-"),
            ("conversations", str(item["conversations"])),
            ("active runs", str(item["active_runs"])),
        ]
        if mode == "online":
            pairs += [
                ("connected hands", str(len(item["hands"]))),
                ("gateway subscribers", str(item["gateway_subscribers"])),
                ("decision failures", decision_failures_line(item["decision_failures"])),
            ]
        self.console.print(_fields(pairs))
        if item["services"]:
            self.console.print()
            self.console.print(
                _table(
                    "Services",
                    ("NAME", "ADDRESS", "STATE"),
                    ((s["name"], s["address"], s["state"]) for s in item["services"]),
                )
            )
        if item["adapters"]:
            self.console.print()
            self.console.print(
                _table(
                    "Awareness adapters",
                    ("INSTANCE", "STATE", "RESTARTS", "NEXT RESTART", "LAST ERROR"),
                    (
                        (
                            a["instance"],
                            a["state"],
                            str(a["restarts"]),
                            human_time(a["next_restart_at"]) if a["next_restart_at"] else "-",
                            a["last_error"] or "-",
                        )
                        for a in item["adapters"]
                    ),
                )
            )
        if item["adapters_error"]:
            self.console.print(Text(f"Awareness adapters: {item['adapters_error']}"))
        if item["hands"]:
            self.console.print()
            self.console.print(
                _table(
                    "Connected Hands",
                    ("HAND", "NAME", "PRINCIPAL", "VERSION", "TOOLS", "CONNECTED"),
                    (
                        (
                            h["hand_id"],
                            h["name"],
                            h["principal"],
                            h["version"] or "-",
                            str(h["tools"]),
                            human_time(h["connected_at"]),
                        )
                        for h in item["hands"]
                    ),
                )
            )

    def audit(self, items: list[dict[str, Any]]) -> None:
        self._listing(
            items,
            "No audit entries match.",
            ("ID", "TIME", "ACTION", "ACTOR", "TARGET", "DETAILS"),
            lambda e: (
                str(e["id"]),
                human_time(e["time"]),
                e["action"],
                e["actor"],
                e["target"],
                json.dumps(e["details"], sort_keys=True),
            ),
        )

    def conversations(self, items: list[dict[str, Any]]) -> None:
        self._listing(
            items,
            "No conversations.",
            ("KEY", "OWNER", "TITLE", "MEMBERS", "CREATED", "LAST EVENT"),
            lambda c: (
                c["key"],
                c["owner"],
                c["title"] or "-",
                ",".join(c["members"]) or "-",
                human_time(c["created_at"]),
                str(c["last_event_id"]),
            ),
        )

    def inspection(self, item: dict[str, Any]) -> None:
        if self.as_json:
            return self.json(item)
        c = item["conversation"]
        self.console.print(
            _fields(
                [
                    ("key", c["key"]),
                    ("owner", c["owner"]),
                    ("title", c["title"] or "-"),
                    ("members", ", ".join(c["members"]) or "-"),
                    ("created", human_time(c["created_at"])),
                    ("last event", str(c["last_event_id"])),
                    ("messages", str(item["messages"])),
                    ("runs", str(item["runs"])),
                    ("tool calls", str(item["tool_calls"])),
                    ("approvals", str(item["approvals"])),
                ]
            )
        )

    def approvals(self, items: list[dict[str, Any]]) -> None:
        self._listing(
            items,
            "No approval requests match.",
            ("ID", "CONVERSATION", "TOOL", "STATE", "REQUESTED", "ORIGIN", "DECISION TEXT"),
            lambda a: (
                a["id"],
                a["conversation_key"],
                a["tool"],
                a["state"],
                human_time(a["requested_at"]),
                a["origin"] or "-",
                a["decision_text"] or a["arguments_summary"],
            ),
        )

    def approval(self, item: dict[str, Any]) -> None:
        if self.as_json:
            return self.json(item)
        self.console.print(
            _fields(
                [
                    ("id", item["id"]),
                    ("conversation", item["conversation_key"]),
                    ("tool", item["tool"]),
                    ("effect", item["effect"]),
                    ("hand", item["hand_id"] or "-"),
                    ("state", item["state"]),
                    ("reason", item["reason"] or "-"),
                    ("origin", item["origin"] or "a person's message"),
                    ("requested", human_time(item["requested_at"])),
                    ("expires", human_time(item["expires_at"])),
                    ("arguments", item["arguments_summary"]),
                    ("digest", item["arguments_digest"]),
                ]
            )
        )
        self.console.print()
        self.console.print("Decision text (what is approved):", style="bold")
        # Unwrapped, so the text can be read and copied exactly as it will be approved.
        self.console.out(
            item["decision_text"] or "(not recorded for this request)", highlight=False
        )

    def profile_change(self, item: dict[str, Any]) -> None:
        if self.as_json:
            return self.json(item)
        self.console.print(
            Text(f"Conversation {item['key']} now runs with profile {item['profile']}")
        )

    def compaction(self, key: str, item: dict[str, Any]) -> None:
        if self.as_json:
            return self.json({"key": key, **item})
        count = item["messages_summarised"]
        self.console.print(
            Text(
                f"Compacted conversation {key}: {count} message{'' if count == 1 else 's'} "
                f"summarised (generation {item['generation']}, through message "
                f"{item['through_message_id']}); context ~{item['tokens_before']:,} → "
                f"~{item['tokens_after']:,} tokens"
            )
        )

    def memory(self, item: dict[str, Any]) -> None:
        if self.as_json:
            return self.json(item)
        entries = item["entries"]
        if not entries:
            self.console.print(f"Conversation {item['key']} remembers nothing.")
            return
        self.console.print(
            _table(
                None,
                ("KEY", "UPDATED", "TEXT"),
                ((e["key"], human_time(e["updated_at"]), e["text"]) for e in entries),
            )
        )
        count = len(entries)
        self.console.print(
            f"{count} entr{'y' if count == 1 else 'ies'}, {item['total_bytes']} bytes"
        )

    def schedules(self, items: list[dict[str, Any]]) -> None:
        self._listing(
            items,
            "No scheduled actions.",
            ("ID", "CONVERSATION", "TITLE", "TRIGGER", "NEXT", "STATE", "FIRED", "LAST"),
            lambda a: (
                a["id"],
                a["conversation_key"],
                a["title"],
                a["trigger"],
                a["next_local"] or "-",
                a["state"],
                str(a["firing_count"]),
                a["last_outcome"] or "-",
            ),
        )

    def schedule_change(self, change: str, item: dict[str, Any]) -> None:
        if self.as_json:
            return self.json(item)
        past = {"pause": "Paused", "resume": "Resumed", "delete": "Deleted"}[change]
        after = f"; next {item['next_local']}" if item["next_local"] else ""
        self.console.print(Text(f"{past} {item['id']} ({item['title']}){after}."))

    def memory_deletion(self, item: dict[str, Any]) -> None:
        if self.as_json:
            return self.json(item)
        if item["existed"]:
            self.console.print(Text(f"Deleted memory {item['memory_key']} of {item['key']}."))
        else:
            self.console.print(
                Text(
                    f"Conversation {item['key']} had no memory {item['memory_key']}; "
                    "nothing to delete."
                )
            )

    def deletion(self, item: dict[str, Any]) -> None:
        if self.as_json:
            return self.json(item)
        total = sum(item["removed"].values())
        self.console.print(Text(f"Deleted conversation {item['key']} ({total} rows):"))
        self.console.print(
            _table(None, ("TABLE", "ROWS"), ((t, str(n)) for t, n in item["removed"].items()))
        )
