"""Configuration: a TOML file plus `TOBE_*` environment variables (environment wins).

File: `$TOBE_CONFIG`, else `$XDG_CONFIG_HOME/tobe/config.toml` (`~/.config/tobe/config.toml`),
if it exists. Nested keys use `__` in the environment: `TOBE_FACE__LISTEN=127.0.0.1:7420` is
`[face] listen = "127.0.0.1:7420"` in the file.

The data directory defaults to `$XDG_DATA_HOME/tobe` (`~/.local/share/tobe`) and holds the
SQLite store, the state lock, the Management socket and the local service credentials.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field, SecretStr
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    TomlConfigSettingsSource,
)


def default_data_dir() -> Path:
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "tobe"


def config_file() -> Path:
    explicit = os.environ.get("TOBE_CONFIG")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "tobe" / "config.toml"


class MindSettings(BaseModel):
    listen: str = "127.0.0.1:7410"
    # Provider steps per run before the run ends with an error.
    step_limit: int = Field(default=24, ge=1, le=1000)
    # Largest user message accepted by SendChat, in bytes of UTF-8.
    max_message_bytes: int = Field(default=64 * 1024, ge=1)
    # How long to wait for the state lock at start (seconds) before refusing to start.
    lock_timeout: float = Field(default=10.0, ge=0)
    # Where Mind reaches Awareness; empty disables the awareness tools.
    awareness_address: str = ""
    # Outbox events older than this many events behind the head may be pruned.
    outbox_keep: int = Field(default=100_000, ge=100)


class FaceSettings(BaseModel):
    listen: str = "127.0.0.1:7420"
    mind_address: str = "127.0.0.1:7410"
    # Outbound frames buffered per client connection.
    queue_size: int = Field(default=1024, ge=8)
    # Seconds a client may leave one frame unread before it is cut off.
    write_timeout: float = Field(default=10.0, gt=0)
    # Largest client frame accepted, in bytes.
    max_frame_bytes: int = Field(default=1024 * 1024, ge=1024)


class HandSettings(BaseModel):
    mind_address: str = "127.0.0.1:7410"
    name: str = "local"
    workspace: Path | None = None
    read_only: bool = False
    # Commands the reference Hand may run (first argv element); empty allows none.
    allowed_commands: list[str] = Field(
        default_factory=lambda: ["ls", "cat", "echo", "grep", "wc", "head", "tail", "python3"]
    )
    command_timeout: float = Field(default=30.0, gt=0)
    max_output_bytes: int = Field(default=64 * 1024, ge=1024)


class AwarenessSettings(BaseModel):
    listen: str = "127.0.0.1:7430"
    # Extra directory scanned for third-party adapters.
    adapters_dir: Path | None = None
    # Aggregation windows (seconds) for low and medium trust observations.
    low_window: float = Field(default=30.0, ge=0)
    medium_window: float = Field(default=5.0, ge=0)


class ProviderSettings(BaseModel):
    kind: Literal["", "scripted", "openai", "anthropic", "gemini"] = ""
    base_url: str = ""
    model: str = ""
    api_key: SecretStr | None = None
    # Script file for the scripted provider.
    script: Path | None = None
    thinking: str = "off"
    timeout: float = Field(default=120.0, gt=0)
    max_retries: int = Field(default=3, ge=0, le=10)


class Settings(BaseSettings):
    """All settings of every ToBe process; each process reads the section it needs."""

    model_config = SettingsConfigDict(
        env_prefix="TOBE_", env_nested_delimiter="__", extra="ignore", validate_default=True
    )

    data_dir: Path = Field(default_factory=default_data_dir)
    # SQLAlchemy URL; empty means the SQLite file `<data_dir>/tobe.db`.
    database_url: str = ""
    log_level: str = "INFO"
    mind: MindSettings = Field(default_factory=MindSettings)
    face: FaceSettings = Field(default_factory=FaceSettings)
    hand: HandSettings = Field(default_factory=HandSettings)
    awareness: AwarenessSettings = Field(default_factory=AwarenessSettings)
    provider: ProviderSettings = Field(default_factory=ProviderSettings)

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        toml = TomlConfigSettingsSource(settings_cls, toml_file=config_file())
        return (init_settings, env_settings, toml)

    @property
    def store_url(self) -> str:
        return self.database_url or f"sqlite+aiosqlite:///{self.data_dir / 'tobe.db'}"

    @property
    def management_socket(self) -> Path:
        return self.data_dir / "mind.sock"

    @property
    def credentials_dir(self) -> Path:
        """Local service credentials written by `tobe up` (mode 0600)."""
        return self.data_dir / "credentials"


def load_settings(**overrides: object) -> Settings:
    return Settings(**overrides)  # type: ignore[arg-type]
