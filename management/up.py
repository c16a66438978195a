"""`tobe up`: run the whole platform on one machine, each service in its own process.

0. Make the data directory owner-only: everything created from now on is (umask 0o077, which
   the services inherit), and anything already there that other users could read is fixed,
   with a warning naming it.
1. Create the local credentials on first run (under the state lock, released before the Mind
   starts; see `mind.management.local_credentials`).
2. Choose the provider: the configured one, one detected from a usual API key variable, or
   else the offline demo script, announced as such.
3. Start every service this installation has, in dependency order (Awareness, Mind, Face,
   the local Hand), all sharing one data directory, waiting for each gRPC health check
   before starting the next. Each service logs to `<data dir>/logs/<name>.log`. With TLS on the
   Mind's or Face's listener, the probes and the local Face and Hand trust it as
   `management.up_tls` says.
4. Print how to connect, then watch: a service that exits is reported with its last log lines
   and the others are stopped; Ctrl-C or SIGTERM stops them all in reverse order (SIGTERM,
   then SIGKILL after a grace period).
"""

from __future__ import annotations

import ctypes
import os
import signal
import subprocess
import sys
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import click
import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from management.up_tls import LocalTls, local_tls
from tobe.config import Settings, default_data_dir, load_settings
from tobe.runtime.private_files import private_directory, private_umask, tighten
from tobe.runtime.tls import ClientTls, TlsConfigError

STOP_GRACE = 10.0
HEALTH_DEADLINE = 60.0
LOG_TAIL_LINES = 20
_PR_SET_PDEATHSIG = 1


@dataclass
class ServicePlan:
    """A service to run: its `tobe <group> serve` command and where its health check answers."""

    name: str
    group: str
    health_target: str | None
    health_tls: ClientTls | None = None
    env: dict[str, str] = field(default_factory=dict)
    args: tuple[str, ...] = ()


@dataclass
class RunningService:
    plan: ServicePlan
    process: subprocess.Popen[bytes]
    log_path: Path

    def tail(self, lines: int = LOG_TAIL_LINES) -> list[str]:
        with self.log_path.open(errors="replace") as handle:
            return list(deque(handle, maxlen=lines))


class UpError(click.ClickException):
    """Startup failed; the message says which service and why."""


def available_services() -> set[str]:
    """Command groups of this installation that have a `serve` command."""
    from tobe.cli import main

    context = click.Context(main)
    found = set()
    for name in main.list_commands(context):
        command = main.get_command(context, name)
        if isinstance(command, click.Group) and command.get_command(context, "serve"):
            found.add(name)
    return found


def plan_services(
    settings: Settings, available: set[str], tls: LocalTls | None = None
) -> list[ServicePlan]:
    tls = tls or LocalTls()
    mind_env = {}
    if "awareness" in available and not settings.mind.awareness_address:
        mind_env["TOBE_MIND__AWARENESS_ADDRESS"] = settings.awareness.listen
    hand_env = {"TOBE_HAND__MIND_ADDRESS": settings.mind.listen, **tls.env.get("hand", {})}
    face_env = {"TOBE_FACE__MIND_ADDRESS": settings.mind.listen, **tls.env.get("face", {})}
    hand_health = f"unix:{settings.data_dir.resolve() / 'hand-health.sock'}"
    if settings.hand.workspace is None:
        workspace = settings.data_dir.resolve() / "workspace"
        private_directory(workspace)
        hand_env["TOBE_HAND__WORKSPACE"] = str(workspace)
    plans = [
        ServicePlan("awareness", "awareness", settings.awareness.listen),
        ServicePlan("mind", "mind", settings.mind.listen, tls.mind_probe, mind_env),
        ServicePlan("face", "face", settings.face.listen, tls.face_probe, face_env),
        # A Hand serves nothing but its health endpoint: SERVING once the Mind welcomed it.
        ServicePlan("hand", "hand", hand_health, None, hand_env, ("--health-listen", hand_health)),
    ]
    return [plan for plan in plans if plan.group in available]


