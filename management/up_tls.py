"""How `tobe up`, its local Face and its local Hand trust the Mind's and Face's TLS listeners.

The local Face and Hand dial the Mind with their own settings, `face.mind_tls` and `hand.tls`.
Where those name no CA, they trust `ca.pem` beside `mind.tls.cert_file`, where
`tobe admin tls init` writes it. When the Mind requires client certificates (mTLS), each
of them needs one of its own: `tobe up` refuses to start until `cert_file` and `key_file`
of both sections are set (it issues no certificates itself). The chat command the banner
prints trusts `ca.pem` beside `face.tls.cert_file`; a Face that requires client certificates
is refused, as `tobe up` has none to give that command or `tobe health`.

Every file is read and checked before a service starts, so a misconfiguration ends `tobe up`
with one sentence naming the setting.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from management.certificate_files import CA_CERT
from tobe.config import ClientTlsSettings, ServerTlsSettings, Settings
from tobe.runtime.tls import (
    TlsConfigError,
    load_client_tls,
    server_tls,
    setting_names,
)


@dataclass(frozen=True)
class LocalTls:
    """The TLS environment of `tobe up`'s children, and the CA files a user of the listeners
    needs (None: that listener is plaintext)."""

    env: dict[str, dict[str, str]] = field(default_factory=dict)
    mind_ca: Path | None = None
    face_ca: Path | None = None


def _ca_beside(server: ServerTlsSettings) -> Path | None:
    assert server.cert_file is not None
    candidate = (server.cert_file.parent / CA_CERT).resolve()
    return candidate if candidate.is_file() else None


def _client(
    configured: ClientTlsSettings, mind: ServerTlsSettings, section: str, name: str
) -> ClientTlsSettings:
    """`configured` with the CA filled in, refused when it cannot reach the Mind."""
    settings = configured
    if settings.ca_file is None:
        ca = _ca_beside(mind)
        if ca is None:
            raise TlsConfigError(
                f"mind.tls serves TLS but {section}.ca_file is not set and there is no "
                f"{CA_CERT} beside {mind.cert_file}: set {section}.ca_file to the CA that "
                "signed the Mind's certificate"
            )
        settings = settings.model_copy(update={"ca_file": ca})
    if mind.require_client_cert and (settings.cert_file is None or settings.key_file is None):
        raise TlsConfigError(
            f"mind.tls.require_client_cert is set, so the local {name} needs a client "
            f"certificate: set {section}.cert_file and {section}.key_file "
            f"(`tobe admin tls client {name}` issues one)"
        )
    load_client_tls(settings, setting_names(section))
    return settings


def _environment(settings: ClientTlsSettings, prefix: str) -> dict[str, str]:
    return {
        f"{prefix}__{name.upper()}": str(value)
        for name, value in settings.model_dump(exclude_defaults=True).items()
    }


def local_tls(settings: Settings) -> LocalTls:
    """What `tobe up` needs for the configured listeners; raises TlsConfigError naming the
    setting when the local services could not reach them."""
    mind = server_tls(settings.mind.tls, "mind.tls")
    face = server_tls(settings.face.tls, "face.tls")
    mind_ca = face_ca = None
    env: dict[str, dict[str, str]] = {}
    if mind is not None:
        face_client = _client(settings.face.mind_tls, settings.mind.tls, "face.mind_tls", "face")
        hand_client = _client(settings.hand.tls, settings.mind.tls, "hand.tls", "hand")
        env["face"] = _environment(face_client, "TOBE_FACE__MIND_TLS")
        env["hand"] = _environment(hand_client, "TOBE_HAND__TLS")
        mind_ca = face_client.ca_file
    if face is not None:
        if face.require_client_cert:
            raise TlsConfigError(
                "face.tls.require_client_cert is set: `tobe up` has no client certificate to "
                "give the clients it names (`tobe chat`, `tobe health`); run `tobe face serve` "
                "on its own for a Face that requires client certificates"
            )
        face_ca = _ca_beside(settings.face.tls)
        if face_ca is None:
            raise TlsConfigError(
                f"face.tls serves TLS but there is no {CA_CERT} beside "
                f"{settings.face.tls.cert_file} for the clients `tobe up` names to trust: "
                "put the CA that signed it there"
            )
        load_client_tls(ClientTlsSettings(ca_file=face_ca), {"ca_file": str(face_ca)})
    return LocalTls(env, mind_ca, face_ca)
