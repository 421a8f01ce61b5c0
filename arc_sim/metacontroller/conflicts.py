"""Write conflicts as Metacontroller meets them on a busy cluster.

`ConflictingStore` is the API as the controllers see it: every 409 Conflict their writes meet is
counted, and status updates meet one at `Conflicts.rate` as if another writer had just changed
the object (the conflict is all they see: no other write is made). The decorator draws the
same for its parent update (`Conflicts.strike`). How each write handles a conflict is the
controller's business, as in Metacontroller: the composite's status update retries with a fresh
read (client-go's RetryOnConflict), the decorator's parent update gives up until the next event
or resync (`pkg/controller/decorator/controller.go`, "ignoring update due to outdated
resourceVersion"), keeping its finalizer even after `finalized: true`. The other writer's
change would bring that event: after an injected conflict (`InjectedConflict`) the decorator
syncs the object again `OTHER_WRITE_SEEN_AFTER` later, as its informer would make it.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, cast

from arc_sim.metacontroller.stats import EmulatorStats
from arc_sim.store import Conflict, KubeObject, ObjectStore

OTHER_WRITE_SEEN_AFTER = 1.0
"""Seconds from an injected conflict to the event of the write it stands for."""


class InjectedConflict(Conflict):
    """A 409 standing for another writer's change, which is not made."""


@dataclass(frozen=True)
class Conflicts:
    rate: float = 0.0
    rng: random.Random = field(default_factory=lambda: random.Random(0))
    stats: EmulatorStats = field(default_factory=EmulatorStats)

    def strike(self, what: str) -> None:
        """Raise Conflict for `what` at `rate`."""
        if self.rate > 0 and self.rng.random() < self.rate:
            self.stats.injected_conflicts += 1
            self.stats.conflicts += 1
            raise InjectedConflict(f"{what}: the object has been modified (simulated)")


class ConflictingStore:
    """`store` for the controllers: conflicts counted, status updates conflicting at a rate,
    and every request waiting for the API client's rate limit (`throttle`)."""

    def __init__(
        self, store: ObjectStore, conflicts: Conflicts, throttle: Callable[[], None]
    ) -> None:
        self._store = store
        self._conflicts = conflicts
        self._throttle = throttle

    def update_status(self, obj: KubeObject) -> KubeObject:
        self._throttle()
        metadata = obj.get("metadata") or {}
        self._conflicts.strike(f"{obj.get('kind')} {metadata.get('name')} status")
        try:
            return self._store.update_status(obj)
        except Conflict:
            self._conflicts.stats.conflicts += 1
            raise

    def update(self, obj: KubeObject, **options: Any) -> KubeObject:
        self._throttle()
        try:
            return self._store.update(obj, **options)
        except Conflict:
            self._conflicts.stats.conflicts += 1
            raise

    def __getattr__(self, name: str) -> Any:
        attribute = getattr(self._store, name)
        if name not in THROTTLED:
            return attribute

        def throttled(*args: Any, **kwargs: Any) -> Any:
            self._throttle()
            return attribute(*args, **kwargs)

        return throttled


THROTTLED = frozenset({"get", "create", "patch_metadata", "delete", "remove_finalizer"})
"""The store's calls that are API requests of Metacontroller's client (besides the two
updates); the others stand for its informer cache."""


def conflicting(
    store: ObjectStore, conflicts: Conflicts, throttle: Callable[[], None] = lambda: None
) -> ObjectStore:
    """`store` as the controllers see it (typed as the store it stands for)."""
    return cast(ObjectStore, ConflictingStore(store, conflicts, throttle))
