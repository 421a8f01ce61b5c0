"""`arc-hooks listen` replicas in the simulated world, on virtual time.

Each replica is what the process runs (`hooks.listener`): a fleet of scale-set listeners over
the real client, reaching the simulated broker through an in-process transport, and writing to
the object store through the same Kubernetes sink. Only the driving differs: a step is a timer
on the world's loop, and a poll that comes back empty (the service answers at once: time is
virtual) is tried again `poll_seconds` later, where a real long poll would have waited for the
next message.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from arc_sim.events import EventLoop, Timer
from hooks.clock import Clock
from hooks.github.port import Scope
from hooks.github.scaleset.client import ScaleSetClient
from hooks.listener.fleet import ListenerFleet
from hooks.listener.sink import KubeListenerSink
from hooks.listener.worker import ScaleSetListener

MIN_STEP_SECONDS = 0.05


@dataclass(frozen=True)
class ListenerTiming:
    poll_seconds: float = 2.0
    refresh_seconds: float = 30.0


class SimulatedListener:
    """One replica: started, stopped (cleanly, or as a crash), started again."""

    def __init__(
        self,
        index: int,
        loop: EventLoop,
        clock: Clock,
        client_for: Callable[[Scope], ScaleSetClient],
        sink: KubeListenerSink,
        timing: ListenerTiming,
    ) -> None:
        self.index = index
        self.loop = loop
        self.clock = clock
        self.client_for = client_for
        self.sink = sink
        self.timing = timing
        self.generation = 0
        self.fleet: ListenerFleet | None = None
        self.retired: list[ScaleSetListener] = []
        self._timers: list[Timer] = []

    @property
    def running(self) -> bool:
        return self.fleet is not None

    @property
    def listeners(self) -> list[ScaleSetListener]:
        """Every listener this replica ran, the stopped ones included (for their counts)."""
        current = list(self.fleet.listeners.values()) if self.fleet else []
        return [*self.retired, *current]

    def start(self) -> None:
        if self.fleet is not None:
            return
        self.generation += 1
        self.fleet = ListenerFleet(
            self.client_for,
            self.sink,
            owner=f"arc-hooks-listener-{self.index}-{self.generation}",
            clock=self.clock,
        )
        self._refresh(self.fleet)

    def stop(self, *, crash: bool = False) -> None:
        """A clean stop deletes the sessions (SIGTERM); a crash leaves them to time out."""
        fleet, self.fleet = self.fleet, None
        for timer in self._timers:
            timer.cancel()
        self._timers.clear()
        if fleet is None:
            return
        for listener in fleet.listeners.values():
            if crash:
                listener.forget_session()
            else:
                listener.close()
            self.retired.append(listener)
        fleet.listeners.clear()

    def _refresh(self, fleet: ListenerFleet) -> None:
        if fleet is not self.fleet:
            return
        started, closed = fleet.reconcile(self.sink.targets())
        self.retired += closed
        for listener in started:
            self._schedule(fleet, listener, 0.0)
        now = self.clock.now()
        self._timers = [t for t in self._timers if not t.cancelled and t.when > now]
        self._timers.append(
            self.loop.call_later(
                self.timing.refresh_seconds, lambda: self._refresh(fleet), "listener refresh"
            )
        )

    def _schedule(self, fleet: ListenerFleet, listener: ScaleSetListener, after: float) -> None:
        def step() -> None:
            if fleet is not self.fleet or fleet.listeners.get(listener.target.key) is not listener:
                return
            next_ = listener.step()
            wait = self.timing.poll_seconds if next_.polled_empty else next_.after
            self._schedule(fleet, listener, wait)

        self._timers.append(
            self.loop.call_later(max(after, MIN_STEP_SECONDS), step, "listener step")
        )
