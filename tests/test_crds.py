"""The CRDs generated from the resource models: current, structural, and a drop-in for ARC's."""

from __future__ import annotations

import copy
import dataclasses
import functools
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any, Literal

import jsonschema
import kubernetes_validate
import pytest
import yaml
from pydantic import Field

from hooks.resources import crd as crdgen
from hooks.resources.autoscaler import HorizontalRunnerAutoscaler
from hooks.resources.common import ObjectMeta, ResourceModel
from hooks.resources.replicaset import RunnerDeployment, RunnerReplicaSet
from hooks.resources.runner import Runner, RunnerStatus
from hooks.resources.runnerset import RunnerSet

ROOT = Path(__file__).resolve().parent.parent
CRD_DIR = ROOT / "metacontroller" / "crds"
REFERENCE = Path(__file__).resolve().parent / "reference"
ARC_CRDS = REFERENCE / "arc-legacy-crds"
ARC_RUNNER_CRD = ARC_CRDS / "actions.summerwind.dev_runners.yaml"
METACONTROLLER_CRDS = REFERENCE / "metacontroller" / "metacontroller-crds-v4.17.2.yaml"
KUBERNETES_VERSION = "1.33.0"

Schema = Mapping[str, Any]


@dataclasses.dataclass(frozen=True)
class Kind:
    """One of ARC's resources: our model and generated CRD, ARC's CRD and manifests."""

    kind: str
    plural: str
    model: type[ResourceModel]
    crd: Callable[[], dict[str, Any]]
    samples: str
    # Paths ARC accepts and we deliberately do not.
    dropped: frozenset[tuple[str, ...]] = frozenset()

    @property
    def arc_crd_path(self) -> Path:
        return ARC_CRDS / f"actions.summerwind.dev_{self.plural}.yaml"

    def schema(self) -> dict[str, Any]:
        return crdgen.openapi_schema(self.crd())

    def arc_crd(self) -> dict[str, Any]:
        (arc,) = load_yaml_documents(self.arc_crd_path)
        return arc

    def arc_schema(self) -> dict[str, Any]:
        return crdgen.openapi_schema(self.arc_crd())


KINDS = {
    k.kind: k
    for k in (
        # The registration token never goes into status (it lives in the Runner's Secret), so a
        # migrated object's token is pruned.
        Kind(
            "Runner",
            "runners",
            Runner,
            crdgen.runner_crd,
            "runner-samples.yaml",
            frozenset({("status", "registration", "token")}),
        ),
        Kind(
            "RunnerReplicaSet",
            "runnerreplicasets",
            RunnerReplicaSet,
            crdgen.runnerreplicaset_crd,
            "runnerreplicaset-samples.yaml",
        ),
        Kind(
            "RunnerDeployment",
            "runnerdeployments",
            RunnerDeployment,
            crdgen.runnerdeployment_crd,
            "runnerdeployment-samples.yaml",
        ),
        Kind(
            "RunnerSet",
            "runnersets",
            RunnerSet,
            crdgen.runnerset_crd,
            "runnerset-samples.yaml",
        ),
        Kind(
            "HorizontalRunnerAutoscaler",
            "horizontalrunnerautoscalers",
            HorizontalRunnerAutoscaler,
            crdgen.horizontalrunnerautoscaler_crd,
            "horizontalrunnerautoscaler-samples.yaml",
        ),
    )
}
KIND_NAMES = sorted(KINDS)


@functools.cache
def _parse(path: Path) -> list[dict[str, Any]]:
    # ARC's CRDs are ~10k lines each; parse each once per run.
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    with path.open(encoding="utf-8") as f:
        return [doc for doc in yaml.load_all(f, Loader=loader) if doc]


def load_yaml_documents(path: Path) -> list[dict[str, Any]]:
    return copy.deepcopy(_parse(path))


def runner_schema() -> dict[str, Any]:
    return KINDS["Runner"].schema()


@functools.cache
def _validator(kind: str, arc: bool) -> Any:
    """A validator for a kind's schema, built once: ARC's schemas are large."""
    k = KINDS[kind]
    return validator(k.arc_schema() if arc else k.schema())


def validator(schema: Schema, *, reject_unknown: bool = True) -> Any:
    return jsonschema.Draft202012Validator(
        crdgen.to_json_schema(schema, reject_unknown=reject_unknown)
    )


# ---------------------------------------------------------------------------------------------
# Structural schemas, following
# https://kubernetes.io/docs/tasks/extend-kubernetes/custom-resources/custom-resource-definitions/#specifying-a-structural-schema
# and the CRD validation of apiextensions-apiserver.

