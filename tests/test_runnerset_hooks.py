"""The RunnerSet hooks over HTTP, driven the way Metacontroller drives them.

`RunnerSetWorld` keeps one RunnerSet, its observed children and the pods of its StatefulSets.
Each call posts a v2 request in Metacontroller's shapes and applies the answer as Metacontroller
does: new children get a uid and a creationTimestamp, omitted ones are deleted, StatefulSets and
Secrets are updated in place, claims never are (OnDelete), the status is replaced. It then plays
the StatefulSet controller and the kubelet in the smallest way the hook can notice: a StatefulSet
of one replica gets its pod `<name>-0` built from its template, one scaled to zero (or deleted)
sees its pod terminate, and a terminating pod is gone after the next call. Runner containers
start, end and restart only when a test says so. Time moves only through the ManualClock.
"""

from __future__ import annotations

import base64
import copy
import itertools
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import kubernetes_validate
import orjson
import pytest
import yaml
from starlette.testclient import TestClient

from hooks.app import create_app
from hooks.children import as_kept
from hooks.clock import ManualClock, format_time
from hooks.github.port import GitHubError, RemoveOutcome, RemoveResult, Scope
from hooks.naming import SYNC_TIME_ANNOTATION
from hooks.runner_seal import SEAL_ANNOTATION, seal_holds, seal_key
from hooks.runnerset.decide import MAX_RUNNERS_CALLED_FOR_PER_SYNC
from hooks.scale_target import MAX_NEW_RUNNERS_PER_SYNC, NEXT_BATCH_SECONDS
from hooks.settings import Settings
from tests.call_log import record_calls
from tests.hook_app import hook_client, hook_settings
from tests.in_memory_github import InMemoryGitHub, rate_limited

KubeObject = dict[str, Any]

API = "actions.summerwind.dev/v1alpha1"
NAMESPACE = "ci"
SET_NAME = "build"
ORG = Scope(organization="acme")
K8S_VERSION = "1.35.0"
STOP_ANNOTATION = "arc-hooks.dev/graceful-stop"
LAST_APPLIED = "metacontroller.k8s.io/last-applied-configuration"
SLOT_LABEL = "arc-hooks.dev/volume-slot"
RETRY_DELAY = 60.0  # UNREGISTRATION_RETRY_DELAY's default

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = ROOT / "tests" / "reference" / "arc-legacy-crds" / "runnerset-samples.yaml"
CONTROLLER: KubeObject = yaml.safe_load(
    (ROOT / "metacontroller" / "runnerset-controller.yaml").read_text()
)

STATEFULSETS = "StatefulSet.apps/v1"
SECRETS = "Secret.v1"
CLAIMS = "PersistentVolumeClaim.v1"
PODS = "Pod.v1"
AUTOSCALERS = f"HorizontalRunnerAutoscaler.{API}"
CHILD_GROUPS = {"StatefulSet": STATEFULSETS, "Secret": SECRETS, "PersistentVolumeClaim": CLAIMS}

_uids = itertools.count(1)


# ---------------------------------------------------------------- objects


def runner_set(replicas: int | None = 1, **spec: Any) -> KubeObject:
    """A RunnerSet as the API server serves it (ARC's required selector and template)."""
    body: KubeObject = {
        "organization": "acme",
        "labels": ["linux"],
        "selector": {"matchLabels": {"app": SET_NAME}},
        "serviceName": SET_NAME,
        "template": {"metadata": {"labels": {"app": SET_NAME}}},
        **spec,
    }
    if replicas is not None:
        body["replicas"] = replicas
    return {
        "apiVersion": API,
        "kind": "RunnerSet",
        "metadata": {
            "name": SET_NAME,
            "namespace": NAMESPACE,
            "uid": "6b3f9c1e-0d7a-4c55-9a43-1f2e3d4c5b6a",
            "generation": 1,
            "resourceVersion": "1",
            "creationTimestamp": "2025-12-31T00:00:00Z",
        },
        "spec": body,
    }


def claim_template(name: str) -> KubeObject:
    return {
        "metadata": {"name": name},
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}},
    }


def autoscaler(name: str, target: dict[str, str], desired: int | None) -> KubeObject:
    return {
        "apiVersion": API,
        "kind": "HorizontalRunnerAutoscaler",
        "metadata": {"name": name, "namespace": NAMESPACE, "uid": f"hra-{name}"},
        "spec": {"scaleTargetRef": target, "minReplicas": 0, "maxReplicas": 10},
        "status": {} if desired is None else {"desiredReplicas": desired},
    }


def runner_running(since: str) -> KubeObject:
    """The runner container runs and the pod is Ready."""
    return {
        "phase": "Running",
        "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": since}],
        "containerStatuses": [
            {
                "name": "runner",
                "ready": True,
                "restartCount": 0,
                "state": {"running": {"startedAt": since}},
            }
        ],
    }


def runner_terminated(exit_code: int, at: str) -> KubeObject:
    """The runner container exited and has not been restarted yet."""
    return {
        "phase": "Running",
        "conditions": [{"type": "Ready", "status": "False", "lastTransitionTime": at}],
        "containerStatuses": [
            {
                "name": "runner",
                "ready": False,
                "restartCount": 0,
                "state": {"terminated": {"exitCode": exit_code, "finishedAt": at}},
            }
        ],
    }


def runner_restarted(exit_code: int, at: str) -> KubeObject:
    """The runner container exited once and the kubelet restarted it (restartPolicy Always)."""
    return {
        "phase": "Running",
        "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": at}],
        "containerStatuses": [
            {
                "name": "runner",
                "ready": True,
                "restartCount": 1,
                "state": {"running": {"startedAt": at}},
                "lastState": {"terminated": {"exitCode": exit_code, "finishedAt": at}},
            }
        ],
    }


def runner_cannot_start() -> KubeObject:
    """The kubelet cannot create the runner container: its RUNNER_TOKEN key is missing."""
    return {
        "phase": "Pending",
        "conditions": [{"type": "Ready", "status": "False"}],
        "containerStatuses": [
            {
                "name": "runner",
                "ready": False,
                "restartCount": 0,
                "state": {
                    "waiting": {
                        "reason": "CreateContainerConfigError",
                        "message": "couldn't find key token in Secret",
                    }
                },
            }
        ],
    }


# ---------------------------------------------------------------- reading answers


def of_kind(answer: dict[str, Any], kind: str) -> dict[str, KubeObject]:
    return {c["metadata"]["name"]: c for c in answer["children"] if c["kind"] == kind}


def stop_record(sts: KubeObject) -> dict[str, Any] | None:
    text = (sts["metadata"].get("annotations") or {}).get(STOP_ANNOTATION)
    return json.loads(text) if text else None


def runner_container(sts: KubeObject) -> KubeObject:
    containers = sts["spec"]["template"]["spec"]["containers"]
    found: KubeObject = next(c for c in containers if c["name"] == "runner")
    return found


def env_of(sts: KubeObject) -> dict[str, KubeObject]:
    return {e["name"]: e for e in runner_container(sts).get("env") or []}


def claims_mounted(sts: KubeObject) -> dict[str, str]:
    """Volume name -> claim name, for the volumes backed by a claim."""
    return {
        v["name"]: v["persistentVolumeClaim"]["claimName"]
        for v in sts["spec"]["template"]["spec"].get("volumes") or []
        if "persistentVolumeClaim" in v
    }


def condition(status: dict[str, Any], kind: str) -> dict[str, Any]:
    found: dict[str, Any] = next(c for c in status["conditions"] if c["type"] == kind)
    return found


def validate(obj: KubeObject) -> None:
    kubernetes_validate.validate(obj, K8S_VERSION, strict=True)


def assert_mounts_have_volumes(sts: KubeObject) -> None:
    """What the API server would reject and kubernetes-validate does not check."""
    pod_spec = sts["spec"]["template"]["spec"]
    volumes = [v["name"] for v in pod_spec.get("volumes") or []]
    assert len(volumes) == len(set(volumes)), f"duplicate volumes: {volumes}"
    for container in pod_spec["containers"] + pod_spec.get("initContainers", []):
        for mount in container.get("volumeMounts") or []:
            assert mount["name"] in volumes, f"{container['name']} mounts {mount['name']}"


# ---------------------------------------------------------------- the world


