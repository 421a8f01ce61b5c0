"""KubePort behaviour, the same for the in-process store and for kr8s over HTTP.

Every behaviour test runs twice: against `StoreKube` directly, and against `Kr8sKube` talking
to the fake REST API (`FakeKubeApi`) on loopback. One server serves the whole module; each test
gets a fresh object store behind it.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import kr8s.asyncio
import pytest
from starlette.types import ASGIApp, Receive, Scope, Send

from arc_sim.kube_api import FakeKubeApi
from arc_sim.kube_port import StoreKube, apply_merge_patch
from arc_sim.loopback import serve_loopback
from arc_sim.store import ObjectStore
from hooks.clock import ManualClock
from hooks.kube.kr8s_adapter import Kr8sKube
from hooks.kube.port import (
    CAPACITY_RESERVATIONS,
    PODS,
    RUNNER_DEPLOYMENTS,
    AlreadyExists,
    KubeError,
    KubeObject,
    KubePort,
    NotFound,
)

TOKEN = "token-that-must-never-show"
WRONG_TOKEN = "wrong-token-also-secret"
Connect = Callable[[], AbstractAsyncContextManager[KubePort]]
Scenario = Callable[[KubePort], Awaitable[None]]


class Swappable:
    """An ASGI app whose target changes between tests, so one server serves them all."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self.app(scope, receive, send)


def write_kubeconfig(path: Path, url: str, token: str) -> str:
    """Given explicitly, so nothing is read from the machine running the tests."""
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "fake", "cluster": {"server": url}}],
        "users": [{"name": "tester", "user": {"token": token}}],
        "contexts": [{"name": "fake", "context": {"cluster": "fake", "user": "tester"}}],
        "current-context": "fake",
    }
    path.write_text(json.dumps(config))  # JSON is YAML
    return str(path)


@dataclass
class FakeCluster:
    """One loopback server for the module, serving each test's own store."""

    app: Swappable
    kubeconfig: str
    wrong_kubeconfig: str

    def serve(self, store: ObjectStore) -> None:
        self.app.app = FakeKubeApi(store, token=TOKEN)


@asynccontextmanager
async def kr8s_kube(kubeconfig: str) -> AsyncIterator[Kr8sKube]:
    kube = await Kr8sKube.connect(kubeconfig=kubeconfig)
    try:
        yield kube
    finally:
        await kube.aclose()


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FakeCluster]:
    app = Swappable(FakeKubeApi(ObjectStore(ManualClock()), token=TOKEN))
    directory = tmp_path_factory.mktemp("kube")
    with serve_loopback(app) as url:
        yield FakeCluster(
            app,
            write_kubeconfig(directory / "kubeconfig", url, TOKEN),
            write_kubeconfig(directory / "wrong-kubeconfig", url, WRONG_TOKEN),
        )


@pytest.fixture(params=["store", "kr8s"])
def connect(request: pytest.FixtureRequest, store: ObjectStore, cluster: FakeCluster) -> Connect:
    if request.param == "store":

        @asynccontextmanager
        async def direct() -> AsyncIterator[KubePort]:
            yield StoreKube(store)

        return direct
    cluster.serve(store)
    return lambda: kr8s_kube(cluster.kubeconfig)


def run(connect: Connect, scenario: Scenario) -> None:
    async def main() -> None:
        async with connect() as kube:
            await scenario(kube)

    asyncio.run(main())


def reservation(namespace: str, name: str, **spec: Any) -> KubeObject:
    return {
        "apiVersion": CAPACITY_RESERVATIONS.api_version,
        "kind": CAPACITY_RESERVATIONS.kind,
        "metadata": {"namespace": namespace, "name": name},
        "spec": spec,
    }


def names(objects: list[KubeObject]) -> list[tuple[str, str]]:
    return sorted((o["metadata"]["namespace"], o["metadata"]["name"]) for o in objects)


# --- behaviour, for both implementations


def test_create_returns_the_stored_object_then_refuses_a_second(connect: Connect) -> None:
    async def scenario(kube: KubePort) -> None:
        created = await kube.create(CAPACITY_RESERVATIONS, reservation("ci", "r1", replicas=2))
        assert created["spec"] == {"replicas": 2}
        assert created["metadata"]["uid"]
        assert created["metadata"]["resourceVersion"]
        with pytest.raises(AlreadyExists) as refused:
            await kube.create(CAPACITY_RESERVATIONS, reservation("ci", "r1", replicas=3))
        assert refused.value.status == 409
        [kept] = await kube.list(CAPACITY_RESERVATIONS, "ci")
        assert kept["spec"] == {"replicas": 2}

    run(connect, scenario)


