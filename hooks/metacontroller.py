"""Metacontroller's hook wire format (Composite and Decorator controllers' sync/finalize, and
customize; hook versions v1/v2).

The request maps children (or attachments) by group key `<Kind>.<apiVersion>` and then by an
inner key whose format differs between hook versions (v1: name, v2: namespace/name). Handlers
never depend on the inner key: they read each object's own metadata.

The request's objects are checked for their shape only and kept as decoded, not copied: a
request can carry a thousand children, and handlers only read them.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, SkipValidation, field_validator
from pydantic_core import PydanticCustomError

KubeObject = dict[str, Any]
ObjectGroups = dict[str, dict[str, KubeObject]]


class _HookRequest(BaseModel):
    """What sync and finalize requests of both controller kinds share: the controller, the
    related objects and the finalizing flag, and lookups over the observed objects."""

    model_config = ConfigDict(extra="ignore")

    controller: Annotated[KubeObject, SkipValidation] = {}
    related: Annotated[ObjectGroups, SkipValidation] = {}
    finalizing: bool = False

    @field_validator("controller", mode="before")
    @classmethod
    def _controller_is_object(cls, value: object) -> object:
        return _object(value)

    @field_validator("related", mode="before")
    @classmethod
    def _related_groups(cls, value: object) -> object:
        return _groups_of_objects(value)

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
    def _children_groups(cls, value: object) -> object:
        return _groups_of_objects(value)

    def _owned(self) -> ObjectGroups:
        return self.children


class CompositeHookResponse(BaseModel):
    """The answer to a sync or finalize call."""

    model_config = ConfigDict(populate_by_name=True)

    status: KubeObject | None = None
    children: list[KubeObject] = []
    resync_after_seconds: float | None = Field(default=None, alias="resyncAfterSeconds")
    finalized: bool | None = None

    def to_wire(self) -> dict[str, Any]:
        wire: dict[str, Any] = {"status": self.status, "children": self.children}
        if self.resync_after_seconds is not None and self.resync_after_seconds > 0:
            wire["resyncAfterSeconds"] = round(self.resync_after_seconds, 3)
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
    def _attachment_groups(cls, value: Any) -> Any:
        return _groups_of_objects(value)

    def _owned(self) -> ObjectGroups:
        return self.attachments


class DecoratorHookResponse(BaseModel):
    """The answer to a decorator's sync or finalize call. Labels and annotations are changes:
    keys left out stay as they are, a None value deletes the key. A None status is unchanged."""

    model_config = ConfigDict(populate_by_name=True)

    labels: dict[str, str | None] = {}
    annotations: dict[str, str | None] = {}
    status: KubeObject | None = None
    attachments: list[KubeObject] = []
    resync_after_seconds: float | None = Field(default=None, alias="resyncAfterSeconds")
    finalized: bool | None = None

    def to_wire(self) -> dict[str, Any]:
        wire: dict[str, Any] = {
            "labels": self.labels,
            "annotations": self.annotations,
            "status": self.status,
            "attachments": self.attachments,
        }
        if self.resync_after_seconds is not None and self.resync_after_seconds > 0:
            wire["resyncAfterSeconds"] = round(self.resync_after_seconds, 3)
        if self.finalized is not None:
            wire["finalized"] = self.finalized
        return wire


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


def _identified(value: object, field: str) -> dict[str, Any]:
    obj = _object(value)
    metadata = obj.get("metadata")
    if not isinstance(metadata, dict) or not isinstance(metadata.get("name"), str):
        raise ValueError(f"{field}.metadata.name is required")
    return obj


def _groups_of_objects(value: object) -> object:
    if value is None:
        return {}
    groups = _object(value)
    for group_key, members in groups.items():
        if not isinstance(members, dict):
            raise ValueError(f"group {group_key!r} must map keys to objects")
        for key, obj in members.items():
            if not isinstance(obj, dict):
                raise ValueError(f"{group_key!r} member {key!r} must be an object")
    return groups


def _object(value: object) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise PydanticCustomError("dict_type", "Input should be a valid dictionary")
    return value


def _object_name(obj: KubeObject) -> str:
    metadata = obj.get("metadata")
    name = metadata.get("name") if isinstance(metadata, dict) else None
    return name if isinstance(name, str) else ""