# The fields of apiextensions.k8s.io/v1 JSONSchemaProps that a structural schema may use.
_ALLOWED_KEYS = {
    "description",
    "type",
    "format",
    "title",
    "default",
    "maximum",
    "exclusiveMaximum",
    "minimum",
    "exclusiveMinimum",
    "maxLength",
    "minLength",
    "pattern",
    "maxItems",
    "minItems",
    "uniqueItems",
    "multipleOf",
    "enum",
    "maxProperties",
    "minProperties",
    "required",
    "items",
    "allOf",
    "oneOf",
    "anyOf",
    "not",
    "properties",
    "additionalProperties",
    "externalDocs",
    "example",
    "nullable",
    "x-kubernetes-preserve-unknown-fields",
    "x-kubernetes-embedded-resource",
    "x-kubernetes-int-or-string",
    "x-kubernetes-list-map-keys",
    "x-kubernetes-list-type",
    "x-kubernetes-map-type",
    "x-kubernetes-validations",
}
_TYPES = {"object", "array", "string", "integer", "number", "boolean"}
_SCALARS = {"string", "integer", "number", "boolean"}
# Inside allOf/anyOf/oneOf/not only value validations are allowed.
_FORBIDDEN_IN_JUNCTORS = {"type", "description", "default", "additionalProperties", "nullable"}
_INT_OR_STRING = [{"type": "integer"}, {"type": "string"}]


def structural_violations(schema: Schema) -> list[str]:
    """Every way `schema` breaks the rules for a CRD's structural schema (empty: structural)."""
    errors: list[str] = []
    if schema.get("type") != "object":
        errors.append("<root>: type must be object")
    if schema.get("nullable"):
        errors.append("<root>: must not be nullable")
    _check(schema, "", errors, specified=True, in_junctor=False, int_or_string=False)
    metadata = schema.get("properties", {}).get("metadata")
    if metadata is not None:
        _check_root_metadata(metadata, errors)
    return errors


def _check(
    node: Schema,
    path: str,
    errors: list[str],
    *,
    specified: bool,
    in_junctor: bool,
    int_or_string: bool,
) -> None:
    """Check one node; `int_or_string`: inside the junctors of an int-or-string node."""
    where = path or "<root>"
    for key in node:
        if key not in _ALLOWED_KEYS:
            errors.append(f"{where}: {key!r} is not allowed in a CRD schema")
    if node.get("uniqueItems"):
        errors.append(f"{where}: uniqueItems must not be true (use x-kubernetes-list-type: set)")

    preserve = node.get("x-kubernetes-preserve-unknown-fields")
    if preserve is not None and preserve is not True:
        errors.append(f"{where}: x-kubernetes-preserve-unknown-fields must be true or absent")

    if in_junctor:
        for key in _FORBIDDEN_IN_JUNCTORS & set(node):
            if not (key == "type" and int_or_string and node in _INT_OR_STRING):
                errors.append(f"{where}: {key!r} is not allowed inside allOf/anyOf/oneOf/not")
        for key in node:
            if key.startswith("x-kubernetes-") and key != "x-kubernetes-validations":
                errors.append(f"{where}: {key!r} is not allowed inside allOf/anyOf/oneOf/not")
    else:
        type_ = node.get("type")
        if type_ is not None and type_ not in _TYPES:
            errors.append(f"{where}: unknown type {type_!r}")
        if node.get("x-kubernetes-int-or-string"):
            if type_ is not None:
                errors.append(f"{where}: type must be empty with x-kubernetes-int-or-string")
            if "anyOf" in node and node["anyOf"] != _INT_OR_STRING:
                errors.append(f"{where}: int-or-string anyOf must be [integer, string]")
        elif specified and not type_ and not preserve:
            errors.append(f"{where}: a specified field or item needs a type")
        if node.get("x-kubernetes-embedded-resource") and type_ != "object":
            errors.append(f"{where}: an embedded resource must be an object")
        _check_list_and_map_types(node, where, errors)

    if "properties" in node and "additionalProperties" in node:
        errors.append(f"{where}: properties and additionalProperties are mutually exclusive")
    if node.get("additionalProperties") is False:
        errors.append(f"{where}: additionalProperties must not be false")

    for name, sub in node.get("properties", {}).items():
        _check(
            sub,
            f"{path}.{name}",
            errors,
            specified=not in_junctor,
            in_junctor=in_junctor,
            int_or_string=False,
        )
    for key in ("items", "additionalProperties"):
        sub = node.get(key)
        if isinstance(sub, Mapping):
            _check(
                sub,
                f"{path}.{key}",
                errors,
                specified=not in_junctor,
                in_junctor=in_junctor,
                int_or_string=False,
            )

    junctors = [*node.get("allOf", []), *node.get("anyOf", []), *node.get("oneOf", [])]
    if isinstance(node.get("not"), Mapping):
        junctors.append(node["not"])
    for member in junctors:
        _check(
            member,
            f"{path}(junctor)",
            errors,
            specified=False,
            in_junctor=True,
            int_or_string=int_or_string or bool(node.get("x-kubernetes-int-or-string")),
        )
        # A field or item constrained inside a junctor must also be specified outside of it.
        for name in member.get("properties", {}):
            if name not in node.get("properties", {}):
                errors.append(f"{where}: {name!r} is used in a junctor but not specified")
        if "items" in member and "items" not in node:
            errors.append(f"{where}: items are used in a junctor but not specified")

    if "default" in node and not in_junctor:
        _check_default(node, where, errors)


