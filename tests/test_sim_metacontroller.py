"""The Metacontroller emulator, item by item of the contract's emulator checklist (§9) and the
semantics of §2-§4, against a small hook server each test scripts; then the shipped Runner
controller driving the real Runner hooks."""

from __future__ import annotations

import itertools
import json
import random
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from email.utils import format_datetime
from pathlib import Path
from typing import Any

import pytest
import yaml
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from arc_sim.events import EventLoop
from arc_sim.loopback import serve_loopback
from arc_sim.metacontroller import (
    AsgiTransport,
    HookReply,
    LoopbackTransport,
    MetacontrollerEmulator,
    ReplicaFault,
)
from arc_sim.metacontroller.children import manage_children
from arc_sim.metacontroller.composite import CompositeController
from arc_sim.metacontroller.merge import LAST_APPLIED_ANNOTATION, go_json, merge, updated_child
from arc_sim.metacontroller.resources import ResourceCatalog
from arc_sim.metacontroller.spec import (
    UpdateStrategies,
    parse_duration,
    read_controller,
    webhook_url,
)
from arc_sim.metacontroller.wire import DecodedChildren
from arc_sim.metacontroller.workqueue import WorkQueue
from arc_sim.store import KubeObject, ObjectStore
from arc_sim.world import hook_token_secret
from hooks.app import create_app
from hooks.clock import ManualClock
from hooks.github.port import Scope
from tests.hook_app import HOOK_TOKEN, hook_settings
from tests.in_memory_github import InMemoryGitHub

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = Path(__file__).resolve().parent / "fixtures" / "metacontroller"
HOOKS_URL = "http://widget-hooks.hooks"
WIDGETS = "example.com/v1"
FINALIZER = "metacontroller.io/compositecontroller-widgets"

Handler = Callable[[dict[str, Any]], Any]


# --------------------------------------------------------------------------- the test world


class ScriptedHooks:
    """A hook server whose answers the test scripts per path. Every request is recorded with
    the virtual second it came at. A handler returns a JSON-able answer or a Response."""

    def __init__(self, clock: ManualClock) -> None:
        self.clock = clock
        self.handlers: dict[str, Handler] = {}
        self.requests: list[tuple[str, float, dict[str, Any]]] = []
        self.app = Starlette(routes=[Route("/{path:path}", self._endpoint, methods=["POST"])])
        self._start = clock.now()

    def on(self, path: str, handler: Handler) -> None:
        self.handlers[path] = handler

    def calls(self, path: str) -> list[dict[str, Any]]:
        return [request for called, _, request in self.requests if called == path]

    def call_times(self, path: str) -> list[float]:
        return [when for called, when, _ in self.requests if called == path]

    async def _endpoint(self, request: Request) -> Response:
        path = "/" + request.path_params["path"]
        document = json.loads(await request.body())
        elapsed = (self.clock.now() - self._start).total_seconds()
        self.requests.append((path, elapsed, document))
        reply = self.handlers[path](document)
        return reply if isinstance(reply, Response) else JSONResponse(reply)


@dataclass
class World:
    clock: ManualClock
    loop: EventLoop
    store: ObjectStore
    hooks: ScriptedHooks
    transport: AsgiTransport
    emulator: MetacontrollerEmulator
    events: list[tuple[str, str, str]] = field(default_factory=list)
    """(event, kind, name) of every store change."""

    def start(self, *controllers: KubeObject) -> None:
        self.emulator.load_manifests(controllers)
        self.emulator.start()

    def run(self, seconds: float = 1.0) -> None:
        self.loop.run_for(seconds)

    def create(self, obj: KubeObject) -> KubeObject:
        return self.store.create(obj)

    def get(self, kind: str, name: str, namespace: str = "default") -> KubeObject:
        found = self.store.get(kind, namespace, name)
        assert found is not None, f"{kind} {namespace}/{name} not found"
        return found

    def exists(self, kind: str, name: str, namespace: str = "default") -> bool:
        return self.store.get(kind, namespace, name) is not None

    def touch(self, kind: str, name: str, namespace: str = "default") -> None:
        """A metadata change that brings a sync."""
        stamp = str(len(self.events))
        self.store.patch_metadata(kind, namespace, name, annotations={"touched": stamp})

    def composite_controller(self, name: str = "widgets") -> CompositeController:
        controller = self.emulator.controller(name)
        assert isinstance(controller, CompositeController)
        return controller


def new_world(*, sync_seconds: float = 0.01, replicas: int = 1) -> World:
    clock = ManualClock()
    loop = EventLoop(clock, seed=7)
    store = ObjectStore(clock)
    hooks = ScriptedHooks(clock)
    transport = AsgiTransport([hooks.app] * replicas, random.Random(3), clock=clock)
    emulator = MetacontrollerEmulator(store, loop, transport, sync_seconds=sync_seconds)
    emulator.load_directory(FIXTURES / "crds.yaml")
    world = World(clock, loop, store, hooks, transport, emulator)
    store.watch(
        lambda event, obj: world.events.append((event, obj["kind"], obj["metadata"]["name"]))
    )
    return world


@pytest.fixture
def world() -> Iterator[World]:
    built = new_world()
    yield built
    built.transport.close()


@pytest.fixture
def instant_world() -> Iterator[World]:
    """Workers are free again at once, so retry times are exactly the delays asked for."""
    built = new_world(sync_seconds=0.0)
    yield built
    built.transport.close()


def composite(
    name: str = "widgets",
    *,
    parent: str = "widgets",
    children: tuple[tuple[str, str, str], ...] = (("v1", "configmaps", "InPlace"),),
    version: str = "v2",
    sync_path: str = "/sync",
    finalize: bool = False,
    customize: bool = False,
    generate_selector: bool = True,
    ignore_status_changes: bool = False,
    parent_selector: dict[str, Any] | None = None,
    resync_period: float | None = None,
) -> KubeObject:
    hooks: dict[str, Any] = {"sync": hook(sync_path, version)}
    if finalize:
        hooks["finalize"] = hook("/finalize", version)
    if customize:
        hooks["customize"] = hook("/customize", version)
    parent_resource: dict[str, Any] = {"apiVersion": WIDGETS, "resource": parent}
    if ignore_status_changes:
        parent_resource["ignoreStatusChanges"] = True
    if parent_selector is not None:
        parent_resource["labelSelector"] = parent_selector
    spec: dict[str, Any] = {
        "parentResource": parent_resource,
        "childResources": _rules(children),
        "generateSelector": generate_selector,
        "hooks": hooks,
    }
    if resync_period is not None:
        spec["resyncPeriodSeconds"] = resync_period
    return _controller("CompositeController", name, spec)


def decorator(
    name: str = "decorator",
    *,
    resources: list[dict[str, Any]],
    attachments: tuple[tuple[str, str, str], ...] = (),
    finalize: bool = False,
) -> KubeObject:
    hooks: dict[str, Any] = {"sync": hook("/decorate", "v2")}
    if finalize:
        hooks["finalize"] = hook("/undecorate", "v2")
    spec = {"resources": resources, "attachments": _rules(attachments), "hooks": hooks}
    return _controller("DecoratorController", name, spec)


def hook(path: str, version: str) -> dict[str, Any]:
    return {"version": version, "webhook": {"url": HOOKS_URL + path}}


