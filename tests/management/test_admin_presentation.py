"""How `tobe admin` reads times and durations, and how it shows what it answers."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import click
import pytest
from rich.console import Console

from management import render
from management.cli_support import parse_when
from management.render import Printer, credential_state, human_size
from tobe.v1 import events_pb2, management_pb2


def test_durations_count_forward_for_expiry_and_back_for_since() -> None:
    before = datetime.now(UTC)
    expires = parse_when("1w2d", ago=False)
    since = parse_when("90m", ago=True)
    after = datetime.now(UTC)
    assert before + timedelta(days=9) <= expires <= after + timedelta(days=9)
    assert before - timedelta(minutes=90) <= since <= after - timedelta(minutes=90)


def test_times_are_utc_and_naive_ones_are_local() -> None:
    assert parse_when("2026-12-31T18:00Z", ago=False) == datetime(2026, 12, 31, 18, tzinfo=UTC)
    local = datetime(2026, 12, 31, 18).astimezone()
    assert parse_when("2026-12-31T18:00", ago=False) == local.astimezone(UTC)


@pytest.mark.parametrize("text", ["soon", "10", "5y", "2026-13-01"])
def test_anything_else_is_a_usage_error_that_says_what_is_accepted(text: str) -> None:
    with pytest.raises(click.BadParameter, match="neither a time"):
        parse_when(text, ago=False)


def test_sizes_and_states_read_naturally() -> None:
    assert [human_size(n) for n in (512, 2048, 5 * 1024**3)] == ["512 B", "2.0 KiB", "5.0 GiB"]
    past = "2020-01-01T00:00:00Z"
    assert credential_state({"revoked_at": None, "expires_at": None}) == "active"
    assert credential_state({"revoked_at": None, "expires_at": past}) == "expired"
    assert credential_state({"revoked_at": past, "expires_at": None}) == "revoked"


def test_status_table_names_services_and_connected_hands() -> None:
    response = management_pb2.GetStatusResponse(
        mode="online",
        version="0.1.0",
        database_url="sqlite:////data/tobe.db",
        database_size_bytes=3 * 1024 * 1024,
        schema_revision="0001",
        gateway_subscribers=1,
        services=[management_pb2.ServiceStatus(name="mind", address="[::]:7410", state="serving")],
        hands=[
            management_pb2.HandStatus(
                hand_id="h_1", name="laptop", principal="laptop", tools=3, version="1.2.3"
            )
        ],
    )
    console = Console(record=True, width=160)
    Printer(as_json=False, console=console).status(render.status(response))
    text = console.export_text()
    assert "running (online)" in text and "3.0 MiB" in text
    assert "[::]:7410" in text and "serving" in text
    assert "laptop" in text and "1.2.3" in text


def test_operator_text_is_shown_as_typed_never_as_markup() -> None:
    listed = render.credential(
        management_pb2.Credential(
            id="cred_1",
            kind=management_pb2.CREDENTIAL_KIND_CLIENT,
            principal="[red]x",
            label="[/oops]",
        )
    )
    console = Console(record=True, width=160)
    Printer(as_json=False, console=console).credentials([listed])
    Printer(as_json=False, console=console).credential(listed)
    text = console.export_text()
    assert text.count("[red]x") == 2 and "[/oops]" in text


def test_a_compaction_is_one_line_for_people_and_every_field_in_json() -> None:
    compaction = render.compaction(
        events_pb2.ContextCompacted(
            generation=2,
            through_message_id=60,
            messages_summarised=48,
            tokens_before=41_200,
            tokens_after=9_800,
            trigger=events_pb2.COMPACTION_TRIGGER_REQUESTED,
            summary_calls=1,
        )
    )
    console = Console(record=True, width=200)
    Printer(as_json=False, console=console).compaction("p_k", compaction)
    assert console.export_text().splitlines() == [
        "Compacted conversation p_k: 48 messages summarised (generation 2, through message 60); "
        "context ~41,200 → ~9,800 tokens"
    ]
    assert compaction == {
        "generation": 2,
        "through_message_id": 60,
        "messages_summarised": 48,
        "tokens_before": 41_200,
        "tokens_after": 9_800,
        "trigger": "requested",
        "summary_calls": 1,
        "run_id": "",
    }
