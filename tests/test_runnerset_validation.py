"""RunnerSet specs whose StatefulSets or claims the API server would refuse are invalid specs:
`Valid=False` naming the field (never its value), every child kept, nothing new started.

The rules are Kubernetes' own: `ValidateStatefulSetSpec` (pkg/apis/apps/validation) for the
fields a runner's StatefulSet takes from the RunnerSet, `ValidatePersistentVolumeClaim`
(pkg/apis/core/validation) for the claims made from `volumeClaimTemplates`, and the pod rules
(`hooks.resources.pod_rules`) for the pod template's own fields, copied into each pod."""

from __future__ import annotations

import json
from typing import Any

import pytest
from starlette.testclient import TestClient

from hooks.clock import ManualClock
from hooks.resources.pod_rules import claim_spec_problems
from tests.in_memory_github import InMemoryGitHub
from tests.test_runnerset_hooks import (
    SET_NAME,
    RunnerSetWorld,
    claim_template,
    condition,
    of_kind,
    runner_set,
    validate,
)

SECRET = "ghp_" + "S3cr3t" * 6  # a token pasted into the wrong field
KubeObject = dict[str, Any]


@pytest.fixture
def world(client: TestClient, github: InMemoryGitHub, clock: ManualClock) -> RunnerSetWorld:
    return RunnerSetWorld(client, github, clock, runner_set(replicas=0))


def with_pod_spec(**fields: Any) -> KubeObject:
    """The test set's pod template with these fields in its spec."""
    return {"metadata": {"labels": {"app": SET_NAME}}, "spec": fields}


def claim(name: str = "cache", metadata: Any = None, **spec: Any) -> KubeObject:
    """A claim template; its spec is `claim_template`'s with `spec` over it (None: left out)."""
    template = claim_template(name)
    template["spec"].update(spec)
    template["spec"] = {k: v for k, v in template["spec"].items() if v is not None}
    if metadata is not None:
        template["metadata"] = metadata
    return template


