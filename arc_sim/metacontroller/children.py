"""Children: which ones a parent owns (claim, adopt, release) and how its desired set is applied.

Applying follows Metacontroller's default apply strategy (`ManageChildren` and `DynamicApply`
in `pkg/controller/common/manage_children.go`): first delete what is no longer desired, type by
type, then create what is missing (recording the last applied configuration and a controller
reference) and update the rest with the three-way merge, as the child type's update strategy
allows, type by type again. Types go in the order of `GetAllGVKs`: by group, version, kind.
Errors are collected and the other children are still applied.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

from arc_sim.metacontroller.cache import ObjectCache
from arc_sim.metacontroller.failures import SyncFailure
from arc_sim.metacontroller.finalizers import is_deleting
from arc_sim.metacontroller.identity_memo import IdentityMemo
from arc_sim.metacontroller.merge import MergeError, updated_child, with_last_applied
from arc_sim.metacontroller.resources import ResourceCatalog, UnknownResource
from arc_sim.metacontroller.spec import ChildRule, UpdateStrategies
from arc_sim.store import (
    AlreadyExists,
    Conflict,
    KubeObject,
    NotFound,
    ObjectStore,
    StoreError,
    selector_matches,
)

ChildMap = dict[str, dict[tuple[str, str], KubeObject]]
"""Group key -> (namespace, name) -> child."""

_UPDATE_ATTEMPTS = 4
"""client-go's retry.DefaultBackoff (Steps: 4) in `AtomicUpdate`; its waits are not modelled."""


def labels_of(obj: KubeObject) -> dict[str, str]:
    return obj["metadata"].get("labels") or {}


def make_controller_ref(parent: KubeObject) -> dict[str, Any]:
    metadata = parent["metadata"]
    return {
        "apiVersion": parent["apiVersion"],
        "kind": parent["kind"],
        "name": metadata["name"],
        "uid": metadata["uid"],
        "controller": True,
        "blockOwnerDeletion": True,
    }


def child_map(objects: list[KubeObject]) -> tuple[ChildMap, list[str]]:
    """Desired children by group and key; a child without a name cannot be applied (an apply
    error, as the API server's refusal would be)."""
    result: ChildMap = {}
    errors = []
    for obj in objects:
        metadata = obj.get("metadata") or {}
        name = metadata.get("name")
        if not isinstance(name, str) or not name:
            errors.append(f"can't create a {obj['kind']} without metadata.name")
            continue
        group_key = f"{obj['kind']}.{obj.get('apiVersion', '')}"
        result.setdefault(group_key, {})[metadata.get("namespace") or "", name] = obj
    return result, errors


def in_namespace(children: list[KubeObject], namespace: str) -> list[KubeObject]:
    """The answer's children, each in the parent's namespace unless it names one (as
    Metacontroller fills it in). The answer's objects are not changed: a child given the
    namespace is a copy, and the list is the same when none lacks one."""
    if all((child.get("metadata") or {}).get("namespace") for child in children):
        return children
    filled = []
    for child in children:
        metadata = child.get("metadata") or {}
        if not metadata.get("namespace"):
            child = {**child, "metadata": {**metadata, "namespace": namespace}}
        filled.append(child)
    return filled


def with_metadata_entry(
    child: KubeObject, field: str, key: str, value: str, *, overwrite: bool
) -> KubeObject:
    """The child with `metadata[field][key]` set to `value` (kept as it is when present and
    not `overwrite`; a `field` that is not a map is replaced). The answer's objects are not
    changed (`wire.DecodedChildren` shares them): a child that needs the entry is a copy."""
    metadata = child.get("metadata") or {}
    entries = metadata.get(field)
    if isinstance(entries, dict) and key in entries and (entries[key] == value or not overwrite):
        return child
    entries = {**entries, key: value} if isinstance(entries, dict) else {key: value}
    return {**child, "metadata": {**metadata, field: entries}}


# --- ownership


Claim = tuple[dict[str, Any], str | None, bool | None, tuple[str, str]]
"""What claiming found of a controlled child under a selector and namespace: the selector, the
namespace, whether it matches (None: in another namespace, left alone) and its key."""


