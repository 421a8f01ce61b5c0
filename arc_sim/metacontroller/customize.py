"""The customize hook: which related objects a parent's sync sees.

The hook's rules are cached per parent (uid, generation) for 20 minutes, so it is called again
only when the parent's spec changes or the entry expires. A change to an object a cached rule
selects enqueues that parent.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Generic, TypeVar

from arc_sim.metacontroller.cache import ObjectCache
from arc_sim.metacontroller.failures import SyncFailure
from arc_sim.metacontroller.resources import ResourceCatalog, ResourceType, UnknownResource
from arc_sim.metacontroller.spec import Hook
from arc_sim.metacontroller.webhook import HookCaller
from arc_sim.metacontroller.wire import customize_request, read_customize_answer
from arc_sim.store import KubeObject, selector_matches
from hooks.clock import Clock

K = TypeVar("K", bound=Hashable)

CACHE_SECONDS = 20 * 60


@dataclass(frozen=True, slots=True)
class RelatedRule:
    type: ResourceType
    label_selector: dict[str, Any] | None
    namespace_selector: dict[str, Any] | None
    namespace: str
    names: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class _Entry:
    uid: str
    generation: int
    expires: datetime
    rules: tuple[RelatedRule, ...]
    namespace: str
    """The parent's namespace ("" when cluster-scoped)."""


RelatedGroups = list[tuple[str, list[KubeObject]]]
"""Group key -> objects, one entry per rule (rules of one type share a group)."""


class RelatedObjects(Generic[K]):
    def __init__(
        self,
        hook: Hook | None,
        controller_json: bytes,
        caller: HookCaller,
        catalog: ResourceCatalog,
        cache: ObjectCache,
        clock: Clock,
    ) -> None:
        self.hook = hook
        self._controller_json = controller_json
        self._caller = caller
        self._catalog = catalog
        self._cache = cache
        self._clock = clock
        self._entries: dict[K, _Entry] = {}
        self._interested: dict[str, dict[K, None]] = {}
        """Kind -> parents whose cached rules select objects of that kind."""

    def select(self, key: K, parent: KubeObject) -> RelatedGroups:
        if self.hook is None:
            return []
        entry = self._entry(key, parent)
        return [(rule.type.group_key, self._objects(rule, entry.namespace)) for rule in entry.rules]

    def watches(self, kind: str) -> bool:
        return bool(self._interested.get(kind))

    def parents_selecting(self, objects: Iterable[KubeObject]) -> list[K]:
        """Parents whose cached rules select any of `objects` (an object before and after)."""
        found: dict[K, None] = {}
        now = self._clock.now()
        for obj in objects:
            for key in self._interested.get(obj.get("kind", ""), ()):
                entry = self._entries.get(key)
                if entry is None or entry.expires <= now or key in found:
                    continue
                if any(self._selects(rule, entry.namespace, obj) for rule in entry.rules):
                    found[key] = None
        return list(found)

    def forget(self, key: K) -> None:
        entry = self._entries.pop(key, None)
        if entry is not None:
            for rule in entry.rules:
                self._interested.get(rule.type.kind, {}).pop(key, None)

    # --- rules

    def _entry(self, key: K, parent: KubeObject) -> _Entry:
        assert self.hook is not None
        metadata = parent["metadata"]
        now = self._clock.now()
        entry = self._entries.get(key)
        if (
            entry is not None
            and entry.uid == metadata["uid"]
            and entry.generation == metadata.get("generation")
            and entry.expires > now
        ):
            return entry
        self.forget(key)
        body = customize_request(self._controller_json, parent)
        raw_rules = read_customize_answer(self._caller.call(self.hook, body), self.hook.strict)
        namespace = metadata.get("namespace") or ""
        rules = tuple(self._rule(raw, namespace) for raw in raw_rules)
        entry = _Entry(
            uid=metadata["uid"],
            generation=metadata.get("generation", 0),
            expires=now + timedelta(seconds=CACHE_SECONDS),
            rules=rules,
            namespace=namespace,
        )
        self._entries[key] = entry
        for rule in rules:
            self._interested.setdefault(rule.type.kind, {})[key] = None
        return entry

    def _rule(self, raw: dict[str, Any], parent_namespace: str) -> RelatedRule:
        assert self.hook is not None
        try:
            related_type = self._catalog.resource(
                raw.get("apiVersion", ""), raw.get("resource", "")
            )
        except UnknownResource as error:
            raise SyncFailure("invalid", f"related resource: {error}") from None
        rule = RelatedRule(
            type=related_type,
            label_selector=raw.get("labelSelector"),
            namespace_selector=raw.get("namespaceSelector"),
            namespace=raw.get("namespace") or "",
            names=tuple(raw.get("names") or ()),
        )
        problem = _rule_problem(rule, parent_namespace, v2=self.hook.v2)
        if problem:
            raise SyncFailure("invalid", f"related {related_type.resource}: {problem}")
        return rule

    # --- selection

    def _objects(self, rule: RelatedRule, parent_namespace: str) -> list[KubeObject]:
        kind = rule.type.kind
        namespaces = self._namespaces(rule, parent_namespace)
        if rule.names:
            if namespaces is None:
                return [o for o in self._cache.objects(kind) if o["metadata"]["name"] in rule.names]
            found = (self._cache.get(kind, ns, name) for ns in namespaces for name in rule.names)
            return [obj for obj in found if obj is not None]
        selector = rule.label_selector
        if selector is None:
            return []  # no names and no selector selects nothing, as in Metacontroller
        candidates: Iterable[KubeObject] = (
            self._cache.objects(kind)
            if namespaces is None
            else (obj for ns in namespaces for obj in self._cache.objects(kind, ns))
        )
        return [obj for obj in candidates if _labels_match(selector, obj)]

    def _selects(self, rule: RelatedRule, parent_namespace: str, obj: KubeObject) -> bool:
        metadata = obj["metadata"]
        if obj.get("kind") != rule.type.kind:
            return False
        namespaces = self._namespaces(rule, parent_namespace)
        if namespaces is not None and (metadata.get("namespace") or "") not in namespaces:
            return False
        if rule.names:
            return metadata["name"] in rule.names
        return rule.label_selector is not None and _labels_match(rule.label_selector, obj)

    def _namespaces(self, rule: RelatedRule, parent_namespace: str) -> list[str] | None:
        """The namespaces a rule looks in; None means all (or a cluster-scoped type)."""
        if not rule.type.namespaced:
            return None
        if rule.namespace:
            return [rule.namespace]
        if rule.namespace_selector is not None:
            selector = rule.namespace_selector
            return [
                ns["metadata"]["name"]
                for ns in self._cache.objects("Namespace", "")
                if _labels_match(selector, ns)
            ]
        return [parent_namespace] if parent_namespace else None


def _rule_problem(rule: RelatedRule, parent_namespace: str, *, v2: bool) -> str | None:
    if rule.names and (rule.label_selector is not None or rule.namespace_selector is not None):
        return "names cannot be combined with a selector"
    if rule.namespace and rule.namespace_selector is not None:
        return "namespace cannot be combined with namespaceSelector"
    if rule.namespace_selector is not None and not rule.type.namespaced:
        return "namespaceSelector needs a namespaced type"
    if parent_namespace and not v2:
        if rule.namespace and rule.namespace != parent_namespace:
            return "a v1 hook of a namespaced parent sees its own namespace only"
        if rule.namespace_selector is not None:
            return "namespaceSelector needs hook version v2 for a namespaced parent"
    return None


def _labels_match(selector: dict[str, Any], obj: KubeObject) -> bool:
    return selector_matches(selector, obj["metadata"].get("labels") or {})
