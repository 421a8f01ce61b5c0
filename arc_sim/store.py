"""An in-memory Kubernetes API: the object store of the simulated world.

It keeps what controllers rely on: uid, resourceVersion, generation (bumped on spec changes
only), the status subresource, ownerReferences, finalizers, deletionTimestamp with graceful pod
deletion, and garbage collection of dependents (background propagation). Watchers are told of
every change, synchronously, in order.

Every write goes through admission first (`arc_sim.admission`): an object the real API server
would refuse is refused with its status and message (422 Invalid, 400 BadRequest, 404 for a
kind it does not serve), and unknown fields are pruned unless the client asks for strict field
validation.
"""

from __future__ import annotations

import itertools
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Literal

from arc_sim.admission import Admission, FieldValidation, Refused
from arc_sim.json_clone import clone
from arc_sim.schema_check import FieldError
from hooks.clock import Clock, format_time

KubeObject = dict[str, Any]
EventType = Literal["ADDED", "MODIFIED", "DELETED"]
Watcher = Callable[[EventType, KubeObject], None]
"""Told of every change, in order. The object is shared between watchers: read it, copy it
before changing it."""

# Parts of an object that are not its spec: changing them does not bump `generation`.
_NOT_SPEC = ("apiVersion", "kind", "metadata", "status")
_SERVER_METADATA = (
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
)


class StoreError(Exception):
    status = 500


class NotFound(StoreError):
    status = 404


class AlreadyExists(StoreError):
    status = 409


class Conflict(StoreError):
    status = 409


class Invalid(StoreError):
    """422: the object breaks its schema or the kind's rules; `causes` name the fields."""

    status = 422

    def __init__(self, message: str, causes: tuple[FieldError, ...] = ()) -> None:
        super().__init__(message)
        self.causes = causes


class BadRequest(StoreError):
    """400: the body cannot be decoded as the kind, or has unknown fields under strict field
    validation."""

    status = 400

    def __init__(self, message: str, causes: tuple[FieldError, ...] = ()) -> None:
        super().__init__(message)
        self.causes = causes


class NotServed(NotFound):
    """404: the API server does not serve the object's kind in its apiVersion."""


MAX_RECENT_REFUSALS = 200


@dataclass(frozen=True)
class Key:
    kind: str
    namespace: str
    name: str

    def __str__(self) -> str:
        return f"{self.kind} {self.namespace}/{self.name}" if self.namespace else self.kind


def key_of(obj: KubeObject) -> Key:
    metadata = obj.get("metadata") or {}
    return Key(str(obj.get("kind", "")), str(metadata.get("namespace") or ""), metadata["name"])


def group_of(api_version: str) -> str:
    return api_version.split("/", 1)[0] if "/" in api_version else ""


