"""The file names `management.certificates` writes, for modules that only look for them
(`tobe up`'s TLS checks) and so need not load `cryptography`."""

from __future__ import annotations

CA_CERT, CA_KEY = "ca.pem", "ca.key"
SERVER_CERT, SERVER_KEY = "server.pem", "server.key"
