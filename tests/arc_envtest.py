"""ARC's envtest setup, as its Ginkgo specs use it, over the simulated world: a fresh namespace
watched by the controllers, and Gomega's `Eventually` and `Consistently` polled on a virtual
clock at ARC's intervals up to ARC's timeouts. Ported from actions/actions-runner-controller
(Apache-2.0), with attribution."""

from __future__ import annotations

from collections.abc import Callable

from arc_sim.scenario import ClusterKnobs, Scenario
from arc_sim.world import World


class Envtest:
    """ARC's `SetupTest` / `SetupDeploymentTest`: the controllers watching `namespace` only
    (ARC's manager caches the test's namespace only)."""

    def __init__(self, name: str, namespace: str) -> None:
        scenario = Scenario(
            name=name,
            teardown=False,
            settings={"WATCH_NAMESPACE": namespace},
            cluster=ClusterKnobs(schedule_delay=0.5, start_delay=1.0, registration_delay=1.0),
        )
        self.namespace = namespace
        self.world = World(scenario)
        self.world.begin()

    @property
    def elapsed(self) -> float:
        return (self.world.clock.now() - self.world.scenario_start).total_seconds()

    def wait(self, seconds: float) -> None:
        self.world.run_to(self.elapsed + seconds)

    def describe(self) -> str:
        """What a failure's message adds about the namespace."""
        return ""

    # Gomega's Eventually(f, timeout, interval).Should(BeEquivalentTo(want)); f's error is None.
    def eventually(
        self, actual: Callable[[], object], want: object, timeout: float, interval: float
    ) -> None:
        deadline = self.elapsed + timeout
        while (got := actual()) != want:
            assert self.elapsed < deadline, (
                f"got {got!r} after {timeout}s, want {want!r}; {self.describe()}"
            )
            self.wait(interval)

    # Gomega's Consistently(f, duration, interval).Should(matcher).
    def consistently(
        self,
        actual: Callable[[], object],
        check: Callable[[object], bool],
        duration: float,
        interval: float,
    ) -> None:
        deadline = self.elapsed + duration
        while True:
            got = actual()
            assert check(got), f"got {got!r} at {self.elapsed}s"
            if self.elapsed >= deadline:
                return
            self.wait(interval)
