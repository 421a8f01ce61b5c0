"""No input gives a 5xx, on any endpoint: property tests with random and malformed requests.

Each test builds one app and sends it hundreds of requests, so the server must keep serving
across them; a well-formed request still gets a 200 at the end. The requests are

- Metacontroller requests built from realistic ones for each endpoint, with a few values
  replaced by values of any type, removed, wrapped, or added where the hooks look for them;
- bodies that are not hook requests at all (not JSON, not objects, fields of the wrong type);
- realistic requests with JSON nested hundreds of levels deep somewhere inside;
- for `/webhook/github`, correctly signed random deliveries under random event names.

What is checked: never a 5xx; a 4xx says why in JSON (`{"error": ...}`); a 200 has the shape
Metacontroller reads, and an invalid parent keeps its observed children as they are.
"""

from __future__ import annotations

import base64
import copy
import json
import logging
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any
from urllib.parse import urlencode

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from starlette.testclient import TestClient

from arc_sim.store import ObjectStore
from arc_sim.webhooks import signature_256
from hooks.app import create_app
from hooks.clock import ManualClock
from tests.hook_app import GITHUB_TOKEN, HOOK_TOKEN, WithoutParentReads, hook_client, hook_settings
from tests.in_memory_github import InMemoryGitHub

Json = Any
KubeObject = dict[str, Any]
JsonPath = tuple[str | int, ...]

API = "actions.summerwind.dev/v1alpha1"
RESERVATION_API = "arc-hooks.dev/v1alpha1"
NS = "ci"
BEFORE = "2025-12-31T23:40:00Z"  # the ManualClock starts at 2026-01-01T00:00:00Z
AFTER = "2026-01-01T00:40:00Z"
STOP_ANNOTATION = "arc-hooks.dev/graceful-stop"
WEBHOOK_SECRET = "webhook-secret-for-fuzzing"

EXAMPLES = 300
FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
        HealthCheck.large_base_example,
    ],
)

# ------------------------------------------------------------------ realistic requests


def b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def condition(kind: str, status: str = "True", reason: str = "Ok") -> KubeObject:
    return {
        "type": kind,
        "status": status,
        "reason": reason,
        "message": "",
        "lastTransitionTime": BEFORE,
    }


def owner(api_version: str, kind: str, name: str, uid: str) -> KubeObject:
    return {
        "apiVersion": api_version,
        "kind": kind,
        "name": name,
        "uid": uid,
        "controller": True,
        "blockOwnerDeletion": True,
    }


def metadata(name: str, uid: str, **extra: Any) -> KubeObject:
    return {
        "name": name,
        "namespace": NS,
        "uid": uid,
        "generation": 2,
        "resourceVersion": "17",
        "creationTimestamp": BEFORE,
        "labels": {"app": "fuzz"},
        "annotations": {},
        **extra,
    }


def running_pod_status() -> KubeObject:
    return {
        "phase": "Running",
        "conditions": [condition("Ready"), condition("PodScheduled")],
        "containerStatuses": [
            {
                "name": "runner",
                "ready": True,
                "restartCount": 1,
                "state": {"running": {"startedAt": BEFORE}},
                "lastState": {"terminated": {"exitCode": 0, "finishedAt": BEFORE}},
            },
            {"name": "docker", "ready": True, "state": {"running": {"startedAt": BEFORE}}},
        ],
    }


def runner_pod(name: str, owner_ref: KubeObject, **extra_metadata: Any) -> KubeObject:
    """A runner pod as the hooks build it (ARC's env), running."""
    env = [
        {"name": "RUNNER_ORG", "value": "acme"},
        {"name": "RUNNER_REPO", "value": ""},
        {"name": "RUNNER_ENTERPRISE", "value": ""},
        {"name": "RUNNER_LABELS", "value": "linux"},
        {"name": "RUNNER_EPHEMERAL", "value": "true"},
        {"name": "RUNNER_NAME", "value": name},
        {
            "name": "RUNNER_TOKEN",
            "valueFrom": {"secretKeyRef": {"name": f"{name}-registration", "key": "token"}},
        },
    ]
    meta = metadata(
        name,
        f"pod-uid-{name}",
        labels={"actions-runner": "", "runner-template-hash": "0123456789"},
        annotations={"actions-runner/id": "101"},
        ownerReferences=[owner_ref],
        **extra_metadata,
    )
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": meta,
        "spec": {
            "restartPolicy": "Never",
            "terminationGracePeriodSeconds": 30,
            "containers": [
                {"name": "runner", "image": "summerwind/actions-runner:latest", "env": env},
                {"name": "docker", "image": "docker:dind"},
            ],
        },
        "status": running_pod_status(),
    }


def registration_secret(name: str) -> KubeObject:
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": metadata(f"{name}-registration", f"secret-uid-{name}"),
        "type": "Opaque",
        "data": {"token": b64("AABBCCTOKEN"), "expiresAt": b64(AFTER)},
    }


