"""Python's cyclic garbage collector, tuned while the simulated world runs.

The world decodes and encodes every hook call's JSON in this process, so it allocates objects
by the hundred thousand per virtual second, while its store and caches hold hundreds of
thousands more for the whole run. With CPython's default thresholds (a young collection every
700 net allocations) each of those collections, and the full ones they lead to, walks objects
that stay alive anyway: at 1,000 runners that was an eighth to a third of the wall time. The
objects the world makes are nearly all acyclic JSON (dicts, lists, strings), freed by reference
counting the moment they are dropped, so collecting rarely costs little memory.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

RARE_COLLECTIONS = (50_000, 20, 100)
"""Young collections every 50,000 net allocations, older ones as rarely in proportion."""


@contextmanager
def collecting_rarely() -> Iterator[None]:
    """Run the block with `RARE_COLLECTIONS`, then restore the thresholds it found."""
    previous = gc.get_threshold()
    gc.set_threshold(*RARE_COLLECTIONS)
    try:
        yield
    finally:
        gc.set_threshold(*previous)
