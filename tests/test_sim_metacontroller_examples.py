"""Metacontroller's own examples, their Python hooks unchanged, run through the emulator: what
each example's `test.sh` (and README) checks against a real cluster holds here too.

configmap-list-v2 is a namespaced parent whose v2 customize hook looks into another namespace,
or into every namespace; configmappropagation is a cluster-scoped parent with v1 hooks that
copies a related ConfigMap into namespaces it names."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from arc_sim.events import EventLoop
from arc_sim.metacontroller import MetacontrollerEmulator
from arc_sim.store import KubeObject, ObjectStore
from hooks.clock import ManualClock
from tests.metacontroller_examples import HandlerTransport, documents, load_hook

CONTROLLER_KINDS = ("CompositeController", "DecoratorController", "CustomResourceDefinition")


@dataclass
class Example:
    store: ObjectStore
    loop: EventLoop
    emulator: MetacontrollerEmulator
    transport: HandlerTransport

    def apply(self, objects: list[KubeObject]) -> None:
        """`kubectl apply -f`: every object, in the file's order."""
        for obj in objects:
            self.store.create(obj)

    def run(self, seconds: float = 5.0) -> None:
        self.loop.run_for(seconds)

    def get(self, kind: str, namespace: str, name: str) -> KubeObject | None:
        return self.store.get(kind, namespace, name)


def install(example: str, manifests: list[KubeObject]) -> Example:
    """`kubectl apply -k v1`: the CRD and the controller (its hook server is in process)."""
    clock = ManualClock()
    loop = EventLoop(clock, seed=1)
    store = ObjectStore(clock)
    transport = HandlerTransport(load_hook(example))
    emulator = MetacontrollerEmulator(store, loop, transport)
    emulator.load_manifests(m for m in manifests if m.get("kind") in CONTROLLER_KINDS)
    assert emulator.warnings == []
    emulator.start()
    return Example(store, loop, emulator, transport)


def with_hook_version(manifests: list[KubeObject], version: str) -> list[KubeObject]:
    for manifest in manifests:
        for hook in ((manifest.get("spec") or {}).get("hooks") or {}).values():
            hook["version"] = version
    return manifests


# ----------------------------------------------------------------------- configmap-list-v2

CONFIGMAP_LIST = "configmap-list-v2"


@pytest.fixture
def configmap_list() -> Iterator[Example]:
    manifests = documents(CONFIGMAP_LIST, "v1/crd.yaml", "manifest/controller.yaml")
    example = install(CONFIGMAP_LIST, manifests)
    example.apply(documents(CONFIGMAP_LIST, "example.yaml"))
    example.run()
    yield example


def listed(example: Example, parent: str) -> str | None:
    child = example.get("ConfigMap", "target-ns", f"{parent}-list")
    return None if child is None else str(child["data"]["configmaps"])


def test_configmap_list_v2_lists_the_configmaps_of_another_namespace(
    configmap_list: Example,
) -> None:
    # test.sh: the child of my-config-list holds exactly the two matching ConfigMaps of
    # source-ns, and the parent's status counts them.
    assert listed(configmap_list, "my-config-list") == "source-ns/cm-1\nsource-ns/cm-2"
    parent = configmap_list.get("ConfigMapList", "target-ns", "my-config-list")
    assert parent is not None and parent["status"]["count"] == 2
    assert not configmap_list.emulator.errors, configmap_list.emulator.stats.recent_errors


