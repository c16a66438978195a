"""The HandHub refuses a stream whose credential was revoked after it authenticated."""

from __future__ import annotations

import pytest

from mind.remote.hub import CredentialRevoked, HandConnection, HandHub


def _connection(credential_id: str) -> HandConnection:
    return HandConnection(
        name="laptop", principal="laptop", credential_id=credential_id, version="1", tools={}
    )


def test_a_stream_authenticated_before_a_revocation_cannot_attach_after_it() -> None:
    hub = HandHub()
    attached = _connection("cred_a")
    hub.attach(attached)
    assert hub.disconnect_credential("cred_a") == 1
    assert attached.closed is not None and hub.get("laptop") is None
    # The same credential's stream that raced the revocation: refused, nothing attached.
    with pytest.raises(CredentialRevoked):
        hub.attach(_connection("cred_a"))
    assert hub.get("laptop") is None
    # Other credentials are unaffected.
    hub.attach(_connection("cred_b"))
    assert hub.get("laptop") is not None
