"""Metacontroller's three-way merge of a child: observed, last applied and desired.

Like `kubectl apply` without schemas: maps merge key by key, and keys the hook set before but
no longer sets are removed; a list becomes a map when all its items are objects sharing a
conventional key (`containerPort`, `port`, `mountPath`, `name`, `uid`, `ip`, `path`); any other
list, and every scalar, takes the desired value. Fields the hook never set survive, so what
others write (a kubelet, an admission webhook, a person) is kept.

The merge never changes its inputs: unchanged parts of the result are the observed object's own
values, so comparing the result with the observed object is cheap.
"""

from __future__ import annotations

import json
from typing import Any

from arc_sim.store import KubeObject

LAST_APPLIED_ANNOTATION = "metacontroller.k8s.io/last-applied-configuration"
LIST_MAP_KEYS = ("containerPort", "port", "mountPath", "name", "uid", "ip", "path")

# Written by the API server only: a hook cannot change them, so they never make a difference.
_SYSTEM_METADATA = (
    "selfLink",
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "managedFields",
)


class MergeError(ValueError):
    pass


def merge(observed: Any, last_applied: Any, desired: Any) -> Any:
    if observed is desired or observed == desired:
        # Merging what is already there changes nothing, whatever was applied before; this
        # skips walking the unchanged bulk of a child (a pod spec) on every sync.
        return observed
    if isinstance(observed, dict):
        if last_applied is not None and not isinstance(last_applied, dict):
            raise MergeError(f"last applied: expected an object, got {_type(last_applied)}")
        if desired is not None and not isinstance(desired, dict):
            raise MergeError(f"desired: expected an object, got {_type(desired)}")
        return _merge_object(observed, last_applied or {}, desired or {})
    if isinstance(observed, list):
        if last_applied is not None and not isinstance(last_applied, list):
            raise MergeError(f"last applied: expected a list, got {_type(last_applied)}")
        if desired is not None and not isinstance(desired, list):
            raise MergeError(f"desired: expected a list, got {_type(desired)}")
        return _merge_list(observed, last_applied or [], desired)
    return desired


def _merge_object(
    observed: dict[str, Any], last_applied: dict[str, Any], desired: dict[str, Any]
) -> dict[str, Any]:
    result = dict(observed)
    for key in last_applied:
        if key not in desired:
            result.pop(key, None)
    for key, value in desired.items():
        try:
            result[key] = merge(result.get(key), last_applied.get(key), value)
        except MergeError as error:
            raise MergeError(f"[{key}]{error}") from None
    return result


def _merge_list(
    observed: list[Any], last_applied: list[Any], desired: list[Any] | None
) -> list[Any] | None:
    key = _list_map_key(observed, last_applied, desired or [])
    if key is None:
        return desired
    desired = desired or []
    merged = _merge_object(
        _list_map(key, observed), _list_map(key, last_applied), _list_map(key, desired)
    )
    # Keep the observed order (the server's); append what is new, in the desired order.
    result = [merged[item_key] for item_key in _keys(key, observed) if item_key in merged]
    seen = set(_keys(key, observed))
    for item_key in _keys(key, desired):
        if item_key not in seen:
            result.append(merged[item_key])
            seen.add(item_key)
    return result


def _list_map_key(*lists: list[Any]) -> str | None:
    common: set[str] | None = None
    for items in lists:
        for item in items:
            if not isinstance(item, dict):
                return None
            if common is None:
                common = set(item)
            else:
                common.intersection_update(item.keys())
    if not common:
        return None
    return next((key for key in LIST_MAP_KEYS if key in common), None)


def _list_map(key: str, items: list[Any]) -> dict[str, Any]:
    return {_key_text(item[key]): item for item in items}


def _keys(key: str, items: list[Any]) -> list[str]:
    return [_key_text(item[key]) for item in items]


def _key_text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True)


def _type(value: Any) -> str:
    return type(value).__name__


# --- the update Metacontroller computes for an observed child


def last_applied(obj: KubeObject) -> dict[str, Any] | None:
    """The configuration recorded in `obj`'s annotation (`apply.GetLastApplied`)."""
    text = _annotation_text(obj)
    return _parse_last_applied(text)[0] if text else None


def _annotation_text(obj: KubeObject) -> str | None:
    annotations = (obj.get("metadata") or {}).get("annotations")
    if not isinstance(annotations, dict):
        return None
    text = annotations.get(LAST_APPLIED_ANNOTATION)
    return text if isinstance(text, str) else None


