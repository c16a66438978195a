"""Secrets the Mind checks or keeps: credentials, pairing codes, sealed provider keys."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import (
    CheckConstraint,
    String,
    Text,
)
from sqlalchemy.orm import Mapped, mapped_column

from mind.store.models.base import Base, UTCDateTime, one_of, utcnow

CREDENTIAL_KINDS = ("client", "hand", "service")


class Credential(Base):
    __tablename__ = "credentials"
    __table_args__ = (CheckConstraint(one_of("kind", CREDENTIAL_KINDS), name="kind"),)

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    kind: Mapped[str] = mapped_column(String(16))
    principal: Mapped[str] = mapped_column(String(128), index=True)
    scopes: Mapped[list[Any]] = mapped_column(default=list)
    # Non-secret lookup prefix embedded in the token.
    prefix: Mapped[str] = mapped_column(String(32), unique=True)
    # SHA-256 hex of the secret part; the secret itself is never stored.
    secret_hash: Mapped[str] = mapped_column(String(64))
    label: Mapped[str] = mapped_column(String(256), default="")
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)
    expires_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    revoked_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    # The browser a paired credential signed in (`mind.credentials.pairing`); None otherwise.
    device_id: Mapped[str | None] = mapped_column(String(64))
    # When it last authenticated, kept to the minute (`mind.credentials.last_seen`).
    last_seen_at: Mapped[datetime | None] = mapped_column(UTCDateTime())


class PairingCode(Base):
    """A one-time code with which a device signs in as `principal` (`mind.credentials.pairing`).

    Only the SHA-256 of the normalised code is kept, never the code. `used_at` is set once, by
    the redemption that wins; `credential_id` is the client credential the code became. Rows
    are pruned a day after they expire.
    """

    __tablename__ = "pairing_codes"

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    code_hash: Mapped[str] = mapped_column(String(64), unique=True)
    principal: Mapped[str] = mapped_column(String(128))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)
    expires_at: Mapped[datetime] = mapped_column(UTCDateTime(), index=True)
    used_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    credential_id: Mapped[str | None] = mapped_column(String(40))
    # Who made it: an operator's name, or the principal itself (`/pair` in a client).
    created_by: Mapped[str] = mapped_column(String(128), default="")


class ProviderSecret(Base):
    """An LLM provider's API key, sealed with the data directory's secrets key.

    `tobe setup` stores the key here so no config file holds it in plaintext; the Mind reads it
    when `[provider] api_key` is unset. One row per name (`provider` for the main provider).
    """

    __tablename__ = "provider_secrets"

    name: Mapped[str] = mapped_column(String(64), primary_key=True)
    # Provider kind the key belongs to (openai, anthropic, gemini).
    kind: Mapped[str] = mapped_column(String(16))
    # The sealed key (`mind.credentials.provider_keys`); never the key itself.
    sealed: Mapped[str] = mapped_column(Text)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)
