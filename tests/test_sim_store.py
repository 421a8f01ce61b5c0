"""The simulated API server: identity, versions, generation, status, deletion and GC."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from arc_sim.store import AlreadyExists, Conflict, KubeObject, ObjectStore, selector_matches
from hooks.clock import ManualClock


def runner(name: str = "r1", **spec: object) -> KubeObject:
    return {
        "apiVersion": "actions.summerwind.dev/v1alpha1",
        "kind": "Runner",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"organization": "acme", **spec},
    }


@pytest.fixture
def store() -> ObjectStore:
    return ObjectStore(ManualClock(), status_subresource=["Runner"])


def test_create_assigns_identity_and_refuses_duplicates(store: ObjectStore) -> None:
    created = store.create(runner())
    assert created["metadata"]["uid"] and created["metadata"]["generation"] == 1
    with pytest.raises(AlreadyExists):
        store.create(runner())


def test_generation_moves_on_spec_changes_only(store: ObjectStore) -> None:
    created = store.create(runner())
    relabelled = dict(created, metadata={**created["metadata"], "labels": {"a": "b"}})
    after_labels = store.update(relabelled)
    after_spec = store.update({**after_labels, "spec": {"organization": "other"}})
    after_status = store.update_status({**after_spec, "status": {"phase": "Running"}})

    assert after_labels["metadata"]["generation"] == 1
    assert after_spec["metadata"]["generation"] == 2
    assert after_status["metadata"]["generation"] == 2
    assert int(after_status["metadata"]["resourceVersion"]) > int(
        after_spec["metadata"]["resourceVersion"]
    )


def test_status_subresource_ignores_status_in_update(store: ObjectStore) -> None:
    created = store.create(runner())
    store.update_status({**created, "status": {"phase": "Running"}})
    current = store.get("Runner", "default", "r1")
    assert current is not None
    updated = store.update({**current, "status": {"phase": "Changed"}})
    assert updated["status"] == {"phase": "Running"}


def test_a_built_in_kind_is_stored_without_its_empty_maps_and_lists(store: ObjectStore) -> None:
    """Kubernetes' Go types mark these `omitempty`: an empty one written is read back absent.
    A custom resource's own fields are stored as written; its ObjectMeta is one like any."""
    secret = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "s", "namespace": "default", "labels": {}, "finalizers": []},
        "type": "Opaque",
        "data": {},
    }
    created = store.create(secret)
    assert "data" not in created
    assert "labels" not in created["metadata"] and "finalizers" not in created["metadata"]
    again = store.update(
        {**created, "data": {}, "metadata": {**created["metadata"], "annotations": {}}}
    )
    assert again["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"]
    assert "annotations" not in again["metadata"]

    custom = store.create(runner("r2", labels=[]))
    assert custom["spec"]["labels"] == []
    relabelled = store.patch_metadata("Runner", "default", "r2", labels={"a": None}, finalizers=[])
    assert "labels" not in relabelled["metadata"] and "finalizers" not in relabelled["metadata"]


def test_stale_resource_version_conflicts(store: ObjectStore) -> None:
    created = store.create(runner())
    store.update({**created, "spec": {"organization": "b"}})
    with pytest.raises(Conflict):
        store.update({**created, "spec": {"organization": "c"}})


def test_finalizers_hold_deletion_and_gc_collects_dependents(store: ObjectStore) -> None:
    owner = store.create({**runner(), "metadata": {**runner()["metadata"], "finalizers": ["x"]}})
    store.create(
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {
                "name": "s",
                "namespace": "default",
                "ownerReferences": [
                    {
                        "apiVersion": "actions.summerwind.dev/v1alpha1",
                        "kind": "Runner",
                        "name": "r1",
                        "uid": owner["metadata"]["uid"],
                    }
                ],
            },
        }
    )
    store.delete("Runner", "default", "r1")
    terminating = store.get("Runner", "default", "r1")
    assert terminating is not None and terminating["metadata"]["deletionTimestamp"]
    assert store.get("Secret", "default", "s") is not None

    store.remove_finalizer("Runner", "default", "r1", "x")

    assert store.get("Runner", "default", "r1") is None
    assert store.get("Secret", "default", "s") is None


def test_pods_terminate_gracefully(store: ObjectStore) -> None:
    events: list[str] = []
    store.watch(lambda event, obj: events.append(f"{event} {obj['kind']}"))
    store.create(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "p", "namespace": "d"},
            "spec": {"containers": [{"name": "runner", "image": "runner:1"}]},
        }
    )
    store.delete("Pod", "d", "p")
    pod = store.get("Pod", "d", "p")
    assert pod is not None and pod["metadata"]["deletionGracePeriodSeconds"] == 30

    store.pod_terminated("d", "p")

    assert store.get("Pod", "d", "p") is None
    assert events == ["ADDED Pod", "MODIFIED Pod", "DELETED Pod"]


def test_label_selectors() -> None:
    labels = {"app": "runner", "tier": "ci"}
    assert selector_matches({}, labels)
    assert selector_matches({"matchLabels": {"app": "runner"}}, labels)
    assert not selector_matches({"matchLabels": {"app": "web"}}, labels)
    expression = {"key": "tier", "operator": "In", "values": ["ci", "cd"]}
    assert selector_matches({"matchExpressions": [expression]}, labels)
    assert not selector_matches(
        {"matchExpressions": [{"key": "tier", "operator": "DoesNotExist"}]}, labels
    )


_label_maps = st.dictionaries(st.sampled_from(["app", "tier", "pool"]), st.sampled_from(["a", "b"]))


@given(match_labels=_label_maps, labels=_label_maps)
def test_match_labels_select_a_child_when_every_pair_is_among_its_labels(
    match_labels: dict[str, str], labels: dict[str, str]
) -> None:
    wanted = all(labels.get(label) == value for label, value in match_labels.items())
    assert selector_matches({"matchLabels": match_labels}, labels) is wanted