def stop_record(pod_uid: str, outcome: str | None = None) -> KubeObject:
    record: KubeObject = {
        "reason": "ScaleDown",
        "startedAt": BEFORE,
        "podUid": pod_uid,
        "runnerId": 101,
        "lastAttemptAt": BEFORE,
        "waitingForCompletion": True,
        "message": "runner busy",
    }
    if outcome is not None:
        record.update(outcome=outcome, completedAt=BEFORE)
    return record


def runner_spec() -> KubeObject:
    return {
        "organization": "acme",
        "labels": ["linux", "x64"],
        "group": "Default",
        "ephemeral": True,
        "env": [{"name": "FOO", "value": "bar"}],
        "resources": {"limits": {"cpu": "2", "memory": "4Gi"}},
    }


def runner(name: str, status: KubeObject | None = None) -> KubeObject:
    obj: KubeObject = {
        "apiVersion": API,
        "kind": "Runner",
        "metadata": metadata(
            name,
            f"runner-uid-{name}",
            labels={"runner-deployment-name": "fuzz", "runner-template-hash": "0123456789"},
            annotations={"actions-runner/sync-time": BEFORE},
            ownerReferences=[owner(API, "RunnerReplicaSet", "fuzz-rs", "rs-uid")],
        ),
        "spec": runner_spec(),
    }
    if status is not None:
        obj["status"] = status
    return obj


def runner_status(**extra: Any) -> KubeObject:
    return {
        "phase": "Running",
        "ready": True,
        "runnerId": 101,
        "online": True,
        "busy": False,
        "registration": {"organization": "acme", "labels": ["linux", "x64"], "expiresAt": AFTER},
        "conditions": [condition("Valid"), condition("Registered")],
        "failures": 1,
        "lastFailureTime": BEFORE,
        **extra,
    }


def composite(parent: KubeObject, children: dict[str, list[KubeObject]], **extra: Any) -> Json:
    """A v2 request: children keyed by `namespace/name` within `<Kind>.<apiVersion>` groups."""

    def groups(objects: dict[str, list[KubeObject]]) -> Json:
        return {
            group: {f"{o['metadata']['namespace']}/{o['metadata']['name']}": o for o in members}
            for group, members in objects.items()
        }

    request = {
        "controller": {"apiVersion": "metacontroller.k8s.io/v1alpha1", "kind": "X"},
        "parent": parent,
        "children": groups(children),
        "related": groups(extra.pop("related", {})),
        "finalizing": False,
    }
    return {**request, **extra}


def runner_requests(finalizing: bool) -> list[Json]:
    name = "fuzz-runner"
    pod = runner_pod(name, owner(API, "Runner", name, f"runner-uid-{name}"))
    stopping_pod = copy.deepcopy(pod)
    stopping_pod["metadata"]["deletionTimestamp"] = BEFORE
    children = {"Pod.v1": [pod], "Secret.v1": [registration_secret(name)]}
    parents = [
        runner(name),
        runner(name, runner_status()),
        runner(name, runner_status(gracefulStop=stop_record(f"pod-uid-{name}"))),
    ]
    if finalizing:
        for parent in parents:
            parent["metadata"]["deletionTimestamp"] = BEFORE
    return [
        composite(parents[0], {}, finalizing=finalizing),
        composite(parents[1], children, finalizing=finalizing),
        composite(
            parents[2],
            {**children, "Pod.v1": [stopping_pod]},
            finalizing=finalizing,
        ),
    ]


def template() -> KubeObject:
    return {
        "metadata": {"labels": {"app": "fuzz"}, "annotations": {"team": "ci"}},
        "spec": runner_spec(),
    }


def replica_set_requests() -> list[Json]:
    parent = {
        "apiVersion": API,
        "kind": "RunnerReplicaSet",
        "metadata": metadata("fuzz-rs", "rs-uid", labels={"runner-template-hash": "0123456789"}),
        "spec": {
            "replicas": 2,
            "effectiveTime": BEFORE,
            "selector": {"matchLabels": {"app": "fuzz"}},
            "template": template(),
        },
        "status": {
            "replicas": 2,
            "readyReplicas": 1,
            "nextRunnerIndex": 3,
            "scaleUpRemaining": 1,
            "conditions": [condition("Valid"), condition("Scaling")],
        },
    }
    busy = runner("fuzz-rs-abcd1", runner_status(busy=True))
    pending = runner("fuzz-rs-abcd2", {"phase": "Pending"})
    return [composite(parent, {f"Runner.{API}": [busy, pending]}), composite(parent, {})]


def replica_set(name: str, replicas: int, template_hash: str) -> KubeObject:
    return {
        "apiVersion": API,
        "kind": "RunnerReplicaSet",
        "metadata": metadata(
            name,
            f"uid-{name}",
            labels={"runner-template-hash": template_hash, "runner-deployment-name": "fuzz"},
        ),
        "spec": {"replicas": replicas, "template": template()},
        "status": {"replicas": replicas, "readyReplicas": replicas, "registeredReplicas": 1},
    }


