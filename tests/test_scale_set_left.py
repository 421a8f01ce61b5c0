"""A RunnerDeployment or RunnerSet that leaves scale-set mode (its `arc-hooks.dev/scale-set`
annotation removed) deletes its runner scale set once the runners that joined it are gone.

Found by a hostile probe: the scale set stayed on GitHub with no listener acquiring for it, and
held every job of its labels it was offered, while plain runners of the same labels sat idle;
a RunnerDeployment's even outlived its deletion."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from arc_sim.scenario import Scenario
from arc_sim.world import World

ARC = "actions.summerwind.dev/v1alpha1"
ANNOTATION = "arc-hooks.dev/scale-set"


def deployment() -> dict[str, Any]:
    return {
        "apiVersion": ARC,
        "kind": "RunnerDeployment",
        "metadata": {"name": "octo", "annotations": {ANNOTATION: "octo-runners"}},
        "spec": {"template": {"spec": {"organization": "acme", "labels": ["linux"]}}},
    }


def runner_set() -> dict[str, Any]:
    return {
        "apiVersion": ARC,
        "kind": "RunnerSet",
        "metadata": {"name": "octo", "annotations": {ANNOTATION: "octo-runners"}},
        "spec": {
            "organization": "acme",
            "labels": ["linux"],
            "selector": {"matchLabels": {"app": "octo"}},
            "serviceName": "octo",
            "template": {
                "metadata": {"labels": {"app": "octo"}},
                "spec": {"containers": [{"name": "runner"}]},
            },
        },
    }


def scenario(target: dict[str, Any]) -> Scenario:
    plain = copy.deepcopy(target)
    plain["metadata"]["annotations"] = {}
    autoscaler = {
        "apiVersion": ARC,
        "kind": "HorizontalRunnerAutoscaler",
        "metadata": {"name": "octo"},
        "spec": {
            "scaleTargetRef": {"kind": target["kind"], "name": "octo"},
            "minReplicas": 2,
            "maxReplicas": 5,
        },
    }
    return Scenario.model_validate(
        {
            "name": "leaving-scale-set-mode",
            "duration": "30m",
            "listeners": {"replicas": 1},
            "objects": [target, autoscaler],
            "timeline": [{"at": "3m", "apply": plain}],
            "jobs": [
                {
                    "repository": "acme/app",
                    "labels": ["self-hosted", "linux"],
                    "count": 5,
                    "start": "10m",
                    "every": "10s",
                    "duration": "1m",
                }
            ],
        }
    )


@pytest.mark.parametrize("target", [deployment(), runner_set()], ids=["deployment", "runnerset"])
def test_leaving_scale_set_mode_deletes_the_scale_set_and_plain_runners_take_the_jobs(
    target: dict[str, Any],
) -> None:
    world = World(scenario(target))
    world.begin()
    world.run_to(2 * 60)
    assert [s.name for s in world.broker.scale_sets()] == ["octo-runners"]

    world.run_to(9 * 60)  # the annotation went at 3m; the runners that joined it are replaced
    assert world.broker.scale_sets() == []
    status = world.store.get(target["kind"], "default", "octo")["status"]  # type: ignore[index]
    assert "scaleSet" not in status
    ready = next(c for c in status["conditions"] if c["type"] == "ScaleSetReady")
    assert (ready["status"], ready["reason"]) == ("False", "Deleted")

    world.run_to(30 * 60)
    summary = world.finish()
    assert summary.jobs.completed == 5
    assert summary.jobs.max_queue_seconds < 300
    assert summary.invariants.hold(), summary.table()


def test_a_deployment_keeps_its_scale_set_while_runners_that_joined_it_finish_their_jobs() -> None:
    """Found in review: the older RunnerReplicaSet reported no replicas once its busy Runners
    were being deleted (waiting for their jobs), so it was deleted, and the scale set with it,
    while those runners still ran their jobs in it."""
    busy = scenario(deployment()).model_copy(deep=True)
    busy.jobs[0] = busy.jobs[0].model_copy(
        # Asking for the scale set by its name, its one label: its members take them.
        update={
            "labels": ["octo-runners"],
            "count": 2,
            "start": 60.0,
            "every": 1.0,
            "duration": 20 * 60.0,
        }
    )
    world = World(busy)
    world.begin()
    world.run_to(10 * 60)  # the annotation went at 3m; both jobs run until about 21m
    assert [s.name for s in world.broker.scale_sets()] == ["octo-runners"]
    status = world.store.get("RunnerDeployment", "default", "octo")["status"]  # type: ignore[index]
    ready = next(c for c in status["conditions"] if c["type"] == "ScaleSetReady")
    assert ready["reason"] == "Retiring"

    world.run_to(30 * 60)
    assert world.broker.scale_sets() == []
    summary = world.finish()
    assert summary.jobs.completed == 2 and summary.jobs.interrupted == 0
    assert summary.invariants.hold(), summary.table()