def provider_environment(settings: Settings, env: dict[str, str]) -> tuple[dict[str, str], str]:
    """Extra environment for the Mind's provider, and a sentence saying what was chosen."""
    if settings.provider.kind:
        return {}, f"Provider: {settings.provider.kind} (from the configuration)."
    try:
        from mind.providers.detect import DEMO_SCRIPT, detect_with_reason
    except ImportError:  # a Mind without providers cannot be started anyway
        return {}, "Provider: none available in this installation."
    detected = detect_with_reason(env)
    if detected is not None:
        chosen, reason = detected
        extra = {"TOBE_PROVIDER__KIND": chosen.kind, "TOBE_PROVIDER__MODEL": chosen.model}
        if chosen.base_url:
            extra["TOBE_PROVIDER__BASE_URL"] = chosen.base_url
        if chosen.api_key is not None:
            extra["TOBE_PROVIDER__API_KEY"] = chosen.api_key.get_secret_value()
        return extra, f"Provider: {reason}."
    extra = {"TOBE_PROVIDER__KIND": "scripted", "TOBE_PROVIDER__SCRIPT": str(DEMO_SCRIPT)}
    return extra, (
        "NO LLM PROVIDER CONFIGURED: running the offline DEMO SCRIPT (canned replies, no model).\n"
        "  To use a real model set ANTHROPIC_API_KEY, OPENAI_API_KEY (with OPENAI_BASE_URL for a "
        "local server) or GEMINI_API_KEY, or [provider] in the config file, and restart."
    )


def _die_with_parent() -> None:
    """In the child: leave the terminal's process group and die if `tobe up` dies."""
    os.setsid()
    if sys.platform.startswith("linux"):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)


class Supervisor:
    def __init__(self, settings: Settings, echo: Callable[[str], None] = click.echo) -> None:
        self.settings = settings
        self.echo = echo
        self.running: list[RunningService] = []
        self.stopping = threading.Event()
        self.logs_dir = settings.data_dir / "logs"

    def start(self, plan: ServicePlan, base_env: dict[str, str]) -> RunningService:
        private_directory(self.logs_dir)
        log_path = self.logs_dir / f"{plan.name}.log"
        with log_path.open("ab") as log:
            log.write(f"--- tobe up started {plan.name} at {time.ctime()}\n".encode())
            log.flush()
            process = subprocess.Popen(
                [sys.executable, "-m", "tobe", plan.group, "serve", *plan.args],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                env={**base_env, **plan.env},
                preexec_fn=_die_with_parent,
            )
        service = RunningService(plan, process, log_path)
        self.running.append(service)
        self.echo(f"  {plan.name:<10} pid {process.pid:<7} log {log_path}")
        return service

    def wait_healthy(self, service: RunningService) -> None:
        target = service.plan.health_target
        if target is None:
            return
        deadline = time.monotonic() + HEALTH_DEADLINE
        tls = service.plan.health_tls
        channel = (
            grpc.secure_channel(target, tls.credentials())
            if tls is not None
            else grpc.insecure_channel(target)
        )
        with channel:
            stub = health_pb2_grpc.HealthStub(channel)
            while time.monotonic() < deadline and not self.stopping.is_set():
                if service.process.poll() is not None:
                    raise UpError(self.crash_report(service))
                try:
                    # The grpc_health stubs declare HealthStub without its methods.
                    response: health_pb2.HealthCheckResponse = stub.Check(  # type: ignore[attr-defined]
                        health_pb2.HealthCheckRequest(), timeout=1.0
                    )
                    status = response.status
                    if status == health_pb2.HealthCheckResponse.SERVING:
                        return
                except grpc.RpcError:
                    pass
                self.stopping.wait(0.2)
        if not self.stopping.is_set():
            raise UpError(
                f"{service.plan.name} did not become healthy at {target} within "
                f"{HEALTH_DEADLINE:.0f}s.\n{self._tail_text(service)}"
            )

    def watch(self) -> RunningService | None:
        """Block until a stop is requested (None) or a service exits (that service)."""
        while not self.stopping.wait(0.5):
            for service in self.running:
                if service.process.poll() is not None:
                    return service
        return None

    def stop_all(self) -> None:
        for service in reversed(self.running):
            self._stop(service)
        self.running.clear()

    def _stop(self, service: RunningService) -> None:
        process = service.process
        if process.poll() is None:
            self.echo(f"  stopping {service.plan.name}")
            _signal_group(process, signal.SIGTERM)
            try:
                process.wait(STOP_GRACE)
            except subprocess.TimeoutExpired:
                self.echo(f"  {service.plan.name} did not stop in {STOP_GRACE:.0f}s; killing it")
                _signal_group(process, signal.SIGKILL)
                process.wait()
        # Anything the service started in its own session goes too.
        _signal_group(process, signal.SIGKILL)

    def crash_report(self, service: RunningService) -> str:
        code = service.process.returncode
        return f"{service.plan.name} exited with status {code}.\n{self._tail_text(service)}"

    def _tail_text(self, service: RunningService) -> str:
        lines = "".join("    " + line for line in service.tail())
        return f"  last lines of {service.log_path}:\n{lines.rstrip()}"