def _check_list_and_map_types(node: Schema, where: str, errors: list[str]) -> None:
    list_type = node.get("x-kubernetes-list-type")
    items = node.get("items", {})
    if list_type is not None:
        if node.get("type") != "array" or list_type not in ("atomic", "set", "map"):
            errors.append(f"{where}: x-kubernetes-list-type {list_type!r} on a non-list")
        scalar = items.get("type") in _SCALARS or items.get("x-kubernetes-map-type") == "atomic"
        if list_type == "set" and not scalar:
            errors.append(f"{where}: a set needs scalar (or atomic) items")
        if list_type == "map":
            keys = node.get("x-kubernetes-list-map-keys") or []
            properties = items.get("properties", {})
            if items.get("type") != "object" or not keys:
                errors.append(f"{where}: a map list needs object items and list-map-keys")
            for key in keys:
                if key not in items.get("required", []) and "default" not in properties.get(
                    key, {}
                ):
                    errors.append(f"{where}: list-map-key {key!r} must be required or defaulted")
    elif "x-kubernetes-list-map-keys" in node:
        errors.append(f"{where}: x-kubernetes-list-map-keys needs x-kubernetes-list-type: map")
    map_type = node.get("x-kubernetes-map-type")
    if map_type is not None and (
        node.get("type") != "object" or map_type not in ("granular", "atomic")
    ):
        errors.append(f"{where}: x-kubernetes-map-type {map_type!r} on a non-object")


def _check_default(node: Schema, where: str, errors: list[str]) -> None:
    default = node["default"]
    bare = {k: v for k, v in node.items() if k != "default"}
    problem = jsonschema.exceptions.best_match(
        validator(bare, reject_unknown=False).iter_errors(default)
    )
    if problem is not None:
        errors.append(f"{where}: default {default!r} does not validate: {problem.message}")
    elif crdgen.prune(default, bare, root=False) != default:
        errors.append(f"{where}: default {default!r} has fields that would be pruned")


def _check_root_metadata(metadata: Schema, errors: list[str]) -> None:
    if metadata.get("type") != "object":
        errors.append(".metadata: type must be object")
    extra = set(metadata) - {"type", "description", "properties"}
    if extra:
        errors.append(f".metadata: only name and generateName may be restricted, not {extra}")
    for name, sub in metadata.get("properties", {}).items():
        if name not in ("name", "generateName") or "default" in sub:
            errors.append(f".metadata.{name}: only name and generateName may be restricted")


# ---------------------------------------------------------------------------------------------
# Generated files


def test_committed_crds_match_the_models() -> None:
    stale = crdgen.check_crds(CRD_DIR)
    assert not stale, f"stale or missing CRDs {stale}: run `arc-hooks crds` and commit the result"


def test_no_crd_file_without_a_model() -> None:
    committed = {p.name for p in CRD_DIR.glob("*.yaml")}
    orphans = committed - set(crdgen.all_crds())
    assert not orphans, f"{sorted(orphans)} are not generated from any model: delete them"


def test_write_then_check_round_trips(tmp_path: Path) -> None:
    assert sorted(crdgen.check_crds(tmp_path)) == sorted(crdgen.all_crds())
    written = crdgen.write_crds(tmp_path)
    assert {p.name for p in written} == set(crdgen.all_crds())
    assert crdgen.check_crds(tmp_path) == []
    first = written[0]
    first.write_text(first.read_text(encoding="utf-8") + "# edited\n", encoding="utf-8")
    assert crdgen.check_crds(tmp_path) == [first.name]


def test_rendering_is_deterministic_and_parses_back() -> None:
    again = crdgen.all_crds()
    for name, crd in crdgen.all_crds().items():
        text = crdgen.render_yaml(crd)
        assert text == crdgen.render_yaml(again[name])
        assert yaml.safe_load(text) == crd


@pytest.mark.parametrize("name", sorted(crdgen.all_crds()))
def test_crd_fits_client_side_apply(name: str) -> None:
    # `kubectl apply` (client side) stores the object in an annotation limited to 256 KiB;
    # ARC's own CRDs are too large for it, ours must not be.
    assert len(crdgen.render_yaml(crdgen.all_crds()[name]).encode()) < 200 * 1024


# ---------------------------------------------------------------------------------------------
# Every generated CRD: valid, structural, a parent Metacontroller accepts


@pytest.mark.parametrize("name", sorted(crdgen.all_crds()))
def test_crd_validates_against_kubernetes(name: str) -> None:
    kubernetes_validate.validate(crdgen.all_crds()[name], KUBERNETES_VERSION, strict=True)


