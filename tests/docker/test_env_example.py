"""docker/.env.example's provider blocks work as written once uncommented."""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from compose_topology import ENV_EXAMPLE, example_blocks, load_compose

from mind.providers.catalog import lookup
from tobe.config import load_settings


def block(title: str) -> dict[str, str]:
    blocks = example_blocks(ENV_EXAMPLE)
    [found] = [values for name, values in blocks.items() if name.startswith(title)]
    return found


def test_the_ollama_block_describes_its_model_so_the_catalog_accepts_it(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    ollama = block("Ollama")
    for key in [key for key in os.environ if key.startswith("TOBE_")]:
        monkeypatch.delenv(key)
    monkeypatch.setenv("TOBE_CONFIG", str(tmp_path / "absent.toml"))
    for key, value in ollama.items():
        monkeypatch.setenv(key, value)

    provider = load_settings().provider
    info = lookup(provider)

    assert (provider.kind, info.id) == ("openai", ollama["TOBE_PROVIDER__MODEL"])
    # The block's own description, not a default: the environment form was parsed.
    assert (info.context_window, info.max_output) == (32768, 4096)
    # The Mind's container reaches the Docker host under the name the block uses.
    host = urlsplit(provider.base_url).hostname
    assert f"{host}:host-gateway" in load_compose()["services"]["mind"]["extra_hosts"]
