"""Metacontroller's hook wire format (CompositeController sync/finalize, hook versions v1/v2).

The request maps children by group key `<Kind>.<apiVersion>` and then by an inner key whose
format differs between hook versions (v1: name, v2: namespace/name). Handlers never depend on
the inner key: they read each object's own metadata.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

KubeObject = dict[str, Any]


class CompositeHookRequest(BaseModel):
    """A sync or finalize request of a CompositeController (same shape in v1 and v2)."""

    model_config = ConfigDict(extra="ignore")

    controller: KubeObject = {}
    parent: KubeObject
    children: dict[str, dict[str, KubeObject]] = {}
    related: dict[str, dict[str, KubeObject]] = {}
    finalizing: bool = False

    @field_validator("parent")
    @classmethod
    def _parent_has_identity(cls, parent: KubeObject) -> KubeObject:
        metadata = parent.get("metadata")
        if not isinstance(metadata, dict) or not isinstance(metadata.get("name"), str):
            raise ValueError("parent.metadata.name is required")
        return parent

    @field_validator("children", "related", mode="before")
    @classmethod
    def _null_is_empty(cls, value: object) -> object:
        return {} if value is None else value

    def objects(self, kind: str, *, related: bool = False) -> list[KubeObject]:
        """Every observed object of `kind`, whatever its apiVersion and inner-key format."""
        groups = self.related if related else self.children
        found: list[KubeObject] = []
        for group_key, members in groups.items():
            if group_key.split(".", 1)[0] != kind or not isinstance(members, dict):
                continue
            found.extend(obj for obj in members.values() if isinstance(obj, dict))
        return sorted(found, key=_object_name)

    def object_named(self, kind: str, name: str) -> KubeObject | None:
        for obj in self.objects(kind):
            if _object_name(obj) == name:
                return obj
        return None


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


def _object_name(obj: KubeObject) -> str:
    metadata = obj.get("metadata")
    name = metadata.get("name") if isinstance(metadata, dict) else None
    return name if isinstance(name, str) else ""
