"""CustomResourceDefinitions generated from the pydantic resource models.

The models are the one source of truth: `arc-hooks crds` renders them into
`metacontroller/crds/`, and the tests fail when the committed files drift from the models.

Pydantic emits JSON Schema (draft 2020-12); the API server wants a *structural* OpenAPI v3.0
schema. The conversion below inlines `$defs`, collapses `X | None` to `X`, turns `const` into
`enum`, drops annotations the API server does not know, and refuses what it cannot express
faithfully (general unions, tuples, recursion) instead of emitting a schema that quietly accepts
less or more than the model does.

`to_json_schema` and `prune` go the other way, so that tests (and any simulation of the API
server) can validate and prune objects against a CRD schema the way Kubernetes does.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel

from hooks.resources import autoscaler, replicaset, reservation, runner, runnerset

PrinterColumn = Mapping[str, Any]
"""One `additionalPrinterColumns` entry: `name`, `type`, `jsonPath`, optionally `priority`..."""

CRD_API_VERSION = "apiextensions.k8s.io/v1"

GENERATED_HEADER = (
    "# Generated from the resource models in hooks/resources by `arc-hooks crds`. Do not edit.\n"
)

# Keys copied as they are: they mean the same in JSON Schema and in Kubernetes' OpenAPI v3.0.
_PASSTHROUGH_KEYS = frozenset(
    {
        "description",
        "format",
        "pattern",
        "enum",
        "minimum",
        "maximum",
        "multipleOf",
        "minLength",
        "maxLength",
        "minItems",
        "maxItems",
        "minProperties",
        "maxProperties",
        "example",
        "x-kubernetes-preserve-unknown-fields",
        "x-kubernetes-int-or-string",
        "x-kubernetes-embedded-resource",
        "x-kubernetes-list-type",
        "x-kubernetes-list-map-keys",
        "x-kubernetes-map-type",
        "x-kubernetes-validations",
    }
)

# Annotations with no effect on validation; Kubernetes has no place for them (or, for `title`,
# pydantic's generated titles are noise in `kubectl explain`).
_DROPPED_KEYS = frozenset(
    {
        "title",
        "examples",
        "readOnly",
        "writeOnly",
        "deprecated",
        "$comment",
        "$schema",
        "$id",
    }
)

# Handled explicitly by the converter.
_STRUCTURE_KEYS = frozenset(
    {
        "type",
        "properties",
        "required",
        "additionalProperties",
        "items",
        "prefixItems",
        "uniqueItems",
        "const",
        "default",
        "exclusiveMinimum",
        "exclusiveMaximum",
        "anyOf",
        "oneOf",
        "allOf",
        "$ref",
        "$defs",
    }
)

_ROOT_FIELDS: dict[str, dict[str, Any]] = {
    "apiVersion": {
        "description": "The versioned schema of this representation of an object.",
        "type": "string",
    },
    "kind": {
        "description": "The REST resource this object represents, in CamelCase.",
        "type": "string",
    },
    # The API server owns metadata's schema; a CRD may only restrict name and generateName.
    "metadata": {"type": "object"},
}


class UnsupportedSchemaError(ValueError):
    """A model uses a construct that has no faithful structural-schema equivalent."""


# ---------------------------------------------------------------------------------------------
# JSON Schema (pydantic) -> structural OpenAPI v3.0 (Kubernetes)


def structural_schema(model: type[BaseModel]) -> dict[str, Any]:
    """The structural OpenAPI v3.0 schema of a model (not yet specialised for a CRD root)."""
    raw = model.model_json_schema(mode="validation")
    converter = _Converter(raw.pop("$defs", {}))
    schema, _ = converter.convert(raw, model.__name__, ())
    return schema


class _Converter:
    def __init__(self, defs: Mapping[str, Any]) -> None:
        self._defs = defs

    def convert(
        self, node: Mapping[str, Any], path: str, refs: tuple[str, ...]
    ) -> tuple[dict[str, Any], bool]:
        """Convert one node; the flag tells whether the node also accepted `null`."""
        node, refs = self._expand(node, path, refs)

        if "anyOf" in node or "oneOf" in node:
            return self._union(node, path, refs)

        accepts_null = False
        types = node.get("type")
        if isinstance(types, list):
            accepts_null = "null" in types
            types = [t for t in types if t != "null"]
            if len(types) != 1:
                raise UnsupportedSchemaError(f"{path}: a value of several types {types}")
            types = types[0]
        if types == "null":
            raise UnsupportedSchemaError(f"{path}: a field that can only be null")

        out: dict[str, Any] = {}
        for key, value in node.items():
            if key in _PASSTHROUGH_KEYS:
                out[key] = copy.deepcopy(value)
            elif key not in _DROPPED_KEYS and key not in _STRUCTURE_KEYS:
                raise UnsupportedSchemaError(f"{path}: JSON Schema keyword {key!r}")

        if "const" in node:
            out["enum"] = [node["const"]]
        for bound, limit in (("exclusiveMinimum", "minimum"), ("exclusiveMaximum", "maximum")):
            # Draft 2020-12 carries the bound in exclusiveX; OpenAPI v3.0 uses a boolean flag.
            if bound in node:
                out[limit] = node[bound]
                out[bound] = True

        if types == "object" or "properties" in node:
            out.update(self._object(node, path, refs))
        elif types == "array":
            out.update(self._array(node, path, refs))
        elif types is not None:
            out["type"] = types
        elif not out.get("x-kubernetes-int-or-string"):
            # `Any`: keep the value as it is; structural schemas allow an untyped node only here.
            out["x-kubernetes-preserve-unknown-fields"] = True

        if "default" in node:
            default = _clean_default(node["default"])
            if not _is_zero(default):
                _check_default(default, out, path)
                out["default"] = default
        return out, accepts_null

    def _expand(
        self, node: Mapping[str, Any], path: str, refs: tuple[str, ...]
    ) -> tuple[dict[str, Any], tuple[str, ...]]:
        """Inline `$ref` and single-member `allOf`; the referring node's keys win."""
        node = dict(node)
        while True:
            if "$ref" in node:
                name = str(node.pop("$ref")).rsplit("/", 1)[-1]
                if name in refs:
                    raise UnsupportedSchemaError(f"{path}: recursive model {name}")
                if name not in self._defs:
                    raise UnsupportedSchemaError(f"{path}: unresolved reference {name}")
                refs = (*refs, name)
                node = {**self._defs[name], **node}
            elif "allOf" in node:
                members = node.pop("allOf")
                if len(members) != 1:
                    raise UnsupportedSchemaError(f"{path}: allOf with {len(members)} members")
                node = {**members[0], **node}
            else:
                return node, refs

    def _union(
        self, node: dict[str, Any], path: str, refs: tuple[str, ...]
    ) -> tuple[dict[str, Any], bool]:
        key = "anyOf" if "anyOf" in node else "oneOf"
        branches = node.pop(key)
        if node.get("x-kubernetes-int-or-string"):
            # Already in one of the two shapes Kubernetes allows for int-or-string.
            out, accepts_null = self.convert(node, path, refs)
            out["anyOf"] = copy.deepcopy(branches)
            return out, accepts_null

        non_null = [b for b in branches if b.get("type") != "null"]
        accepts_null = len(non_null) < len(branches)
        if len(non_null) == 1:
            # `X | None`: the type is X. Keys of the union node (description, default) win.
            out, inner_null = self.convert({**non_null[0], **node}, path, refs)
            return out, accepts_null or inner_null

        converted = [self.convert(b, path, refs)[0] for b in non_null]
        merged = _merge_scalar_union(converted, path)
        rest, rest_null = self.convert(node, path, refs) if node else ({}, False)
        rest.pop("x-kubernetes-preserve-unknown-fields", None)
        return {**merged, **rest}, accepts_null or rest_null

    def _object(self, node: Mapping[str, Any], path: str, refs: tuple[str, ...]) -> dict[str, Any]:
        out: dict[str, Any] = {"type": "object"}
        properties = node.get("properties", {})
        required = list(node.get("required", []))
        extra = node.get("additionalProperties")

        if properties:
            out["properties"] = {}
            for name, sub in properties.items():
                schema, accepts_null = self.convert(sub, f"{path}.{name}", refs)
                # An optional field whose default is None: the API server prunes a null, and the
                # model reads the missing field as None, so nullable is not needed. It is needed
                # where null differs from absent: a required field, or another default.
                if accepts_null and (
                    name in required or "default" not in sub or sub["default"] is not None
                ):
                    schema["nullable"] = True
                out["properties"][name] = schema
            if required:
                out["required"] = required
            if extra is True or extra == {}:
                out["x-kubernetes-preserve-unknown-fields"] = True
            elif isinstance(extra, Mapping):
                raise UnsupportedSchemaError(
                    f"{path}: both properties and typed additionalProperties"
                )
        elif isinstance(extra, Mapping) and extra:
            schema, accepts_null = self.convert(extra, f"{path}.*", refs)
            if accepts_null:
                schema["nullable"] = True
            out["additionalProperties"] = schema
        elif extra is not False and not node.get("x-kubernetes-preserve-unknown-fields"):
            # `dict[str, Any]` or a bare `dict`: any content.
            out["x-kubernetes-preserve-unknown-fields"] = True
        # additionalProperties: false (extra="forbid") is dropped: structural schemas prune
        # unknown fields instead of rejecting them.
        return out

    def _array(self, node: Mapping[str, Any], path: str, refs: tuple[str, ...]) -> dict[str, Any]:
        if "prefixItems" in node:
            raise UnsupportedSchemaError(f"{path}: tuples")
        out: dict[str, Any] = {"type": "array"}
        items, accepts_null = self.convert(node.get("items", {}), f"{path}[]", refs)
        if accepts_null:
            items["nullable"] = True
        out["items"] = items
        if node.get("uniqueItems"):
            # uniqueItems is forbidden in CRDs (quadratic); a set-typed list is the equivalent.
            if items.get("type") not in ("string", "integer", "number", "boolean"):
                raise UnsupportedSchemaError(f"{path}: a set of non-scalar items")
            out["x-kubernetes-list-type"] = "set"
        return out


