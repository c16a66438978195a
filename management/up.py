"""`tobe up`: run the whole platform on one machine, each service in its own process.

0. Make the data directory owner-only: everything created from now on is (umask 0o077, which
   the services inherit), and anything already there that other users could read is fixed,
   with a warning naming it.
1. Refuse, in one line, a data directory another ToBe runs on, and listen addresses that
   cannot be bound (naming who holds them and the setting to change).
2. The Mind creates the local credentials on first run (`tobe mind serve --provision-local`,
   see `mind.management.local_credentials`): it loads the store's stack anyway, and Face and
   the Hand, which use them, start only once it is healthy. `tobe up` names the token files
   that start created or replaced.
3. Choose the provider: the configured one, one detected from a usual API key variable, or
   else the offline demo script, announced as such; check it with one model listing in the
   background (`management.up_checks`).
4. Start the services in waves (`management.up_plan`): Awareness and the Mind together, then
   Face and the local Hand, all sharing one data directory. Every process is spawned at once,
   a later wave's held after loading its code (`tobe.runtime.supervisor`); each wave is
   released once the previous one is ready (`management.up_readiness`: its health status,
   read as one plain line at a probe socket, so this process loads no gRPC) and has published
   its address in the runtime file (`tobe.runtime.addresses`), which is what the next wave
   dials; Face, once it has also published its web client's (`face.web.listen`, unless
   `--no-web`). On Linux every service is forked by one starter process that loaded what they
   all import (`management.up_starter`). Each service logs to `<data dir>/logs/<name>.log`
   (the starter to `starter.log`). With TLS on the Mind's or
   Face's listener, the local Face and Hand trust it as `management.up_tls` says.
5. Print how to connect (the chat command, the web client's address and the command that
   signs a browser in) and what becomes of the local Hand's commands (`management.up_commands`,
   probed while the services start: without a working sandbox it offers no `run_command`). A
   service that exits during the start is reported with its log lines of this start and the
   others are stopped.
6. Then supervise (`management.up_restarts`): a service that fails is restarted after a
   backoff, with one line, on the address it first bound (a port picked for port 0 stays);
   the others keep running and reconnect by themselves. One that fails too often is left
   stopped with one line naming its last error and its log. Ctrl-C or SIGTERM stops them all
   in reverse order (SIGTERM, then SIGKILL after a grace period).
"""

from __future__ import annotations

import importlib.util
import os
import shlex
import signal
import subprocess
import sys
import threading
import time
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import click

from management.up_checks import ProviderCheck, data_dir_owner, port_problems
from management.up_commands import Commands, CommandsNote, commands_note
from management.up_plan import (
    DEFAULT_PORT_BASE,
    PORT_OFFSETS,
    WEB,
    ServicePlan,
    UpOptions,
    choose_provider,
    config_names_face_listen,
    enabled_channels,
    listen_address,
    listen_variable,
    listeners,
    picks_free_port,
    plan_services,
)
from management.up_readiness import Ready, readiness
from management.up_restarts import (
    START_LIMIT_INTERVAL,
    RestartDelayError,
    RestartPolicy,
    exit_reason,
    first_delay,
    last_error_line,
)
from management.up_service_unit import ENABLE_COMMAND, UNIT_NAME, install_unit, left_behind
from management.up_starter import ServiceProcess, ServiceStarter, StarterGone, take_early
from management.up_state import StoppedService, UpState, remove_state, write_state
from management.up_tls import LocalTls, local_tls
from tobe.config import Settings, default_data_dir, load_settings
from tobe.runtime.private_files import private_directory, private_umask, tighten
from tobe.runtime.supervisor import held_env, release, supervisor_env
from tobe.runtime.tls import TlsConfigError
from tobe.runtime.tls_record import plaintext_refusal
from tobe.runtime.web_url import web_base_url

STOP_GRACE = 10.0
HEALTH_DEADLINE = 60.0
# How often a starting service is asked whether it is ready (`management.up_readiness`).
POLL_INTERVAL = 0.05
LOG_TAIL_LINES = 20
# How often running services are looked at for an exit, and the start line of a log's run.
WATCH_INTERVAL = 0.2
START_MARKER = "--- tobe up started"
SERVE_MODULES = {
    "awareness": "awareness.cli",
    "mind": "mind.cli",
    "face": "face.cli",
    "hand": "hand.cli",
    "channels": "face.channels.cli",
}


