"""Configuration: a TOML file plus `TOBE_*` environment variables (environment wins).

File: `$TOBE_CONFIG`, else `$XDG_CONFIG_HOME/tobe/config.toml` (`~/.config/tobe/config.toml`),
if it exists. Nested keys use `__` in the environment: `TOBE_FACE__LISTEN=127.0.0.1:7420` is
`[face] listen = "127.0.0.1:7420"` in the file. Unknown sections and keys are refused, and
every error names the file and line, or the variable, the bad value came from
(`tobe.config_errors`).

The data directory defaults to `$XDG_DATA_HOME/tobe` (`~/.local/share/tobe`) and holds the
SQLite store, the state lock, the Management socket and the local service credentials, and is
where the Mind looks for skills (`<data_dir>/skills`) and resources (`<data_dir>/resources`)
unless `[skills] dirs` or `[resources] dirs` say otherwise.
"""

from __future__ import annotations

import ipaddress
import os
import re
from pathlib import Path
from typing import Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SecretStr,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    SettingsError,
    TomlConfigSettingsSource,
)

# Re-exported: callers catch `tobe.config.ConfigError` from `load_settings`.
from tobe.config_errors import ConfigError as ConfigError
from tobe.config_errors import environment_problem, read_toml, settings_problems

_FAILED_FIELD = re.compile(r'field "([^"]+)"')


def default_data_dir() -> Path:
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "tobe"


def config_file() -> Path:
    explicit = os.environ.get("TOBE_CONFIG")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "tobe" / "config.toml"


class ServerTlsSettings(BaseModel):
    """TLS on a process's TCP listener (`tobe.runtime.tls`); Unix sockets stay plaintext.

    Off while `cert_file` and `key_file` are unset. `tobe admin tls init` creates both.
    """

    model_config = ConfigDict(extra="forbid")

    cert_file: Path | None = None
    key_file: Path | None = None
    # CA whose client certificates are accepted (mTLS); required when
    # `require_client_cert` is set.
    client_ca_file: Path | None = None
    require_client_cert: bool = False

    @field_validator("cert_file", "key_file", "client_ca_file", mode="before")
    @classmethod
    def _empty_is_unset(cls, value: object) -> object:
        """An empty value (`TOBE_MIND__TLS__CERT_FILE=`, as docker/compose.yaml passes it with
        TLS off) leaves the file unset instead of naming the current directory."""
        return None if value == "" else value


class ClientTlsSettings(BaseModel):
    """How a client dials a TLS listener: the CA it trusts, and its own certificate for mTLS.

    TLS is used when any of these is set or the address starts with `tls://`; with no
    `ca_file` the system's trusted roots apply.
    """

    model_config = ConfigDict(extra="forbid")

    ca_file: Path | None = None
    # SHA-256 fingerprint the CA in `ca_file` must have (as `tobe admin tls init` prints it).
    ca_fingerprint: str = ""
    cert_file: Path | None = None
    key_file: Path | None = None

    @field_validator("ca_file", "cert_file", "key_file", mode="before")
    @classmethod
    def _empty_is_unset(cls, value: object) -> object:
        """An empty value leaves the file unset (see ServerTlsSettings)."""
        return None if value == "" else value


class MindSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    listen: str = "127.0.0.1:7410"
    # Where the Mind also answers its health status as one line of plain text (`host:port`,
    # loopback; empty: nowhere), for health checks that start no program (the Docker image's).
    probe_listen: str = ""
    tls: ServerTlsSettings = Field(default_factory=ServerTlsSettings)
    # Serve plaintext on a TCP listener although this data directory's Mind served TLS before
    # (`tobe.runtime.tls_record`); without it such a start is refused.
    allow_plaintext: bool = False
    # Provider steps per run before the run ends with an error.
    step_limit: int = Field(default=24, ge=1, le=1000)
    # Largest message accepted by SendChat and PostMessage, in bytes of UTF-8.
    max_message_bytes: int = Field(default=64 * 1024, ge=1)
    # Largest image accepted by SendChat, in bytes, and most images one message may carry
    # (0: images are refused).
    max_image_bytes: int = Field(default=5 * 1024 * 1024, ge=1)
    max_images: int = Field(default=8, ge=0, le=64)
    # Most members a group conversation may be created with (the owner not counted).
    max_members: int = Field(default=256, ge=1)
    # How long to wait for the state lock at start (seconds) before refusing to start.
    lock_timeout: float = Field(default=10.0, ge=0)
    # Where Mind reaches Awareness; empty disables the awareness tools.
    awareness_address: str = ""
    # Conversation that receives observations whose adapter names none, and its owner
    # (empty: the local user, as `tobe up` names the local client credential).
    awareness_conversation: str = "p_awareness"
    awareness_owner: str = ""
    # Outbox events older than this many events behind the head may be pruned.
    outbox_keep: int = Field(default=100_000, ge=100)
    # Posted as the first message of every new conversation (posted_by "welcome"); empty: none.
    welcome: str = ""
    # Posted after a run that failed (posted_by "error_reply"); empty: none.
    error_reply: str = ""
    # A conversation's actor (its cached context and rendering) is let go after this many
    # seconds without use, and the least recently used idle ones beyond `max_actors`; the
    # next message loads it again from the store. Active runs and queued work keep theirs.
    # After a quarter of it unused, a kept actor forgets its cached context (read again by
    # its next run).
    actor_idle_seconds: float = Field(default=600.0, gt=0)
    max_actors: int = Field(default=1000, ge=1)
    # Several Minds on one PostgreSQL database (docs/cluster.md): this Mind's name among them
    # (empty: the one kept in the data directory's `node-id` file, made at the first start).
    node_id: str = Field(default="", pattern=r"^$|^[a-z0-9][a-z0-9._-]{0,62}$")
    # Where the other Minds reach this one with requests for the conversations it owns
    # (`host:port`; empty: the address it listens on, unless that is a wildcard address).
    advertise_address: str = ""
    # How long this Mind's hold on a conversation lasts unless renewed (every third of it).
    lease_seconds: float = Field(default=10.0, ge=1, le=300)


