"""The Management service: operator commands on the Mind's store and live state.

The running Mind serves it on its owner-only socket (`attach.attach_management`); while no Mind
runs, the operator's CLI serves it in its own process under the state lock (`serve_offline`).
What is imported here is the whole of what other process packages may use (the CLI and
`tobe up`); everything else in this package is the Mind's own.

One command needs the running Mind: `CompactContext` (`tobe admin conversations compact`) goes
through `MindLink.compact_conversation` to the conversation's actor, as a client's
`Mind.CompactConversation` does, and is audited once the compaction committed; offline it
answers FAILED_PRECONDITION. `revocation.py` is the one revocation path (an operator's revoke
and `Mind.SignOut`); `pairing.py` runs pairing codes as units with their audit rows.
"""

from mind.credentials.local_user import local_user
from mind.management.local_credentials import (
    LocalCredential,
    credential_file,
    local_credentials,
    provision,
)
from mind.management.offline import OfflineUnavailable, serve_offline
from mind.management.servicer import ACTOR_METADATA

__all__ = [
    "ACTOR_METADATA",
    "LocalCredential",
    "OfflineUnavailable",
    "credential_file",
    "local_credentials",
    "local_user",
    "provision",
    "serve_offline",
]
