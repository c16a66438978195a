"""The catalog entry of a model only a self-hosted server knows.

Order, after `[[provider.models]]` and the built-in catalog found nothing: the window the
server reports for the model it serves (`server_facts`), asked at every start and remembered
per server and model in the data directory; a window remembered from an earlier start when
the server now reports only a default (an Ollama model not loaded yet) or cannot be reached;
the window `/v1/models` lists; else `ASSUMED_CONTEXT`, with one warning naming the setting.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
from dataclasses import asdict, dataclass, replace
from pathlib import Path

from mind.providers.catalog import ASSUMED_CONTEXT, ModelInfo, assumed
from mind.providers.listing import ListedModel, ListingError, base_url, list_models
from mind.providers.server_facts import ServerFacts, ask_server, ollama_name, server_root
from tobe.config import ProviderSettings

log = logging.getLogger("mind.providers.factory")

# Seconds the start waits for a self-hosted server to answer.
ASK_TIMEOUT = 5.0
CACHE_FILE = "model_windows.json"


class UnservedModel(ValueError):
    """The server does not serve the model, or could not be asked and nothing is remembered.

    Not a refusal: the factory turns it into a `ProviderConfigError`."""


@dataclass(frozen=True)
class Learned:
    """A window a server reported for a model (not a default), as remembered."""

    server: str
    context_window: int
    source: str
    structured_output: str = "none"


class WindowCache:
    """Windows servers reported, per server root and model, in one JSON file."""

    def __init__(self, directory: Path | None) -> None:
        self.path = directory / CACHE_FILE if directory is not None else None

    def _read(self) -> dict[str, dict[str, object]]:
        if self.path is None:
            return {}
        try:
            data = json.loads(self.path.read_text())
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}

    def get(self, root: str, model: str) -> Learned | None:
        item = self._read().get(f"{root}|{model}")
        if not isinstance(item, dict):
            return None
        try:
            return Learned(**item)  # type: ignore[arg-type]
        except TypeError:
            return None

    def put(self, root: str, model: str, learned: Learned) -> None:
        if self.path is None:
            return
        data = self._read()
        data[f"{root}|{model}"] = asdict(learned)
        temporary = self.path.with_suffix(".tmp")
        try:
            temporary.write_text(json.dumps(data, indent=1, sort_keys=True))
            os.replace(temporary, self.path)
        except OSError as exc:
            log.warning("cannot remember the model's window in %s: %s", self.path, exc)


def served_model(settings: ProviderSettings, cache_dir: Path | None) -> ModelInfo:
    """The entry of `settings.model` as its self-hosted server serves it (module docstring)."""
    cache = WindowCache(cache_dir)
    root = server_root(settings)
    try:
        listed, facts, names = asyncio.run(_ask(settings))
    except ListingError as exc:
        remembered = cache.get(root, settings.model) or cache.get(root, ollama_name(settings.model))
        if remembered is None:
            raise UnservedModel(
                f"model {settings.model!r} is not in the catalog and the server could not be "
                f"asked whether it serves it ({exc.problem}); start the server or fix "
                "[provider] base_url (TOBE_PROVIDER__BASE_URL), or describe the model in "
                "[[provider.models]] (TOBE_PROVIDER__MODELS)"
            ) from None
        log.warning(
            "%s did not answer (%s); model %r runs with the context window of %d tokens it "
            "reported at an earlier start (%s)",
            base_url(settings),
            exc.problem,
            settings.model,
            remembered.context_window,
            remembered.source,
        )
        info = assumed(
            settings.model, remembered.context_window, None, remembered.structured_output
        )
        return replace(info, window_source=f"{remembered.source}, remembered")
    if listed is None or facts is None:
        raise UnservedModel(
            f"model {settings.model!r} is not in the catalog and {base_url(settings)} does not "
            f"list it (it lists: {names}); set [provider] model (TOBE_PROVIDER__MODEL) to one "
            "of those"
        )
    return _entry(settings, cache, root, listed, facts)


async def _ask(
    settings: ProviderSettings,
) -> tuple[ListedModel | None, ServerFacts | None, str]:
    """The model as listed and what the server says about it (None, None when it is not
    listed; a name without a tag matches its `:latest`), and the names listed."""
    models = await list_models(settings, timeout=ASK_TIMEOUT)
    names = ", ".join(m.id for m in models) or "none"
    by_id = {m.id: m for m in models}
    listed = by_id.get(settings.model) or by_id.get(ollama_name(settings.model))
    if listed is None:
        return None, None, names
    return listed, await ask_server(settings, listed.id, listed, timeout=ASK_TIMEOUT), names


def _entry(
    settings: ProviderSettings,
    cache: WindowCache,
    root: str,
    listed: ListedModel,
    facts: ServerFacts,
) -> ModelInfo:
    model = listed.id
    capability = facts.structured_output
    if facts.context_window and not facts.default_window:
        learned = Learned(facts.server, facts.context_window, facts.source, capability)
        cache.put(root, model, learned)
        _learned_line(model, facts.context_window, facts.source, facts.max_context)
        return _sourced(
            assumed(model, facts.context_window, listed.max_output, capability), facts.source
        )
    remembered = cache.get(root, model)
    if remembered is not None:
        source = f"{remembered.source}, remembered from an earlier start"
        _learned_line(model, remembered.context_window, source, facts.max_context)
        info = assumed(model, remembered.context_window, listed.max_output, capability)
        return _sourced(info, source)
    if facts.context_window:
        _default_warning(settings, model, facts.context_window, facts.source)
        info = assumed(model, facts.context_window, listed.max_output, capability)
        return _sourced(info, f"{facts.source} (assumed)")
    if listed.context_window:
        _learned_line(model, listed.context_window, "/v1/models", None)
        info = assumed(model, listed.context_window, listed.max_output, capability)
        return _sourced(info, "/v1/models")
    _default_warning(settings, model, ASSUMED_CONTEXT, "no window reported by the server")
    info = assumed(model, ASSUMED_CONTEXT, listed.max_output, capability)
    return _sourced(info, "the default for a window nobody reported (assumed)")


def _sourced(info: ModelInfo, source: str) -> ModelInfo:
    return replace(info, window_source=source)


def _learned_line(model: str, window: int, source: str, maximum: int | None) -> None:
    most = f"; the model's maximum is {maximum}" if maximum and maximum != window else ""
    log.info("model %r: context window %d tokens (%s%s)", model, window, source, most)


def _default_warning(settings: ProviderSettings, model: str, window: int, why: str) -> None:
    log.warning(
        "model %r is not in the catalog and %s did not report the window it serves it with "
        "(%s); it runs with %d tokens. If its window is larger, give it in the config file "
        "([[provider.models]] id = %s, context_window = …, max_output = …) or as "
        'TOBE_PROVIDER__MODELS=\'[{"id": %s, "context_window": …, "max_output": …}]\'',
        model,
        base_url(settings),
        why,
        window,
        json.dumps(model),
        json.dumps(model),
    )
