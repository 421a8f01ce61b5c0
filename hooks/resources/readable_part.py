"""What of a custom resource still reads when the whole does not.

A Runner or RunnerSet deleted after an edit its model refuses (`organization: 1`,
`ephemeral: "false"`) still has runners to stop, and a stop needs little of the spec: where the
runners registered, and their names. Finalize reads the resource without the fields that do not
read, so that its runners stop as any runner does, a busy one after its job, and the problems
stay reported. A sync never acts on a part: an invalid spec keeps what it has there.

A status is read the same way (`readable_fields`): one field edited into the wrong type by hand
does not take the registration it records with it.
"""

from __future__ import annotations

from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

Model = TypeVar("Model", bound=BaseModel)


def readable_part(model: type[Model], raw: dict[str, Any]) -> Model | None:
    """`raw` read as `model` without each spec field that does not read (an empty object in
    place of a required one) and without a status that does not read; None when what is left
    still does not read (its metadata, say)."""
    spec = raw.get("spec")
    part: dict[str, Any] = {**raw, "spec": dict(spec) if isinstance(spec, dict) else {}}
    emptied: set[str] = set()
    while True:
        try:
            return model.model_validate(part)
        except ValidationError as error:
            if not _leave_out(part, emptied, error):
                return None


def _leave_out(part: dict[str, Any], emptied: set[str], error: ValidationError) -> bool:
    """Leave out what `error` points at; False when nothing more can be left out."""
    spec: dict[str, Any] = part["spec"]
    changed = False
    for item in error.errors():
        loc = item["loc"]
        if loc[:1] == ("status",) and "status" in part:
            del part["status"]
            changed = True
        elif loc[:1] == ("spec",) and len(loc) >= 2 and isinstance(loc[1], str):
            field = loc[1]
            if field in spec and field not in emptied:
                del spec[field]
                changed = True
            elif item["type"] == "missing" and len(loc) == 2 and field not in emptied:
                spec[field] = {}
                emptied.add(field)
                changed = True
    return changed


def readable_fields(model: type[Model], raw: dict[str, Any]) -> Model | None:
    """`raw` read as `model` without each top-level field that does not read; None when what is
    left still does not read (a required field)."""
    part = dict(raw)
    while True:
        try:
            return model.model_validate(part)
        except ValidationError as error:
            faulty = {str(item["loc"][0]) for item in error.errors() if item["loc"]}
            if not faulty & part.keys():
                return None
            for field in faulty & part.keys():
                del part[field]


def readable_status(model: type[Model], parent: dict[str, Any]) -> Model:
    """A parent's status as `model`, each field that reads (`readable_fields`); empty when it
    has none or none reads."""
    raw = parent.get("status")
    if not isinstance(raw, dict):
        return model()
    return readable_fields(model, raw) or model()
