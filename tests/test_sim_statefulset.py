"""The simulated StatefulSet controller: pods and PVCs from templates, ordered scaling,
replacement of deleted and ended pods, rolling updates and status."""

from __future__ import annotations

import base64
from dataclasses import dataclass
from typing import Any

from arc_sim.events import EventLoop
from arc_sim.fake_github import FakeGitHub
from arc_sim.kubelet import Kubelet
from arc_sim.runner_agent import runner_agent_factory
from arc_sim.statefulset import StatefulSetController, update_revision
from arc_sim.store import KubeObject, ObjectStore
from hooks.clock import ManualClock
from hooks.github.port import Scope
from tests.job_board import JobBoard

NS = "ci"


@dataclass
class World:
    loop: EventLoop
    store: ObjectStore
    kubelet: Kubelet

    def pod(self, name: str) -> KubeObject | None:
        return self.store.get("Pod", NS, name)

    def pod_names(self) -> list[str]:
        return [p["metadata"]["name"] for p in self.store.list_objects("Pod", NS)]

    def statefulset(self, name: str = "rs") -> KubeObject:
        found = self.store.get("StatefulSet", NS, name)
        assert found is not None
        return found

    def scale(self, replicas: int, name: str = "rs") -> None:
        current = self.statefulset(name)
        current["spec"]["replicas"] = replicas
        self.store.update(current)


def make_world(*, agents: bool = False) -> World:
    clock = ManualClock()
    loop = EventLoop(clock, seed=3)
    store = ObjectStore(clock)
    factory = None
    if agents:
        board = JobBoard(FakeGitHub(clock))
        factory = runner_agent_factory(store=store, github=board, loop=loop)
    kubelet = Kubelet(store, loop, nodes=["node-1"], agent_factory=factory)
    StatefulSetController(store, loop)
    return World(loop, store, kubelet)


def statefulset(
    name: str = "rs", replicas: int = 1, *, image: str = "runner-image", **spec: Any
) -> KubeObject:
    return {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {"name": name, "namespace": NS},
        "spec": {
            "replicas": replicas,
            "serviceName": name,
            "selector": {"matchLabels": {"runnerset-name": name}},
            "template": {
                "metadata": {"labels": {"runnerset-name": name}, "annotations": {"a": "b"}},
                "spec": {
                    "containers": [{"name": "runner", "image": image}],
                    "restartPolicy": "Always",  # the only one a StatefulSet takes
                },
            },
            **spec,
        },
    }


WORK_CLAIM = {
    "metadata": {"name": "work"},
    "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}},
}


def test_a_pod_and_its_claim_come_from_the_templates_and_status_follows() -> None:
    world = make_world()
    world.store.create(statefulset(volumeClaimTemplates=[WORK_CLAIM]))
    world.loop.run_for(0)

    pod = world.pod("rs-0")
    assert pod is not None
    sts = world.statefulset()
    labels = pod["metadata"]["labels"]
    assert labels == {
        "runnerset-name": "rs",
        "controller-revision-hash": update_revision(sts),
        "statefulset.kubernetes.io/pod-name": "rs-0",
        "apps.kubernetes.io/pod-index": "0",
    }
    [owner] = pod["metadata"]["ownerReferences"]
    assert (owner["kind"], owner["uid"], owner["controller"]) == (
        "StatefulSet",
        sts["metadata"]["uid"],
        True,
    )
    assert (pod["spec"]["hostname"], pod["spec"]["subdomain"]) == ("rs-0", "rs")
    assert pod["spec"]["volumes"] == [
        {"name": "work", "persistentVolumeClaim": {"claimName": "work-rs-0"}}
    ]
    claim = world.store.get("PersistentVolumeClaim", NS, "work-rs-0")
    assert claim is not None and claim["spec"] == WORK_CLAIM["spec"]
    assert "ownerReferences" not in claim["metadata"]  # whenDeleted: Retain

    world.loop.run_for(6)
    revision = update_revision(sts)
    assert world.statefulset()["status"] == {
        "observedGeneration": 1,
        "replicas": 1,
        "readyReplicas": 1,
        "currentReplicas": 1,
        "updatedReplicas": 1,
        "availableReplicas": 1,
        "currentRevision": revision,
        "updateRevision": revision,
        "collisionCount": 0,
    }


def test_ordered_ready_scales_up_one_ready_pod_at_a_time_and_down_from_the_top() -> None:
    world = make_world()
    world.store.create(statefulset(replicas=3))
    world.loop.run_for(5)
    assert world.pod_names() == ["rs-0"]
    world.loop.run_for(1)  # rs-0 Ready
    assert world.pod_names() == ["rs-0", "rs-1"]
    world.loop.run_for(12)
    assert world.pod_names() == ["rs-0", "rs-1", "rs-2"]

    deleted: list[str] = []
    world.store.watch(
        lambda event, obj: deleted.append(obj["metadata"]["name"]) if event == "DELETED" else None
    )
    world.scale(1)
    world.loop.run_for(1)
    assert deleted == ["rs-2", "rs-1"] and world.pod_names() == ["rs-0"]
    assert world.statefulset()["status"]["replicas"] == 1


def test_parallel_creates_every_pod_at_once() -> None:
    world = make_world()
    world.store.create(statefulset(replicas=3, podManagementPolicy="Parallel"))
    world.loop.run_for(0)
    assert world.pod_names() == ["rs-0", "rs-1", "rs-2"]