@dataclass
class RunnerSetWorld:
    client: TestClient
    github: InMemoryGitHub
    clock: ManualClock
    parent: KubeObject
    children: dict[tuple[str, str], KubeObject] = field(default_factory=dict)
    pods: dict[str, KubeObject] = field(default_factory=dict)
    autoscalers: list[KubeObject] = field(default_factory=list)
    last: dict[str, Any] = field(default_factory=dict)
    created: list[tuple[str, str]] = field(default_factory=list)
    deleted: list[tuple[str, str]] = field(default_factory=list)

    # --- Metacontroller

    def request(self, *, finalizing: bool = False) -> dict[str, Any]:
        children: dict[str, dict[str, KubeObject]] = {g: {} for g in CHILD_GROUPS.values()}
        for (kind, name), obj in sorted(self.children.items()):
            children[CHILD_GROUPS[kind]][f"{NAMESPACE}/{name}"] = copy.deepcopy(obj)
        related = {
            PODS: {f"{NAMESPACE}/{n}": copy.deepcopy(p) for n, p in sorted(self.pods.items())},
            AUTOSCALERS: {
                f"{NAMESPACE}/{h['metadata']['name']}": copy.deepcopy(h) for h in self.autoscalers
            },
        }
        return {
            "controller": CONTROLLER,
            "parent": copy.deepcopy(self.parent),
            "children": children,
            "related": related,
            "finalizing": finalizing,
        }

    def sync(self) -> dict[str, Any]:
        return self._call("/sync/runnerset", finalizing=False)

    def finalize(self) -> dict[str, Any]:
        self.parent["metadata"].setdefault("deletionTimestamp", format_time(self.clock.now()))
        return self._call("/finalize/runnerset", finalizing=True)

    def _call(self, path: str, *, finalizing: bool) -> dict[str, Any]:
        terminating = [n for n, p in self.pods.items() if p["metadata"].get("deletionTimestamp")]
        response = self.client.post(path, json=self.request(finalizing=finalizing))
        assert response.status_code == 200, response.text
        answer: dict[str, Any] = response.json()
        self._assert_no_token_outside_secrets(answer)
        self.last = answer
        self._apply(answer)
        for name in terminating:  # the kubelet has finished what was terminating before
            self.pods.pop(name, None)
        self._run_statefulset_controller()
        return answer

    def _assert_no_token_outside_secrets(self, answer: dict[str, Any]) -> None:
        tokens = [f"AABBCCTOKEN{i:04d}" for i in range(1, self.github.tokens_issued + 1)]
        elsewhere = json.dumps(
            {
                "status": answer.get("status"),
                "children": [c for c in answer["children"] if c["kind"] != "Secret"],
            }
        )
        for token in tokens:
            assert token not in elsewhere

    def _apply(self, answer: dict[str, Any]) -> None:
        status = dict(answer.get("status") or {})
        status["observedGeneration"] = self.parent["metadata"]["generation"]
        self.parent["status"] = status
        if answer.get("finalized"):
            return  # the finalizer goes first: this answer's children are not applied
        desired: dict[tuple[str, str], KubeObject] = {}
        for child in answer["children"]:
            key = (child["kind"], child["metadata"]["name"])
            assert key not in desired, f"{key} answered twice"
            assert child["kind"] in CHILD_GROUPS, f"not a child type: {key}"
            desired[key] = child
        for key in sorted(self.children):
            if key not in desired and not self.children[key]["metadata"].get("deletionTimestamp"):
                self._delete(key)
        for key, obj in desired.items():
            if key in self.children:
                self._update(self.children[key], obj)
            else:
                self._create(key, obj)

    def _create(self, key: tuple[str, str], desired: KubeObject) -> None:
        created = copy.deepcopy(desired)
        metadata = created["metadata"]
        metadata.setdefault("namespace", NAMESPACE)
        metadata["uid"] = f"{key[0].lower()}-uid-{next(_uids)}"
        metadata["creationTimestamp"] = format_time(self.clock.now())
        metadata["generation"] = 1
        metadata["annotations"] = {
            **(metadata.get("annotations") or {}),
            LAST_APPLIED: json.dumps(desired),
        }
        metadata["ownerReferences"] = [
            {
                "apiVersion": API,
                "kind": "RunnerSet",
                "name": self.parent["metadata"]["name"],
                "uid": self.parent["metadata"]["uid"],
                "controller": True,
                "blockOwnerDeletion": True,
            }
        ]
        self.children[key] = created
        self.created.append(key)

    def _update(self, observed: KubeObject, desired: KubeObject) -> None:
        kind = observed["kind"]
        if kind == "PersistentVolumeClaim":  # OnDelete; a claim's spec is immutable anyway
            assert desired.get("spec") == observed.get("spec")
            return
        if kind == "StatefulSet":
            # A runner's StatefulSet only ever changes its replicas and annotations.
            assert desired["spec"]["template"] == observed["spec"]["template"]
            assert desired["spec"]["selector"] == observed["spec"]["selector"]
            last_applied = (observed["metadata"].get("annotations") or {}).get(LAST_APPLIED)
            observed["metadata"]["labels"] = dict(desired["metadata"].get("labels") or {})
            observed["metadata"]["annotations"] = {
                **(desired["metadata"].get("annotations") or {}),
                **({LAST_APPLIED: last_applied} if last_applied is not None else {}),
            }
            if desired["spec"] != observed["spec"]:
                observed["metadata"]["generation"] += 1
            observed["spec"] = copy.deepcopy(desired["spec"])
        if kind == "Secret":
            observed["data"] = copy.deepcopy(desired.get("data") or {})

    def _delete(self, key: tuple[str, str]) -> None:
        self.children.pop(key)
        self.deleted.append(key)
        if key[0] == "StatefulSet":  # garbage collection, in the background
            pod = self.pods.get(f"{key[1]}-0")
            if pod is not None:
                self.delete_pod(pod)

    # --- the StatefulSet controller and the kubelet

    def _run_statefulset_controller(self) -> None:
        for (kind, name), sts in sorted(self.children.items()):
            if kind != "StatefulSet":
                continue
            pod = self.pods.get(f"{name}-0")
            if sts["spec"]["replicas"] >= 1 and pod is None:
                self.pods[f"{name}-0"] = self._new_pod(sts)
            elif sts["spec"]["replicas"] == 0 and pod is not None:
                self.delete_pod(pod)

    def _new_pod(self, sts: KubeObject) -> KubeObject:
        name = sts["metadata"]["name"]
        template = sts["spec"]["template"]
        return {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": f"{name}-0",
                "namespace": NAMESPACE,
                "uid": f"pod-uid-{next(_uids)}",
                "creationTimestamp": format_time(self.clock.now()),
                "labels": {
                    **template["metadata"]["labels"],
                    "statefulset.kubernetes.io/pod-name": f"{name}-0",
                    "apps.kubernetes.io/pod-index": "0",
                },
                "annotations": dict(template["metadata"].get("annotations") or {}),
                "ownerReferences": [
                    {
                        "apiVersion": "apps/v1",
                        "kind": "StatefulSet",
                        "name": name,
                        "uid": sts["metadata"]["uid"],
                        "controller": True,
                        "blockOwnerDeletion": True,
                    }
                ],
            },
            "spec": {**copy.deepcopy(template["spec"]), "hostname": f"{name}-0"},
            "status": {"phase": "Pending"},
        }

    def delete_pod(self, pod: KubeObject) -> None:
        pod["metadata"].setdefault("deletionTimestamp", format_time(self.clock.now()))

    # --- what tests look at

    def statefulsets(self) -> dict[str, KubeObject]:
        return {n: o for (k, n), o in sorted(self.children.items()) if k == "StatefulSet"}

    def runners(self) -> list[str]:
        """StatefulSets still meant to run a runner: one replica, no stop recorded."""
        return [
            name
            for name, sts in self.statefulsets().items()
            if sts["spec"]["replicas"] == 1 and stop_record(sts) is None
        ]

    def claims(self) -> dict[str, KubeObject]:
        return {n: o for (k, n), o in sorted(self.children.items()) if k == "PersistentVolumeClaim"}

    def secret_data(self, sts_name: str) -> dict[str, str] | None:
        secret = self.children.get(("Secret", f"{sts_name}-registration"))
        if secret is None:
            return None
        return {k: base64.b64decode(v).decode() for k, v in (secret.get("data") or {}).items()}

    def pod(self, sts_name: str) -> KubeObject:
        return self.pods[f"{sts_name}-0"]

    # --- what tests do to the world

    def scale(self, replicas: int) -> None:
        self.parent["spec"]["replicas"] = replicas
        self.parent["metadata"]["generation"] += 1

    def change_spec(self, **changes: Any) -> None:
        self.parent["spec"] = {**self.parent["spec"], **changes}
        self.parent["metadata"]["generation"] += 1

    def grow(self, count: int) -> list[str]:
        """Add `count` runners one at a time, a minute apart (so each is newer than the last);
        returns the names of the new StatefulSets, oldest first."""
        before = set(self.statefulsets())
        for _ in range(count):
            self.scale(len(self.runners()) + 1)
            self.sync()
            self.clock.advance(60)
        added = [n for n in self.statefulsets() if n not in before]
        return sorted(added, key=lambda n: self.statefulsets()[n]["metadata"]["creationTimestamp"])

    def set_runner(self, sts_name: str, status: KubeObject) -> None:
        self.pod(sts_name)["status"] = status

    def start(self, sts_name: str, *, register: bool = True, busy: bool = False) -> None:
        """The runner container starts, and the runner registers with GitHub."""
        self.set_runner(sts_name, runner_running(format_time(self.clock.now())))
        if register:
            self.github.register(ORG, f"{sts_name}-0", busy=busy)

    def settle(self, calls: int = 3) -> dict[str, Any]:
        for _ in range(calls):
            self.sync()
        return self.last

    def two_runners_one_running(self) -> WorldSnapshot:
        """Two runners with a claim template each, the older one running: what the invalid-spec
        tests then change. Returns the world as it stands."""
        self.change_spec(volumeClaimTemplates=[claim_template("cache")])
        names = self.grow(2)
        self.start(names[0])
        self.sync()
        return WorldSnapshot(
            copy.deepcopy(self.children),
            len(self.created),
            len(self.deleted),
            len(self.github.calls),
        )

    def assert_untouched_since(self, before: WorldSnapshot) -> None:
        """No child changed, none was created or deleted, and GitHub was not called."""
        assert self.children == before.children
        assert len(self.created) == before.created and len(self.deleted) == before.deleted
        assert len(self.github.calls) == before.github_calls


@dataclass(frozen=True)
class WorldSnapshot:
    children: dict[tuple[str, str], KubeObject]
    created: int
    deleted: int
    github_calls: int


@pytest.fixture
def world(client: TestClient, github: InMemoryGitHub, clock: ManualClock) -> RunnerSetWorld:
    return RunnerSetWorld(client, github, clock, runner_set(replicas=0))


# ---------------------------------------------------------------- 1. scale-up


def test_scale_up_creates_one_statefulset_of_one_replica_per_runner(
    world: RunnerSetWorld,
) -> None:
    world.scale(3)
    answer = world.sync()

    statefulsets = of_kind(answer, "StatefulSet")
    secrets = of_kind(answer, "Secret")
    assert len(statefulsets) == 3
    prefix = f"{SET_NAME}-"
    tags = {name.removeprefix(prefix)[:4] for name in statefulsets}
    assert len(tags) == 1 and tags.pop().isalnum()
    assert sorted(name.removeprefix(prefix)[4:] for name in statefulsets) == ["0", "1", "2"]
    for name, sts in statefulsets.items():
        validate(sts)
        assert sts["spec"]["replicas"] == 1
        pod_template = sts["spec"]["template"]
        assert pod_template["spec"]["restartPolicy"] == "Always"
        labels = pod_template["metadata"]["labels"]
        assert labels["runnerset-name"] == SET_NAME
        assert labels["runner-template-hash"] == sts["metadata"]["labels"]["runner-template-hash"]
        assert "actions-runner" in labels
        assert labels["app"] == SET_NAME  # the user's template labels stay
        assert sts["metadata"]["labels"]["runnerset-name"] == SET_NAME
        selector = sts["spec"]["selector"]["matchLabels"]
        assert selector and selector.items() <= labels.items()
        env = env_of(sts)
        assert env["RUNNER_NAME"] == {"name": "RUNNER_NAME", "value": f"{name}-0"}
        assert env["RUNNER_TOKEN"]["valueFrom"] == {
            "secretKeyRef": {"name": f"{name}-registration", "key": "token"}
        }
        secret = secrets[f"{name}-registration"]
        validate(secret)
        token = base64.b64decode(secret["data"]["token"]).decode()
        assert token.startswith("AABBCCTOKEN")
    assert world.github.count("registration_token") == 1  # one token serves one scale-up
    status = answer["status"]
    assert status["replicas"] == status["updatedReplicas"] == status["desiredReplicas"] == 3
    assert status["nextRunnerIndex"] == 3


def test_a_scale_up_to_thousands_creates_a_bounded_batch_per_sync(world: RunnerSetWorld) -> None:
    # replicas is any int32: one answer with two billion StatefulSets had run out of memory.
    world.scale(2**31 - 1)
    answer = world.sync()

    assert len(of_kind(answer, "StatefulSet")) == MAX_NEW_RUNNERS_PER_SYNC
    assert answer["resyncAfterSeconds"] == NEXT_BATCH_SECONDS
    world.sync()
    assert len(world.statefulsets()) == 2 * MAX_NEW_RUNNERS_PER_SYNC
    assert world.github.count("registration_token") == 2  # one per batch


