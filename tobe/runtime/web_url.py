"""Addresses of the web client: the base URL people open and the sign-in link with a code.

The pairing code rides in the URL's fragment (`#pair=…`), which browsers never send to the
server, so it stays out of access logs and Referer headers.
"""

from __future__ import annotations

from urllib.parse import quote


def web_base_url(address: str, *, tls: bool, public_url: str = "") -> str:
    """`public_url` when set, else `http(s)://<address>/` for the bound `host:port`."""
    if public_url:
        return public_url if public_url.endswith("/") else public_url + "/"
    host, _, port = address.rpartition(":")
    if host in ("", "0.0.0.0", "[::]", "::"):
        host = "127.0.0.1"
    scheme = "https" if tls else "http"
    return f"{scheme}://{host}:{port}/"


def pair_url(base_url: str, code: str) -> str:
    """The sign-in link that redeems `code` when opened."""
    return f"{base_url}#pair={quote(code)}"
