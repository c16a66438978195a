"""Loopback ports a test hands to a process it starts later.

A port the kernel gives for `bind(0)` comes from the ephemeral range, so between the test
choosing it and its process binding it, any other process binding port 0 (another test's
Mind, a client socket) may take it. Ports below that range are handed out by nobody: a
random free one stays free unless another test picks the same number.
"""

from __future__ import annotations

import random
import socket
from pathlib import Path

LOWEST = 10_000
_RANGE_FILE = Path("/proc/sys/net/ipv4/ip_local_port_range")


def _ephemeral_start() -> int:
    try:
        return int(_RANGE_FILE.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32_768


def free_port() -> int:
    """A loopback TCP port that is free now and outside the kernel's ephemeral range."""
    top = max(_ephemeral_start() - 1, LOWEST + 1)
    while True:
        port = random.randint(LOWEST, top)
        if is_free(port):
            return port


def is_free(port: int) -> bool:
    with socket.socket() as probe:
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True