def test_statefulset_names_stay_short_enough_for_their_pods_as_the_counter_grows(
    world: RunnerSetWorld,
) -> None:
    world.parent["metadata"]["name"] = "n" * 46
    world.parent["status"] = {"nextRunnerIndex": 36}  # 36 ephemeral runners came and went
    world.scale(1)

    answer = world.sync()

    valid = condition(answer["status"], "Valid")
    statefulsets = of_kind(answer, "StatefulSet")
    assert valid["status"] == "False" or all(len(n) <= 52 for n in statefulsets)
    assert valid["status"] == "True" or not statefulsets


def test_a_retried_request_gets_the_same_names(world: RunnerSetWorld) -> None:
    world.scale(2)
    request = world.request()

    first = world.client.post("/sync/runnerset", json=request).json()
    second = world.client.post("/sync/runnerset", json=request).json()

    assert of_kind(first, "StatefulSet").keys() == of_kind(second, "StatefulSet").keys()


def test_names_are_never_reused_by_a_later_scale_up(world: RunnerSetWorld) -> None:
    world.scale(2)
    first = set(of_kind(world.sync(), "StatefulSet"))
    world.scale(0)
    world.settle()
    assert world.statefulsets() == {}

    world.scale(2)
    second = set(of_kind(world.sync(), "StatefulSet"))

    assert len(second) == 2
    assert first.isdisjoint(second)
    assert world.parent["status"]["nextRunnerIndex"] == 4


def test_names_observed_are_skipped_when_the_status_was_lost(world: RunnerSetWorld) -> None:
    world.scale(2)
    existing = set(of_kind(world.sync(), "StatefulSet"))
    world.parent["status"] = {}  # e.g. the RunnerSet was restored from a backup
    world.scale(3)

    answer = world.sync()

    new = set(of_kind(answer, "StatefulSet")) - existing
    assert len(new) == 1
    assert new.pop().endswith("2")
    assert answer["status"]["nextRunnerIndex"] == 3


# ---------------------------------------------------------------- 2. the registration Secret


def test_secret_is_emptied_once_the_runner_started_and_never_refilled(
    world: RunnerSetWorld,
) -> None:
    (name,) = world.grow(1)
    world.sync()  # the pod is pending: the token stays
    assert (world.secret_data(name) or {}).get("token", "").startswith("AABBCCTOKEN")

    world.start(name)
    world.sync()
    emptied = world.secret_data(name)

    assert emptied is not None and "token" not in emptied
    for _ in range(4):  # long past the token's expiry
        world.clock.advance(1800)
        world.sync()
        data = world.secret_data(name)
        assert data is not None and "token" not in data
    assert world.github.count("registration_token") == 1


def test_a_pod_created_again_after_the_token_was_spent_is_replaced(
    world: RunnerSetWorld,
) -> None:
    (name,) = world.grow(1)
    world.start(name)
    world.sync()
    first_pod = world.pod(name)["metadata"]["uid"]
    # The node went away and the pod was force-deleted before the hook saw it terminate; the
    # StatefulSet controller creates it again and the kubelet cannot start its runner.
    del world.pods[f"{name}-0"]
    world.sync()
    assert world.pod(name)["metadata"]["uid"] != first_pod
    world.set_runner(name, runner_cannot_start())

    replaced = world.sync()

    stop = stop_record(of_kind(replaced, "StatefulSet")[name])
    assert stop is not None and stop["reason"] == "PodRecreated"
    assert name not in world.runners() and len(world.runners()) == 1
    world.settle(2)
    assert list(world.statefulsets()) == world.runners()
    # One token for the first runner, one for its replacement: the spent Secret stays empty.
    assert world.github.count("registration_token") == 2


# ---------------------------------------------------------------- 3. scale-down


@pytest.mark.parametrize(
    ("replicas", "chosen"),
    [
        (4, set()),
        (3, {"never-registered"}),
        (2, {"never-registered", "idle-new"}),
        (1, {"never-registered", "idle-new", "idle-old"}),
        (0, {"never-registered", "idle-new", "idle-old", "busy"}),
    ],
    ids=["to-4", "to-3", "to-2", "to-1", "to-0"],
)
def test_scale_down_takes_never_registered_then_newest_idle_and_busy_last(
    world: RunnerSetWorld, replicas: int, chosen: set[str]
) -> None:
    # Created oldest first: rank beats age (the never-registered runner is older than the newest
    # idle one, the busy one newer than the oldest idle one).
    idle_old, never_registered, busy, idle_new = world.grow(4)
    world.start(idle_old)
    world.start(busy, busy=True)
    world.start(idle_new)
    world.sync()
    role = {
        idle_old: "idle-old",
        never_registered: "never-registered",
        busy: "busy",
        idle_new: "idle-new",
    }

    world.scale(replicas)
    answer = world.sync()

    stopping = {role[n] for n, sts in of_kind(answer, "StatefulSet").items() if stop_record(sts)}
    assert stopping == chosen
    assert {n for n, r in role.items() if r not in chosen} == set(world.runners())


def test_idle_runner_is_unregistered_then_scaled_to_zero_then_left_out(
    world: RunnerSetWorld,
) -> None:
    (name,) = world.grow(1)
    world.start(name)
    world.sync()
    pod_uid = world.pod(name)["metadata"]["uid"]

    world.scale(0)
    released = world.sync()

    assert world.github.count("remove_runner") == 1
    assert world.github.runners[ORG] == []
    sts = of_kind(released, "StatefulSet")[name]
    assert sts["spec"]["replicas"] == 0
    stop = stop_record(sts)
    assert stop is not None
    assert stop["outcome"] == "Unregistered" and stop["podUid"] == pod_uid
    assert stop["reason"] == "ScaleDown"
    assert f"{name}-registration" in of_kind(released, "Secret")
    assert world.pod(name)["metadata"].get("deletionTimestamp")

    terminating = world.sync()  # the pod is still terminating
    assert name in of_kind(terminating, "StatefulSet")
    assert f"{name}-registration" in of_kind(terminating, "Secret")

    gone = world.sync()  # the pod is gone
    assert of_kind(gone, "StatefulSet") == {}
    assert of_kind(gone, "Secret") == {}
    assert ("StatefulSet", name) in world.deleted
    assert ("Secret", f"{name}-registration") in world.deleted
    assert world.github.count("remove_runner") == 1


def test_runners_scaled_down_while_busy_count_against_a_scale_up_until_they_go(
    world: RunnerSetWorld,
) -> None:
    """Scaled from 3 to 1 while two runners work, then back to 3: the two finishing their
    jobs count, as ARC counts their running pods, so no more than 3 runners (and
    registrations) exist at once; each is replaced once its job is done."""
    names = world.grow(3)
    for name in names:
        world.start(name, busy=True)
    world.sync()
    world.scale(1)
    world.sync()
    leaving = [n for n in names if n not in world.runners()]
    world.scale(3)

    while_busy = world.sync()

    assert len(leaving) == 2
    assert set(of_kind(while_busy, "StatefulSet")) == set(names)  # none created
    for name in leaving:  # their jobs end: the runners unregister themselves and exit
        world.github.unregister(ORG, f"{name}-0")
        world.set_runner(name, runner_terminated(0, format_time(world.clock.now())))
    world.settle(4)
    assert len(world.runners()) == 3
    assert not set(leaving) & set(world.runners())


# ---------------------------------------------------------------- 4. busy runners


def test_busy_static_runner_is_not_released_while_github_answers_422(
    world: RunnerSetWorld,
) -> None:
    world.change_spec(ephemeral=False)
    (name,) = world.grow(1)
    world.start(name, busy=True)
    world.sync()

    world.scale(0)
    first = world.sync()
    assert world.github.count("remove_runner") == 1
    assert of_kind(first, "StatefulSet")[name]["spec"]["replicas"] == 1
    assert first["resyncAfterSeconds"] == pytest.approx(RETRY_DELAY)

    world.clock.advance(RETRY_DELAY / 2)
    early = world.sync()
    assert world.github.count("remove_runner") == 1  # not before the retry delay
    assert early["resyncAfterSeconds"] == pytest.approx(RETRY_DELAY / 2)

    world.clock.advance(RETRY_DELAY / 2)
    world.sync()
    assert world.github.count("remove_runner") == 2
    assert world.statefulsets()[name]["spec"]["replicas"] == 1
    assert world.pod(name)["metadata"].get("deletionTimestamp") is None

    world.github.set_busy(ORG, f"{name}-0", False)  # the job ended
    world.clock.advance(RETRY_DELAY)
    released = world.sync()
    assert world.github.count("remove_runner") == 3
    assert of_kind(released, "StatefulSet")[name]["spec"]["replicas"] == 0
    assert world.github.runners[ORG] == []


def test_busy_ephemeral_runner_is_waited_for_without_a_second_delete(
    world: RunnerSetWorld,
) -> None:
    (name,) = world.grow(1)
    world.start(name, busy=True)
    world.sync()

    world.scale(0)
    world.sync()
    stop = stop_record(world.statefulsets()[name])
    assert stop is not None and stop["waitingForCompletion"] is True
    for _ in range(12):  # an hour-long job
        world.clock.advance(300)
        answer = world.sync()
        assert of_kind(answer, "StatefulSet")[name]["spec"]["replicas"] == 1
    assert world.github.count("remove_runner") == 1

    # The job ends: the runner unregisters itself and its container exits.
    world.github.unregister(ORG, f"{name}-0")
    world.set_runner(name, runner_terminated(0, format_time(world.clock.now())))
    released = world.sync()

    assert of_kind(released, "StatefulSet")[name]["spec"]["replicas"] == 0
    world.settle(2)
    assert world.statefulsets() == {}
    assert world.github.count("remove_runner") == 1


# ---------------------------------------------------------------- 5. ended runners


@pytest.mark.parametrize(
    "ended",
    [runner_terminated, runner_restarted],
    ids=["container-terminated", "container-restarted"],
)
def test_completed_ephemeral_runner_is_replaced(
    world: RunnerSetWorld, ended: Callable[[int, str], KubeObject]
) -> None:
    (old,) = world.grow(1)
    world.start(old)
    world.sync()
    world.github.unregister(ORG, f"{old}-0")  # it ran its job and unregistered itself
    world.set_runner(old, ended(0, format_time(world.clock.now())))

    first = world.sync()
    second = world.sync()

    stop = stop_record(of_kind(first, "StatefulSet")[old])
    assert stop is not None and stop["reason"] == "RunnerCompleted"
    assert of_kind(first, "StatefulSet")[old]["spec"]["replicas"] == 0
    new = (set(of_kind(first, "StatefulSet")) | set(of_kind(second, "StatefulSet"))) - {old}
    assert len(new) == 1
    world.settle(2)
    assert list(world.statefulsets()) == list(new) == world.runners()
    assert world.github.count("remove_runner") == 0


