"""The channels' state file: pairing codes, paired people, what was sent, cursors."""

from __future__ import annotations

import stat
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from face.channels.state import PAIRING_TTL, ChannelState, PairingError, normal_code

NOW = datetime(2026, 12, 7, 21, 0, tzinfo=UTC)


@pytest.fixture
def state(tmp_path: Path) -> ChannelState:
    opened = ChannelState.at(tmp_path)
    yield opened
    opened.close()


def test_the_state_file_is_readable_by_its_owner_only(state: ChannelState) -> None:
    assert stat.S_IMODE(state.path.stat().st_mode) == 0o600
    assert stat.S_IMODE(state.path.parent.stat().st_mode) == 0o700


def test_a_person_writing_again_gets_the_same_code_until_it_expires(state: ChannelState) -> None:
    first, new = state.open_pairing("matrix", "@a:hs", "!room", "A", NOW)
    again, new_again = state.open_pairing(
        "matrix", "@a:hs", "!room", "A", NOW + timedelta(minutes=1)
    )
    later, new_later = state.open_pairing("matrix", "@a:hs", "!room", "A", NOW + PAIRING_TTL)
    assert (new, new_again, new_later) == (True, False, True)
    assert again.code == first.code != later.code
    assert [p.code for p in state.pending_pairings(NOW + PAIRING_TTL)] == [later.code]


def test_approving_a_code_pairs_its_person_once(state: ChannelState) -> None:
    pairing, _ = state.open_pairing("email", "a@example.org", "<t@x>", "A", NOW)
    sender = state.approve_pairing(pairing.code.lower().replace("-", " "), "me", "c1", "tok", NOW)
    assert state.sender("email", "a@example.org") == sender
    assert (sender.principal, sender.token) == ("me", "tok")
    assert [p.code for p in state.unannounced("email")] == [pairing.code]
    state.announced(pairing.code)
    assert state.unannounced("email") == []
    with pytest.raises(PairingError, match="approved already"):
        state.approve_pairing(pairing.code, "me", "c2", "tok2", NOW)
    assert state.sender("email", "a@example.org").credential_id == "c1"


def test_an_expired_or_unknown_code_is_refused_and_pairs_nobody(state: ChannelState) -> None:
    pairing, _ = state.open_pairing("matrix", "@a:hs", "!room", "A", NOW)
    with pytest.raises(PairingError, match="expired"):
        state.approve_pairing(pairing.code, "me", "c1", "tok", NOW + PAIRING_TTL)
    with pytest.raises(PairingError, match="no pairing code"):
        state.approve_pairing("ZZZZ-ZZZZ", "me", "c1", "tok", NOW)
    assert state.senders() == []


def test_what_was_sent_is_found_by_key_and_an_approval_by_the_message_that_asked(
    state: ChannelState,
) -> None:
    state.record_sent("matrix", "m:1", "$event1")
    state.record_sent("matrix", "a:7", "$event2", approval_id="ap_7")
    assert state.sent("matrix", "m:1") == "$event1"
    assert state.sent("email", "m:1") is None
    assert state.approval_asked_by("matrix", "$event2") == "ap_7"
    assert state.approval_asked_by("matrix", "$event1") is None


def test_a_cursor_only_moves_forward(state: ChannelState) -> None:
    assert state.cursor("matrix", "@a:hs") is None
    state.advance("matrix", "@a:hs", 10)
    state.advance("matrix", "@a:hs", 7)
    assert state.cursor("matrix", "@a:hs") == 10


def test_forgetting_a_person_keeps_their_threads(state: ChannelState) -> None:
    pairing, _ = state.open_pairing("matrix", "@a:hs", "!room", "A", NOW)
    state.approve_pairing(pairing.code, "me", "c1", "tok", NOW)
    state.bind_thread("matrix", "!room", "@a:hs", "p_matrix-1")
    assert state.forget_sender("matrix", "@a:hs") is not None
    assert state.sender("matrix", "@a:hs") is None
    assert state.conversation_for("matrix", "!room") == "p_matrix-1"


def test_transport_values_are_kept_per_channel(tmp_path: Path, state: ChannelState) -> None:
    state.values("matrix").put("since", "s1")
    state.values("matrix").put("since", "s2")
    reopened = ChannelState.at(tmp_path)
    try:
        assert reopened.values("matrix").get("since") == "s2"
        assert reopened.values("email").get("since") is None
    finally:
        reopened.close()


@pytest.mark.parametrize("typed", ["abcd-efgh", "ABCD EFGH", "abcdefgh", " ABCD-EFGH "])
def test_a_code_is_read_however_it_was_typed(typed: str) -> None:
    assert normal_code(typed) == "ABCD-EFGH"