def test_a_deleted_pod_comes_back_with_the_same_name_and_claim() -> None:
    world = make_world()
    world.store.create(statefulset(volumeClaimTemplates=[WORK_CLAIM]))
    world.loop.run_for(6)
    first = world.pod("rs-0")
    claim = world.store.get("PersistentVolumeClaim", NS, "work-rs-0")
    assert first is not None and claim is not None

    world.store.delete("Pod", NS, "rs-0")
    world.loop.run_for(0)

    second = world.pod("rs-0")
    assert second is not None and second["metadata"]["uid"] != first["metadata"]["uid"]
    again = world.store.get("PersistentVolumeClaim", NS, "work-rs-0")
    assert again is not None and again["metadata"]["uid"] == claim["metadata"]["uid"]


def test_an_ended_pod_is_deleted_and_created_again() -> None:
    world = make_world(agents=True)
    token = base64.b64encode(b"unknown-token").decode()
    world.store.create(
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": "reg", "namespace": NS},
            "data": {"token": token},
        }
    )
    sts = statefulset()
    sts["spec"]["template"]["spec"]["containers"][0]["env"] = [
        {"name": "RUNNER_ORG", "value": "acme"},
        {"name": "RUNNER_TOKEN", "valueFrom": {"secretKeyRef": {"name": "reg", "key": "token"}}},
    ]
    world.store.create(sts)
    world.loop.run_for(0)
    first = world.pod("rs-0")
    assert first is not None

    world.loop.run_for(1 + 5)  # scheduled, started
    # A StatefulSet's pods restart their containers (restartPolicy Always, the only policy it
    # takes), so a pod ends only when the kubelet evicts it under node pressure: Failed.
    running = world.pod("rs-0")
    assert running is not None
    world.store.update_status(
        {
            "kind": "Pod",
            "metadata": running["metadata"],
            "status": {**running["status"], "phase": "Failed", "reason": "Evicted"},
        }
    )
    world.loop.run_for(5)

    second = world.pod("rs-0")
    assert second is not None and second["metadata"]["uid"] != first["metadata"]["uid"]


def test_a_changed_template_rolls_out_and_becomes_the_current_revision() -> None:
    world = make_world()
    world.store.create(statefulset())
    world.loop.run_for(6)
    old = world.statefulset()
    old_revision = update_revision(old)
    old["spec"]["template"]["spec"]["containers"][0]["image"] = "runner-image:2"
    world.store.update(old)
    new_revision = update_revision(world.statefulset())
    world.loop.run_for(0)

    status = world.statefulset()["status"]
    assert (status["currentRevision"], status["updateRevision"]) == (old_revision, new_revision)
    pod = world.pod("rs-0")
    assert pod is not None
    assert pod["metadata"]["labels"]["controller-revision-hash"] == new_revision
    assert pod["spec"]["containers"][0]["image"] == "runner-image:2"

    world.loop.run_for(6)
    status = world.statefulset()["status"]
    assert status["currentRevision"] == status["updateRevision"] == new_revision
    assert status["observedGeneration"] == 2


def test_on_delete_keeps_the_old_pod() -> None:
    world = make_world()
    world.store.create(statefulset(updateStrategy={"type": "OnDelete"}))
    world.loop.run_for(6)
    before = world.pod("rs-0")
    changed = world.statefulset()
    changed["spec"]["template"]["spec"]["containers"][0]["image"] = "runner-image:2"
    world.store.update(changed)
    world.loop.run_for(6)
    assert world.pod("rs-0") == before


def test_claims_retained_by_default_and_owned_with_when_deleted_delete() -> None:
    world = make_world()
    world.store.create(statefulset("kept", volumeClaimTemplates=[WORK_CLAIM]))
    world.store.create(
        statefulset(
            "owned",
            volumeClaimTemplates=[WORK_CLAIM],
            persistentVolumeClaimRetentionPolicy={"whenDeleted": "Delete"},
        )
    )
    world.loop.run_for(6)
    world.store.delete("StatefulSet", NS, "kept")
    world.store.delete("StatefulSet", NS, "owned")
    world.loop.run_for(1)

    claims = [c["metadata"]["name"] for c in world.store.list_objects("PersistentVolumeClaim")]
    assert claims == ["work-kept-0"]
    assert world.pod_names() == []


def test_status_is_not_rewritten_when_nothing_changed() -> None:
    world = make_world()
    world.store.create(statefulset())
    world.loop.run_for(6)
    version = world.statefulset()["metadata"]["resourceVersion"]
    world.store.patch_metadata("StatefulSet", NS, "rs", labels={"touched": "yes"})
    world.loop.run_for(60)
    assert int(world.statefulset()["metadata"]["resourceVersion"]) == int(version) + 1


def test_repository_scope_runner_set_pods_get_their_scope_env() -> None:
    # What RunnerSet needs in the end: a runner pod from the template registers on GitHub.
    clock = ManualClock()
    loop = EventLoop(clock)
    store = ObjectStore(clock)
    github = FakeGitHub(clock)
    board = JobBoard(github)
    Kubelet(
        store,
        loop,
        nodes=["node-1"],
        agent_factory=runner_agent_factory(store=store, github=board, loop=loop),
    )
    StatefulSetController(store, loop)
    scope = Scope(repository="acme/app")
    token = github.create_registration_token(scope).value
    store.create(
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": "reg", "namespace": NS},
            "data": {"token": base64.b64encode(token.encode()).decode()},
        }
    )
    sts = statefulset()
    sts["spec"]["template"]["spec"]["containers"][0]["env"] = [
        {"name": "RUNNER_REPO", "value": "acme/app"},
        {"name": "RUNNER_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
        {"name": "RUNNER_TOKEN", "valueFrom": {"secretKeyRef": {"name": "reg", "key": "token"}}},
    ]
    store.create(sts)
    loop.run_for(1 + 5 + 5)

    assert [(r.name, r.status) for r in github.runner_records(scope)] == [("rs-0", "online")]
