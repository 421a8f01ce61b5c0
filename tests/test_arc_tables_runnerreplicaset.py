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

from collections.abc import Iterator
from typing import Any

import pytest

from tests.arc_envtest import Envtest

Json = dict[str, Any]

API = "actions.summerwind.dev/v1alpha1"
TEST_NAMESPACE = "testns-arcrs"  # ARC: "testns-" + randStringRunes(5), one per It
NAME = "example-runnerreplicaset"


class ReplicaSetEnvtest(Envtest):
    """ARC's `SetupTest`, with its `getRunnerCount`."""

    def __init__(self) -> None:
        super().__init__("arc-runnerreplicaset-test", TEST_NAMESPACE)

    def get_runner_count(self) -> int:
        """ARC's `getRunnerCount`: the Runners of the namespace matching foo=bar."""
        selector = {"matchLabels": {"foo": "bar"}}
        return len(self.world.store.list_objects("Runner", TEST_NAMESPACE, selector))


@pytest.fixture
def env() -> Iterator[ReplicaSetEnvtest]:
    yield ReplicaSetEnvtest()


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
def test_create_a_new_runner_from_the_specified_template(env: ReplicaSetEnvtest) -> None:
    env.world.apply(runner_replica_set(1))

    env.eventually(env.get_runner_count, 1, timeout=5, interval=1)


# It("should create 2 runners when specified 2 replicas")
def test_create_2_runners_when_specified_2_replicas(env: ReplicaSetEnvtest) -> None:
    env.world.apply(runner_replica_set(2))

    env.eventually(env.get_runner_count, 2, timeout=5, interval=1)


# It("should not create any runners when specified 0 replicas")
def test_not_create_any_runners_when_specified_0_replicas(env: ReplicaSetEnvtest) -> None:
    env.world.apply(runner_replica_set(0))

    env.consistently(env.get_runner_count, lambda got: got == 0, duration=5, interval=1)