def _rules(rules: tuple[tuple[str, str, str], ...]) -> list[dict[str, Any]]:
    return [
        {"apiVersion": api, "resource": resource, "updateStrategy": {"method": method}}
        for api, resource, method in rules
    ]


def _controller(kind: str, name: str, spec: dict[str, Any]) -> KubeObject:
    return {
        "apiVersion": "metacontroller.k8s.io/v1alpha1",
        "kind": kind,
        "metadata": {"name": name},
        "spec": spec,
    }


def widget(
    name: str = "w1",
    namespace: str = "default",
    *,
    kind: str = "Widget",
    labels: dict[str, str] | None = None,
    finalizers: list[str] | None = None,
    **spec: Any,
) -> KubeObject:
    metadata: dict[str, Any] = {"name": name, "namespace": namespace}
    if labels is not None:
        metadata["labels"] = labels
    if finalizers is not None:
        metadata["finalizers"] = finalizers
    return {
        "apiVersion": WIDGETS,
        "kind": kind,
        "metadata": metadata,
        "spec": spec or {"value": "1"},
    }


def cluster_widget(name: str = "c1") -> KubeObject:
    return widget(name, "", kind="ClusterWidget")


def selecting(app: str) -> dict[str, Any]:
    """Widget spec with a label selector."""
    return {"selector": {"matchLabels": {"app": app}}}


def obj(
    kind: str,
    name: str,
    namespace: str | None = "default",
    *,
    labels: dict[str, str] | None = None,
    annotations: dict[str, str] | None = None,
    owner: KubeObject | None = None,
    **fields: Any,
) -> KubeObject:
    """A core object; without a namespace when None (as a hook may return it)."""
    metadata: dict[str, Any] = {"name": name}
    if namespace is not None:
        metadata["namespace"] = namespace
    if labels is not None:
        metadata["labels"] = labels
    if annotations is not None:
        metadata["annotations"] = annotations
    if owner is not None:
        metadata["ownerReferences"] = [owner_ref(owner)]
    return {"apiVersion": "v1", "kind": kind, "metadata": metadata, **fields}


def config_map(name: str, namespace: str | None = "default", **kwargs: Any) -> KubeObject:
    return obj("ConfigMap", name, namespace, **kwargs)


def pod(name: str, namespace: str | None = "default", **kwargs: Any) -> KubeObject:
    return obj("Pod", name, namespace, spec={"containers": [{"name": "c", "image": "i"}]}, **kwargs)


def owner_ref(owner: KubeObject) -> dict[str, Any]:
    return {
        "apiVersion": owner["apiVersion"],
        "kind": owner["kind"],
        "name": owner["metadata"]["name"],
        "uid": owner["metadata"]["uid"],
        "controller": True,
    }


def answer(
    *children: KubeObject,
    status: dict[str, Any] | None = None,
    resync: float | None = None,
    finalized: bool | None = None,
) -> dict[str, Any]:
    reply: dict[str, Any] = {"status": status, "children": list(children)}
    if resync is not None:
        reply["resyncAfterSeconds"] = resync
    if finalized is not None:
        reply["finalized"] = finalized
    return reply


def config_per_value(request: dict[str, Any]) -> dict[str, Any]:
    """One ConfigMap `<parent>-config` holding the parent's spec.value."""
    parent = request["parent"]
    value = parent["spec"]["value"]
    name = parent["metadata"]["name"] + "-config"
    return answer(config_map(name, None, data={"value": value}), status={"value": value})


def related_rules(*rules: dict[str, Any]) -> Handler:
    return lambda request: {"relatedResources": list(rules)}


def configmaps(**rule: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "resource": "configmaps", **rule}


# ------------------------------------------------------- 1. store identity, status and GC


def test_item1_children_get_identity_status_uses_the_subresource_and_gc_collects(
    world: World,
) -> None:
    world.hooks.on("/sync", config_per_value)
    world.start(composite())
    parent = world.create(widget())
    world.run()

    child = world.get("ConfigMap", "w1-config")
    assert child["metadata"]["uid"] and child["metadata"]["resourceVersion"]
    assert child["metadata"]["ownerReferences"][0]["uid"] == parent["metadata"]["uid"]
    synced = world.get("Widget", "w1")
    assert synced["status"] == {"value": "1", "observedGeneration": 1}
    assert synced["metadata"]["generation"] == 1  # status is not spec

    world.store.delete("Widget", "default", "w1")
    assert not world.exists("ConfigMap", "w1-config")


def test_item1_a_parent_without_the_status_subresource_is_refused(world: World) -> None:
    world.hooks.on("/sync", config_per_value)
    world.start(composite("plain", parent="plainwidgets"))
    world.create(widget(kind="PlainWidget"))
    world.run()

    assert world.hooks.requests == []
    assert "status subresource" in world.emulator.warnings[0]


# ------------------------------------------------------------------- 2. the work queue


def test_item2_no_concurrent_syncs_per_parent_and_duplicate_enqueues_collapse(
    world: World,
) -> None:
    in_call: list[bool] = []

    def sync(request: dict[str, Any]) -> dict[str, Any]:
        assert not in_call, "two syncs of one parent at once"
        in_call.append(True)
        if len(world.hooks.calls("/sync")) == 1:
            for _ in range(3):  # three changes during the sync: one more sync, not three
                world.touch("Widget", "w1")
        in_call.pop()
        return answer()

    world.hooks.on("/sync", sync)
    world.start(composite(ignore_status_changes=True))
    world.create(widget())
    world.run()
    assert len(world.hooks.calls("/sync")) == 2

    queue = world.composite_controller().queue
    for _ in range(3):
        queue.add(("default", "w1"))
    world.run()
    assert len(world.hooks.calls("/sync")) == 3


def test_item2_resync_after_seconds_enqueues_later(instant_world: World) -> None:
    world = instant_world
    world.hooks.on("/sync", lambda request: answer(resync=30))
    world.start(composite(ignore_status_changes=True))
    world.create(widget())
    world.run(65)

    assert world.hooks.call_times("/sync") == [0.0, 30.0, 60.0]


def test_item2_429_requeues_after_retry_after_and_is_not_an_error(instant_world: World) -> None:
    world = instant_world

    def later(seconds: float) -> str:
        return format_datetime(world.clock.now() + timedelta(seconds=seconds), usegmt=True)

    replies: list[Callable[[], Response]] = [
        lambda: JSONResponse({}, status_code=429, headers={"Retry-After": "7"}),
        lambda: JSONResponse({}, status_code=429, headers={"Retry-After": later(12)}),
    ]
    world.hooks.on(
        "/sync", lambda request: replies.pop(0)() if replies else answer(status={"ok": True})
    )
    world.start(composite(ignore_status_changes=True))
    world.create(widget())
    world.run(30)

    assert world.hooks.call_times("/sync") == [0.0, 7.0, 19.0]
    assert world.emulator.throttled == 2
    assert not world.emulator.errors
    assert world.get("Widget", "w1")["status"]["ok"] is True