INVALID: list[tuple[str, KubeObject, str]] = [
    # ValidateStatefulSetSpec
    (
        "active-deadline",
        {"template": with_pod_spec(activeDeadlineSeconds=600)},
        "spec.template.spec.activeDeadlineSeconds",
    ),
    ("pod-management-policy", {"podManagementPolicy": SECRET}, "spec.podManagementPolicy"),
    ("service-name", {"serviceName": "Bad_Name"}, "spec.serviceName"),
    ("min-ready-negative", {"minReadySeconds": -1}, "spec.minReadySeconds"),
    ("revision-history-int32", {"revisionHistoryLimit": 2**31}, "spec.revisionHistoryLimit"),
    # the pod template's own fields, in each runner's pod
    ("host-network-not-boolean", {"template": with_pod_spec(hostNetwork=SECRET)}, "hostNetwork"),
    ("priority-not-integer", {"template": with_pod_spec(priority=SECRET)}, "spec.priority"),
    ("hostname", {"template": with_pod_spec(hostname=SECRET)}, "spec.hostname"),
    (  # the StatefulSet controller labels each pod with its revision, merged in on create
        "match-label-key-of-a-statefulset-label",
        {
            "template": with_pod_spec(
                affinity={
                    "podAntiAffinity": {
                        "requiredDuringSchedulingIgnoredDuringExecution": [
                            {
                                "topologyKey": "kubernetes.io/hostname",
                                "labelSelector": {
                                    "matchExpressions": [
                                        {"key": "controller-revision-hash", "operator": "Exists"}
                                    ]
                                },
                                "matchLabelKeys": ["controller-revision-hash"],
                            }
                        ]
                    }
                }
            )
        },
        "matchLabelKeys[0]: the labelSelector selects on this key already",
    ),
    (
        "host-pid-and-shared-namespace",
        {"template": with_pod_spec(hostPID=True, shareProcessNamespace=True)},
        "spec.shareProcessNamespace",
    ),
    (
        "pod-rule-in-builder-field",
        {"template": with_pod_spec(dnsConfig={"nameservers": [SECRET]})},
        "spec.dnsConfig.nameservers[0]",
    ),
    # ValidatePersistentVolumeClaimSpec and the claim's metadata
    (
        "claim-without-access-modes",
        {"volumeClaimTemplates": [claim(accessModes=None)]},
        "spec.volumeClaimTemplates[cache].spec.accessModes",
    ),
    (
        "claim-empty-access-modes",
        {"volumeClaimTemplates": [claim(accessModes=[])]},
        "spec.volumeClaimTemplates[cache].spec.accessModes",
    ),
    (
        "claim-unknown-access-mode",
        {"volumeClaimTemplates": [claim(accessModes=[SECRET])]},
        "spec.volumeClaimTemplates[cache].spec.accessModes",
    ),
    (
        "claim-read-write-once-pod-with-another",
        {"volumeClaimTemplates": [claim(accessModes=["ReadWriteOncePod", "ReadWriteOnce"])]},
        "spec.volumeClaimTemplates[cache].spec.accessModes",
    ),
    (
        "claim-without-storage",
        {"volumeClaimTemplates": [claim(resources={"requests": {}})]},
        "spec.volumeClaimTemplates[cache].spec.resources.requests[storage]",
    ),
    (
        "claim-storage-not-a-quantity",
        {"volumeClaimTemplates": [claim(resources={"requests": {"storage": SECRET}})]},
        "spec.volumeClaimTemplates[cache].spec.resources.requests[storage]",
    ),
    (
        "claim-storage-zero",
        {"volumeClaimTemplates": [claim(resources={"requests": {"storage": "0"}})]},
        "spec.volumeClaimTemplates[cache].spec.resources.requests[storage]",
    ),
    (
        "claim-spec-not-an-object",
        {"volumeClaimTemplates": [{"metadata": {"name": "cache"}, "spec": SECRET}]},
        "spec.volumeClaimTemplates[cache].spec: must be an object",
    ),
    (
        "claim-spec-of-wrong-types",
        {"volumeClaimTemplates": [claim(accessModes=SECRET)]},
        "spec.volumeClaimTemplates[cache].spec.accessModes",
    ),
    (
        "claim-storage-class",
        {"volumeClaimTemplates": [claim(storageClassName=SECRET)]},
        "spec.volumeClaimTemplates[cache].spec.storageClassName",
    ),
    (
        "claim-volume-mode",
        {"volumeClaimTemplates": [claim(volumeMode=SECRET)]},
        "spec.volumeClaimTemplates[cache].spec.volumeMode",
    ),
    (
        "claim-label-value",
        {
            "volumeClaimTemplates": [
                claim(metadata={"name": "cache", "labels": {"a": SECRET + "!"}})
            ]
        },
        "spec.volumeClaimTemplates[cache].metadata.labels[a]",
    ),
    (
        "claim-labels-not-a-map",
        {"volumeClaimTemplates": [claim(metadata={"name": "cache", "labels": [SECRET]})]},
        "spec.volumeClaimTemplates[cache].metadata.labels",
    ),
    (
        "claim-annotation-key",
        {"volumeClaimTemplates": [claim(metadata={"name": "cache", "annotations": {"a b": "x"}})]},
        "spec.volumeClaimTemplates[cache].metadata.annotations",
    ),
]


@pytest.mark.parametrize(("change", "field"), [c[1:] for c in INVALID], ids=[c[0] for c in INVALID])
def test_a_spec_the_api_server_would_refuse_keeps_every_child_and_starts_nothing(
    world: RunnerSetWorld, change: KubeObject, field: str
) -> None:
    before = world.two_runners_one_running()

    world.change_spec(replicas=3, **change)  # a valid spec would start a third runner
    answer = world.sync()

    world.assert_untouched_since(before)
    assert len(of_kind(answer, "StatefulSet")) == 2
    valid = condition(answer["status"], "Valid")
    assert valid["status"] == "False" and valid["reason"] == "InvalidSpec"
    assert field in valid["message"], valid["message"]
    assert SECRET not in json.dumps(answer)
    assert SECRET[:12] not in json.dumps(answer)