@pytest.mark.parametrize("name", sorted(crdgen.all_crds()))
def test_crd_schema_is_structural(name: str) -> None:
    crd = crdgen.all_crds()[name]
    for version in crd["spec"]["versions"]:
        assert structural_violations(version["schema"]["openAPIV3Schema"]) == []


ARC_GROUP_CRDS = sorted(
    name for name in crdgen.all_crds() if name.startswith("actions.summerwind.dev_")
)


def test_the_only_crd_of_our_own_is_the_capacity_reservation() -> None:
    assert set(crdgen.all_crds()) - set(ARC_GROUP_CRDS) == {
        "arc-hooks.dev_capacityreservations.yaml"
    }
    crd = crdgen.capacityreservation_crd()
    (version,) = crd["spec"]["versions"]
    # A child, never a parent: no status, so no status subresource.
    assert "subresources" not in version
    assert crd["spec"]["scope"] == "Namespaced"
    assert version["schema"]["openAPIV3Schema"]["properties"]["spec"]["required"] == [
        "effectiveTime",
        "expirationTime",
    ]


@pytest.mark.parametrize("name", ARC_GROUP_CRDS)
def test_crd_serves_one_storage_version_with_status_subresource(name: str) -> None:
    crd = crdgen.all_crds()[name]
    spec = crd["spec"]
    assert spec["group"] == "actions.summerwind.dev"
    assert crd["metadata"]["name"] == f"{spec['names']['plural']}.{spec['group']}"
    assert name == f"{spec['group']}_{spec['names']['plural']}.yaml"
    (version,) = spec["versions"]
    assert (version["name"], version["served"], version["storage"]) == ("v1alpha1", True, True)
    # Metacontroller ignores a CompositeController whose parent lacks the status subresource.
    assert version["subresources"] == {"status": {}}
    properties = version["schema"]["openAPIV3Schema"]["properties"]
    assert {"apiVersion", "kind", "metadata", "spec", "status"} <= set(properties)


def test_structural_checker_accepts_the_upstream_crds() -> None:
    # The checker itself is checked on CRDs real API servers accept.
    crds = [
        *(KINDS[kind].arc_crd() for kind in KIND_NAMES),
        *load_yaml_documents(METACONTROLLER_CRDS),
    ]
    for crd in crds:
        for version in crd["spec"]["versions"]:
            assert structural_violations(version["schema"]["openAPIV3Schema"]) == [], crd[
                "metadata"
            ]["name"]


@pytest.mark.parametrize(
    ("schema", "problem"),
    [
        ({"type": "object", "properties": {"a": {"description": "no type"}}}, "needs a type"),
        ({"type": "object", "properties": {"a": {"$ref": "#/x"}}}, "'$ref'"),
        (
            {"type": "object", "properties": {"a": {"anyOf": [{"type": "string"}]}}},
            "needs a type",
        ),
        (
            {
                "type": "object",
                "properties": {"a": {"type": "string", "anyOf": [{"type": "string"}]}},
            },
            "inside allOf/anyOf/oneOf/not",
        ),
        (
            {
                "type": "object",
                "properties": {
                    "a": {"type": "object", "anyOf": [{"properties": {"b": {"minLength": 1}}}]}
                },
            },
            "not specified",
        ),
        (
            {"type": "object", "properties": {"a": {"type": "array", "uniqueItems": True}}},
            "uniqueItems",
        ),
        (
            {
                "type": "object",
                "properties": {
                    "a": {"type": "string", "x-kubernetes-int-or-string": True},
                },
            },
            "type must be empty",
        ),
        ({"type": "object", "properties": {"a": {"type": "integer", "default": "x"}}}, "default"),
        (
            {
                "type": "object",
                "properties": {"metadata": {"type": "object", "properties": {"labels": {}}}},
            },
            "only name and generateName",
        ),
        ({"type": "object", "properties": {"a": {"type": "null"}}}, "unknown type"),
        ({"type": "object", "properties": {"a": {"const": 1, "type": "integer"}}}, "'const'"),
    ],
)
def test_structural_checker_rejects(schema: Schema, problem: str) -> None:
    violations = structural_violations(schema)
    assert any(problem in v for v in violations), violations


# ---------------------------------------------------------------------------------------------
# The generator on its own, on a model that uses every construct it supports


class _Item(ResourceModel):
    name: str
    weight: int = 0


class _ExampleSpec(ResourceModel):
    required_optional: int | None
    five_or_null: int | None = 5
    optional: str | None = Field(default=None, description="Left out when unset.")
    plain_list: list[str] = []
    tags: set[str] = set()
    positive: int = Field(default=1, gt=0)
    mode: Literal["fast", "slow"] = "slow"
    fixed: Literal["only"] = "only"
    anything: dict[str, Any] = {}
    counts: dict[str, int] = {}
    item: _Item | None = None
    items: list[_Item] = []
    size: int | str = 0
    ratio: float | None = None


class _Example(ResourceModel):
    api_version: str = "actions.summerwind.dev/v1alpha1"
    kind: Literal["Example"] = "Example"
    metadata: ObjectMeta = ObjectMeta()
    spec: _ExampleSpec
    status: _Item | None = None


