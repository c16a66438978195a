"""The offline demo model, whose closing advice fits where the Mind runs.

demo_script.yaml tells a person on a host to configure a provider in the configuration file;
in the container layout there is none, and `docker/.env` is where the provider is chosen.
"""

from __future__ import annotations

from mind.scripted.provider import ScriptedProvider
from mind.scripted.script import parse_script
from tobe.provider_detect import DEMO_SCRIPT
from tobe.runtime.container import COMPOSE, container_service

# The advice as demo_script.yaml words it, and its container form.
HOST_ADVICE = "set [provider] kind, model and api_key in the configuration file."
CONTAINER_ADVICE = (
    "uncomment a provider block in docker/.env (from docker/.env.example) and run "
    f"`{COMPOSE} up -d`."
)


def demo_provider() -> ScriptedProvider:
    text = DEMO_SCRIPT.read_text(encoding="utf-8")
    if container_service() is not None:
        text = text.replace(HOST_ADVICE, CONTAINER_ADVICE)
    return ScriptedProvider(parse_script(text, str(DEMO_SCRIPT)), model=DEMO_SCRIPT.name)