def test_list_one_namespace_or_all_of_them(connect: Connect) -> None:
    async def scenario(kube: KubePort) -> None:
        for namespace, name in (("ci", "a"), ("ci", "b"), ("build", "c")):
            await kube.create(CAPACITY_RESERVATIONS, reservation(namespace, name))
        await kube.create(
            RUNNER_DEPLOYMENTS,
            {
                "apiVersion": RUNNER_DEPLOYMENTS.api_version,
                "kind": RUNNER_DEPLOYMENTS.kind,
                "metadata": {"namespace": "ci", "name": "runners"},
                "spec": {"replicas": 1},
            },
        )
        assert names(await kube.list(CAPACITY_RESERVATIONS, "ci")) == [("ci", "a"), ("ci", "b")]
        assert names(await kube.list(CAPACITY_RESERVATIONS, "empty")) == []
        everywhere = await kube.list(CAPACITY_RESERVATIONS)
        assert names(everywhere) == [("build", "c"), ("ci", "a"), ("ci", "b")]
        assert {o["kind"] for o in everywhere} == {CAPACITY_RESERVATIONS.kind}
        [deployment] = await kube.list(RUNNER_DEPLOYMENTS)
        assert deployment["apiVersion"] == RUNNER_DEPLOYMENTS.api_version

    run(connect, scenario)


def test_merge_patch_merges_nested_objects_and_null_removes(connect: Connect) -> None:
    async def scenario(kube: KubePort) -> None:
        original = reservation("ci", "r1", replicas=1, scaleTargetRef={"name": "rd", "kind": "X"})
        original["metadata"]["labels"] = {"keep": "yes", "drop": "yes"}
        created = await kube.create(CAPACITY_RESERVATIONS, original)
        patched = await kube.merge_patch(
            CAPACITY_RESERVATIONS,
            "ci",
            "r1",
            {
                "metadata": {"labels": {"drop": None, "new": "yes"}},
                "spec": {"replicas": 4, "scaleTargetRef": {"kind": None}, "extra": [1, 2]},
            },
        )
        assert patched["metadata"]["labels"] == {"keep": "yes", "new": "yes"}
        assert patched["spec"] == {"replicas": 4, "scaleTargetRef": {"name": "rd"}, "extra": [1, 2]}
        assert patched["metadata"]["uid"] == created["metadata"]["uid"]
        assert patched["metadata"]["resourceVersion"] != created["metadata"]["resourceVersion"]
        assert await kube.get(CAPACITY_RESERVATIONS, "ci", "r1") == patched

    run(connect, scenario)


def test_get_one_object_or_not_found(connect: Connect) -> None:
    async def scenario(kube: KubePort) -> None:
        created = await kube.create(CAPACITY_RESERVATIONS, reservation("ci", "r1", replicas=1))
        assert await kube.get(CAPACITY_RESERVATIONS, "ci", "r1") == created
        for namespace, name in (("ci", "r2"), ("other", "r1")):
            with pytest.raises(NotFound) as missing:
                await kube.get(CAPACITY_RESERVATIONS, namespace, name)
            assert missing.value.status == 404
        with pytest.raises(NotFound):
            await kube.get(RUNNER_DEPLOYMENTS, "ci", "r1")

    run(connect, scenario)


def test_merge_patch_of_a_missing_object_is_not_found(connect: Connect) -> None:
    async def scenario(kube: KubePort) -> None:
        with pytest.raises(NotFound) as missing:
            await kube.merge_patch(CAPACITY_RESERVATIONS, "ci", "nope", {"spec": {"replicas": 1}})
        assert missing.value.status == 404

    run(connect, scenario)


def test_delete_then_not_found(connect: Connect) -> None:
    async def scenario(kube: KubePort) -> None:
        await kube.create(CAPACITY_RESERVATIONS, reservation("ci", "r1"))
        await kube.create(CAPACITY_RESERVATIONS, reservation("ci", "r2"))
        await kube.delete(CAPACITY_RESERVATIONS, "ci", "r1")
        assert names(await kube.list(CAPACITY_RESERVATIONS)) == [("ci", "r2")]
        with pytest.raises(NotFound):
            await kube.get(CAPACITY_RESERVATIONS, "ci", "r1")
        with pytest.raises(NotFound) as missing:
            await kube.delete(CAPACITY_RESERVATIONS, "ci", "r1")
        assert missing.value.status == 404

    run(connect, scenario)


