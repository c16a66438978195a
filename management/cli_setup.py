"""`tobe setup`: choose a provider, store its key sealed, pick a model, write the config file.

Steps: the model servers running here are looked for (`management.local_servers`) → provider
kind → base URL → API key (hidden) → the provider's listing (which proves the URL and the key)
→ model → thinking level → key stored (`mind.credentials.provider_keys`) → `[provider]`
written, with the window a local server reports for the model in `[[provider.models]]`. Every
answer can come from a flag instead; `--yes` takes the default of whatever no flag gives. A
listing that fails is one line: the questions repeat when someone is answering them, and a
scripted run exits 1. Nothing is stored or written before the listing
succeeded and the config file was read and edited in memory, and the key never reaches the
config file or the output.
"""

from __future__ import annotations

import getpass
import os
import sys
from dataclasses import dataclass
from pathlib import Path

import click
from pydantic import SecretStr

from management.config_edit import ConfigEditError, edit_provider, write_private
from management.local_servers import USUAL_PORTS, LocalServer, find_local_servers
from management.model_choice import CHOICES, ModelRow, Verdict, fetch, rows
from mind.credentials.provider_keys import (
    MAIN,
    ProviderKeyError,
    StoredKey,
    describe_key,
    ensure_stopped,
    offline_keys,
    stored_keys,
)
from mind.providers.catalog import known
from mind.providers.listing import DEFAULT_BASE_URLS, ListingError
from tobe.api_keys import api_key, with_api_key
from tobe.config import ProviderSettings, Settings, config_file, load_settings


@dataclass
class Answers:
    """What the flags fixed; None (or False) is asked, or defaulted with --yes."""

    choice: str | None
    base_url: str | None
    key: str | None
    model: str | None
    thinking: str | None
    ask: bool


@click.command()
@click.option("--provider", "choice", type=click.Choice(sorted(CHOICES)), help="Provider kind.")
@click.option("--base-url", help="Base URL (default: the kind's official API; Ollama's local).")
@click.option("--api-key-stdin", is_flag=True, help="Read the API key from standard input.")
@click.option("--api-key-env", metavar="VAR", help="Read the API key from this variable.")
@click.option("--model", help="Model id (one the provider lists).")
@click.option("--thinking", help="Thinking level (one the model supports).")
@click.option(
    "--config",
    "config_path",
    type=click.Path(dir_okay=False, path_type=Path),
    help="The config file to write (default: TOBE_CONFIG or ~/.config/tobe/config.toml).",
)
@click.option("--yes", is_flag=True, help="Never ask: take the default of what no flag gives.")
@click.option(
    "--show-key", is_flag=True, help="Say whether a key is stored (its last 4 characters)."
)
@click.option("--delete-key", is_flag=True, help="Delete the stored provider key.")
@click.option(
    "--scan",
    default=",".join(map(str, USUAL_PORTS)),
    show_default=True,
    metavar="PORTS",
    help="Ports of 127.0.0.1 to look for llama-server, Ollama, vLLM and LM Studio on "
    "(comma-separated; 'none' skips the look).",
)
def setup(
    choice: str | None,
    base_url: str | None,
    api_key_stdin: bool,
    api_key_env: str | None,
    model: str | None,
    thinking: str | None,
    config_path: Path | None,
    yes: bool,
    show_key: bool,
    delete_key: bool,
    scan: str,
) -> None:
    """Choose the LLM provider, its key and model.

    The key is stored sealed in the store; the choices go to the config file.
    """
    if config_path is not None:
        os.environ["TOBE_CONFIG"] = str(config_path)
    path = config_path or config_file()
    settings = load_settings()
    if show_key:
        click.echo(_key_line(describe_key(settings)))
        return
    if delete_key:
        _delete_key(settings)
        return
    key = _given_key(api_key_stdin, api_key_env)
    answers = Answers(choice, base_url, key, model, thinking, ask=not yes)
    ports = _ports(scan)
    local = find_local_servers(ports) if ports and choice is None and base_url is None else []
    _tell_found(local)
    try:
        ensure_stopped(settings)
        provider, listed = _reach(settings, answers, local)
    except ProviderKeyError as exc:
        raise click.ClickException(str(exc)) from None
    chosen = _model(provider, listed, answers, settings.provider.model)
    level = _thinking(chosen, answers, settings.provider.thinking)
    try:
        text, removed_key = edit_provider(
            path, provider.kind, provider.base_url, chosen.id, level, _learned_entry(chosen)
        )
        if answers.key:
            _store_key(settings, provider.kind, answers.key)
        write_private(path, text)
    except ConfigEditError as exc:
        raise click.ClickException(str(exc)) from None
    _done(path, provider, chosen, level, removed_key)


