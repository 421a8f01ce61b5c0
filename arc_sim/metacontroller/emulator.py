"""Metacontroller in the simulated world: CompositeControllers and DecoratorControllers read
from manifests, driven by the object store's events on the virtual-time event loop."""

from __future__ import annotations

import weakref
from collections import Counter
from collections.abc import Callable, Iterable
from datetime import datetime, timedelta
from functools import partial
from pathlib import Path

import yaml

from arc_sim.events import EventLoop
from arc_sim.metacontroller.cache import ObjectCache
from arc_sim.metacontroller.client_limit import ClientRateLimit
from arc_sim.metacontroller.composite import CompositeController
from arc_sim.metacontroller.conflicts import Conflicts, conflicting
from arc_sim.metacontroller.context import Context, SyncRunner
from arc_sim.metacontroller.decorator import DecoratorController
from arc_sim.metacontroller.realism import Realism, Rngs
from arc_sim.metacontroller.resources import ResourceCatalog
from arc_sim.metacontroller.spec import (
    CompositeSpec,
    InvalidController,
    read_controller,
    with_credentials,
)
from arc_sim.metacontroller.stats import EmulatorStats
from arc_sim.metacontroller.transport import HookTransport
from arc_sim.metacontroller.webhook import HookCaller
from arc_sim.store import EventType, KubeObject, ObjectStore

Controller = CompositeController | DecoratorController

CONTROLLER_KINDS = ("CompositeController", "DecoratorController")
DEFAULT_SYNC_SECONDS = 0.01
DEFAULT_RELIST_SECONDS = 30 * 60.0
"""Metacontroller's --cache-flush-interval: every parent is enqueued again this often."""