SqliteSynchronous = Literal["normal", "full"]


class StoreSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    # SQLite `PRAGMA synchronous` of the Mind's store (WAL). `normal` syncs at checkpoints: a
    # power loss may undo the last commits, never corrupt. `full` syncs every commit.
    sqlite_synchronous: SqliteSynchronous = "normal"


class WebSettings(BaseModel):
    """The browser client Face serves over HTTP and WebSocket (`face.web`)."""

    model_config = ConfigDict(extra="forbid")

    enabled: bool = True
    listen: str = "127.0.0.1:7421"
    # HTTPS and WSS; required for a `listen` other than loopback (a session cookie in
    # plaintext across a network is a stolen session).
    tls: ServerTlsSettings = Field(default_factory=ServerTlsSettings)
    # Origins besides the page's own that may open the WebSocket (`https://agent.example`),
    # e.g. behind a reverse proxy; exact scheme://host[:port] strings.
    origins: list[str] = Field(default_factory=list)
    # The address people open, printed with pairing codes; empty: derived from `listen`.
    public_url: str = ""
    # Failed pairing attempts allowed per client address per minute before HTTP 429.
    pair_attempts_per_minute: int = Field(default=5, ge=1)
    # Reverse proxies (addresses or CIDR networks) whose `X-Forwarded-For`/`Forwarded` name
    # the client; from any other peer those headers are ignored.
    trusted_proxies: list[str] = Field(default_factory=list)
    # The OpenAI-compatible chat endpoint (`/v1/models`, `/v1/chat/completions`) beside the web
    # client, for chat apps and OpenAI SDKs; every request needs a client credential.
    openai_api: bool = True
    # Chat completions each credential may ask for per minute, then HTTP 429 with Retry-After.
    openai_requests_per_minute: int = Field(default=60, ge=1)

    @field_validator("trusted_proxies")
    @classmethod
    def _networks(cls, value: list[str]) -> list[str]:
        for entry in value:
            try:
                ipaddress.ip_network(entry.strip(), strict=False)
            except ValueError:
                raise ValueError(
                    f"{entry!r} is not an IP address or CIDR network (e.g. 10.0.0.5, 10.0.0.0/8)"
                ) from None
        return [entry.strip() for entry in value]


class FaceSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    listen: str = "127.0.0.1:7420"
    # Where the Face also answers its health status as one line of plain text (`host:port`,
    # loopback; empty: nowhere), for health checks that start no program (the Docker image's).
    probe_listen: str = ""
    tls: ServerTlsSettings = Field(default_factory=ServerTlsSettings)
    mind_address: str = "127.0.0.1:7410"
    # Several Minds on one database, in order: the Face dials the first and fails over to the
    # next, round-robin, when the one it follows is unreachable. `mind_address` is the
    # one-address form; set one of the two.
    mind_addresses: list[str] = Field(default_factory=list)
    # How Face dials a Mind that serves TLS (every address of `mind_addresses`).
    mind_tls: ClientTlsSettings = Field(default_factory=ClientTlsSettings)
    # Outbound frames buffered per client connection.
    queue_size: int = Field(default=1024, ge=8)
    # Seconds a client may leave one frame unread before it is cut off.
    write_timeout: float = Field(default=10.0, gt=0)
    # Largest client frame accepted, in bytes: room for a message with the Mind's default
    # image limits (8 images of 5 MiB) and its text.
    max_frame_bytes: int = Field(default=48 * 1024 * 1024, ge=1024)
    # Face's own service credential (scope `gateway`) for the Mind; when unset, Face reads
    # `<data_dir>/credentials/face.token`, which `tobe up` writes.
    mind_token: SecretStr | None = None
    web: WebSettings = Field(default_factory=WebSettings)

    @field_validator("mind_addresses")
    @classmethod
    def _addresses(cls, value: list[str]) -> list[str]:
        if any(not address.strip() for address in value):
            raise ValueError("an address is empty; list each Mind as host:port or unix:/path")
        return [address.strip() for address in value]

    @model_validator(mode="after")
    def _one_mind_setting(self) -> FaceSettings:
        if self.mind_addresses and "mind_address" in self.model_fields_set:
            raise ValueError(
                "face.mind_address and face.mind_addresses are both set; list every Mind in "
                "face.mind_addresses"
            )
        return self

    @property
    def minds(self) -> list[str]:
        """The Minds this Face may dial, in order of preference."""
        return self.mind_addresses or [self.mind_address]


class WebToolSettings(BaseModel):
    """The reference Hand's web tools (`hand.web`): `web_fetch` on by default, `web_search`
    once a SearXNG address is set, `browser_*` only when enabled (it needs Chromium)."""

    model_config = ConfigDict(extra="forbid")

    fetch: bool = True
    # Hosts (exact, or `*.example.org`) and addresses or CIDRs the address guard lets through
    # although they are loopback, private, link-local or otherwise not public.
    allow: list[str] = Field(default_factory=list)
    # Seconds one fetch may take in all (resolving, redirects, reading); bytes read at most.
    fetch_timeout: float = Field(default=20.0, gt=0)
    max_bytes: int = Field(default=5 * 1024 * 1024, ge=1024)
    # The most characters a result may have, whatever the model asks for.
    max_chars: int = Field(default=100_000, ge=1000)
    # The SearXNG instance `web_search` asks (its base URL; empty: no `web_search`).
    search_url: str = ""
    search_timeout: float = Field(default=15.0, gt=0)
    browser: bool = False
    # The Chromium program the browser tools drive (name on PATH or path).
    chromium: str = "chromium"
    browser_pages: int = Field(default=4, ge=1)
    browser_timeout: float = Field(default=30.0, gt=0)


class HandSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    mind_address: str = "127.0.0.1:7410"
    # How the Hand dials a Mind that serves TLS (`tobe hand serve --ca/--cert/--key`).
    tls: ClientTlsSettings = Field(default_factory=ClientTlsSettings)
    name: str = "local"
    # Where the Hand answers whether it is attached as one line of plain text (`host:port`,
    # loopback; empty: nowhere), for health checks that start no program (the Docker image's).
    probe_listen: str = ""
    workspace: Path | None = None
    read_only: bool = False
    # Reject an offer for a tool that is not read-only when it comes without an approval
    # binding (`tobe hand serve --require-binding`), so nothing effectful runs unapproved.
    require_binding: bool = False
    # Commands the reference Hand may run (first argv element); empty allows none.
    allowed_commands: list[str] = Field(
        default_factory=lambda: ["ls", "cat", "echo", "grep", "wc", "head", "tail", "python3"]
    )
    command_timeout: float = Field(default=30.0, gt=0)
    max_output_bytes: int = Field(default=64 * 1024, ge=1024)
    # Commands run in a bubblewrap sandbox seeing only the workspace (see `hand.sandbox`):
    # the bwrap program (name on PATH or path), and whether sandboxed commands get the network.
    bwrap: str = "bwrap"
    allow_command_network: bool = False
    # Where no sandbox can run (e.g. in a container that already is the boundary), run commands
    # unconfined instead of refusing to start. They can then read anything this user can.
    allow_unconfined_commands: bool = False
    # Where no sandbox can run and unconfined commands are not allowed, start without
    # `run_command` instead of refusing to start (`tobe up` sets it for its local Hand).
    withhold_commands_without_sandbox: bool = False
    web: WebToolSettings = Field(default_factory=WebToolSettings)


class RemoteSettings(BaseModel):
    """Remote task timeouts (seconds) on the Mind; each one ends a task or a stream on its own."""

    model_config = ConfigDict(extra="forbid")

    # An offer not answered by accepted/rejected within this ends the task TIMED_OUT.
    accept_timeout: float = Field(default=30.0, gt=0)
    # An accepted task without a result within this ends TIMED_OUT.
    run_timeout: float = Field(default=600.0, gt=0)
    # A Hand sends a heartbeat at least this often.
    heartbeat_interval: float = Field(default=10.0, gt=0)
    # A Hand stream without any frame for this long is considered dead and closed.
    heartbeat_timeout: float = Field(default=30.0, gt=0)
    # Open tasks of a Hand that stays away this long after its stream ended become LOST.
    lost_grace: float = Field(default=60.0, ge=0)
    # How long a cancelled tool call waits for the Hand's terminal before giving up.
    cancel_wait: float = Field(default=10.0, ge=0)


