"""Helpers every controller's answer uses: conditions, kept children, children read once per
state, readable errors."""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from datetime import datetime
from typing import Any, TypeVar, cast

from pydantic import ValidationError

from hooks.clock import format_time
from hooks.memo import Memo, ObjectMemo
from hooks.metacontroller import (
    CompositeHookRequest,
    CompositeHookResponse,
    KubeObject,
    SharedChild,
    list_or_empty,
    object_or_empty,
)
from hooks.redaction import mask_credentials
from hooks.resources.common import Condition

LAST_APPLIED = "metacontroller.k8s.io/last-applied-configuration"

T = TypeVar("T")
K = TypeVar("K", bound=dict[str, Any])

ConditionValue = tuple[str, str, str]
"""(status "True"/"False", reason, message)."""


def shared_kept(obj: KubeObject) -> SharedChild:
    """`as_kept` for a reading kept in the memo (`read_once_per_state`): shared by every
    answer that keeps this state of the child, and encoded once."""
    return _kept_into(SharedChild(), obj)


def as_kept(obj: KubeObject) -> KubeObject:
    """An observed child, as a desired object that changes nothing."""
    return _kept_into({}, obj)


def _kept_into(kept: K, obj: KubeObject) -> K:
    metadata = object_or_empty(obj.get("metadata"))
    annotations = {
        k: v for k, v in object_or_empty(metadata.get("annotations")).items() if k != LAST_APPLIED
    }
    kept["apiVersion"] = obj.get("apiVersion", "v1")
    kept["kind"] = obj.get("kind")
    # An empty map is left out: the API server stores none for it (`omitempty`), so
    # Metacontroller's merge would add `{}` and update the child at every sync.
    labels = object_or_empty(metadata.get("labels"))
    kept["metadata"] = {
        "name": metadata.get("name"),
        "namespace": metadata.get("namespace"),
        **({"labels": labels} if labels else {}),
        **({"annotations": annotations} if annotations else {}),
    }
    # An object's content besides metadata: `spec`, a Secret's `data` and `type`, a Role's
    # `rules`, a RoleBinding's `roleRef` and `subjects`.
    for key in ("spec", "data", "type", "rules", "roleRef", "subjects"):
        if key in obj:
            kept[key] = obj[key]
    return kept


def describe_validation_error(error: ValidationError, what: str) -> str:
    parts = []
    for item in error.errors()[:5]:
        where = ".".join(str(p) for p in item["loc"])
        parts.append(f"{where}: {item['msg']}")
    return f"invalid {what}: " + "; ".join(parts)


def label_value(text: str) -> str:
    """Label values are limited to 63 characters."""
    return text if len(text) <= 63 else text[:63].rstrip("-_.")


def merge_conditions(
    previous: list[Condition], current: dict[str, ConditionValue], now: datetime
) -> list[Condition]:
    """Conditions set by this sync over the previous ones (kept when not re-evaluated);
    lastTransitionTime moves only when a status flips."""
    before = {c.type: c for c in previous}
    merged: list[Condition] = [c for c in previous if c.type not in current]
    for kind, (status, reason, message) in sorted(current.items()):
        old = before.get(kind)
        if (
            old is not None
            and old.last_transition_time
            and (old.status, old.reason, old.message) == (status, reason, message)
        ):
            merged.append(old)  # unchanged: the same value, without building it again
            continue
        since = (
            old.last_transition_time
            if old is not None and old.status == status and old.last_transition_time
            else format_time(now)
        )
        merged.append(
            Condition(
                type=kind, status=status, reason=reason, message=message, last_transition_time=since
            )
        )
    return sorted(merged, key=lambda c: c.type)


MAX_PROBLEMS_SHOWN = 10
MAX_PROBLEM_CHARACTERS = 500