def _given_key(from_stdin: bool, variable: str | None) -> str | None:
    if from_stdin and variable:
        raise click.UsageError("give the key with --api-key-stdin or --api-key-env, not both")
    if from_stdin:
        key = sys.stdin.readline().strip()
        if not key:
            raise click.ClickException("--api-key-stdin: standard input held no key")
        return key
    if variable:
        key = os.environ.get(variable, "").strip()
        if not key:
            raise click.ClickException(f"--api-key-env: the variable {variable} is not set")
        return key
    return None


def _ports(scan: str) -> tuple[int, ...]:
    if scan.strip().lower() == "none":
        return ()
    try:
        ports = tuple(int(part) for part in scan.split(",") if part.strip())
    except ValueError:
        raise click.BadParameter(f"{scan!r} is not a list of ports", param_hint="--scan") from None
    if any(not 0 < port < 65536 for port in ports):
        raise click.BadParameter(f"{scan!r}: a port is 1 to 65535", param_hint="--scan")
    return ports


def _tell_found(local: list[LocalServer]) -> None:
    for server in local:
        models = ", ".join(
            f"{model.id} (window {model.window})" if model.window else model.id
            for model in server.models
        )
        click.echo(f"Found {server.name} at {server.base_url}: {models or 'no models'}")


def _local_choice(server: LocalServer) -> str:
    return server.server if server.server in CHOICES else "openai"


def _reach(
    settings: Settings, answers: Answers, local: list[LocalServer]
) -> tuple[ProviderSettings, list[ModelRow]]:
    """Provider, URL and key, asked again until the listing succeeds (or exit 1 unasked).

    With nothing configured, the first local server found is the default."""
    current = settings.provider
    last_choice, last_url = _current_choice(current), current.base_url
    if not current.kind and local:
        last_choice, last_url = _local_choice(local[0]), local[0].base_url
    while True:
        asked = False
        choice = answers.choice
        if choice is None:
            choice = _ask_choice(last_choice) if answers.ask else last_choice
            asked = answers.ask
        kind, default_url = CHOICES[choice]
        if choice == last_choice and last_url:
            default_url = last_url
        url = answers.base_url
        if url is None:
            shown = default_url or DEFAULT_BASE_URLS[kind]
            url = click.prompt("Base URL", default=shown) if answers.ask else shown
            asked = asked or answers.ask
        last_choice, last_url = choice, url
        url = "" if url.rstrip("/") == DEFAULT_BASE_URLS[kind] else url.rstrip("/")
        provider = ProviderSettings(kind=kind, base_url=url, models=current.models)  # type: ignore[arg-type]
        # A key in the config file is moved into the store: the file is rewritten without it.
        in_file = current.api_key if kind == current.kind else None
        if answers.key is None and answers.ask:
            offered = provider.model_copy(update={"api_key": in_file}) if in_file else provider
            answers.key = _ask_key(with_api_key(offered, stored_keys(settings))) or None
            asked = True
        if answers.key is None and in_file is not None:
            answers.key = in_file.get_secret_value()
        if answers.key is not None:
            provider = provider.model_copy(update={"api_key": SecretStr(answers.key)})
        else:
            provider = with_api_key(provider, stored_keys(settings))
        try:
            return provider, rows(provider, fetch(provider))
        except ListingError as exc:
            if not asked:
                raise click.ClickException(str(exc)) from None
            click.echo(f"{exc.problem}; try again", err=True)
            answers.key = None


def _current_choice(current: ProviderSettings) -> str:
    if current.kind == "openai" and current.base_url:
        for choice, (kind, url) in CHOICES.items():
            if kind == "openai" and url and current.base_url.startswith(url):
                return choice
    return current.kind if current.kind in CHOICES else "openai"


def _ask_choice(default: str) -> str:
    names = sorted(CHOICES)
    return str(click.prompt("Provider", type=click.Choice(names), default=default))


def _ask_key(provider: ProviderSettings) -> str:
    existing = api_key(provider)
    hint = f"Enter keeps the one ending in {existing[-4:]}" if existing else "Enter for none"
    return str(
        click.prompt(f"API key ({hint})", default="", show_default=False, hide_input=True)
    ).strip()


