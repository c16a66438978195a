"""Where a client of this data directory dials the Face, and with what TLS.

`tobe chat`, `tobe search` and the channels process dial the same Face: the address given on
the command line, else the one `tobe up` published in `<data dir>/runtime.json` (with the CA
it published), else `face.listen`.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from tobe.config import ClientTlsSettings, Settings
from tobe.runtime.addresses import address_of, published, runtime_file
from tobe.runtime.tls import ClientTls
from tobe.tls_options import TlsOptions


@dataclasses.dataclass(frozen=True)
class FaceEndpoint:
    """The address to dial, the channel's TLS (None: plaintext), and a phrase saying where the
    address came from, for messages."""

    address: str
    tls: ClientTls | None
    source: str


def face_endpoint(
    settings: Settings, address: str | None = None, tls: TlsOptions | None = None
) -> FaceEndpoint:
    """The Face of `settings.data_dir`; `address` and `tls` are the command line's, if any.
    A bad TLS option or file ends the command with a message naming it."""
    face_address, options, source = _face_target(settings, address, tls or TlsOptions())
    target, channel_tls = options.resolve(ClientTlsSettings(), face_address)
    return FaceEndpoint(target, channel_tls, source)


def _face_target(
    settings: Settings, address: str | None, tls: TlsOptions
) -> tuple[str, TlsOptions, str]:
    if address:
        return address, tls, "from --address"
    target = address_of(settings.data_dir, "face", settings.face, "listen")
    entry = published(settings.data_dir).get("face")
    where = runtime_file(settings.data_dir)
    if entry is not None and entry.address == target:
        if entry.ca_file and tls.ca_file is None:
            tls = dataclasses.replace(tls, ca_file=Path(entry.ca_file))
        return target, tls, f"published in {where}"
    if "listen" in settings.face.model_fields_set:
        return target, tls, "face.listen, as configured (TOBE_FACE__LISTEN or the config file)"
    return target, tls, f"the default face.listen; no Face is published in {where}"