def test_failed_runner_is_replaced_and_its_leftover_registration_removed(
    world: RunnerSetWorld,
) -> None:
    (old,) = world.grow(1)
    world.start(old)
    world.sync()
    world.set_runner(old, runner_terminated(1, format_time(world.clock.now())))

    answer = world.sync()

    stop = stop_record(of_kind(answer, "StatefulSet")[old])
    assert stop is not None and stop["reason"] == "PodFailed"
    assert of_kind(answer, "StatefulSet")[old]["spec"]["replicas"] == 0
    assert world.github.runners[ORG] == []
    world.settle(2)
    assert len(world.runners()) == 1 and old not in world.statefulsets()


def test_a_stopped_runner_keeps_its_pod_until_its_leftover_registration_is_removed(
    world: RunnerSetWorld,
) -> None:
    (old,) = world.grow(1)
    world.start(old)
    world.sync()
    world.set_runner(old, runner_terminated(1, format_time(world.clock.now())))
    world.github.remove_answers.append(RemoveResult(RemoveOutcome.RATE_LIMITED, retry_after=120))

    held = world.sync()

    assert of_kind(held, "StatefulSet")[old]["spec"]["replicas"] == 1
    assert held["resyncAfterSeconds"] == pytest.approx(120)
    assert len(world.github.runners[ORG]) == 1
    world.clock.advance(120)
    released = world.sync()
    assert of_kind(released, "StatefulSet")[old]["spec"]["replicas"] == 0
    assert world.github.runners[ORG] == []


def test_runner_that_never_registers_is_replaced_after_the_registration_timeout(
    world: RunnerSetWorld,
) -> None:
    (old,) = world.grow(1)
    world.start(old, register=False)

    waiting = world.sync()
    assert 0 < waiting["resyncAfterSeconds"] <= 60
    assert old in world.runners()

    world.clock.advance(601)
    answer = world.sync()

    stop = stop_record(of_kind(answer, "StatefulSet")[old])
    assert stop is not None and stop["reason"] == "RegistrationTimeout"
    assert stop["outcome"] == "NotRegistered"
    assert of_kind(answer, "StatefulSet")[old]["spec"]["replicas"] == 0
    assert len(world.runners()) == 1 and old not in world.runners()
    assert world.github.count("remove_runner") == 0


# ---------------------------------------------------------------- 6. pods deleted by others


def test_pod_deleted_out_of_band_is_replaced_without_a_github_call(
    world: RunnerSetWorld,
) -> None:
    (old,) = world.grow(1)
    world.start(old)
    world.sync()
    world.delete_pod(world.pod(old))  # a node drain
    deletes_before = world.github.count("remove_runner")

    answer = world.sync()

    statefulsets = of_kind(answer, "StatefulSet")
    assert statefulsets[old]["spec"]["replicas"] == 0
    stop = stop_record(statefulsets[old])
    assert stop is not None
    assert stop["outcome"] == "PodStopped" and stop["reason"] == "PodDeleted"
    assert len(set(statefulsets) - {old}) == 1
    world.settle(2)
    assert old not in world.statefulsets() and len(world.runners()) == 1
    assert world.github.count("remove_runner") == deletes_before == 0


# ---------------------------------------------------------------- 7. template change


def test_a_new_template_runs_beside_the_old_runners_which_go_once_free(
    world: RunnerSetWorld,
) -> None:
    """As ARC's RunnerSet (runner_pod_owner.go): the set's size of new-template runners at
    once, every idle old one stopped, a busy one once free. One idle runner at a time held a
    static set under a steady backlog on the old template for as long as the backlog lasted."""
    old = world.grow(3)
    for name in old:
        world.start(name, busy=name == old[1])
    world.sync()
    old_hash = world.statefulsets()[old[0]]["metadata"]["labels"]["runner-template-hash"]

    world.change_spec(image="example/runner:v2")
    world.settle(10)

    assert old[0] not in world.statefulsets() and old[2] not in world.statefulsets()
    busy = world.statefulsets()[old[1]]  # the busy runner works its job out, then goes
    assert busy["spec"]["replicas"] == 1
    assert (stop_record(busy) or {}).get("reason") == "TemplateChanged"
    # Two idle runners removed; the busy one asked once (refused: busy), then waited for.
    assert world.github.count("remove_runner") == 3
    new = [n for n in world.runners() if n not in old]
    assert len(new) == 3
    for name in new:
        sts = world.statefulsets()[name]
        assert sts["metadata"]["labels"]["runner-template-hash"] != old_hash
        assert runner_container(sts)["image"] == "example/runner:v2"

    # Its job over, the ephemeral runner unregisters itself and its container exits.
    world.github.unregister(ORG, f"{old[1]}-0")
    world.set_runner(old[1], runner_terminated(0, format_time(world.clock.now())))
    world.settle(3)
    assert old[1] not in world.statefulsets()
    assert sorted(world.runners()) == sorted(new)
    assert world.github.count("remove_runner") == 3


# ---------------------------------------------------------------- 8. autoscalers


@pytest.mark.parametrize(
    ("target", "desired", "expected"),
    [
        ({"kind": "RunnerSet", "name": SET_NAME}, 3, 3),
        ({"kind": "RunnerSet", "name": SET_NAME}, 0, 0),
        ({"kind": "RunnerSet", "name": SET_NAME}, None, 1),  # no answer yet: spec.replicas
        ({"kind": "RunnerDeployment", "name": SET_NAME}, 3, 1),
        ({"name": SET_NAME}, 3, 1),  # ARC's default kind is RunnerDeployment
        ({"kind": "RunnerSet", "name": "another-set"}, 3, 1),
    ],
    ids=["runnerset", "runnerset-zero", "unanswered", "deployment", "default-kind", "other-set"],
)
def test_replicas_come_from_the_autoscaler_that_targets_this_runner_set(
    world: RunnerSetWorld, target: dict[str, str], desired: int | None, expected: int
) -> None:
    world.scale(1)
    world.autoscalers = [autoscaler("scaler", target, desired)]

    answer = world.sync()

    assert len(of_kind(answer, "StatefulSet")) == expected
    assert answer["status"]["desiredReplicas"] == expected


def test_the_size_a_runner_set_runs_at_is_arcs_spec_replicas_gauge(world: RunnerSetWorld) -> None:
    world.scale(1)
    world.autoscalers = [autoscaler("scaler", {"kind": "RunnerSet", "name": SET_NAME}, 3)]

    world.sync()

    metrics = world.client.get("/metrics").text
    assert f'runnerset_spec_replicas{{namespace="{NAMESPACE}",runnerset="{SET_NAME}"}} 3.0' in (
        metrics
    )


def test_a_deleted_autoscaler_leaves_the_runner_set_at_the_size_it_gave(
    world: RunnerSetWorld,
) -> None:
    """As ARC, whose HRA wrote its answer into the RunnerSet's `spec.replicas`: deleting the
    HRA does not shrink the set; changing its `spec.replicas` does."""
    world.scale(1)
    world.autoscalers = [autoscaler("scaler", {"kind": "RunnerSet", "name": SET_NAME}, 3)]
    world.sync()

    world.autoscalers = []
    held = world.sync()
    assert len(of_kind(held, "StatefulSet")) == 3
    assert held["status"]["autoscaled"]["autoscaler"] == "scaler"

    world.scale(2)
    resized = world.sync()
    assert resized["status"]["desiredReplicas"] == 2
    assert "autoscaled" not in resized["status"]


# ---------------------------------------------------------------- 9. volumes


def test_each_runner_mounts_the_claims_of_its_own_slot(world: RunnerSetWorld) -> None:
    world.change_spec(volumeClaimTemplates=[claim_template("cache"), claim_template("work")])
    world.scale(2)

    answer = world.sync()

    claims = of_kind(answer, "PersistentVolumeClaim")
    assert set(claims) == {"cache-build-0", "cache-build-1", "work-build-0", "work-build-1"}
    for claim in claims.values():
        validate(claim)
    mounted = sorted(
        (claims_mounted(sts) for sts in of_kind(answer, "StatefulSet").values()),
        key=lambda claims: claims["cache"],
    )
    assert mounted == [
        {"cache": "cache-build-0", "work": "work-build-0"},
        {"cache": "cache-build-1", "work": "work-build-1"},
    ]
    for sts in of_kind(answer, "StatefulSet").values():
        validate(sts)
        assert_mounts_have_volumes(sts)  # the claim replaces the default `work` emptyDir


def test_claims_outlive_their_runners_and_the_next_runner_reuses_them(
    world: RunnerSetWorld,
) -> None:
    world.change_spec(volumeClaimTemplates=[claim_template("cache")])
    (first,) = world.grow(1)
    claim_uid = world.claims()["cache-build-0"]["metadata"]["uid"]

    world.scale(0)
    world.settle()
    assert world.statefulsets() == {}
    assert "cache-build-0" in of_kind(world.last, "PersistentVolumeClaim")

    world.scale(1)
    answer = world.sync()

    (second,) = of_kind(answer, "StatefulSet")
    assert second != first
    assert claims_mounted(of_kind(answer, "StatefulSet")[second]) == {"cache": "cache-build-0"}
    assert world.claims()["cache-build-0"]["metadata"]["uid"] == claim_uid
    assert [k for k in world.created if k[0] == "PersistentVolumeClaim"] == [
        ("PersistentVolumeClaim", "cache-build-0")
    ]
    assert not [k for k in world.deleted if k[0] == "PersistentVolumeClaim"]


def test_a_runner_whose_pod_is_being_created_again_keeps_its_slot(
    world: RunnerSetWorld,
) -> None:
    world.change_spec(volumeClaimTemplates=[claim_template("cache")])
    (first,) = world.grow(1)
    del world.pods[f"{first}-0"]  # gone; the StatefulSet controller has not created it again

    world.scale(2)
    answer = world.sync()

    mounted = {n: claims_mounted(sts)["cache"] for n, sts in of_kind(answer, "StatefulSet").items()}
    assert mounted.pop(first) == "cache-build-0"
    assert list(mounted.values()) == ["cache-build-1"]


def test_a_replacement_takes_a_free_slot_never_one_a_live_runner_holds(
    world: RunnerSetWorld,
) -> None:
    world.change_spec(volumeClaimTemplates=[claim_template("cache")])
    slots_in_order: list[str] = []

    def live_slots() -> list[str]:
        return [sts["metadata"]["labels"][SLOT_LABEL] for sts in world.statefulsets().values()]

    world.grow(1)
    for _ in range(3):  # each runner completes its job in turn
        (current,) = world.runners()
        slots_in_order.append(world.statefulsets()[current]["metadata"]["labels"][SLOT_LABEL])
        world.start(current)
        world.sync()
        world.github.unregister(ORG, f"{current}-0")
        world.set_runner(current, runner_terminated(0, format_time(world.clock.now())))
        for _ in range(3):
            world.sync()
            slots = live_slots()
            assert len(slots) == len(set(slots)), f"two runners share a slot: {slots}"
            mounted = [claims_mounted(s)["cache"] for s in world.statefulsets().values()]
            assert len(mounted) == len(set(mounted))

    # The replacement is created while the ended runner still holds its slot; the one after
    # gets the freed slot (and its volume) back.
    assert slots_in_order == ["0", "1", "0"]
    assert set(world.claims()) == {"cache-build-0", "cache-build-1"}
    assert not [k for k in world.deleted if k[0] == "PersistentVolumeClaim"]


