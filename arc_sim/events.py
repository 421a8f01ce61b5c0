"""Virtual time: a seeded discrete-event loop that drives the whole simulated world.

Events run in (time, sequence) order, so the same scenario and seed always give the same run.
Nothing here reads the wall clock; `ManualClock` moves only when the loop reaches an event.
"""

from __future__ import annotations

import heapq
import itertools
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from hooks.clock import ManualClock


@dataclass(order=True)
class Timer:
    when: datetime
    sequence: int
    action: Callable[[], None] = field(compare=False)
    label: str = field(default="", compare=False)
    cancelled: bool = field(default=False, compare=False)

    def cancel(self) -> None:
        self.cancelled = True


class EventLoop:
    def __init__(self, clock: ManualClock, seed: int = 1) -> None:
        self.clock = clock
        self.rng = random.Random(seed)
        # Heap entries are (when, sequence, timer): tuple comparison is cheaper than Timer's.
        self._queue: list[tuple[datetime, int, Timer]] = []
        self._sequence = itertools.count()
        self.processed = 0

    @property
    def now(self) -> datetime:
        return self.clock.now()

    def call_at(self, when: datetime, action: Callable[[], None], label: str = "") -> Timer:
        timer = Timer(max(when, self.now), next(self._sequence), action, label)
        heapq.heappush(self._queue, (timer.when, timer.sequence, timer))
        return timer

    def call_later(self, seconds: float, action: Callable[[], None], label: str = "") -> Timer:
        return self.call_at(self.now + timedelta(seconds=max(seconds, 0.0)), action, label)

    def call_soon(self, action: Callable[[], None], label: str = "") -> Timer:
        return self.call_at(self.now, action, label)

    def next_time(self) -> datetime | None:
        self._drop_cancelled()
        return self._queue[0][0] if self._queue else None

    def run_until(self, when: datetime) -> None:
        """Run every event due at or before `when`, then leave the clock at `when`."""
        while True:
            self._drop_cancelled()
            if not self._queue or self._queue[0][0] > when:
                break
            _, _, timer = heapq.heappop(self._queue)
            self.clock.set(timer.when)
            self.processed += 1
            timer.action()
        if when > self.now:
            self.clock.set(when)

    def run_for(self, seconds: float) -> None:
        self.run_until(self.now + timedelta(seconds=seconds))

    def pending(self) -> int:
        return sum(1 for _, _, timer in self._queue if not timer.cancelled)

    def _drop_cancelled(self) -> None:
        while self._queue and self._queue[0][2].cancelled:
            heapq.heappop(self._queue)