def _example_crd() -> dict[str, Any]:
    return crdgen.crd_for(
        _Example,
        plural="examples",
        singular="example",
        kind="Example",
        short_names=["ex"],
        printer_columns=[{"name": "Mode", "type": "string", "jsonPath": ".spec.mode"}],
    )


def test_generator_output_for_each_construct() -> None:
    crd = _example_crd()
    root = crdgen.openapi_schema(crd)
    spec = root["properties"]["spec"]
    p = spec["properties"]
    assert root["required"] == ["spec"]
    assert root["properties"]["metadata"] == {"type": "object"}
    assert spec["required"] == ["requiredOptional"]
    # Null differs from absent only where the field is required or defaults to something else.
    assert p["requiredOptional"] == {"type": "integer", "nullable": True}
    assert p["fiveOrNull"] == {"type": "integer", "nullable": True, "default": 5}
    assert p["optional"] == {"type": "string", "description": "Left out when unset."}
    # Zero defaults say nothing an absent field does not.
    assert p["plainList"] == {"type": "array", "items": {"type": "string"}}
    assert p["tags"] == {
        "type": "array",
        "items": {"type": "string"},
        "x-kubernetes-list-type": "set",
    }
    assert p["positive"] == {
        "type": "integer",
        "minimum": 0,
        "exclusiveMinimum": True,
        "default": 1,
    }
    assert p["mode"] == {"type": "string", "enum": ["fast", "slow"], "default": "slow"}
    assert p["fixed"] == {"type": "string", "enum": ["only"], "default": "only"}
    assert p["anything"] == {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
    assert p["counts"] == {"type": "object", "additionalProperties": {"type": "integer"}}
    item = {
        "type": "object",
        "properties": {"name": {"type": "string"}, "weight": {"type": "integer"}},
        "required": ["name"],
    }
    assert p["item"] == item
    assert p["items"] == {"type": "array", "items": item}
    assert p["size"] == {
        "anyOf": [{"type": "integer"}, {"type": "string"}],
        "x-kubernetes-int-or-string": True,
    }
    assert p["ratio"] == {"type": "number"}
    assert crd["spec"]["names"]["shortNames"] == ["ex"]
    assert crd["spec"]["versions"][0]["subresources"] == {"status": {}}
    assert structural_violations(root) == []
    kubernetes_validate.validate(crd, KUBERNETES_VERSION, strict=True)


def test_generator_leaves_status_subresource_off_without_status() -> None:
    class NoStatus(ResourceModel):
        spec: _Item

    crd = crdgen.crd_for(NoStatus, plural="nostatuses", singular="nostatus", kind="NoStatus")
    assert "subresources" not in crd["spec"]["versions"][0]


class _Tree(ResourceModel):
    children: list[_Tree] = []


class _Union(ResourceModel):
    value: int | list[str] = 0


class _Pair(ResourceModel):
    pair: tuple[int, str] = (0, "")


class _Both(ResourceModel):
    value: str | int | None = None


@pytest.mark.parametrize(
    ("model", "problem"),
    [(_Tree, "recursive"), (_Union, "union"), (_Pair, "tuples")],
)
def test_generator_refuses_what_it_cannot_express(model: type[ResourceModel], problem: str) -> None:
    with pytest.raises(crdgen.UnsupportedSchemaError, match=problem):
        crdgen.structural_schema(model)


def test_generator_turns_int_or_string_unions_into_int_or_string() -> None:
    schema = crdgen.structural_schema(_Both)
    assert schema["properties"]["value"] == {
        "anyOf": [{"type": "integer"}, {"type": "string"}],
        "x-kubernetes-int-or-string": True,
    }


# ---------------------------------------------------------------------------------------------
# Runner: a drop-in for ARC's Runner CRD


@pytest.mark.parametrize("kind", KIND_NAMES)
def test_names_and_printer_columns_are_arcs(kind: str) -> None:
    arc = KINDS[kind].arc_crd()
    ours = KINDS[kind].crd()
    assert ours["metadata"]["name"] == arc["metadata"]["name"]
    assert ours["spec"]["names"] == arc["spec"]["names"]
    assert ours["spec"]["scope"] == arc["spec"]["scope"] == "Namespaced"
    (arc_version,) = arc["spec"]["versions"]
    (our_version,) = ours["spec"]["versions"]
    ours_columns = our_version["additionalPrinterColumns"]
    if kind in DESIRED_FROM_STATUS:
        # ARC's HRA writes its size into spec.replicas; ours leaves the spec as applied, so
        # DESIRED reads the status, where the size the set runs at is.
        ours_columns = [
            {**c, "jsonPath": ".spec.replicas"} if c["name"] == "Desired" else c
            for c in ours_columns
        ]
        assert DESIRED_COLUMN in our_version["additionalPrinterColumns"]
    assert ours_columns == arc_version["additionalPrinterColumns"]
    assert our_version["subresources"] == arc_version["subresources"] == {"status": {}}


DESIRED_FROM_STATUS = ("RunnerDeployment", "RunnerSet")
DESIRED_COLUMN = {"name": "Desired", "type": "number", "jsonPath": ".status.desiredReplicas"}


def test_every_arc_kind_with_a_crd_is_covered() -> None:
    generated = {crdgen.all_crds()[name]["spec"]["names"]["kind"] for name in ARC_GROUP_CRDS}
    assert generated == set(KINDS)


def _paths(node: Schema, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], Schema]]:
    """Every field path a schema specifies; `[]` stands for list items, `{}` for map values."""
    yield path, node
    for name, sub in node.get("properties", {}).items():
        yield from _paths(sub, (*path, name))
    if isinstance(node.get("items"), Mapping):
        yield from _paths(node["items"], (*path, "[]"))
    if isinstance(node.get("additionalProperties"), Mapping):
        yield from _paths(node["additionalProperties"], (*path, "{}"))