def _model(
    provider: ProviderSettings, listed: list[ModelRow], answers: Answers, current: str
) -> ModelRow:
    usable = [row for row in listed if row.verdict is not Verdict.REFUSED]
    if not usable:
        raise click.ClickException(
            f"{provider.kind} lists {len(listed)} model(s), none of them in the catalog; "
            "describe one in [[provider.models]] (see `tobe models`)"
        )
    by_id = {row.id: row for row in usable}
    if answers.model is not None:
        # A catalog id the listing names only with a date suffix (Anthropic) is accepted too.
        info = known(provider, answers.model)
        if answers.model not in by_id and info is None:
            raise click.ClickException(
                f"--model {answers.model!r} is not one the provider lists and the Mind accepts; "
                "`tobe models` shows them"
            )
        return by_id.get(answers.model) or ModelRow(answers.model, Verdict.CATALOG, info)
    default = by_id.get(current) or next(
        (row for row in usable if row.verdict is Verdict.CATALOG), usable[0]
    )
    if not answers.ask:
        return default
    click.echo("Models:")
    for number, row in enumerate(usable, start=1):
        note = "" if row.verdict is Verdict.CATALOG else f"  ({_window_note(row)})"
        click.echo(f"  {number:>3}. {row.id}{note}")
    picked = click.prompt(
        "Model number", type=click.IntRange(1, len(usable)), default=usable.index(default) + 1
    )
    return usable[picked - 1]


def _window_note(row: ModelRow) -> str:
    if row.served is not None and row.served.window:
        return f"window {row.served.window} from {row.served.facts.source}"
    window = row.info.context_window if row.info else 0
    return f"not in the catalog: window {window} assumed"


def _learned_entry(row: ModelRow) -> dict[str, object] | None:
    """The `[[provider.models]]` entry of a model its server reported the window of."""
    if row.verdict is not Verdict.DEFAULTS or row.served is None or not row.served.window:
        return None
    assert row.info is not None
    return {
        "id": row.id,
        "context_window": row.served.window,
        "max_output": row.info.max_output,
        "structured_output": row.info.structured_output,
    }


def _thinking(row: ModelRow, answers: Answers, current: str) -> str:
    assert row.info is not None
    levels = [level.value for level in row.info.thinking_levels]
    if answers.thinking is not None:
        if answers.thinking not in levels:
            raise click.ClickException(
                f"--thinking {answers.thinking!r}: {row.id} supports " + ", ".join(levels)
            )
        return answers.thinking
    default = current if current in levels else ("off" if "off" in levels else levels[0])
    if not answers.ask or len(levels) == 1:
        return default
    return str(click.prompt("Thinking level", type=click.Choice(levels), default=default))


def _store_key(settings: Settings, kind: str, key: str) -> None:
    try:
        with offline_keys(settings) as keys:
            keys.put(MAIN, kind, key, actor=f"tobe setup ({_operator()})")
    except ProviderKeyError as exc:
        raise click.ClickException(f"cannot store the API key: {exc}") from None
    click.echo(f"Stored the {kind} API key in the store, sealed (ends in {key[-4:]}).")


def _delete_key(settings: Settings) -> None:
    try:
        with offline_keys(settings) as keys:
            removed = keys.delete(MAIN, actor=f"tobe setup ({_operator()})")
    except ProviderKeyError as exc:
        raise click.ClickException(f"cannot delete the API key: {exc}") from None
    click.echo("Deleted the stored provider key." if removed else "No provider key is stored.")


def _operator() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return "unknown"


def _key_line(stored: StoredKey | None) -> str:
    if stored is None:
        return "No provider key is stored."
    when = stored.updated_at.strftime("%Y-%m-%d %H:%M UTC")
    return f"A key for {stored.kind} is stored, ending in {stored.last4} (set {when})."


def _done(
    path: Path, provider: ProviderSettings, model: ModelRow, level: str, removed: bool
) -> None:
    where = f" at {provider.base_url}" if provider.base_url else ""
    click.echo(
        f"Wrote {path}: provider {provider.kind}{where}, model {model.id}, thinking {level}."
    )
    learned = _learned_entry(model)
    if learned is not None:
        click.echo(
            f"Its window, {learned['context_window']} tokens, is in [[provider.models]]; "
            "remove that entry to have the Mind ask the server at every start instead."
        )
    if removed:
        click.echo("Removed [provider] api_key from it: the Mind uses the stored key instead.")
    overriding = sorted(name for name in os.environ if name.startswith("TOBE_PROVIDER__"))
    if overriding:
        click.echo("Note: " + ", ".join(overriding) + " in this environment override the file.")
    click.echo(
        "Next: `tobe up`, then `tobe chat` in a second terminal (`tobe models` lists "
        "what the provider offers)."
    )