def _merge_scalar_union(branches: list[dict[str, Any]], path: str) -> dict[str, Any]:
    types = {b.get("type") for b in branches}
    enums_only = all(set(b) <= {"type", "enum", "description"} and "enum" in b for b in branches)
    if enums_only and len(types) == 1:
        enum: list[Any] = []
        for b in branches:
            enum.extend(v for v in b["enum"] if v not in enum)
        return {"type": types.pop(), "enum": enum}
    if all(set(b) <= {"type", "description"} for b in branches):
        if types == {"integer", "string"}:
            return {
                "anyOf": [{"type": "integer"}, {"type": "string"}],
                "x-kubernetes-int-or-string": True,
            }
        if types == {"integer", "number"}:
            return {"type": "number"}
    raise UnsupportedSchemaError(
        f"{path}: a union of {sorted(str(t) for t in types)}; use a free-form object instead"
    )


def _clean_default(value: Any) -> Any:
    """A default as the API server should store it: no null members (they would be pruned)."""
    if isinstance(value, dict):
        return {k: _clean_default(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_clean_default(v) for v in value]
    return value


def _is_zero(value: Any) -> bool:
    """Whether a default says nothing more than an absent field does.

    Such defaults are left out: the models apply them anyway, and writing them into every stored
    object would make our objects differ from ARC's for no gain.
    """
    if value is None or value is False or value == 0 or value == "" or value == []:
        return True
    if isinstance(value, dict):
        return all(_is_zero(v) for v in value.values())
    return False


def _check_default(value: Any, schema: Mapping[str, Any], path: str) -> None:
    """Kubernetes rejects a CRD whose default does not validate; fail at generation instead."""
    python_types: dict[str, type | tuple[type, ...]] = {
        "string": str,
        "integer": int,
        "number": (int, float),
        "boolean": bool,
        "object": dict,
        "array": list,
    }
    expected = python_types.get(schema.get("type", ""))
    wrong_type = expected is not None and (
        not isinstance(value, expected)
        or (isinstance(value, bool) and schema.get("type") != "boolean")
    )
    if wrong_type or ("enum" in schema and value not in schema["enum"]):
        raise UnsupportedSchemaError(f"{path}: default {value!r} does not match its schema")


# ---------------------------------------------------------------------------------------------
# CustomResourceDefinitions


def crd_for(
    model: type[BaseModel],
    *,
    plural: str,
    singular: str,
    kind: str,
    short_names: Sequence[str] = (),
    printer_columns: Iterable[PrinterColumn] = (),
    scope: str = "Namespaced",
    group: str = runner.GROUP,
    version: str = runner.VERSION,
    description: str | None = None,
) -> dict[str, Any]:
    """A `apiextensions.k8s.io/v1` CRD for a resource model with `spec` and optional `status`.

    The model's own `apiVersion`, `kind` and `metadata` fields are replaced by the shapes the API
    server requires at a CRD's root. A `status` field turns the status subresource on, which
    Metacontroller requires of every parent.
    """
    schema = structural_schema(model)
    properties = dict(schema.get("properties", {}))
    properties.update(copy.deepcopy(_ROOT_FIELDS))
    root: dict[str, Any] = {"type": "object", "properties": properties}
    required = [r for r in schema.get("required", []) if r not in _ROOT_FIELDS]
    if required:
        root["required"] = required
    if description or schema.get("description"):
        root["description"] = description or schema["description"]

    names: dict[str, Any] = {
        "kind": kind,
        "listKind": f"{kind}List",
        "plural": plural,
        "singular": singular,
    }
    if short_names:
        names["shortNames"] = list(short_names)

    version_entry: dict[str, Any] = {
        "name": version,
        "served": True,
        "storage": True,
        "schema": {"openAPIV3Schema": root},
    }
    columns = [dict(c) for c in printer_columns]
    if columns:
        version_entry["additionalPrinterColumns"] = columns
    if "status" in properties:
        version_entry["subresources"] = {"status": {}}

    return {
        "apiVersion": CRD_API_VERSION,
        "kind": "CustomResourceDefinition",
        "metadata": {
            "name": f"{plural}.{group}",
            "labels": {"app.kubernetes.io/part-of": "arc-hooks"},
        },
        "spec": {
            "group": group,
            "names": names,
            "scope": scope,
            "versions": [version_entry],
        },
    }


def _column(name: str, json_path: str, type_: str = "string") -> dict[str, Any]:
    return {"name": name, "type": type_, "jsonPath": json_path}


def runner_crd() -> dict[str, Any]:
    """The Runner CRD, with ARC's names and printer columns."""
    return crd_for(
        runner.Runner,
        plural="runners",
        singular="runner",
        kind="Runner",
        short_names=(),
        printer_columns=[
            _column("Enterprise", ".spec.enterprise"),
            _column("Organization", ".spec.organization"),
            _column("Repository", ".spec.repository"),
            _column("Group", ".spec.group"),
            _column("Labels", ".spec.labels"),
            _column("Status", ".status.phase"),
            _column("Message", ".status.message"),
            _column("WF Repo", ".status.workflow.repository"),
            _column("WF Run", ".status.workflow.runID"),
            _column("Age", ".metadata.creationTimestamp", "date"),
        ],
        description="A GitHub Actions self-hosted runner: its registration and the pod running it.",
    )


def runnerreplicaset_crd() -> dict[str, Any]:
    """The RunnerReplicaSet CRD, with ARC's names and printer columns."""
    return crd_for(
        replicaset.RunnerReplicaSet,
        plural="runnerreplicasets",
        singular="runnerreplicaset",
        kind="RunnerReplicaSet",
        short_names=("rrs",),
        printer_columns=[
            _column("Desired", ".spec.replicas", "number"),
            _column("Current", ".status.replicas", "number"),
            _column("Ready", ".status.readyReplicas", "number"),
            _column("Age", ".metadata.creationTimestamp", "date"),
        ],
        description="A set of identical Runners, created and removed to match spec.replicas.",
    )


def runnerdeployment_crd() -> dict[str, Any]:
    """The RunnerDeployment CRD, with ARC's names and printer columns."""
    return crd_for(
        replicaset.RunnerDeployment,
        plural="runnerdeployments",
        singular="runnerdeployment",
        kind="RunnerDeployment",
        short_names=("rdeploy",),
        printer_columns=[
            _column("Enterprise", ".spec.template.spec.enterprise"),
            _column("Organization", ".spec.template.spec.organization"),
            _column("Repository", ".spec.template.spec.repository"),
            _column("Group", ".spec.template.spec.group"),
            _column("Labels", ".spec.template.spec.labels"),
            # ARC's column reads spec.replicas, which its HRA overwrites; an HRA here leaves
            # the spec as applied, and the size the set runs at is in the status.
            _column("Desired", ".status.desiredReplicas", "number"),
            _column("Current", ".status.replicas", "number"),
            _column("Up-To-Date", ".status.updatedReplicas", "number"),
            _column("Available", ".status.availableReplicas", "number"),
            _column("Age", ".metadata.creationTimestamp", "date"),
        ],
        description=(
            "Runners from a template, rolled out through one RunnerReplicaSet per template version."
        ),
    )


def runnerset_crd() -> dict[str, Any]:
    """The RunnerSet CRD, with ARC's names and printer columns."""
    return crd_for(
        runnerset.RunnerSet,
        plural="runnersets",
        singular="runnerset",
        kind="RunnerSet",
        short_names=(),
        printer_columns=[
            _column("Desired", ".status.desiredReplicas", "number"),  # as a RunnerDeployment's
            _column("Current", ".status.replicas", "number"),
            _column("Up-To-Date", ".status.updatedReplicas", "number"),
            _column("Available", ".status.availableReplicas", "number"),
            _column("Age", ".metadata.creationTimestamp", "date"),
        ],
        description=(
            "Runners in StatefulSets, one per runner, for runners that keep volumes "
            "(volumeClaimTemplates) from one runner to the next."
        ),
    )


def horizontalrunnerautoscaler_crd() -> dict[str, Any]:
    """The HorizontalRunnerAutoscaler CRD, with ARC's names and printer columns."""
    return crd_for(
        autoscaler.HorizontalRunnerAutoscaler,
        plural="horizontalrunnerautoscalers",
        singular="horizontalrunnerautoscaler",
        kind="HorizontalRunnerAutoscaler",
        short_names=("hra",),
        printer_columns=[
            _column("Min", ".spec.minReplicas", "number"),
            _column("Max", ".spec.maxReplicas", "number"),
            _column("Desired", ".status.desiredReplicas", "number"),
            _column("Schedule", ".status.scheduledOverridesSummary"),
        ],
        description=(
            "Sizes a RunnerDeployment or RunnerSet from GitHub metrics, webhook capacity "
            "reservations and scheduled overrides."
        ),
    )


def capacityreservation_crd() -> dict[str, Any]:
    """The CapacityReservation CRD (this project's own: ARC kept reservations in the HRA)."""
    return crd_for(
        reservation.CapacityReservation,
        plural="capacityreservations",
        singular="capacityreservation",
        kind=reservation.KIND,
        short_names=("capres",),
        group=reservation.GROUP,
        version=reservation.VERSION,
        printer_columns=[
            _column("Autoscaler", ".metadata.ownerReferences[0].name"),
            _column("Replicas", ".spec.replicas", "number"),
            _column("Repository", ".spec.job.repository"),
            _column("Job", ".spec.job.name"),
            _column("Expires", ".spec.expirationTime", "date"),
            _column("Completed", ".spec.completionTime", "date"),
            _column("Age", ".metadata.creationTimestamp", "date"),
        ],
        description=(
            "One runner reserved for one queued workflow job, counted by the "
            "HorizontalRunnerAutoscaler that owns it until the job completes or it expires."
        ),
    )


def crd_file_name(crd: Mapping[str, Any]) -> str:
    """The file name controller-gen (and so ARC) uses: `<group>_<plural>.yaml`."""
    spec = crd["spec"]
    return f"{spec['group']}_{spec['names']['plural']}.yaml"


def all_crds() -> dict[str, dict[str, Any]]:
    """Every CRD this project serves, by file name."""
    crds = [
        runner_crd(),
        runnerreplicaset_crd(),
        runnerdeployment_crd(),
        runnerset_crd(),
        horizontalrunnerautoscaler_crd(),
        capacityreservation_crd(),
    ]
    return {crd_file_name(crd): crd for crd in crds}


def render_yaml(crd: Mapping[str, Any]) -> str:
    """Deterministic YAML: sorted keys, block style, no line wrapping."""
    body = yaml.safe_dump(
        dict(crd),
        sort_keys=True,
        default_flow_style=False,
        allow_unicode=True,
        width=1 << 16,
    )
    return GENERATED_HEADER + body


def write_crds(directory: Path) -> list[Path]:
    """Write every CRD into `directory`; returns the paths written."""
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for name, crd in sorted(all_crds().items()):
        path = directory / name
        path.write_text(render_yaml(crd), encoding="utf-8")
        written.append(path)
    return written


def check_crds(directory: Path) -> list[str]:
    """Names of CRD files in `directory` that are missing or differ from the models."""
    stale = []
    for name, crd in sorted(all_crds().items()):
        path = directory / name
        if not path.is_file() or path.read_text(encoding="utf-8") != render_yaml(crd):
            stale.append(name)
    return stale


# ---------------------------------------------------------------------------------------------
# Using a CRD schema: validation and pruning as the API server does them


def openapi_schema(crd: Mapping[str, Any], version: str | None = None) -> dict[str, Any]:
    """The `openAPIV3Schema` of a CRD version (the storage version by default)."""
    for entry in crd["spec"]["versions"]:
        if entry["name"] == version or (version is None and entry.get("storage")):
            schema: dict[str, Any] = entry["schema"]["openAPIV3Schema"]
            return schema
    raise KeyError(f"{crd['metadata']['name']} has no version {version or '(storage)'}")


def to_json_schema(schema: Mapping[str, Any], *, reject_unknown: bool = False) -> dict[str, Any]:
    """Translate a CRD's OpenAPI v3.0 schema into JSON Schema (draft 2020-12).

    `nullable` becomes a `null` type, boolean exclusive bounds become numeric ones. With
    `reject_unknown`, objects that Kubernetes would prune reject unknown fields instead, as
    `kubectl apply` does with server-side field validation (strict, its default).
    """
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key == "properties":
            out[key] = {
                name: to_json_schema(sub, reject_unknown=reject_unknown)
                for name, sub in value.items()
            }
        elif key in ("items", "additionalProperties", "not") and isinstance(value, Mapping):
            out[key] = to_json_schema(value, reject_unknown=reject_unknown)
        elif key in ("anyOf", "oneOf", "allOf"):
            out[key] = [to_json_schema(sub, reject_unknown=reject_unknown) for sub in value]
        elif key in ("exclusiveMinimum", "exclusiveMaximum", "nullable"):
            continue
        else:
            out[key] = copy.deepcopy(value)
    for bound, limit in (("exclusiveMinimum", "minimum"), ("exclusiveMaximum", "maximum")):
        if schema.get(bound) is True and limit in schema:
            out[bound] = out.pop(limit)
    if schema.get("nullable"):
        if "type" in out:
            out["type"] = [out["type"], "null"]
        elif "anyOf" in out:
            out["anyOf"] = [*out["anyOf"], {"type": "null"}]
        if "enum" in out:
            out["enum"] = [*out["enum"], None]
    if (
        reject_unknown
        and "properties" in out
        and "additionalProperties" not in out
        and not schema.get("x-kubernetes-preserve-unknown-fields")
        and not schema.get("x-kubernetes-embedded-resource")
    ):
        out["additionalProperties"] = False
    return out


def prune(obj: Any, schema: Mapping[str, Any], *, root: bool = True) -> Any:
    """A copy of `obj` without the fields the API server would drop before storing it.

    Unknown fields go unless a node preserves them; a null goes where the field is not
    nullable. The root's apiVersion, kind and metadata are always kept.
    """
    if isinstance(obj, dict):
        properties = schema.get("properties", {})
        extra = schema.get("additionalProperties")
        preserve = bool(schema.get("x-kubernetes-preserve-unknown-fields"))
        out: dict[str, Any] = {}
        for key, value in obj.items():
            if root and key in _ROOT_FIELDS:
                out[key] = copy.deepcopy(value)
            elif key in properties:
                sub = properties[key]
                if value is None and not sub.get("nullable"):
                    continue
                out[key] = prune(value, sub, root=False)
            elif isinstance(extra, Mapping):
                if value is None and not extra.get("nullable"):
                    continue
                out[key] = prune(value, extra, root=False)
            elif preserve or extra is True:
                out[key] = copy.deepcopy(value)
        return out
    if isinstance(obj, list):
        items = schema.get("items")
        if isinstance(items, Mapping):
            return [prune(item, items, root=False) for item in obj]
        return copy.deepcopy(obj)
    return obj