def _signal_group(process: subprocess.Popen[bytes], sig: signal.Signals) -> None:
    try:
        os.killpg(process.pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def run_up(settings: Settings) -> int:
    from mind.management import provision
    from tobe.runtime.statelock import StateLockBusy

    available = available_services()
    if "mind" not in available:
        raise UpError("this installation has no Mind (`tobe mind serve`); nothing to run")
    data_dir = settings.data_dir.resolve()
    click.echo(f"Data directory: {data_dir}")
    private_umask()
    tighten(data_dir, lambda warning: click.secho(f"Warning: {warning}", fg="yellow", err=True))
    try:
        tls = local_tls(settings)
    except TlsConfigError as exc:
        raise UpError(str(exc)) from None
    plans = plan_services(settings, available, tls)
    try:
        created = provision(settings)
    except StateLockBusy as exc:
        raise UpError(f"{exc}; is ToBe already running? (`tobe admin status`)") from exc
    if created:
        click.echo(
            f"Created local credentials: {', '.join(created)} "
            f"(in {settings.credentials_dir}, owner-only)"
        )
    provider_env, provider_note = provider_environment(settings, dict(os.environ))
    click.secho(provider_note, fg="yellow" if "DEMO" in provider_note else None, bold=True)
    base_env = {**os.environ, "TOBE_DATA_DIR": str(data_dir)}
    for plan in plans:
        if plan.name == "mind":
            plan.env.update(provider_env)

    supervisor = Supervisor(settings)
    previous = {
        sig: signal.signal(sig, lambda *_: supervisor.stopping.set())
        for sig in (signal.SIGINT, signal.SIGTERM)
    }
    try:
        click.echo("Starting services:")
        for plan in plans:
            if supervisor.stopping.is_set():
                break
            supervisor.wait_healthy(supervisor.start(plan, base_env))
        if supervisor.stopping.is_set():
            return 0
        _print_ready(settings, data_dir, tls)
        crashed = supervisor.watch()
        if crashed is not None:
            click.secho(supervisor.crash_report(crashed), fg="red", err=True)
            return 1
        click.echo("Stopping ToBe…")
        return 0
    finally:
        supervisor.stop_all()
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _print_ready(settings: Settings, data_dir: Path, tls: LocalTls) -> None:
    prefix = "" if data_dir == default_data_dir().resolve() else f"TOBE_DATA_DIR={data_dir} "
    chat_tls = f" --ca {tls.face_ca}" if tls.face_ca else ""
    click.secho("ToBe is up.", fg="green", bold=True)
    click.echo(f"  Chat (in another terminal):         {prefix}tobe chat{chat_tls}")
    face_tls = f" (TLS: trust {tls.face_ca})" if tls.face_ca else ""
    click.echo(f"  Face gateway (gRPC):                {settings.face.listen}{face_tls}")
    if tls.mind_ca is not None:
        client = (
            " --cert client-NAME.pem --key client-NAME.key"
            if settings.mind.tls.require_client_cert
            else ""
        )
        click.echo(
            f"  Hand on another machine:            tobe hand serve --mind HOST:"
            f"{settings.mind.listen.rsplit(':', 1)[-1]} --ca {tls.mind_ca}{client}"
        )
    click.echo(f"  Manage credentials:                 {prefix}tobe admin credentials list")
    click.echo("Press Ctrl-C to stop every service.")


@click.command("up")
def up() -> None:
    """Run Mind, Face and every other installed service on this machine until Ctrl-C."""
    raise SystemExit(run_up(load_settings()))