def autoscaler(target_kind: str, target: str, **status: Any) -> KubeObject:
    return {
        "apiVersion": API,
        "kind": "HorizontalRunnerAutoscaler",
        "metadata": metadata(f"{target}-hra", f"hra-uid-{target}"),
        "spec": {
            "scaleTargetRef": {"kind": target_kind, "name": target},
            "minReplicas": 1,
            "maxReplicas": 5,
            "scaleDownDelaySecondsAfterScaleOut": 300,
            "scaleUpTriggers": [{"githubEvent": {"workflowJob": {}}, "duration": "30m"}],
            "metrics": [
                {
                    "type": "PercentageRunnersBusy",
                    "scaleUpThreshold": "0.75",
                    "scaleDownThreshold": "0.25",
                    "scaleUpFactor": "2",
                    "scaleDownFactor": "0.5",
                }
            ],
            "scheduledOverrides": [
                {
                    "startTime": BEFORE,
                    "endTime": AFTER,
                    "minReplicas": 2,
                    "recurrenceRule": {"frequency": "Weekly", "untilTime": "2027-01-01T00:00:00Z"},
                }
            ],
        },
        "status": {
            "desiredReplicas": 2,
            "lastSuccessfulScaleOutTime": BEFORE,
            "newestReservationTime": BEFORE,
            "conditions": [condition("ScalingActive")],
            **status,
        },
    }


def deployment_requests() -> list[Json]:
    parent = {
        "apiVersion": API,
        "kind": "RunnerDeployment",
        "metadata": metadata("fuzz", "rd-uid"),
        "spec": {"replicas": 2, "effectiveTime": BEFORE, "template": template()},
        "status": {"desiredReplicas": 2, "conditions": [condition("Valid")]},
    }
    sets = [replica_set("fuzz-aaaaa", 2, "aaaaa12345"), replica_set("fuzz-bbbbb", 0, "bbbbb")]
    related = {f"HorizontalRunnerAutoscaler.{API}": [autoscaler("RunnerDeployment", "fuzz")]}
    return [
        composite(parent, {f"RunnerReplicaSet.{API}": sets}, related=related),
        composite(parent, {}),
    ]


def runner_set_parent(finalizing: bool) -> KubeObject:
    parent: KubeObject = {
        "apiVersion": API,
        "kind": "RunnerSet",
        "metadata": metadata("fuzz-set", "set-uid"),
        "spec": {
            **runner_spec(),
            "replicas": 2,
            "effectiveTime": BEFORE,
            "selector": {"matchLabels": {"app": "fuzz"}},
            "serviceName": "fuzz-set",
            "template": {
                "metadata": {"labels": {"app": "fuzz"}},
                "spec": {
                    "containers": [{"name": "runner", "env": [{"name": "X", "value": "1"}]}],
                    "nodeSelector": {"disk": "ssd"},
                },
            },
            "volumeClaimTemplates": [
                {
                    "metadata": {"name": "work"},
                    "spec": {
                        "accessModes": ["ReadWriteOnce"],
                        "resources": {"requests": {"storage": "1Gi"}},
                    },
                }
            ],
        },
        "status": {
            "replicas": 2,
            "nextRunnerIndex": 2,
            "scaleUpRemaining": 1,
            "conditions": [condition("Valid")],
        },
    }
    if finalizing:
        parent["metadata"]["deletionTimestamp"] = BEFORE
    return parent


def statefulset(name: str, slot: str, stop: KubeObject | None = None) -> KubeObject:
    annotations = {"actions-runner/sync-time": BEFORE}
    if stop is not None:
        annotations[STOP_ANNOTATION] = json.dumps(stop)
    return {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": metadata(
            name,
            f"sts-uid-{name}",
            labels={
                "runnerset-name": "fuzz-set",
                "runner-statefulset-name": name,
                "runner-template-hash": "0123456789",
                "arc-hooks.dev/volume-slot": slot,
            },
            annotations=annotations,
        ),
        "spec": {"replicas": 1, "template": {"metadata": {}, "spec": {"containers": []}}},
    }


def runner_set_requests(finalizing: bool) -> list[Json]:
    names = ["fuzz-set-ab120", "fuzz-set-ab121"]
    sets = [statefulset(names[0], "0"), statefulset(names[1], "1", stop_record("pod-uid-x"))]
    pods = [
        runner_pod(f"{name}-0", owner("apps/v1", "StatefulSet", name, f"sts-uid-{name}"))
        for name in names
    ]
    for pod, slot in zip(pods, ("0", "1"), strict=True):
        pod["metadata"]["labels"]["arc-hooks.dev/volume-slot"] = slot
    claim = {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": metadata("work-fuzz-set-0", "pvc-uid"),
        "spec": {"accessModes": ["ReadWriteOnce"]},
    }
    children = {
        "StatefulSet.apps/v1": sets,
        "Secret.v1": [registration_secret(name) for name in names],
        "PersistentVolumeClaim.v1": [claim],
    }
    related = {
        "Pod.v1": pods,
        f"HorizontalRunnerAutoscaler.{API}": [autoscaler("RunnerSet", "fuzz-set")],
    }
    parent = runner_set_parent(finalizing)
    return [
        composite(parent, children, related=related, finalizing=finalizing),
        composite(parent, {}, finalizing=finalizing),
    ]