class ObjectStore:
    """Objects are keyed by kind, namespace and name (one version per kind in this world).

    Reads (`get`, `list_objects`) return copies the caller may change. Writes return the stored
    version itself, as watchers receive it: read it, copy it before changing it. Stored objects
    are replaced on every change, never changed in place."""

    def __init__(
        self,
        clock: Clock,
        *,
        status_subresource: Iterable[str] = (),
        admission: Admission | None = None,
    ) -> None:
        self.clock = clock
        self.admission = admission if admission is not None else Admission()
        self.refused = 0
        """Writes the admission refused."""
        self.recent_refusals: deque[str] = deque(maxlen=MAX_RECENT_REFUSALS)
        self.pruned_fields = 0
        """Unknown fields dropped from objects written (the API server's warnings)."""
        self._objects: dict[Key, KubeObject] = {}
        self._kinds: dict[str, dict[Key, KubeObject]] = {}  # the same objects, by kind
        self._versions = itertools.count(1)
        self._uids = itertools.count(1)
        self._watchers: list[Watcher] = []
        self._terminated: set[Key] = set()  # terminating pods whose containers have stopped
        self._dependents: dict[str, set[Key]] = {}  # owner uid -> objects it owns
        self._live_uids: set[str] = set()
        self._status_kinds = set(status_subresource) | {"Pod", "StatefulSet"}

    # --- watching

    def watch(self, watcher: Watcher) -> None:
        self._watchers.append(watcher)

    def enable_status_subresource(self, kind: str) -> None:
        self._status_kinds.add(kind)

    # --- reading (copies: callers never hold the store's own objects)

    def get(self, kind: str, namespace: str, name: str) -> KubeObject | None:
        found = self._objects.get(Key(kind, namespace, name))
        return clone(found) if found is not None else None

    def get_by_uid(self, uid: str) -> KubeObject | None:
        for obj in self._objects.values():
            if obj["metadata"]["uid"] == uid:
                return clone(obj)
        return None

    def list_objects(
        self,
        kind: str,
        namespace: str | None = None,
        label_selector: dict[str, Any] | None = None,
    ) -> list[KubeObject]:
        matching = [
            (key, obj)
            for key, obj in self._kinds.get(kind, {}).items()
            if (namespace is None or key.namespace == namespace)
            and (label_selector is None or selector_matches(label_selector, _labels(obj)))
        ]
        matching.sort(key=lambda item: str(item[0]))
        return [clone(obj) for _, obj in matching]

    def any_object(self, test: Callable[[KubeObject], bool]) -> bool:
        """Whether any stored object passes `test`, which reads the stored object itself (no
        copy: a check made every few virtual seconds over thousands of objects)."""
        return any(test(obj) for obj in self._objects.values())

    def kinds(self) -> set[str]:
        return {kind for kind, objects in self._kinds.items() if objects}

    # --- writing

    def create(self, obj: KubeObject, *, field_validation: FieldValidation = "Warn") -> KubeObject:
        """POST. `field_validation` as the client asks: "Strict" refuses unknown fields (as
        kubectl does), "Warn" prunes them (as other clients get by default)."""
        stored = _as_served(clone(obj))
        metadata = stored.setdefault("metadata", {})
        if isinstance(metadata, dict) and not metadata.get("name") and metadata.get("generateName"):
            metadata["name"] = f"{metadata['generateName']}{next(self._uids):05x}"
        self._admit(lambda: self.admission.admit_create(stored, field_validation))
        key = key_of(stored)
        if key in self._objects:
            raise AlreadyExists(f"{key} already exists")
        for field in _SERVER_METADATA:
            metadata.pop(field, None)
        metadata["uid"] = f"uid-{next(self._uids):06d}"
        metadata["generation"] = 1
        metadata["creationTimestamp"] = format_time(self.clock.now())
        metadata["resourceVersion"] = str(next(self._versions))
        self._objects[key] = self._kinds.setdefault(key.kind, {})[key] = stored
        self._live_uids.add(metadata["uid"])
        self._index_owners(key, None, stored)
        self._notify("ADDED", stored)
        self._collect_if_owners_gone(key, stored)
        return stored

    def update(self, obj: KubeObject, *, field_validation: FieldValidation = "Warn") -> KubeObject:
        """PUT: replaces everything but status (for kinds with the status subresource) and the
        server-owned metadata. A resourceVersion, when given, must match."""
        current = self._current(obj)
        updated = clone(obj)
        if not isinstance(updated.get("metadata"), dict):
            updated["metadata"] = {}
        _as_served(updated)
        self._check_version(current, updated)
        metadata = updated.setdefault("metadata", {})
        for field in _SERVER_METADATA:
            if field in current["metadata"]:
                metadata[field] = current["metadata"][field]
            else:
                metadata.pop(field, None)
        if key_of(current).kind in self._status_kinds:
            if "status" in current:
                updated["status"] = current["status"]
            else:
                updated.pop("status", None)
        if "apiVersion" in current:
            updated["apiVersion"] = current["apiVersion"]  # one version per kind here
        self._admit(lambda: self.admission.admit_update(current, updated, field_validation))
        if _spec(updated) != _spec(current):
            metadata["generation"] = current["metadata"]["generation"] + 1
        return self._replace(current, updated)

    def update_status(self, obj: KubeObject) -> KubeObject:
        current = self._current(obj)
        self._check_version(current, obj)
        # Stored objects are never changed in place, so the new version may share everything
        # but its metadata and status with the old one.
        updated = {key: value for key, value in current.items() if key != "status"}
        updated["metadata"] = dict(current["metadata"])
        if "status" in obj:
            updated["status"] = clone(obj["status"])
        self._admit(lambda: self.admission.admit_status(current, updated))
        return self._replace(current, updated)

    def patch_metadata(
        self,
        kind: str,
        namespace: str,
        name: str,
        *,
        labels: dict[str, str | None] | None = None,
        annotations: dict[str, str | None] | None = None,
        finalizers: list[str] | None = None,
    ) -> KubeObject:
        """A merge patch of labels and annotations (None deletes a key) or the finalizer list."""
        current = self._objects.get(Key(kind, namespace, name))
        if current is None:
            raise NotFound(f"{Key(kind, namespace, name)} not found")
        updated = clone(current)
        metadata = updated["metadata"]
        for field, changes in (("labels", labels), ("annotations", annotations)):
            if changes is None:
                continue
            values = dict(metadata.get(field) or {})
            for item, value in changes.items():
                if value is None:
                    values.pop(item, None)
                else:
                    values[item] = value
            metadata[field] = values
        if finalizers is not None:
            metadata["finalizers"] = list(finalizers)
        _as_served(updated)
        self._admit(lambda: self.admission.admit_metadata(current, updated))
        return self._replace(current, updated)

    def delete(
        self,
        kind: str,
        namespace: str,
        name: str,
        *,
        uid: str | None = None,
        grace_period_seconds: int | None = None,
    ) -> None:
        """Background deletion. Objects with finalizers, and pods (which the kubelet stops
        first), are marked with a deletionTimestamp; the rest go at once. Deleting a
        terminating object again is a no-op, except that a zero grace period removes a pod."""
        key = Key(kind, namespace, name)
        current = self._objects.get(key)
        if current is None:
            raise NotFound(f"{key} not found")
        metadata = current["metadata"]
        if uid is not None and metadata["uid"] != uid:
            raise Conflict(f"{key}: uid precondition failed")
        graceful = kind == "Pod" and grace_period_seconds != 0
        if metadata.get("deletionTimestamp"):
            if kind == "Pod" and grace_period_seconds == 0:
                self._terminated.add(key)  # force deletion: only finalizers remain
                self._remove_if_done(key)
            return
        if not metadata.get("finalizers") and not graceful:
            self._remove(key)
            return
        updated = clone(current)
        updated["metadata"]["deletionTimestamp"] = format_time(self.clock.now())
        # As the API server's BeforeDelete: a controller must see that its object is going
        # (Metacontroller's customize cache is keyed by generation, for one).
        generation = updated["metadata"].get("generation")
        if isinstance(generation, int) and generation > 0:
            updated["metadata"]["generation"] = generation + 1
        if kind == "Pod":
            grace = grace_period_seconds
            if grace is None:
                grace = (current.get("spec") or {}).get("terminationGracePeriodSeconds", 30)
            if grace < 0:
                grace = 1  # as the API server's CheckGracefulDelete: a negative period is 1
            updated["metadata"]["deletionGracePeriodSeconds"] = grace
            if grace == 0:
                self._terminated.add(key)
        self._replace(current, updated)
        self._remove_if_done(key)

    def pod_terminated(self, namespace: str, name: str) -> None:
        """The kubelet has stopped every container of a terminating pod."""
        key = Key("Pod", namespace, name)
        current = self._objects.get(key)
        if current is None or not current["metadata"].get("deletionTimestamp"):
            return
        self._terminated.add(key)
        self._remove_if_done(key)

    def remove_finalizer(self, kind: str, namespace: str, name: str, finalizer: str) -> None:
        current = self._objects.get(Key(kind, namespace, name))
        if current is None:
            return
        remaining = [f for f in current["metadata"].get("finalizers", []) if f != finalizer]
        self.patch_metadata(kind, namespace, name, finalizers=remaining)

    # --- internals

    def _admit(self, admit: Callable[[], list[str]]) -> None:
        """Run one admission; a refusal becomes the store's error, with the API's status."""
        try:
            warnings = admit()
        except Refused as refused:
            self.refused += 1
            self.recent_refusals.append(str(refused))
            error: StoreError
            if refused.status == 404:
                error = NotServed(str(refused))
            elif refused.status == 400:
                error = BadRequest(str(refused), refused.causes)
            else:
                error = Invalid(str(refused), refused.causes)
            raise error from None
        self.pruned_fields += len(warnings)

    def _current(self, obj: KubeObject) -> KubeObject:
        key = key_of(obj)
        current = self._objects.get(key)
        if current is None:
            raise NotFound(f"{key} not found")
        return current

    @staticmethod
    def _check_version(current: KubeObject, incoming: KubeObject) -> None:
        wanted = (incoming.get("metadata") or {}).get("resourceVersion")
        if wanted and wanted != current["metadata"]["resourceVersion"]:
            raise Conflict(f"{key_of(current)}: the object has been modified")

    def _replace(self, current: KubeObject, updated: KubeObject) -> KubeObject:
        if updated == current:
            return current
        key = key_of(current)
        updated["metadata"]["resourceVersion"] = str(next(self._versions))
        self._objects[key] = self._kinds[key.kind][key] = updated
        self._index_owners(key, current, updated)
        self._notify("MODIFIED", updated)
        self._remove_if_done(key)
        return updated

    def _remove_if_done(self, key: Key) -> None:
        current = self._objects.get(key)
        if current is None:
            return
        metadata = current["metadata"]
        if not metadata.get("deletionTimestamp") or metadata.get("finalizers"):
            return
        if key.kind == "Pod" and key not in self._terminated:
            return
        self._remove(key)

    def _remove(self, key: Key) -> None:
        removed = self._objects.pop(key)
        del self._kinds[key.kind][key]
        self._live_uids.discard(removed["metadata"]["uid"])
        self._terminated.discard(key)
        self._index_owners(key, removed, None)
        self._notify("DELETED", removed)
        self._collect_dependents(removed["metadata"]["uid"])

    def _collect_dependents(self, owner_uid: str) -> None:
        """Garbage collection, background propagation: dependents of a removed owner go."""
        for key in sorted(self._dependents.pop(owner_uid, set()), key=str):
            dependent = self._objects.get(key)
            if dependent is not None and not dependent["metadata"].get("deletionTimestamp"):
                self.delete(key.kind, key.namespace, key.name)

    def _collect_if_owners_gone(self, key: Key, obj: KubeObject) -> None:
        """Garbage collection of an object created with owners already gone (a controller that
        acted on an old view): the collector deletes it, as it does dependents of a removed
        owner."""
        refs = obj["metadata"].get("ownerReferences") or ()
        owners = [ref["uid"] for ref in refs if ref.get("uid")]
        gone = not any(uid in self._live_uids for uid in owners)
        if owners and gone and key in self._objects:
            self.delete(key.kind, key.namespace, key.name)

    def _index_owners(self, key: Key, before: KubeObject | None, after: KubeObject | None) -> None:
        for obj, add in ((before, False), (after, True)):
            if obj is None:
                continue
            for ref in obj["metadata"].get("ownerReferences") or []:
                owner = ref.get("uid")
                if not owner:
                    continue
                if add:
                    self._dependents.setdefault(owner, set()).add(key)
                else:
                    self._dependents.get(owner, set()).discard(key)

    def _notify(self, event: EventType, obj: KubeObject) -> None:
        # Watchers get the stored version itself: stored objects are replaced, never changed in
        # place, and watchers only read (they copy before changing anything).
        for watcher in list(self._watchers):
            watcher(event, obj)


