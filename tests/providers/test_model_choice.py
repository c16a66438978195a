"""What `tobe models` and `tobe setup` say the Mind would do with each listed model."""

from __future__ import annotations

from management.model_choice import Verdict, catalog, verdict
from mind.providers.catalog import ASSUMED_CONTEXT
from mind.providers.listing import ListedModel
from tobe.config import ModelEntry, ProviderSettings

LOCAL = ProviderSettings(kind="openai", base_url="http://127.0.0.1:11434/v1")
OFFICIAL = ProviderSettings(kind="openai")


def test_listed_models_get_the_minds_verdict_by_server():
    assert verdict(OFFICIAL, ListedModel("gpt-4o-2024-08-06")).verdict is Verdict.CATALOG
    assert verdict(OFFICIAL, ListedModel("whisper-1")).verdict is Verdict.REFUSED
    local = verdict(LOCAL, ListedModel("qwen2.5:7b"))
    assert local.verdict is Verdict.DEFAULTS
    assert local.info is not None and local.info.context_window == ASSUMED_CONTEXT
    served = verdict(LOCAL, ListedModel("served", context_window=65536)).info
    assert served is not None and served.context_window == 65536


def test_a_config_entry_replaces_the_built_in_one_of_its_id_and_adds_new_ones():
    provider = OFFICIAL.model_copy(
        update={
            "models": [
                ModelEntry(id="gpt-4o", context_window=1000, max_output=100),
                ModelEntry(id="mine", context_window=2000, max_output=200),
            ]
        }
    )
    shown = catalog(provider)
    assert [info.context_window for info in shown if info.id == "gpt-4o"] == [1000]
    assert shown[-1].id == "mine"
