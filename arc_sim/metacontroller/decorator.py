"""A DecoratorController: objects chosen by label and annotation selectors get attachments
(children it creates, marked with its name) and hook-chosen labels, annotations and status.

Unlike a CompositeController it adopts nothing, writes no observedGeneration, keeps status when
the hook returns none, and applies attachments even in the pass that finalizes.
"""

from __future__ import annotations

from typing import Any

from arc_sim.metacontroller.cache import (
    ObjectKey,
    controller_ref,
    object_key,
    same_but_status,
)
from arc_sim.metacontroller.children import (
    ChildMap,
    child_map,
    in_namespace,
    manage_children,
    with_metadata_entry,
)
from arc_sim.metacontroller.conflicts import OTHER_WRITE_SEEN_AFTER, InjectedConflict
from arc_sim.metacontroller.context import Context
from arc_sim.metacontroller.customize import RelatedObjects
from arc_sim.metacontroller.failures import SyncFailure
from arc_sim.metacontroller.finalizers import (
    has_finalizer,
    is_deleting,
    should_finalize,
    sync_finalizer,
)
from arc_sim.metacontroller.spec import DecoratedRule, DecoratorSpec
from arc_sim.metacontroller.wire import (
    DecodedChildren,
    DecoratorAnswer,
    EncodedMembers,
    decorator_request,
    encode,
    read_decorator_answer,
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

DECORATOR_ANNOTATION = "metacontroller.k8s.io/decorator-controller"


class DecoratorController:
    def __init__(self, spec: DecoratorSpec, context: Context) -> None:
        self.spec = spec
        self.context = context
        self.queue: WorkQueue[ObjectKey] = WorkQueue(
            context.loop,
            self._sync,
            workers=context.workers,
            sync_seconds=context.sync_seconds,
            name=spec.name,
        )
        self._controller_json = encode(spec.controller)
        self._encoded = EncodedMembers()
        self._decoded = DecodedChildren()
        self.related: RelatedObjects[ObjectKey] = RelatedObjects(
            spec.hooks.customize,
            self._controller_json,
            context.hooks,
            context.catalog,
            context.cache,
            context.loop.clock,
        )
        self._rules_by_kind: dict[str, list[DecoratedRule]] = {}
        for rule in spec.resources:
            self._rules_by_kind.setdefault(rule.type.kind, []).append(rule)
        self._attachment_kinds = {rule.type.kind for rule in spec.attachments}

    @property
    def name(self) -> str:
        return self.spec.name

    def kinds(self) -> set[str]:
        return set(self._rules_by_kind) | self._attachment_kinds

    def enqueue_all(self) -> None:
        for kind in self._rules_by_kind:
            for obj in self.context.cache.objects(kind):
                if self._wanted(obj):
                    self.queue.add(object_key(obj))

    # --- which objects are decorated

    def _matching_rule(self, obj: KubeObject) -> DecoratedRule | None:
        metadata = obj["metadata"]
        for rule in self._rules_by_kind.get(obj.get("kind", ""), ()):
            if rule.label_selector is not None and not selector_matches(
                rule.label_selector, metadata.get("labels") or {}
            ):
                continue
            if rule.annotation_selector is not None and not selector_matches(
                _as_label_selector(rule.annotation_selector), metadata.get("annotations") or {}
            ):
                continue
            return rule
        return None

    def _wanted(self, obj: KubeObject) -> bool:
        return self._matching_rule(obj) is not None or has_finalizer(obj, self.spec.finalizer)

    # --- triggers

    def observe(self, event: EventType, obj: KubeObject, previous: KubeObject | None) -> None:
        kind = obj.get("kind", "")
        if kind in self._rules_by_kind and event != "DELETED":
            self._decorated_changed(obj, previous)
        if kind in self._attachment_kinds:
            self._attachment_changed(obj, previous)
        if self.related.watches(kind):
            changed = (obj,) if previous is None else (obj, previous)
            for key in self.related.parents_selecting(changed):
                self.queue.add(key)
        if kind in self._rules_by_kind and event == "DELETED":
            self.related.forget(object_key(obj))

    def _decorated_changed(self, obj: KubeObject, previous: KubeObject | None) -> None:
        rule = self._matching_rule(obj)
        if rule is None and not has_finalizer(obj, self.spec.finalizer):
            return
        if (
            previous is not None
            and rule is not None
            and rule.ignore_status_changes
            and same_but_status(previous, obj)
        ):
            return
        self.queue.add(object_key(obj))

    def _attachment_changed(self, obj: KubeObject, previous: KubeObject | None) -> None:
        for version in (obj, previous):
            if version is None:
                continue
            annotations = version["metadata"].get("annotations") or {}
            ref = controller_ref(version)
            if ref is None or annotations.get(DECORATOR_ANNOTATION) != self.name:
                continue
            kind = ref.get("kind", "")
            if kind not in self._rules_by_kind:
                continue
            namespace = version["metadata"].get("namespace") or ""
            owner = self.context.cache.get(kind, namespace, ref.get("name", ""))
            if owner is None:
                owner = self.context.cache.get(kind, "", ref.get("name", ""))
            if owner is not None and owner["metadata"]["uid"] == ref.get("uid"):
                self.queue.add(object_key(owner))

    # --- the sync

    def _sync(self, key: ObjectKey) -> None:
        obj = self.context.cache.get(*key)
        if obj is None:
            self.related.forget(key)
            self.queue.forget(key)
            return
        self.context.attempt(
            self.name,
            self.queue,
            key,
            _describe(key),
            lambda: self._sync_object(key, obj),
        )

    def _sync_object(self, key: ObjectKey, obj: KubeObject) -> None:
        spec, context = self.spec, self.context
        finalizer = spec.finalizer
        selected = self._matching_rule(obj) is not None
        if not selected and not has_finalizer(obj, finalizer):
            return
        finalize_hook = spec.hooks.finalize
        obj = sync_finalizer(context.store, obj, finalizer, finalize_hook is not None)
        if not selected and not has_finalizer(obj, finalizer):
            return
        observed = self._attachments(obj)
        related = self.related.select(key, obj)

        finalizing = finalize_hook is not None and (is_deleting(obj) or not selected)
        hook = finalize_hook if finalizing else spec.hooks.sync
        if hook is None:
            raise SyncFailure("invalid", "the controller has no sync hook")
        namespace = obj["metadata"].get("namespace") or ""
        children, related_map = request_maps(
            observed, related, parent_namespace=namespace, v2=hook.v2
        )
        body = decorator_request(
            self._controller_json, obj, children, related_map, finalizing, self._encoded
        )
        answer = read_decorator_answer(context.hooks.call(hook, body), hook.strict, self._decoded)
        attachments = [
            with_metadata_entry(a, "annotations", DECORATOR_ANNOTATION, self.name, overwrite=True)
            for a in answer.attachments
        ]
        attachments = in_namespace(attachments, namespace)
        if answer.resync_after > 0:
            self.queue.add_after(key, answer.resync_after)
        if not self._update_object(key, obj, answer):
            return  # a conflict or the object gone: nothing more until the next event
        desired, errors = child_map(attachments)
        if not is_deleting(obj) or should_finalize(obj, finalizer):
            errors += manage_children(
                context.store, context.catalog, spec.strategies, obj, observed, desired
            )
        if errors:
            raise SyncFailure("apply", "; ".join(errors))

    def _attachments(self, obj: KubeObject) -> ChildMap:
        """Children it controls that carry this controller's annotation."""
        metadata = obj["metadata"]
        cache = self.context.cache
        observed: ChildMap = {}
        for rule in self.spec.attachments:
            members = observed.setdefault(rule.type.group_key, {})
            for child in cache.controlled_by(metadata["uid"], rule.type.kind):
                child_metadata = child["metadata"]
                annotations = child_metadata.get("annotations") or {}
                if annotations.get(DECORATOR_ANNOTATION) != self.name:
                    continue
                child_namespace = child_metadata.get("namespace") or ""
                if metadata.get("namespace") and child_namespace != metadata["namespace"]:
                    continue
                members[child_namespace, child_metadata["name"]] = child
        return observed

    def _update_object(self, key: ObjectKey, obj: KubeObject, answer: DecoratorAnswer) -> bool:
        """Labels and annotations (null deletes a key), status (null keeps it) and the
        finalizer when finalized, written only when something changes, as Metacontroller does:
        on the object as this sync read it, status first, then the rest. A 409 Conflict (the
        object changed since) or a 404 ends the sync without error and without managing the
        attachments: the next event or resync brings it back, and a finalize hook that answered
        `finalized` is called again. Returns whether the sync goes on."""
        store = self.context.store
        metadata = _changed_metadata(obj["metadata"], answer, self.spec.finalizer)
        status_changed = answer.status is not None and obj.get("status") != answer.status
        if metadata is None and not status_changed:
            return True
        updated = {**obj, "metadata": dict(metadata or obj["metadata"])}
        if answer.status is not None:
            updated["status"] = answer.status
        try:
            if status_changed:
                written = store.update_status(updated)
                updated["metadata"]["resourceVersion"] = written["metadata"]["resourceVersion"]
            if metadata is not None:
                self.context.conflicts.strike(f"{_describe(object_key(obj))} update")
            store.update(updated)
        except InjectedConflict:
            self.queue.add_after(key, OTHER_WRITE_SEEN_AFTER)  # the other write's event
            return False
        except (Conflict, NotFound):
            return False
        return True


def _changed_metadata(
    metadata: dict[str, Any], answer: DecoratorAnswer, finalizer: str
) -> dict[str, Any] | None:
    updated = dict(metadata)
    changed = False
    for field, changes in (("labels", answer.labels), ("annotations", answer.annotations)):
        if not changes:
            continue
        values = dict(metadata.get(field) or {})
        for name, value in changes.items():
            if value is None:
                if name in values:
                    del values[name]
                    changed = True
            elif values.get(name) != value:
                values[name] = value
                changed = True
        updated[field] = values
    finalizers = metadata.get("finalizers") or []
    if answer.finalized and finalizer in finalizers:
        updated["finalizers"] = [f for f in finalizers if f != finalizer]
        changed = True
    return updated if changed else None


def _as_label_selector(annotation_selector: dict[str, Any]) -> dict[str, Any]:
    return {
        "matchLabels": annotation_selector.get("matchAnnotations") or {},
        "matchExpressions": annotation_selector.get("matchExpressions") or [],
    }


def _describe(key: ObjectKey) -> str:
    kind, namespace, name = key
    return f"{kind} {namespace}/{name}" if namespace else f"{kind} {name}"
