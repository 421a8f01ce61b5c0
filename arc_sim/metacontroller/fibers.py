"""Syncs that wait in virtual time: each sync runs on a thread of its own that hands control
back and forth with the event loop's thread, so exactly one of them runs at any moment.

A sync that makes a hook call suspends (`suspend`) until the event loop resumes it with the
answer, virtual time later; the syncs of other workers go on meanwhile. Because control passes
strictly from one thread to the other, a run stays as repeatable as straight-line code. Threads
are kept in a process-wide pool and reused.
"""

from __future__ import annotations

import _thread
import sys
import threading
from collections.abc import Callable
from typing import Any


class FiberCancelled(BaseException):
    """Raised inside a suspended sync whose world is gone, to unwind it."""


class _Done:
    __slots__ = ()


class _Crashed:
    __slots__ = ("error",)

    def __init__(self, error: BaseException) -> None:
        self.error = error


_DONE = _Done()
_local = threading.local()


class Fiber:
    def __init__(self) -> None:
        # Plain locks used as binary semaphores (held = nothing to take): cheaper than
        # threading.Semaphore, and a plain lock may be released by another thread.
        self._go = _thread.allocate_lock()
        self._go.acquire()
        self._back = _thread.allocate_lock()
        self._back.acquire()
        self._work: Callable[[], None] | None = None
        self._sent: tuple[bool, Any] = (True, None)
        self._yielded: Any = None
        self._thread = threading.Thread(
            target=self._main, name="metacontroller-worker", daemon=True
        )
        self._thread.start()

    # --- the loop's side

    def start(self, work: Callable[[], None]) -> Any:
        """Run `work` until it suspends (returns what it suspended with) or ends (`DONE`)."""
        self._work = work
        return self._switch()

    def resume(self, value: Any = None, *, error: BaseException | None = None) -> Any:
        self._sent = (False, error) if error is not None else (True, value)
        return self._switch()

    def _switch(self) -> Any:
        self._go.release()
        self._back.acquire()
        outcome = self._yielded
        self._yielded = None
        if isinstance(outcome, _Crashed):
            _POOL.release(self)
            raise outcome.error
        if outcome is _DONE:
            _POOL.release(self)
        return outcome

    # --- the sync's side

    def _main(self) -> None:
        while True:
            self._go.acquire()
            work, self._work = self._work, None
            _local.fiber = self
            try:
                assert work is not None
                work()
            except FiberCancelled:
                self._yielded = _DONE
            except BaseException as error:  # handed to the loop's thread
                self._yielded = _Crashed(error)
            else:
                self._yielded = _DONE
            finally:
                _local.fiber = None
            self._back.release()

    def suspend(self, request: Any) -> Any:
        """From inside the sync: hand `request` to the loop and wait to be resumed."""
        self._yielded = request
        self._back.release()
        self._go.acquire()
        ok, value = self._sent
        self._sent = (True, None)
        if not ok:
            raise value
        return value


DONE = _DONE


def current() -> Fiber | None:
    """The fiber this code runs on, or None on any other thread."""
    fiber: Fiber | None = getattr(_local, "fiber", None)
    return fiber


class _Pool:
    def __init__(self) -> None:
        self._idle: list[Fiber] = []
        self._lock = threading.Lock()

    def take(self) -> Fiber:
        with self._lock:
            if self._idle:
                return self._idle.pop()
        return Fiber()

    def release(self, fiber: Fiber) -> None:
        with self._lock:
            self._idle.append(fiber)


_POOL = _Pool()


def take() -> Fiber:
    """An idle fiber from the pool (it goes back when its work ends)."""
    return _POOL.take()


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
