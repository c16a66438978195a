"""Texts the Mind answers a gateway with that the gateway must tell apart from look-alikes.

`Mind.Authenticate` answers UNAUTHENTICATED both for the client token it was asked about and,
from its interceptor, for the gateway's own credential; only the text says which. Shared so
that the Face blames a person's credential only when the Mind did (`face.mind_client`).
"""

from __future__ import annotations

# The client token a gateway asked about (or signs out) is invalid, revoked or expired.
CLIENT_CREDENTIAL_REFUSED = "invalid, revoked or expired client credential"
# The Mind is up but cannot check credentials now (its store is down).
AUTHENTICATION_UNAVAILABLE = "authentication is unavailable; retry later"
