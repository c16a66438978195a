"""Whether the OpenAI-compatible chat endpoint is served, and where chat apps point at it.

It rides on the web server: off when the web client is off, or when `face.web.openai_api` is.
"""

from __future__ import annotations

from management.doctor.report import Finding, Status
from management.doctor.state import Doctor
from tobe.runtime.web_url import web_base_url

CHECK = "openai api"


def check_openai_api(doctor: Doctor) -> list[Finding]:
    settings = doctor.settings
    if settings is None:
        return [Finding(Status.SKIP, CHECK, "the configuration does not load")]
    web = settings.face.web
    if not web.enabled:
        return [Finding(Status.SKIP, CHECK, "face.web.enabled is off: no endpoint is served")]
    if not web.openai_api:
        return [Finding(Status.SKIP, CHECK, "face.web.openai_api is off")]
    tls = web.tls.cert_file is not None
    base = web_base_url(web.listen, tls=tls, public_url=web.public_url)
    return [
        Finding(
            Status.OK,
            CHECK,
            f"served at {base}v1 for chat apps; their API key is a client credential with "
            "scope chat",
        )
    ]
