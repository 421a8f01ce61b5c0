"""The customize hook: which related objects a parent's sync sees.

Follows Metacontroller's `pkg/controller/common/customize/manager.go` (v4.17). The hook's
answer is cached per parent (uid, generation) for 20 minutes, so it is called again only when
the parent's spec changes or the entry expires; an answer with a bad rule is cached too, and
fails every sync until then. A change to an object a cached rule selects enqueues that parent.

A rule selects one of four ways (`determineSelectionType`):
- `namespaceSelector` (with an optional `labelSelector`): objects in the matching namespaces;
- `labelSelector` and `namespace`: matching objects in that namespace;
- `namespace` or `names` (no selector): those names (all when none) in that namespace (all
  namespaces when none);
- otherwise (a `labelSelector`, or nothing at all, which selects everything): matching objects
  in every namespace, except for a v1 hook of a namespaced parent, which sees its own
  namespace only.
For a cluster-scoped related type the namespace is ignored. A v1 hook of a namespaced parent
may not name another namespace nor use a `namespaceSelector`; objects outside its namespace
are left out of its request (`wire.request_maps`).
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Generic, Literal, TypeVar

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

Selection = Literal["labels", "namespace_and_labels", "namespace_selector", "namespace_and_names"]

_OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist")


@dataclass(frozen=True, slots=True)
class RelatedRule:
    type: ResourceType
    label_selector: dict[str, Any] | None
    namespace_selector: dict[str, Any] | None
    namespace: str
    names: tuple[str, ...]

    @property
    def selection(self) -> Selection | None:
        """How the rule selects (`determineSelectionType`); None when it is invalid."""
        if self.names and (self.label_selector is not None or self.namespace_selector is not None):
            return None
        if self.namespace and self.namespace_selector is not None:
            return None
        if self.namespace_selector is not None:
            return "namespace_selector"
        if self.label_selector is not None and self.namespace:
            return "namespace_and_labels"
        if self.namespace or self.names:
            return "namespace_and_names"
        return "labels"


@dataclass(frozen=True, slots=True)
class _Entry:
    uid: str
    generation: int
    expires: datetime
    rules: tuple[RelatedRule, ...]
    """The rules whose type is served, in the hook's order."""
    problem: str | None
    """Why listing fails: the first bad rule, in the hook's order (every sync fails)."""
    namespace: str
    """The parent's namespace ("" when cluster-scoped)."""
    v2: bool
    """The customize hook's version: it, not the sync hook's, decides what a rule selects."""

    @property
    def local_v1(self) -> bool:
        """A v1 customize hook of a namespaced parent."""
        return not self.v2 and bool(self.namespace)


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
        self._by_label: dict[str, dict[K, None]] = {}
        """Kind -> parents with a rule for that kind not limited to names."""
        self._by_name: dict[tuple[str, str], dict[K, None]] = {}
        """(kind, name) -> parents with a rule naming that object: an object change looks at
        these and at `_by_label`, not at every parent interested in its kind."""

    def select(self, key: K, parent: KubeObject) -> RelatedGroups:
        """The related objects of each rule (`GetRelatedObjects`)."""
        if self.hook is None:
            return []
        entry = self._entry(key, parent)
        if entry.problem is not None:
            raise SyncFailure("invalid", entry.problem)
        return [(rule.type.group_key, self._objects(rule, entry)) for rule in entry.rules]

    def watches(self, kind: str) -> bool:
        return bool(self._interested.get(kind))

    def parents_selecting(self, objects: Iterable[KubeObject]) -> list[K]:
        """Parents whose cached rules select any of `objects` (an object before and after)."""
        found: dict[K, None] = {}
        now = self._clock.now()
        for obj in objects:
            kind = obj.get("kind", "")
            name = (obj.get("metadata") or {}).get("name", "")
            candidates = [
                *self._by_label.get(kind, ()),
                *self._by_name.get((kind, name), ()),
            ]
            for key in candidates:
                entry = self._entries.get(key)
                if entry is None or entry.expires <= now or key in found:
                    continue
                if any(self._selects(rule, entry, obj) for rule in entry.rules):
                    found[key] = None
        return list(found)

    def forget(self, key: K) -> None:
        entry = self._entries.pop(key, None)
        if entry is not None:
            for rule in entry.rules:
                kind = rule.type.kind
                self._interested.get(kind, {}).pop(key, None)
                self._by_label.get(kind, {}).pop(key, None)
                for name in rule.names:
                    self._by_name.get((kind, name), {}).pop(key, None)

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
        v2 = self.hook.v2
        rules: list[RelatedRule] = []
        problem: str | None = None
        for raw in raw_rules:
            try:
                related_type = self._catalog.resource(
                    raw.get("apiVersion", ""), raw.get("resource", "")
                )
            except UnknownResource as error:
                problem = problem or f"related resource: {error}"
                continue
            rule = RelatedRule(
                type=related_type,
                label_selector=raw.get("labelSelector"),
                namespace_selector=raw.get("namespaceSelector"),
                namespace=raw.get("namespace") or "",
                names=tuple(raw.get("names") or ()),
            )
            rules.append(rule)
            if problem is None:
                found = _listing_problem(rule, namespace, v2=v2)
                if found:
                    problem = f"related {related_type.resource}: {found}"
        entry = _Entry(
            uid=metadata["uid"],
            generation=metadata.get("generation", 0),
            expires=now + timedelta(seconds=CACHE_SECONDS),
            rules=tuple(rules),
            problem=problem,
            namespace=namespace,
            v2=v2,
        )
        self._entries[key] = entry
        for rule in rules:
            kind = rule.type.kind
            self._interested.setdefault(kind, {})[key] = None
            if rule.names:  # only these names can match (`_selects`)
                for name in rule.names:
                    self._by_name.setdefault((kind, name), {})[key] = None
            else:
                self._by_label.setdefault(kind, {})[key] = None
        return entry

    # --- selection

    def _objects(self, rule: RelatedRule, entry: _Entry) -> list[KubeObject]:
        """What `GetRelatedObjects` lists for a valid rule."""
        kind, namespaced = rule.type.kind, rule.type.namespaced
        selection = rule.selection
        if selection == "namespace_and_names":
            if namespaced and rule.namespace:
                if rule.names:
                    found = (self._cache.get(kind, rule.namespace, name) for name in rule.names)
                    return [obj for obj in found if obj is not None]
                return list(self._cache.objects(kind, rule.namespace))
            everything = self._cache.objects(kind)
            if not rule.names:
                return list(everything)
            return [obj for obj in everything if obj["metadata"]["name"] in rule.names]
        selector = rule.label_selector or {}
        candidates: Iterable[KubeObject]
        if selection == "namespace_selector":
            namespace_selector = rule.namespace_selector or {}
            candidates = (
                obj
                for ns in self._cache.objects("Namespace", "")
                if _labels_match(namespace_selector, ns)
                for obj in self._cache.objects(kind, ns["metadata"]["name"])
            )
        elif selection == "namespace_and_labels":
            candidates = self._cache.objects(kind, rule.namespace if namespaced else None)
        else:
            local = entry.local_v1 and namespaced
            candidates = self._cache.objects(kind, entry.namespace if local else None)
        return [obj for obj in candidates if _labels_match(selector, obj)]

    def _selects(self, rule: RelatedRule, entry: _Entry, obj: KubeObject) -> bool:
        """Whether a change to `obj` concerns the parent (`matchesRelatedRule`; a rule it
        finds an error in matches nothing)."""
        if obj.get("kind") != rule.type.kind or obj.get("apiVersion") != rule.type.api_version:
            return False
        metadata = obj["metadata"]
        namespace = metadata.get("namespace") or ""
        namespaced = rule.type.namespaced
        parent_namespace = entry.namespace
        selection = rule.selection
        if selection is None or _selector_problem(rule.label_selector):
            return False
        selector = rule.label_selector or {}
        if selection == "labels":
            if entry.local_v1 and namespaced and namespace != parent_namespace:
                return False
            return _labels_match(selector, obj)
        if selection == "namespace_and_labels":
            if entry.local_v1:
                if rule.namespace != parent_namespace:
                    return False  # an error in Metacontroller, for any related type
                if namespaced and namespace != parent_namespace:
                    return False
            if not _labels_match(selector, obj):
                return False
            return not (namespaced and namespace != rule.namespace)
        if selection == "namespace_selector":
            if entry.local_v1 or not namespaced:
                return False
            if _selector_problem(rule.namespace_selector):
                return False
            if not _labels_match(selector, obj):
                return False
            ns = self._cache.get("Namespace", "", namespace)
            return ns is not None and _labels_match(rule.namespace_selector or {}, ns)
        # namespace_and_names
        if entry.local_v1:
            if rule.namespace and rule.namespace != parent_namespace:
                return False  # an error in Metacontroller, for any related type
            if namespaced and namespace != parent_namespace:
                return False
        elif namespaced and rule.namespace and namespace != rule.namespace:
            return False
        return not rule.names or metadata["name"] in rule.names


