"""Metacontroller's hook wire format (Composite and Decorator controllers' sync/finalize, and
customize; hook versions v1/v2).

The request maps children (or attachments) by group key `<Kind>.<apiVersion>` and then by an
inner key whose format differs between hook versions (v1: name, v2: namespace/name). Handlers
never depend on the inner key: they read each object's own metadata.

The request's objects are checked for their shape only and kept as decoded, not copied: a
request can carry a thousand children, and handlers only read them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from enum import Enum
from itertools import repeat
from typing import Annotated, Any

import orjson
from pydantic import (
    AliasChoices,
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    SkipValidation,
    StrictBool,
    ValidationInfo,
    field_validator,
)
from pydantic_core import PydanticCustomError

from hooks.clock import parse_optional_time
from hooks.events import LifecycleEvent
from hooks.kube.port import Resource
from hooks.redaction import mask_credentials

KubeObject = dict[str, Any]
ObjectGroups = dict[str, dict[str, KubeObject]]

MEMBER_GROUPS = frozenset({"children", "attachments", "related"})
"""The request fields that map group keys to observed objects."""

MEMBERS_CHECKED = "members_checked"
"""Validation context key: True when the reader checked every object under `MEMBER_GROUPS`
with `member_problem` already (`hooks.request_reader`)."""


class _HookRequest(BaseModel):
    """What sync and finalize requests of both controller kinds share: the controller, the
    related objects and the finalizing flag, and lookups over the observed objects."""

    model_config = ConfigDict(extra="ignore")

    controller: Annotated[KubeObject, SkipValidation] = {}
    related: Annotated[ObjectGroups, SkipValidation] = {}
    # Go writes a bool; anything else ("yes", 1) is no hook call, not a request to finalize.
    finalizing: StrictBool = False
    _members_shared: bool = PrivateAttr(default=False)

    @property
    def members_shared(self) -> bool:
        """The observed objects are the request reader's own, the very ones every request
        with the same JSON text gets (`hooks.request_reader`): what was read from one may be
        found again by the object itself. Objects decoded with their request are new each
        time, and are not worth remembering so."""
        return self._members_shared

    def share_members(self) -> None:
        self._members_shared = True

    @field_validator("controller", mode="before")
    @classmethod
    def _controller_is_object(cls, value: object) -> object:
        return _object(value)

    @field_validator("related", mode="before")
    @classmethod
    def _related_groups(cls, value: object, info: ValidationInfo) -> object:
        return _groups_of_objects(value, info)

    def _owned(self) -> ObjectGroups:
        """The objects the controller manages itself: children, or attachments."""
        raise NotImplementedError

    def objects(self, kind: str, *, related: bool = False) -> list[KubeObject]:
        """Every observed object of `kind`, whatever its apiVersion and inner-key format."""
        groups = self.related if related else self._owned()
        found: list[KubeObject] = []
        for group_key, members in groups.items():
            if group_key.split(".", 1)[0] == kind:
                found.extend(members.values())
        return sorted(found, key=_object_name)

    def objects_by_name(self, kind: str, *, related: bool = False) -> dict[str, KubeObject]:
        """`objects(kind)` by name, each name to the object `object_named` finds: one pass for
        a parent that looks up a thousand of them."""
        by_name: dict[str, KubeObject] = {}
        for obj in self.objects(kind, related=related):
            by_name.setdefault(_object_name(obj), obj)
        return by_name

    def object_named(self, kind: str, name: str, *, related: bool = False) -> KubeObject | None:
        """The first of `objects(kind)` named `name`, found without sorting (the sort is stable)."""
        groups = self.related if related else self._owned()
        for group_key, members in groups.items():
            if group_key.split(".", 1)[0] == kind:
                for obj in members.values():
                    if _object_name(obj) == name:
                        return obj
        return None


class CompositeHookRequest(_HookRequest):
    """A sync or finalize request of a CompositeController (same shape in v1 and v2)."""

    parent: Annotated[KubeObject, SkipValidation]
    children: Annotated[ObjectGroups, SkipValidation] = {}

    @field_validator("parent", mode="before")
    @classmethod
    def _parent_has_identity(cls, value: object) -> object:
        return _identified(value, "parent")

    @field_validator("children", mode="before")
    @classmethod
    def _children_groups(cls, value: object, info: ValidationInfo) -> object:
        return _groups_of_objects(value, info)

    def _owned(self) -> ObjectGroups:
        return self.children


class SharedChild(dict[str, Any]):
    """A desired child shared by every answer that has it: built once per state of an
    observed child and kept in the readings memo (a set's Runner, an HRA's reservation), so
    never changed once built (a change is made on a copy). From its second answer on, its JSON
    is encoded once and taken as it is: a set of thousands answers with the same children again
    and again. A child in one answer only is encoded with that answer, as any other."""

    __slots__ = ("_encoded",)

    def for_answer(self) -> KubeObject | orjson.Fragment:
        # Threads answering at once may both encode it: the same bytes, either kept.
        encoded = getattr(self, "_encoded", None)
        if encoded is None:
            self._encoded: orjson.Fragment | object = _ANSWERED_ONCE
            return self
        if encoded is _ANSWERED_ONCE:
            encoded = self._encoded = orjson.Fragment(orjson.dumps(self))
        assert isinstance(encoded, orjson.Fragment)
        return encoded


_ANSWERED_ONCE = object()


def encode_answer(wire: dict[str, Any]) -> bytes:
    """An answer's JSON (`to_wire`), each shared child's taken as encoded before."""
    children = wire.get("children")
    if children:
        encoded = [
            child.for_answer() if type(child) is SharedChild else child for child in children
        ]
        wire = {**wire, "children": encoded}
    return orjson.dumps(wire)


class CompositeHookResponse(BaseModel):
    """The answer to a sync or finalize call."""

    model_config = ConfigDict(populate_by_name=True)

    status: KubeObject | None = None
    # Built by the handlers (typed), not read from outside: not copied again, a set's sync
    # answers with thousands of children.
    children: Annotated[list[KubeObject], SkipValidation] = []
    resync_after_seconds: float | None = Field(default=None, alias="resyncAfterSeconds")
    finalized: bool | None = None
    # For the HTTP edge, not part of the answer: Kubernetes Events about the parent.
    events: list[LifecycleEvent] = []

    def to_wire(self) -> dict[str, Any]:
        wire: dict[str, Any] = {"status": self.status, "children": self.children}
        resync = _wire_resync(self.resync_after_seconds)
        if resync is not None:
            wire["resyncAfterSeconds"] = resync
        if self.finalized is not None:
            wire["finalized"] = self.finalized
        return wire


class DecoratorHookRequest(_HookRequest):
    """A sync or finalize request of a DecoratorController (same shape in v1 and v2)."""

    object: Annotated[KubeObject, SkipValidation]
    attachments: Annotated[ObjectGroups, SkipValidation] = {}

    @field_validator("object", mode="before")
    @classmethod
    def _object_has_identity(cls, value: Any) -> Any:  # `object` is a field name here
        return _identified(value, "object")

    @field_validator("attachments", mode="before")
    @classmethod
    def _attachment_groups(cls, value: Any, info: ValidationInfo) -> Any:
        return _groups_of_objects(value, info)

    def _owned(self) -> ObjectGroups:
        return self.attachments


class DecoratorHookResponse(BaseModel):
    """The answer to a decorator's sync or finalize call. Labels and annotations are changes:
    keys left out stay as they are, a None value deletes the key. A None status is unchanged."""

    model_config = ConfigDict(populate_by_name=True)

    labels: dict[str, str | None] = {}
    annotations: dict[str, str | None] = {}
    status: KubeObject | None = None
    attachments: Annotated[list[KubeObject], SkipValidation] = []
    resync_after_seconds: float | None = Field(default=None, alias="resyncAfterSeconds")
    finalized: bool | None = None
    # Steps for the HTTP edge, not part of the answer: force-delete the observed object
    # (grace period 0, on the condition that its uid is still this one) before answering, and
    # Kubernetes Events about it.
    force_delete_uid: str | None = None
    events: list[LifecycleEvent] = []

    def to_wire(self) -> dict[str, Any]:
        wire: dict[str, Any] = {
            "labels": self.labels,
            "annotations": self.annotations,
            "status": self.status,
            "attachments": self.attachments,
        }
        resync = _wire_resync(self.resync_after_seconds)
        if resync is not None:
            wire["resyncAfterSeconds"] = resync
        if self.finalized is not None:
            wire["finalized"] = self.finalized
        return wire


MAX_RESYNC_AFTER_SECONDS = 86_400.0
"""The longest wait an answer asks for. Waits follow from times in observed objects, which may
be years away (a far deadline, an edited timestamp); Metacontroller turns the seconds into a
Go Duration, which ends at 292 years, and a day-long wait only costs one early call."""


def _wire_resync(seconds: float | None) -> float | None:
    """`resyncAfterSeconds` as sent: milliseconds, at most a day; None for no wait."""
    if seconds is None or not seconds > 0:
        return None
    return round(min(seconds, MAX_RESYNC_AFTER_SECONDS), 3)


class CustomizeHookRequest(BaseModel):
    """A customize request: `{"controller", "parent"}`. A decorator's object is accepted under
    `object` too, the name its sync requests use."""

    model_config = ConfigDict(extra="ignore")

    controller: Annotated[KubeObject, SkipValidation] = {}
    parent: Annotated[KubeObject, SkipValidation] = Field(
        validation_alias=AliasChoices("parent", "object")
    )

    @field_validator("controller", mode="before")
    @classmethod
    def _controller_is_object(cls, value: object) -> object:
        return _object(value)

    @field_validator("parent", mode="before")
    @classmethod
    def _parent_has_identity(cls, value: object) -> object:
        return _identified(value, "parent")


def object_or_empty(value: object) -> dict[str, Any]:
    """`value` when it is a JSON object, else an empty one. Observed objects are read through
    this (and `list_or_empty`): a part of the wrong type reads as absent, never as a crash."""
    return value if isinstance(value, dict) else {}


def list_or_empty(value: object) -> list[Any]:
    """`value` when it is a JSON array, else an empty one (see `object_or_empty`)."""
    return value if isinstance(value, list) else []


def observed_int(value: object) -> int | None:
    """A non-negative integer an observed object holds as text (a label, an annotation, a
    Secret's key): ASCII digits only, so that `int` cannot fail on other Unicode digits."""
    if isinstance(value, str) and 0 < len(value) <= 18 and value.isascii() and value.isdigit():
        return int(value)
    return None


_TIME_MARGIN = timedelta(days=365_250)
"""A thousand years: more than any duration a hook adds to or subtracts from a time (Go's
durations, which Kubernetes objects use, end at 292 years)."""


def observed_time(value: object) -> datetime | None:
    """A timestamp of an observed object (or a delivery), in UTC; None when it is absent, not
    a time, or so near the ends of the calendar (within `_TIME_MARGIN`) that adding or
    subtracting a duration would overflow."""
    parsed = parse_optional_time(value) if isinstance(value, str) else None
    if parsed is None:
        return None
    try:
        utc = parsed.astimezone(UTC)
        _ = (utc - _TIME_MARGIN, utc + _TIME_MARGIN)
    except OverflowError:
        return None
    return utc


def _identified(value: object, field: str) -> dict[str, Any]:
    """An object as the API server serves every kind: a name, and metadata of the types
    ObjectMeta gives them. Anything else is not a request Metacontroller sends."""
    obj = _object(value)
    metadata = obj.get("metadata")
    if not isinstance(metadata, dict) or not isinstance(metadata.get("name"), str):
        raise ValueError(f"{field}.metadata.name is required")
    if not metadata["name"]:  # no object is served without one
        raise ValueError(f"{field}.metadata.name must not be empty")
    problem = _metadata_problem(metadata) or _kind_problem(obj)
    if problem:
        raise ValueError(f"{field}.{problem}")
    return obj


_METADATA_STRINGS = (
    "namespace",
    "uid",
    "resourceVersion",
    "generateName",
    "creationTimestamp",
    "deletionTimestamp",
)


def _metadata_problem(metadata: dict[str, Any]) -> str:
    # Times are strings here; readers parse them (`observed_time`) and treat an unreadable
    # one as absent, so a thousand children cost no parsing at the edge. The checks map
    # built-ins over values (no Python loop per label): a set's sync checks thousands.
    get = metadata.get
    for key in _METADATA_STRINGS:
        value = get(key)
        if value is not None and not isinstance(value, str):
            return f"metadata.{key} must be a string"
    generation = get("generation")
    if generation is not None and type(generation) is not int:  # a bool is no int64 either
        return "metadata.generation must be an integer"
    for key in ("labels", "annotations"):
        value = get(key)
        if value is not None and not _string_map(value):
            return f"metadata.{key} must map strings to strings"
    finalizers = get("finalizers")
    if finalizers is not None and not (isinstance(finalizers, list) and _strings(finalizers)):
        return "metadata.finalizers must be a list of strings"
    owners = get("ownerReferences")
    if owners is not None and not (isinstance(owners, list) and all(map(_reference, owners))):
        return "metadata.ownerReferences must be a list of references with kind, name and uid"
    return ""


def _kind_problem(obj: dict[str, Any]) -> str:
    for key in ("apiVersion", "kind"):
        value = obj.get(key)
        if value is not None and not isinstance(value, str):
            return f"{key} must be a string"
    return ""


def _strings(values: Iterable[object]) -> bool:
    return all(map(isinstance, values, repeat(str)))


def _string_map(value: object) -> bool:
    return isinstance(value, dict) and _strings(value.values())


def _reference(value: object) -> bool:
    """An owner reference: kind, name and uid, all strings."""
    return isinstance(value, dict) and _strings(map(value.get, ("kind", "name", "uid")))


def _observed_parts_problem(obj: dict[str, Any]) -> str:
    """Every kind the hooks observe (pods, StatefulSets, Secrets, claims, the custom
    resources) has an object spec and status, or none."""
    for key in ("spec", "status"):
        if obj.get(key) is not None and not isinstance(obj[key], dict):
            return f"{key} must be an object"
    data = obj.get("data")
    if data is not None and not _string_map(data):
        return "data must map strings to strings"
    return ""


def _groups_of_objects(value: object, info: ValidationInfo) -> object:
    """Observed objects by group and key. Each is an object the API server served, so it has
    a name: anything else is not a request Metacontroller sends."""
    if value is None:
        return {}
    if info.context is not None and info.context.get(MEMBERS_CHECKED) is True:
        return value  # read as groups of checked objects (`hooks.request_reader`)
    groups = _object(value)
    for group_key, members in groups.items():
        if not isinstance(members, dict):
            raise ValueError(f"group {_shown(group_key)} must map keys to objects")
        for key, obj in members.items():
            # The member's description is only built for an error: a set has a thousand.
            if not isinstance(obj, dict):
                raise ValueError(f"{_member(group_key, key)} must be an object")
            problem = member_problem(obj)
            if problem:
                raise ValueError(f"{_member(group_key, key)}{problem}")
    return groups


def member_problem(obj: dict[str, Any]) -> str:
    """What makes `obj` no object an API server serves, as the end of a message naming it
    ("" when nothing does)."""
    try:
        _identified(obj, "")
    except ValueError as error:
        return str(error)
    problem = _observed_parts_problem(obj)
    return f": {problem}" if problem else ""


def _member(group_key: str, key: str) -> str:
    return f"{_shown(group_key)} member {_shown(key)}"


def _shown(key: str) -> str:
    """A key as an error message quotes it: short, whatever its length, and masked before it
    is cut (cut first, a token's tail would escape the mask's minimum length)."""
    key = mask_credentials(key)
    return repr(key if len(key) <= 60 else key[:57] + "...")


def _object(value: object) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise PydanticCustomError("dict_type", "Input should be a valid dictionary")
    return value


def _object_name(obj: KubeObject) -> str:
    metadata = obj.get("metadata")
    name = metadata.get("name") if isinstance(metadata, dict) else None
    return name if isinstance(name, str) else ""


class HookKind(Enum):
    COMPOSITE = "composite"  # sync/finalize of a CompositeController: CompositeHookRequest
    DECORATOR = "decorator"  # sync/finalize of a DecoratorController: DecoratorHookRequest
    # customize: the parent as a dict in, related-resource rules out. A CompositeController's
    # request is read as its sync requests are; a DecoratorController's names its object
    # `parent` or `object` (CustomizeHookRequest).
    CUSTOMIZE = "customize"
    CUSTOMIZE_DECORATOR = "customize-decorator"


@dataclass(frozen=True)
class HookRoute:
    """One hook a controller serves. `blocking` handlers may call GitHub (synchronous I/O)
    and run in a worker thread; the others only compute, on the event loop."""

    path: str
    kind: HookKind
    handler: Callable[[Any], Any]
    blocking: bool = False
    fresh_parent: Callable[[Any], Resource | None] | None = None
    """When this names the parent's resource for a request, the edge reads the parent anew
    from the API server before the handler decides. Metacontroller sends the parent from an
    informer cache that may lag its children; where a stale status would lead to a step that
    cannot be taken back, the handler decides on the fresh one."""
