"""The emulator against Metacontroller's source (v4.17), where it used to differ: which related
objects a customize rule selects (`pkg/controller/common/customize/manager.go`), the order in
which child types are applied (`GetAllGVKs`), a Recreate that finds its child gone, the
controller reference a created child gets (`claimOwnership`), and a last-applied annotation
the hook supplies itself (`ApplyUpdate`, `nullifyLastAppliedAnnotation`)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from hashlib import sha256
from typing import Any, cast

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from arc_sim.metacontroller import wire
from arc_sim.metacontroller.cache import ObjectCache
from arc_sim.metacontroller.children import (
    ChildMap,
    make_controller_ref,
    manage_children,
    with_controller_ref,
)
from arc_sim.metacontroller.customize import RelatedObjects
from arc_sim.metacontroller.failures import SyncFailure
from arc_sim.metacontroller.merge import (
    LAST_APPLIED_ANNOTATION,
    go_json,
    updated_child,
    with_last_applied,
    without_last_applied,
)
from arc_sim.metacontroller.resources import ResourceCatalog
from arc_sim.metacontroller.spec import Hook, UpdateStrategies
from arc_sim.metacontroller.webhook import HookCaller
from arc_sim.metacontroller.wire import request_maps
from arc_sim.store import KubeObject, ObjectStore
from hooks.clock import ManualClock
from tests.test_sim_metacontroller import (
    World,
    answer,
    cluster_widget,
    composite,
    config_map,
    configmaps,
    new_world,
    obj,
    related_rules,
    widget,
)

ALL_CONFIGMAPS = {"default/blue", "default/red", "other/green"}


@pytest.fixture
def world() -> Iterator[World]:
    built = new_world()
    yield built
    built.transport.close()


@pytest.fixture
def instant_world() -> Iterator[World]:
    built = new_world(sync_seconds=0.0)
    yield built
    built.transport.close()


def colored_configmaps(world: World) -> None:
    """Namespaces default and other (team=x); ConfigMaps blue and red in default, green in
    other, each labelled with its color."""
    world.create(obj("Namespace", "default", None))
    world.create(obj("Namespace", "other", None, labels={"team": "x"}))
    for name, where in (("blue", "default"), ("red", "default"), ("green", "other")):
        world.create(config_map(name, where, labels={"color": name}))


def last_related(world: World, group: str = "ConfigMap.v1") -> set[str]:
    return set(world.hooks.calls("/sync")[-1]["related"][group])


# ------------------------------------------------------------ 1. what related rules select


@pytest.mark.parametrize(
    ("version", "parent", "rule", "selected"),
    [
        pytest.param("v2", "widgets", {}, ALL_CONFIGMAPS, id="v2: no selector: everything"),
        pytest.param(
            "v2",
            "widgets",
            {"labelSelector": {"matchLabels": {"color": "green"}}},
            {"other/green"},
            id="v2: a selector without namespace: every namespace",
        ),
        pytest.param(
            "v2", "widgets", {"names": ["green"]}, {"other/green"}, id="v2: names: every namespace"
        ),
        pytest.param(
            "v2",
            "widgets",
            {"namespace": "other"},
            {"other/green"},
            id="v2: a namespace: all in it",
        ),
        pytest.param(
            "v2",
            "widgets",
            {"namespaceSelector": {"matchLabels": {"team": "x"}}},
            {"other/green"},
            id="v2: namespaceSelector without labelSelector: all in those namespaces",
        ),
        pytest.param("v1", "widgets", {}, {"blue", "red"}, id="v1: no selector: own namespace"),
        pytest.param(
            "v1", "widgets", {"names": ["green", "red"]}, {"red"}, id="v1: names: own namespace"
        ),
        pytest.param(
            "v1", "clusterwidgets", {}, ALL_CONFIGMAPS, id="v1 cluster-scoped parent: everything"
        ),
        pytest.param(
            "v1",
            "clusterwidgets",
            {"namespace": "other"},
            {"other/green"},
            id="v1 cluster-scoped parent: a namespace",
        ),
    ],
)
def test_related_rules_select_as_metacontroller_does(
    world: World, version: str, parent: str, rule: dict[str, Any], selected: set[str]
) -> None:
    world.hooks.on("/customize", related_rules(configmaps(**rule)))
    world.hooks.on("/sync", lambda request: answer())
    colored_configmaps(world)
    world.start(composite(customize=True, version=version, parent=parent))
    world.create(widget() if parent == "widgets" else cluster_widget())
    world.run()

    assert last_related(world) == selected
    assert not world.emulator.errors, world.emulator.stats.recent_errors


@pytest.mark.parametrize(("version", "selected"), [("v1", set()), ("v2", {"default", "other"})])
def test_a_namespace_in_a_rule_for_a_cluster_scoped_type_is_ignored(
    world: World, version: str, selected: set[str]
) -> None:
    """Only a namespaced related type makes a v1 hook's foreign namespace an error; a v1 request
    of a namespaced parent then leaves out every cluster-scoped object."""
    rule = {"apiVersion": "v1", "resource": "namespaces", "namespace": "elsewhere"}
    world.hooks.on("/customize", related_rules({**rule, "labelSelector": {}}))
    world.hooks.on("/sync", lambda request: answer())
    colored_configmaps(world)
    world.start(composite(customize=True, version=version))
    world.create(widget())
    world.run()

    assert last_related(world, "Namespace.v1") == selected
    assert not world.emulator.errors, world.emulator.stats.recent_errors


def test_an_answer_with_a_bad_rule_is_cached_and_fails_every_sync(instant_world: World) -> None:
    world = instant_world
    world.hooks.on("/customize", related_rules(configmaps(namespace="other", labelSelector={})))
    world.hooks.on("/sync", lambda request: answer())
    world.start(composite(customize=True, version="v1"))
    world.create(widget())
    world.run(2)

    assert world.emulator.errors["invalid"] >= 5  # retried with backoff...
    assert len(world.hooks.calls("/customize")) == 1  # ...on the cached answer
    assert world.hooks.calls("/sync") == []


def test_a_v2_rule_without_namespace_is_watched_in_every_namespace(world: World) -> None:
    world.hooks.on("/customize", related_rules(configmaps(labelSelector={})))
    world.hooks.on("/sync", lambda request: answer())
    colored_configmaps(world)
    world.create(obj("Namespace", "third", None))
    world.start(composite(customize=True))
    world.create(widget())
    world.run()
    syncs = len(world.hooks.calls("/sync"))

    world.create(config_map("lime", "third", labels={"color": "green"}))
    world.run()
    assert len(world.hooks.calls("/sync")) == syncs + 1
    assert last_related(world) == {*ALL_CONFIGMAPS, "third/lime"}


def test_a_v1_rule_of_a_namespaced_parent_is_watched_in_its_namespace_only(world: World) -> None:
    world.hooks.on("/customize", related_rules(configmaps()))
    world.hooks.on("/sync", lambda request: answer())
    colored_configmaps(world)
    world.start(composite(customize=True, version="v1"))
    world.create(widget())
    world.run()
    syncs = len(world.hooks.calls("/sync"))

    world.create(config_map("far", "other"))
    world.run()
    assert len(world.hooks.calls("/sync")) == syncs
    world.create(config_map("near", "default"))
    world.run()
    assert len(world.hooks.calls("/sync")) == syncs + 1
    assert last_related(world) == {"blue", "red", "near"}


class _Answers:
    """A customize hook answering one rule, without HTTP."""

    def __init__(self, rule: dict[str, Any]) -> None:
        self.body = json.dumps({"relatedResources": [rule]}).encode()

    def call(self, hook: Hook, body: bytes) -> bytes:
        return self.body


_LABELS = st.sampled_from([None, "red", "blue"])
_SELECTORS = st.sampled_from(
    [
        {},
        {"matchLabels": {"color": "red"}},
        {"matchExpressions": [{"key": "color", "operator": "NotIn", "values": ["blue"]}]},
        {"matchExpressions": [{"key": "color", "operator": "In"}]},  # invalid: no values
    ]
)
_RULES = st.fixed_dictionaries(
    {"resource": st.sampled_from(["configmaps", "namespaces"])},
    optional={
        "names": st.sampled_from([["x"], ["x", "a"], []]),
        "labelSelector": _SELECTORS,
        "namespace": st.sampled_from(["a", "b", ""]),
        "namespaceSelector": _SELECTORS,
    },
)


@settings(max_examples=300, deadline=None)
@given(
    rule=_RULES,
    version=st.sampled_from(["v1", "v2"]),
    parent_namespace=st.sampled_from(["", "a"]),
    namespace_labels=st.tuples(_LABELS, _LABELS, _LABELS),
    objects=st.lists(
        st.tuples(st.sampled_from(["a", "b"]), st.sampled_from(["x", "y", "a"]), _LABELS),
        unique_by=lambda each: each[:2],
        max_size=6,
    ),
)
def test_a_change_to_any_object_a_hook_is_shown_enqueues_its_parent(
    rule: dict[str, Any],
    version: str,
    parent_namespace: str,
    namespace_labels: tuple[str | None, ...],
    objects: list[tuple[str, str, str | None]],
) -> None:
    """What a sync request shows of a rule (`GetRelatedObjects`, then v1's filter) is always
    among what the rule watches (`matchesRelatedRule`); for a v2 hook or a cluster-scoped
    parent, nothing else is."""
    cache = ObjectCache()
    uids = iter(range(10_000))

    def add(kind: str, namespace: str, name: str, color: str | None) -> None:
        metadata: dict[str, Any] = {"name": name, "uid": f"u{next(uids)}"}
        if namespace:
            metadata["namespace"] = namespace
        if color:
            metadata["labels"] = {"color": color}
        cache.observe("ADDED", {"apiVersion": "v1", "kind": kind, "metadata": metadata})

    for name, color in zip(("a", "b", "c"), namespace_labels, strict=True):
        add("Namespace", "", name, color)
    for namespace, name, color in objects:
        add("ConfigMap", namespace, name, color)
    hook = Hook(url="http://hooks/customize", timeout=10.0, version=version, strict=True)  # type: ignore[arg-type]
    answers = cast(HookCaller, _Answers({"apiVersion": "v1", **rule}))
    related: RelatedObjects[str] = RelatedObjects(
        hook, b"{}", answers, ResourceCatalog(), cache, ManualClock()
    )
    parent: KubeObject = {
        "apiVersion": "example.com/v1",
        "kind": "Widget",
        "metadata": {"name": "p", "namespace": parent_namespace, "uid": "p", "generation": 1},
    }
    try:
        groups = related.select("p", parent)
    except SyncFailure:
        return  # a rule Metacontroller refuses: no sync, nothing shown
    kind = "ConfigMap" if rule["resource"] == "configmaps" else "Namespace"
    watched = {
        o["metadata"]["uid"] for o in cache.objects(kind) if related.parents_selecting([o]) == ["p"]
    }
    listed = {o["metadata"]["uid"] for _, found in groups for o in found}
    _, shown_map = request_maps({}, groups, parent_namespace=parent_namespace, v2=version == "v2")
    shown = {o["metadata"]["uid"] for members in shown_map.values() for o in members.values()}
    assert shown <= watched
    if version == "v2" or not parent_namespace:
        assert listed == watched


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=3),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3)
    ),
    max_leaves=6,
)
_FIELD_VALUES = {
    "namespace": st.sampled_from(["a", ""]) | _JSON,
    "names": st.sampled_from([["x"], []]) | _JSON,
    "labelSelector": _SELECTORS | _JSON,
    "namespaceSelector": _SELECTORS | _JSON,
}


@settings(max_examples=200, deadline=None)
@given(
    rule=st.fixed_dictionaries(
        {"resource": st.sampled_from(["configmaps", "namespaces", "widgets"]) | _JSON},
        optional=_FIELD_VALUES,
    ),
    version=st.sampled_from(["v1", "v2"]),
)
def test_any_customize_answer_selects_or_fails_the_sync(rule: dict[str, Any], version: str) -> None:
    """The hook's answer is input: whatever it holds, a sync either sees related objects or
    fails (decoding or an invalid rule), never anything worse."""
    cache = ObjectCache()
    metadata = {"name": "x", "namespace": "a", "uid": "u", "labels": {"color": "red"}}
    cache.observe("ADDED", {"apiVersion": "v1", "kind": "ConfigMap", "metadata": metadata})
    hook = Hook(url="http://hooks/customize", timeout=10.0, version=version, strict=False)  # type: ignore[arg-type]
    answers = cast(HookCaller, _Answers({"apiVersion": "v1", **rule}))
    related: RelatedObjects[str] = RelatedObjects(
        hook, b"{}", answers, ResourceCatalog(), cache, ManualClock()
    )
    parent = {"metadata": {"name": "p", "namespace": "a", "uid": "p", "generation": 1}}
    try:
        groups = related.select("p", parent)
    except SyncFailure as failure:
        assert failure.kind in ("decode", "invalid")
        return
    assert all(isinstance(o, dict) for _, found in groups for o in found)


# ------------------------------------------------------------- 2. the order of child types

# The order Metacontroller applies them in: by group, then version, then kind.
ORDERED_TYPES = (
    ("v1", "configmaps", "ConfigMap"),
    ("v1", "secrets", "Secret"),
    ("v1", "serviceaccounts", "ServiceAccount"),
    ("coordination.k8s.io/v1", "leases", "Lease"),
    ("rbac.authorization.k8s.io/v1", "roles", "Role"),
)


def test_children_are_created_and_deleted_type_by_type_in_group_version_kind_order(
    world: World,
) -> None:
    wanted = [True]

    def sync(request: dict[str, Any]) -> dict[str, Any]:
        if not wanted[0]:
            return answer()
        children = [
            {"apiVersion": api, "kind": kind, "metadata": {"name": f"w-{kind.lower()}"}}
            for api, _, kind in reversed(ORDERED_TYPES)
        ]
        return answer(*children)

    world.hooks.on("/sync", sync)
    rules = tuple((api, resource, "InPlace") for api, resource, _ in ORDERED_TYPES)
    world.start(composite(children=rules))
    world.create(widget())
    world.run()
    kinds = [kind for _, _, kind in ORDERED_TYPES]
    assert [k for event, k, _ in world.events if event == "ADDED" and k in kinds] == kinds

    wanted[0] = False
    world.events.clear()
    world.touch("Widget", "w1")
    world.run()
    assert [k for event, k, _ in world.events if event == "DELETED" and k in kinds] == kinds


_CRD_TYPES = (
    ("example.com", "zetas", "Zeta", ("v1", "v1beta1", "v2")),
    ("a.example.com", "zetas", "Zeta", ("v1",)),
    ("example.com", "alphas", "Alpha", ("v1",)),
)
_TYPES = [
    ("v1", "ConfigMap"),
    ("v1", "Secret"),
    ("coordination.k8s.io/v1", "Lease"),
    *((f"{group}/{v}", kind) for group, _, kind, versions in _CRD_TYPES for v in versions),
]


def _catalog() -> ResourceCatalog:
    catalog = ResourceCatalog()
    for group, plural, kind, versions in _CRD_TYPES:
        spec = {
            "group": group,
            "names": {"kind": kind, "plural": plural},
            "versions": [{"name": v} for v in versions],
        }
        catalog.add_crd({"spec": spec})
    return catalog


def _group_version_kind(api_version_kind: tuple[str, str]) -> tuple[str, str, str]:
    api_version, kind = api_version_kind
    group, _, version = api_version.rpartition("/")
    return group, version, kind


@settings(max_examples=100, deadline=None)
@given(types=st.lists(st.sampled_from(_TYPES), min_size=1, unique=True).flatmap(st.permutations))
def test_any_mix_of_types_is_applied_sorted_by_group_version_kind(
    types: list[tuple[str, str]],
) -> None:
    store = ObjectStore(ManualClock())
    parent = store.create(widget())
    order: list[tuple[str, str, str]] = []
    store.watch(lambda event, o: order.append((event, o["apiVersion"], o["kind"])))
    desired: ChildMap = {}
    for index, (api, kind) in enumerate(types):  # in the hook's order
        child = {"apiVersion": api, "kind": kind, "metadata": {"name": f"c{index}"}}
        desired[f"{kind}.{api}"] = {
            ("default", f"c{index}"): {
                **child,
                "metadata": {"name": f"c{index}", "namespace": "default"},
            }
        }
    catalog, strategies = _catalog(), UpdateStrategies({})

    assert manage_children(store, catalog, strategies, parent, {}, desired) == []
    # GetAllGVKs: by group, then version, then kind (plain string comparisons).
    expected = sorted(types, key=_group_version_kind)
    assert [(api, kind) for event, api, kind in order if event == "ADDED"] == expected

    observed: ChildMap = {
        key: {k: store.get(c["kind"], *k) or c for k, c in members.items()}
        for key, members in desired.items()
    }
    order.clear()
    assert manage_children(store, catalog, strategies, parent, observed, {}) == []
    assert [(api, kind) for event, api, kind in order if event == "DELETED"] == expected


# --------------------------------------------------------------------------- 3. Recreate


def test_a_recreate_that_finds_its_child_gone_is_no_error_and_the_next_sync_creates_it() -> None:
    store = ObjectStore(ManualClock())
    parent = store.create(widget())
    catalog, strategies = ResourceCatalog(), UpdateStrategies({("", "ConfigMap"): "Recreate"})
    seen = store.create(config_map("c", data={"v": "1"}))
    store.delete("ConfigMap", "default", "c")  # gone since the cache saw it
    desired = {"ConfigMap.v1": {("default", "c"): config_map("c", data={"v": "2"})}}

    observed = {"ConfigMap.v1": {("default", "c"): seen}}
    assert manage_children(store, catalog, strategies, parent, observed, desired) == []
    assert store.get("ConfigMap", "default", "c") is None  # not created in the same pass

    assert manage_children(store, catalog, strategies, parent, {"ConfigMap.v1": {}}, desired) == []
    created = store.get("ConfigMap", "default", "c")
    assert created is not None and created["data"] == {"v": "2"}

    # A different object of that name (the uid precondition fails) is still an error.
    assert manage_children(store, catalog, strategies, parent, observed, desired) != []
    assert store.get("ConfigMap", "default", "c") == created


# -------------------------------------------------------------------- 4. owner references


def test_an_owner_reference_to_the_parent_supplied_by_the_hook_is_not_doubled(
    world: World,
) -> None:
    def sync(request: dict[str, Any]) -> dict[str, Any]:
        meta = request["parent"]["metadata"]
        ref = {"apiVersion": "example.com/v1", "kind": "Widget", "name": meta["name"]}
        ref.update(uid=meta["uid"], controller=True)
        child = config_map("c", None, data={"v": "1"})
        child["metadata"]["ownerReferences"] = [ref]
        return answer(child)

    world.hooks.on("/sync", sync)
    world.start(composite())
    parent = world.create(widget())
    world.run()

    # The hook's reference alone, as it wrote it (no blockOwnerDeletion added).
    assert world.get("ConfigMap", "c")["metadata"]["ownerReferences"] == [
        {
            "apiVersion": "example.com/v1",
            "kind": "Widget",
            "name": "w1",
            "uid": parent["metadata"]["uid"],
            "controller": True,
        }
    ]
    assert not world.emulator.errors


def test_other_owner_references_are_kept_as_owner_references_and_the_parent_is_added(
    world: World,
) -> None:
    other = {"apiVersion": "v1", "kind": "Secret", "name": "s", "uid": "u-s", "extra": 1}
    child = config_map("c", None, data={"v": "1"})
    child["metadata"]["ownerReferences"] = [other]
    world.hooks.on("/sync", lambda request: answer(child))
    world.start(composite(children=(("v1", "configmaps", "OnDelete"),)))  # as created
    parent = world.create(widget())
    world.run()

    refs = world.get("ConfigMap", "c")["metadata"]["ownerReferences"]
    assert refs == [
        {"apiVersion": "v1", "kind": "Secret", "name": "s", "uid": "u-s"},  # re-encoded
        make_controller_ref(parent),
    ]


_REFS = st.lists(
    st.fixed_dictionaries(
        {"uid": st.sampled_from(["p", "u1", "u2"])},
        optional={
            "name": st.sampled_from(["n", 3]),
            "controller": st.sampled_from([True, False, "yes"]),
            "extra": st.just(1),
        },
    ),
    max_size=4,
)


@given(refs=st.one_of(_REFS, st.sampled_from([None, "not a list", {"uid": "p"}, [1]])))
def test_a_created_child_names_its_parent_exactly_once_unless_the_hook_did_more(
    refs: Any,
) -> None:
    parent = {**widget(), "metadata": {"name": "w1", "namespace": "default", "uid": "p"}}
    child = config_map("c")
    if refs is not None:
        child["metadata"]["ownerReferences"] = refs
    result = with_controller_ref(child, parent)["metadata"]["ownerReferences"]

    given_refs = refs if isinstance(refs, list) and all(isinstance(r, dict) for r in refs) else []
    naming = [r for r in given_refs if r.get("uid") == "p"]
    if naming:
        assert result is refs  # left exactly as the hook wrote it
    else:
        assert result[-1] == make_controller_ref(parent)
        assert len(result) == len(given_refs) + 1
        assert all(
            set(r) <= {"apiVersion", "kind", "name", "uid", "controller", "blockOwnerDeletion"}
            for r in result
        )


# ----------------------------------------------------------- 5. the last-applied annotation


def _forging(world: World, method: str) -> None:
    """A hook whose child carries a last-applied annotation of its own."""
    annotations = {LAST_APPLIED_ANNOTATION: "from the hook", "keep": "yes"}
    world.hooks.on(
        "/sync",
        lambda request: answer(config_map("c", None, annotations=annotations, data={"v": "1"})),
    )
    world.start(composite(children=(("v1", "configmaps", method),)))
    world.create(widget())


def test_in_place_a_hooks_own_last_applied_annotation_is_replaced_by_one_update(
    world: World,
) -> None:
    records: list[tuple[str, dict[str, Any]]] = []

    def record(event: str, changed: KubeObject) -> None:
        if changed["kind"] == "ConfigMap":
            text = changed["metadata"]["annotations"][LAST_APPLIED_ANNOTATION]
            records.append((event, json.loads(text)["metadata"]["annotations"]))

    world.store.watch(record)
    _forging(world, "InPlace")
    world.run()
    for _ in range(3):
        world.touch("Widget", "w1")
        world.run()

    # Created with the hook's object as it came, its annotation included; the first update
    # drops it from the desired object; then nothing more is written.
    assert records == [
        ("ADDED", {LAST_APPLIED_ANNOTATION: "from the hook", "keep": "yes"}),
        ("MODIFIED", {"keep": "yes"}),
    ]
    assert world.get("ConfigMap", "c")["metadata"]["annotations"]["keep"] == "yes"


def test_with_recreate_a_hooks_own_last_applied_annotation_recreates_the_child_again_and_again(
    world: World,
) -> None:
    """Created with the annotation in its record, updated without: the two never agree, so
    Metacontroller deletes the child, creates it, deletes it..."""
    _forging(world, "Recreate")
    world.run(1)
    created = [
        name for event, kind, name in world.events if (event, kind) == ("ADDED", "ConfigMap")
    ]
    deleted = [
        name for event, kind, name in world.events if (event, kind) == ("DELETED", "ConfigMap")
    ]
    assert len(created) > 5 and len(deleted) >= len(created) - 1


def _as_created(desired: KubeObject) -> KubeObject:
    child = with_last_applied(desired, desired)
    return {**child, "metadata": {**child["metadata"], "uid": "u", "resourceVersion": "1"}}


def test_an_emptied_annotation_map_is_recorded_as_empty() -> None:
    desired = config_map("c", annotations={LAST_APPLIED_ANNOTATION: "x"}, data={"v": "1"})
    updated = updated_child(_as_created(desired), desired)
    text = updated["metadata"]["annotations"][LAST_APPLIED_ANNOTATION]
    assert json.loads(text)["metadata"]["annotations"] == {}
    assert set(updated["metadata"]["annotations"]) == {LAST_APPLIED_ANNOTATION}


def test_annotations_that_are_not_all_strings_are_neither_stripped_nor_kept() -> None:
    """Unstructured.GetAnnotations reads no map at all then: nothing is stripped, and the
    record replaces every annotation."""
    desired = config_map("c", data={"v": "1"})
    desired["metadata"]["annotations"] = {"n": 1, LAST_APPLIED_ANNOTATION: "x"}
    assert without_last_applied(desired) is desired
    created = with_last_applied(desired, desired)
    assert created["metadata"]["annotations"] == {LAST_APPLIED_ANNOTATION: go_json(desired)}


def test_a_record_in_another_spelling_is_written_again() -> None:
    """Metacontroller compares the whole object: the same configuration recorded with other
    whitespace still differs from what it would write."""
    desired = config_map("c", data={"v": "1"})
    observed = _as_created(desired)
    observed["metadata"]["annotations"] = {LAST_APPLIED_ANNOTATION: json.dumps(desired, indent=1)}
    updated = updated_child(observed, desired)
    assert updated != observed
    assert updated["metadata"]["annotations"][LAST_APPLIED_ANNOTATION] == go_json(desired)
    assert updated_child(updated, desired) == updated


@given(
    annotations=st.dictionaries(
        st.sampled_from(["a", "b", LAST_APPLIED_ANNOTATION]), st.text(max_size=3), max_size=3
    ),
    data=st.dictionaries(st.sampled_from(["k", "l"]), st.text(max_size=3), max_size=2),
)
def test_a_child_settles_after_at_most_one_update(
    annotations: dict[str, str], data: dict[str, str]
) -> None:
    desired = config_map("c", annotations=annotations, data=data)
    created = _as_created(desired)
    first = updated_child(created, desired)
    assert updated_child(first, desired) == first
    recorded = json.loads(first["metadata"]["annotations"][LAST_APPLIED_ANNOTATION])
    assert LAST_APPLIED_ANNOTATION not in recorded["metadata"].get("annotations", {})
    if LAST_APPLIED_ANNOTATION not in annotations:
        assert first == created  # nothing of the hook's own: no update at all


# ------------------------------------------------- the composite's sync, step by step


FINALIZER = "metacontroller.io/compositecontroller-widgets"


def test_a_parent_left_with_the_finalizer_of_a_gone_finalize_hook_is_only_released(
    world: World,
) -> None:
    """syncParentObject checks the label selector again once SyncObject has removed the
    finalizer: a parent the controller no longer selects gets no sync call."""
    world.hooks.on("/sync", lambda request: answer())
    world.start(composite(parent_selector={"matchLabels": {"managed": "yes"}}))
    world.create(widget(finalizers=[FINALIZER]))
    world.run()

    assert "finalizers" not in world.get("Widget", "w1")["metadata"]  # none left: stored as none
    assert world.hooks.calls("/sync") == []


def test_ignore_status_changes_ignores_what_keeps_generation_labels_and_annotations(
    world: World,
) -> None:
    world.hooks.on("/sync", lambda request: answer())
    world.start(composite(ignore_status_changes=True))
    world.create(widget())
    world.run()
    syncs = len(world.hooks.calls("/sync"))

    world.store.patch_metadata("Widget", "default", "w1", finalizers=["example.com/hold"])
    world.run()
    assert len(world.hooks.calls("/sync")) == syncs  # metadata, but none that counts
    world.store.patch_metadata("Widget", "default", "w1", labels={"new": "label"})
    world.run()
    assert len(world.hooks.calls("/sync")) == syncs + 1


def test_apply_errors_are_dropped_when_the_parent_is_gone_by_the_status_update(
    world: World,
) -> None:
    """updateParentStatus's NotFound ends the sync without error, whatever the children's."""

    def sync(request: dict[str, Any]) -> dict[str, Any]:
        world.store.delete("Widget", "default", "w1")  # meanwhile
        unknown = {"apiVersion": "example.com/v1", "kind": "Unserved", "metadata": {"name": "x"}}
        return answer(unknown)

    world.hooks.on("/sync", sync)
    world.start(composite())
    world.create(widget())
    world.run()

    assert len(world.hooks.calls("/sync")) == 1
    assert not world.emulator.errors, world.emulator.stats.recent_errors


# --- decoding answers: the fast path for compact JSON decides as the strict decoder does

JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=4), inner, max_size=4)
    ),
    max_leaves=20,
)


def _by_stdlib(body: bytes, strict: bool) -> tuple[object, ...]:
    """What Metacontroller's strict decoding accepts, the reference: Python's own decoder with
    duplicate fields and non-finite numbers refused."""
    try:
        return ("ok", wire._document_by_pairs(body, strict))
    except SyncFailure:
        return ("refused",)


@st.composite
def answer_texts(draw: st.DrawFn) -> bytes:
    document = draw(st.dictionaries(st.sampled_from(["status", "children", "x"]), JSON_VALUES))
    text = draw(
        st.sampled_from(
            [
                json.dumps(document, separators=(",", ":")),
                json.dumps(document),
                json.dumps(document, separators=(",", ":")).replace("}", ',"status":1}', 1),
                '{"status":1,"status":1}',
                '{"status":NaN}',
                '{"status":1e400}',
            ]
        )
    )
    return text.encode()


@given(answer_texts(), st.booleans())
@settings(max_examples=300, deadline=None)
def test_any_answer_text_decodes_as_the_strict_decoder_decodes_it(
    body: bytes, strict: bool
) -> None:
    fields = frozenset(["status", "children", "x"])
    try:
        decoded: tuple[object, ...] = ("ok", wire._document(body, strict, fields))
    except SyncFailure:
        decoded = ("refused",)
    reference = _by_stdlib(body, strict)
    if reference[0] == "ok" and not isinstance(reference[1], dict):
        reference = ("refused",)
    assert decoded == reference


ENCODABLE_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**63 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=4), inner, max_size=4)
    ),
    max_leaves=10,
)
"""What the API server stores and orjson encodes."""


def _versioned(obj: KubeObject) -> KubeObject:
    """`obj` with the resourceVersion of its content, as an API server keeps them: one content
    per uid and version."""
    content = orjson.dumps({**obj, "metadata": {**obj["metadata"], "resourceVersion": None}})
    return {**obj, "metadata": {**obj["metadata"], "resourceVersion": sha256(content).hexdigest()}}


def _member(draw: st.DrawFn, index: int) -> KubeObject:
    uid = draw(st.sampled_from(["", "u1", "u2", "u3", None]))
    metadata: dict[str, Any] = {"name": f"child-{index}"}
    if uid is not None:
        metadata["uid"] = uid
    return _versioned({"kind": "Pod", "metadata": metadata, "spec": draw(ENCODABLE_VALUES)})


@st.composite
def object_maps(draw: st.DrawFn) -> wire.ObjectMap:
    groups = draw(st.lists(st.sampled_from(["Pod.v1", "Runner.x/v1", 'é\\"q']), max_size=3))
    return {
        group: {
            draw(st.text(max_size=6)): _member(draw, index)
            for index in range(draw(st.integers(0, 3)))
        }
        for group in groups
    }


def _next_version(objects: wire.ObjectMap) -> wire.ObjectMap:
    """Every member written again: new content, a new resourceVersion."""
    return {
        group: {
            key: _versioned({**obj, "status": {"changed": True}}) for key, obj in members.items()
        }
        for group, members in objects.items()
    }


def _moved(objects: wire.ObjectMap) -> wire.ObjectMap:
    """The same objects under other keys (a v1 name where a v2 `ns/name` was)."""
    return {
        group: {f"ns/{key}": obj for key, obj in members.items()}
        for group, members in objects.items()
    }


@given(st.lists(object_maps(), min_size=1, max_size=4))
@settings(max_examples=200, deadline=None)
def test_an_object_map_encodes_as_orjson_encodes_it_whatever_was_encoded_before(
    maps: list[wire.ObjectMap],
) -> None:
    """A request's children are encoded from each member's JSON of an earlier request while
    its resourceVersion is the same: byte for byte what encoding the whole map gives, again,
    after the members changed, and under other keys."""
    encoded = wire.EncodedMembers()
    for objects in maps:
        for version in (objects, objects, _next_version(objects), _moved(objects)):
            assert encoded.object_map(version) == orjson.dumps(version)


@st.composite
def observed_children(draw: st.DrawFn) -> dict[str, dict[Any, KubeObject]]:
    """Claimed children as a controller holds them: by group, then (namespace, name)."""
    groups = draw(st.lists(st.sampled_from(["Pod.v1", "Runner.x/v1", 'é\\"q']), max_size=3))
    observed: dict[str, dict[Any, KubeObject]] = {}
    for group in groups:
        members: dict[Any, KubeObject] = {}
        for index in range(draw(st.integers(0, 4))):
            child = _member(draw, index)
            namespace = draw(st.sampled_from(["", "default", "other"]))
            if namespace:
                # Versioned again: one content per uid and version, as an API server keeps.
                child = _versioned(
                    {**child, "metadata": {**child["metadata"], "namespace": namespace}}
                )
            members[namespace, child["metadata"]["name"]] = child
        observed[group] = members
    return observed


MODES = [(namespace, v2) for namespace in ("", "default") for v2 in (False, True)]


@given(st.lists(observed_children(), min_size=1, max_size=3), st.permutations(MODES))
@settings(max_examples=200, deadline=None)
def test_children_encode_as_the_map_of_them_would_whatever_was_encoded_before(
    observed_maps: list[dict[str, dict[Any, KubeObject]]], modes: list[tuple[str, bool]]
) -> None:
    """A request's children encoded straight from the claimed objects: byte for byte the map
    `request_maps` keys them by, in every keying of hook version and parent namespace, with
    the same objects met before under another keying or through `object_map`."""
    encoded = wire.EncodedMembers()
    for observed in observed_maps:
        for namespace, v2 in modes * 2:
            children, _ = request_maps(observed, [], parent_namespace=namespace, v2=v2)
            plain = orjson.dumps(children)
            assert encoded.children_map(observed, parent_namespace=namespace, v2=v2) == plain
            assert encoded.object_map(children) == plain


def test_a_member_whose_resource_version_is_the_same_is_not_encoded_again() -> None:
    """The resourceVersion stands for the content (the API server changes it at every write):
    what an earlier request encoded for it is reused, and a new version is encoded anew."""
    encoded = wire.EncodedMembers(limit=2)
    runner: KubeObject = {"kind": "Runner", "metadata": {"name": "r", "uid": "u"}}
    runner["metadata"]["resourceVersion"] = "7"
    first = encoded.object_map({"Runner.v1": {"r": runner}})
    same_version = {**runner, "spec": {"edited": "with the same version, which no store does"}}
    assert encoded.object_map({"Runner.v1": {"r": same_version}}) == first  # reused
    assert encoded.object_map({"Runner.v1": {"r": runner}}) == first  # the very object
    runner = {**runner, "metadata": {**runner["metadata"], "resourceVersion": "8"}}
    assert encoded.object_map({"Runner.v1": {"r": runner}}) == orjson.dumps(
        {"Runner.v1": {"r": runner}}
    )
    renamed = encoded.object_map({"Runner.v1": {"default/r": runner}})  # another key
    assert renamed == orjson.dumps({"Runner.v1": {"default/r": runner}})
    for uid in ("a", "b", "c"):  # past the limit: forgotten, still right
        other = {"kind": "Runner", "metadata": {"name": uid, "uid": uid, "resourceVersion": "1"}}
        assert encoded.object_map({"Runner.v1": {uid: other}}) == orjson.dumps(
            {"Runner.v1": {uid: other}}
        )


ANSWER_PAD = b"x" * (wire.DecodedChildren.SPLIT_ABOVE_BYTES + 1)


@st.composite
def answer_bodies(draw: st.DrawFn) -> tuple[str, bytes]:
    """A composite answer past the split size: compact as orjson writes it, or not quite
    (spaces, a field twice, a child that is not an object, a non-finite number)."""
    children = [
        {"kind": "Runner", "metadata": {"name": f"r{i}"}, "spec": draw(ENCODABLE_VALUES)}
        for i in range(draw(st.integers(0, 3)))
    ]
    answer = {"status": {"pad": ANSWER_PAD.decode()}, "children": children}
    body = orjson.dumps(answer)
    flaw = draw(st.sampled_from(["none", "none", "space", "twice", "not an object", "NaN"]))
    if flaw == "space":
        body = body.replace(b'"children":', b'"children": ')
    if flaw == "twice":
        body = body[:-1] + b',"children":[]}'
    if flaw == "not an object":
        body = body.replace(b'"children":[', b'"children":[1,')
    if flaw == "NaN":
        body = body.replace(b'"children":[', b'"children":[{"kind":"P","n":NaN},')
    return flaw, body


SHARED_DECODED = wire.DecodedChildren(limit=50)


@given(answer_bodies())
@settings(max_examples=200, deadline=None)
def test_an_answer_read_with_earlier_children_reads_as_decoding_it_whole(
    flawed: tuple[str, bytes],
) -> None:
    """Children met in earlier answers are reused only when the whole body is compact, as
    decoding it whole would find; anything else is read the usual way (None here)."""
    flaw, body = flawed
    whole = wire._compact_document(body)
    for _ in range(2):  # decoded, then reused
        read = SHARED_DECODED.compact_answer(body, "children")
        assert read == whole if flaw == "none" else read in (None, whole)
    if flaw != "none":
        assert SHARED_DECODED.compact_answer(body, "children") is None


def test_an_unchanged_child_of_an_answer_is_the_object_decoded_before() -> None:
    decoded = wire.DecodedChildren(limit=3)
    children = [{"kind": "Runner", "metadata": {"name": f"r{i}"}} for i in range(2)]
    answer = {"status": {"pad": ANSWER_PAD.decode()}, "children": children}
    first = decoded.compact_answer(orjson.dumps(answer), "children")
    children[1]["spec"] = {"changed": True}
    second = decoded.compact_answer(orjson.dumps(answer), "children")
    assert first is not None and second is not None
    assert second["children"][0] is first["children"][0]
    assert second["children"][1] is not first["children"][1]
    assert second["children"][1]["spec"] == {"changed": True}
    small = orjson.dumps({"children": children})
    read_small = decoded.compact_answer(small, "children")
    assert read_small is not None and read_small["children"][0] is first["children"][0]


def test_a_world_whose_every_answer_reuses_children_runs_as_one_decoding_them_whole(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Every answer's children reused (not only large answers'): the same run, call for call."""
    from arc_sim.world import World
    from tests.sim_scenarios import scenario

    name = "deployment-rollout-during-long-jobs"
    monkeypatch.setattr(wire.DecodedChildren, "SPLIT_ABOVE_BYTES", 10**9)
    whole = World(scenario(name)).run().to_json()
    monkeypatch.setattr(wire.DecodedChildren, "SPLIT_ABOVE_BYTES", 0)
    reused = World(scenario(name)).run().to_json()
    for summary in (whole, reused):
        del summary["wallSeconds"]
    assert reused == whole
