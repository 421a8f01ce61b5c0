"""A controller's finalizer on its parents: present exactly when a finalize hook exists."""

from __future__ import annotations

from arc_sim.store import KubeObject, NotFound, ObjectStore

# Garbage-collector finalizers: managing children while they are set would fight the collector.
_GC_FINALIZERS = ("foregroundDeletion", "orphan")


def is_deleting(obj: KubeObject) -> bool:
    return bool(obj["metadata"].get("deletionTimestamp"))


def has_finalizer(obj: KubeObject, finalizer: str) -> bool:
    return finalizer in (obj["metadata"].get("finalizers") or ())


def should_finalize(parent: KubeObject, finalizer: str) -> bool:
    """Whether children are still managed although the parent is being deleted."""
    finalizers = parent["metadata"].get("finalizers") or ()
    return finalizer in finalizers and not any(f in finalizers for f in _GC_FINALIZERS)


def sync_finalizer(
    store: ObjectStore, parent: KubeObject, finalizer: str, wanted: bool
) -> KubeObject:
    """Add or remove `finalizer`; never added to a parent already being deleted."""
    present = has_finalizer(parent, finalizer)
    if present == wanted or (wanted and is_deleting(parent)):
        return parent
    return set_finalizer(store, parent, finalizer, wanted)


def remove_finalizer(store: ObjectStore, parent: KubeObject, finalizer: str) -> KubeObject:
    if not has_finalizer(parent, finalizer):
        return parent
    return set_finalizer(store, parent, finalizer, False)


def set_finalizer(
    store: ObjectStore, parent: KubeObject, finalizer: str, present: bool
) -> KubeObject:
    metadata = parent["metadata"]
    others = [f for f in metadata.get("finalizers") or () if f != finalizer]
    try:
        return store.patch_metadata(
            parent["kind"],
            metadata.get("namespace") or "",
            metadata["name"],
            finalizers=[*others, finalizer] if present else others,
        )
    except NotFound:
        return parent
