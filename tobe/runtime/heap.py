"""The garbage collector of a server process: its startup heap kept out of the way, and its
young generation collected less often.

Everything imported and built before a server is ready (modules, ORM mappings, protobuf
descriptors, settings, the wired components) lives as long as the process. Left in the
collector's generations, every full collection walks all of it again: on a busy Mind a pause
of a few hundred milliseconds, felt by every turn in flight. `gc.freeze` moves it to the
permanent generation once it is built, so a full collection walks only what came after.

A busy server allocates thousands of container objects per request (protobuf messages, rows,
views), nearly all freed by reference counting. At Python's default threshold (a young
collection every 700 more allocations than deallocations) it collected dozens of times a
second, and every tenth of those collections promoted survivors toward another full
collection. Only garbage in reference cycles waits for the collector, so collecting the young
generation every `YOUNG_THRESHOLD` instead costs little memory.
"""

from __future__ import annotations

import gc

YOUNG_THRESHOLD = 20_000


def settle_heap() -> None:
    """Collect the garbage of startup, freeze what is left, and collect the young generation
    less often from now on (see the module docstring)."""
    gc.collect()
    gc.freeze()
    _, middle, old = gc.get_threshold()
    gc.set_threshold(YOUNG_THRESHOLD, middle, old)
