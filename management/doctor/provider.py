"""The LLM provider: reachable, key accepted, model listed — one cheap model-listing call.

The provider checked is the one `tobe up` would run: the configured one, else one detected
from a usual key variable; none means the offline demo script. The scripted provider has
nothing to reach.
"""

from __future__ import annotations

import asyncio
import os

from management.doctor.report import Finding, Status
from management.doctor.state import Doctor
from tobe.config import ProviderSettings

CHECK = "provider"
LISTING_TIMEOUT = 10.0


def check_provider(doctor: Doctor) -> list[Finding]:
    # Imported here: the provider stack (httpx) is only needed by this check.
    from mind.credentials.provider_keys import ProviderKeyError, stored_keys
    from mind.providers.listing import ListingError, base_url, list_models
    from tobe.api_keys import with_api_key
    from tobe.provider_detect import detect_with_reason

    if doctor.settings is None:
        return [Finding(Status.SKIP, CHECK, "the configuration does not load")]
    provider = doctor.settings.provider
    if not provider.kind:
        detected = detect_with_reason(os.environ)
        if detected is None:
            return [_demo()]
        provider = detected[0]
    if provider.kind == "scripted":
        return [
            Finding(
                Status.OK, CHECK, f"scripted ({provider.script or 'no script'}); nothing to reach"
            )
        ]
    where = base_url(provider)
    try:
        provider = with_api_key(provider, stored_keys(doctor.settings))
    except ProviderKeyError as exc:
        return [Finding(Status.FAIL, CHECK, str(exc), "store the key again with `tobe setup`")]
    try:
        models = asyncio.run(list_models(provider, timeout=LISTING_TIMEOUT))
    except ListingError as exc:
        return [Finding(Status.FAIL, CHECK, str(exc), _fix(exc))]
    listed = {model.id for model in models}
    text = f"{provider.kind} at {where}: key accepted, {len(models)} models listed"
    if provider.model and provider.model not in listed:
        return [
            Finding(
                Status.WARN,
                CHECK,
                f"{text}, but not {provider.model!r}",
                "set [provider] model (TOBE_PROVIDER__MODEL) to one it lists",
            )
        ]
    return [Finding(Status.OK, CHECK, f"{text}{_model(provider)}")]


def _model(provider: ProviderSettings) -> str:
    return f", {provider.model!r} among them" if provider.model else ""


def _fix(error: Exception) -> str:
    from mind.providers.listing import KeyRejected, ProviderUnreachable

    if isinstance(error, KeyRejected):
        return (
            "store a valid key with `tobe setup`, or set [provider] api_key, "
            "TOBE_PROVIDER__API_KEY or the usual variable"
        )
    if isinstance(error, ProviderUnreachable):
        return "start the server, or correct [provider] base_url (TOBE_PROVIDER__BASE_URL)"
    return "check [provider] base_url and kind"


def _demo() -> Finding:
    return Finding(
        Status.WARN,
        CHECK,
        "none configured: `tobe up` runs the offline demo script (canned replies, no model)",
        "run `tobe setup`, or set ANTHROPIC_API_KEY, OPENAI_API_KEY or GEMINI_API_KEY",
    )
