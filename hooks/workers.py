"""Worker threads for the blocking part of a hook call (the GitHub adapter is synchronous).

The same job as Starlette's `run_in_threadpool`, at about half its cost per call: a call goes
to a waiting thread through one queue, and its answer comes back to the event loop through one
`call_soon_threadsafe`. Threads start on demand up to a limit, and end after a while without
work. A call whose caller was cancelled still runs to its end; its answer is dropped.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import functools
import queue
import threading
from collections.abc import Callable
from typing import Any, ParamSpec, Protocol, TypeVar

P = ParamSpec("P")
T = TypeVar("T")

DEFAULT_MAX_THREADS = 40
"""The default of Starlette's (anyio's) thread pool."""

DEFAULT_IDLE_SECONDS = 60.0


_dispatched = threading.local()


def dispatching_loop() -> asyncio.AbstractEventLoop | None:
    """The event loop that handed the current worker thread its call (None outside a call of
    `WorkerThreads`): where that call may schedule asynchronous work and wait for it."""
    loop: asyncio.AbstractEventLoop | None = getattr(_dispatched, "loop", None)
    return loop


class CallRunner(Protocol):
    runs_inline: bool
    """True when calls run on the event loop anyway (nothing is spared by trying first there)."""

    async def run(self, call: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T: ...


class InlineCalls:
    """Runs calls on the event loop itself. Only for a GitHub port that never blocks (the
    simulated world's in-process GitHub), where a thread hop would only cost time."""

    runs_inline = True

    async def run(self, call: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
        return call(*args, **kwargs)


class WorkerThreads:
    runs_inline = False

    def __init__(
        self,
        max_threads: int = DEFAULT_MAX_THREADS,
        *,
        idle_seconds: float = DEFAULT_IDLE_SECONDS,
        name: str = "hook-worker",
    ) -> None:
        if max_threads < 1:
            raise ValueError("max_threads must be at least 1")
        self._max = max_threads
        self._idle_seconds = idle_seconds
        self._name = name
        self._jobs: queue.SimpleQueue[_Job] = queue.SimpleQueue()
        self._lock = threading.Lock()
        # Threads waiting (or about to wait) for a job = idle + queued jobs promised a thread.
        self._threads = 0
        self._idle = 0  # waiting threads no queued job is promised to
        self._backlog = 0  # queued jobs promised no thread (all threads busy)
        self._started = 0

    @property
    def threads(self) -> int:
        """Threads alive now."""
        return self._threads

    async def run(self, call: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
        """`call(*args, **kwargs)` in a worker thread, in a copy of the caller's context."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[T] = loop.create_future()
        bound = functools.partial(call, *args, **kwargs)
        self._submit(_Job(loop, future, contextvars.copy_context(), bound))
        return await future

    def _submit(self, job: _Job) -> None:
        with self._lock:
            start = False
            if self._idle:
                self._idle -= 1
            elif self._threads < self._max:
                self._threads += 1
                self._started += 1
                start = True
            else:
                self._backlog += 1
            number = self._started
        self._jobs.put(job)
        if start:
            thread = threading.Thread(target=self._work, name=f"{self._name}-{number}", daemon=True)
            thread.start()

    def _work(self) -> None:
        while True:
            try:
                job = self._jobs.get(timeout=self._idle_seconds)
            except queue.Empty:
                with self._lock:
                    if self._idle:  # no queued job counts on this thread: it may end
                        self._idle -= 1
                        self._threads -= 1
                        return
                continue  # a job promised to a waiting thread is on its way
            outcome = job.run()
            del job
            # Count this thread as waiting before handing the answer over: a caller that goes
            # on with its next call finds this thread, instead of starting another one.
            with self._lock:
                if self._backlog:
                    self._backlog -= 1  # a queued job waits for a thread: this one
                else:
                    self._idle += 1
            outcome.report()
            del outcome


class _Job:
    __slots__ = ("call", "context", "future", "loop")

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        future: asyncio.Future[Any],
        context: contextvars.Context,
        call: Callable[[], Any],
    ) -> None:
        self.loop = loop
        self.future = future
        self.context = context
        self.call = call

    def run(self) -> _Outcome:
        _dispatched.loop = self.loop
        try:
            return _Outcome(self, _succeed, self.context.run(self.call))
        except BaseException as error:
            return _Outcome(self, _fail, error)
        finally:
            _dispatched.loop = None


class _Outcome:
    __slots__ = ("job", "settle", "value")

    def __init__(
        self, job: _Job, settle: Callable[[asyncio.Future[Any], Any], None], value: Any
    ) -> None:
        self.job = job
        self.settle = settle
        self.value = value

    def report(self) -> None:
        # A closed event loop refuses the answer: nobody waits for it any more.
        with contextlib.suppress(RuntimeError):
            self.job.loop.call_soon_threadsafe(self.settle, self.job.future, self.value)


def _succeed(future: asyncio.Future[Any], result: Any) -> None:
    if not future.done():
        future.set_result(result)


def _fail(future: asyncio.Future[Any], error: BaseException) -> None:
    if not future.done():
        future.set_exception(error)