@dataclass
class RunningService:
    plan: ServicePlan
    process: ServiceProcess
    log_path: Path
    # Where this start's lines begin in the log, which keeps older runs' lines.
    log_offset: int = 0
    # Where it serves, once healthy.
    address: str = ""
    # Where it serves the other services it publishes (`ServicePlan.also_publishes`).
    also_at: dict[str, str] = field(default_factory=dict)
    # Started ahead of its wave: loaded and waiting to be released (`Supervisor.release`).
    held: bool = False
    started: float = field(default_factory=time.monotonic)
    # Failed too often: not restarted again, nor stopped at the end.
    left_stopped: bool = False

    def tail(self, lines: int = LOG_TAIL_LINES) -> list[str]:
        with self.log_path.open("rb") as handle:
            handle.seek(self.log_offset)
            text = handle.read().decode(errors="replace")
        return list(deque(text.splitlines(keepends=True), maxlen=lines))


class UpError(click.ClickException):
    """Startup failed; the message says which service and why."""


def available_services() -> set[str]:
    """Services this installation has: their command modules, found without running any of
    their packages' code (`find_spec("hand.cli")` would import `hand`, the whole Hand SDK)."""
    return {name for name, module in SERVE_MODULES.items() if _installed(module)}


def _installed(module: str) -> bool:
    """Whether `package.name` (or `package.sub.name`) is there, looked for in the package's
    directories."""
    package, _, name = module.partition(".")
    spec = importlib.util.find_spec(package)
    directories = (spec.submodule_search_locations if spec is not None else None) or []
    path = Path(*name.split("."))
    return any(
        (Path(directory) / path.with_suffix(".py")).is_file()
        or (Path(directory) / path / "__init__.py").is_file()
        for directory in directories
    )


