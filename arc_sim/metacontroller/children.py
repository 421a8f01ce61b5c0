"""Children: which ones a parent owns (claim, adopt, release) and how its desired set is applied.

Applying follows Metacontroller's default apply strategy: delete what is no longer desired,
then create what is missing (recording the last applied configuration and a controller
reference), then update the rest with the three-way merge, as the child type's update strategy
allows. Errors are collected and the other children are still applied.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

from arc_sim.metacontroller.cache import ObjectCache
from arc_sim.metacontroller.failures import SyncFailure
from arc_sim.metacontroller.finalizers import is_deleting
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

_UPDATE_ATTEMPTS = 5


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


# --- ownership


def claim_children(
    store: ObjectStore,
    cache: ObjectCache,
    parent: KubeObject,
    *,
    namespaced_parent: bool,
    rules: tuple[ChildRule, ...],
    selector: dict[str, Any],
) -> ChildMap:
    """The children the parent controls and its selector matches, adopting matching orphans
    and releasing controlled children that no longer match. Every rule has a group, even an
    empty one."""
    metadata = parent["metadata"]
    namespace = (metadata.get("namespace") or "") if namespaced_parent else None
    parent_deleting = is_deleting(parent)
    claimed: ChildMap = {}
    errors: list[str] = []
    for rule in rules:
        members = claimed.setdefault(rule.type.group_key, {})
        for child in cache.controlled_by(metadata["uid"], rule.type.kind):
            child_metadata = child["metadata"]
            if namespace is not None and (child_metadata.get("namespace") or "") != namespace:
                continue
            if selector_matches(selector, labels_of(child)):
                members[child_metadata.get("namespace") or "", child_metadata["name"]] = child
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
        refs = [
            r for r in obj["metadata"].get("ownerReferences") or () if r.get("uid") != ref["uid"]
        ]
        obj["metadata"]["ownerReferences"] = [*refs, ref]

    return _atomic_update(store, child, add_ref)


def _release(store: ObjectStore, child: KubeObject, owner_uid: str) -> KubeObject:
    def drop_ref(obj: KubeObject) -> None:
        refs = obj["metadata"].get("ownerReferences") or ()
        obj["metadata"]["ownerReferences"] = [r for r in refs if r.get("uid") != owner_uid]

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
    for group_key in sorted(observed):
        wanted = desired.get(group_key, {})
        for key, child in observed[group_key].items():
            if key not in wanted and not is_deleting(child):
                _delete(store, child, errors, missing_ok=True)
    for group_key in sorted(desired):
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


def _create(store: ObjectStore, parent: KubeObject, desired: KubeObject, errors: list[str]) -> None:
    # The last applied configuration is the hook's object itself, before anything is added.
    child = with_last_applied(desired, desired)
    metadata = child["metadata"]
    metadata["ownerReferences"] = [
        *(metadata.get("ownerReferences") or ()),
        make_controller_ref(parent),
    ]
    try:
        store.create(child)
    except AlreadyExists:
        pass  # owned by someone else, or a type that is not observed: Metacontroller is silent
    except StoreError as error:
        errors.append(f"can't create {_describe(child)}: {error}")


def _update(
    store: ObjectStore, method: str, current: KubeObject, desired: KubeObject, errors: list[str]
) -> None:
    try:
        merged = updated_child(current, desired)
    except MergeError as error:
        errors.append(f"can't merge {_describe(current)}: {error}")
        return
    if merged == current or is_deleting(current):
        return
    if method in ("Recreate", "RollingRecreate"):
        _delete(store, current, errors, missing_ok=False)  # created again by a later sync
    elif method in ("InPlace", "RollingInPlace"):
        try:
            store.update(merged)
        except (NotFound, Conflict):
            pass  # changed or gone meanwhile: the event it made brings another sync
        except StoreError as error:
            errors.append(f"can't update {_describe(current)}: {error}")


def _delete(store: ObjectStore, child: KubeObject, errors: list[str], *, missing_ok: bool) -> None:
    metadata = child["metadata"]
    try:
        store.delete(
            child["kind"],
            metadata.get("namespace") or "",
            metadata["name"],
            uid=metadata["uid"],
        )
    except NotFound as error:
        if not missing_ok:
            errors.append(f"can't delete {_describe(child)}: {error}")
    except StoreError as error:
        errors.append(f"can't delete {_describe(child)}: {error}")


def _describe(obj: KubeObject) -> str:
    metadata = obj.get("metadata") or {}
    namespace = metadata.get("namespace")
    name = metadata.get("name")
    return f"{obj.get('kind')} {namespace}/{name}" if namespace else f"{obj.get('kind')} {name}"