def test_a_statefulset_stripped_of_its_annotations_is_still_stopped(
    world: RunnerSetWorld,
) -> None:
    """A kept child leaves out an empty annotation map (the API server stores none); the stop
    record is then added to none at all."""
    (runner,) = world.grow(1)
    world.statefulsets()[runner]["metadata"].pop("annotations")
    world.scale(0)

    answer = world.sync()

    assert stop_record(of_kind(answer, "StatefulSet")[runner]) is not None


def test_each_runners_statefulset_is_sealed_for_its_pod_and_runner(
    world: RunnerSetWorld, settings: Settings
) -> None:
    """The runner-pod decorator believes a RunnerSet pod's env only when its StatefulSet
    carries this seal (`hooks.runner_seal`): an ownerReference naming a RunnerSet is anyone's
    to write."""
    new = world.grow(2)
    key = seal_key(settings)
    assert key is not None

    for name in new:
        sts = world.statefulsets()[name]
        seal = sts["metadata"]["annotations"][SEAL_ANNOTATION]
        assert seal_holds(seal, key, NAMESPACE, f"{name}-0", ORG, f"{name}-0")
        assert not seal_holds(
            seal, key, NAMESPACE, f"{name}-0", Scope(organization="x"), f"{name}-0"
        )
        # Its pod is born with it: sealed even if the StatefulSet goes before the decorator
        # first sees the pod.
        assert world.pod(name)["metadata"]["annotations"][SEAL_ANNOTATION] == seal
    # Kept as it is at the next sync: nothing is written again.
    before = copy.deepcopy(world.statefulsets())
    world.sync()
    assert world.statefulsets() == before


def test_an_adopted_statefulset_not_its_own_is_left_alone(
    world: RunnerSetWorld, github: InMemoryGitHub
) -> None:
    """Metacontroller adopts any StatefulSet of the namespace that matches the set's selector:
    one written by a user, its env naming another organization's runner, had been stopped
    there with the server's credentials (and its pod sealed for the runner-pod decorator)."""
    (own,) = world.grow(1)
    victim = Scope(organization="victim-org")
    github.register(victim, "victim-runner")
    adopted = copy.deepcopy(world.statefulsets()[own])
    adopted["metadata"] |= {"name": "evil", "uid": "evil-uid", "annotations": {}}
    container = adopted["spec"]["template"]["spec"]["containers"][0]
    container["env"] = [
        {"name": "RUNNER_ORG", "value": "victim-org"},
        {"name": "RUNNER_NAME", "value": "victim-runner"},
    ]
    world.children[("StatefulSet", "evil")] = adopted
    github.calls.clear()
    world.scale(0)

    answer = world.sync()
    world.settle()

    assert of_kind(answer, "StatefulSet")["evil"] == as_kept(adopted)  # as it is
    assert SEAL_ANNOTATION not in (adopted["metadata"].get("annotations") or {})
    assert not [call for call in github.calls if "victim-org" in str(call)]
    assert answer["status"]["replicas"] == 1  # its own runner alone, stopping
    assert github.runners[victim] != []


def test_a_template_naming_its_runner_keeps_its_members_its_own(
    world: RunnerSetWorld, settings: Settings
) -> None:
    """The seal read the runner's name from the pod when there was one and from the
    StatefulSet's name before: a template naming its runner made every member foreign once
    its pod appeared, and the set started another runner each time."""
    template = {
        "metadata": {"labels": {"app": SET_NAME}},
        "spec": {
            "containers": [
                {"name": "runner", "env": [{"name": "RUNNER_NAME", "value": "custom-runner"}]}
            ]
        },
    }
    world.change_spec(template=template)
    (runner,) = world.grow(1)
    del world.pods[f"{runner}-0"]  # a sync before its pod is (again) in view
    world.sync()
    world.start(runner)

    answer = world.settle()

    assert list(of_kind(answer, "StatefulSet")) == [runner]
    seal = of_kind(answer, "StatefulSet")[runner]["metadata"]["annotations"][SEAL_ANNOTATION]
    assert seal_holds(seal, seal_key(settings), NAMESPACE, f"{runner}-0", ORG, "custom-runner")


def test_a_runner_id_on_a_members_pod_not_sealed_by_the_decorator_is_not_removed(
    world: RunnerSetWorld, github: InMemoryGitHub
) -> None:
    """A stop removes a member's runner by the id recorded on its pod, which anyone who may
    edit pods in the namespace can write: another team's runner (a shared organization) was
    unregistered. An id without the decorator's seal is looked up by the runner's name."""
    (runner,) = world.grow(1)
    world.start(runner, register=False)  # its own runner not (yet) listed: the id is what counts
    others = github.register(ORG, "someone-elses-runner")
    world.pod(runner)["metadata"].setdefault("annotations", {})["actions-runner/id"] = str(others)
    world.scale(0)

    world.settle(5)

    assert [r.name for r in github.runners[ORG]] == ["someone-elses-runner"]
    assert github.count("remove_runner") == 0


def test_a_member_made_before_seals_is_still_its_own_and_sealed(
    world: RunnerSetWorld, settings: Settings
) -> None:
    (runner,) = world.grow(1)
    world.statefulsets()[runner]["metadata"]["annotations"].pop(SEAL_ANNOTATION)

    answer = world.sync()

    key = seal_key(settings)
    seal = of_kind(answer, "StatefulSet")[runner]["metadata"]["annotations"][SEAL_ANNOTATION]
    assert seal_holds(seal, key, NAMESPACE, f"{runner}-0", ORG, f"{runner}-0")
    assert answer["status"]["replicas"] == 1


def test_free_slots_from_twice_the_size_up_are_let_go_and_held_ones_kept(
    world: RunnerSetWorld,
) -> None:
    world.change_spec(volumeClaimTemplates=[claim_template("cache")])
    world.grow(2)  # slots 0 and 1
    claim = world.claims()["cache-build-0"]
    for slot in (3, 4, 7):  # left by runners replaced while an outage kept their predecessors
        name = f"cache-build-{slot}"
        extra = copy.deepcopy(claim)
        extra["metadata"] |= {"name": name, "uid": f"claim-{slot}"}
        extra["metadata"]["labels"][SLOT_LABEL] = str(slot)
        world.children[("PersistentVolumeClaim", name)] = extra
    # A pod of a runner already let go still mounts slot 7's claim.
    leaving = copy.deepcopy(next(iter(world.pods.values())))
    old = leaving["metadata"]["name"][: len(f"{SET_NAME}-") + 4] + "zz-0"  # the set's prefix
    leaving["metadata"] |= {"name": old, "uid": "pod-old"}
    leaving["metadata"]["labels"][SLOT_LABEL] = "7"
    world.pods[old] = leaving

    answer = world.sync()

    # Twice the size (2): slots below 4 stay for the next runners, slot 7 while it is held.
    assert set(of_kind(answer, "PersistentVolumeClaim")) == {
        "cache-build-0",
        "cache-build-1",
        "cache-build-3",
        "cache-build-7",
    }
    del world.pods[old]
    world.sync()
    assert set(world.claims()) == {"cache-build-0", "cache-build-1", "cache-build-3"}


@pytest.mark.parametrize(
    ("replicas", "autoscaler_max", "answered", "kept"),
    [
        (0, None, False, 8),  # parked: its caches wait for it
        (1, 0, True, 8),  # an HRA that may scale it to no runner at all: parked too
        (1, 3, True, 6),  # an HRA's maximum, not its current answer, sizes the pool
        (1, 4, False, 8),  # an HRA not answered yet sizes it too, not spec.replicas
    ],
    ids=["scaled-to-zero", "autoscaler-max-zero", "autoscaler-max", "autoscaler-unanswered"],
)
def test_the_pool_follows_the_most_runners_the_set_may_run(
    world: RunnerSetWorld, replicas: int, autoscaler_max: int | None, answered: bool, kept: int
) -> None:
    world.change_spec(volumeClaimTemplates=[claim_template("cache")])
    for slot in range(8):
        name = f"cache-build-{slot}"
        world.children[("PersistentVolumeClaim", name)] = {
            "apiVersion": "v1",
            "kind": "PersistentVolumeClaim",
            "metadata": {
                "name": name,
                "namespace": NAMESPACE,
                "uid": f"claim-{slot}",
                "labels": {SLOT_LABEL: str(slot)},
            },
            "spec": claim_template("cache")["spec"],
        }
    world.scale(replicas)
    if autoscaler_max is not None:
        hra = autoscaler("scaler", {"kind": "RunnerSet", "name": SET_NAME}, 0 if answered else None)
        hra["spec"]["maxReplicas"] = autoscaler_max
        world.autoscalers = [hra]

    answer = world.sync()

    assert len(of_kind(answer, "PersistentVolumeClaim")) == kept


# ---------------------------------------------------------------- 10. status


def test_status_counts_runners_by_readiness_registration_and_work(
    world: RunnerSetWorld,
) -> None:
    busy, idle, _pending = world.grow(3)
    world.start(busy, busy=True)
    world.start(idle)

    status = world.sync()["status"]

    assert status["replicas"] == 3
    assert status["readyReplicas"] == status["availableReplicas"] == 2
    assert status["updatedReplicas"] == 3
    assert status["desiredReplicas"] == 3
    assert status["registeredReplicas"] == 2
    assert status["busyReplicas"] == 1
    assert status["nextRunnerIndex"] == 3
    conditions = {c["type"]: (c["status"], c["reason"]) for c in status["conditions"]}
    assert conditions == {
        "GitHubAvailable": ("True", "Listed"),
        "Scaling": ("True", "Steady"),
        "Valid": ("True", "Valid"),
    }


def test_status_during_a_scale_down_and_a_new_template(world: RunnerSetWorld) -> None:
    busy, idle = world.grow(2)
    world.start(busy, busy=True)
    world.start(idle)
    world.sync()

    world.change_spec(image="example/runner:v2")
    world.scale(1)
    status = world.sync()["status"]

    # Both old runners are on their way out: still replicas, no longer ready or updated; the
    # busy one keeps counting as busy until its job ends; one runner of the new template is
    # made beside them at once (the set's size counts its template's runners), as ARC's.
    assert status["desiredReplicas"] == 1
    assert status["replicas"] == 3
    assert status["readyReplicas"] == 0
    assert status["updatedReplicas"] == 1
    assert status["registeredReplicas"] == 1
    assert status["busyReplicas"] == 1
    assert status["nextRunnerIndex"] == 3

    world.scale(0)
    status = world.settle()["status"]
    # Only the busy runner is left, on its way out: not ready, still registered and busy (an
    # HRA takes registered less busy for the idle runners: it has none).
    assert status["desiredReplicas"] == 0
    assert status["replicas"] == status["busyReplicas"] == status["registeredReplicas"] == 1
    assert status["readyReplicas"] == 0