def claim_children(
    store: ObjectStore,
    cache: ObjectCache,
    parent: KubeObject,
    *,
    namespaced_parent: bool,
    rules: tuple[ChildRule, ...],
    selector: dict[str, Any],
    claims: IdentityMemo[Claim] | None = None,
) -> ChildMap:
    """The children the parent controls and its selector matches, adopting matching orphans
    and releasing controlled children that no longer match. Every rule has a group, even an
    empty one. `claims` remembers what each controlled child was found to be (a parent of
    thousands of children is synced again and again while few of them change)."""
    metadata = parent["metadata"]
    namespace = (metadata.get("namespace") or "") if namespaced_parent else None
    parent_deleting = is_deleting(parent)
    claimed: ChildMap = {}
    errors: list[str] = []
    for rule in rules:
        members = claimed.setdefault(rule.type.group_key, {})
        for child in cache.controlled_by(metadata["uid"], rule.type.kind):
            claim = claims.get(child) if claims is not None else None
            if claim is None or claim[1] != namespace or not _same(claim[0], selector):
                claim = _claim(child, selector, namespace)
                if claims is not None:
                    claims.put(child, claim)
            if claim[2] is None:
                continue
            if claim[2]:
                members[claim[3]] = child
            elif not parent_deleting:
                _try(errors, "release", child, partial(_release, store, child, metadata["uid"]))
        if parent_deleting:
            continue
        for orphan in cache.orphans(rule.type.kind, namespace):
            if is_deleting(orphan) or not selector_matches(selector, labels_of(orphan)):
                continue
            adopted = _try(errors, "adopt", orphan, partial(_adopt, store, parent, orphan))
            if adopted is not None:
                orphan_metadata = adopted["metadata"]
                key = (orphan_metadata.get("namespace") or "", orphan_metadata["name"])
                members[key] = adopted
    if errors:
        raise SyncFailure("invalid", "can't claim children: " + "; ".join(errors))
    return claimed


def _same(known: dict[str, Any], selector: dict[str, Any]) -> bool:
    return known is selector or known == selector


def _claim(child: KubeObject, selector: dict[str, Any], namespace: str | None) -> Claim:
    child_metadata = child["metadata"]
    child_namespace = child_metadata.get("namespace") or ""
    key = (child_namespace, child_metadata["name"])
    if namespace is not None and child_namespace != namespace:
        return selector, namespace, None, key
    return selector, namespace, selector_matches(selector, labels_of(child)), key


def _try(
    errors: list[str], action: str, obj: KubeObject, attempt: Callable[[], KubeObject]
) -> KubeObject | None:
    try:
        return attempt()
    except NotFound:
        return None  # gone meanwhile: nothing to claim
    except (StoreError, SyncFailure) as error:
        metadata = obj["metadata"]
        errors.append(
            f"can't {action} {obj['kind']} {metadata.get('namespace')}/{metadata['name']}: {error}"
        )
        return None


def _adopt(store: ObjectStore, parent: KubeObject, child: KubeObject) -> KubeObject:
    metadata = parent["metadata"]
    # An uncached read: a parent being deleted must not adopt anything.
    fresh = store.get(parent["kind"], metadata.get("namespace") or "", metadata["name"])
    if fresh is None or fresh["metadata"]["uid"] != metadata["uid"]:
        raise SyncFailure("invalid", "the parent is gone")
    if is_deleting(fresh):
        raise SyncFailure("invalid", "the parent is being deleted")
    ref = make_controller_ref(parent)

    def add_ref(obj: KubeObject) -> None:
        # `addOwnerReference` (pkg/dynamic/controllerref/controller_ref.go): a reference with
        # the parent's uid is replaced where it is; otherwise the new one goes last.
        refs = _owner_references(obj["metadata"].get("ownerReferences"))
        replaced = [ref if r["uid"] == ref["uid"] else r for r in refs]
        found = any(r["uid"] == ref["uid"] for r in refs)
        obj["metadata"]["ownerReferences"] = replaced if found else [*refs, ref]

    return _atomic_update(store, child, add_ref)


def _release(store: ObjectStore, child: KubeObject, owner_uid: str) -> KubeObject:
    def drop_ref(obj: KubeObject) -> None:
        refs = _owner_references(obj["metadata"].get("ownerReferences"))
        obj["metadata"]["ownerReferences"] = [r for r in refs if r["uid"] != owner_uid]

    return _atomic_update(store, child, drop_ref)


def _atomic_update(
    store: ObjectStore, obj: KubeObject, change: Callable[[KubeObject], None]
) -> KubeObject:
    """GET, change, PUT with the resourceVersion read; again on a conflict."""
    metadata = obj["metadata"]
    for _ in range(_UPDATE_ATTEMPTS):
        current = store.get(obj["kind"], metadata.get("namespace") or "", metadata["name"])
        if current is None or current["metadata"]["uid"] != metadata["uid"]:
            raise NotFound(f"{obj['kind']} {metadata['name']} not found")
        change(current)
        try:
            return store.update(current)
        except Conflict:
            continue
    raise Conflict(f"{obj['kind']} {metadata['name']}: too many conflicts")


# --- applying


def manage_children(
    store: ObjectStore,
    catalog: ResourceCatalog,
    strategies: UpdateStrategies,
    parent: KubeObject,
    observed: ChildMap,
    desired: ChildMap,
) -> list[str]:
    """Make the children what `desired` says; returns the errors met on the way."""
    errors: list[str] = []
    for group_key in sorted(observed, key=gvk_order):
        wanted = desired.get(group_key, {})
        for key, child in observed[group_key].items():
            if key not in wanted and not is_deleting(child):
                _delete(store, child, errors)
    for group_key in sorted(desired, key=gvk_order):
        members = desired[group_key]
        sample = next(iter(members.values()))
        try:
            child_type = catalog.kind(sample.get("apiVersion", ""), sample["kind"])
        except UnknownResource as error:
            errors.append(str(error))
            continue
        method = strategies.method(child_type.group, child_type.kind)
        seen = observed.get(group_key, {})
        for key, child in members.items():
            if child_type.namespaced and not key[0]:
                errors.append(f"{child['kind']} {key[1]}: a namespace is required")
                continue
            current = seen.get(key)
            if current is None:
                _create(store, parent, child, errors)
            else:
                _update(store, method, current, child, errors)
    return errors


