"""A spec value of the wrong JSON type is an invalid spec, never a value read another way.

The CRDs type every field, and the API server refuses `replicas: "3"` or `ephemeral: "false"`
(`test_crds.py`). An object that reaches a hook without that check (a CRD installed without
its schema, a request sent by hand) is held to the same types: `replicas: "3"` is not three
runners, `replicas: true` not one, and `ephemeral: "false"` not false. Each such spec gets the
kind's invalid-spec condition naming the field, never its value, and keeps its children.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from starlette.testclient import TestClient

from hooks.clock import ManualClock
from tests.hook_driver import HookDriver
from tests.test_autoscaler_hook import Cluster, autoscaler, child_names, reservation
from tests.test_autoscaler_hook import condition as hra_condition
from tests.test_replicaset_hooks import (
    deployment,
    names,
    observed,
    replica_set,
    runner,
    sync_deployment,
    sync_set,
)
from tests.test_runner_hooks import driver_for
from tests.test_runnerset_hooks import RunnerSetWorld, of_kind, runner_set
from tests.test_runnerset_hooks import condition as set_condition

KubeObject = dict[str, Any]
CREATED = "2026-01-01T00:00:00Z"
SHOWN = "ghp_WRONGTYPE0123456789abcdefghijklmnopqr"
"""A string where a number or bool belongs: the message names the field, not this."""


def valid_condition(status: KubeObject) -> KubeObject:
    found: KubeObject = next(c for c in status["conditions"] if c["type"] == "Valid")
    return found


def with_template_spec(parent: KubeObject, **fields: Any) -> KubeObject:
    changed = copy.deepcopy(parent)
    changed["spec"]["template"]["spec"].update(fields)
    return changed


# ------------------------------------------------------------------ RunnerReplicaSet

SET_CASES = [
    pytest.param({"replicas": "3"}, "spec.replicas", id="replicas-text"),
    pytest.param({"replicas": SHOWN}, "spec.replicas", id="replicas-token"),
    pytest.param({"replicas": True}, "spec.replicas", id="replicas-bool"),
    pytest.param({"replicas": 2.5}, "spec.replicas", id="replicas-fraction"),
    pytest.param(
        {"template": {"spec": {"organization": "acme", "ephemeral": "false"}}},
        "spec.template.spec.ephemeral",
        id="ephemeral-text",
    ),
    pytest.param(
        {"template": {"spec": {"organization": "acme", "ephemeral": 0}}},
        "spec.template.spec.ephemeral",
        id="ephemeral-number",
    ),
    pytest.param(
        {"template": {"spec": {"organization": "acme", "dockerMTU": "1500"}}},
        "spec.template.spec.dockerMTU",
        id="docker-mtu-text",
    ),
]


@pytest.mark.parametrize(("fields", "field"), SET_CASES)
def test_a_replica_set_field_of_the_wrong_type_keeps_its_runners(
    client: TestClient, fields: KubeObject, field: str
) -> None:
    parent = replica_set(1)
    parent["spec"].update(fields)
    kept = [runner("a", CREATED), runner("b", CREATED, busy=True)]

    answer = sync_set(client, parent, kept)

    assert names(answer) == ["a", "b"]  # none created, none removed
    valid = valid_condition(answer["status"])
    assert (valid["status"], valid["reason"]) == ("False", "InvalidSpec")
    assert field in valid["message"]
    assert SHOWN not in repr(answer)


NOT_INTEGERS = (
    st.text(max_size=8)
    | st.booleans()
    | st.floats(allow_nan=False, allow_infinity=False).filter(lambda x: not x.is_integer())
    | st.lists(st.integers(0, 3), max_size=2)
    | st.dictionaries(st.text(max_size=3), st.integers(0, 3), max_size=2)
)


def test_any_replicas_that_is_not_an_integer_creates_nothing(client: TestClient) -> None:
    @settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(replicas=NOT_INTEGERS)
    def check(replicas: Any) -> None:
        parent = replica_set(1)
        parent["spec"]["replicas"] = replicas

        answer = sync_set(client, parent, [runner("a", CREATED)])

        assert names(answer) == ["a"]
        valid = valid_condition(answer["status"])
        assert valid["status"] == "False"
        assert "spec.replicas" in valid["message"]

    check()


# ------------------------------------------------------------------ RunnerDeployment


@pytest.mark.parametrize(
    ("parent", "field"),
    [
        pytest.param(deployment("2"), "spec.replicas", id="replicas-text"),  # type: ignore[arg-type]
        pytest.param(deployment(None, ephemeral="true"), "ephemeral", id="ephemeral-text"),
        pytest.param(deployment(None, labels="linux"), "labels", id="labels-text"),
    ],
)
def test_a_deployment_field_of_the_wrong_type_keeps_its_set(
    client: TestClient, parent: KubeObject, field: str
) -> None:
    existing = observed(sync_deployment(client, deployment(2))["children"][0], replicas=2, ready=2)

    answer = sync_deployment(client, parent, [existing])

    assert [c["metadata"]["name"] for c in answer["children"]] == [existing["metadata"]["name"]]
    assert answer["children"][0]["spec"]["replicas"] == 2  # not resized either
    valid = valid_condition(answer["status"])
    assert (valid["status"], valid["reason"]) == ("False", "InvalidSpec")
    assert field in valid["message"]


# ------------------------------------------------------------------ Runner


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        pytest.param({"ephemeral": "false"}, "spec.ephemeral", id="ephemeral-text"),
        pytest.param({"dockerEnabled": 1}, "spec.dockerEnabled", id="docker-enabled-number"),
        pytest.param({"dockerMTU": SHOWN}, "spec.dockerMTU", id="docker-mtu-token"),
        pytest.param({"organization": 7}, "spec.organization", id="organization-number"),
    ],
)
def test_a_runner_field_of_the_wrong_type_keeps_its_pod(
    client: TestClient, fields: KubeObject, field: str
) -> None:
    driver: HookDriver = driver_for(client)
    driver.sync()
    driver.sync()
    pod_uid = driver.pod()["metadata"]["uid"]  # type: ignore[index]
    driver.parent["spec"] = {**driver.parent["spec"], **fields}

    answer = driver.sync()

    assert sorted(c["kind"] for c in answer["children"]) == ["Pod", "Secret"]
    assert driver.pod()["metadata"]["uid"] == pod_uid  # type: ignore[index]
    valid = valid_condition(answer["status"])
    assert (valid["status"], valid["reason"]) == ("False", "InvalidSpec")
    assert field in valid["message"]
    assert SHOWN not in repr(answer)


# ------------------------------------------------------------------ RunnerSet


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        pytest.param({"replicas": "2"}, "spec.replicas", id="replicas-text"),
        pytest.param({"ephemeral": "false"}, "spec.ephemeral", id="ephemeral-text"),
    ],
)
def test_a_runner_set_field_of_the_wrong_type_keeps_its_members(
    world: RunnerSetWorld, fields: KubeObject, field: str
) -> None:
    world.sync()
    members = sorted(of_kind(world.sync(), "StatefulSet"))
    assert len(members) == 2
    world.parent["spec"].update(fields)

    answer = world.sync()

    assert sorted(of_kind(answer, "StatefulSet")) == members
    valid = set_condition(answer["status"], "Valid")
    assert (valid["status"], valid["reason"]) == ("False", "InvalidSpec")
    assert field in valid["message"]


@pytest.fixture
def world(client: TestClient, github: Any, clock: ManualClock) -> RunnerSetWorld:
    return RunnerSetWorld(client, github, clock, runner_set(replicas=2))


# ------------------------------------------------------------------ HorizontalRunnerAutoscaler


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        pytest.param({"maxReplicas": "10"}, "spec.maxReplicas", id="max-text"),
        pytest.param({"minReplicas": True}, "spec.minReplicas", id="min-bool"),
        pytest.param(
            {"scaleDownDelaySecondsAfterScaleOut": SHOWN},
            "spec.scaleDownDelaySecondsAfterScaleOut",
            id="delay-token",
        ),
    ],
)
def test_an_autoscaler_field_of_the_wrong_type_keeps_its_answer_and_reservations(
    client: TestClient, clock: ManualClock, fields: KubeObject, field: str
) -> None:
    cluster = Cluster(client, clock, autoscaler(status={"desiredReplicas": 2}, **fields))
    cluster.add(reservation("job-1", clock.now()), reservation("job-2", clock.now()))

    answer = cluster.sync()

    valid = hra_condition(answer, "Valid")  # the spec could not be read: no ScalingActive
    assert (valid["status"], valid["reason"]) == ("False", "InvalidSpec")
    assert field in valid["message"]
    assert answer["status"]["desiredReplicas"] == 2
    assert child_names(answer) == ["job-1", "job-2"]
    assert SHOWN not in repr(answer)