def _listing_problem(rule: RelatedRule, parent_namespace: str, *, v2: bool) -> str | None:
    """Why `GetRelatedObjects` fails on this rule, in its order of checks."""
    selection = rule.selection
    if selection is None:
        if rule.names:
            return "names cannot be combined with labelSelector or namespaceSelector"
        return "namespace cannot be combined with namespaceSelector"
    local_v1 = not v2 and bool(parent_namespace) and rule.type.namespaced
    names_another_namespace = selection == "namespace_and_labels" or (
        selection == "namespace_and_names" and bool(rule.namespace)
    )
    if names_another_namespace and local_v1 and rule.namespace != parent_namespace:
        return (
            f"requested related object namespace {rule.namespace} differs from parent "
            f"object namespace {parent_namespace}"
        )
    if selection == "namespace_selector":
        if local_v1:
            return "namespaceSelector is not supported for namespaced parent in v1 hook version"
        if not rule.type.namespaced:
            return "namespaceSelector is only supported for namespaced related resources"
        problem = _selector_problem(rule.namespace_selector)
        if problem:
            return problem
    if selection != "namespace_and_names":
        return _selector_problem(rule.label_selector)
    return None


def _selector_problem(selector: dict[str, Any] | None) -> str | None:
    """What `metav1.LabelSelectorAsSelector` refuses in an expression (label key and value
    syntax is not checked)."""
    for expression in (selector or {}).get("matchExpressions") or ():
        operator = expression.get("operator")
        values = expression.get("values") or []
        if operator not in _OPERATORS:
            return f"{operator!r} is not a valid label selector operator"
        if operator in ("In", "NotIn") and not values:
            return "for 'in', 'notin' operators, values set can't be empty"
        if operator in ("Exists", "DoesNotExist") and values:
            return "values set must be empty for exists and does not exist"
    return None


def _labels_match(selector: dict[str, Any], obj: KubeObject) -> bool:
    return selector_matches(selector, obj["metadata"].get("labels") or {})