def reservation(name: str, **spec: Any) -> KubeObject:
    return {
        "apiVersion": RESERVATION_API,
        "kind": "CapacityReservation",
        "metadata": metadata(name, f"uid-{name}"),
        "spec": {
            "effectiveTime": BEFORE,
            "expirationTime": AFTER,
            "replicas": 1,
            "job": {"id": 7, "runID": 9, "repository": "acme/app"},
            **spec,
        },
    }


def autoscaler_requests() -> list[Json]:
    parent = autoscaler("RunnerDeployment", "fuzz")
    reservations = [
        reservation("job-1"),
        reservation("job-2", startTime=BEFORE),
        reservation("job-3", completionTime=BEFORE),
    ]
    target = {
        "apiVersion": API,
        "kind": "RunnerDeployment",
        "metadata": metadata("fuzz", "rd-uid"),
        "spec": {"replicas": 1, "template": template()},
    }
    related = {
        f"RunnerDeployment.{API}": [target],
        f"Runner.{API}": [runner("fuzz-a", runner_status(busy=True)), runner("fuzz-b")],
    }
    return [
        composite(
            parent, {f"CapacityReservation.{RESERVATION_API}": reservations}, related=related
        ),
        composite(parent, {}),
    ]


def runner_pod_requests(finalizing: bool) -> list[Json]:
    controller = {"apiVersion": "metacontroller.k8s.io/v1alpha1", "kind": "DecoratorController"}
    of_runner = runner_pod("fuzz-runner", owner(API, "Runner", "fuzz-runner", "runner-uid-r"))
    of_set = runner_pod("fuzz-set-ab120-0", owner("apps/v1", "StatefulSet", "fuzz-set-ab120", "s"))
    of_set["metadata"]["annotations"] = {
        STOP_ANNOTATION: json.dumps(stop_record(of_set["metadata"]["uid"]))
    }
    alone = runner_pod("lonely", owner("v1", "Node", "n", "n"))
    del alone["metadata"]["annotations"]["actions-runner/id"]
    if finalizing:
        for pod in (of_runner, of_set, alone):
            pod["metadata"].update(deletionTimestamp=BEFORE, deletionGracePeriodSeconds=30)
    sts = statefulset("fuzz-set-ab120", "0", stop_record(of_set["metadata"]["uid"], "Unregistered"))
    sts["metadata"]["uid"] = "s"
    parent_runner = runner("fuzz-runner")
    parent_runner["metadata"]["uid"] = "runner-uid-r"

    def decorator(pod: KubeObject, related: dict[str, list[KubeObject]]) -> Json:
        request = composite(pod, {}, related=related, finalizing=finalizing)
        return {
            "controller": controller,
            "object": request["parent"],
            "attachments": {},
            "related": request["related"],
            "finalizing": finalizing,
        }

    return [
        decorator(of_runner, {f"Runner.{API}": [parent_runner]}),
        decorator(of_set, {"StatefulSet.apps/v1": [sts]}),
        decorator(alone, {}),
    ]


def customize(parent: KubeObject) -> Json:
    return {"controller": {"kind": "CompositeController"}, "parent": parent}


SEEDS: dict[str, list[Json]] = {
    "/sync/runner": runner_requests(finalizing=False),
    "/finalize/runner": runner_requests(finalizing=True),
    "/sync/runnerreplicaset": replica_set_requests(),
    "/sync/runnerdeployment": deployment_requests(),
    "/customize/runnerdeployment": [customize(deployment_requests()[0]["parent"])],
    "/sync/runnerset": runner_set_requests(finalizing=False),
    "/finalize/runnerset": runner_set_requests(finalizing=True),
    "/customize/runnerset": [customize(runner_set_parent(finalizing=False))],
    "/sync/horizontalrunnerautoscaler": autoscaler_requests(),
    "/customize/horizontalrunnerautoscaler": [
        customize(autoscaler("RunnerDeployment", "fuzz")),
        customize(autoscaler("RunnerSet", "fuzz-set")),
    ],
    "/sync/runnerpod": runner_pod_requests(finalizing=False),
    "/finalize/runnerpod": runner_pod_requests(finalizing=True),
    "/customize/runnerpod": [
        customize(request["object"]) for request in runner_pod_requests(finalizing=False)
    ],
}
HOOK_PATHS = list(SEEDS)

# The kinds each composite sync keeps when its parent is invalid.
CHILD_KINDS = {
    "/sync/runner": ("Pod", "Secret"),
    "/sync/runnerreplicaset": ("Runner",),
    "/sync/runnerdeployment": ("RunnerReplicaSet",),
    "/sync/runnerset": ("StatefulSet", "Secret", "PersistentVolumeClaim"),
    "/sync/horizontalrunnerautoscaler": ("CapacityReservation",),
}

# ------------------------------------------------------------------ random values