def test_a_settled_set_answers_the_same_on_a_resync(world: RunnerSetWorld) -> None:
    world.change_spec(volumeClaimTemplates=[claim_template("cache")])
    for name in world.grow(2):
        world.start(name)
    settled = world.settle(2)
    calls = len(world.created), len(world.deleted)

    world.clock.advance(120)
    again = world.sync()

    assert again == settled  # no update, no status write: no hot loop
    assert (len(world.created), len(world.deleted)) == calls


# ---------------------------------------------------------------- 11. finalize


def test_finalize_unregisters_every_runner_and_waits_for_the_pods(
    world: RunnerSetWorld,
) -> None:
    first, second, _pending = world.grow(3)
    world.start(first)
    world.start(second)
    world.sync()

    stopping = world.finalize()

    assert stopping["finalized"] is False
    assert world.github.count("remove_runner") == 2
    assert world.github.runners[ORG] == []
    for sts in of_kind(stopping, "StatefulSet").values():
        assert sts["spec"]["replicas"] == 0
        assert (stop_record(sts) or {}).get("reason") == "RunnerSetDeleted"

    assert len(world.pods) == 3
    assert all(p["metadata"].get("deletionTimestamp") for p in world.pods.values())
    terminating = world.finalize()
    assert terminating["finalized"] is False

    leaving = world.finalize()
    assert leaving["finalized"] is False  # the StatefulSets are still there until deleted
    assert of_kind(leaving, "StatefulSet") == {}
    done = world.finalize()
    assert done["finalized"] is True
    assert world.pods == {}
    assert world.github.count("remove_runner") == 2


def test_pods_of_another_set_sharing_the_label_value_are_not_waited_for(
    world: RunnerSetWorld,
) -> None:
    """Found by the hostile-input fuzzer: `runnerset-name` holds 63 characters of a name, so
    two sets whose names share them select each other's pods; deleting one waited for as long
    as the other had runners."""
    (name,) = world.grow(1)
    world.start(name)
    world.sync()
    other = copy.deepcopy(world.pods[f"{name}-0"])
    other["metadata"]["name"] = "build2-k3x9q1-0"  # another set's runner
    other["metadata"]["labels"]["arc-hooks.dev/volume-slot"] = "7"

    for _ in range(5):
        world.pods["build2-k3x9q1-0"] = copy.deepcopy(other)
        if world.finalize()["finalized"]:
            break
    assert world.last["finalized"] is True


def test_finalize_is_not_finished_while_a_statefulset_is_observed(
    world: RunnerSetWorld,
) -> None:
    (name,) = world.grow(1)
    world.start(name)
    world.sync()

    for _ in range(5):
        had_statefulsets = bool(world.statefulsets())
        answer = world.finalize()
        if had_statefulsets:
            assert answer["finalized"] is False
        if answer["finalized"]:
            break
    assert world.last["finalized"] is True


def test_a_large_set_is_stopped_a_few_runners_a_hook_call_each_removed_once(
    world: RunnerSetWorld,
) -> None:
    """Found by an independent scale run: deleting a set of 300 made 300 DELETEs in one
    finalize call, past Metacontroller's 10-second timeout; the answer was lost and every
    retry looked each runner up again (2,709 calls), and a scale-down did the same."""
    world.scale(40)
    world.settle(2)
    for name in world.statefulsets():
        world.start(name)
    world.sync()
    registered = len(world.github.runners[ORG])
    assert registered == 40

    per_call = []
    for _ in range(20):
        before = world.github.count("remove_runner")
        answer = world.finalize()
        per_call.append(world.github.count("remove_runner") - before)
        if answer["finalized"]:
            break
        world.clock.advance(answer.get("resyncAfterSeconds", 1))

    assert answer["finalized"] is True
    assert max(per_call) <= MAX_RUNNERS_CALLED_FOR_PER_SYNC
    assert world.github.count("remove_runner") == 40  # each once
    assert not world.github.runners.get(ORG)


def test_a_scale_down_by_many_stops_a_few_runners_a_sync(world: RunnerSetWorld) -> None:
    world.scale(40)
    world.settle(2)
    for name in world.statefulsets():
        world.start(name)
    world.sync()

    world.scale(2)
    first = world.sync()
    assert world.github.count("remove_runner") == MAX_RUNNERS_CALLED_FOR_PER_SYNC
    assert first["resyncAfterSeconds"] == NEXT_BATCH_SECONDS
    for _ in range(10):
        world.clock.advance(NEXT_BATCH_SECONDS)
        world.sync()
    assert len(world.github.runners[ORG]) == 2
    assert world.github.count("remove_runner") == 38
    assert len(world.statefulsets()) == 2


def test_runners_whose_removal_keeps_failing_do_not_hold_the_others_back(
    world: RunnerSetWorld,
) -> None:
    """Found in review: the first 16 members (by name) were admitted at every sync; killed
    mid-job, GitHub kept refusing to remove their registrations (422), and the idle runners
    after them were never stopped, while the set was synced every second."""
    world.scale(20)
    world.settle(3)
    names = sorted(world.statefulsets())
    killed, idle = names[:MAX_RUNNERS_CALLED_FOR_PER_SYNC], names[MAX_RUNNERS_CALLED_FOR_PER_SYNC:]
    for name in names:
        world.start(name, busy=name in killed)
    world.sync()
    for name in killed:  # OOM-killed: GitHub still holds their jobs for a while
        world.set_runner(name, runner_terminated(137, format_time(world.clock.now())))
    world.scale(0)

    for _ in range(5):
        answer = world.sync()
        world.clock.advance(answer.get("resyncAfterSeconds", 30))

    registered = {r.name for r in world.github.runners[ORG]}
    assert not registered & {f"{name}-0" for name in idle}


def test_a_rate_limited_scale_down_waits_for_the_reset_not_a_second(
    world: RunnerSetWorld,
) -> None:
    """Found in review: while removals were rate limited, the members beyond the ration had
    the set synced every second for the whole window (each time the same ones refused)."""
    world.scale(40)
    world.settle(2)
    for name in world.statefulsets():
        world.start(name)
    world.sync()
    reset_at = world.clock.now() + timedelta(seconds=600)
    remove = world.github.remove_runner

    def refused_until_reset(
        scope: Scope, runner_id: int, *, not_before: datetime | None = None
    ) -> RemoveResult:
        left = (reset_at - world.clock.now()).total_seconds()
        if left > 0:
            return RemoveResult(RemoveOutcome.RATE_LIMITED, retry_after=left, message="limited")
        return remove(scope, runner_id, not_before=not_before)

    world.github.remove_runner = refused_until_reset  # type: ignore[method-assign]
    world.scale(0)
    syncs = 0
    while world.clock.now() < reset_at:
        answer = world.sync()
        syncs += 1
        world.clock.advance(answer.get("resyncAfterSeconds", 30))

    assert syncs <= 3
    for _ in range(8):  # after the reset, the set goes a batch a second
        world.clock.advance(answer.get("resyncAfterSeconds", 1))
        answer = world.sync()
    assert not world.github.runners.get(ORG)


def test_finalize_waits_for_a_busy_ephemeral_runner(world: RunnerSetWorld) -> None:
    (name,) = world.grow(1)
    world.start(name, busy=True)
    world.sync()

    for _ in range(6):
        answer = world.finalize()
        assert answer["finalized"] is False
        assert world.statefulsets()[name]["spec"]["replicas"] == 1
        world.clock.advance(600)
    assert world.github.count("remove_runner") == 1

    world.github.unregister(ORG, f"{name}-0")
    world.set_runner(name, runner_terminated(0, format_time(world.clock.now())))
    results = [world.finalize()["finalized"] for _ in range(4)]

    # released, pod gone, StatefulSet left out, finished
    assert results == [False, False, False, True]
    assert world.github.count("remove_runner") == 1


def test_finalize_waits_as_long_as_its_steps_ask_not_five_seconds(world: RunnerSetWorld) -> None:
    """Found by a hostile probe: finalize always asked to be called again within 5 s, which cut
    a busy runner's retry delay and GitHub's rate-limit reset to seconds (391 calls while one
    runner finished a 30-minute job; a GitHub call each time during an outage)."""
    (name,) = world.grow(1)
    world.start(name, busy=True)
    world.sync()

    busy = world.finalize()
    world.github.list_error = rate_limited(300)
    world.clock.advance(600)
    limited = world.finalize()

    assert busy["resyncAfterSeconds"] == pytest.approx(60)
    # The busy runner's own recheck (a minute), not the reset, is the sooner of the two.
    assert limited["resyncAfterSeconds"] == pytest.approx(60)


def test_finalize_lets_no_runner_go_while_github_is_rate_limited(world: RunnerSetWorld) -> None:
    (name,) = world.grow(1)
    world.start(name)
    world.sync()
    world.github.list_error = rate_limited(300)

    answers = [world.finalize() for _ in range(3)]

    assert [a["finalized"] for a in answers] == [False, False, False]
    assert all(0 < a["resyncAfterSeconds"] <= 300 for a in answers)
    assert world.statefulsets()[name]["spec"]["replicas"] == 1
    assert world.github.count("remove_runner") == 0

    world.github.list_error = None
    world.clock.advance(300)
    results = [world.finalize()["finalized"] for _ in range(4)]
    assert results == [False, False, False, True]
    assert world.github.runners[ORG] == []


@pytest.mark.parametrize(
    "break_spec",
    [
        pytest.param(lambda spec: spec.clear(), id="empty-spec"),
        pytest.param(lambda spec: spec.pop("organization"), id="no-scope"),
        pytest.param(lambda spec: spec.update(organization=1), id="scope-not-text"),
        pytest.param(lambda spec: spec.update(labels=[1]), id="labels-not-text"),
        pytest.param(lambda spec: spec.update(template="pod"), id="template-not-an-object"),
        pytest.param(lambda spec: spec.update(selector=[]), id="selector-not-an-object"),
        pytest.param(lambda spec: spec.update(replicas="2"), id="replicas-as-text"),
        pytest.param(lambda spec: spec.update(ephemeral="false"), id="ephemeral-as-text"),
    ],
)
def test_a_set_deleted_with_a_spec_that_does_not_read_still_waits_for_its_busy_runner(
    world: RunnerSetWorld, break_spec: Any
) -> None:
    """Its StatefulSets still say where their runners registered: a busy runner is waited for
    as with a valid spec, not dropped with its job; then it is unregistered and the set goes."""
    (name,) = world.grow(1)
    world.start(name, busy=True)
    world.sync()
    break_spec(world.parent["spec"])

    for _ in range(3):
        answer = world.finalize()
        assert answer["finalized"] is False
        assert world.statefulsets()[name]["spec"]["replicas"] == 1
        assert not world.pods[f"{name}-0"]["metadata"].get("deletionTimestamp")
        assert condition(answer["status"], "Valid")["status"] == "False"
        world.clock.advance(600)

    world.github.unregister(ORG, f"{name}-0")
    world.set_runner(name, runner_terminated(0, format_time(world.clock.now())))
    results = [world.finalize()["finalized"] for _ in range(4)]
    assert results == [False, False, False, True]
    assert world.github.runners[ORG] == []