def gvk_order(group_key: str) -> tuple[str, str, str]:
    """Group, version and kind of a group key (`Kind.group/version`), the order in which
    `GetAllGVKs` (`pkg/controller/common/api/v2/common.go`) hands out types."""
    kind, _, api_version = group_key.partition(".")
    group, _, version = api_version.rpartition("/")
    return group, version, kind


def with_controller_ref(child: KubeObject, parent: KubeObject) -> KubeObject:
    """`claimOwnership`: the child unchanged when any of its owner references already names
    the parent's uid (whatever else it says); otherwise its references, as
    `Unstructured.GetOwnerReferences` reads them, and the parent's controller reference."""
    metadata = child["metadata"]
    uid = parent["metadata"]["uid"]
    refs = _owner_references(metadata.get("ownerReferences"))
    if any(ref["uid"] == uid for ref in refs):
        return child
    return {
        **child,
        "metadata": {**metadata, "ownerReferences": [*refs, make_controller_ref(parent)]},
    }


def _owner_references(value: Any) -> list[dict[str, Any]]:
    """References re-encoded as `metav1.OwnerReference`; none unless a list of objects."""
    if not isinstance(value, list) or not all(isinstance(ref, dict) for ref in value):
        return []
    refs = []
    for ref in value:
        read = {
            field: ref[field] if isinstance(ref.get(field), str) else ""
            for field in ("apiVersion", "kind", "name", "uid")
        }
        for flag in ("controller", "blockOwnerDeletion"):
            if isinstance(ref.get(flag), bool):
                read[flag] = ref[flag]
        refs.append(read)
    return refs


def _create(store: ObjectStore, parent: KubeObject, desired: KubeObject, errors: list[str]) -> None:
    # The last applied configuration is the hook's object itself, before anything is added.
    child = with_controller_ref(with_last_applied(desired, desired), parent)
    try:
        store.create(child)
    except AlreadyExists:
        pass  # owned by someone else, or a type that is not observed: Metacontroller is silent
    except StoreError as error:
        errors.append(f"can't create {_describe(child)}: {error}")


_settled: IdentityMemo[KubeObject] = IdentityMemo(limit=100_000)
"""For a stored object, a desired state whose merge changed nothing in it. A parent with
thousands of children is synced again and again while few of them change; the merge is a pure
function of the two, and a stored object is never changed in place, so the same object (by
identity) and an equal desired state merge to nothing again."""


def _settled_already(current: KubeObject, desired: KubeObject) -> bool:
    settled = _settled.get(current)
    # The same desired object (an unchanged child of the answer, `wire.DecodedChildren`) is
    # equal without looking.
    return settled is not None and (settled is desired or settled == desired)


def _remember_settled(current: KubeObject, desired: KubeObject) -> None:
    _settled.put(current, desired)


def _update(
    store: ObjectStore, method: str, current: KubeObject, desired: KubeObject, errors: list[str]
) -> None:
    if _settled_already(current, desired):
        return
    try:
        merged = updated_child(current, desired)
    except MergeError as error:
        errors.append(f"can't merge {_describe(current)}: {error}")
        return
    if merged == current:
        _remember_settled(current, desired)
        return
    if is_deleting(current):
        return
    if method in ("Recreate", "RollingRecreate"):
        # Created again by a later sync; if it is gone already, that sync creates it too.
        _delete(store, current, errors)
    elif method in ("InPlace", "RollingInPlace"):
        try:
            store.update(merged)
        except (NotFound, Conflict):
            pass  # changed or gone meanwhile: the event it made brings another sync
        except StoreError as error:
            errors.append(f"can't update {_describe(current)}: {error}")


def _delete(store: ObjectStore, child: KubeObject, errors: list[str]) -> None:
    """A delete with the observed uid as precondition; one that finds nothing is no error
    (`deleteChildren` and `childUpdateRecreate` swallow NotFound alike)."""
    metadata = child["metadata"]
    try:
        store.delete(
            child["kind"],
            metadata.get("namespace") or "",
            metadata["name"],
            uid=metadata["uid"],
        )
    except NotFound:
        pass
    except StoreError as error:
        errors.append(f"can't delete {_describe(child)}: {error}")


def _describe(obj: KubeObject) -> str:
    metadata = obj.get("metadata") or {}
    namespace = metadata.get("namespace")
    name = metadata.get("name")
    return f"{obj.get('kind')} {namespace}/{name}" if namespace else f"{obj.get('kind')} {name}"
