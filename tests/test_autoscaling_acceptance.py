"""ARC's documented HorizontalRunnerAutoscaler manifests, applied unchanged in the simulated world
next to the RunnerDeployment they target: each gets an answer, and the deployment follows it."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from arc_sim.scenario import load_scenario
from arc_sim.world import World

SAMPLES = (
    Path(__file__).parent / "reference/arc-legacy-crds/horizontalrunnerautoscaler-samples.yaml"
)
DEPLOYMENT_TARGETS = [
    sample
    for sample in yaml.safe_load_all(SAMPLES.read_text())
    if (sample["spec"]["scaleTargetRef"].get("kind") or "RunnerDeployment") == "RunnerDeployment"
]


def _world(hra: dict[str, Any]) -> World:
    target = hra["spec"]["scaleTargetRef"]["name"]
    scenario = load_scenario(
        yaml.safe_dump(
            {
                "name": f"docs-{hra['metadata']['name']}",
                "duration": "10m",
                "objects": [
                    {
                        "apiVersion": "actions.summerwind.dev/v1alpha1",
                        "kind": "RunnerDeployment",
                        "metadata": {"name": target},
                        "spec": {"template": {"spec": {"repository": "example/myrepo"}}},
                    },
                    copy.deepcopy(hra),
                ],
            }
        )
    )
    return World(scenario)


@pytest.mark.parametrize("hra", DEPLOYMENT_TARGETS, ids=lambda hra: hra["metadata"]["name"])
def test_a_documented_autoscaler_sizes_its_deployment(hra: dict[str, Any]) -> None:
    sim = _world(hra)
    sim.begin()
    sim.run_to(5 * 60)

    (stored,) = sim.store.list_objects("HorizontalRunnerAutoscaler")
    status = stored["status"]
    (condition,) = [c for c in status["conditions"] if c["type"] == "ScalingActive"]
    assert condition["status"] == "True", condition
    # No job is queued: each documented autoscaler rests at its minReplicas.
    assert status["desiredReplicas"] == hra["spec"]["minReplicas"]
    (deployment,) = sim.store.list_objects("RunnerDeployment")
    assert deployment["status"]["desiredReplicas"] == status["desiredReplicas"]
    assert sim.live_runner_pods() == status["desiredReplicas"]
