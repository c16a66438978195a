"""The web client Face serves: static files, the pairing API and the WebSocket transport.

`listener.py` binds `face.web.listen` and runs uvicorn inside Face's event loop (no signal
handlers of its own); `protocol.py` is uvicorn's WebSocket protocol whose close never waits for
a client that does not read; `app.py` routes (static files, `/healthz`); `api.py` pairs, signs
out and reads the session cookie; `attempts.py` limits failed pairings per address;
`origins.py` checks the origin of the handshake and every POST; `headers.py` sets the CSP and
the other security headers; `proxies.py` finds the client's address and scheme (the socket's
peer, or what one of `face.web.trusted_proxies` relays). `socket.py` is `FaceGateway.Connect`
over a WebSocket: the same `face.session.Session` as the gRPC transport, with protobuf JSON
frames and close code 4000 + status. The page itself is `static/`: plain ES modules, no build
step, third-party code copied into `static/vendor/` by `scripts/vendor_web.py`.
"""