class Supervisor:
    def __init__(
        self,
        settings: Settings,
        echo: Callable[[str], None] = click.echo,
        warn: Callable[[str], None] = lambda text: click.secho(text, fg="red", err=True),
    ) -> None:
        self.settings = settings
        self.data_dir = settings.data_dir.resolve()
        self.echo = echo
        self.warn = warn
        self.running: list[RunningService] = []
        self.stopping = threading.Event()
        self.logs_dir = settings.data_dir / "logs"
        # Asked while services start: a reason to give up (e.g. the provider refused), or None.
        self.abort: Callable[[], str | None] = lambda: None
        # What every service is started with (`start_in_waves`), restarts included.
        self.base_env: dict[str, str] = {}
        # The services it no longer restarts, as `record_state` writes them.
        self.stopped: list[StoppedService] = []
        # Forks the services on Linux (`management.up_starter`); None: each is spawned.
        self.starter: ServiceStarter | None = None

    def start_starter(self) -> None:
        """Start the process that preloads what every service imports and forks them, unless
        `tobe up` started it as it began (`management.up_starter.start_early`)."""
        self.starter = take_early()
        if self.starter is None and ServiceStarter.supported():
            self.starter = ServiceStarter()
            self.starter.start()
        if self.starter is not None:
            private_directory(self.logs_dir)
            self.starter.log_to(
                self.logs_dir / "starter.log", f"{START_MARKER} starter at {time.ctime()}"
            )

    def record_state(self) -> None:
        """Write what this `tobe up` supervises, and what it left stopped, for `tobe doctor`
        (`management.up_state`)."""
        names = [service.plan.name for service in self.running]
        write_state(self.data_dir, UpState(os.getpid(), names, list(self.stopped)))

    def address_of(self, name: str) -> str:
        """Where service `name` serves: as published once healthy, else as configured."""
        for service in self.running:
            if service.plan.name == name and service.address:
                return service.address
            if name in service.also_at:
                return service.also_at[name]
        return listen_address(self.settings, name)

    def start(
        self, plan: ServicePlan, base_env: dict[str, str], *, held: bool = False
    ) -> RunningService:
        """Spawn `plan`'s service; `held`: ahead of its wave, it loads its code and waits for
        `release` to give it the addresses of the services it comes after."""
        env = {**base_env, **plan.env}
        if held:
            env.update(held_env(plan.preload))
        else:
            env.update(self._addresses(plan))
        service = self._spawn(plan, env, held)
        self.running.append(service)
        self.echo(f"  {plan.name:<10} pid {service.process.pid:<7} log {service.log_path}")
        return service

    def restart(self, old: RunningService) -> RunningService:
        """Start `old`'s service again in its place, on the addresses it had bound, with the
        addresses the services it comes after publish now."""
        plan = old.plan
        env = {**self.base_env, **plan.env, **self._addresses(plan)}
        for name, address in ((plan.name, old.address), *old.also_at.items()):
            if (
                address
                and name in PORT_OFFSETS
                and picks_free_port(listen_address(self.settings, name))
            ):
                env[listen_variable(name)] = address
        service = self._spawn(plan, env, held=False)
        service.address, service.also_at = old.address, dict(old.also_at)
        self.running[self.running.index(old)] = service
        return service

    def _spawn(self, plan: ServicePlan, env: dict[str, str], held: bool) -> RunningService:
        """The service's process, logging to `<data dir>/logs/<name>.log`, forked by the
        starter or else spawned; it ends with this one (`tobe.runtime.supervisor`: asked for
        in the child, nothing between fork and exec)."""
        private_directory(self.logs_dir)
        log_path = self.logs_dir / f"{plan.name}.log"
        env = {**env, **supervisor_env()}
        argv = [plan.group, "serve", *plan.args]
        with log_path.open("ab") as log:
            offset = log.tell()
            log.write(f"{START_MARKER} {plan.name} at {time.ctime()}\n".encode())
            log.flush()
            process = self._forked(argv, env, log.fileno(), held)
            if process is None:
                process = subprocess.Popen(
                    [sys.executable, "-m", "tobe", *argv],
                    stdin=subprocess.PIPE if held else subprocess.DEVNULL,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    env=env,
                    # Out of the terminal's process group: Ctrl-C reaches `tobe up` alone.
                    start_new_session=True,
                )
        return RunningService(plan, process, log_path, offset, held=held)

    def _forked(
        self, argv: list[str], env: dict[str, str], log: int, held: bool
    ) -> ServiceProcess | None:
        """The service forked by the starter; None, with one line, if the starter cannot."""
        if self.starter is None:
            return None
        try:
            return self.starter.spawn(argv, env, log, held)
        except StarterGone as exc:
            self.warn(f"{exc}; starting services as separate programs from now on")
            self.starter = None
            return None

    def release(self, service: RunningService) -> None:
        """Let a held service start, with the addresses its wave's predecessors published."""
        assert service.process.stdin is not None
        try:
            release(service.process.stdin, self._addresses(service.plan))
        except BrokenPipeError:
            pass  # it already exited: `wait_healthy` reports it
        service.held = False

    def _addresses(self, plan: ServicePlan) -> dict[str, str]:
        return {name: self.address_of(source) for name, source in plan.address_env.items()}

    def wait_healthy(self, services: list[RunningService]) -> None:
        """Return once every one of `services` is ready (`management.up_readiness`) or a stop
        was asked; UpError when one exits or stays unready past the deadline, with its last
        answer (the reason it gives for not serving)."""
        waiting = {id(service): (service, "") for service in services}
        deadline = time.monotonic() + HEALTH_DEADLINE
        while waiting and not self.stopping.is_set():
            reason = self.abort()
            if reason is not None:
                raise UpError(reason)
            for key, (service, _) in list(waiting.items()):
                if service.process.poll() is not None:
                    raise UpError(self.crash_report(service))
                answer = readiness(service.plan, service.process.pid, self.data_dir)
                if isinstance(answer, Ready):
                    service.address = answer.address or service.address
                    service.also_at.update(answer.also_at)
                    del waiting[key]
                else:
                    waiting[key] = (service, answer)
            if waiting and time.monotonic() > deadline:
                late, answer = next(iter(waiting.values()))
                raise UpError(
                    f"{late.plan.name} did not become healthy within {HEALTH_DEADLINE:.0f}s "
                    f"(it answers: {answer}).\n{self._tail_text(late)}"
                )
            if waiting:
                self.stopping.wait(POLL_INTERVAL)

    def supervise(self, initial_delay: float) -> None:
        """Until a stop is asked, or no service is left: restart each service that fails
        (`management.up_restarts`), one line each time; leave one that fails too often
        stopped, with one line."""
        policies = {s.plan.name: RestartPolicy(initial_delay) for s in self.running}
        due: dict[str, float] = {}  # service -> when it starts again
        while not self.stopping.wait(WATCH_INTERVAL):
            news = self.starter.news() if self.starter is not None else None
            if news is not None:
                self.warn(news)
            now = time.monotonic()
            for service in list(self.running):
                name = service.plan.name
                if service.left_stopped:
                    continue
                if name in due:
                    if now >= due[name]:
                        del due[name]
                        self.restart(service)
                    continue
                code = service.process.poll()
                if code is None:
                    continue
                # What it started in its own session (commands, MCP servers) goes with it.
                _signal_group(service.process, signal.SIGKILL)
                if code == 0:
                    service.left_stopped = True
                    self.echo(f"{name} exited by itself (status 0); not restarted")
                    self.record_stopped(service, "exited by itself (status 0)", failed=False)
                    continue
                delay = policies[name].failed(now, now - service.started)
                if delay is None:
                    service.left_stopped = True
                    self.give_up(service, policies[name].recent_failures)
                    continue
                due[name] = now + delay
                self.echo(
                    f"{name} exited ({exit_reason(code)}); restarting it in {delay:g} s "
                    f"(log {service.log_path})"
                )
            if all(service.left_stopped for service in self.running):
                return

    def give_up(self, service: RunningService, failures: int) -> None:
        """Say, in one line, and record that a service is left stopped: its name, last error
        line and log."""
        reason = f"failed {failures} times within {START_LIMIT_INTERVAL:.0f} s"
        stopped = self.record_stopped(service, reason, failed=True)
        self.warn(
            f"{stopped.name} {reason} and is left stopped; the other services keep running. "
            f"Last error: {stopped.last_line} (log {stopped.log})"
        )

    def record_stopped(self, service: RunningService, reason: str, failed: bool) -> StoppedService:
        """Record for `tobe doctor` that `service` is not restarted again, and why."""
        lines = [line for line in service.tail(200) if not line.startswith(START_MARKER)]
        stopped = StoppedService(
            service.plan.name, reason, failed, last_error_line(lines), str(service.log_path)
        )
        self.stopped.append(stopped)
        self.record_state()
        return stopped

    def stop_all(self) -> None:
        """Stop the services in reverse start order, each wave together: the clients of the
        Mind (Face, the Hand) first, then the Mind and Awareness."""
        waves: dict[tuple[str, ...], list[RunningService]] = {}
        for service in self.running:
            waves.setdefault(service.plan.after, []).append(service)
        for wave in reversed(list(waves.values())):
            self._stop(wave)
        self.running.clear()
        if self.starter is not None:
            self.starter.stop()

    def _stop(self, services: list[RunningService]) -> None:
        services = [service for service in services if not service.left_stopped]
        live = [service for service in services if service.process.poll() is None]
        for service in live:
            self.echo(f"  stopping {service.plan.name}")
            _signal_group(service.process, signal.SIGTERM)
        deadline = time.monotonic() + STOP_GRACE
        for service in live:
            try:
                service.process.wait(max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                self.echo(f"  {service.plan.name} did not stop in {STOP_GRACE:.0f}s; killing it")
                _signal_group(service.process, signal.SIGKILL)
                service.process.wait()
        # Anything the services started in their own sessions goes too.
        for service in services:
            _signal_group(service.process, signal.SIGKILL)

    def crash_report(self, service: RunningService) -> str:
        code = service.process.returncode
        return f"{service.plan.name} exited with status {code}.\n{self._tail_text(service)}"

    def _tail_text(self, service: RunningService) -> str:
        lines = "".join("    " + line for line in service.tail())
        return f"  last lines of {service.log_path} (this start):\n{lines.rstrip()}"


def _signal_group(process: ServiceProcess, sig: signal.Signals) -> None:
    try:
        os.killpg(process.pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def start_in_waves(
    supervisor: Supervisor, plans: list[ServicePlan], base_env: dict[str, str]
) -> None:
    """Start every plan once the services it comes after are healthy; each wave together.

    Every service is spawned at once: those of later waves load their code meanwhile (on a
    core the first wave leaves idle) and are held until their wave comes."""
    names = {plan.name for plan in plans}
    done: set[str] = set()

    def ready(plan: ServicePlan) -> bool:
        return all(d in done or d not in names for d in plan.after)

    services = [supervisor.start(plan, base_env, held=not ready(plan)) for plan in plans]
    remaining = services
    while remaining and not supervisor.stopping.is_set():
        wave = [service for service in remaining if ready(service.plan)]
        for service in wave:
            if service.held:
                supervisor.release(service)
        supervisor.wait_healthy(wave)
        done.update(service.plan.name for service in wave)
        remaining = [service for service in remaining if service not in wave]


def _preflight(settings: Settings, plans: list[ServicePlan], data_dir: Path) -> None:
    """Refuse a data directory in use and listen addresses that cannot be bound."""
    owner = data_dir_owner(data_dir)
    if owner is not None:
        raise UpError(owner)
    names = listeners(plans)
    problems = port_problems(data_dir, {name: listen_address(settings, name) for name in names})
    if problems:
        raise UpError("\n".join(problems))


def run_up(settings: Settings, options: UpOptions | None = None) -> int:
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
    refusal = plaintext_refusal(
        data_dir, listen_address(settings, "mind"), settings.mind.tls.cert_file is not None
    )
    if refusal is not None and not settings.mind.allow_plaintext:
        raise UpError(refusal)
    plans = plan_services(settings, available, tls)
    _preflight(settings, plans, data_dir)
    try:
        restart_delay = first_delay(dict(os.environ))
    except RestartDelayError as exc:
        raise UpError(str(exc)) from None
    base_env = {**os.environ, "TOBE_DATA_DIR": str(data_dir)}
    supervisor = Supervisor(settings)
    supervisor.base_env = base_env
    # It preloads while the provider is chosen and checked.
    supervisor.start_starter()
    try:
        commands = _probing_commands(settings, plans)
        tokens_before = _token_files(settings.credentials_dir)
        provider = choose_provider(settings, dict(os.environ))
    except BaseException:
        supervisor.stop_all()
        raise
    click.secho(provider.note, fg="yellow" if "DEMO" in provider.note else None, bold=True)
    check = (
        ProviderCheck({**base_env, **provider.env, **supervisor_env()}).start()
        if provider.settings is not None
        else None
    )
    for plan in plans:
        if plan.name == "mind":
            plan.env.update(provider.env)

    if check is not None:
        supervisor.abort = check.refusal
    previous = {
        sig: signal.signal(sig, lambda *_: supervisor.stopping.set())
        for sig in (signal.SIGINT, signal.SIGTERM)
    }
    try:
        click.echo("Starting services:")
        start_in_waves(supervisor, plans, base_env)
        if supervisor.stopping.is_set():
            return 0
        created = sorted(_token_files(settings.credentials_dir).items() - tokens_before.items())
        if created:
            names = ", ".join(path.stem for path, _ in created)
            click.echo(
                f"Created local credentials: {names} (in {settings.credentials_dir}, owner-only)"
            )
        if check is not None:
            verdict = check.result()
            if verdict.refusal is not None:
                raise UpError(verdict.refusal)
            if verdict.warning is not None:
                click.secho(f"Warning: {verdict.warning}", fg="red", bold=True, err=True)
        _print_ready(settings, supervisor, tls, _banner_chat(supervisor, data_dir, tls, options))
        if commands is not None:
            _print_commands(commands.result())
        click.echo("Press Ctrl-C to stop every service.")
        supervisor.record_state()
        supervisor.supervise(restart_delay)
        if not supervisor.stopping.is_set():
            click.secho("Every service has stopped; ToBe is down.", fg="red", err=True)
            return 1
        click.echo("Stopping ToBe…")
        return 0
    finally:
        supervisor.stop_all()
        remove_state(data_dir)
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _token_files(directory: Path) -> dict[Path, int]:
    """The token files in `directory`, each with its modification time (ns)."""
    return {path: path.stat().st_mtime_ns for path in directory.glob("*.token")}


def chat_command(data_dir: Path, ca_file: Path | None = None, address: str | None = None) -> str:
    """`tobe chat` as a user types it to reach this ToBe: the data directory, where the
    running services publish their addresses, when it is not the default one (and the
    address, when the chat would otherwise read another one from the config file)."""
    prefix = (
        ""
        if data_dir == default_data_dir().resolve()
        else f"TOBE_DATA_DIR={shlex.quote(str(data_dir))} "
    )
    ca = f" --ca {shlex.quote(str(ca_file))}" if ca_file is not None else ""
    at = f" --address {shlex.quote(address)}" if address is not None else ""
    return f"{prefix}tobe chat{at}{ca}"


def _banner_chat(
    supervisor: Supervisor, data_dir: Path, tls: LocalTls, options: UpOptions | None
) -> str:
    """The chat command for the banner; with --address only when an option moved Face away
    from a face.listen the config file names (which a plain `tobe chat` would dial)."""
    moved = options is not None and listen_variable("face") in options.environment()
    address = supervisor.address_of("face") if moved and config_names_face_listen() else None
    return chat_command(data_dir, tls.face_ca, address)


def _print_ready(settings: Settings, supervisor: Supervisor, tls: LocalTls, chat: str) -> None:
    prefix = chat.split("tobe chat")[0]
    click.secho("ToBe is up.", fg="green", bold=True)
    click.echo(f"  Chat (in another terminal):         {chat}")
    face_tls = f" (TLS: trust {tls.face_ca})" if tls.face_ca else ""
    click.echo(f"  Face gateway (gRPC):                {supervisor.address_of('face')}{face_tls}")
    web = web_url(settings, supervisor)
    if web is not None:
        click.echo(f"  Web client (in a browser):          {web}")
        click.echo(f"  Sign in there (a one-time link):    {prefix}tobe admin pair")
    if tls.mind_ca is not None:
        client = (
            " --cert client-NAME.pem --key client-NAME.key"
            if settings.mind.tls.require_client_cert
            else ""
        )
        port = supervisor.address_of("mind").rsplit(":", 1)[-1]
        click.echo(
            f"  Hand on another machine:            tobe hand serve --mind HOST:{port} "
            f"--ca {tls.mind_ca}{client}"
        )
    click.echo(f"  Manage credentials:                 {prefix}tobe admin credentials list")
    channels = enabled_channels(settings)
    if channels and any(service.plan.name == "channels" for service in supervisor.running):
        label = f"Channels ({', '.join(channels)}):"
        click.echo(f"  {label:<35} {prefix}tobe admin channels list (who waits to pair)")


def _probing_commands(settings: Settings, plans: list[ServicePlan]) -> Future[CommandsNote] | None:
    """What becomes of the local Hand's commands, found in a thread while the services start:
    the sandbox probe runs bubblewrap, a tenth of a second no service need wait for."""
    if not any(plan.name == "hand" for plan in plans):
        return None
    probing = ThreadPoolExecutor(max_workers=1, thread_name_prefix="commands-probe")
    try:
        return probing.submit(commands_note, settings.hand)
    finally:
        probing.shutdown(wait=False)


def _print_commands(note: CommandsNote) -> None:
    """One line on the local Hand's commands: a warning when they run unconfined, the ways
    out when they are withheld."""
    if note.state is Commands.UNCONFINED:
        click.secho(f"Warning: {note.text}", fg="red", bold=True, err=True)
    elif note.state is Commands.WITHHELD:
        click.secho(f"  Commands: {note.text}; to run them: {note.fix}", fg="yellow")
    else:
        click.echo(f"  Commands:                           {note.text}")


def web_url(settings: Settings, supervisor: Supervisor) -> str | None:
    """Where people open the web client Face serves (None: it serves none): the address Face
    published, or `face.web.public_url` with that address beside it."""
    if not any(WEB in service.plan.also_publishes for service in supervisor.running):
        return None
    web = settings.face.web
    address = supervisor.address_of(WEB)
    url = web_base_url(address, tls=web.tls.cert_file is not None, public_url=web.public_url)
    return f"{url} (listening on {address})" if web.public_url else url


UP_HELP = f"""Run Mind, Face and every other installed service on this machine until Ctrl-C.

The services publish where they listen in <data dir>/runtime.json, where `tobe chat`,
`tobe admin` and `tobe health` find them: with another data directory, give them the same
TOBE_DATA_DIR (the banner prints the commands). Options override the configuration through
the same TOBE_* variables (--port-base sets TOBE_MIND__LISTEN, TOBE_FACE__LISTEN,
TOBE_FACE__WEB__LISTEN and TOBE_AWARENESS__LISTEN; default base {DEFAULT_PORT_BASE}).

Face also serves the web client (a browser chat) on face.web.listen unless --no-web; sign a
browser in with the one-time link `tobe admin pair` prints.

Once up, a service that fails is restarted after 1 s doubling to 30 s (TOBE_UP_RESTART_DELAY
sets the first delay); one that fails 5 times within a minute is left stopped (`tobe doctor`
names it). With a channel enabled ([channels.matrix], [channels.email]), the channels
process runs too, after Face (`tobe channels serve`). Where bubblewrap cannot run, the local
Hand offers no run_command unless --allow-unconfined-commands.
"""


@click.command("up", help=UP_HELP)
@click.option(
    "--data-dir",
    type=click.Path(file_okay=False, path_type=Path),
    help="Data directory: store, logs, credentials, runtime.json (default: TOBE_DATA_DIR, "
    "else ~/.local/share/tobe).",
)
@click.option(
    "--port-base",
    type=click.IntRange(0, 65535 - max(PORT_OFFSETS.values())),
    metavar="N",
    help=f"Listen on 127.0.0.1 at N+10 (Mind), N+20 (Face), N+21 (the web client), N+30 "
    f"(Awareness); default {DEFAULT_PORT_BASE}. 0: each service binds a free port.",
)
@click.option("--mind-listen", metavar="ADDRESS", help="The Mind's host:port or unix:/path.")
@click.option("--face-listen", metavar="ADDRESS", help="Face's host:port or unix:/path.")
@click.option("--awareness-listen", metavar="ADDRESS", help="Awareness' host:port.")
@click.option(
    "--web-port",
    type=click.IntRange(0, 65535),
    metavar="N",
    help="Serve the web client on 127.0.0.1:N (face.web.listen); 0: a free port.",
)
@click.option("--no-web", is_flag=True, help="Face serves no web client (face.web.enabled).")
@click.option(
    "--provider",
    type=click.Choice(["anthropic", "openai", "gemini"]),
    help="Provider kind ([provider] kind); without one, a detected key or the offline demo.",
)
@click.option("--model", metavar="ID", help="Model id ([provider] model).")
@click.option(
    "--verbose", is_flag=True, help="Services log at DEBUG, tracebacks of their errors included."
)
@click.option(
    "--allow-unconfined-commands",
    is_flag=True,
    help="Where no bubblewrap sandbox can run, the local Hand runs commands without one "
    "(hand.allow_unconfined_commands) instead of withholding run_command.",
)
@click.option(
    "--install-service",
    is_flag=True,
    help="Write a systemd user unit running `tobe up` with these options at login "
    "($XDG_CONFIG_HOME/systemd/user/tobe.service) and print how to enable it; start nothing.",
)
def up(
    data_dir: Path | None,
    port_base: int | None,
    mind_listen: str | None,
    face_listen: str | None,
    awareness_listen: str | None,
    web_port: int | None,
    no_web: bool,
    provider: str | None,
    model: str | None,
    verbose: bool,
    allow_unconfined_commands: bool,
    install_service: bool,
) -> None:
    if no_web and web_port is not None:
        raise click.UsageError("--web-port and --no-web contradict each other: pass one")
    listen = {"mind": mind_listen, "face": face_listen, "awareness": awareness_listen}
    options = UpOptions(
        data_dir=data_dir,
        port_base=port_base,
        listen={service: address for service, address in listen.items() if address},
        provider=provider,
        model=model,
        verbose=verbose,
        web_port=web_port,
        web=not no_web,
        allow_unconfined_commands=allow_unconfined_commands,
    )
    os.environ.update(options.environment())
    if install_service:
        _install_service(options, load_settings())
        return
    raise SystemExit(run_up(load_settings(), options))


def _install_service(options: UpOptions, settings: Settings) -> None:
    """Write the systemd user unit and say how to enable it."""
    written = {**options.environment(), "TOBE_DATA_DIR": str(settings.data_dir.resolve())}
    if os.environ.get("TOBE_CONFIG"):
        written["TOBE_CONFIG"] = str(Path(os.environ["TOBE_CONFIG"]).expanduser().resolve())
    try:
        path, replaced = install_unit(written, dict(os.environ))
    except OSError as exc:
        raise UpError(f"cannot write the service unit: {exc}") from None
    click.echo(
        f"{'Replaced' if replaced else 'Wrote'} {path}: `tobe up` on {written['TOBE_DATA_DIR']}."
    )
    missing = left_behind(written, dict(os.environ))
    if missing:
        click.secho(
            f"Not carried over from this shell: {', '.join(missing)} (keys belong in "
            "`tobe setup`, settings in the config file).",
            fg="yellow",
        )
    click.echo(f"Start ToBe now and at every login: {ENABLE_COMMAND}")
    click.echo(f"Its output: journalctl --user -u {UNIT_NAME} -f")