class DelegateSettings(BaseModel):
    """The `delegate` tool: child runs with their own context, tools and budget (the Mind)."""

    model_config = ConfigDict(extra="forbid")

    # Offer the `delegate` tool at all.
    enabled: bool = True
    # How deep children may nest: 1 lets a person's conversation delegate, not its children.
    max_depth: int = Field(default=1, ge=1, le=4)
    # A child's budget when the call names none, and the most a call may ask for: model
    # turns (provider calls), tokens (input plus output as the provider reports them) and
    # wall time in seconds.
    turns: int = Field(default=8, ge=1)
    max_turns: int = Field(default=24, ge=1)
    tokens: int = Field(default=100_000, ge=1)
    max_tokens: int = Field(default=1_000_000, ge=1)
    seconds: float = Field(default=300.0, gt=0)
    max_seconds: float = Field(default=3600.0, gt=0)


class RecallSettings(BaseModel):
    """Semantic recall (the Mind): embeddings of the recall index's entries, merged with the
    keyword rank (`mind.recall.semantic`). Off while `embeddings` is empty."""

    model_config = ConfigDict(extra="forbid")

    # The wire the embeddings come from: "openai" (any OpenAI-compatible server), "ollama",
    # "gemini"; empty: keyword recall only.
    embeddings: Literal["", "openai", "ollama", "gemini"] = ""
    model: str = ""
    # Empty: the kind's public address (Ollama: http://127.0.0.1:11434).
    base_url: str = ""
    # Unset: the kind's usual variable (OPENAI_API_KEY, GEMINI_API_KEY), then the key
    # `tobe setup` stored for it, as for `[provider]`; Ollama takes none.
    api_key: SecretStr | None = None
    timeout: float = Field(default=30.0, gt=0)
    # Entries embedded per request.
    batch: int = Field(default=64, ge=1, le=2048)
    # A search compares the query with at most this many of the viewer's newest entries
    # (cosine similarity, computed by the Mind), and keeps those at least this similar.
    max_vectors: int = Field(default=5000, ge=1)
    min_similarity: float = Field(default=0.35, ge=-1, le=1)

    @model_validator(mode="after")
    def _model_named(self) -> RecallSettings:
        if self.embeddings and not self.model:
            raise ValueError(f"embeddings = {self.embeddings!r} needs the model to embed with")
        if self.base_url and not self.base_url.startswith(("http://", "https://")):
            raise ValueError("base_url must start with http:// or https://")
        return self


class AwarenessSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    listen: str = "127.0.0.1:7430"
    # Where Awareness also answers its health status as one line of plain text (`host:port`,
    # loopback; empty: nowhere), for health checks that start no program (the Docker image's).
    probe_listen: str = ""
    # Extra directory scanned for third-party adapters.
    adapters_dir: Path | None = None
    # Aggregation windows (seconds) for low and medium trust observations.
    low_window: float = Field(default=30.0, ge=0)
    medium_window: float = Field(default=5.0, ge=0)
    # Also scan the adapters shipped in `awareness/adapters/`.
    builtin_adapters: bool = True
    # Service token the Mind must present (Bearer); else read from token_file, else
    # `<data_dir>/credentials/awareness.token` (created 0600 on first start).
    token: SecretStr | None = None
    token_file: Path | None = None
    # Seconds an adapter's `start` and `stop` may take; a slower one has failed.
    start_timeout: float = Field(default=30.0, gt=0)
    stop_timeout: float = Field(default=10.0, gt=0)
    # Restarts of a failed adapter wait 1 s, doubling up to this many seconds.
    restart_max_delay: float = Field(default=30.0, ge=1)


class ChannelSettings(BaseModel):
    """What every channel shares: who may talk, how fast, and as which profile."""

    model_config = ConfigDict(extra="forbid")

    enabled: bool = False
    # The profile of the conversations this channel starts; empty: the default profile.
    profile: str = ""
    # A sender who is neither paired nor in `allow`: "pair" answers with a pairing prompt (the
    # owner still approves the code), "ignore" answers nothing at all.
    unknown_senders: Literal["pair", "ignore"] = "pair"
    # Addresses that may ask to pair even when unknown senders are ignored: exact addresses
    # (`@alice:example.org`, `alice@example.org`) or, for mail, a domain (`@example.org`).
    allow: list[str] = Field(default_factory=list)
    # Messages one sender may send per minute; beyond it they are told to wait, once.
    messages_per_minute: int = Field(default=20, ge=1)