def _labels(obj: KubeObject) -> dict[str, str]:
    return dict((obj.get("metadata") or {}).get("labels") or {})


def _spec(obj: KubeObject) -> dict[str, Any]:
    return {k: v for k, v in obj.items() if k not in _NOT_SPEC}


def selector_matches(selector: dict[str, Any], labels: dict[str, str]) -> bool:
    """A metav1.LabelSelector (matchLabels and matchExpressions); `{}` selects everything."""
    match_labels = selector.get("matchLabels") or {}
    # Every pair present in `labels` (a view comparison: no loop in Python; a parent's sync
    # matches each of its thousands of children).
    if not match_labels.items() <= labels.items():
        return False
    for expression in selector.get("matchExpressions") or []:
        label = expression.get("key", "")
        operator = expression.get("operator")
        values = expression.get("values") or []
        present = label in labels
        if operator == "In" and (not present or labels[label] not in values):
            return False
        if operator == "NotIn" and present and labels[label] in values:
            return False
        if operator == "Exists" and not present:
            return False
        if operator == "DoesNotExist" and present:
            return False
    return True


_BUILT_IN_GROUPS = frozenset(
    {"", "apps", "batch", "policy", "rbac.authorization.k8s.io", "coordination.k8s.io"}
)
_OMITTED_WHEN_EMPTY = ("data", "stringData", "binaryData")
_METADATA_OMITTED_WHEN_EMPTY = ("labels", "annotations", "finalizers", "ownerReferences")


def _as_served(obj: KubeObject) -> KubeObject:
    """An object as the API server stores it: Go types mark these fields `omitempty` (a
    built-in kind's data maps, and every kind's ObjectMeta), so an empty map or list written
    is read back absent. (A client that writes `data: {}` and compares what it reads with what
    it wrote sees a difference every time, as Metacontroller does: it then updates the object
    at every sync.)"""
    api_version = obj.get("apiVersion")
    group = api_version.rpartition("/")[0] if isinstance(api_version, str) else None
    if group in _BUILT_IN_GROUPS:
        for field in _OMITTED_WHEN_EMPTY:
            if obj.get(field) in ({}, []):
                del obj[field]
    # Every kind's metadata is an ObjectMeta, custom resources' too.
    metadata = obj.get("metadata")
    if isinstance(metadata, dict):
        for field in _METADATA_OMITTED_WHEN_EMPTY:
            if metadata.get(field) in ({}, []):
                del metadata[field]
    return obj
