"""What `tobe up` runs: its command-line options as `TOBE_*` variables, the services to start
with their environment and start order, and the provider the Mind will use.

Options reach the services the way every setting does, through their `TOBE_*` variables, so a
service started by `tobe up` reads exactly what `tobe … serve` would read with them set.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from management.up_tls import LocalTls
from tobe.config import ChannelSettings, ProviderSettings, Settings, config_file
from tobe.provider_detect import DEMO_SCRIPT, detect_with_reason
from tobe.runtime.ports import tcp_host_port
from tobe.runtime.private_files import private_directory

DEFAULT_PORT_BASE = 7400
# Port offsets from `--port-base`, and the services that publish their address. `web` is
# Face's web client, served by the Face process on `face.web.listen`.
PORT_OFFSETS = {"mind": 10, "face": 20, "web": 21, "awareness": 30}
WEB = "web"
LOCAL_HOST = "127.0.0.1"


@dataclass(frozen=True)
class UpOptions:
    """`tobe up`'s command-line options (None: not given, the configuration decides)."""

    data_dir: Path | None = None
    port_base: int | None = None
    listen: dict[str, str] = field(default_factory=dict)
    provider: str | None = None
    model: str | None = None
    verbose: bool = False
    # `--web-port`; `web=False` (`--no-web`): Face serves no web client.
    web_port: int | None = None
    web: bool = True
    # `--allow-unconfined-commands`: where no sandbox runs, the local Hand runs commands anyway.
    allow_unconfined_commands: bool = False

    def environment(self) -> dict[str, str]:
        """The `TOBE_*` variables these options stand for; a per-service listen address (or
        `--web-port`) wins over `--port-base`."""
        env: dict[str, str] = {}
        if self.data_dir is not None:
            env["TOBE_DATA_DIR"] = str(self.data_dir.expanduser().resolve())
        if self.port_base is not None:
            for service, offset in PORT_OFFSETS.items():
                port = self.port_base + offset if self.port_base else 0
                env[listen_variable(service)] = f"{LOCAL_HOST}:{port}"
        for service, address in self.listen.items():
            env[listen_variable(service)] = address
        if self.web_port is not None:
            env[listen_variable(WEB)] = f"{LOCAL_HOST}:{self.web_port}"
        if not self.web:
            env.pop(listen_variable(WEB), None)
            env["TOBE_FACE__WEB__ENABLED"] = "false"
        if self.provider is not None:
            env["TOBE_PROVIDER__KIND"] = self.provider
        if self.model is not None:
            env["TOBE_PROVIDER__MODEL"] = self.model
        if self.verbose:
            env["TOBE_LOG_LEVEL"] = "DEBUG"
        if self.allow_unconfined_commands:
            env["TOBE_HAND__ALLOW_UNCONFINED_COMMANDS"] = "true"
        return env


def listen_variable(service: str) -> str:
    """The `TOBE_*` variable of a published service's listen address."""
    return "TOBE_FACE__WEB__LISTEN" if service == WEB else f"TOBE_{service.upper()}__LISTEN"


def listen_setting(service: str) -> str:
    """The setting a published service listens at, as the configuration file spells it."""
    return "[face.web] listen" if service == WEB else f"[{service}] listen"


def listen_option(service: str) -> str:
    """The `tobe up` option that moves a published service."""
    return "--web-port" if service == WEB else f"--{service}-listen"


def config_names_face_listen() -> bool:
    """Whether the config file sets `[face] listen`: a `tobe chat` reading it dials that
    address, not the one `tobe up` was told with an option."""
    try:
        with config_file().open("rb") as handle:
            face = tomllib.load(handle).get("face")
    except (OSError, tomllib.TOMLDecodeError):
        return False
    return isinstance(face, dict) and "listen" in face


@dataclass
class ServicePlan:
    """A service to run: its `tobe <group> serve` command, where it answers its readiness in
    plain text (`probe`, `tobe.runtime.probe_answer`), and the services it starts after."""

    name: str
    group: str
    probe: str
    # Whether it publishes its own address in runtime.json (the Hand serves none): it is ready
    # once it has, besides answering SERVING.
    publishes: bool = True
    env: dict[str, str] = field(default_factory=dict)
    args: tuple[str, ...] = ()
    # Started only once these are healthy; their published addresses fill `address_env`.
    after: tuple[str, ...] = ()
    # Variable -> service whose address it receives: the published one when that service is
    # already up, else its configured listen address.
    address_env: dict[str, str] = field(default_factory=dict)
    # Other services the process serves and publishes (Face: its web client); it is ready
    # once it answers its health check and has published each of them.
    also_publishes: tuple[str, ...] = ()
    # Modules it loads while held before its wave (`tobe.runtime.supervisor`): those its
    # `serve` imports.
    preload: tuple[str, ...] = ()


def picks_free_port(address: str) -> bool:
    parsed = tcp_host_port(address)
    return parsed is not None and parsed[1] == 0


