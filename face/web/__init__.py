"""The web client Face serves: static files, the pairing API and the WebSocket transport."""