class MatrixChannelSettings(ChannelSettings):
    """The agent as a Matrix bot user (`channels.matrix`)."""

    # The homeserver's client-server API base, e.g. https://matrix.example.org.
    homeserver: str = ""
    # The bot's full user id, e.g. @tobe:example.org.
    user_id: str = ""
    # Its password, or a file holding it (0600); read at start, never logged.
    password: SecretStr | None = None
    password_file: Path | None = None
    # The device name the bot logs in with, shown in people's session lists.
    device_name: str = "ToBe"
    # "edits": the reply streams into one message edited as it grows (m.replace);
    # "final": one message once the reply is whole.
    reply: Literal["edits", "final"] = "edits"
    # Seconds between two edits of a streaming reply (homeservers rate-limit edits).
    edit_interval: float = Field(default=1.0, gt=0)


class EmailChannelSettings(ChannelSettings):
    """The agent's own mailbox (`channels.email`): mail in by IMAP IDLE, replies by SMTP."""

    # The agent's address: replies come from it, and mail from it is never answered.
    address: str = ""
    username: str = ""
    password: SecretStr | None = None
    password_file: Path | None = None
    imap_host: str = ""
    imap_port: int = Field(default=993, ge=1, le=65535)
    imap_security: Literal["tls", "starttls", "none"] = "tls"
    mailbox: str = "INBOX"
    smtp_host: str = ""
    smtp_port: int = Field(default=587, ge=1, le=65535)
    smtp_security: Literal["tls", "starttls", "none"] = "starttls"
    # A reply to an approval request whose first word is one of these decides it.
    approve_words: list[str] = Field(default_factory=lambda: ["approve", "yes"])
    deny_words: list[str] = Field(default_factory=lambda: ["deny", "no"])


class ChannelsSettings(BaseModel):
    """The networks people reach their agent on besides ToBe's own clients (`channels`)."""

    model_config = ConfigDict(extra="forbid")

    # Where the channels process answers its health as one line of plain text (`host:port`,
    # loopback; empty: nowhere), like the other services' probes.
    probe_listen: str = ""
    matrix: MatrixChannelSettings = Field(default_factory=MatrixChannelSettings)
    email: EmailChannelSettings = Field(default_factory=EmailChannelSettings)


class ContextSettings(BaseModel):
    """How much of the model's context window a request may fill, and how compaction trims it.

    A request's prompt may take `context_window - output - reserve_tokens`, where `output` is
    the model's largest output capped at `max_output_tokens` (what each request asks for).
    """

    model_config = ConfigDict(extra="forbid")

    # Tokens kept free for estimation error (the estimate is calibrated, not exact).
    reserve_tokens: int = Field(default=4096, ge=0)
    # Largest output a request asks for (the model's own maximum if lower).
    max_output_tokens: int = Field(default=16_384, ge=256)
    # Share of the budget the most recent messages may keep verbatim after a compaction.
    keep_ratio: float = Field(default=0.25, gt=0, lt=1)
    # Largest summary a compaction asks the model to write, in tokens.
    summary_tokens: int = Field(default=2048, ge=128)
    # Characters per token assumed until a provider reports usage for the conversation.
    chars_per_token: float = Field(default=3.0, gt=0)


# How a model can be held to a JSON Schema: the OpenAI-compatible `response_format` with the
# schema or only "some JSON object", a forced tool call (Anthropic), or not at all (the prompt
# asks for JSON).
StructuredOutput = Literal["json_schema", "json_object", "tool", "none"]


class ModelEntry(BaseModel):
    """A model the built-in catalog does not know (see `mind.providers.catalog`)."""

    model_config = ConfigDict(extra="forbid")

    id: str = Field(min_length=1)
    context_window: int = Field(gt=0)
    max_output: int = Field(gt=0)
    vision: bool = False
    # Thinking levels the model accepts: off, minimal, low, medium, high, xhigh.
    thinking_levels: list[str] = Field(default_factory=lambda: ["off"], min_length=1)
    # How the model can be held to a JSON Schema (`mind.providers.catalog`); unset: the
    # catalog's value for this id, else `[provider] structured_output`, else "none".
    structured_output: StructuredOutput | None = None
    # Prices in USD per million tokens, for `tobe usage`'s estimated cost; unset: tokens only.
    # `cached_input_price` (prompt-cache reads) defaults to `input_price`.
    input_price: float | None = Field(default=None, ge=0)
    output_price: float | None = Field(default=None, ge=0)
    cached_input_price: float | None = Field(default=None, ge=0)


class ProviderSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    kind: Literal["", "scripted", "openai", "anthropic", "gemini"] = ""
    base_url: str = ""
    model: str = ""
    api_key: SecretStr | None = None
    # Script file for the scripted provider.
    script: Path | None = None
    thinking: str = "off"
    timeout: float = Field(default=120.0, gt=0)
    # Seconds the provider may send nothing (before the first byte of its response, retries
    # included, and between the bytes of a stream) before the turn ends with an error naming
    # it, instead of leaving the person with silence.
    first_byte_timeout: float = Field(default=30.0, gt=0)
    max_retries: int = Field(default=3, ge=0, le=10)
    # Models added to the built-in catalog, e.g. a local model on an OpenAI-compatible server.
    models: list[ModelEntry] = Field(default_factory=list)
    # How this provider's model can be held to a JSON Schema, overriding the catalog (a
    # `[[provider.models]]` entry's own setting wins): json_schema, json_object, tool, none.
    structured_output: StructuredOutput | None = None


class ApprovalRule(BaseModel):
    """One approval rule; the first rule whose every pattern matches decides (globs, `*` = any)."""

    model_config = ConfigDict(extra="forbid")

    tool: str = "*"
    effect: Literal["*", "read_only", "workspace_write", "external_side_effect", "unknown"] = "*"
    hand: str = "*"
    conversation: str = "*"
    principal: str = "*"
    verdict: Literal["allow", "ask", "deny"]
    # Shown to the model on deny and to the person deciding on ask.
    reason: str = ""


class ReviewerSettings(BaseModel):
    """The isolated Reviewer consulted before a person is asked (see `mind.approvals`)."""

    model_config = ConfigDict(extra="forbid")

    enabled: bool = False
    # Seconds the reviewer may take; a slower answer counts as `require_user`.
    timeout: float = Field(default=20.0, gt=0)
    # Provider of the reviewer; unset means the Mind's `[provider]`.
    provider: ProviderSettings | None = None


class ApprovalSettings(BaseModel):
    """Approval policy (documented in `mind.approvals.policy`).

    Safe defaults: read-only calls run, writes and side effects ask, an unknown effect asks;
    a run triggered by a source without the `workspace_write` permission (low/medium trust)
    is denied workspace writes and unknown effects whatever the rules say.
    """

    model_config = ConfigDict(extra="forbid")

    rules: list[ApprovalRule] = Field(default_factory=list)
    # Verdict by effect class when no rule matches.
    read_only: Literal["allow", "ask", "deny"] = "allow"
    workspace_write: Literal["allow", "ask", "deny"] = "ask"
    external_side_effect: Literal["allow", "ask", "deny"] = "ask"
    unknown: Literal["allow", "ask", "deny"] = "ask"
    # Verdict for the Mind's memory_write and memory_delete when no rule matches: they change
    # only the calling conversation's own memory.
    memory: Literal["allow", "ask", "deny"] = "allow"
    # Seconds a request waits for a person before it expires (= denied).
    expiry: float = Field(default=600.0, gt=0)
    reviewer: ReviewerSettings = Field(default_factory=ReviewerSettings)


class SkillsSettings(BaseModel):
    """Where the Mind loads `.skill.md` files from (`mind.skills`), recursively.

    Unset: `<data_dir>/skills`. A directory listed later is more specific: its skill wins a
    name clash. Directories that do not exist are empty, and are picked up once created.
    """

    model_config = ConfigDict(extra="forbid")

    dirs: list[Path] = Field(default_factory=list)


class ResourcesSettings(BaseModel):
    """Where the Mind reads `.md` resources from (`mind.resources`), recursively.

    Unset: `<data_dir>/resources`. On the same relative path, a directory listed later wins.
    """

    model_config = ConfigDict(extra="forbid")

    dirs: list[Path] = Field(default_factory=list)


class ActionsSettings(BaseModel):
    """The entry decision layer (`mind.actions`): extract, evaluate, plan before any action.

    On, a person's input first meets the Extractor; only what passes evaluate and plan reaches
    tools that change anything. A profile may turn it off or on for its conversations.
    """

    model_config = ConfigDict(extra="forbid")

    enabled: bool = True
    # Seconds a pending confirmation waits for its owner before it expires.
    confirmation_ttl: float = Field(default=3600.0, gt=0)
    # Recent messages each stage is shown as context.
    context_messages: int = Field(default=12, ge=0, le=200)
    # Tendencies evaluated per input; more are refused as "too many at once".
    max_tendencies: int = Field(default=3, ge=1, le=10)
    # Another (cheaper) model for the stages, on the Mind's `[provider]` (its kind, base URL
    # and key); unset: the stages use the Mind's model.
    model: str = ""
    # A whole provider of the stages' own (like `[approvals.reviewer] provider`); wins over
    # `model`.
    provider: ProviderSettings | None = None

    @model_validator(mode="after")
    def _one_model_choice(self) -> ActionsSettings:
        if self.model and self.provider is not None:
            raise ValueError(
                "[actions] model and [actions] provider are both set; name the model in "
                "[actions.provider] model instead"
            )
        return self