def _lookup(schema: Schema, path: tuple[str, ...]) -> tuple[Schema | None, bool]:
    """Our node for `path`, or (None, True) if an ancestor keeps unknown fields."""
    node: Schema = schema
    for part in path:
        if part == "[]":
            child = node.get("items")
        elif part == "{}":
            child = node.get("additionalProperties")
        else:
            child = node.get("properties", {}).get(part)
            if child is None and isinstance(node.get("additionalProperties"), Mapping):
                child = node["additionalProperties"]
        if not isinstance(child, Mapping):
            preserved = bool(node.get("x-kubernetes-preserve-unknown-fields"))
            return None, preserved
        node = child
    return node, False


def _type_of(node: Schema) -> str:
    if node.get("x-kubernetes-int-or-string"):
        return "int-or-string"
    return str(node.get("type", "any" if node.get("x-kubernetes-preserve-unknown-fields") else ""))


def _incompatibilities(arc: Schema, ours: Schema) -> list[str]:
    """Ways in which `ours` rejects a value that `arc` accepts at the same path."""
    problems = []
    arc_type, our_type = _type_of(arc), _type_of(ours)
    wider = {
        ("integer", "number"),
        ("integer", "int-or-string"),
        ("string", "int-or-string"),
    }
    if our_type != "any" and arc_type != our_type and (arc_type, our_type) not in wider:
        problems.append(f"type {our_type}, ARC's is {arc_type}")
    if "pattern" in ours and ours["pattern"] != arc.get("pattern"):
        problems.append(f"pattern {ours['pattern']!r}, ARC's is {arc.get('pattern')!r}")
    if "enum" in ours and not set(arc.get("enum", [object()])) <= set(ours["enum"]):
        problems.append(f"enum {ours['enum']}, ARC's is {arc.get('enum')}")
    if "format" in ours and ours["format"] != arc.get("format"):
        problems.append(f"format {ours['format']!r}, ARC's is {arc.get('format')!r}")
    stricter_required = set(ours.get("required", [])) - set(arc.get("required", []))
    if stricter_required:
        problems.append(f"requires {sorted(stricter_required)}, ARC does not")
    for bound in ("minimum", "maximum", "minLength", "maxLength", "minItems", "maxItems"):
        if bound in ours and ours[bound] != arc.get(bound):
            problems.append(f"{bound} {ours[bound]}, ARC's is {arc.get(bound)}")
    return problems


@pytest.mark.parametrize("kind", KIND_NAMES)
def test_accepts_every_field_arc_accepts(kind: str) -> None:
    ours = KINDS[kind].schema()
    problems = []
    for path, arc_node in _paths(KINDS[kind].arc_schema()):
        if path in KINDS[kind].dropped:
            continue
        node, preserved = _lookup(ours, path)
        if node is None:
            if not preserved:
                problems.append(f"{'.'.join(path)}: missing")
            continue
        problems += [
            f"{'.'.join(path) or '<root>'}: {p}" for p in _incompatibilities(arc_node, node)
        ]
    assert problems == []


@pytest.mark.parametrize("kind", KIND_NAMES)
def test_spec_invents_no_field(kind: str) -> None:
    # Manifests written for arc-hooks stay portable back to ARC: every spec field path is one
    # of ARC's (status may say more).
    ours = KINDS[kind].schema()["properties"]["spec"]
    arc = KINDS[kind].arc_schema()["properties"]["spec"]
    assert set(ours["properties"]) == set(arc["properties"])
    invented = [".".join(path) for path, _ in _paths(ours) if _lookup(arc, path) == (None, False)]
    assert invented == []


def _arc_samples() -> list[tuple[str, dict[str, Any]]]:
    return [
        (kind, sample)
        for kind in KIND_NAMES
        for sample in load_yaml_documents(ARC_CRDS / KINDS[kind].samples)
    ]


