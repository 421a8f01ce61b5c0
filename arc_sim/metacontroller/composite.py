"""A CompositeController: one parent type, the children it owns, and their hooks.

`sync` follows Metacontroller's `syncParentObject` (`pkg/controller/composite/controller.go`):
finalizer, claim, related objects, the hook, a requested resync, the finalizer's removal, the
selector check, the children, status.
"""

from __future__ import annotations

from typing import Any

from arc_sim.metacontroller.cache import ObjectKey, controller_ref
from arc_sim.metacontroller.children import (
    ChildMap,
    Claim,
    child_map,
    claim_children,
    in_namespace,
    labels_of,
    manage_children,
    with_metadata_entry,
)
from arc_sim.metacontroller.context import Context
from arc_sim.metacontroller.customize import RelatedObjects
from arc_sim.metacontroller.failures import SyncFailure
from arc_sim.metacontroller.finalizers import (
    has_finalizer,
    is_deleting,
    remove_finalizer,
    should_finalize,
    sync_finalizer,
)
from arc_sim.metacontroller.identity_memo import IdentityMemo
from arc_sim.metacontroller.spec import CompositeSpec
from arc_sim.metacontroller.wire import (
    DecodedChildren,
    EncodedMembers,
    composite_request,
    encode,
    read_composite_answer,
    request_maps,
)
from arc_sim.metacontroller.workqueue import WorkQueue
from arc_sim.store import (
    Conflict,
    EventType,
    KubeObject,
    NotFound,
    selector_matches,
)

ParentKey = tuple[str, str]
"""Namespace ("" when cluster-scoped) and name."""

CONTROLLER_UID_LABEL = "controller-uid"
_STATUS_ATTEMPTS = 4
"""client-go's retry.DefaultBackoff (Steps: 4) in `AtomicStatusUpdate`; its waits are not
modelled."""


_PARENTS_REMEMBERED = 10_000
"""Parents whose last desired children, and generated selector, a controller remembers."""


