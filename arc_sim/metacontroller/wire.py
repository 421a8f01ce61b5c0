"""The JSON of hook calls: requests as Metacontroller builds them, answers as it decodes them.

Group keys are `<Kind>.<apiVersion>`; inner keys are the name (v1; `ns/name` for a namespaced
object under a cluster-scoped parent) or `ns/name` for every namespaced object (v2). Answers
are decoded case-sensitively; strict mode (v2's default) rejects unknown and duplicate fields.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, NoReturn

import msgspec
import orjson

from arc_sim.metacontroller.failures import SyncFailure
from arc_sim.metacontroller.identity_memo import IdentityMemo
from arc_sim.store import KubeObject

ObjectMap = dict[str, dict[str, KubeObject]]
"""Group key -> inner key -> object."""


def encode(value: Any) -> bytes:
    return orjson.dumps(value)


class EncodedMembers:
    """Each member's `"key":<JSON>` from an earlier request, reused for the very object (a
    stored object is never changed in place) or, by uid, while its resourceVersion is the same
    (the API server changes it with every write): a parent synced again and again with hundreds
    of children encodes only the children that changed. One per controller, so that it lives no
    longer than its emulator (uids repeat across worlds); it forgets everything once it holds
    `limit` members, deleted ones included."""

    def __init__(self, limit: int = 20_000) -> None:
        self.limit = limit
        self._by_uid: dict[str, tuple[str, str, bytes]] = {}
        # The object -> its key, the `children_map` keying it was made for (None: another
        # caller's), its namespace, and its encoding under that key.
        self._by_object: IdentityMemo[tuple[str, bool | None, str, bytes]] = IdentityMemo(limit)

    def object_map(self, objects: ObjectMap) -> bytes:
        """`encode(objects)`, byte for byte (but for nesting: each member may nest the 254
        levels orjson writes, not 252 as inside the map; the hook server refuses that depth)."""
        parts: list[bytes] = []
        for group_key, members in objects.items():
            parts.append(b"," if parts else b"{")
            parts.append(orjson.dumps(group_key))
            parts.append(b":{" if members else b":{}")
            for index, (key, obj) in enumerate(members.items()):
                if index:
                    parts.append(b",")
                parts.append(self._member(key, obj))
            if members:
                parts.append(b"}")
        parts.append(b"}" if parts else b"{}")
        return b"".join(parts)

    def children_map(
        self, observed: Mapping[str, Mapping[Any, KubeObject]], *, parent_namespace: str, v2: bool
    ) -> bytes:
        """`object_map(request_maps(observed, (), ...)[0])`, byte for byte, without building
        the map: each member's key and encoding are found by the very object (a set of
        thousands is synced again and again while few of them change). Observed children
        have distinct keys, as a map of them would."""
        qualify = v2 or not parent_namespace
        local = bool(parent_namespace) and not v2
        parts: list[bytes] = []
        for group_key, members in observed.items():
            parts.append(b"," if parts else b"{")
            parts.append(orjson.dumps(group_key))
            first = True
            for obj in members.values():
                known = self._by_object.get(obj)
                if known is None or known[1] != qualify:
                    metadata = obj["metadata"]
                    namespace = metadata.get("namespace") or ""
                    name = metadata["name"]
                    key = f"{namespace}/{name}" if namespace and qualify else name
                    known = self._remember(key, qualify, namespace, obj)
                if local and known[2] != parent_namespace:
                    continue
                parts.append(b":{" if first else b",")
                parts.append(known[3])
                first = False
            parts.append(b":{}" if first else b"}")
        parts.append(b"}" if parts else b"{}")
        return b"".join(parts)

    def _member(self, key: str, obj: KubeObject) -> bytes:
        known = self._by_object.get(obj)  # the very object: its fields are not read again
        if known is not None and known[0] == key:
            return known[3]
        return self._remember(key, None, obj["metadata"].get("namespace") or "", obj)[3]

    def _remember(
        self, key: str, qualify: bool | None, namespace: str, obj: KubeObject
    ) -> tuple[str, bool | None, str, bytes]:
        known = (key, qualify, namespace, self._by_version(key, obj))
        self._by_object.put(obj, known)
        return known

    def _by_version(self, key: str, obj: KubeObject) -> bytes:
        metadata = obj["metadata"]
        uid, version = metadata.get("uid"), metadata.get("resourceVersion")
        kept = isinstance(uid, str) and uid and isinstance(version, str) and version
        cached = self._by_uid.get(uid) if kept else None
        if cached is not None and cached[0] == key and cached[1] == version:
            return cached[2]
        encoded = orjson.dumps(key) + b":" + orjson.dumps(obj)
        if kept:
            if len(self._by_uid) >= self.limit:
                self._by_uid.clear()
            self._by_uid[uid] = (key, version, encoded)
        return encoded


# --- requests


def object_map(
    groups: Iterable[tuple[str, Iterable[KubeObject]]],
    *,
    parent_namespace: str,
    v2: bool,
    parent_namespace_only: bool = False,
) -> ObjectMap:
    """Objects keyed as the hook version wants them. `parent_namespace_only` drops objects of
    other namespaces and cluster-scoped ones (v1 related objects of a namespaced parent)."""
    result: ObjectMap = {}
    for group_key, objects in groups:
        members = result.setdefault(group_key, {})
        for obj in objects:
            metadata = obj["metadata"]
            namespace = metadata.get("namespace") or ""
            if parent_namespace_only and namespace != parent_namespace:
                continue
            name = metadata["name"]
            qualified = namespace and (v2 or not parent_namespace)
            members[f"{namespace}/{name}" if qualified else name] = obj
    return result


def request_maps(
    observed: Mapping[str, Mapping[Any, KubeObject]],
    related: Iterable[tuple[str, Iterable[KubeObject]]],
    *,
    parent_namespace: str,
    v2: bool,
) -> tuple[ObjectMap, ObjectMap]:
    """The children (or attachments) and related maps of a request, keyed per hook version;
    v1 drops objects outside a namespaced parent's namespace from both (`UniformObjectMap.
    Convert` in `pkg/controller/common/api/v2/common.go`)."""
    local = bool(parent_namespace) and not v2
    children = object_map(
        ((group, members.values()) for group, members in observed.items()),
        parent_namespace=parent_namespace,
        v2=v2,
        parent_namespace_only=local,
    )
    related_map = object_map(
        related, parent_namespace=parent_namespace, v2=v2, parent_namespace_only=local
    )
    return children, related_map


def composite_request(
    controller_json: bytes,
    parent: KubeObject,
    children: ObjectMap | bytes,
    related: ObjectMap,
    finalizing: bool,
    encoded: EncodedMembers,
) -> bytes:
    return _request(
        controller_json, "parent", parent, "children", children, related, finalizing, encoded
    )


def decorator_request(
    controller_json: bytes,
    parent: KubeObject,
    attachments: ObjectMap,
    related: ObjectMap,
    finalizing: bool,
    encoded: EncodedMembers,
) -> bytes:
    return _request(
        controller_json, "object", parent, "attachments", attachments, related, finalizing, encoded
    )


def customize_request(controller_json: bytes, parent: KubeObject) -> bytes:
    return b'{"controller":' + controller_json + b',"parent":' + encode(parent) + b"}"


def _request(
    controller_json: bytes,
    parent_field: str,
    parent: KubeObject,
    children_field: str,
    children: ObjectMap | bytes,
    related: ObjectMap,
    finalizing: bool,
    encoded: EncodedMembers,
) -> bytes:
    """`children` as a map, or as encoded already (`EncodedMembers.children_map`)."""
    # The controller object is the same for every call: it is encoded once, by the caller.
    return b"".join(
        (
            b'{"controller":',
            controller_json,
            f',"{parent_field}":'.encode(),
            encode(parent),
            f',"{children_field}":'.encode(),
            children if isinstance(children, bytes) else encoded.object_map(children),
            b',"related":',
            encoded.object_map(related),
            b',"finalizing":true}' if finalizing else b',"finalizing":false}',
        )
    )


# --- answers


@dataclass(frozen=True, slots=True)
class CompositeAnswer:
    status: dict[str, Any] | None
    children: list[KubeObject]
    resync_after: float
    finalized: bool


@dataclass(frozen=True, slots=True)
class DecoratorAnswer:
    labels: dict[str, str | None] | None
    annotations: dict[str, str | None] | None
    status: dict[str, Any] | None
    attachments: list[KubeObject]
    resync_after: float
    finalized: bool


_COMPOSITE_FIELDS = frozenset({"status", "children", "resyncAfterSeconds", "finalized"})
_DECORATOR_FIELDS = frozenset(
    {"labels", "annotations", "status", "attachments", "resyncAfterSeconds", "finalized"}
)
_CUSTOMIZE_FIELDS = frozenset({"relatedResources"})
RELATED_RULE_FIELDS = frozenset(
    {"apiVersion", "resource", "labelSelector", "namespaceSelector", "namespace", "names"}
)


class DecodedChildren:
    """Each desired child of an earlier answer, by its exact JSON text: a parent answered
    again and again with hundreds of children decodes only the ones that changed, and an
    unchanged child is the very object decoded before (applying it then compares by identity,
    `children._settled_already`). A parent's list of children the same as in its last answer
    (only its status changed, say) is the very list. One per controller; only compact text
    (what its decoding encodes back to) is kept, and everything is forgotten once it holds
    `limit` children, or lists of `limit` parents. Callers do not change what it gives."""

    SPLIT_ABOVE_BYTES = 0
    """Answers this long or shorter are decoded whole. None is: a Runner's answer (its pod
    and Secret) is the same at every resync but for `resyncAfterSeconds`, and reusing its
    children spares decoding them and comparing them field by field with the stored ones
    (about a sixth of a simulated hour of 1,000 Runners)."""

    def __init__(self, limit: int = 20_000) -> None:
        self.limit = limit
        self._by_text: dict[bytes, KubeObject] = {}
        self._lists: dict[str, tuple[bytes, list[KubeObject]]] = {}

    def compact_answer(
        self, body: bytes, list_field: str, parent_uid: str = ""
    ) -> dict[str, Any] | None:
        """`_compact_document(body)`, the objects of `list_field` reused (and the list, for
        `parent_uid`); None when the body is small or not compact (it is then decoded the
        usual way)."""
        if len(body) <= self.SPLIT_ABOVE_BYTES:
            return None
        try:
            parts = _PARTS.decode(body)
        except msgspec.DecodeError:
            return None
        document: dict[str, Any] = {}
        texts: list[bytes] = []
        for key, raw in parts.items():
            text = bytes(raw)
            value = self._list(text, parent_uid) if key == list_field else _compact_document(text)
            if value is None and text != b"null":
                return None
            document[key] = value
            texts.append(orjson.dumps(key) + b":" + text)
        # Compact as a whole: nothing between the parts, no field twice (a duplicate, dropped
        # by the decoding, would be missing here).
        return document if b"{" + b",".join(texts) + b"}" == body else None

    def _list(self, text: bytes, parent_uid: str) -> list[KubeObject] | None:
        last = self._lists.get(parent_uid) if parent_uid else None
        if last is not None and last[0] == text:
            return last[1]
        objects = self._objects(text)
        if objects is not None and parent_uid:
            if len(self._lists) >= self.limit:
                self._lists.clear()
            self._lists[parent_uid] = (text, objects)
        return objects

    def _objects(self, text: bytes) -> list[KubeObject] | None:
        try:
            items = _RAW_LIST.decode(text)
        except msgspec.DecodeError:
            return None
        objects: list[Any] = []
        texts: list[bytes] = []
        for item in items:
            item_text = bytes(item)
            obj = self._by_text.get(item_text)
            if obj is None:
                obj = _compact_document(item_text)
                if not isinstance(obj, dict):
                    return None  # decoded the usual way, which says what is wrong
                if len(self._by_text) >= self.limit:
                    self._by_text.clear()
                self._by_text[item_text] = obj
            objects.append(obj)
            texts.append(item_text)
        return objects if b"[" + b",".join(texts) + b"]" == text else None


_PARTS = msgspec.json.Decoder(dict[str, msgspec.Raw])
_RAW_LIST = msgspec.json.Decoder(list[msgspec.Raw])


def read_composite_answer(
    body: bytes, strict: bool, decoded: DecodedChildren | None = None, parent_uid: str = ""
) -> CompositeAnswer:
    answer = _document(body, strict, _COMPOSITE_FIELDS, decoded, "children", parent_uid)
    return CompositeAnswer(
        status=_optional_object(answer.get("status"), "status"),
        children=_children(answer.get("children"), "children"),
        resync_after=_number(answer.get("resyncAfterSeconds"), "resyncAfterSeconds"),
        finalized=_boolean(answer.get("finalized"), "finalized"),
    )


def read_decorator_answer(
    body: bytes, strict: bool, decoded: DecodedChildren | None = None
) -> DecoratorAnswer:
    answer = _document(body, strict, _DECORATOR_FIELDS, decoded, "attachments")
    return DecoratorAnswer(
        labels=_string_map(answer.get("labels"), "labels"),
        annotations=_string_map(answer.get("annotations"), "annotations"),
        status=_optional_object(answer.get("status"), "status"),
        attachments=_children(answer.get("attachments"), "attachments"),
        resync_after=_number(answer.get("resyncAfterSeconds"), "resyncAfterSeconds"),
        finalized=_boolean(answer.get("finalized"), "finalized"),
    )


def read_customize_answer(body: bytes, strict: bool) -> list[dict[str, Any]]:
    answer = _document(body, strict, _CUSTOMIZE_FIELDS)
    rules = answer.get("relatedResources")
    if rules is None:
        return []
    if not isinstance(rules, list):
        _fail("relatedResources: expected a list")
    for rule in rules:
        if not isinstance(rule, dict):
            _fail("relatedResources: expected objects")
        if strict and not rule.keys() <= RELATED_RULE_FIELDS:
            _fail(f"unknown field(s) {sorted(rule.keys() - RELATED_RULE_FIELDS)} in a rule")
        _related_rule_types(rule)
    return rules


def _related_rule_types(rule: dict[str, Any]) -> None:
    """The field types of `v1alpha1.RelatedResourceRule`: a mismatch fails decoding in every
    mode."""
    for field in ("apiVersion", "resource", "namespace"):
        if rule.get(field) is not None and not isinstance(rule[field], str):
            _fail(f"relatedResources: {field} must be a string")
    for field in ("labelSelector", "namespaceSelector"):
        selector = rule.get(field)
        if selector is None:
            continue
        if not isinstance(selector, dict):
            _fail(f"relatedResources: {field} must be an object")
        labels = selector.get("matchLabels")
        if labels is not None and not (
            isinstance(labels, dict) and all(isinstance(v, str) for v in labels.values())
        ):
            _fail(f"relatedResources: {field}.matchLabels must map strings to strings")
        expressions = selector.get("matchExpressions")
        if expressions is not None and not (
            isinstance(expressions, list) and all(isinstance(e, dict) for e in expressions)
        ):
            _fail(f"relatedResources: {field}.matchExpressions must be a list of objects")
    names = rule.get("names")
    if names is not None and not (
        isinstance(names, list) and all(isinstance(name, str) for name in names)
    ):
        _fail("relatedResources: names must be a list of strings")


def _document(
    body: bytes,
    strict: bool,
    fields: frozenset[str],
    decoded: DecodedChildren | None = None,
    list_field: str = "",
    parent_uid: str = "",
) -> dict[str, Any]:
    document = decoded.compact_answer(body, list_field, parent_uid) if decoded is not None else None
    if document is None:
        document = _compact_document(body)
    if document is None:
        document = _document_by_pairs(body, strict)
    if not isinstance(document, dict):
        _fail("expected a JSON object")
    if strict and not document.keys() <= fields:
        _fail(f"unknown field(s) {sorted(document.keys() - fields)}")
    return document


def _compact_document(body: bytes) -> Any | None:
    """The document when `body` is compact JSON as orjson writes it (as our hooks answer):
    then it is exactly the text its decoding encodes back to, which a duplicate field (dropped
    by the decoding) or a non-finite number could not be. None: decode it the slow way."""
    try:
        document = orjson.loads(body)
        return document if orjson.dumps(document) == body else None
    except (orjson.JSONDecodeError, orjson.JSONEncodeError):
        return None


def _document_by_pairs(body: bytes, strict: bool) -> Any:
    try:
        return json.loads(
            body,
            object_pairs_hook=_refuse_duplicates if strict else None,
            parse_constant=_refuse_constant,
        )
    except (ValueError, UnicodeDecodeError) as error:
        _fail(f"invalid JSON: {error}")


def _refuse_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            raise ValueError(f"duplicate field {key!r}")
        result[key] = value
    return result


def _refuse_constant(name: str) -> NoReturn:
    raise ValueError(f"invalid number {name}")


def _fail(message: str) -> NoReturn:
    raise SyncFailure("decode", f"can't decode the hook's answer: {message}")


def _optional_object(value: Any, field: str) -> dict[str, Any] | None:
    if value is None or isinstance(value, dict):
        return value
    _fail(f"{field}: expected an object")


def _children(value: Any, field: str) -> list[KubeObject]:
    if value is None:
        return []
    if not isinstance(value, list):
        _fail(f"{field}: expected a list")
    for child in value:
        if not isinstance(child, dict):
            _fail(f"{field}: expected objects")
        if not isinstance(child.get("kind"), str) or not child["kind"]:
            _fail(f"{field}: Object 'Kind' is missing in {json.dumps(child)[:200]}")
        if not isinstance(child.get("metadata", {}), dict):
            _fail(f"{field}: metadata must be an object")
    return value


def _number(value: Any, field: str) -> float:
    if value is None:
        return 0.0
    if isinstance(value, bool) or not isinstance(value, int | float):
        _fail(f"{field}: expected a number")
    return float(value)


def _boolean(value: Any, field: str) -> bool:
    if value is None:
        return False
    if not isinstance(value, bool):
        _fail(f"{field}: expected a boolean")
    return value


def _string_map(value: Any, field: str) -> dict[str, str | None] | None:
    if value is None:
        return None
    if not isinstance(value, dict) or not all(
        item is None or isinstance(item, str) for item in value.values()
    ):
        _fail(f"{field}: expected a map of strings (or null to delete)")
    return value