def test_a_busy_runner_of_a_set_whose_organization_was_changed_finishes_its_job(
    world: RunnerSetWorld,
) -> None:
    """The new organization gets new runners; the old runner, looked for where its
    StatefulSet says it registered, is busy there: replaced only after its job, and
    unregistered there, however long the job takes (past the registration timeout)."""
    (name,) = world.grow(1)
    world.start(name, busy=True)
    world.sync()
    world.parent["spec"]["organization"] = "another-org"

    for _ in range(20):
        world.sync()
        assert world.statefulsets()[name]["spec"]["replicas"] == 1
        world.clock.advance(120)
    # Asked once where it registered (refused: busy), then waited for without asking again.
    assert world.github.calls.count(("remove_runner", "/orgs/acme")) == 1

    # Its job over, the ephemeral runner unregisters itself and its container exits.
    world.github.unregister(ORG, f"{name}-0")
    world.set_runner(name, runner_terminated(0, format_time(world.clock.now())))
    for _ in range(6):
        world.sync()
    assert name not in world.statefulsets()
    assert world.github.runners[ORG] == []


def test_a_set_deleted_after_its_organization_was_changed_stops_its_runners_where_they_are(
    world: RunnerSetWorld,
) -> None:
    """Its runners registered in the organization their StatefulSets name: the busy one is
    waited for there, then unregistered there, not looked for in the new one."""
    (name,) = world.grow(1)
    world.start(name, busy=True)
    world.sync()
    world.parent["spec"]["organization"] = "another-org"

    for _ in range(3):
        answer = world.finalize()
        assert answer["finalized"] is False
        assert world.statefulsets()[name]["spec"]["replicas"] == 1
        world.clock.advance(600)
    assert ("list_runners", "/orgs/another-org") not in world.github.calls

    world.github.unregister(ORG, f"{name}-0")
    world.set_runner(name, runner_terminated(0, format_time(world.clock.now())))
    assert [world.finalize()["finalized"] for _ in range(4)][-1] is True


@pytest.mark.parametrize(
    "break_spec",
    [
        pytest.param(lambda spec: spec.update(organization=1), id="scope-not-text"),
        pytest.param(lambda spec: spec.pop("organization"), id="no-scope"),
        pytest.param(lambda spec: spec.clear(), id="empty-spec"),
    ],
)
def test_a_set_with_runners_in_two_organizations_and_no_readable_scope_waits_for_both(
    world: RunnerSetWorld, break_spec: Any
) -> None:
    """Its organization was changed with a runner busy in the old one, then the spec broke:
    each busy runner is waited for where its StatefulSet says it registered."""
    other = Scope(organization="beta")
    (old,) = world.grow(1)
    world.start(old, busy=True)
    world.sync()
    world.parent["spec"]["organization"] = "beta"
    world.sync()  # the new organization's runner is made beside the busy old one
    (new,) = [n for n in world.statefulsets() if n != old]
    world.set_runner(new, runner_running(format_time(world.clock.now())))
    world.github.register(other, f"{new}-0", busy=True)
    world.sync()
    break_spec(world.parent["spec"])

    for _ in range(3):
        answer = world.finalize()
        assert answer["finalized"] is False
        assert [s["spec"]["replicas"] for s in world.statefulsets().values()] == [1, 1]
        world.clock.advance(600)

    # The ephemeral runners' jobs end: each unregisters itself and its container exits.
    world.github.unregister(ORG, f"{old}-0")
    world.github.unregister(other, f"{new}-0")
    for name in (old, new):
        world.set_runner(name, runner_terminated(0, format_time(world.clock.now())))
    results = [world.finalize()["finalized"] for _ in range(4)]
    assert results == [False, False, False, True]


def test_a_set_deleted_with_an_idle_runner_and_a_spec_that_does_not_read_unregisters_it(
    world: RunnerSetWorld,
) -> None:
    (name,) = world.grow(1)
    world.start(name)
    world.sync()
    world.parent["spec"]["organization"] = 1

    stopping = world.finalize()

    assert world.github.count("remove_runner") == 1
    assert world.github.runners[ORG] == []
    assert of_kind(stopping, "StatefulSet")[name]["spec"]["replicas"] == 0
    assert [world.finalize()["finalized"] for _ in range(3)][-1] is True


def without_scope_env(statefulset: KubeObject) -> None:
    for container in statefulset["spec"]["template"]["spec"]["containers"]:
        container["env"] = [
            e for e in container.get("env", []) if e["name"] not in ("RUNNER_ORG", "RUNNER_REPO")
        ]


def test_finalize_with_no_scope_anywhere_lets_the_statefulsets_go_without_github(
    world: RunnerSetWorld,
) -> None:
    """Neither the spec nor the StatefulSets name a scope (not built by this hook): there is
    nowhere to unregister; the runner-pod decorator removes what each pod's env names."""
    names = world.grow(2)
    for name in names:
        world.start(name)
    world.sync()
    world.github.calls.clear()
    world.parent["spec"] = {}
    for statefulset in world.statefulsets().values():
        without_scope_env(statefulset)

    first = world.finalize()
    second = world.finalize()
    third = world.finalize()

    assert of_kind(first, "StatefulSet") == {}
    assert [first["finalized"], second["finalized"], third["finalized"]] == [False, False, True]
    assert world.github.calls == []
    assert world.pods == {}


def test_finalize_with_no_scope_anywhere_waits_for_statefulsets_without_pods(
    world: RunnerSetWorld,
) -> None:
    world.grow(2)
    world.pods.clear()  # the StatefulSet controller has not created them (yet)
    world.parent["spec"] = {}
    for statefulset in world.statefulsets().values():
        without_scope_env(statefulset)

    first = world.finalize()
    second = world.finalize()

    assert of_kind(first, "StatefulSet") == {}
    assert [first["finalized"], second["finalized"]] == [False, True]


def test_finalize_of_a_set_without_a_spec_and_without_runners_finishes_at_once(
    world: RunnerSetWorld,
) -> None:
    world.parent["spec"] = {}

    assert world.finalize()["finalized"] is True
    assert world.github.calls == []


# ---------------------------------------------------------------- 12. invalid input


@pytest.mark.parametrize(
    ("change", "fragment"),
    [
        ({"organization": None}, "enterprise, organization or repository"),
        ({"replicas": -1}, "replicas"),
        ({"volumeClaimTemplates": [{"spec": {}}]}, "volumeClaimTemplates"),
    ],
    ids=["no-scope", "negative-replicas", "unnamed-claim-template"],
)
def test_invalid_runner_set_keeps_its_children_unchanged(
    world: RunnerSetWorld, change: KubeObject, fragment: str
) -> None:
    before = world.two_runners_one_running()
    spec = {k: v for k, v in {**world.parent["spec"], **change}.items() if v is not None}
    world.parent["spec"] = spec

    answer = world.sync()

    world.assert_untouched_since(before)
    valid = condition(answer["status"], "Valid")
    assert valid["status"] == "False" and valid["reason"] == "InvalidSpec"
    assert fragment in valid["message"]
    assert answer["status"]["replicas"] == 2  # what was observed is still reported


@pytest.mark.parametrize("path", ["/sync/runnerset", "/finalize/runnerset", "/customize/runnerset"])
@pytest.mark.parametrize(
    ("body", "fragment"),
    [
        (b"{not json", "not valid JSON"),
        (b'["parent"]', "JSON object"),
        (b'{"controller": {}, "children": {}}', "parent"),
        (b'{"parent": {"metadata": {"namespace": "ci"}}}', "parent.metadata.name"),
        (b'{"parent": {"metadata": {"name": "build"}}, "children": {"Pod.v1": []}}', "Pod.v1"),
    ],
)
def test_malformed_request_gets_a_4xx_with_a_message(
    client: TestClient, path: str, body: bytes, fragment: str
) -> None:
    response = client.post(path, content=body, headers={"content-type": "application/json"})

    assert 400 <= response.status_code < 500
    assert fragment in response.json()["error"]


# ---------------------------------------------------------------- 13. GitHub trouble


@pytest.mark.parametrize(
    ("error", "resync"),
    [
        (rate_limited(900), 900.0),
        (GitHubError("GitHub answered 502 Bad Gateway", status=502), RETRY_DELAY),
    ],
    ids=["rate-limited", "outage"],
)
def test_no_scale_down_is_chosen_while_github_cannot_list_runners(
    world: RunnerSetWorld, error: GitHubError, resync: float
) -> None:
    names = world.grow(3)
    for name in names:
        world.start(name)
    world.sync()
    deleted = len(world.deleted)

    world.github.list_error = error
    world.scale(1)
    answer = world.sync()

    assert set(of_kind(answer, "StatefulSet")) == set(names)
    for sts in of_kind(answer, "StatefulSet").values():
        assert sts["spec"]["replicas"] == 1 and stop_record(sts) is None
    assert len(world.deleted) == deleted
    assert world.github.count("remove_runner") == 0
    assert 0 < answer["resyncAfterSeconds"] <= resync
    available = condition(answer["status"], "GitHubAvailable")
    assert available["status"] == "False"

    world.github.list_error = None  # GitHub is back: the scale-down goes on
    world.clock.advance(resync)
    world.settle()
    assert len(world.runners()) == 1
    assert world.github.count("remove_runner") == 2


def test_a_token_error_on_scale_up_is_reported_without_a_token(world: RunnerSetWorld) -> None:
    (name,) = world.grow(1)
    world.start(name)
    world.github.token_error = rate_limited(120)
    world.scale(2)

    answer = world.sync()

    assert set(of_kind(answer, "StatefulSet")) == {name}
    scaling = condition(answer["status"], "Scaling")
    assert scaling["status"] == "False" and scaling["reason"] == "RegistrationFailed"
    assert answer["resyncAfterSeconds"] == pytest.approx(120)
    world.github.token_error = None
    world.clock.advance(120)
    assert len(of_kind(world.sync(), "StatefulSet")) == 2


# ---------------------------------------------------------------- 14. customize


def test_customize_asks_for_the_sets_pods_and_the_autoscalers_of_its_namespace(
    client: TestClient,
) -> None:
    response = client.post(
        "/customize/runnerset", json={"controller": CONTROLLER, "parent": runner_set(2)}
    )

    assert response.status_code == 200
    assert response.json() == {
        "relatedResources": [
            {
                "apiVersion": "v1",
                "resource": "pods",
                "labelSelector": {"matchLabels": {"runnerset-name": SET_NAME}},
                "namespace": NAMESPACE,
            },
            {
                "apiVersion": API,
                "resource": "horizontalrunnerautoscalers",
                "labelSelector": {},
                "namespace": NAMESPACE,
            },
        ]
    }


