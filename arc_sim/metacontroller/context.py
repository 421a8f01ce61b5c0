"""What every controller of the emulator shares."""

from __future__ import annotations

from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import TypeVar

from arc_sim.events import EventLoop
from arc_sim.metacontroller.cache import ObjectCache
from arc_sim.metacontroller.failures import SyncFailure, Throttled
from arc_sim.metacontroller.resources import ResourceCatalog
from arc_sim.metacontroller.stats import EmulatorStats, SyncErrorEvent
from arc_sim.metacontroller.webhook import HookCaller
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
