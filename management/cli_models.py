"""`tobe models`: the catalog for a provider kind, and what the configured provider lists.

Each listed model is marked the way the Mind would treat it at start (`model_choice`): in the
catalog, accepted with the window its self-hosted server reports (or the assumed one), or
refused.
"""

from __future__ import annotations

import json
from typing import Any

import click

from management.model_choice import (
    CHOICES,
    ModelRow,
    Verdict,
    catalog,
    fetch,
    rows,
)
from mind.credentials.provider_keys import ProviderKeyError, stored_keys
from mind.providers.catalog import ModelInfo
from mind.providers.listing import ListingError, base_url
from tobe.api_keys import with_api_key
from tobe.config import ProviderSettings, load_settings

LISTED_NOTE = {
    Verdict.CATALOG: "in the catalog",
    Verdict.DEFAULTS: "served by this server",
    Verdict.REFUSED: "not in the catalog: describe it in [[provider.models]] to use it",
}


@click.command()
@click.option(
    "--provider",
    "choice",
    type=click.Choice(sorted(CHOICES)),
    help="A provider kind instead of the configured one (ollama, llama-server, vllm, lmstudio: "
    "openai at that local server's usual port).",
)
@click.option("--base-url", help="The provider's base URL instead of the configured one.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON for scripts.")
def models(choice: str | None, base_url: str | None, as_json: bool) -> None:
    """List the model catalog and the provider's models.

    Each listed model is marked: in the catalog, served with the window its server reports,
    or refused.
    """
    settings = load_settings()
    provider = settings.provider
    if choice is not None:
        kind, default_url = CHOICES[choice]
        update: dict[str, object] = {"kind": kind, "base_url": default_url, "model": ""}
        if kind != provider.kind:
            update["api_key"] = None
        provider = provider.model_copy(update=update)
    if base_url is not None:
        provider = provider.model_copy(update={"base_url": base_url})
    if provider.kind not in ("openai", "anthropic", "gemini"):
        raise click.ClickException(
            "no provider configured: pass --provider (" + ", ".join(sorted(CHOICES)) + ") or "
            "run `tobe setup`"
        )
    try:
        provider = with_api_key(provider, stored_keys(settings))
    except ProviderKeyError as exc:
        raise click.ClickException(str(exc)) from None
    try:
        listed: list[ModelRow] | None = rows(provider, fetch(provider))
        error = ""
    except ListingError as exc:
        listed, error = None, str(exc)
    if as_json:
        click.echo(json.dumps(_report(provider, listed, error), indent=2))
    else:
        _print(provider, listed, error)
    if error:
        raise SystemExit(1)


def _entry(info: ModelInfo) -> dict[str, Any]:
    return {
        "id": info.id,
        "context_window": info.context_window,
        "max_output": info.max_output,
        "vision": info.vision,
        "thinking_levels": [level.value for level in info.thinking_levels],
        "structured_output": info.structured_output,
        "window_source": info.window_source,
    }


def _report(
    provider: ProviderSettings, listed: list[ModelRow] | None, error: str
) -> dict[str, Any]:
    return {
        "kind": provider.kind,
        "base_url": base_url(provider),
        "configured_model": provider.model,
        "catalog": [_entry(info) for info in catalog(provider)],
        "listed": None
        if listed is None
        else [
            {"id": row.id, "accepted": row.verdict.value, "entry": row.info and _entry(row.info)}
            for row in listed
        ],
        "error": error or None,
    }


def _print(provider: ProviderSettings, listed: list[ModelRow] | None, error: str) -> None:
    click.echo(f"Catalog for {provider.kind}:")
    click.echo(f"  {'MODEL':<26} {'CONTEXT':>9} {'OUTPUT':>7}  VISION  THINKING")
    for info in catalog(provider):
        click.echo("  " + _line(info, provider.model))
    where = base_url(provider)
    if listed is None:
        click.echo(f"\nCannot list models: {error}", err=True)
        return
    click.echo(f"\nListed by {where} ({len(listed)}):")
    for row in listed:
        mark = "*" if row.id == provider.model else " "
        note = LISTED_NOTE[row.verdict]
        if row.verdict is Verdict.DEFAULTS and row.info is not None:
            source = row.info.window_source
            origin = f"from {source}" if source else "assumed"
            note += f" (context {row.info.context_window} {origin}, output {row.info.max_output})"
        click.echo(f" {mark}{row.id:<40} {note}")
    if provider.model:
        click.echo(f"\n* the configured model ({provider.model})")


def _line(info: ModelInfo, configured: str) -> str:
    levels = ", ".join(level.value for level in info.thinking_levels)
    name = ("*" if info.id == configured else "") + info.id
    vision = "yes" if info.vision else "no"
    return f"{name:<26} {info.context_window:>9} {info.max_output:>7}  {vision:<6}  {levels}"
