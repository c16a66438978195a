"""Loading code with the cyclic garbage collector paused.

Importing a service's code creates hundreds of thousands of objects and next to no garbage,
yet the collector walks them again and again meanwhile, full collections included: about a
fifth of a service's import time. So those imports run with it paused; what they created is
then frozen (`gc.freeze`: left out of every later collection, since modules live as long as
the process, which also keeps idle collections short) and the collector resumes. Only imports
go in here: work that makes garbage runs with the collector on.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def collector_paused() -> Iterator[None]:
    """Run the block with the collector off, then freeze what exists and turn it back on."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        if enabled:
            gc.enable()