def test_item2_failures_back_off_exponentially_and_success_resets(instant_world: World) -> None:
    world = instant_world
    failures = 5

    def sync(request: dict[str, Any]) -> Any:
        nonlocal failures
        failures -= 1
        return Response("boom", status_code=500) if failures >= 0 else answer()

    world.hooks.on("/sync", sync)
    world.start(composite(ignore_status_changes=True))
    world.create(widget())
    world.run(1)

    times = world.hooks.call_times("/sync")
    assert [round(b - a, 3) for a, b in itertools.pairwise(times)] == [
        0.005,
        0.01,
        0.02,
        0.04,
        0.08,
    ]
    assert world.composite_controller().queue.rate_limiter.failures(("default", "w1")) == 0
    assert world.emulator.errors["non_200"] == 5


def test_item2_a_delayed_add_keeps_the_earliest_time() -> None:
    clock = ManualClock()
    loop = EventLoop(clock)
    start = clock.now()
    processed: list[float] = []
    queue: WorkQueue[str] = WorkQueue(
        loop,
        lambda key: processed.append((clock.now() - start).total_seconds()),
        workers=2,
        sync_seconds=0.0,
    )
    for seconds in (10, 5, 20):
        queue.add_after("a", seconds)
    loop.run_for(30)
    assert processed == [5.0]


# --------------------------------------------------------------------------- 3. triggers


def test_item3_initial_full_sync_of_existing_parents(world: World) -> None:
    world.hooks.on("/sync", config_per_value)
    for name in ("a", "b", "c"):
        world.create(widget(name))
    world.start(composite())
    world.run(0)

    synced = {request["parent"]["metadata"]["name"] for request in world.hooks.calls("/sync")}
    assert synced == {"a", "b", "c"}


def test_item3_parent_changes_trigger_and_status_only_changes_obey_ignore_status_changes(
    world: World,
) -> None:
    world.hooks.on("/sync", lambda request: answer(status={"seen": request["parent"]["spec"]}))
    world.start(
        composite("watching"),
        composite("ignoring", parent="clusterwidgets", ignore_status_changes=True),
    )
    world.create(widget())
    world.create(cluster_widget())
    world.run(5)

    synced = [request["parent"]["metadata"]["name"] for request in world.hooks.calls("/sync")]
    # Writing status brings one more sync, unless status changes are ignored.
    assert (synced.count("w1"), synced.count("c1")) == (2, 1)

    current = world.get("ClusterWidget", "c1", "")
    world.store.update({**current, "spec": {"value": "2"}})
    world.run(5)
    synced = [request["parent"]["metadata"]["name"] for request in world.hooks.calls("/sync")]
    assert synced.count("c1") == 2


def test_item3_a_change_to_an_owned_child_enqueues_its_owner(world: World) -> None:
    world.hooks.on("/sync", config_per_value)
    world.start(composite())
    world.create(widget())
    world.run()
    calls = len(world.hooks.calls("/sync"))

    child = world.get("ConfigMap", "w1-config")
    world.store.update({**child, "data": {"value": "tampered"}})
    world.run()

    # The change brings a sync; its InPlace update brings one more, which changes nothing.
    assert len(world.hooks.calls("/sync")) == calls + 2
    assert world.get("ConfigMap", "w1-config")["data"] == {"value": "1"}


def test_item3_a_matching_orphan_enqueues_the_parents_that_would_adopt_it(world: World) -> None:
    world.hooks.on(
        "/sync",
        lambda request: answer(
            *[
                config_map(child["metadata"]["name"], None, labels={"app": "w1"})
                for child in request["children"]["ConfigMap.v1"].values()
            ]
        ),
    )
    world.start(composite(generate_selector=False))
    world.create(widget(**selecting("w1")))
    world.run()
    calls = len(world.hooks.calls("/sync"))

    world.create(config_map("stray", labels={"app": "w1"}))
    world.create(config_map("other", labels={"app": "nobody"}))
    world.run()

    assert len(world.hooks.calls("/sync")) > calls
    assert "default/stray" in world.hooks.calls("/sync")[-1]["children"]["ConfigMap.v1"]
    assert world.get("ConfigMap", "stray")["metadata"]["ownerReferences"][0]["name"] == "w1"
    assert "ownerReferences" not in world.get("ConfigMap", "other")["metadata"]


def test_item3_a_related_object_change_enqueues_the_parents_selecting_it(world: World) -> None:
    world.hooks.on("/customize", related_rules(configmaps(names=["settings"])))
    world.hooks.on("/sync", lambda request: answer())
    world.start(composite(customize=True, ignore_status_changes=True))
    world.create(config_map("settings", data={"color": "blue"}))
    world.create(widget())
    world.run()
    related = world.hooks.calls("/sync")[-1]["related"]
    assert related["ConfigMap.v1"]["default/settings"]["data"] == {"color": "blue"}

    settings = world.get("ConfigMap", "settings")
    world.store.update({**settings, "data": {"color": "red"}})
    world.create(config_map("unrelated"))
    world.run()

    syncs = world.hooks.calls("/sync")
    assert len(syncs) == 2
    assert syncs[-1]["related"]["ConfigMap.v1"]["default/settings"]["data"] == {"color": "red"}


def test_item3_resync_period_resyncs_every_parent(world: World) -> None:
    world.hooks.on("/sync", lambda request: answer())
    world.start(composite(resync_period=60, ignore_status_changes=True))
    world.create(widget("a"))
    world.create(widget("b"))
    world.run(125)

    assert len(world.hooks.calls("/sync")) == 2 * 3


# ---------------------------------------------------------------------------- 4. requests


def test_item4_a_v2_request_has_every_group_ns_name_keys_and_the_whole_controller(
    world: World,
) -> None:
    world.hooks.on("/sync", config_per_value)
    controller = composite(children=(("v1", "configmaps", "InPlace"), ("v1", "pods", "OnDelete")))
    world.start(controller)
    world.create(widget())
    world.run()

    request = world.hooks.calls("/sync")[-1]
    assert set(request) == {"controller", "parent", "children", "related", "finalizing"}
    assert request["controller"] == controller
    assert request["children"]["Pod.v1"] == {}
    assert list(request["children"]["ConfigMap.v1"]) == ["default/w1-config"]
    assert request["related"] == {}
    assert request["finalizing"] is False
    assert request["parent"]["status"] == {"value": "1", "observedGeneration": 1}


def test_item4_v1_keys_are_names_or_ns_name_under_a_cluster_scoped_parent(world: World) -> None:
    def sync(request: dict[str, Any]) -> dict[str, Any]:
        parent = request["parent"]
        namespace = "default" if parent["kind"] == "ClusterWidget" else None
        return answer(config_map(parent["metadata"]["name"] + "-config", namespace))

    world.hooks.on("/sync", sync)
    world.start(
        composite("namespaced", version="v1"),
        composite("cluster", version="v1", parent="clusterwidgets"),
    )
    world.create(widget())
    world.create(cluster_widget())
    world.run()

    keys = {
        request["parent"]["metadata"]["name"]: list(request["children"]["ConfigMap.v1"])
        for request in world.hooks.calls("/sync")
    }
    assert keys == {"w1": ["w1-config"], "c1": ["default/c1-config"]}


