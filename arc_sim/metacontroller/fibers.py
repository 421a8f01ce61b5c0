"""Syncs that wait in virtual time: each sync runs on a greenlet of its own that hands control
back and forth with the event loop, so exactly one of them runs at any moment.

A sync that makes a hook call suspends (`suspend`) until the event loop resumes it with the
answer, virtual time later; the syncs of other workers go on meanwhile. Because control passes
explicitly from one to the other, a run stays as repeatable as straight-line code. Greenlets
switch on one thread in about a microsecond; threads handing a lock to each other cost tens of
microseconds, more when the woken thread is on another CPU.
"""

from __future__ import annotations

import _thread
import sys
import threading
from collections.abc import Callable
from typing import Any

from greenlet import getcurrent, greenlet


class FiberCancelled(BaseException):
    """Raised inside a suspended sync whose world is gone, to unwind it."""


class _Done:
    __slots__ = ()


class _Crashed:
    __slots__ = ("error",)

    def __init__(self, error: BaseException) -> None:
        self.error = error


_DONE = _Done()


class _Strand(greenlet):
    """The greenlet of one fiber, which `current` finds it by."""

    fiber: Fiber


class Fiber:
    """One sync at a time, run until it suspends or ends; the loop's side resumes it."""

    __slots__ = ("__weakref__", "_strand")

    def __init__(self) -> None:
        self._strand: _Strand | None = None

    # --- the loop's side

    def start(self, work: Callable[[], None]) -> Any:
        """Run `work` until it suspends (returns what it suspended with) or ends (`DONE`)."""

        def main() -> object:
            try:
                work()
            except FiberCancelled:
                return _DONE
            except BaseException as error:  # handed to the loop's side
                return _Crashed(error)
            return _DONE

        strand = self._strand = _Strand(main)
        strand.fiber = self
        return self._outcome(strand.switch())

    def resume(self, value: Any = None, *, error: BaseException | None = None) -> Any:
        strand = self._strand
        assert strand is not None
        return self._outcome(strand.throw(error) if error is not None else strand.switch(value))

    def _outcome(self, outcome: Any) -> Any:
        if isinstance(outcome, _Crashed):
            self._strand = None
            raise outcome.error
        if outcome is _DONE:
            self._strand = None
        return outcome

    # --- the sync's side

    def suspend(self, request: Any) -> Any:
        """From inside the sync: hand `request` to the loop and wait to be resumed (an error
        given to `resume` is raised here)."""
        strand = self._strand
        assert strand is not None and strand.parent is not None
        return strand.parent.switch(request)


DONE = _DONE


def current() -> Fiber | None:
    """The fiber this code runs on, or None on the loop's side or any other thread."""
    strand = getcurrent()
    return strand.fiber if isinstance(strand, _Strand) else None


def take() -> Fiber:
    """A fiber for one sync."""
    return Fiber()


class _Hand:
    """A pooled thread that runs one job at a time for a `crew`."""

    def __init__(self) -> None:
        self._go = _thread.allocate_lock()
        self._go.acquire()
        self.job: Callable[[], None] | None = None
        self.finished: Callable[[], None] | None = None
        threading.Thread(target=self._main, name="hook-call", daemon=True).start()

    def start(self) -> None:
        self._go.release()

    def _main(self) -> None:
        while True:
            self._go.acquire()
            job, finished = self.job, self.finished
            self.job = self.finished = None
            assert job is not None and finished is not None
            job()  # jobs catch their own errors
            _HANDS.append(self)
            finished()


_HANDS: list[_Hand] = []
_HANDS_LOCK = threading.Lock()

SWITCH_INTERVAL_SECONDS = 0.0002
"""While a crew works, threads take turns this often (Python's default is 5 ms): handlers of
overlapping calls interleave within a call, not only at its blocking points."""


def crew(jobs: list[Callable[[], None]]) -> None:
    """Run `jobs` at once, each on a thread of its own, and return when all have ended."""
    if not jobs:
        return
    done = _thread.allocate_lock()
    done.acquire()
    left = [len(jobs)]
    count_lock = _thread.allocate_lock()

    def finished() -> None:
        with count_lock:
            left[0] -= 1
            last = left[0] == 0
        if last:
            done.release()

    hands: list[_Hand] = []
    with _HANDS_LOCK:
        while _HANDS and len(hands) < len(jobs):
            hands.append(_HANDS.pop())
    while len(hands) < len(jobs):
        hands.append(_Hand())
    interval = sys.getswitchinterval()
    sys.setswitchinterval(SWITCH_INTERVAL_SECONDS)
    try:
        for hand, job in zip(hands, jobs, strict=True):
            hand.job, hand.finished = job, finished
            hand.start()
        done.acquire()
    finally:
        sys.setswitchinterval(interval)