class CompositeController:
    def __init__(self, spec: CompositeSpec, context: Context) -> None:
        self.spec = spec
        self.context = context
        self.queue: WorkQueue[ParentKey] = WorkQueue(
            context.loop,
            self._sync,
            workers=context.workers,
            sync_seconds=context.sync_seconds,
            name=spec.name,
        )
        self._controller_json = encode(spec.controller)
        self._encoded = EncodedMembers()
        self._decoded = DecodedChildren()
        self._claims: IdentityMemo[Claim] = IdentityMemo()
        self._generated_selectors: dict[str, dict[str, Any]] = {}
        self._last_desired: dict[
            str, tuple[list[KubeObject], dict[str, Any], ChildMap, tuple[str, ...]]
        ] = {}
        self.related: RelatedObjects[ParentKey] = RelatedObjects(
            spec.hooks.customize,
            self._controller_json,
            context.hooks,
            context.catalog,
            context.cache,
            context.loop.clock,
        )
        self._parent_kind = spec.parent.kind
        self._child_kinds = {rule.type.kind for rule in spec.children}

    @property
    def name(self) -> str:
        return self.spec.name

    def kinds(self) -> set[str]:
        return {self._parent_kind, *self._child_kinds}

    def enqueue_all(self) -> None:
        for parent in self.context.cache.objects(self._parent_kind):
            self.queue.add(_parent_key(parent))

    # --- triggers

    def observe(self, event: EventType, obj: KubeObject, previous: KubeObject | None) -> None:
        kind = obj.get("kind", "")
        if kind == self._parent_kind:
            self._parent_changed(event, obj, previous)
        if kind in self._child_kinds:
            self._child_changed(event, obj, previous)
        if self.related.watches(kind):
            changed = (obj,) if previous is None else (obj, previous)
            for key in self.related.parents_selecting(changed):
                self.queue.add(key)

    def _parent_changed(
        self, event: EventType, parent: KubeObject, previous: KubeObject | None
    ) -> None:
        if (
            event == "MODIFIED"
            and previous is not None
            and self.spec.ignore_status_changes
            and only_status_changed(previous, parent)
        ):
            return
        self.queue.add(_parent_key(parent))

    def _child_changed(
        self, event: EventType, child: KubeObject, previous: KubeObject | None
    ) -> None:
        namespace = child["metadata"].get("namespace") or ""
        ref = controller_ref(child)
        if previous is not None:
            old_ref = controller_ref(previous)
            if old_ref is not None and old_ref != ref:
                self._enqueue_owner(namespace, old_ref)
        if ref is not None:
            self._enqueue_owner(namespace, ref)
            return
        if event == "DELETED":
            return
        if (
            previous is None
            or controller_ref(previous) is not None
            or labels_of(previous) != labels_of(child)
        ):
            for key in self._parents_matching(child):
                self.queue.add(key)

    def _enqueue_owner(self, namespace: str, ref: dict[str, Any]) -> None:
        if ref.get("kind") != self._parent_kind:
            return
        parent_namespace = namespace if self.spec.parent.namespaced else ""
        parent = self.context.cache.get(self._parent_kind, parent_namespace, ref.get("name", ""))
        if parent is not None and parent["metadata"]["uid"] == ref.get("uid"):
            self.queue.add(_parent_key(parent))

    def _parents_matching(self, orphan: KubeObject) -> list[ParentKey]:
        """Parents that would adopt this orphan."""
        labels = labels_of(orphan)
        cache = self.context.cache
        if self.spec.generate_selector:
            parent = cache.get_by_uid(labels.get(CONTROLLER_UID_LABEL, ""))
            candidates = [parent] if parent is not None else []
        else:
            namespace = orphan["metadata"].get("namespace") or ""
            candidates = list(
                cache.objects(self._parent_kind, namespace if self.spec.parent.namespaced else None)
            )
        found = []
        for parent in candidates:
            if parent.get("kind") != self._parent_kind:
                continue
            if self.spec.parent.namespaced and (parent["metadata"].get("namespace") or "") != (
                orphan["metadata"].get("namespace") or ""
            ):
                continue
            selector = self._selector_or_none(parent)
            if selector is not None and selector_matches(selector, labels):
                found.append(_parent_key(parent))
        return found

    # --- the sync

    def _sync(self, key: ParentKey) -> None:
        parent = self.context.cache.get(self._parent_kind, *key)
        if parent is None:
            self.related.forget(key)
            self.queue.forget(key)
            return
        self.context.attempt(
            self.name,
            self.queue,
            key,
            _describe(key),
            lambda: self._sync_parent(key, parent),
        )

    def _sync_parent(self, key: ParentKey, parent: KubeObject) -> None:
        spec, context = self.spec, self.context
        selected = spec.parent_selector is None or selector_matches(
            spec.parent_selector, labels_of(parent)
        )
        if not selected and not has_finalizer(parent, spec.finalizer):
            return
        finalize_hook = spec.hooks.finalize
        parent = sync_finalizer(context.store, parent, spec.finalizer, finalize_hook is not None)
        if not selected and not has_finalizer(parent, spec.finalizer):
            return  # the finalizer was just removed (no finalize hook any more)
        selector = self._selector(parent)
        observed = claim_children(
            context.store,
            context.cache,
            parent,
            namespaced_parent=spec.parent.namespaced,
            rules=spec.children,
            selector=selector,
            claims=self._claims,
        )
        related = self.related.select(key, parent)

        finalizing = finalize_hook is not None and (is_deleting(parent) or not selected)
        hook = finalize_hook if finalizing else spec.hooks.sync
        if hook is None:
            raise SyncFailure("invalid", "the controller has no sync hook")
        namespace = parent["metadata"].get("namespace") or ""
        _, related_map = request_maps({}, related, parent_namespace=namespace, v2=hook.v2)
        children = self._encoded.children_map(observed, parent_namespace=namespace, v2=hook.v2)
        body = composite_request(
            self._controller_json, parent, children, related_map, finalizing, self._encoded
        )
        answer = read_composite_answer(
            context.hooks.call(hook, body), hook.strict, self._decoded, parent["metadata"]["uid"]
        )
        wanted = in_namespace(answer.children, namespace)
        if answer.resync_after > 0:
            self.queue.add_after(key, answer.resync_after)
        if answer.finalized:
            parent = remove_finalizer(context.store, parent, spec.finalizer)
        desired, errors = self._desired(parent, selector, wanted)
        if not is_deleting(parent) or should_finalize(parent, spec.finalizer):
            errors += self._apply(parent, observed, desired)
        if not self._write_status(parent, answer.status):
            return  # Metacontroller swallows a status conflict or 404, and the apply errors too
        if errors:
            raise SyncFailure("apply", "; ".join(errors))

    def _desired(
        self, parent: KubeObject, selector: dict[str, Any], children: list[KubeObject]
    ) -> tuple[ChildMap, list[str]]:
        """The desired children by group and key, and the ones that cannot be applied. A
        parent answered with the very list of its last answer (`DecodedChildren`) and the same
        selector has the same desired children: a set of thousands whose status changed is
        not looked through again."""
        uid = parent["metadata"]["uid"]
        last = self._last_desired.get(uid)
        if last is not None and last[0] is children and last[1] == selector:
            return last[2], list(last[3])
        desired, errors = child_map(self._checked_children(parent, selector, children))
        if len(self._last_desired) >= _PARENTS_REMEMBERED:
            self._last_desired.clear()
        self._last_desired[uid] = (children, selector, desired, tuple(errors))
        return desired, errors

    def _checked_children(
        self, parent: KubeObject, selector: dict[str, Any], children: list[KubeObject]
    ) -> list[KubeObject]:
        """Desired children with the generated selector's label, all matching the selector.
        The answer's objects are not changed (`DecodedChildren` shares them): a child given
        the label is a copy."""
        uid = parent["metadata"]["uid"]
        if self.spec.generate_selector:
            children = [
                with_metadata_entry(child, "labels", CONTROLLER_UID_LABEL, uid, overwrite=False)
                for child in children
            ]
        for child in children:
            metadata = child["metadata"]
            if not selector_matches(selector, metadata.get("labels") or {}):
                raise SyncFailure(
                    "invalid",
                    f"labels on desired child {child['kind']} {metadata.get('name')} "
                    "don't match the parent's selector",
                )
        return children

    def _apply(self, parent: KubeObject, observed: ChildMap, desired: ChildMap) -> list[str]:
        context = self.context
        return manage_children(
            context.store, context.catalog, self.spec.strategies, parent, observed, desired
        )

    def _selector(self, parent: KubeObject) -> dict[str, Any]:
        selector = self._selector_or_none(parent)
        if selector is None:
            raise SyncFailure(
                "invalid", ".spec.selector must have either matchLabels, matchExpressions, or both"
            )
        return selector

    def _selector_or_none(self, parent: KubeObject) -> dict[str, Any] | None:
        if self.spec.generate_selector:
            # The same object for every sync of the parent: what claiming found under it
            # holds without comparing (`children.claim_children`).
            uid = parent["metadata"]["uid"]
            generated = self._generated_selectors.get(uid)
            if generated is None:
                if len(self._generated_selectors) >= _PARENTS_REMEMBERED:
                    self._generated_selectors.clear()
                generated = {"matchLabels": {CONTROLLER_UID_LABEL: uid}}
                self._generated_selectors[uid] = generated
            return generated
        selector = (parent.get("spec") or {}).get("selector")
        if not isinstance(selector, dict):
            return None
        if not selector.get("matchLabels") and not selector.get("matchExpressions"):
            return None
        return selector

    def _write_status(self, parent: KubeObject, status: dict[str, Any] | None) -> bool:
        """Replace status (with observedGeneration), and only when it changes, on the object
        read live (`AtomicStatusUpdate`). False when it gave up: the parent is gone or replaced,
        or the update kept conflicting."""
        desired = dict(status or {})
        desired["observedGeneration"] = parent["metadata"].get("generation")
        store = self.context.store
        metadata = parent["metadata"]
        for _ in range(_STATUS_ATTEMPTS):
            current = store.get(*_object_key(parent))
            if current is None or current["metadata"]["uid"] != metadata["uid"]:
                return False
            if current.get("status") == desired:
                return True
            try:
                store.update_status(
                    {
                        "apiVersion": current.get("apiVersion"),
                        "kind": current["kind"],
                        "metadata": current["metadata"],
                        "status": desired,
                    }
                )
                return True
            except Conflict:
                continue
            except NotFound:
                return False
        return False


def only_status_changed(old: KubeObject, new: KubeObject) -> bool:
    """What `ignoreStatusChanges` ignores (`updateParentObject`): an update that keeps the
    generation, labels and annotations, of a parent not being deleted."""
    old_metadata, new_metadata = old["metadata"], new["metadata"]
    return (
        old_metadata.get("generation") == new_metadata.get("generation")
        and old_metadata.get("labels") == new_metadata.get("labels")
        and old_metadata.get("annotations") == new_metadata.get("annotations")
        and not new_metadata.get("deletionTimestamp")
    )


def _parent_key(parent: KubeObject) -> ParentKey:
    metadata = parent["metadata"]
    return metadata.get("namespace") or "", metadata["name"]


def _object_key(obj: KubeObject) -> ObjectKey:
    metadata = obj["metadata"]
    return obj["kind"], metadata.get("namespace") or "", metadata["name"]


def _describe(key: ParentKey) -> str:
    return f"{key[0]}/{key[1]}" if key[0] else key[1]