def plan_services(settings: Settings, available: set[str], tls: LocalTls) -> list[ServicePlan]:
    """The services of this installation in start order. Awareness and the Mind start together
    unless the Mind must learn a port Awareness picks; Face and the Hand follow the Mind; the
    channels process, when a channel is enabled, follows Face."""
    # The Mind creates the local credentials: it loads the store's stack anyway, and Face and
    # the Hand, which use them, start only once it is healthy.
    mind = ServicePlan("mind", "mind", probe_address(settings, "mind"))
    mind.args = ("--provision-local",)
    if "awareness" in available and not settings.mind.awareness_address:
        mind.address_env["TOBE_MIND__AWARENESS_ADDRESS"] = "awareness"
        if picks_free_port(settings.awareness.listen):
            mind.after = ("awareness",)
    face = ServicePlan("face", "face", probe_address(settings, "face"))
    face.env.update(tls.env.get("face", {}))
    face.after, face.address_env = ("mind",), {"TOBE_FACE__MIND_ADDRESS": "mind"}
    face.preload = ("face.cli", "face.server")
    if settings.face.web.enabled:
        face.also_publishes = (WEB,)
        face.preload += ("face.web.app", "face.web.protocol")
    # A Hand serves nothing but its health endpoint: SERVING once the Mind welcomed it.
    hand_health = f"unix:{settings.data_dir.resolve() / 'hand-health.sock'}"
    hand = ServicePlan("hand", "hand", probe_address(settings, "hand"), publishes=False)
    hand.env.update(tls.env.get("hand", {}))
    hand.args, hand.after = ("--health-listen", hand_health), ("mind",)
    hand.address_env = {"TOBE_HAND__MIND_ADDRESS": "mind"}
    hand.preload = ("hand.cli", "hand.server")
    # Where no sandbox runs, the local Hand starts without `run_command` rather than not at
    # all (`management.up_commands` says so in the banner).
    hand.env["TOBE_HAND__WITHHOLD_COMMANDS_WITHOUT_SANDBOX"] = "true"
    if settings.hand.workspace is None:
        workspace = private_directory(settings.data_dir.resolve() / "workspace")
        hand.env["TOBE_HAND__WORKSPACE"] = str(workspace)
    awareness = ServicePlan("awareness", "awareness", probe_address(settings, "awareness"))
    plans = [awareness, mind, face, hand]
    if enabled_channels(settings):
        # A client of the Face, like `tobe chat`: it dials the address Face published.
        channels = ServicePlan(
            "channels", "channels", probe_address(settings, "channels"), publishes=False
        )
        channels.after = ("face",)
        channels.preload = ("face.channels.cli", "face.channels.process")
        plans.append(channels)
    for plan in plans:
        plan.env[probe_variable(plan.name)] = plan.probe
    return [plan for plan in plans if plan.group in available]


def enabled_channels(settings: Settings) -> list[str]:
    """The channels (`[channels.<name>]`) that are enabled: `tobe up` then runs the channels
    process. Read from the settings alone: the supervisor loads none of Face's code."""
    return [
        name
        for name, section in settings.channels
        if isinstance(section, ChannelSettings) and section.enabled
    ]


def probe_address(settings: Settings, service: str) -> str:
    """Where `service` answers its readiness in plain text: its configured probe address (a
    container's health check may read it too) unless it picks a free port `tobe up` could not
    learn, else a socket file in the data directory."""
    configured = str(getattr(settings, service).probe_listen)
    if configured and not picks_free_port(configured):
        return configured
    return f"unix:{settings.data_dir.resolve() / f'{service}-probe.sock'}"


def probe_variable(service: str) -> str:
    return f"TOBE_{service.upper()}__PROBE_LISTEN"


def listen_address(settings: Settings, service: str) -> str:
    """The configured listen address of a service that publishes one."""
    if service == WEB:
        return settings.face.web.listen
    section = getattr(settings, service)
    return str(section.listen)


def listeners(plans: list[ServicePlan]) -> list[str]:
    """The published services these plans run, each with a listen address of its own."""
    names = [plan.name for plan in plans if plan.name in PORT_OFFSETS]
    names += [extra for plan in plans for extra in plan.also_publishes]
    return sorted(names, key=list(PORT_OFFSETS).index)


@dataclass(frozen=True)
class ProviderChoice:
    """The Mind's provider: extra environment, a sentence saying what was chosen, and the
    settings `tobe up` checks it with (None: nothing to check, e.g. the demo script)."""

    env: dict[str, str]
    note: str
    settings: ProviderSettings | None


def choose_provider(settings: Settings, env: dict[str, str]) -> ProviderChoice:
    """The configured provider, one detected from a usual API key variable, else the demo."""
    if settings.provider.kind:
        checked = None if settings.provider.kind == "scripted" else settings.provider
        return ProviderChoice(
            {}, f"Provider: {settings.provider.kind} (from the configuration).", checked
        )
    detected = detect_with_reason(env)
    if detected is not None:
        chosen, reason = detected
        extra = {"TOBE_PROVIDER__KIND": chosen.kind, "TOBE_PROVIDER__MODEL": chosen.model}
        if chosen.base_url:
            extra["TOBE_PROVIDER__BASE_URL"] = chosen.base_url
        if chosen.api_key is not None:
            extra["TOBE_PROVIDER__API_KEY"] = chosen.api_key.get_secret_value()
        return ProviderChoice(extra, f"Provider: {reason}.", chosen)
    extra = {"TOBE_PROVIDER__KIND": "scripted", "TOBE_PROVIDER__SCRIPT": str(DEMO_SCRIPT)}
    return ProviderChoice(
        extra,
        "NO LLM PROVIDER CONFIGURED: running the offline DEMO SCRIPT (canned replies, no model).\n"
        "  To use a real model run `tobe setup` (provider, key, model), or set ANTHROPIC_API_KEY, "
        "OPENAI_API_KEY (with OPENAI_BASE_URL for a local server) or GEMINI_API_KEY, or pass "
        "--provider/--model, and restart.",
        None,
    )
