"""What every controller of the emulator shares, and how syncs run (`SyncRunner`)."""

from __future__ import annotations

from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from arc_sim.events import EventLoop
from arc_sim.metacontroller import fibers
from arc_sim.metacontroller.cache import ObjectCache
from arc_sim.metacontroller.conflicts import Conflicts
from arc_sim.metacontroller.failures import SyncFailure, Throttled
from arc_sim.metacontroller.resources import ResourceCatalog
from arc_sim.metacontroller.stats import EmulatorStats, SyncErrorEvent
from arc_sim.metacontroller.transport import Exchange
from arc_sim.metacontroller.webhook import HookCaller, PendingCall
from arc_sim.metacontroller.workqueue import WorkQueue
from arc_sim.store import ObjectStore, StoreError

K = TypeVar("K", bound=Hashable)


@dataclass(frozen=True)
class Context:
    store: ObjectStore
    cache: ObjectCache
    catalog: ResourceCatalog
    loop: EventLoop
    hooks: HookCaller
    stats: EmulatorStats
    workers: int
    sync_seconds: float
    conflicts: Conflicts = field(default_factory=Conflicts)

    def record_failure(self, controller: str, parent: str, failure: SyncFailure) -> None:
        self.stats.errors[failure.kind] += 1
        self.stats.recent_errors.append(
            SyncErrorEvent(self.loop.now, controller, parent, failure.kind, str(failure))
        )

    def attempt(
        self,
        controller: str,
        queue: WorkQueue[K],
        key: K,
        described: str,
        sync: Callable[[], None],
    ) -> None:
        """One sync, and what its outcome does to the queue: success resets the backoff, a 429
        requeues after Retry-After, a failure is recorded and retried with backoff."""
        self.stats.syncs[controller] += 1
        try:
            sync()
        except Throttled as throttled:
            queue.add_after(key, throttled.retry_after)
            return
        except StoreError as error:  # a write the API server refused outside the apply
            failure = SyncFailure("apply", str(error))
        except SyncFailure as error:
            failure = error
        else:
            queue.forget(key)
            return
        self.record_failure(controller, described, failure)
        queue.add_rate_limited(key)


@dataclass(frozen=True)
class Pause:
    """What a sync suspends with to wait `seconds` of virtual time (an API request waiting for
    the client's rate limit)."""

    seconds: float


class SyncRunner:
    """Runs syncs on fibers when hook calls take virtual time (see `webhook`), at once
    otherwise; follows each sync from hook call to hook call (or pause) until it ends."""

    def __init__(self, hooks: HookCaller, loop: EventLoop) -> None:
        self._hooks = hooks
        self._loop = loop
        self._suspended: dict[fibers.Fiber, PendingCall | Pause] = {}
        """Fibers waiting for an answer or a pause's end, and what each waits on."""

    def pause(self, seconds: float) -> None:
        """From inside a sync: wait `seconds` of virtual time. Outside a sync (or when syncs
        take no time) the request goes at once."""
        fiber = fibers.current()
        if fiber is not None and self._hooks.waits and seconds > 0:
            fiber.suspend(Pause(seconds))

    def __call__(self, work: Callable[[], None], finished: Callable[[], None]) -> None:
        if not self._hooks.waits:
            try:
                work()
            finally:
                finished()
            return
        fiber = fibers.take()
        self._follow(fiber, lambda: fiber.start(work), finished)

    def _follow(
        self, fiber: fibers.Fiber, switch: Callable[[], Any], finished: Callable[[], None]
    ) -> None:
        self._suspended.pop(fiber, None)
        try:
            outcome = switch()
        except BaseException:
            finished()
            raise
        if outcome is fibers.DONE:
            finished()
            return
        if isinstance(outcome, Pause):
            self._suspended[fiber] = outcome

            def paused() -> None:
                if self._suspended.get(fiber) is outcome:
                    self._follow(fiber, lambda: fiber.resume(None), finished)

            self._loop.call_later(outcome.seconds, paused, "client rate limit")
            return
        assert isinstance(outcome, PendingCall)
        self._suspended[fiber] = outcome

        def answered(exchange: Exchange) -> None:
            if self._suspended.get(fiber) is not outcome:
                return  # cancelled meanwhile: nobody waits for this answer
            self._follow(fiber, lambda: fiber.resume(exchange), finished)

        outcome.on_answer = answered

    @property
    def in_flight(self) -> int:
        """Syncs waiting for a hook answer or for a pause to end."""
        return len(self._suspended)

    def cancel_all(self) -> None:
        """Unwind every sync still waiting (its world is gone), freeing its thread."""
        for fiber in list(self._suspended):
            self._suspended.pop(fiber, None)
            fiber.resume(error=fibers.FiberCancelled())
