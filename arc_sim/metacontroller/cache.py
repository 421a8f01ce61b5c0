"""The informer cache: every object of the store as last seen, indexed for the controllers.

The store tells its watchers about every change synchronously and hands them their own copy,
so the cache is always current and keeps those copies without copying again. Objects read
from here must not be changed.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from arc_sim.store import EventType, KubeObject

ObjectKey = tuple[str, str, str]
"""Kind, namespace ("" when cluster-scoped), name."""

_VERSION_METADATA = ("resourceVersion", "managedFields")


def object_key(obj: KubeObject) -> ObjectKey:
    metadata = obj["metadata"]
    return obj.get("kind", ""), metadata.get("namespace") or "", metadata["name"]


def same_but_status(old: KubeObject, new: KubeObject) -> bool:
    """True when only status (and the resourceVersion that came with it) changed."""
    if old.keys() - {"status"} != new.keys() - {"status"}:
        return False
    for field, value in new.items():
        if field not in ("status", "metadata") and old.get(field) != value:
            return False
    old_metadata, new_metadata = old["metadata"], new["metadata"]
    return {k: v for k, v in old_metadata.items() if k not in _VERSION_METADATA} == {
        k: v for k, v in new_metadata.items() if k not in _VERSION_METADATA
    }


def controller_ref(obj: KubeObject) -> dict[str, Any] | None:
    for ref in obj["metadata"].get("ownerReferences") or ():
        if ref.get("controller"):
            return ref  # type: ignore[no-any-return]
    return None


class ObjectCache:
    def __init__(self) -> None:
        self._objects: dict[str, dict[str, dict[str, KubeObject]]] = {}
        self._keys_by_uid: dict[str, ObjectKey] = {}
        # Dicts rather than sets: iteration in insertion order keeps runs deterministic.
        self._owned: dict[tuple[str, str], dict[ObjectKey, KubeObject]] = {}
        """(Controller owner uid, kind) -> the objects of that kind it controls, by key: a set
        with thousands of children claims them at every sync."""
        self._orphans: dict[str, dict[str, dict[str, None]]] = {}
        """Kind -> namespace -> names of objects without a controller."""

    def observe(self, event: EventType, obj: KubeObject) -> KubeObject | None:
        """Record a store event; returns the object as it was before."""
        kind, namespace, name = key = object_key(obj)
        by_namespace = self._objects.setdefault(kind, {})
        previous = by_namespace.get(namespace, {}).get(name)
        if previous is not None:
            self._unindex(key, previous)
        if event == "DELETED":
            members = by_namespace.get(namespace)
            if members is not None:
                members.pop(name, None)
                if not members:
                    del by_namespace[namespace]
        else:
            by_namespace.setdefault(namespace, {})[name] = obj
            self._index(key, obj)
        return previous

    def get(self, kind: str, namespace: str, name: str) -> KubeObject | None:
        return self._objects.get(kind, {}).get(namespace, {}).get(name)

    def get_by_uid(self, uid: str) -> KubeObject | None:
        key = self._keys_by_uid.get(uid)
        return self.get(*key) if key is not None else None

    def objects(self, kind: str, namespace: str | None = None) -> Iterator[KubeObject]:
        """Objects of `kind` in `namespace`, or in every namespace when None."""
        by_namespace = self._objects.get(kind, {})
        if namespace is not None:
            yield from list(by_namespace.get(namespace, {}).values())
            return
        for members in list(by_namespace.values()):
            yield from list(members.values())

    def controlled_by(self, owner_uid: str, kind: str) -> list[KubeObject]:
        return list(self._owned.get((owner_uid, kind), {}).values())

    def orphans(self, kind: str, namespace: str | None) -> list[KubeObject]:
        by_namespace = self._orphans.get(kind, {})
        namespaces = [namespace] if namespace is not None else list(by_namespace)
        found = []
        for each in namespaces:
            for name in by_namespace.get(each, ()):
                obj = self.get(kind, each, name)
                if obj is not None:
                    found.append(obj)
        return found

    def _index(self, key: ObjectKey, obj: KubeObject) -> None:
        self._keys_by_uid[obj["metadata"]["uid"]] = key
        ref = controller_ref(obj)
        if ref is not None and ref.get("uid"):
            self._owned.setdefault((ref["uid"], key[0]), {})[key] = obj
        else:
            self._orphans.setdefault(key[0], {}).setdefault(key[1], {})[key[2]] = None

    def _unindex(self, key: ObjectKey, obj: KubeObject) -> None:
        self._keys_by_uid.pop(obj["metadata"]["uid"], None)
        ref = controller_ref(obj)
        if ref is not None and ref.get("uid"):
            owner = (ref["uid"], key[0])
            owned = self._owned.get(owner)
            if owned is not None:
                owned.pop(key, None)
                if not owned:
                    del self._owned[owner]
        else:
            names = self._orphans.get(key[0], {}).get(key[1])
            if names is not None:
                names.pop(key[2], None)