def test_item4_a_v1_sync_of_a_namespaced_parent_sees_no_foreign_related_objects(
    world: World,
) -> None:
    world.hooks.on(
        "/customize",
        related_rules(
            configmaps(namespace="other", labelSelector={}),
            configmaps(labelSelector={}),
            {"apiVersion": "v1", "resource": "namespaces", "labelSelector": {}},
        ),
    )
    for version in ("v1", "v2"):
        world.hooks.on(f"/sync-{version}", lambda request: answer())
        controller = composite(f"sync-{version}", version=version, sync_path=f"/sync-{version}")
        controller["spec"]["hooks"]["customize"] = hook("/customize", "v2")
        world.emulator.load_manifests([controller])
    world.create(obj("Namespace", "other", None))
    world.create(config_map("mine"))
    world.create(config_map("theirs", "other"))
    world.create(widget())
    world.emulator.start()
    world.run()

    v1_related = world.hooks.calls("/sync-v1")[0]["related"]
    assert {group: list(members) for group, members in v1_related.items()} == {
        "ConfigMap.v1": ["mine"],
        "Namespace.v1": [],
    }
    v2_related = world.hooks.calls("/sync-v2")[0]["related"]
    assert set(v2_related["ConfigMap.v1"]) == {"other/theirs", "default/mine"}
    assert set(v2_related["Namespace.v1"]) == {"other"}


# ------------------------------------------------------------------------- 5. answers


def test_item5_only_200_counts_and_a_failed_call_applies_nothing(instant_world: World) -> None:
    world = instant_world
    world.hooks.on(
        "/sync", lambda request: JSONResponse(config_per_value(request), status_code=201)
    )
    world.start(composite())
    world.create(widget())
    world.run(0.1)

    assert not world.exists("ConfigMap", "w1-config")
    assert "status" not in world.get("Widget", "w1")
    assert world.emulator.errors["non_200"] >= 3
    event = world.emulator.stats.recent_errors[0]
    assert (event.controller, event.parent, event.kind) == ("widgets", "default/w1", "non_200")


def test_item5_timeouts_and_unreachable_replicas_are_errors_until_they_recover() -> None:
    world = new_world(replicas=2)
    world.hooks.on("/sync", config_per_value)
    until = world.clock.now() + timedelta(seconds=3)
    world.transport.break_replica(0, ReplicaFault("timeout", until=until))
    world.transport.break_replica(1, ReplicaFault("unreachable", until=until))
    world.start(composite())
    world.create(widget())
    world.run(2)
    assert not world.exists("ConfigMap", "w1-config")
    assert world.emulator.errors["timeout"] and world.emulator.errors["transport"]

    world.run(20)
    assert world.exists("ConfigMap", "w1-config")
    world.transport.close()


def test_item5_the_hook_timeout_defaults_to_10_seconds(world: World) -> None:
    timeouts: list[float] = []

    class Recording:
        def post(
            self, url: str, body: bytes, timeout: float, headers: Mapping[str, str] | None = None
        ) -> HookReply:
            timeouts.append(timeout)
            return world.transport.post(url, body, timeout, headers)

    emulator = MetacontrollerEmulator(world.store, world.loop, Recording())
    emulator.load_directory(FIXTURES / "crds.yaml")
    controller = composite()
    controller["spec"]["hooks"]["sync"]["webhook"]["timeout"] = "0s"
    emulator.load_manifests([controller])
    world.hooks.on("/sync", lambda request: answer())
    emulator.start()
    world.create(widget())
    world.run()

    assert timeouts[0] == 10.0
    assert parse_duration("1m30s") == 90.0
    assert parse_duration("500ms") == 0.5


def test_item5_v1_decoding_is_loose_and_case_sensitive(world: World) -> None:
    body = (
        b'{"status": {"a": 1}, "status": {"a": 2}, "surprise": true,'
        b' "Children": [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}}]}'
    )
    world.hooks.on("/sync", lambda request: Response(body, media_type="application/json"))
    world.start(composite(version="v1"))
    world.create(widget())
    world.run()

    assert world.get("Widget", "w1")["status"] == {"a": 2, "observedGeneration": 1}
    assert not world.exists("ConfigMap", "x")  # `Children` is not `children`
    assert not world.emulator.errors


@pytest.mark.parametrize(
    "body",
    [
        b'{"status": {"a": 1}, "surprise": true}',
        b'{"status": {"a": 1}, "status": {"a": 2}}',
        b'{"status": {"a": 1, "a": 2}}',
        b'{"Status": {"a": 1}}',
        b'{"children": [{"apiVersion": "v1", "metadata": {"name": "no-kind"}}]}',
        b'{"children": {}}',
        b"not json",
    ],
)
def test_item5_v2_decoding_is_strict_and_a_bad_answer_applies_nothing(
    world: World, body: bytes
) -> None:
    world.hooks.on("/sync", lambda request: Response(body, media_type="application/json"))
    world.start(composite())
    world.create(widget())
    world.run()

    assert "status" not in world.get("Widget", "w1")
    assert world.emulator.errors["decode"] >= 1


# ------------------------------------------------------- 6. namespaces and the selector


def test_item6_children_default_to_the_parent_namespace_and_get_the_generated_label(
    world: World,
) -> None:
    world.hooks.on("/sync", config_per_value)
    world.start(composite())
    parent = world.create(widget(namespace="team"))
    world.run()

    child = world.get("ConfigMap", "w1-config", "team")
    generated = {"controller-uid": parent["metadata"]["uid"]}
    assert child["metadata"]["labels"] == generated
    applied = json.loads(child["metadata"]["annotations"][LAST_APPLIED_ANNOTATION])
    assert applied["metadata"] == {"name": "w1-config", "namespace": "team", "labels": generated}


def test_item6_the_same_large_answer_for_parents_of_two_namespaces_gives_each_its_own_child(
    world: World,
) -> None:
    """Children of large answers are decoded once and shared between answers: filling in the
    namespace and the generated label must not change the shared object."""
    pad = "x" * (DecodedChildren.SPLIT_ABOVE_BYTES + 1)
    world.hooks.on("/sync", lambda _: answer(config_map("shared", None), status={"pad": pad}))
    world.start(composite())
    parents = [world.create(widget(namespace=namespace)) for namespace in ("a", "b")]
    world.run()
    world.touch("Widget", "w1", "a")  # answered again with the very same children
    world.run()

    for parent in parents:
        namespace = parent["metadata"]["namespace"]
        child = world.get("ConfigMap", "shared", namespace)
        assert child["metadata"]["labels"] == {"controller-uid": parent["metadata"]["uid"]}
        assert child["metadata"]["ownerReferences"][0]["uid"] == parent["metadata"]["uid"]
    assert not world.emulator.errors


@pytest.mark.parametrize("generate_selector", [True, False])
def test_item6_a_child_outside_the_selector_fails_the_sync(
    world: World, generate_selector: bool
) -> None:
    labels = {"controller-uid": "someone-else"} if generate_selector else {"app": "other"}
    world.hooks.on(
        "/sync",
        lambda request: answer(config_map("c", None, labels=labels), status={"phase": "Ready"}),
    )
    world.start(composite(generate_selector=generate_selector))
    world.create(widget(**selecting("w1")))
    world.run()

    assert not world.exists("ConfigMap", "c")
    assert "status" not in world.get("Widget", "w1")
    assert world.emulator.errors["invalid"] >= 1