_PARSED_LIMIT = 8192
_parsed: dict[str, tuple[dict[str, Any], bool]] = {}


def _parse_last_applied(text: str) -> tuple[dict[str, Any], bool]:
    """The value and whether `text` is exactly what `go_json` writes for it. Parsed once per
    distinct text: children keep their annotation from sync to sync. The parsed values are
    shared, which is safe because the merge never changes its inputs."""
    found = _parsed.get(text)
    if found is not None:
        return found
    try:
        value = json.loads(text)
    except ValueError as error:
        raise MergeError(
            f"can't unmarshal {LAST_APPLIED_ANNOTATION!r} annotation: {error}"
        ) from None
    if not isinstance(value, dict):
        raise MergeError(f"can't unmarshal {LAST_APPLIED_ANNOTATION!r} annotation: not an object")
    if len(_parsed) >= _PARSED_LIMIT:
        _parsed.clear()
    entry = _parsed[text] = (value, go_json(value) == text)
    return entry


def _string_annotations(metadata: dict[str, Any]) -> dict[str, str] | None:
    """The annotations as `Unstructured.GetAnnotations` reads them: None unless a map of
    strings."""
    annotations = metadata.get("annotations")
    if isinstance(annotations, dict) and all(isinstance(v, str) for v in annotations.values()):
        return annotations
    return None


def with_last_applied(
    obj: KubeObject, applied: KubeObject, applied_json: str | None = None
) -> KubeObject:
    """`obj` annotated with the JSON of `applied` (a new object; `obj` is not changed). As
    `apply.SetLastApplied`: annotations that are not a map of strings are replaced."""
    metadata = dict(obj.get("metadata") or {})
    annotations = dict(_string_annotations(metadata) or {})
    annotations[LAST_APPLIED_ANNOTATION] = applied_json or go_json(applied)
    metadata["annotations"] = annotations
    return {**obj, "metadata": metadata}


def without_last_applied(desired: KubeObject) -> KubeObject:
    """`desired` without a last-applied annotation of the hook's own
    (`nullifyLastAppliedAnnotation`, `pkg/controller/common/diff.go`): removed only when the
    annotations are a map of strings, and an emptied map stays, as `{}`."""
    metadata = desired.get("metadata")
    if not isinstance(metadata, dict):
        return desired
    annotations = _string_annotations(metadata)
    if annotations is None or LAST_APPLIED_ANNOTATION not in annotations:
        return desired
    kept = {k: v for k, v in annotations.items() if k != LAST_APPLIED_ANNOTATION}
    return {**desired, "metadata": {**metadata, "annotations": kept}}


def updated_child(observed: KubeObject, desired: KubeObject) -> KubeObject:
    """The object Metacontroller would write for `desired` (`ApplyUpdate` in
    `pkg/controller/common/manage_children.go`): the hook's own last-applied annotation
    dropped from `desired`, the three-way merge, server metadata and status reverted to what
    was observed, and the last applied configuration replaced by `desired`."""
    text = _annotation_text(observed)
    previous, canonical = _parse_last_applied(text) if text else (None, False)
    desired = without_last_applied(desired)
    merged = merge(observed, previous, desired)
    if not isinstance(merged.get("metadata"), dict):
        raise MergeError("metadata: expected an object")
    metadata = dict(merged["metadata"])
    observed_metadata = observed.get("metadata") or {}
    for field in _SYSTEM_METADATA:
        if field in observed_metadata:
            metadata[field] = observed_metadata[field]
        else:
            metadata.pop(field, None)
    merged["metadata"] = metadata
    if "status" in observed:
        merged["status"] = observed["status"]
    else:
        merged.pop("status", None)
    # The text observed is what would be written again when it encodes `desired` exactly.
    unchanged = canonical and previous == desired
    return with_last_applied(merged, desired, text if unchanged else None)


def go_json(value: Any) -> str:
    """JSON as Go's encoding/json writes it: sorted keys, compact, HTML characters escaped."""
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    for char, escaped in _GO_ESCAPES:
        if char in text:
            text = text.replace(char, escaped)
    return text


_GO_ESCAPES = (
    ("<", "\\u003c"),
    (">", "\\u003e"),
    ("&", "\\u0026"),
    ("\u2028", "\\u2028"),
    ("\u2029", "\\u2029"),
)
