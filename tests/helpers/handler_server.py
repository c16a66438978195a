"""A stdlib HTTP handler served on a loopback port for one test or module, as a `/v1` base URL
(a provider's stand-in that answers what the test needs: HTML, a refusal, a model list)."""

from __future__ import annotations

import http.server
import threading
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def serving(handler: type[http.server.BaseHTTPRequestHandler]) -> Iterator[str]:
    """`http://127.0.0.1:PORT/v1` while `handler` answers there; stopped and joined after."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