def problems_message(problems: Sequence[str]) -> str:
    """Problems as one condition message: the first `MAX_PROBLEMS_SHOWN`, each cut to
    `MAX_PROBLEM_CHARACTERS` (masked first, so that no token is cut past what the mask
    recognizes), and how many more. A spec of thousands of bad entries had made a status of
    megabytes, past what etcd stores: the write failed and the problem was never shown (found
    by the hostile-input fuzzer)."""
    shown = []
    for problem in problems[:MAX_PROBLEMS_SHOWN]:
        masked = mask_credentials(problem)
        cut = len(masked) > MAX_PROBLEM_CHARACTERS
        shown.append(masked[:MAX_PROBLEM_CHARACTERS] + "..." if cut else masked)
    more = len(problems) - len(shown)
    return "; ".join(shown) + (f"; and {more} more" if more > 0 else "")


def invalid_status(parent: KubeObject, problems: list[str], now: datetime) -> dict[str, Any]:
    """The parent's previous status with a `Valid: False` condition naming the problems.

    Everything else the status said is kept: an invalid spec changes what is reported about the
    spec, not what was observed."""
    raw = parent.get("status")
    previous = dict(raw) if isinstance(raw, dict) else {}
    conditions: list[Condition] = []
    for item in list_or_empty(previous.get("conditions")):
        try:
            conditions.append(Condition.model_validate(item))
        except ValidationError:
            continue
    message = problems_message(problems)
    merged = merge_conditions(conditions, {"Valid": ("False", "InvalidSpec", message)}, now)
    previous.pop("observedGeneration", None)  # Metacontroller writes it
    previous["conditions"] = [c.to_wire() for c in merged]
    return previous


def invalid_answer(
    request: CompositeHookRequest, problems: list[str], now: datetime, child_kinds: list[str]
) -> CompositeHookResponse:
    """An invalid parent keeps its children exactly as they are and gets nothing new."""
    kept = [as_kept(obj) for kind in child_kinds for obj in request.objects(kind)]
    return CompositeHookResponse(
        status=invalid_status(request.parent, problems, now), children=kept
    )


def state_key(kind: str, *objects: KubeObject | None) -> tuple[str, ...] | None:
    """`kind`, then the uid and resourceVersion of each object (empty for an absent one): a
    uid and a resourceVersion name one state of an object, so what is read from these states
    can be kept under this key. None when an object present lacks either."""
    key = [kind]
    for obj in objects:
        if obj is None:
            key += ["", ""]
            continue
        metadata = object_or_empty(obj.get("metadata"))
        uid, version = metadata.get("uid"), metadata.get("resourceVersion")
        if not (isinstance(uid, str) and uid and isinstance(version, str) and version):
            return None
        key += [uid, version]
    return tuple(key)


def read_once(
    key: tuple[str, ...] | None,
    read: Callable[[], T],
    reading: type[T],
    memo: Memo[Hashable, Any],
) -> T:
    """What `read` gives, from the memo when these states (`state_key`) were read before. What
    the memo holds is shared: read-only."""
    if key is None:
        return read()
    before = memo.get(key)
    if isinstance(before, reading):
        return before
    fresh = read()
    memo.put(key, fresh)
    return fresh


def read_once_per_state(
    objects: list[KubeObject],
    kind: str,
    read: Callable[[KubeObject], T],
    reading: type[T],
    memo: Memo[Hashable, Any],
    by_object: ObjectMemo[Any] | None,
) -> list[T]:
    """Every object read, those read before taken from the memo: a parent with a thousand
    children, synced at every change of any of them, reads only what changed. The very
    objects read before are found by identity (`by_object`, for objects a request shares,
    `CompositeHookRequest.members_shared`), without reading even their metadata; the others
    by uid and resourceVersion (`memo`)."""
    if by_object is None:
        readings: list[T | None] = [None] * len(objects)
    else:
        readings = [by_object.get(obj) for obj in objects]
    missing = [i for i, known in enumerate(readings) if not isinstance(known, reading)]
    keys = [state_key(kind, objects[i]) for i in missing]
    for index, key, before in zip(missing, keys, memo.get_many(keys), strict=True):
        obj = objects[index]
        if isinstance(before, reading):
            fresh = before
        else:
            fresh = read(obj)
            if key is not None:
                memo.put(key, fresh)
        if by_object is not None:
            by_object.put(obj, fresh)
        readings[index] = fresh
    return cast(list[T], readings)