# Counts stay small: a spec asking for billions of runners is a different problem (how many
# children one answer may create), and would make an example take forever.
COUNT_KEYS = {"replicas", "minReplicas", "maxReplicas", "desiredReplicas", "failures"}
SPECIAL_STRINGS = [
    "",
    " ",
    "runner",
    "docker",
    "Ready",
    "True",
    "False",
    "Unknown",
    "Running",
    "Pending",
    "Succeeded",
    "Failed",
    "NodeLost",
    "Completed",
    "Unregistered",
    "PodDeleted",
    "RunnerDeployment",
    "RunnerSet",
    "apps/v1",
    API,
    "123",
    "-1",
    "1e999",
    "0x1f",
    "30m",
    "-5s",
    "99999999999h",
    "1" * 20_000,  # a number with no unit: read in one pass, not one per way of splitting it
    "1Ei",  # quantities Kubernetes reads: exbi, exa, a large exponent
    "1E",
    "1e9999999",
    "0.5",
    "NaN",
    "Weekly",
    "acme/app",
    "a" * 300,
    "\u00fc\u4e2d\U0001f600",
    "\x00",
    BEFORE,
    AFTER,
    "2026-01-01T00:00:00",  # no timezone
    "2026-01-01T00:00:00+14:00",
    "2026-01-01",
    "2026-02-30T00:00:00Z",
    "0001-01-01T00:00:00Z",
    "9999-12-31T23:59:59Z",
    "9999-12-31T23:59:59-14:00",
    "9999-12-31T23:00:00-14:00",  # valid RFC 3339, past year 9999 in UTC
    "0001-01-01T00:00:00+14:00",  # before year 1 in UTC
    "2100-01-01T00:00:00Z",  # a record from the future
    "yesterday",
    b64("token"),
    b64("9999-12-31T23:59:59Z"),
    "not base64!",
    '{"reason": "ScaleDown", "startedAt": "0001-01-01T00:00:00Z", "podUid": "pod-uid-x"}',
    '{"reason": 1}',
    "{",
]
SPECIAL_INTEGERS = [0, 1, -1, 2**31 - 1, 2**31, 2**53 + 1, 2**63 - 1, -(2**63), 2**64 - 1]
SAFE_TEXT = st.text(st.characters(codec="utf-8"), max_size=12)


def scalars(count: bool) -> st.SearchStrategy[Json]:
    integers = (
        st.integers(-5, 1100)
        if count
        else st.one_of(st.integers(-1000, 1000), st.sampled_from(SPECIAL_INTEGERS))
    )
    return st.one_of(
        st.none(),
        st.booleans(),
        integers,
        st.floats(allow_nan=False, allow_infinity=False),
        st.sampled_from(SPECIAL_STRINGS),
        SAFE_TEXT,
    )


def json_values(count: bool = False) -> st.SearchStrategy[Json]:
    return st.recursive(
        scalars(count),
        lambda inner: st.one_of(
            st.lists(inner, max_size=3),
            st.dictionaries(
                st.one_of(st.sampled_from(INTERESTING_KEYS), SAFE_TEXT), inner, max_size=3
            ),
        ),
        max_leaves=6,
    )


# Keys the hooks read somewhere: added where they are missing, with values of any type.
INTERESTING_KEYS = [
    "metadata",
    "name",
    "namespace",
    "uid",
    "labels",
    "annotations",
    "ownerReferences",
    "controller",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "creationTimestamp",
    "spec",
    "status",
    "phase",
    "reason",
    "conditions",
    "type",
    "lastTransitionTime",
    "containerStatuses",
    "containers",
    "env",
    "value",
    "state",
    "lastState",
    "running",
    "terminated",
    "startedAt",
    "exitCode",
    "data",
    "replicas",
    "template",
    "scaleTargetRef",
    "desiredReplicas",
    "newestReservationTime",
    "lastSuccessfulScaleOutTime",
    "idleBeyondMinSince",
    "jobCheckTime",
    "effectiveTime",
    "lastFailureTime",
    "lastAttemptAt",
    "failures",
    "expirationTime",
    "gracefulStop",
    "completionTime",
    "startTime",
    "actions-runner/id",
    STOP_ANNOTATION,
    "actions-runner/sync-time",
    "arc-hooks.dev/volume-slot",
]


def value_paths(document: Json) -> list[JsonPath]:
    """Every value's path in `document`, parents before their members."""
    found: list[JsonPath] = []
    pending: list[tuple[JsonPath, Json]] = [((), document)]
    while pending:
        path, value = pending.pop(0)
        if path:
            found.append(path)
        members: list[tuple[str | int, Json]] = []
        if isinstance(value, dict):
            members = list(value.items())
        elif isinstance(value, list):
            members = list(enumerate(value))
        pending += [((*path, key), member) for key, member in members]
    return found


def container_of(document: Json, path: JsonPath) -> Any:
    for key in path[:-1]:
        document = document[key]
    return document


