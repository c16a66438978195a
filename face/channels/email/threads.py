"""What a reply into a mail thread needs, kept in the transport's state across restarts.

A thread is named by its first Message-ID (the bridge's `thread`). For each, the state keeps
the person to answer, the subject, and the chain of Message-IDs for `References`: the first
and the latest few (RFC 5322 allows trimming the middle), with the newest mail from the person
for `In-Reply-To`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from face.channels.transport import TransportState

from .outbound_mail import base_subject

# Message-IDs a `References` header keeps: the thread's first and the latest ones.
CHAIN_LENGTH = 20
_KEY = "thread:"


@dataclass
class MailThread:
    person: str
    subject: str
    newest_inbound: str
    chain: list[str] = field(default_factory=list)

    def extend(self, message_ids: tuple[str, ...] | list[str]) -> None:
        for message_id in message_ids:
            if message_id not in self.chain:
                self.chain.append(message_id)
        if len(self.chain) > CHAIN_LENGTH:
            self.chain = [self.chain[0], *self.chain[-(CHAIN_LENGTH - 1) :]]


class MailThreads:
    def __init__(self, state: TransportState) -> None:
        self._state = state

    def get(self, thread: str) -> MailThread | None:
        value = self._state.get(_KEY + thread)
        if value is None:
            return None
        document = json.loads(value)
        return MailThread(
            person=document["person"],
            subject=document["subject"],
            newest_inbound=document["newest_inbound"],
            chain=list(document["chain"]),
        )

    def received(
        self, thread: str, *, person: str, subject: str, message_id: str, chain: tuple[str, ...]
    ) -> None:
        """A mail from `person` (the thread's) arrived in `thread`: answers go after it."""
        record = self.get(thread)
        if record is None:
            record = MailThread(person, base_subject(subject), message_id)
        record.newest_inbound = message_id
        record.subject = record.subject or base_subject(subject)
        record.extend(chain)
        self.put(thread, record)

    def put(self, thread: str, record: MailThread) -> None:
        document = {
            "person": record.person,
            "subject": record.subject,
            "newest_inbound": record.newest_inbound,
            "chain": record.chain,
        }
        self._state.put(_KEY + thread, json.dumps(document))