def _kept(wire: Any, sample: Any) -> bool:
    """Whether `wire` still says everything `sample` does (it may add defaults)."""
    if isinstance(sample, dict):
        return isinstance(wire, dict) and all(
            key in wire and _kept(wire[key], value) for key, value in sample.items()
        )
    if isinstance(sample, list):
        return (
            isinstance(wire, list)
            and len(wire) == len(sample)
            and all(_kept(w, v) for w, v in zip(wire, sample, strict=True))
        )
    return bool(wire == sample)


def test_every_kind_has_arc_samples() -> None:
    assert {kind for kind, _ in _arc_samples()} == set(KINDS)


@pytest.mark.parametrize(
    ("kind", "sample"),
    _arc_samples(),
    ids=lambda v: str(v["metadata"]["name"]) if isinstance(v, dict) else str(v),
)
def test_arc_manifests_apply_unchanged(kind: str, sample: dict[str, Any]) -> None:
    assert sample["kind"] == kind
    # Against ARC's schema first: the samples are what ARC accepts, unknown fields included.
    _validator(kind, True).validate(sample)
    _validator(kind, False).validate(sample)
    # Nothing of a valid ARC manifest is lost on the way into our CRD and our model.
    assert crdgen.prune(sample, KINDS[kind].schema()) == sample
    obj = KINDS[kind].model.model_validate(sample)
    wire = obj.to_wire()
    assert wire["metadata"]["name"] == sample["metadata"]["name"]
    assert _kept(wire["spec"], sample["spec"])
    # What the model writes back validates too.
    _validator(kind, False).validate({**sample, "spec": wire["spec"]})


def test_kept_compares_deeply() -> None:
    assert _kept({"a": [{"b": 1, "c": []}], "d": 2}, {"a": [{"b": 1}]})
    assert not _kept({"a": [{"b": 1}]}, {"a": [{"b": 2}]})
    assert not _kept({"a": [{"b": 1}]}, {"a": [{"b": 1}, {"b": 1}]})
    assert not _kept({"a": {}}, {"a": {"b": None}})


def test_schema_rejects_what_arc_rejects() -> None:
    bad = {
        "apiVersion": "actions.summerwind.dev/v1alpha1",
        "kind": "Runner",
        "metadata": {"name": "bad"},
        "spec": {"repository": "no-slash", "volumeSizeLimit": "lots", "dockerMTU": "1500"},
    }
    errors = {".".join(map(str, e.path)) for e in validator(runner_schema()).iter_errors(bad)}
    assert errors == {"spec.repository", "spec.volumeSizeLimit", "spec.dockerMTU"}


def test_unknown_spec_fields_are_pruned_not_rejected() -> None:
    obj = {
        "apiVersion": "actions.summerwind.dev/v1alpha1",
        "kind": "Runner",
        "metadata": {"name": "r", "namespace": "default", "labels": {"a": "b"}},
        "spec": {
            "organization": "org",
            "fromTheFuture": {"x": 1},
            "group": None,
            "containers": [{"name": "runner", "someNewPodField": True}],
        },
    }
    pruned = crdgen.prune(obj, runner_schema())
    # Unknown fields and nulls go; free-form Kubernetes objects are kept whole.
    assert pruned["spec"] == {
        "organization": "org",
        "containers": [{"name": "runner", "someNewPodField": True}],
    }
    assert pruned["metadata"] == obj["metadata"]
    # The API server prunes before it validates (and, with non-strict field validation, only
    # warns about the unknown fields); the model ignores them too.
    validator(runner_schema()).validate(pruned)
    runner = Runner.model_validate(obj)
    assert "fromTheFuture" not in runner.to_wire()["spec"]
    assert runner.spec.organization == "org"


def test_status_schema_accepts_what_the_hooks_write() -> None:
    status = RunnerStatus.model_validate(
        {
            "ready": False,
            "phase": "Pending",
            "reason": "Registering",
            "message": "waiting for the runner to register",
            "registration": {
                "organization": "org",
                "labels": ["linux"],
                "expiresAt": "2026-01-01T00:00:00Z",
            },
            "workflow": {"repository": "org/repo", "runID": "42"},
            "lastRegistrationCheckTime": "2026-01-01T00:00:00Z",
            "runnerId": 7,
            "online": True,
            "busy": False,
            "conditions": [
                {
                    "type": "Registered",
                    "status": "True",
                    "reason": "Found",
                    "message": "",
                    "lastTransitionTime": "2026-01-01T00:00:00Z",
                }
            ],
            "gracefulStop": {
                "reason": "Deleted",
                "startedAt": "2026-01-01T00:00:00Z",
                "waitingForCompletion": True,
                "outcome": "Unregistered",
            },
            "failures": 1,
            "lastFailureTime": "2026-01-01T00:00:00Z",
            "observedGeneration": 3,
        }
    ).to_wire()
    status_schema = runner_schema()["properties"]["status"]
    validator(status_schema).validate(status)
    assert crdgen.prune(status, status_schema, root=False) == status
    assert "observedGeneration" in status_schema["properties"]
    assert "conditions" in status_schema["properties"]


