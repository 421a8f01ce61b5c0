"""A controller's work queue, as client-go's rate-limited workqueue behaves, in virtual time.

A key is never handed to two workers at once; adding a key that is waiting is a no-op, and
adding one that is being processed makes it run again once that is done. Delayed adds keep the
earliest time. Failures back off per key (5 ms doubling to 1000 s) and overall (10 per second,
bursts of 100); success forgets the key's failures.

A sync starts at the instant a worker takes its key. By default it runs to its end at once;
with a runner (`use_runner`) it may wait in virtual time for its hook calls, and the worker
stays busy until it ends. Either way the worker then stays busy `sync_seconds` more, the API
round trips besides the hook call.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Hashable
from datetime import timedelta
from functools import partial
from typing import Generic, TypeVar

from arc_sim.events import EventLoop, Timer

K = TypeVar("K", bound=Hashable)

SyncRun = Callable[[Callable[[], None], Callable[[], None]], None]
"""Runs a sync (first argument), then calls the second when the sync has ended."""


def run_at_once(work: Callable[[], None], finished: Callable[[], None]) -> None:
    try:
        work()
    finally:
        finished()


BASE_BACKOFF_SECONDS = 0.005
MAX_BACKOFF_SECONDS = 1000.0
OVERALL_RATE_PER_SECOND = 10.0
OVERALL_BURST = 100


class FailureRateLimiter(Generic[K]):
    """The larger of a per-key exponential backoff and an overall token bucket."""

    def __init__(self, loop: EventLoop) -> None:
        self._loop = loop
        self._failures: dict[K, int] = {}
        self._tokens = float(OVERALL_BURST)
        self._refilled = loop.now

    def when(self, key: K) -> float:
        failures = self._failures.get(key, 0)
        self._failures[key] = failures + 1
        backoff = min(BASE_BACKOFF_SECONDS * 2.0**failures, MAX_BACKOFF_SECONDS)
        return max(backoff, self._reserve())

    def forget(self, key: K) -> None:
        self._failures.pop(key, None)

    def failures(self, key: K) -> int:
        return self._failures.get(key, 0)

    def _reserve(self) -> float:
        now = self._loop.now
        elapsed = (now - self._refilled).total_seconds()
        self._refilled = now
        self._tokens = min(self._tokens + elapsed * OVERALL_RATE_PER_SECOND, OVERALL_BURST)
        self._tokens -= 1.0
        return max(-self._tokens / OVERALL_RATE_PER_SECOND, 0.0)


class WorkQueue(Generic[K]):
    def __init__(
        self,
        loop: EventLoop,
        process: Callable[[K], None],
        *,
        workers: int,
        sync_seconds: float,
        name: str = "",
    ) -> None:
        if workers < 1:
            raise ValueError("a work queue needs at least one worker")
        self._loop = loop
        self._process = process
        self._idle_workers = workers
        self._sync_seconds = sync_seconds
        self._name = name
        self._queue: deque[K] = deque()
        self._dirty: set[K] = set()
        self._processing: set[K] = set()
        self._waiting: dict[K, Timer] = {}
        self._dispatch_scheduled = False
        self._run: SyncRun = run_at_once
        self.rate_limiter: FailureRateLimiter[K] = FailureRateLimiter(loop)

    def use_runner(self, run: SyncRun) -> None:
        """Run syncs with `run` (e.g. on fibers, so that they can wait in virtual time)."""
        self._run = run

    def __len__(self) -> int:
        return len(self._queue)

    def add(self, key: K) -> None:
        if key in self._dirty:
            return
        self._dirty.add(key)
        if key in self._processing:
            return
        self._queue.append(key)
        self._schedule_dispatch()

    def add_after(self, key: K, seconds: float) -> None:
        if seconds <= 0:
            self.add(key)
            return
        when = self._loop.now + timedelta(seconds=seconds)
        pending = self._waiting.get(key)
        if pending is not None:
            if pending.when <= when:
                return
            pending.cancel()
        self._waiting[key] = self._loop.call_at(
            when, lambda: self._ready(key), label=f"{self._name} requeue"
        )

    def add_rate_limited(self, key: K) -> None:
        self.add_after(key, self.rate_limiter.when(key))

    def forget(self, key: K) -> None:
        self.rate_limiter.forget(key)

    def is_processing(self, key: K) -> bool:
        return key in self._processing

    def _ready(self, key: K) -> None:
        self._waiting.pop(key, None)
        self.add(key)

    def _schedule_dispatch(self) -> None:
        if not self._dispatch_scheduled and self._idle_workers:
            self._dispatch_scheduled = True
            self._loop.call_soon(self._dispatch, label=f"{self._name} dispatch")

    def _dispatch(self) -> None:
        self._dispatch_scheduled = False
        while self._queue and self._idle_workers:
            key = self._queue.popleft()
            self._dirty.discard(key)
            self._processing.add(key)
            self._idle_workers -= 1
            self._run(partial(self._process, key), partial(self._finished, key))

    def _finished(self, key: K) -> None:
        if self._sync_seconds > 0:
            self._loop.call_later(
                self._sync_seconds, partial(self._done, key), f"{self._name} done"
            )
        else:
            self._done(key)

    def _done(self, key: K) -> None:
        self._processing.discard(key)
        self._idle_workers += 1
        if key in self._dirty:
            self._queue.append(key)
        if self._queue:
            self._schedule_dispatch()