class SchedulerSettings(BaseModel):
    """The durable scheduler (`mind.scheduler`)."""

    model_config = ConfigDict(extra="forbid")

    # The owner's IANA time zone ("Europe/Paris"): schedules are read in it, stored in UTC.
    time_zone: str = "UTC"
    # Per-principal zones, overriding `time_zone` for that owner.
    owner_time_zones: dict[str, str] = Field(default_factory=dict)
    # Longest sleep between due-time checks: wall-clock jumps (suspend, NTP) are noticed then.
    max_sleep: float = Field(default=30.0, gt=0)
    # After a downtime, fire once per missed time instead of once for all of them.
    catch_up: bool = False
    # Shortest interval a schedule may repeat at, in seconds.
    min_interval: float = Field(default=60.0, gt=0)
    # Read the current time from this file (an ISO-8601 instant) instead of the system clock:
    # for rehearsing schedules; unset in normal use.
    clock_file: Path | None = None

    @field_validator("time_zone")
    @classmethod
    def _known_zone(cls, value: str) -> str:
        return _zone(value)

    @field_validator("owner_time_zones")
    @classmethod
    def _known_zones(cls, value: dict[str, str]) -> dict[str, str]:
        return {owner: _zone(zone) for owner, zone in value.items()}

    def zone_of(self, owner: str) -> str:
        return self.owner_time_zones.get(owner, self.time_zone)


def _zone(value: str) -> str:
    try:
        ZoneInfo(value)
    except (ZoneInfoNotFoundError, ValueError) as exc:
        raise ValueError(
            f"unknown time zone {value!r}: use an IANA name like 'Europe/Paris'"
        ) from exc
    return value