def _errors(kind: str, obj: dict[str, Any], *, arc: bool) -> set[str]:
    return {".".join(map(str, e.path)) for e in _validator(kind, arc).iter_errors(obj)}


def test_autoscaler_schema_rejects_what_arc_rejects() -> None:
    bad = {
        "apiVersion": "actions.summerwind.dev/v1alpha1",
        "kind": "HorizontalRunnerAutoscaler",
        "metadata": {"name": "bad"},
        "spec": {
            "scaleTargetRef": {"kind": "Deployment", "name": "x"},
            "minReplicas": "1",
            "metrics": [{"type": "PercentageRunnersBusy", "scaleUpFactor": 2}],
            "scheduledOverrides": [
                {"startTime": "2026-01-01T00:00:00Z", "minReplicas": -1},
                {
                    "startTime": "2026-01-01T00:00:00Z",
                    "endTime": "2026-01-02T00:00:00Z",
                    "recurrenceRule": {"frequency": "Hourly"},
                },
            ],
        },
    }
    expected = {
        "spec.scaleTargetRef.kind",
        "spec.minReplicas",
        "spec.metrics.0.scaleUpFactor",
        "spec.scheduledOverrides.0",  # no endTime
        "spec.scheduledOverrides.0.minReplicas",
        "spec.scheduledOverrides.1.recurrenceRule.frequency",
    }
    kind = "HorizontalRunnerAutoscaler"
    assert _errors(kind, bad, arc=True) == expected
    assert _errors(kind, bad, arc=False) == expected


@pytest.mark.parametrize("kind", ["RunnerReplicaSet", "RunnerDeployment"])
def test_replica_set_schemas_reject_what_arc_rejects(kind: str) -> None:
    bad = {
        "apiVersion": "actions.summerwind.dev/v1alpha1",
        "kind": kind,
        "metadata": {"name": "bad"},
        "spec": {
            "replicas": "2",
            "effectiveTime": 5,
            "selector": {"matchExpressions": [{"key": "a"}]},
            "template": {"spec": {"repository": "no-slash", "labels": "linux"}},
        },
    }
    expected = {
        "spec.replicas",
        "spec.effectiveTime",
        "spec.selector.matchExpressions.0",  # no operator
        "spec.template.spec.repository",
        "spec.template.spec.labels",
    }
    assert _errors(kind, bad, arc=True) == expected
    assert _errors(kind, bad, arc=False) == expected


_CONDITIONS = [
    {
        "type": "Ready",
        "status": "True",
        "reason": "Ready",
        "message": "",
        "lastTransitionTime": "2026-01-01T00:00:00Z",
    }
]
_STATUSES: dict[str, dict[str, Any]] = {
    "RunnerReplicaSet": {
        "replicas": 3,
        "readyReplicas": 2,
        "availableReplicas": 2,
        "registeredReplicas": 2,
        "busyReplicas": 1,
        "nextRunnerIndex": 4,
        "unobservedRunners": [{"name": "x-abcd3", "requestedAt": "2026-01-01T00:00:00Z"}],
        "conditions": _CONDITIONS,
        "observedGeneration": 2,
    },
    "RunnerDeployment": {
        "availableReplicas": 2,
        "readyReplicas": 2,
        "updatedReplicas": 2,
        "desiredReplicas": 2,
        "replicas": 3,
        "registeredReplicas": 2,
        "busyReplicas": 1,
        "conditions": _CONDITIONS,
        "observedGeneration": 2,
    },
    "HorizontalRunnerAutoscaler": {
        "desiredReplicas": 3,
        "lastSuccessfulScaleOutTime": "2026-01-01T00:00:00Z",
        "scheduledOverridesSummary": "min=0 time=2026-01-03 00:00:00 +0000 UTC",
        "observedGeneration": 1,
        "cacheEntries": [
            {"key": "desiredReplicas", "value": 2, "expirationTime": "2026-01-01T00:10:00Z"}
        ],
        "conditions": _CONDITIONS,
    },
}


@pytest.mark.parametrize("kind", sorted(_STATUSES))
def test_status_schemas_keep_what_the_hooks_write(kind: str) -> None:
    model = KINDS[kind].model
    obj = model.model_validate({"metadata": {"name": "x"}, "status": _STATUSES[kind]})
    status = obj.to_wire()["status"]
    assert status == _STATUSES[kind]
    status_schema = KINDS[kind].schema()["properties"]["status"]
    validator(status_schema).validate(status)
    assert crdgen.prune(status, status_schema, root=False) == status
    # ARC's own status fields keep their meaning: a status ARC wrote is read unchanged.
    arc_status = KINDS[kind].arc_schema()["properties"]["status"]
    arc_written = {k: v for k, v in status.items() if k in arc_status["properties"]}
    assert crdgen.prune(arc_written, status_schema, root=False) == arc_written
