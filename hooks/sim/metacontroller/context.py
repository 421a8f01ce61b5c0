"""What every controller of the emulator shares."""

from __future__ import annotations

from dataclasses import dataclass

from hooks.sim.events import EventLoop
from hooks.sim.metacontroller.cache import ObjectCache
from hooks.sim.metacontroller.failures import SyncFailure
from hooks.sim.metacontroller.resources import ResourceCatalog
from hooks.sim.metacontroller.stats import EmulatorStats, SyncErrorEvent
from hooks.sim.metacontroller.webhook import HookCaller
from hooks.sim.store import ObjectStore


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