def test_configmap_list_v2_without_a_namespace_lists_every_namespace(
    configmap_list: Example,
) -> None:
    # README: all-configs-list omits sourceNamespace and sees both source namespaces.
    everywhere = "other-source-ns/cm-3\nsource-ns/cm-1\nsource-ns/cm-2"
    assert listed(configmap_list, "all-configs-list") == everywhere
    parent = configmap_list.get("ConfigMapList", "target-ns", "all-configs-list")
    assert parent is not None and parent["status"]["count"] == 3

    # A matching ConfigMap made later, anywhere, reaches the list that watches every
    # namespace (its change enqueues the parent) and not the one that watches source-ns.
    configmap_list.apply(
        [
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "late-ns"}},
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": "cm-4", "namespace": "late-ns", "labels": {"app": "my-app"}},
                "data": {"key": "value5"},
            },
        ]
    )
    configmap_list.run()
    assert listed(configmap_list, "all-configs-list") == "late-ns/cm-4\n" + everywhere
    assert listed(configmap_list, "my-config-list") == "source-ns/cm-1\nsource-ns/cm-2"


def test_configmap_list_with_v1_hooks_stays_in_the_parents_namespace() -> None:
    """README: "In Hook Version v1, a namespaced parent using a labelSelector was always
    silently restricted to its own namespace"; naming another namespace is an error."""
    manifests = documents(CONFIGMAP_LIST, "v1/crd.yaml", "manifest/controller.yaml")
    example = install(CONFIGMAP_LIST, with_hook_version(manifests, "v1"))
    example.apply(documents(CONFIGMAP_LIST, "example.yaml"))
    example.run()

    assert listed(example, "all-configs-list") == ""
    assert listed(example, "my-config-list") is None
    messages = [error.message for error in example.emulator.stats.recent_errors]
    assert messages and all("differs from parent object namespace" in m for m in messages)


# -------------------------------------------------------------------- configmappropagation

PROPAGATION = "configmappropagation"


def test_configmappropagation_copies_the_configmap_into_the_target_namespaces() -> None:
    manifests = documents(PROPAGATION, "v1/crdv1.yaml", "manifest/configmap-propagation.yaml")
    example = install(PROPAGATION, manifests)
    example.apply(documents(PROPAGATION, "example-configmap.yaml"))
    example.run()

    # test.sh: the ConfigMap reaches one, two and three; the parent counts three copies.
    source = example.get("ConfigMap", "original", "settings")
    assert source is not None
    for namespace in ("one", "two", "three"):
        copy = example.get("ConfigMap", namespace, "settings")
        assert copy is not None, namespace
        assert copy["data"] == source["data"]
    parent = example.get("ConfigMapPropagation", "", "settings-propagation")
    assert parent is not None
    assert parent["status"]["actual_copies"] == 3
    assert parent["status"]["expected_copies"] == 3
    # test.sh: the parent labelled version: v2 is not the controller's (its labelSelector
    # asks for v1), so nothing reaches four (nor five).
    assert example.get("ConfigMap", "four", "settings") is None
    assert example.get("ConfigMap", "five", "settings") is None
    unmanaged = example.get("ConfigMapPropagation", "", "settings-propagation-unmanaged")
    assert unmanaged is not None and "status" not in unmanaged
    assert not example.emulator.errors, example.emulator.stats.recent_errors


def test_configmappropagation_follows_a_change_of_the_source() -> None:
    manifests = documents(PROPAGATION, "v1/crdv1.yaml", "manifest/configmap-propagation.yaml")
    example = install(PROPAGATION, manifests)
    example.apply(documents(PROPAGATION, "example-configmap.yaml"))
    example.run()

    # The source is a related object: changing it enqueues the parent, and InPlace updates
    # carry the new data to every copy.
    source = example.get("ConfigMap", "original", "settings")
    assert source is not None
    data: dict[str, Any] = {"some": "new value"}
    example.store.update({**source, "data": data})
    example.run()
    for namespace in ("one", "two", "three"):
        copy = example.get("ConfigMap", namespace, "settings")
        assert copy is not None and copy["data"] == data, namespace

    # Deleting it makes the hook answer no children ("clean-up copies").
    example.store.delete("ConfigMap", "original", "settings")
    example.run()
    for namespace in ("one", "two", "three"):
        assert example.get("ConfigMap", namespace, "settings") is None, namespace
    assert not example.emulator.errors, example.emulator.stats.recent_errors
