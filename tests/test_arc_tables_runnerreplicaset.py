"""Ported from actions/actions-runner-controller (Apache-2.0), with attribution

ARC's tests of its RunnerReplicaSet controller, at revision 2ee6b3b8 of
controllers/actions.summerwind.net/runnerreplicaset_controller_test.go: the Ginkgo specs of
`Context("Inside of a new namespace")` / `Describe("RunnerReplicaSet")`, its three `It` blocks.

ARC runs its RunnerReplicaSet reconciler on envtest (with its fake GitHub, `fake.RunnersList`,
kept in sync with the Runners by `getRunnerCount`) and polls with Gomega's `Eventually` and
`Consistently`; here the simulated world (`arc_sim.world.World`: Metacontroller running the
shipped manifests against the hook server, a kubelet, runner agents and a fake GitHub) runs on a
virtual clock, polled at ARC's intervals up to ARC's timeouts. `getRunnerCount` counts the
Runners of the test's namespace labelled foo=bar, as ARC's does.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from arc_sim.scenario import ClusterKnobs, Scenario
from arc_sim.world import World

Json = dict[str, Any]

API = "actions.summerwind.dev/v1alpha1"
TEST_NAMESPACE = "testns-arcrs"  # ARC: "testns-" + randStringRunes(5), one per It
NAME = "example-runnerreplicaset"


class Envtest:
    """ARC's `SetupTest`: a fresh namespace and the controllers, on a virtual clock."""

    def __init__(self) -> None:
        scenario = Scenario(
            name="arc-runnerreplicaset-test",
            teardown=False,
            # ARC's manager caches the test's namespace only.
            settings={"WATCH_NAMESPACE": TEST_NAMESPACE},
            cluster=ClusterKnobs(schedule_delay=0.5, start_delay=1.0, registration_delay=1.0),
        )
        self.world = World(scenario)
        self.world.begin()

    @property
    def elapsed(self) -> float:
        return (self.world.clock.now() - self.world.scenario_start).total_seconds()

    def wait(self, seconds: float) -> None:
        self.world.run_to(self.elapsed + seconds)

    def get_runner_count(self) -> int:
        """ARC's `getRunnerCount`: the Runners of the namespace matching foo=bar."""
        selector = {"matchLabels": {"foo": "bar"}}
        return len(self.world.store.list_objects("Runner", TEST_NAMESPACE, selector))

    # Gomega's Eventually(f, timeout, interval).Should(BeEquivalentTo(want)).
    def eventually(
        self, actual: Callable[[], int], want: int, timeout: float, interval: float
    ) -> None:
        deadline = self.elapsed + timeout
        while (got := actual()) != want:
            assert self.elapsed < deadline, f"got {got} after {timeout}s, want {want}"
            self.wait(interval)

    # Gomega's Consistently(f, duration, interval).Should(BeEquivalentTo(want)).
    def consistently(
        self, actual: Callable[[], int], want: int, duration: float, interval: float
    ) -> None:
        deadline = self.elapsed + duration
        while True:
            got = actual()
            assert got == want, f"got {got} at {self.elapsed}s, want {want}"
            if self.elapsed >= deadline:
                return
            self.wait(interval)


@pytest.fixture
def env() -> Iterator[Envtest]:
    yield Envtest()


def runner_replica_set(replicas: int) -> Json:
    return {
        "apiVersion": API,
        "kind": "RunnerReplicaSet",
        "metadata": {"name": NAME, "namespace": TEST_NAMESPACE},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"foo": "bar"}},
            "template": {
                "metadata": {"labels": {"foo": "bar"}},
                "spec": {
                    "repository": "test/valid",
                    "image": "bar",
                    "env": [{"name": "FOO", "value": "FOOVALUE"}],
                },
            },
        },
    }


# It("should create a new Runner resource from the specified template")
def test_create_a_new_runner_from_the_specified_template(env: Envtest) -> None:
    env.world.apply(runner_replica_set(1))

    env.eventually(env.get_runner_count, 1, timeout=5, interval=1)


# It("should create 2 runners when specified 2 replicas")
def test_create_2_runners_when_specified_2_replicas(env: Envtest) -> None:
    env.world.apply(runner_replica_set(2))

    env.eventually(env.get_runner_count, 2, timeout=5, interval=1)


# It("should not create any runners when specified 0 replicas")
def test_not_create_any_runners_when_specified_0_replicas(env: Envtest) -> None:
    env.world.apply(runner_replica_set(0))

    env.consistently(env.get_runner_count, 0, duration=5, interval=1)