@st.composite
def mutated(draw: st.DrawFn, seeds: list[Json]) -> Json:
    """A seed with one to four of its values replaced, removed, wrapped or added."""
    document = copy.deepcopy(draw(st.sampled_from(seeds)))
    for _ in range(draw(st.integers(1, 4))):
        paths = value_paths(document)
        if not paths:
            break
        path = draw(st.sampled_from(paths))
        container, key = container_of(document, path), path[-1]
        operation = draw(st.sampled_from(["replace", "replace", "remove", "wrap", "add"]))
        if operation == "replace":
            container[key] = draw(json_values(count=key in COUNT_KEYS))
        elif operation == "remove":
            del container[key]
        elif operation == "wrap":
            container[key] = draw(st.sampled_from([[container[key]], {"value": container[key]}]))
        elif isinstance(container[key], dict):
            added = draw(st.sampled_from(INTERESTING_KEYS))
            container[key][added] = draw(json_values(count=added in COUNT_KEYS))
    return document


def nested(depth: int, shape: str) -> bytes:
    if shape == "list":
        return b"[" * depth + b"]" * depth
    return b'{"a":' * depth + b"null" + b"}" * depth


DEEP_MARK = "\u2063deep\u2063"


@st.composite
def deeply_nested(draw: st.DrawFn, seeds: list[Json]) -> tuple[bytes, int]:
    """A seed with JSON nested hundreds of levels deep in place of one of its values, and the
    body's nesting depth."""
    document = copy.deepcopy(draw(st.sampled_from(seeds)))
    path = draw(st.sampled_from(value_paths(document)))
    container_of(document, path)[path[-1]] = DEEP_MARK
    depth = draw(st.one_of(st.integers(200, 1100), st.sampled_from([240, 245, 250, 254, 255])))
    inner = depth - len(path)  # the body's own levels above the value count too
    chain = nested(max(inner, 1), draw(st.sampled_from(["list", "object"])))
    return orjson.dumps(document).replace(orjson.dumps(DEEP_MARK), chain), len(path) + inner


METACONTROLLER_KEYS = ["controller", "parent", "object", "children", "related", "attachments"]


def malformed_bodies() -> st.SearchStrategy[bytes]:
    """Bodies that are not hook requests: not JSON, not an object, or fields of wrong types."""
    shaped = st.fixed_dictionaries(
        {},
        optional={
            **{key: json_values() for key in METACONTROLLER_KEYS},
            "finalizing": json_values(),
        },
    )
    documents = st.one_of(json_values(), shaped).map(orjson.dumps)
    not_json = st.one_of(
        st.binary(max_size=40),
        st.sampled_from([b"", b"{", b'{"parent": NaN}', b'"\\ud800"', b"1e999", b"[" * 1025]),
    )
    return st.one_of(documents, not_json)


# ------------------------------------------------------------------ the app and the checks


class LastError(logging.Handler):
    """The last traceback the app logged, to explain a 500."""

    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.text = ""

    def emit(self, record: logging.LogRecord) -> None:
        self.text = logging.Formatter().format(record)


@contextmanager
def hook_server(
    env: dict[str, object] | None = None, github: InMemoryGitHub | None = None
) -> Iterator[tuple[TestClient, LastError]]:
    clock = ManualClock()
    github = github or InMemoryGitHub(clock)
    errors = LastError()
    logger = logging.getLogger("arc_hooks")
    logger.addHandler(errors)
    app = create_app(
        hook_settings(env), github=github, clock=clock, kube=WithoutParentReads(cluster(clock))
    )
    try:
        with hook_client(app) as client:
            yield client, errors
    finally:
        logger.removeHandler(errors)


def post(client: TestClient, path: str, body: bytes) -> Any:
    return client.post(path, content=body, headers={"Content-Type": "application/json"})


def check_answer(path: str, request: Json, response: Any, errors: LastError) -> None:
    assert response.status_code < 500, f"{response.status_code} {response.text}\n{errors.text}"
    assert HOOK_TOKEN not in response.text and GITHUB_TOKEN not in response.text
    answer = response.json()
    if response.status_code >= 400:
        assert isinstance(answer.get("error"), str) and answer["error"], answer
        assert len(answer["error"]) < 2000
        return
    assert response.status_code == 200, response.text
    if path.startswith("/customize/"):
        assert isinstance(answer["relatedResources"], list)
    elif path.endswith("/runnerpod"):
        assert isinstance(answer["labels"], dict) and isinstance(answer["annotations"], dict)
    else:
        assert isinstance(answer["children"], list)
        assert all(isinstance(child, dict) for child in answer["children"])
        assert answer["status"] is None or isinstance(answer["status"], dict)
        if path in CHILD_KINDS and invalid(answer):
            assert_children_kept(request, answer, CHILD_KINDS[path])


