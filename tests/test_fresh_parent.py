"""Parents read anew at the edge: Metacontroller sends the parent from an informer cache that
may lag its children, and a stale status would have a set ask again for runners it has asked
for already, or a Runner start a second pod after its ephemeral run was done."""

from __future__ import annotations

import copy
from typing import Any

from starlette.testclient import TestClient

from arc_sim.kube_port import StoreKube
from arc_sim.store import ObjectStore
from hooks.app import create_app
from hooks.clock import ManualClock, format_time
from hooks.kube.port import KubeError, KubeObject, Resource
from tests.hook_app import hook_client, hook_settings
from tests.in_memory_github import InMemoryGitHub

API = "actions.summerwind.dev/v1alpha1"
SPEC = {"organization": "acme", "labels": ["linux"]}


def replica_set(replicas: int) -> dict[str, Any]:
    return {
        "apiVersion": API,
        "kind": "RunnerReplicaSet",
        "metadata": {"name": "pool", "namespace": "default"},
        "spec": {"replicas": replicas, "template": {"spec": SPEC}},
    }


class BrokenKube(StoreKube):
    async def get(self, resource: Resource, namespace: str, name: str) -> KubeObject:
        raise KubeError("connection refused", None)


def app_over(store: ObjectStore, clock: ManualClock, kube: StoreKube | None = None) -> TestClient:
    app = create_app(
        hook_settings(), github=InMemoryGitHub(clock), clock=clock, kube=kube or StoreKube(store)
    )
    return hook_client(app)


def sync(client: TestClient, parent: dict[str, Any]) -> dict[str, Any]:
    request = {"controller": {}, "parent": parent, "children": {f"Runner.{API}": {}}}
    response = client.post("/sync/runnerreplicaset", json=request)
    assert response.status_code == 200, response.text
    answer: dict[str, Any] = response.json()
    return answer


def test_a_set_decides_on_its_status_as_written_not_as_the_cache_has_it(
    clock: ManualClock,
) -> None:
    store = ObjectStore(clock)
    stored = store.create(replica_set(2))
    client = app_over(store, clock)
    stale = copy.deepcopy(stored)

    first = sync(client, stale)  # asks for two runners, records them
    written = store.get("RunnerReplicaSet", "default", "pool")
    assert written is not None
    store.update_status({**written, "status": first["status"]})
    clock.advance(1)
    again = sync(client, stale)  # the cache has neither the runners nor the status yet

    assert len(first["children"]) == 2
    assert again["children"] == []  # the runners asked for are on their way
    assert again["status"]["replicas"] == 2


def test_a_failed_read_decides_on_the_copy_metacontroller_sent(clock: ManualClock) -> None:
    store = ObjectStore(clock)
    stored = store.create(replica_set(1))
    client = app_over(store, clock, BrokenKube(store))

    answer = sync(client, stored)

    assert len(answer["children"]) == 1


def test_a_parent_deleted_since_the_cache_saw_it_gets_an_answer_that_changes_nothing(
    clock: ManualClock,
) -> None:
    store = ObjectStore(clock)
    stored = store.create(replica_set(3))
    client = app_over(store, clock)
    store.delete("RunnerReplicaSet", "default", "pool")

    answer = sync(client, stored)

    assert answer["children"] == []  # no runners for a set that is gone


def test_a_runner_without_its_pod_is_decided_on_its_status_as_written(
    clock: ManualClock,
) -> None:
    """An ephemeral runner whose run ended: the cache still has the status from before its pod
    went (no stop recorded), the API server the one that says it completed."""
    store = ObjectStore(clock)
    owner = store.create(replica_set(1))
    runner = store.create(
        {
            "apiVersion": API,
            "kind": "Runner",
            "metadata": {
                "name": "r1",
                "namespace": "default",
                "ownerReferences": [
                    {
                        "apiVersion": API,
                        "kind": "RunnerReplicaSet",
                        "name": "pool",
                        "uid": owner["metadata"]["uid"],
                        "controller": True,
                    }
                ],
            },
            "spec": {**SPEC, "ephemeral": True},
        }
    )
    stale = copy.deepcopy(runner)
    stale["status"] = {"phase": "Running"}
    at = format_time(clock.now())
    stop = {
        "reason": "RunnerCompleted",
        "startedAt": at,
        "podUid": "pod-1",
        "completedAt": at,
        "outcome": "Unregistered",
    }
    done = {**runner, "status": {"phase": "Completed", "gracefulStop": stop}}
    client = app_over(store, clock)
    store.update_status(done)

    request = {"controller": {}, "parent": stale, "children": {}}
    response = client.post("/sync/runner", json=request)

    assert response.status_code == 200, response.text
    kinds = [child["kind"] for child in response.json()["children"]]
    assert "Pod" not in kinds