def test_item6_a_parent_without_a_selector_is_not_synced(world: World) -> None:
    world.hooks.on("/sync", lambda request: answer())
    world.start(composite(generate_selector=False))
    world.create(widget())
    world.run()

    assert world.hooks.requests == []
    assert "selector" in world.emulator.stats.recent_errors[0].message


# ----------------------------------------------------------------- 7. claiming children


def test_item7_claim_adopts_matching_orphans_releases_and_ignores_the_rest(world: World) -> None:
    world.hooks.on(
        "/sync",
        lambda request: answer(
            *[
                config_map(child["metadata"]["name"], None, labels={"app": "w1"})
                for child in request["children"]["ConfigMap.v1"].values()
            ]
        ),
    )
    parent = world.create(widget(**selecting("w1")))
    stranger = world.create(widget("stranger"))
    world.create(config_map("orphan", labels={"app": "w1"}))
    world.create(config_map("owned-by-another", labels={"app": "w1"}, owner=stranger))
    world.create(config_map("mine-but-relabelled", labels={"app": "x"}, owner=parent))
    world.create(config_map("unrelated", labels={"app": "zzz"}))
    world.start(composite(generate_selector=False))
    world.run()

    assert list(world.hooks.calls("/sync")[0]["children"]["ConfigMap.v1"]) == ["default/orphan"]
    adopted = world.get("ConfigMap", "orphan")["metadata"]["ownerReferences"]
    assert adopted[0]["uid"] == parent["metadata"]["uid"]
    assert adopted[0]["controller"] and adopted[0]["blockOwnerDeletion"]
    # Released: an empty list is stored as none, as the API server does (`omitempty`).
    assert "ownerReferences" not in world.get("ConfigMap", "mine-but-relabelled")["metadata"]
    others = world.get("ConfigMap", "owned-by-another")["metadata"]["ownerReferences"]
    assert others[0]["name"] == "stranger"
    assert "ownerReferences" not in world.get("ConfigMap", "unrelated")["metadata"]


def test_item7_adopted_children_the_hook_omits_are_deleted_terminating_orphans_stay(
    world: World,
) -> None:
    world.hooks.on("/sync", lambda request: answer())
    world.create(widget(**selecting("w1")))
    world.create(config_map("orphan", labels={"app": "w1"}))
    world.create(pod("dying", labels={"app": "w1"}))
    world.store.delete("Pod", "default", "dying")
    children = (("v1", "configmaps", "InPlace"), ("v1", "pods", "OnDelete"))
    world.start(composite(generate_selector=False, children=children))
    world.run()

    assert not world.exists("ConfigMap", "orphan")
    assert "ownerReferences" not in world.get("Pod", "dying")["metadata"]


# --------------------------------------------------------------------- 8. applying children


def test_item8_deletes_come_before_creates_and_terminating_children_are_left_alone(
    world: World,
) -> None:
    wanted = ["a"]
    world.hooks.on("/sync", lambda request: answer(*[pod(name, None) for name in wanted]))
    world.start(composite(children=(("v1", "pods", "OnDelete"),)))
    world.create(widget())
    world.run()
    world.events.clear()

    wanted[:] = ["b"]
    world.touch("Widget", "w1")
    world.run()

    pod_events = [(event, name) for event, kind, name in world.events if kind == "Pod"]
    assert pod_events[:2] == [("MODIFIED", "a"), ("ADDED", "b")]  # a is deleted, then b made
    assert world.get("Pod", "a")["metadata"]["deletionTimestamp"]
    # A terminating child is still claimed and shown, but not deleted again.
    assert set(world.hooks.calls("/sync")[-1]["children"]["Pod.v1"]) == {
        "default/a",
        "default/b",
    }
    assert not world.emulator.errors

    world.store.pod_terminated("default", "a")
    world.run()
    assert not world.exists("Pod", "a")
    assert world.exists("Pod", "b")