# ---------------------------------------------------------------- 15. ARC's samples


def arc_samples() -> list[KubeObject]:
    return [doc for doc in yaml.safe_load_all(SAMPLES.read_text()) if doc]


@pytest.mark.parametrize("sample", arc_samples(), ids=lambda s: s["metadata"]["name"])
def test_arc_sample_syncs_to_valid_statefulsets(
    client: TestClient, github: InMemoryGitHub, clock: ManualClock, sample: KubeObject
) -> None:
    parent = copy.deepcopy(sample)
    parent["metadata"].update(namespace=NAMESPACE, uid=f"uid-{sample['metadata']['name']}")
    parent["metadata"].update(generation=1, resourceVersion="1")
    world = RunnerSetWorld(client, github, clock, parent)

    answer = world.sync()
    world.sync()

    statefulsets = of_kind(answer, "StatefulSet")
    assert len(statefulsets) == sample["spec"].get("replicas", 1)
    for child in answer["children"]:
        validate(child)
    for sts in statefulsets.values():
        assert_mounts_have_volumes(sts)
        assert sts["spec"]["template"]["spec"]["restartPolicy"] == "Always"
        sample_labels = sample["spec"]["template"]["metadata"]["labels"]
        assert sample_labels.items() <= sts["spec"]["template"]["metadata"]["labels"].items()
    valid = condition(answer["status"], "Valid")
    assert valid["status"] == "True"


# ------------------------------------------------------------ members read once per state


def _member_objects(index: int, versions: tuple[str, str, str]) -> dict[str, dict[str, Any]]:
    from hooks.runnerset.statefulset import secret_name

    name = f"set-{index}"
    meta = {"namespace": "default"}
    sts_version, pod_version, secret_version = versions
    return {
        "sts": {
            "apiVersion": "apps/v1",
            "kind": "StatefulSet",
            "metadata": {
                **meta,
                "name": name,
                "uid": f"sts-{index}",
                "resourceVersion": sts_version,
            },
            "spec": {"replicas": 1},
        },
        "pod": {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                **meta,
                "name": f"{name}-0",
                "uid": f"pod-{index}",
                "resourceVersion": pod_version,
            },
            "spec": {"containers": [{"name": "runner"}]},
            "status": {"phase": "Running" if pod_version != "1" else "Pending"},
        },
        "secret": {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {
                **meta,
                "name": secret_name(name),
                "uid": f"secret-{index}",
                "resourceVersion": secret_version,
            },
            "data": {},
        },
    }


def _members_request(states: list[tuple[str, str, str]]) -> Any:
    from hooks.metacontroller import CompositeHookRequest

    objects = [_member_objects(index, versions) for index, versions in enumerate(states)]

    def key(obj: dict[str, Any]) -> str:
        return f"default/{obj['metadata']['name']}"

    return CompositeHookRequest.model_validate(
        {
            "parent": {"metadata": {"name": "set", "namespace": "default"}},
            "children": {
                "StatefulSet.apps/v1": {key(o["sts"]): o["sts"] for o in objects},
                "Secret.v1": {key(o["secret"]): o["secret"] for o in objects},
            },
            "related": {"Pod.v1": {key(o["pod"]): o["pod"] for o in objects}},
        }
    )


def test_a_set_reads_again_only_the_members_whose_objects_changed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A member is read again when its StatefulSet, its pod or its Secret is in a new state,
    and what the memo gives is what a reading now gives."""
    from hooks.memo import Memo
    from hooks.runnerset import member

    read = record_calls(
        monkeypatch, member, "_read_member", lambda sts, *_: sts["metadata"]["name"]
    )
    memo: Memo[Any, Any] = Memo(64)
    rounds = [
        [("1", "1", "1"), ("1", "1", "1"), ("1", "1", "1")],
        [("1", "1", "1"), ("1", "1", "1"), ("1", "1", "1")],
        [("1", "2", "1"), ("1", "1", "1"), ("2", "1", "1")],  # a pod and a StatefulSet change
        [("1", "2", "1"), ("1", "1", "2"), ("2", "1", "1")],  # a Secret changes
    ]
    read_per_round = []
    for states in rounds:
        request = _members_request(states)
        read.clear()
        warm = member.read_members(request, memo)
        read_per_round.append(sorted(read))
        assert warm == member.read_members(request)  # as read without the memo

    assert read_per_round == [
        ["set-0", "set-1", "set-2"],
        [],
        ["set-0", "set-2"],
        ["set-1"],
    ]


def test_a_member_whose_objects_name_no_state_is_read_every_time() -> None:
    from hooks.memo import Memo
    from hooks.runnerset import member

    memo: Memo[Any, Any] = Memo(64)
    request = _members_request([("", "1", "1")])  # no resourceVersion on the StatefulSet

    member.read_members(request, memo)

    assert len(memo) == 0


@pytest.mark.parametrize("recorded", ["9999-12-31T23:59:59Z", "2030-01-01T00:00:00Z"])
def test_a_members_creation_time_ahead_of_now_holds_no_scale_up(
    client: TestClient, github: InMemoryGitHub, clock: ManualClock, recorded: str
) -> None:
    """Found in review, of the kind the hostile-input fuzzer found: a member's sync-time near
    year 9999 made every sync a 500 (10 minutes added to it overflowed); one merely ahead of
    now (a hand's, another replica's clock) held webhook-driven scale-up until then."""
    world = RunnerSetWorld(client, github, clock, runner_set(replicas=0, ephemeral=True))
    (name,) = world.grow(1)
    world.statefulsets()[name]["metadata"]["annotations"][SYNC_TIME_ANNOTATION] = recorded
    world.change_spec(effectiveTime="2025-12-31T00:00:00Z")
    world.scale(3)

    world.sync()  # asserts a 200

    assert len(world.statefulsets()) == 3


def _first_statefulset(
    github: InMemoryGitHub, clock: ManualClock, env: dict[str, str]
) -> KubeObject:
    app = create_app(hook_settings(env), github=github, clock=clock)
    with hook_client(app) as client:
        answer = RunnerSetWorld(client, github, clock, runner_set()).sync()
    (sts,) = of_kind(answer, "StatefulSet").values()
    return sts


def test_common_runner_labels_reach_the_runners_and_their_hash(
    github: InMemoryGitHub, clock: ManualClock
) -> None:
    """ARC appends --common-runner-labels to a RunnerSet's labels (runnerset_controller.go)
    as to a RunnerDeployment's: a job asking for one must find these runners."""
    with_common = _first_statefulset(github, clock, {"COMMON_RUNNER_LABELS": "fast,linux,ssd"})
    without = _first_statefulset(github, clock, {})

    assert env_of(with_common)["RUNNER_LABELS"]["value"] == "linux,fast,ssd"  # each once
    assert env_of(without)["RUNNER_LABELS"]["value"] == "linux"
    # A change of the common labels is a change of the runners: they roll over.
    hashes = [sts["metadata"]["labels"]["runner-template-hash"] for sts in (with_common, without)]
    assert hashes[0] != hashes[1]


def test_a_batch_of_new_runner_sets_is_bounded_by_bytes_too(world: RunnerSetWorld) -> None:
    """Found by a hostile probe: a pod template carrying a 1 MB value, 500 StatefulSets per
    answer, made an answer of 500 MB."""
    world.parent["spec"]["template"]["spec"] = {
        "containers": [{"name": "runner", "env": [{"name": "BIG", "value": "x" * 10**6}]}]
    }
    world.scale(100)

    answer = world.sync()

    assert 1 <= len(of_kind(answer, "StatefulSet")) <= 8
    assert answer["resyncAfterSeconds"] == NEXT_BATCH_SECONDS


def test_a_runner_set_is_not_grown_past_what_its_sync_requests_can_carry(
    world: RunnerSetWorld,
) -> None:
    """Found in review: past HOOK_MAX_REQUEST_BYTES every sync got 413 and the set could
    neither scale nor replace anything, saying nothing. What a member weighs is measured on a
    StatefulSet as built (labels of the set's own included), and on its pod."""
    world.parent["metadata"]["labels"] = {f"team-{i}": "x" * 60 for i in range(4000)}
    world.parent["spec"]["template"]["spec"] = {
        "containers": [{"name": "runner", "env": [{"name": "BIG", "value": "x" * 500_000}]}]
    }
    world.scale(100)

    for _ in range(6):
        answer = world.sync()

    count = len(world.statefulsets())
    assert 1 <= count < 100
    assert len(orjson.dumps(answer)) < 32 * 2**20
    scaling = condition(answer["status"], "Scaling")
    assert (scaling["status"], scaling["reason"]) == ("False", "RequestLimit")
    assert f"{count} runners" in scaling["message"]


def test_two_autoscalers_on_one_runner_set_are_named_in_its_status(world: RunnerSetWorld) -> None:
    target = {"kind": "RunnerSet", "name": SET_NAME}
    world.autoscalers = [autoscaler("z-high", target, 6), autoscaler("a-low", target, 2)]

    answer = world.sync()

    assert len(of_kind(answer, "StatefulSet")) == 2
    autoscaled = condition(answer["status"], "Autoscaled")
    assert (autoscaled["status"], autoscaled["reason"]) == ("False", "ConflictingAutoscalers")
    assert "a-low sizes it; z-high do not" in autoscaled["message"]


def test_a_token_runner_sets_hash_is_the_one_earlier_builds_gave_it() -> None:
    """An upgrade must not roll every RunnerSet over: found in review, a field added to the
    pod defaults changed every set's hash. The value is that of the build before it."""
    from hooks.resources.runnerset import RunnerSet
    from hooks.runner.pod import PodDefaults
    from hooks.runnerset.statefulset import template_hash

    runner_set = RunnerSet.model_validate(
        {
            "apiVersion": API,
            "kind": "RunnerSet",
            "metadata": {"name": "st", "namespace": "default"},
            "spec": {
                "replicas": 3,
                "organization": "acme",
                "labels": ["linux"],
                "ephemeral": False,
                "selector": {"matchLabels": {"app": "st"}},
                "serviceName": "st",
                "template": {
                    "metadata": {"labels": {"app": "st"}},
                    "spec": {"containers": [{"name": "runner"}]},
                },
            },
        }
    )
    for jit_image in (None, "example.com/jit-runner:1"):
        settings = Settings.model_validate({"GITHUB_TOKEN": "x", "RUNNER_JIT_IMAGE": jit_image})
        defaults = PodDefaults.from_settings(settings)
        assert template_hash(runner_set, defaults) == "7348446d71"
    # A JIT set's hash takes the image its runners get.
    jit = [
        template_hash(
            runner_set, PodDefaults.from_settings(Settings.model_validate(values)), jit=True
        )
        for values in ({}, {"RUNNER_JIT_IMAGE": "example.com/jit-runner:1"})
    ]
    assert jit[0] != jit[1]