def test_a_forced_delete_removes_a_terminating_pod_only_with_its_uid(
    connect: Connect, store: ObjectStore
) -> None:
    """A pod stuck Terminating (its node gone) leaves the API with grace period 0; the uid
    precondition keeps a namesake (a pod created since under the same name) safe."""
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"namespace": "ci", "name": "runner-a"},
        "spec": {"containers": [{"name": "runner", "image": "runner"}]},
    }
    uid = store.create(pod)["metadata"]["uid"]
    store.delete("Pod", "ci", "runner-a")  # graceful: Terminating until the kubelet confirms

    async def scenario(kube: KubePort) -> None:
        assert (await kube.get(PODS, "ci", "runner-a"))["metadata"]["deletionTimestamp"]
        with pytest.raises(KubeError) as conflict:
            await kube.delete(PODS, "ci", "runner-a", uid="another-uid", grace_period_seconds=0)
        assert conflict.value.status == 409
        await kube.delete(PODS, "ci", "runner-a", uid=uid, grace_period_seconds=0)
        with pytest.raises(NotFound):
            await kube.get(PODS, "ci", "runner-a")

    run(connect, scenario)


def test_returned_objects_are_the_callers_own(connect: Connect) -> None:
    async def scenario(kube: KubePort) -> None:
        created = await kube.create(CAPACITY_RESERVATIONS, reservation("ci", "r1", replicas=1))
        created["spec"]["replicas"] = 99
        [listed] = await kube.list(CAPACITY_RESERVATIONS, "ci")
        listed["spec"]["replicas"] = 98
        fetched = await kube.get(CAPACITY_RESERVATIONS, "ci", "r1")
        fetched["spec"]["replicas"] = 97
        assert (await kube.get(CAPACITY_RESERVATIONS, "ci", "r1"))["spec"] == {"replicas": 1}

    run(connect, scenario)


# --- the HTTP adapter only


def test_kr8s_sends_the_token_and_errors_never_repeat_one(
    store: ObjectStore, cluster: FakeCluster
) -> None:
    cluster.serve(store)

    async def scenario() -> None:
        async with kr8s_kube(cluster.kubeconfig) as kube:
            await kube.create(CAPACITY_RESERVATIONS, reservation("ci", "r1"))
        async with kr8s_kube(cluster.wrong_kubeconfig) as kube:
            with pytest.raises(KubeError) as refused:
                await kube.list(CAPACITY_RESERVATIONS, "ci")
        assert refused.value.status == 401
        assert "Unauthorized" in str(refused.value)
        assert TOKEN not in str(refused.value)
        assert WRONG_TOKEN not in str(refused.value)

    asyncio.run(scenario())
    assert store.get(CAPACITY_RESERVATIONS.kind, "ci", "r1") is not None


def test_kr8s_reports_a_conflict_that_is_not_already_exists(
    store: ObjectStore, cluster: FakeCluster
) -> None:
    cluster.serve(store)

    async def scenario() -> None:
        async with kr8s_kube(cluster.kubeconfig) as kube:
            await kube.create(CAPACITY_RESERVATIONS, reservation("ci", "r1"))
            stale = {"metadata": {"resourceVersion": "0"}, "spec": {"replicas": 2}}
            with pytest.raises(KubeError) as refused:
                await kube.merge_patch(CAPACITY_RESERVATIONS, "ci", "r1", stale)
        assert refused.value.status == 409
        assert not isinstance(refused.value, AlreadyExists)

    asyncio.run(scenario())


def test_kr8s_discovers_the_resources_of_the_fake_api(
    store: ObjectStore, cluster: FakeCluster
) -> None:
    cluster.serve(store)

    async def scenario() -> tuple[str, str, bool]:
        api = await kr8s.asyncio.api(kubeconfig=cluster.kubeconfig)
        try:
            return await api.lookup_kind("CapacityReservation")
        finally:
            await Kr8sKube(api).aclose()

    assert asyncio.run(scenario()) == (
        "capacityreservation.arc-hooks.dev/v1alpha1",
        "capacityreservations",
        True,
    )


# --- the merge patch itself


@pytest.mark.parametrize(
    ("target", "patch", "expected"),
    [
        ({"a": "b"}, {"a": "c"}, {"a": "c"}),
        ({"a": "b"}, {"b": "c"}, {"a": "b", "b": "c"}),
        ({"a": "b"}, {"a": None}, {}),
        ({"a": [{"b": "c"}]}, {"a": [1]}, {"a": [1]}),
        (["a", "b"], ["c", "d"], ["c", "d"]),
        ({"a": "b"}, ["c"], ["c"]),
        ({"a": "foo"}, "bar", "bar"),
        ({"e": None}, {"a": 1}, {"e": None, "a": 1}),
        ([1, 2], {"a": "b", "c": None}, {"a": "b"}),
        ({}, {"a": {"bb": {"ccc": None}}}, {"a": {"bb": {}}}),
    ],
)
def test_apply_merge_patch_follows_rfc_7386(target: Any, patch: Any, expected: Any) -> None:
    before = repr(target)
    assert apply_merge_patch(target, patch) == expected
    assert repr(target) == before