def test_item8_create_records_last_applied_and_a_controller_reference(world: World) -> None:
    world.hooks.on("/sync", config_per_value)
    world.start(composite())
    parent = world.create(widget())
    world.run()

    child = world.get("ConfigMap", "w1-config")
    uid = parent["metadata"]["uid"]
    assert child["metadata"]["ownerReferences"] == [
        {
            "apiVersion": WIDGETS,
            "kind": "Widget",
            "name": "w1",
            "uid": uid,
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]
    desired = config_map("w1-config", labels={"controller-uid": uid}, data={"value": "1"})
    assert child["metadata"]["annotations"][LAST_APPLIED_ANNOTATION] == go_json(desired)


def test_item8_already_exists_is_swallowed(world: World) -> None:
    world.create(config_map("w1-config", data={"value": "someone else's"}))
    world.hooks.on("/sync", config_per_value)
    world.start(composite())
    world.create(widget())
    world.run()

    assert world.get("ConfigMap", "w1-config")["data"] == {"value": "someone else's"}
    assert not world.emulator.errors


def test_item8_no_op_updates_are_skipped(world: World) -> None:
    world.hooks.on("/sync", lambda request: {**config_per_value(request), "resyncAfterSeconds": 1})
    world.start(composite())
    world.create(widget())
    world.run()
    version = world.get("ConfigMap", "w1-config")["metadata"]["resourceVersion"]
    world.run(10)

    assert len(world.hooks.calls("/sync")) > 10
    assert world.get("ConfigMap", "w1-config")["metadata"]["resourceVersion"] == version


def test_item8_in_place_conflicts_and_vanished_children_are_swallowed(world: World) -> None:
    parent = world.create(widget())
    stale = world.create(config_map("c", data={"value": "1"}))
    world.store.update({**stale, "data": {"value": "changed meanwhile"}})
    gone = world.create(config_map("gone", data={"value": "1"}))
    world.store.delete("ConfigMap", "default", "gone")
    observed = {"ConfigMap.v1": {("default", "c"): stale, ("default", "gone"): gone}}
    desired = {
        "ConfigMap.v1": {
            ("default", "c"): config_map("c", data={"value": "2"}),
            ("default", "gone"): config_map("gone", data={"value": "2"}),
        }
    }
    strategies = UpdateStrategies({("", "ConfigMap"): "InPlace"})

    errors = manage_children(world.store, ResourceCatalog(), strategies, parent, observed, desired)
    assert errors == []
    assert world.get("ConfigMap", "c")["data"] == {"value": "changed meanwhile"}


@pytest.mark.parametrize(
    ("observed", "last", "desired", "merged"),
    [
        pytest.param(
            {"a": 1, "b": 2, "other": 3},
            {"a": 1, "b": 2},
            {"a": 9},
            {"a": 9, "other": 3},
            id="maps: dropped keys go, keys set by others stay, desired scalars win",
        ),
        pytest.param(
            {"c": [{"name": "x", "v": 1, "extra": True}, {"name": "y", "v": 1}]},
            {"c": [{"name": "x", "v": 1}, {"name": "y", "v": 1}]},
            {"c": [{"name": "z", "v": 3}, {"name": "x", "v": 2}]},
            {"c": [{"name": "x", "v": 2, "extra": True}, {"name": "z", "v": 3}]},
            id="lists keyed by name: observed order, new items appended",
        ),
        pytest.param(
            {"p": [{"containerPort": 80, "name": "http", "protocol": "TCP"}]},
            {"p": [{"containerPort": 80, "name": "http"}]},
            {"p": [{"containerPort": 80, "name": "web"}]},
            {"p": [{"containerPort": 80, "name": "web", "protocol": "TCP"}]},
            id="containerPort comes before name",
        ),
        pytest.param(
            {"t": [{"key": "a"}, {"key": "system"}], "s": [1, 2]},
            {"t": [{"key": "a"}], "s": [1]},
            {"t": [{"key": "a"}], "s": [3]},
            {"t": [{"key": "a"}], "s": [3]},
            id="lists without a known key are replaced",
        ),
    ],
)
def test_item8_three_way_merge(
    observed: dict[str, Any],
    last: dict[str, Any],
    desired: dict[str, Any],
    merged: dict[str, Any],
) -> None:
    before = json.dumps(observed)
    assert merge(observed, last, desired) == merged
    assert json.dumps(observed) == before  # the inputs are not changed


def test_item8_the_update_reverts_server_fields_and_status_and_records_the_new_desired() -> None:
    observed = config_map("c", status={"observed": True})
    observed["metadata"].update(uid="u1", resourceVersion="7", generation=1)
    desired = config_map("c", status={"forged": True}, data={"k": "v"})
    desired["metadata"].update(uid="forged", resourceVersion="1")

    updated = updated_child(observed, desired)
    assert (updated["metadata"]["uid"], updated["metadata"]["resourceVersion"]) == ("u1", "7")
    assert updated["status"] == {"observed": True}
    assert updated["data"] == {"k": "v"}
    assert updated["metadata"]["annotations"][LAST_APPLIED_ANNOTATION] == go_json(desired)


def test_item8_update_strategy_example() -> None:
    """Metacontroller's examples/update-strategy: an out-of-band field survives the merge;
    Recreate makes a new object without it; OnDelete keeps the old value until deleted."""
    world = new_world()
    world.hooks.on("/sync", config_per_value)
    world.emulator.load_directory(FIXTURES / "update-strategy.yaml")
    world.emulator.start()
    parents = {"ondelete": "OnDeleteParent", "recreate": "RecreateParent"}
    parents["inplace"] = "InPlaceParent"
    for name, kind in parents.items():
        world.create(
            {
                "apiVersion": "update.example.com/v1",
                "kind": kind,
                "metadata": {"name": name, "namespace": "default"},
                "spec": {"value": "1"},
            }
        )
    world.run()

    uids = {}
    for name in parents:
        child = world.get("ConfigMap", f"{name}-config")
        world.store.update({**child, "data": {**child["data"], "side-effect": "x"}})
        uids[name] = child["metadata"]["uid"]
    world.run(5)
    for name in parents:
        child = world.get("ConfigMap", f"{name}-config")
        assert child["data"] == {"value": "1", "side-effect": "x"}, name
        assert child["metadata"]["uid"] == uids[name], name

    for name, kind in parents.items():
        parent = world.get(kind, name)
        world.store.update({**parent, "spec": {"value": "2"}})
    world.run(5)
    in_place = world.get("ConfigMap", "inplace-config")
    assert in_place["data"] == {"value": "2", "side-effect": "x"}
    assert in_place["metadata"]["uid"] == uids["inplace"]
    recreated = world.get("ConfigMap", "recreate-config")
    assert recreated["data"] == {"value": "2"}
    assert recreated["metadata"]["uid"] != uids["recreate"]
    assert world.get("ConfigMap", "ondelete-config")["data"]["value"] == "1"

    calls = len(world.hooks.requests)
    world.run(60)
    assert len(world.hooks.requests) == calls  # settled: no loop

    world.store.delete("ConfigMap", "default", "ondelete-config")
    world.run()
    assert world.get("ConfigMap", "ondelete-config")["data"] == {"value": "2"}
    world.transport.close()


# ------------------------------------------------------------------------------ 9. status


def test_item9_composite_status_is_replaced_has_observed_generation_and_is_written_on_change(
    world: World,
) -> None:
    statuses: list[Any] = [{"a": 1}, {"b": 2}, None]
    world.hooks.on("/sync", lambda request: answer(status=statuses[0]))
    world.start(composite())
    world.create(widget())
    world.run()
    assert world.get("Widget", "w1")["status"] == {"a": 1, "observedGeneration": 1}

    statuses.pop(0)
    world.touch("Widget", "w1")
    world.run()
    assert world.get("Widget", "w1")["status"] == {"b": 2, "observedGeneration": 1}

    world.touch("Widget", "w1")
    touched = world.get("Widget", "w1")["metadata"]["resourceVersion"]
    world.run()
    assert world.get("Widget", "w1")["metadata"]["resourceVersion"] == touched  # unchanged

    statuses.pop(0)
    world.touch("Widget", "w1")
    world.run()
    assert world.get("Widget", "w1")["status"] == {"observedGeneration": 1}


def test_item9_decorator_keeps_status_on_null_and_deletes_labels_set_to_null(
    world: World,
) -> None:
    replies: list[dict[str, Any]] = [
        {
            "labels": {"decorated": "yes", "drop-me": None},
            "annotations": {"note": "hi"},
            "status": {"seen": True},
        },
        {"labels": {"decorated": None}, "status": None},
    ]
    world.hooks.on("/decorate", lambda request: replies[0])
    # A kind with a status (a ConfigMap has none: the API server would drop it).
    world.start(decorator(resources=[{"apiVersion": WIDGETS, "resource": "widgets"}]))
    world.create(widget("target", labels={"drop-me": "x", "keep": "y"}))
    world.run()
    decorated = world.get("Widget", "target")
    assert decorated["metadata"]["labels"] == {"decorated": "yes", "keep": "y"}
    assert decorated["metadata"]["annotations"] == {"note": "hi"}
    assert decorated["status"] == {"seen": True}  # no observedGeneration

    replies.pop(0)
    world.touch("Widget", "target")
    world.run()
    decorated = world.get("Widget", "target")
    assert decorated["metadata"]["labels"] == {"keep": "y"}
    assert decorated["status"] == {"seen": True}


# ---------------------------------------------------------------------------- 10. finalize


def test_item10_the_finalizer_is_added_only_with_a_finalize_hook(world: World) -> None:
    world.hooks.on("/sync", lambda request: answer())
    world.hooks.on("/finalize", lambda request: answer(finalized=False))
    world.start(composite(finalize=True), composite("plain", parent="clusterwidgets"))
    world.create(widget())
    world.create(cluster_widget())
    world.run()

    assert world.get("Widget", "w1")["metadata"]["finalizers"] == [FINALIZER]
    assert not world.get("ClusterWidget", "c1", "")["metadata"].get("finalizers")


def test_item10_no_finalizer_is_added_to_a_parent_being_deleted(world: World) -> None:
    world.hooks.on("/finalize", lambda request: answer(finalized=False))
    world.create(widget(finalizers=["example.com/hold"]))
    world.store.delete("Widget", "default", "w1")
    world.start(composite(finalize=True))
    world.run()

    assert world.get("Widget", "w1")["metadata"]["finalizers"] == ["example.com/hold"]
    assert world.hooks.calls("/finalize")[0]["finalizing"] is True


def test_item10_finalize_applies_children_until_finalized_and_not_in_the_final_answer(
    world: World,
) -> None:
    def finalize(request: dict[str, Any]) -> dict[str, Any]:
        cleanup = config_map("cleanup", None)
        if "default/cleanup" in request["children"]["ConfigMap.v1"]:
            return answer(cleanup, config_map("too-late", None), finalized=True)
        return answer(cleanup, finalized=False)

    world.hooks.on("/sync", lambda request: answer())
    world.hooks.on("/finalize", finalize)
    world.start(composite(finalize=True))
    world.create(widget())
    world.run()
    world.store.delete("Widget", "default", "w1")
    world.run()

    assert len(world.hooks.calls("/finalize")) == 2
    assert not world.exists("Widget", "w1")
    assert not world.exists("ConfigMap", "too-late")  # the finalizer went before applying
    assert not world.exists("ConfigMap", "cleanup")  # collected with its owner


def test_item10_finalize_runs_when_the_parent_stops_matching_the_label_selector(
    world: World,
) -> None:
    world.hooks.on("/sync", lambda request: answer())
    world.hooks.on("/finalize", lambda request: answer(finalized=True))
    world.start(composite(finalize=True, parent_selector={"matchLabels": {"managed": "yes"}}))
    world.create(widget(labels={"managed": "yes"}))
    world.create(widget("unmanaged"))
    world.run()
    assert world.get("Widget", "w1")["metadata"]["finalizers"] == [FINALIZER]
    assert {r["parent"]["metadata"]["name"] for r in world.hooks.calls("/sync")} == {"w1"}

    world.store.patch_metadata("Widget", "default", "w1", labels={"managed": None})
    world.run()
    request = world.hooks.calls("/finalize")[0]
    assert request["finalizing"] is True
    assert "deletionTimestamp" not in request["parent"]["metadata"]
    assert "finalizers" not in world.get("Widget", "w1")["metadata"]  # none left: stored as none


def test_item10_finalized_false_is_not_retried_automatically(world: World) -> None:
    world.hooks.on("/sync", lambda request: answer())
    world.hooks.on("/finalize", lambda request: answer(finalized=False))
    world.start(composite(finalize=True, ignore_status_changes=True))
    world.create(widget())
    world.run()
    world.store.delete("Widget", "default", "w1")
    world.run(60)
    # The deletion bumps the generation, so the first answer's status (observedGeneration)
    # changes once more: that write is an update of a parent being deleted, which
    # ignoreStatusChanges does not ignore, and brings one more call. Then nothing.
    calls = len(world.hooks.calls("/finalize"))
    assert 1 <= calls <= 2
    world.run(300)
    assert len(world.hooks.calls("/finalize")) == calls
    assert world.exists("Widget", "w1")


def test_item10_a_decorator_applies_attachments_in_the_finalizing_pass(world: World) -> None:
    world.hooks.on("/decorate", lambda request: {})
    world.hooks.on(
        "/undecorate",
        lambda request: {"attachments": [config_map("farewell", None)], "finalized": True},
    )
    world.start(
        decorator(
            resources=[{"apiVersion": WIDGETS, "resource": "widgets"}],
            attachments=(("v1", "configmaps", "OnDelete"),),
            finalize=True,
        )
    )
    world.create(widget(finalizers=["example.com/hold"]))
    world.run()
    finalizers = world.get("Widget", "w1")["metadata"]["finalizers"]
    assert "metacontroller.io/decoratorcontroller-decorator" in finalizers

    world.store.delete("Widget", "default", "w1")
    world.run()
    assert world.get("Widget", "w1")["metadata"]["finalizers"] == ["example.com/hold"]
    assert world.exists("ConfigMap", "farewell")


# --------------------------------------------------------------------------- 11. customize


def test_item11_customize_is_called_once_per_generation_and_again_after_20_minutes(
    world: World,
) -> None:
    world.hooks.on("/customize", related_rules())
    world.hooks.on("/sync", lambda request: answer(resync=60))
    world.start(composite(customize=True))
    world.create(widget())
    world.run(300)
    assert len(world.hooks.calls("/customize")) == 1
    assert len(world.hooks.calls("/sync")) > 5
    assert set(world.hooks.calls("/customize")[0]) == {"controller", "parent"}

    parent = world.get("Widget", "w1")
    world.store.update({**parent, "spec": {"value": "2"}})
    world.run(1)
    assert len(world.hooks.calls("/customize")) == 2

    world.run(20 * 60 + 60)
    assert len(world.hooks.calls("/customize")) == 3


@pytest.mark.parametrize(
    ("rule", "selected"),
    [
        ({"names": ["blue"]}, {"default/blue"}),
        # v2: a rule without a namespace looks in every namespace
        ({"labelSelector": {}}, {"default/blue", "default/red", "other/green"}),
        ({"labelSelector": {"matchLabels": {"color": "red"}}}, {"default/red"}),
        ({}, {"default/blue", "default/red", "other/green"}),  # no selector: everything
        ({"namespace": "other", "labelSelector": {}}, {"other/green"}),
        (
            {"namespaceSelector": {"matchLabels": {"team": "x"}}, "labelSelector": {}},
            {"other/green"},
        ),
    ],
)
def test_item11_related_rules_select_by_name_label_and_namespace(
    world: World, rule: dict[str, Any], selected: set[str]
) -> None:
    world.hooks.on("/customize", related_rules(configmaps(**rule)))
    world.hooks.on("/sync", lambda request: answer())
    world.create(obj("Namespace", "other", None, labels={"team": "x"}))
    for name, where in (("blue", "default"), ("red", "default"), ("green", "other")):
        world.create(config_map(name, where, labels={"color": name}))
    world.start(composite(customize=True))
    world.create(widget())
    world.run()

    assert set(world.hooks.calls("/sync")[0]["related"]["ConfigMap.v1"]) == selected


@pytest.mark.parametrize(
    "rule",
    [
        pytest.param({"names": ["a"], "labelSelector": {}}, id="names with a selector"),
        pytest.param({"namespace": "a", "namespaceSelector": {}}, id="namespace and selector"),
        pytest.param({"namespace": "other", "labelSelector": {}}, id="v1: another namespace"),
        pytest.param({"namespaceSelector": {}, "labelSelector": {}}, id="v1: namespaceSelector"),
    ],
)
def test_item11_invalid_related_rules_fail_the_sync(world: World, rule: dict[str, Any]) -> None:
    world.hooks.on("/customize", related_rules(configmaps(**rule)))
    world.hooks.on("/sync", lambda request: answer())
    world.start(composite(customize=True, version="v1"))
    world.create(widget())
    world.run()

    assert world.hooks.calls("/sync") == []
    assert world.emulator.errors["invalid"] >= 1


# ------------------------------------------------------------------------ decorator specifics


def test_decorator_selects_by_label_and_annotation_selectors(world: World) -> None:
    world.hooks.on("/decorate", lambda request: {"labels": {"decorated": "yes"}})
    rule = {
        "apiVersion": "v1",
        "resource": "configmaps",
        "labelSelector": {"matchLabels": {"app": "runner"}},
        "annotationSelector": {"matchAnnotations": {"decorate": "yes"}},
    }
    world.start(decorator(resources=[rule]))
    world.create(config_map("both", labels={"app": "runner"}, annotations={"decorate": "yes"}))
    world.create(config_map("label-only", labels={"app": "runner"}))
    world.create(config_map("annotation-only", annotations={"decorate": "yes"}))
    world.run()

    decorated = {r["object"]["metadata"]["name"] for r in world.hooks.calls("/decorate")}
    assert decorated == {"both"}
    assert world.get("ConfigMap", "both")["metadata"]["labels"]["decorated"] == "yes"


def test_decorator_attachments_are_controlled_children_carrying_its_annotation(
    world: World,
) -> None:
    world.hooks.on("/decorate", lambda request: {"attachments": [config_map("attached", None)]})
    world.start(
        decorator(
            resources=[{"apiVersion": WIDGETS, "resource": "widgets"}],
            attachments=(("v1", "configmaps", "InPlace"),),
        )
    )
    target = world.create(widget())
    world.create(config_map("owned-unmarked", owner=target))
    world.run()

    attached = world.get("ConfigMap", "attached")["metadata"]
    assert attached["annotations"]["metacontroller.k8s.io/decorator-controller"] == "decorator"
    assert attached["ownerReferences"][0]["uid"] == target["metadata"]["uid"]
    request = world.hooks.calls("/decorate")[-1]
    assert set(request) == {"controller", "object", "attachments", "related", "finalizing"}
    assert set(request["attachments"]["ConfigMap.v1"]) == {"default/attached"}
    assert world.exists("ConfigMap", "owned-unmarked")  # not an attachment: left alone


# ------------------------------------------------------------------- manifests and transport


def test_webhook_urls_come_from_url_or_from_service_and_path() -> None:
    assert webhook_url({"url": "http://a.b/sync"}) == "http://a.b/sync"
    service: dict[str, Any] = {"name": "hooks", "namespace": "ns"}
    assert webhook_url({"service": service, "path": "/sync"}) == "http://hooks.ns:80/sync"
    service.update(port=8443, protocol="https")
    assert webhook_url({"service": service, "path": "/x"}) == "https://hooks.ns:8443/x"


def test_controllers_are_read_from_the_shipped_manifests(world: World) -> None:
    world.store.create(hook_token_secret(HOOK_TOKEN))
    emulator = MetacontrollerEmulator(world.store, world.loop, world.transport)
    emulator.load_directory(ROOT / "metacontroller")
    assert [controller.name for controller in emulator.controllers] == [
        "arc-hooks-horizontalrunnerautoscaler",
        "arc-hooks-runner",
        "arc-hooks-runnerdeployment",
        "arc-hooks-runner-pod",
        "arc-hooks-runnerreplicaset",
        "arc-hooks-runnerset",
    ]
    manifest = yaml.safe_load((ROOT / "metacontroller" / "runner-controller.yaml").read_text())
    spec = read_controller(manifest, emulator.catalog)
    assert spec.hooks.sync is not None
    assert (spec.hooks.sync.version, spec.hooks.sync.strict) == ("v2", True)
    assert spec.hooks.sync.url == "http://arc-hooks.arc-hooks/sync/runner"
    # Every hook carries the token of the Secret the endpoint config names.
    for controller in emulator.controllers:
        hooks = controller.spec.hooks
        for hook in (hooks.sync, hooks.finalize, hooks.customize):
            assert hook is None or hook.authorization == f"Bearer {HOOK_TOKEN}"


def test_shipped_controllers_do_not_start_without_the_hook_token_secret(world: World) -> None:
    emulator = MetacontrollerEmulator(world.store, world.loop, world.transport)
    emulator.load_directory(ROOT / "metacontroller")
    assert emulator.controllers == []
    assert len(emulator.warnings) == 6
    assert all(
        "can't get authorization secret arc-hooks/arc-hooks-hook-token" in warning
        for warning in emulator.warnings
    )


def test_asgi_transport_spreads_calls_over_replicas_deterministically() -> None:
    counts = []
    for _ in range(2):
        world = new_world(replicas=3)
        world.hooks.on("/sync", lambda request: answer(resync=1))
        world.start(composite())
        world.create(widget())
        world.run(30)
        counts.append(list(world.transport.calls_by_replica))
        world.transport.close()
    assert counts[0] == counts[1]
    assert all(count > 0 for count in counts[0])


def test_loopback_transport_calls_real_servers() -> None:
    clock = ManualClock()
    hooks = ScriptedHooks(clock)
    hooks.on("/sync", config_per_value)
    loop = EventLoop(clock)
    store = ObjectStore(clock)
    with serve_loopback(hooks.app) as url:
        transport = LoopbackTransport([url])
        emulator = MetacontrollerEmulator(store, loop, transport)
        emulator.load_directory(FIXTURES / "crds.yaml")
        emulator.load_manifests([composite()])
        emulator.start()
        store.create(widget())
        loop.run_for(1)
        transport.close()
    assert store.get("ConfigMap", "default", "w1-config") is not None


# ---------------------------------------------------------- the shipped Runner controller


RUNNER_FINALIZER = "metacontroller.io/compositecontroller-arc-hooks-runner"


def test_the_runner_controller_drives_the_real_runner_hooks(
    clock: ManualClock, github: InMemoryGitHub, store: ObjectStore
) -> None:
    loop = EventLoop(clock, seed=11)
    settings = hook_settings()
    replicas = [create_app(settings, github=github, clock=clock) for _ in range(2)]
    transport = AsgiTransport(replicas, random.Random(5), clock=clock)
    store.create(hook_token_secret(HOOK_TOKEN))
    emulator = MetacontrollerEmulator(store, loop, transport)
    emulator.load_directory(ROOT / "metacontroller")
    emulator.start()

    store.create(
        {
            "apiVersion": "actions.summerwind.dev/v1alpha1",
            "kind": "Runner",
            "metadata": {"name": "runner-1", "namespace": "ci"},
            "spec": {"organization": "acme", "labels": ["linux"]},
        }
    )
    loop.run_for(5)

    runner = store.get("Runner", "ci", "runner-1")
    assert runner is not None
    assert runner["metadata"]["finalizers"] == [RUNNER_FINALIZER]
    assert runner["status"]["observedGeneration"] == 1
    pod_ = store.get("Pod", "ci", "runner-1")
    secret = store.get("Secret", "ci", "runner-1-registration")
    assert pod_ is not None and secret is not None
    for child in (pod_, secret):
        assert child["metadata"]["ownerReferences"][0]["uid"] == runner["metadata"]["uid"]
        assert child["metadata"]["labels"]["controller-uid"] == runner["metadata"]["uid"]
    assert not emulator.errors, emulator.stats.recent_errors

    github.register(Scope(organization="acme"), "runner-1")
    store.delete("Runner", "ci", "runner-1")
    loop.run_for(60)
    stopping = store.get("Pod", "ci", "runner-1")
    assert stopping is not None and stopping["metadata"].get("deletionTimestamp")
    assert store.get("Runner", "ci", "runner-1") is not None  # held by the finalizer

    store.pod_terminated("ci", "runner-1")
    loop.run_for(60)
    assert store.get("Pod", "ci", "runner-1") is None
    assert store.get("Runner", "ci", "runner-1") is None
    assert store.get("Secret", "ci", "runner-1-registration") is None  # collected
    assert emulator.hook_calls["/finalize/runner"] >= 2
    assert not emulator.errors, emulator.stats.recent_errors
    transport.close()