def test_a_new_set_with_a_refused_spec_creates_nothing(world: RunnerSetWorld) -> None:
    world.change_spec(replicas=2, template=with_pod_spec(activeDeadlineSeconds=60))

    answer = world.sync()

    assert answer["children"] == []
    assert world.github.calls == []
    assert condition(answer["status"], "Valid")["status"] == "False"


def test_what_the_api_server_accepts_near_those_rules_stays_valid(world: RunnerSetWorld) -> None:
    """Each value here is one a StatefulSet or a claim may have."""
    world.change_spec(
        replicas=2,
        podManagementPolicy="OrderedReady",
        minReadySeconds=0,
        # ValidateStatefulSetSpec does not read it (Deployments and DaemonSets do)
        revisionHistoryLimit=-1,
        template=with_pod_spec(
            hostNetwork=True,
            hostname="runner",
            shareProcessNamespace=True,
            activeDeadlineSeconds=None,  # null is no deadline
            schedulerName="Custom Scheduler",  # not validated by the API server
        ),
        volumeClaimTemplates=[
            claim(
                "cache",
                metadata={
                    "name": "cache",
                    "labels": {"app.kubernetes.io/part-of": "ci"},
                    "annotations": {"example.com/note": "any text at all"},
                },
                accessModes=["ReadWriteOncePod"],
                storageClassName="fast-ssd",
                volumeMode="Filesystem",
                resources={"requests": {"storage": 10 * 1024**3}, "limits": {"storage": "20Gi"}},
            ),
            claim("blocks", accessModes=["ReadWriteOnce", "ReadOnlyMany"], volumeMode="Block"),
        ],
    )

    answer = world.sync()

    assert condition(answer["status"], "Valid")["status"] == "True"
    statefulsets = of_kind(answer, "StatefulSet")
    claims = of_kind(answer, "PersistentVolumeClaim")
    assert len(statefulsets) == 2 and len(claims) == 4
    for child in [*statefulsets.values(), *claims.values()]:
        validate(child)
    for sts in statefulsets.values():
        assert sts["spec"]["podManagementPolicy"] == "OrderedReady"
        assert sts["spec"]["template"]["spec"]["hostNetwork"] is True


@pytest.mark.parametrize(
    ("spec", "problem"),
    [
        ({}, ".accessModes: at least one access mode is required"),
        ({"accessModes": ["ReadWriteMany"]}, ".resources.requests[storage]: required"),
        (
            {"accessModes": ["ReadWriteMany"], "resources": {"requests": {"storage": "-1Gi"}}},
            ".resources.requests[storage]: must be more than zero",
        ),
        (
            {"accessModes": ["ReadWriteMany"], "resources": {"requests": {"storage": "1Gb"}}},
            ".resources.requests[storage]: must be a quantity",
        ),
        ({"accessModes": "ReadWriteOnce"}, ".accessModes: must be of type array"),
        ({"resources": []}, ".resources: must be of type object"),
        ([], ": must be an object"),
    ],
)
def test_claim_spec_rules(spec: Any, problem: str) -> None:
    problems = claim_spec_problems(spec, "claim")
    assert any(p.startswith("claim") and problem in p for p in problems), problems


def test_a_claim_spec_of_the_documented_samples_is_valid() -> None:
    spec = {
        "accessModes": ["ReadWriteOnce"],
        "resources": {"requests": {"storage": "10Mi"}},
        "storageClassName": "var-lib-docker",
    }
    assert claim_spec_problems(spec, "claim") == []