def invalid(answer: Json) -> bool:
    conditions = (answer.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Valid" and c.get("status") == "False" for c in conditions)


def assert_children_kept(request: Json, answer: Json, kinds: tuple[str, ...]) -> None:
    """Every observed child of the kinds the controller owns is in the answer, as it was."""
    for group, members in (request.get("children") or {}).items():
        if group.split(".", 1)[0] not in kinds:
            continue
        for observed in members.values():
            name = observed["metadata"]["name"]
            kept = [
                child
                for child in answer["children"]
                if child.get("kind") == observed.get("kind") and child["metadata"]["name"] == name
            ]
            assert kept, f"observed {name} not kept"
            if "spec" in observed:
                assert any(child.get("spec") == observed["spec"] for child in kept)


def assert_still_serving(client: TestClient, path: str) -> None:
    for seed in SEEDS[path]:
        response = post(client, path, orjson.dumps(seed))
        assert response.status_code == 200, response.text


# ------------------------------------------------------------------ the hooks


@pytest.mark.parametrize(
    ("path", "longest", "stated"),
    [
        # the value of its runners' runner-deployment-name label
        ("/sync/runnerdeployment", 63, "at most 63 characters"),
        # its Runners are named <set>-<uid tag><counter of up to 13>
        ("/sync/runnerreplicaset", 235, "at most 235 characters"),
        # its claims are named <template>-<set>-<slot>; the seed's template is "work"
        ("/sync/runnerset", 244 - len("work"), "at most 244 characters together"),
    ],
)
def test_a_name_too_long_for_the_children_it_names_is_invalid(
    path: str, longest: int, stated: str
) -> None:
    """A custom resource's name may have 253 characters, but these sets name children after
    themselves: past `longest`, a child would be refused by the API server. The set is invalid,
    keeps what it has, and asks for nothing new; at `longest` it is valid."""
    with hook_server() as (client, errors):
        for length, valid in ((longest, True), (longest + 1, False), (253, False)):
            for seed in SEEDS[path]:
                request = copy.deepcopy(seed)
                request["parent"]["metadata"]["name"] = "a" * length
                response = post(client, path, orjson.dumps(request))
                check_answer(path, request, response, errors)  # keeps what it has if invalid
                status = response.json()["status"]
                assert invalid(response.json()) != valid, (length, status)
                if not valid:
                    (message,) = [
                        c["message"] for c in status["conditions"] if c["type"] == "Valid"
                    ]
                    assert stated in message
                    assert "a" * 64 not in message  # names the field, not its value


@pytest.mark.parametrize(
    "break_spec",
    [
        pytest.param(lambda spec: spec.update(replicas=-1), id="negative-replicas"),
        pytest.param(
            lambda spec: spec.update(containerMode="kubernetes", workVolumeClaimTemplate=None),
            id="container-mode",
        ),
        pytest.param(
            lambda spec: spec["template"]["spec"]["containers"][0].update(
                imagePullPolicy="Sometimes"
            ),
            id="pull-policy",
        ),
    ],
)
def test_a_runner_set_deleted_with_an_invalid_spec_still_stops_its_runners_gracefully(
    break_spec: Any,
) -> None:
    """Its spec still names the scope its runners are registered in: a busy runner is waited
    for as with a valid spec (its StatefulSet kept), not dropped with its job; the problem is
    reported."""
    with hook_server() as (client, errors):
        request = copy.deepcopy(SEEDS["/finalize/runnerset"][0])
        valid = post(client, "/finalize/runnerset", orjson.dumps(request)).json()
        break_spec(request["parent"]["spec"])
        response = post(client, "/finalize/runnerset", orjson.dumps(request))
        check_answer("/finalize/runnerset", request, response, errors)

    def statefulsets(answer: Json) -> list[str]:
        return sorted(
            c["metadata"]["name"] for c in answer["children"] if c["kind"] == "StatefulSet"
        )

    answer = response.json()
    assert statefulsets(valid), "the seed has runners to stop"
    assert statefulsets(answer) == statefulsets(valid)
    assert answer["finalized"] is False
    assert invalid(answer)


@pytest.mark.parametrize("quantity", ["1Ei", "1E", "2E3", "1e9999999", "1e99999999999", "1" * 9999])
@pytest.mark.parametrize("finalizing", [False, True])
def test_any_quantity_text_is_answered(quantity: str, finalizing: bool) -> None:
    """A Runner's resources may hold any quantity Kubernetes reads (or text it does not): the
    sync answers, and a finalize still lets the Runner go."""
    request = runner_requests(finalizing)[0]
    request["parent"]["spec"]["resources"] = {"limits": {"memory": quantity, "cpu": quantity}}
    with hook_server() as (client, errors):
        path = "/finalize/runner" if finalizing else "/sync/runner"
        response = post(client, path, orjson.dumps(request))
        check_answer(path, request, response, errors)
        assert response.status_code == 200
        if finalizing:
            assert response.json()["finalized"] is True


@pytest.mark.parametrize("path", HOOK_PATHS)
def test_mutated_requests_never_get_a_5xx(path: str) -> None:
    with hook_server() as (client, errors):

        @FUZZ
        @given(request=mutated(SEEDS[path]))
        def check(request: Json) -> None:
            response = post(client, path, orjson.dumps(request))
            check_answer(path, request, response, errors)

        check()
        assert_still_serving(client, path)


@pytest.mark.parametrize("path", HOOK_PATHS)
def test_malformed_or_deep_bodies_never_get_a_5xx(path: str) -> None:
    with hook_server() as (client, errors):

        @FUZZ
        @given(body=malformed_bodies(), deep=deeply_nested(SEEDS[path]), which=st.booleans())
        def check(body: bytes, deep: tuple[bytes, int], which: bool) -> None:
            if which:
                response = post(client, path, body)
                check_answer(path, None, response, errors)
                return
            deep_body, depth = deep
            response = post(client, path, deep_body)
            check_answer(path, orjson.loads(deep_body) if depth <= 1024 else None, response, errors)
            if depth > 254:  # more than orjson can write back
                assert response.status_code == 400, response.text

        check()
        assert_still_serving(client, path)


# ------------------------------------------------------------------ GitHub's webhook


def cluster(clock: ManualClock) -> ObjectStore:
    """A webhook-driven HRA and its RunnerDeployment, for deliveries that scale."""
    store = ObjectStore(clock)
    store.create(autoscaler("RunnerDeployment", "fuzz"))
    store.create(
        {
            "apiVersion": API,
            "kind": "RunnerDeployment",
            "metadata": {"name": "fuzz", "namespace": NS},
            "spec": {"template": {"spec": {"organization": "acme", "labels": ["linux"]}}},
        }
    )
    return store


def workflow_job(action: str) -> Json:
    return {
        "action": action,
        "workflow_job": {
            "id": 77,
            "run_id": 99,
            "name": "build",
            "status": action,
            "labels": ["self-hosted", "linux"],
            "conclusion": "success" if action == "completed" else None,
            "runner_id": None,
            "created_at": BEFORE,
            "started_at": BEFORE,
            "completed_at": None,
        },
        "repository": {
            "name": "app",
            "full_name": "acme/app",
            "owner": {"login": "acme", "type": "Organization"},
        },
        "organization": {"login": "acme"},
        "enterprise": {"slug": "corp"},
        "installation": {"id": 5},
    }


DELIVERIES = [
    workflow_job("queued"),
    workflow_job("completed"),
    {"zen": "Keep it simple.", "hook_id": 1},
]
HEADER_TEXT = st.text(st.characters(min_codepoint=32, max_codepoint=126), max_size=20)


@st.composite
def deliveries(draw: st.DrawFn) -> tuple[dict[str, str], bytes]:
    payload = draw(st.one_of(mutated(DELIVERIES), json_values()))
    text = orjson.dumps(payload)
    content_type = draw(
        st.sampled_from(["application/json", "application/x-www-form-urlencoded", "text/plain"])
        | HEADER_TEXT
    )
    body = text
    if content_type == "application/x-www-form-urlencoded":
        body = urlencode({"payload": text.decode()}).encode()
    elif draw(st.booleans()) and len(text) > 2:
        body = draw(st.sampled_from([text[:-1], b"[" * 1100, text.replace(b"{", b"[", 1)]))
    headers = {
        "Content-Type": content_type,
        "X-GitHub-Event": draw(st.sampled_from(["workflow_job", "ping", "push", ""]) | HEADER_TEXT),
        "X-GitHub-Delivery": draw(HEADER_TEXT),
        "X-Hub-Signature-256": signature_256(WEBHOOK_SECRET, body),
    }
    return headers, body


def test_signed_random_deliveries_never_get_a_5xx() -> None:
    with hook_server({"GITHUB_WEBHOOK_SECRET_TOKEN": WEBHOOK_SECRET}) as (client, errors):

        @FUZZ
        @given(delivery=deliveries())
        def check(delivery: tuple[dict[str, str], bytes]) -> None:
            headers, body = delivery
            response = client.post("/webhook/github", content=body, headers=headers)
            assert response.status_code < 500, f"{response.text}\n{errors.text}"
            assert WEBHOOK_SECRET not in response.text and response.text

        check()
        body = orjson.dumps(
            {
                **workflow_job("queued"),
                "workflow_job": {**workflow_job("queued")["workflow_job"], "id": 12345},
            }
        )
        headers = {
            "Content-Type": "application/json",
            "X-GitHub-Event": "workflow_job",
            "X-Hub-Signature-256": signature_256(WEBHOOK_SECRET, body),
        }
        response = client.post("/webhook/github", content=body, headers=headers)
        assert response.status_code == 200, response.text


@pytest.mark.parametrize(
    ("path", "requests"),
    [
        ("/sync/runnerdeployment", lambda: deployment_requests()[1]),
        ("/sync/runnerreplicaset", lambda: replica_set_requests()[1]),
        ("/sync/runnerset", lambda: runner_set_requests(False)[1]),
    ],
)
def test_a_templates_controller_uid_label_is_not_given_to_children(
    path: str, requests: Any
) -> None:
    # Found by a hostile probe: template labels copied from a Job's pod carry
    # `controller-uid`; the children carried it too, and Metacontroller's generated selector
    # (controller-uid=<parent uid>, added only where missing) refused the whole answer.
    request = copy.deepcopy(requests())
    template = request["parent"]["spec"]["template"]
    template.setdefault("metadata", {}).setdefault("labels", {})["controller-uid"] = "job-pod"
    with hook_server() as (client, _):
        response = post(client, path, orjson.dumps(request))
    assert response.status_code == 200, response.text
    answer = response.json()
    assert answer["children"]
    for child in answer["children"]:
        assert "controller-uid" not in (child["metadata"].get("labels") or {}), child["kind"]