class MetacontrollerEmulator:
    """Load controllers with `load_manifests` or `load_directory`, then `start()`.

    `realism` says how unfriendly the world is (workers, hook latency and timeout, informer
    lag, write conflicts; see `realism.Realism`); without it, the friendly world of
    `Realism.friendly(workers=workers)`. `sync_seconds` is how long a worker stays busy with a
    sync besides its hook calls (the API round trips).
    """

    def __init__(
        self,
        store: ObjectStore,
        loop: EventLoop,
        transport: HookTransport,
        *,
        workers: int = 5,
        sync_seconds: float = DEFAULT_SYNC_SECONDS,
        relist_seconds: float | None = DEFAULT_RELIST_SECONDS,
        realism: Realism | None = None,
    ) -> None:
        self.store = store
        self.loop = loop
        self.transport = transport
        self.realism = realism if realism is not None else Realism.friendly(workers=workers)
        self.catalog = ResourceCatalog()
        self.cache = ObjectCache()
        self.stats = EmulatorStats()
        self.warnings: list[str] = []
        """Controllers that were not started, and why (Metacontroller's Warning events)."""
        self.controllers: list[Controller] = []
        rngs = Rngs(self.realism.seed)
        hooks = HookCaller(transport, self.stats, loop.clock, loop=loop, realism=self.realism)
        conflicts = Conflicts(self.realism.conflict_rate, rngs.conflicts, self.stats)
        self.runner = SyncRunner(hooks, loop)
        client_limit = ClientRateLimit(self.realism.client_qps, self.realism.client_burst)

        def throttle() -> None:
            wait = client_limit.reserve(loop.clock.now().timestamp())
            if wait > 0:
                self.stats.client_waits += 1
                self.stats.client_wait_seconds += wait
                self.runner.pause(wait)

        self._context = Context(
            store=conflicting(store, conflicts, throttle),
            cache=self.cache,
            catalog=self.catalog,
            loop=loop,
            hooks=hooks,
            stats=self.stats,
            workers=self.realism.workers,
            sync_seconds=sync_seconds,
            conflicts=conflicts,
        )
        # Syncs still waiting for an answer when the emulator is dropped free their threads.
        weakref.finalize(self, self.runner.cancel_all)
        self._lag_rng = rngs.lag
        self._lag = self.realism.informer_lag
        self._delivered_at: dict[str, datetime] = {}
        """Kind -> when its watch last delivered (events of one watch stay in order)."""
        self._relist_seconds = relist_seconds
        self._by_kind: dict[str, list[Controller]] = {}
        self._customizing: list[Controller] = []
        self._started = False

    # --- counters

    @property
    def hook_calls(self) -> Counter[str]:
        return self.stats.hook_calls

    @property
    def errors(self) -> Counter[str]:
        return self.stats.errors

    @property
    def throttled(self) -> int:
        return self.stats.throttled

    def summary(self) -> dict[str, object]:
        return self.stats.summary()

    def controller(self, name: str) -> Controller:
        for controller in self.controllers:
            if controller.name == name:
                return controller
        raise KeyError(name)

    # --- loading

    def load_directory(self, path: str | Path) -> None:
        """Every YAML document under `path` (a directory, searched recursively, or one file);
        kinds other than CRDs and controllers are skipped."""
        root = Path(path)
        files = [root] if root.is_file() else sorted(root.rglob("*"))
        documents: list[KubeObject] = []
        for file in files:
            if file.suffix in (".yaml", ".yml") and file.is_file():
                with file.open(encoding="utf-8") as stream:
                    documents.extend(d for d in yaml.safe_load_all(stream) if isinstance(d, dict))
        self.load_manifests(documents)

    def load_manifests(self, objs: Iterable[KubeObject]) -> None:
        """CustomResourceDefinitions (served from now on, with their status subresource) and
        CompositeControllers / DecoratorControllers; other kinds are ignored."""
        documents = list(objs)
        for obj in documents:
            if obj.get("kind") == "CustomResourceDefinition":
                for added in self.catalog.add_crd(obj):
                    if self.catalog.is_custom_with_status(added):
                        self.store.enable_status_subresource(added.kind)
        for obj in documents:
            if obj.get("kind") in CONTROLLER_KINDS:
                self._add(obj)

    def _add(self, obj: KubeObject) -> None:
        try:
            spec = with_credentials(read_controller(obj, self.catalog), self.store)
        except InvalidController as error:
            self.warnings.append(str(error))
            return
        controller: Controller
        if isinstance(spec, CompositeSpec):
            if not self.catalog.is_custom_with_status(spec.parent):
                # Without the status subresource, writing status would bump generation and
                # loop; Metacontroller refuses such a parent.
                self.warnings.append(
                    f"CompositeController {spec.name}: the parent {spec.parent.resource} must be "
                    "a custom resource with the status subresource"
                )
                return
            controller = CompositeController(spec, self._context)
        else:
            controller = DecoratorController(spec, self._context)
        controller.queue.use_runner(self.runner)
        self.controllers.append(controller)
        for kind in controller.kinds():
            self._by_kind.setdefault(kind, []).append(controller)
        if spec.hooks.customize is not None:
            self._customizing.append(controller)
        if self._started:
            self._start(controller)

    # --- running

    def start(self) -> None:
        """Fill the cache from the store, watch it, and sync every parent once."""
        if self._started:
            return
        self._started = True
        for kind in sorted(self.store.kinds()):
            for obj in self.store.list_objects(kind):
                self.cache.observe("ADDED", obj)
        self.store.watch(self._observe)
        for controller in self.controllers:
            self._start(controller)
        if self._relist_seconds:
            self._every(self._relist_seconds, self._relist, "metacontroller relist")

    def _start(self, controller: Controller) -> None:
        controller.enqueue_all()
        period = controller.spec.resync_period
        if period:
            self._every(period, controller.enqueue_all, f"{controller.name} resync")

    def _relist(self) -> None:
        for controller in self.controllers:
            controller.enqueue_all()

    def _every(self, seconds: float, action: Callable[[], None], label: str) -> None:
        def tick() -> None:
            action()
            self.loop.call_later(seconds, tick, label)

        self.loop.call_later(seconds, tick, label)

    def _observe(self, event: EventType, obj: KubeObject) -> None:
        """A store event, seen by the informer of its kind `informer_lag` later."""
        if self._lag.never:
            self._deliver(event, obj)
            return
        kind = obj.get("kind", "")
        now = self.loop.now
        when = now + timedelta(seconds=self._lag.draw(self._lag_rng))
        last = self._delivered_at.get(kind)
        if last is not None and last > when:
            when = last
        self._delivered_at[kind] = when
        lag = (when - now).total_seconds()
        if lag > self.stats.max_informer_lag:
            self.stats.max_informer_lag = lag
        self.loop.call_at(when, partial(self._deliver, event, obj), "informer")

    def _deliver(self, event: EventType, obj: KubeObject) -> None:
        self.stats.events_observed += 1
        previous = self.cache.observe(event, obj)
        kind = obj.get("kind", "")
        interested = self._by_kind.get(kind, [])
        extra = [c for c in self._customizing if c.related.watches(kind) and c not in interested]
        for controller in [*interested, *extra]:
            controller.observe(event, obj, previous)