class ProfileEntry(BaseModel):
    """One declarative profile (`[[profiles.profile]]`; see `mind.profiles.declared`)."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9_.-]+$")
    description: str = ""
    # Static text the system prompt carries after the platform prompt.
    persona: str = ""
    # The platform tools it offers, by name (current_time, wait, view_skill, read_resource, ...).
    platform_tools: list[str]
    hand_tools: bool = True
    awareness_tools: bool = True
    # off, minimal, low, medium, high, xhigh; empty: `[provider] thinking`.
    thinking: str = ""
    welcome: str = ""
    error_reply: str = ""
    # Hooks by import path (`package.module:function`); empty: none.
    before_tool_call: str = ""
    after_tool_call: str = ""
    should_stop_after_turn: str = ""
    prepare_next_turn: str = ""
    # Thinking tokens per level where the model takes a budget ({"high" = 20000}).
    thinking_budgets: dict[str, int] = Field(default_factory=dict)
    # How a step's tool calls run: "sequential" (in order) or "parallel" (at once).
    tool_execution: Literal["sequential", "parallel"] = "sequential"
    # The entry decision layer for its conversations; unset: `[actions] enabled`.
    actions: bool | None = None
    # The person's IANA time zone in the prompt's current-time note; empty: `[scheduler]`'s.
    time_zone: str = ""

    @field_validator("time_zone")
    @classmethod
    def _known_zone(cls, value: str) -> str:
        return _zone(value) if value else value


class ProfilesSettings(BaseModel):
    """The profiles conversations run with (`mind.profiles`).

    `default` is the profile of a conversation created without one; `factory` names code
    (`package.module:function`) called once per conversation to make or adjust its profile.
    """

    model_config = ConfigDict(extra="forbid")

    default: str = "default"
    factory: str = ""
    profile: list[ProfileEntry] = Field(default_factory=list)


class TelemetrySettings(BaseModel):
    """OpenTelemetry's standard variables as file keys (`OTEL_` dropped, lower case); a variable
    set in the environment wins over its key here. `tobe.telemetry.setup` reads them."""

    model_config = ConfigDict(extra="forbid")

    exporter_otlp_endpoint: str = ""
    exporter_otlp_protocol: Literal["", "grpc", "http/protobuf"] = ""
    exporter_otlp_insecure: bool | None = None
    exporter_otlp_headers: str = ""
    traces_exporter: str = ""
    metrics_exporter: str = ""
    metric_export_interval: int | None = Field(default=None, gt=0)
    bsp_schedule_delay: int | None = Field(default=None, gt=0)
    service_name: str = ""
    resource_attributes: str = ""
    traces_sampler: str = ""
    traces_sampler_arg: str = ""
    # Tool arguments in spans (never a sealed turn's).
    content: bool = False
    # Each service answers Prometheus on this port plus its offset (Mind 0, Face 1,
    # Awareness 2, Hand 3); 0 is off.
    prometheus_port: int = Field(default=0, ge=0, le=65532)
    prometheus_host: str = "127.0.0.1"


class LogSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    # "json": one JSON object a line, with the trace and span ids of the current span.
    format: Literal["text", "json"] = "text"


class Settings(BaseSettings):
    """All settings of every ToBe process; each process reads the section it needs."""

    model_config = SettingsConfigDict(
        env_prefix="TOBE_", env_nested_delimiter="__", extra="forbid", validate_default=True
    )

    data_dir: Path = Field(default_factory=default_data_dir)
    # SQLAlchemy URL; empty means the SQLite file `<data_dir>/tobe.db`.
    database_url: str = ""
    log_level: str = "INFO"
    store: StoreSettings = Field(default_factory=StoreSettings)
    mind: MindSettings = Field(default_factory=MindSettings)
    face: FaceSettings = Field(default_factory=FaceSettings)
    hand: HandSettings = Field(default_factory=HandSettings)
    remote: RemoteSettings = Field(default_factory=RemoteSettings)
    awareness: AwarenessSettings = Field(default_factory=AwarenessSettings)
    channels: ChannelsSettings = Field(default_factory=ChannelsSettings)
    provider: ProviderSettings = Field(default_factory=ProviderSettings)
    approvals: ApprovalSettings = Field(default_factory=ApprovalSettings)
    context: ContextSettings = Field(default_factory=ContextSettings)
    skills: SkillsSettings = Field(default_factory=SkillsSettings)
    resources: ResourcesSettings = Field(default_factory=ResourcesSettings)
    profiles: ProfilesSettings = Field(default_factory=ProfilesSettings)
    actions: ActionsSettings = Field(default_factory=ActionsSettings)
    scheduler: SchedulerSettings = Field(default_factory=SchedulerSettings)
    delegate: DelegateSettings = Field(default_factory=DelegateSettings)
    recall: RecallSettings = Field(default_factory=RecallSettings)
    telemetry: TelemetrySettings = Field(default_factory=TelemetrySettings)
    log: LogSettings = Field(default_factory=LogSettings)

    @field_validator("database_url")
    @classmethod
    def _supported_database(cls, value: str) -> str:
        """Refused here, with the forms that work, rather than when the store first opens."""
        backend = value.partition(":")[0].partition("+")[0]
        if value and backend not in ("sqlite", "postgresql", "postgres"):
            raise ValueError(
                f"{backend!r} is not a database ToBe stores in: use sqlite:///PATH or "
                "postgresql://USER@HOST/DATABASE"
            )
        return value

    @model_validator(mode="after")
    def _default_content_dirs(self) -> Settings:
        """Unset content dirs live in the data directory; an explicit `dirs = []` stays empty."""
        if "dirs" not in self.skills.model_fields_set:
            self.skills.dirs = [self.data_dir / "skills"]
        if "dirs" not in self.resources.model_fields_set:
            self.resources.dirs = [self.data_dir / "resources"]
        return self

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
        return self.database_url or f"sqlite:///{self.data_dir / 'tobe.db'}"

    @property
    def management_socket(self) -> Path:
        return self.data_dir / "mind.sock"

    @property
    def tls_dir(self) -> Path:
        """The CA and certificates `tobe admin tls` writes by default."""
        return self.data_dir / "tls"

    @property
    def credentials_dir(self) -> Path:
        """Local service credentials written by `tobe up` (mode 0600)."""
        return self.data_dir / "credentials"


def load_settings(**overrides: object) -> Settings:
    """The settings, or a `ConfigError` naming each bad value's file line or `TOBE_*` variable.

    Unknown sections and keys are refused (every section forbids extras); `TOBE_*` variables
    that name no setting (`TOBE_CONFIG`, a test's own) are not read as settings at all.
    """
    path = config_file()
    document = read_toml(path)
    try:
        # pydantic validates the overrides at run time; its typed `__init__` parameters are the
        # settings sources' options, not the fields.
        return Settings(**overrides)  # type: ignore[arg-type]
    except ValidationError as exc:
        raise settings_problems(
            exc, Settings, file=path, document=document, environ=os.environ
        ) from None
    except SettingsError as exc:
        field = _FAILED_FIELD.search(str(exc))
        reason = str(exc.__cause__ or exc)
        raise environment_problem(field.group(1) if field else "", os.environ, reason) from None
