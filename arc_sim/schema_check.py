"""JSON and OpenAPI schemas compiled into checks, as kube-apiserver applies them to objects.

Two dialects: a CRD's structural schema (OpenAPI v3: `type` a string, `nullable`,
`x-kubernetes-*`) and Kubernetes' JSON Schema of its built-in kinds (`type` a list with "null",
`$ref`). A schema is compiled once into closures; checking an object walks it once, prunes what
the API server would prune (unknown fields, nulls where not nullable), applies defaults, and
returns the problems found, each with its path (built only when something is wrong) and worded
as kube-apiserver words it: go-openapi's messages for custom resources, a decoding error for a
built-in kind's wrong type.
"""

from __future__ import annotations

import base64
import binascii
import copy
import json
import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final, Literal

Dialect = Literal["crd", "builtin"]
QUANTITY = "io.k8s.apimachinery.pkg.api.resource.Quantity"
INT_OR_STRING = "io.k8s.apimachinery.pkg.util.intstr.IntOrString"

# --- errors, as kube-apiserver words them


@dataclass(frozen=True)
class FieldError:
    """One of Go's `field.Error`s: `spec.maxReplicas: Invalid value: "string": ...`."""

    type: str  # "Invalid value", "Required value", "Unsupported value", "Forbidden", ...
    field: str
    value: Any = None
    detail: str = ""

    def __str__(self) -> str:
        body = self.type
        if self.type in _SHOWS_VALUE:
            body += ": " + go_value(self.value)
        if self.detail:
            body += ": " + self.detail
        return f"{self.field}: {body}"


_SHOWS_VALUE = frozenset(
    {"Invalid value", "Unsupported value", "Duplicate value", "Not found", "Too many"}
)


def go_value(value: Any) -> str:
    """How Go's field errors print a value."""
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    return json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)


def json_type(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, dict):
        return "object"
    if isinstance(value, list):
        return "array"
    return "null" if value is None else type(value).__name__


# --- problems found while walking an object (paths are built only when something is wrong)

_AT: Final = "\x00"  # stands for the field's path in a detail
ProblemKind = Literal["invalid", "decode", "unknown"]


class _Key(str):
    """A map key in a path: `metadata.labels[app]`."""

    __slots__ = ()


class Problem:
    __slots__ = ("detail", "kind", "segments", "type", "value")

    def __init__(self, kind: ProblemKind, type_: str, value: Any = None, detail: str = "") -> None:
        self.kind: ProblemKind = kind
        self.type = type_
        self.value = value
        self.detail = detail
        self.segments: list[str | int] = []  # innermost first

    def path(self, prefix: str = "") -> str:
        out = prefix
        for segment in reversed(self.segments):
            if isinstance(segment, int | _Key):  # an index, a map key
                out += f"[{segment}]"
            else:
                out = f"{out}.{segment}" if out else segment
        return out

    def field_error(self, prefix: str = "") -> FieldError:
        path = self.path(prefix)
        return FieldError(self.type, path, self.value, self.detail.replace(_AT, path))


Problems = list[Problem]


def _in_body(value: Any, rule: str) -> Problem:
    """go-openapi's wording: `spec.x: Invalid value: 3: spec.x in body should be ...`."""
    return Problem("invalid", "Invalid value", value, f"{_AT} in body {rule}")


def _at(problem: Problem, segment: str | int) -> Problem:
    problem.segments.append(segment)
    return problem


Check = Callable[[Any], "Problems | None"]

_PY_TYPES: Final[dict[str, frozenset[type]]] = {
    "string": frozenset({str}),
    "integer": frozenset({int}),
    "number": frozenset({int, float}),
    "boolean": frozenset({bool}),
    "object": frozenset({dict}),
    "array": frozenset({list}),
}
_ANYTHING: Final = frozenset({str, int, float, bool, dict, list})
_NO_DEFAULT: Final = object()


@dataclass(frozen=True, slots=True)
class Node:
    check: Check
    nullable: bool = False
    fast: frozenset[type] | None = None
    """A value of one of these types is valid with no further check."""
    default: Any = _NO_DEFAULT


def _accept(_value: Any) -> Problems | None:
    return None


# --- formats

_DATE_TIME = re.compile(
    r"\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})\Z", re.ASCII
)
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}\Z", re.ASCII)
QUANTITY_PATTERN = r"^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$"
_QUANTITY_RE = re.compile(QUANTITY_PATTERN)
_INT_RANGES = {"int32": (-(2**31), 2**31 - 1), "int64": (-(2**63), 2**63 - 1)}


def _format_error(fmt: str, value: Any) -> str | None:
    """Why `value` is not of format `fmt` (None: it is, or the format is not checked)."""
    if fmt in _INT_RANGES:
        low, high = _INT_RANGES[fmt]
        if isinstance(value, int) and not low <= value <= high:
            return f"value {value} overflows {fmt}"
        return None
    if not isinstance(value, str):
        return None
    if fmt == "date-time":
        return None if _DATE_TIME.match(value) else "not a date-time (RFC 3339)"
    if fmt == "date":
        return None if _DATE.match(value) else "not a date"
    if fmt == "byte":
        try:
            base64.b64decode(value, validate=True)
        except (binascii.Error, ValueError):
            return "illegal base64 data"
        return None
    if fmt == "quantity":
        return None if _QUANTITY_RE.match(value) else "not a quantity"
    return None


# --- compiling schemas into checks


class Compiler:
    """Turns a schema into a `Node`. `dialect` says how to read it: a CRD's structural schema
    (OpenAPI v3: `type` a string, `nullable`, `x-kubernetes-*`) or Kubernetes' JSON Schema of
    built-ins (`type` a list with "null", `$ref`). With `prune`, unknown fields and nulls are
    removed from the object checked, and defaults applied; without (inside anyOf and the
    like), nothing is changed."""

    def __init__(
        self,
        dialect: Dialect,
        definitions: Mapping[str, Any] | None = None,
        *,
        prune: bool = True,
    ) -> None:
        self.dialect: Dialect = dialect
        self.definitions = definitions or {}
        self.prune = prune
        self._refs: dict[str, Node] = {}
        self._branches: Compiler | None = None

    def node(self, schema: Mapping[str, Any]) -> Node:
        ref = schema.get("$ref")
        if isinstance(ref, str):
            return self.ref(ref)
        if self.dialect == "builtin":
            raw = schema.get("type")
            declared = [raw] if isinstance(raw, str) else list(raw or ())
            nullable = not declared or "null" in declared
            types = [t for t in declared if t != "null"]
            for branch in schema.get("oneOf") or ():
                branch_types = branch.get("type") or ()
                branch_types = [branch_types] if isinstance(branch_types, str) else branch_types
                types += [t for t in branch_types if t != "null" and t not in types]
            free = not schema.get("properties") and "additionalProperties" not in schema
        else:
            raw = schema.get("type")
            types = [raw] if isinstance(raw, str) else []
            if schema.get("x-kubernetes-int-or-string"):
                types = ["integer", "string"]
            nullable = schema.get("nullable") is True
            free = bool(schema.get("x-kubernetes-preserve-unknown-fields")) or bool(
                schema.get("x-kubernetes-embedded-resource")
            )
        return self._compile(schema, types, nullable, free)

    def ref(self, name: str) -> Node:
        found = self._refs.get(name)
        if found is not None:
            return found
        if name == QUANTITY:
            schema: Mapping[str, Any] = {"type": ["string", "number"], "format": "quantity"}
        elif name == INT_OR_STRING:
            schema = {"type": ["string", "integer"]}
        else:
            schema = self.definitions[name]
        # A placeholder first: definitions may refer to themselves.
        target: list[Node] = []

        def forward(value: Any) -> Problems | None:
            return target[0].check(value)

        raw = schema.get("type")
        nullable = raw is None or "null" in ([raw] if isinstance(raw, str) else raw)
        self._refs[name] = Node(forward, nullable=nullable)
        compiled = self.node(schema)
        target.append(compiled)
        self._refs[name] = compiled
        return compiled

    def _compile(
        self, schema: Mapping[str, Any], types: list[str], nullable: bool, free: bool
    ) -> Node:
        py_types = frozenset().union(*(_PY_TYPES[t] for t in types if t in _PY_TYPES))
        int_ok = "integer" in types and "number" not in types
        wanted = ",".join(types)
        default = schema.get("default", _NO_DEFAULT)
        type_problem = self._type_problem(wanted)
        parts: list[Check] = []
        is_object = "object" in types or (not types and "properties" in schema)
        is_array = "array" in types or (not types and "items" in schema)
        scalar = self._scalar(schema, types)
        combined = self._combinators(schema)
        alone = scalar is None and combined is None
        # The common cases, an object or an array and nothing else, check their type themselves.
        if alone and types == ["object"]:
            return Node(self._object(schema, free, type_problem), nullable, None, default)
        if alone and types == ["array"]:
            return Node(self._array(schema, type_problem), nullable, None, default)
        if is_object:
            parts.append(self._object(schema, free))
        if is_array:
            parts.append(self._array(schema))
        if scalar is not None:
            parts.append(scalar)
        if combined is not None:
            parts.append(combined)

        def check(value: Any) -> Problems | None:
            kind = type(value)
            if (
                py_types
                and kind not in py_types
                and not (int_ok and kind is float and float(value).is_integer())
            ):
                return [type_problem(value)]
            problems: Problems | None = None
            for part in parts:
                found = part(value)
                if found:
                    problems = found if problems is None else problems + found
            return problems

        if not parts:
            fast = py_types or _ANYTHING
            return Node(_accept if not py_types else check, nullable, fast, default)
        return Node(check, nullable, None, default)

    def _type_problem(self, wanted: str) -> Callable[[Any], Problem]:
        if self.dialect == "builtin":
            return lambda value: Problem(
                "decode",
                "Invalid value",
                json_type(value),
                f"json: cannot unmarshal {json_type(value)} into Go struct field {_AT} "
                f"of type {wanted}",
            )
        return lambda value: _in_body(
            json_type(value), f"must be of type {wanted}: {go_value(json_type(value))}"
        )

    # objects

    def _object(
        self,
        schema: Mapping[str, Any],
        free: bool,
        type_problem: Callable[[Any], Problem] | None = None,
    ) -> Check:
        properties: dict[str, tuple[Node, bool]] = {}
        for name, sub in (schema.get("properties") or {}).items():
            node = self.node(sub)
            # A null is kept where the schema allows it (most fields of built-ins), else pruned.
            properties[name] = (node, node.nullable)
        additional_schema = schema.get("additionalProperties")
        additional: Node | None = None
        if isinstance(additional_schema, dict):
            additional = self.node(additional_schema)
        elif additional_schema is True:
            free = True
        required = tuple(schema.get("required") or ())
        defaults = tuple(
            (name, node.default)
            for name, (node, _) in properties.items()
            if node.default is not _NO_DEFAULT
        )
        prune = self.prune
        max_properties = schema.get("maxProperties")
        min_properties = schema.get("minProperties")

        def check(value: Any) -> Problems | None:
            if type(value) is not dict:
                return [type_problem(value)] if type_problem is not None else None
            problems: Problems | None = None
            doomed: list[str] | None = None
            for key, item in value.items():
                entry = properties.get(key)
                segment: str
                if entry is None:
                    if additional is not None:
                        node, keep_null, segment = additional, additional.nullable, _Key(key)
                    elif free:
                        continue
                    else:
                        if prune:
                            doomed = [key] if doomed is None else [*doomed, key]
                            unknown = _at(Problem("unknown", "Unknown field"), key)
                            problems = [*(problems or ()), unknown]
                        continue
                else:
                    node, keep_null = entry
                    segment = key
                if item is None:
                    if prune and not keep_null:
                        doomed = [key] if doomed is None else [*doomed, key]
                    continue
                fast = node.fast
                if fast is not None and type(item) in fast:
                    continue
                found = node.check(item)
                if found:
                    for problem in found:
                        problem.segments.append(segment)
                    problems = found if problems is None else problems + found
            if doomed:
                for key in doomed:
                    del value[key]
            if prune:
                for key, default in defaults:
                    if key not in value:
                        value[key] = copy.deepcopy(default)
            for key in required:
                if key not in value:
                    missing = _at(Problem("invalid", "Required value"), key)
                    problems = [*(problems or ()), missing]
            size = len(value)
            if max_properties is not None and size > max_properties:
                many = Problem("invalid", "Too many", size, f"must have at most {max_properties}")
                problems = [*(problems or ()), many]
            if min_properties is not None and size < min_properties:
                few = _in_body(size, f"should have at least {min_properties} properties")
                problems = [*(problems or ()), few]
            return problems

        return check

    # arrays

    def _array(
        self, schema: Mapping[str, Any], type_problem: Callable[[Any], Problem] | None = None
    ) -> Check:
        items_schema = schema.get("items")
        items = self.node(items_schema) if isinstance(items_schema, dict) else None
        min_items, max_items = schema.get("minItems"), schema.get("maxItems")
        list_type = schema.get("x-kubernetes-list-type")
        map_keys = tuple(schema.get("x-kubernetes-list-map-keys") or ())
        builtin = self.dialect == "builtin"

        def check(value: Any) -> Problems | None:
            if type(value) is not list:
                return [type_problem(value)] if type_problem is not None else None
            problems: Problems | None = None
            if items is not None:
                fast = items.fast
                for index, item in enumerate(value):
                    found: Problems | None
                    if item is None:
                        if builtin or items.nullable:
                            continue
                        found = [_in_body("null", 'must be of type object: "null"')]
                    elif fast is not None and type(item) in fast:
                        continue
                    else:
                        found = items.check(item)
                    if found:
                        for problem in found:
                            problem.segments.append(index)
                        problems = found if problems is None else problems + found
            size = len(value)
            if max_items is not None and size > max_items:
                many = Problem("invalid", "Too many", size, f"must have at most {max_items} items")
                problems = [*(problems or ()), many]
            if min_items is not None and size < min_items:
                problems = [
                    *(problems or ()),
                    _in_body(size, f"should have at least {min_items} items"),
                ]
            if list_type in ("set", "map"):
                problems = _duplicates(value, list_type, map_keys, problems)
            return problems

        return check

    # scalars

    def _scalar(self, schema: Mapping[str, Any], types: list[str]) -> Check | None:
        enum = schema.get("enum")
        fmt = schema.get("format")
        if fmt is not None and self.dialect == "builtin" and "number" in types and fmt == "double":
            fmt = None
        pattern_text = schema.get("pattern")
        pattern = re.compile(pattern_text) if isinstance(pattern_text, str) else None
        minimum, maximum = schema.get("minimum"), schema.get("maximum")
        exclusive_min = schema.get("exclusiveMinimum") is True
        exclusive_max = schema.get("exclusiveMaximum") is True
        min_length, max_length = schema.get("minLength"), schema.get("maxLength")
        multiple_of = schema.get("multipleOf")
        if (
            enum is None
            and fmt is None
            and pattern is None
            and minimum is None
            and maximum is None
            and min_length is None
            and max_length is None
            and multiple_of is None
        ):
            return None
        decode = self.dialect == "builtin"
        wanted = ",".join(types)

        def check(value: Any) -> Problems | None:
            kind = type(value)
            if kind is dict or kind is list:
                return None
            problems: Problems = []
            if enum is not None and value not in enum:
                supported = "supported values: " + ", ".join(go_value(v) for v in enum)
                problems.append(Problem("invalid", "Unsupported value", value, supported))
            why = _format_error(fmt, value) if fmt is not None else None
            if why is not None and decode:
                wanted_type = fmt if fmt != "byte" else wanted
                detail = (
                    f"json: cannot unmarshal {go_value(value)} into Go struct field {_AT} "
                    f"of type {wanted_type}: {why}"
                )
                problems.append(Problem("decode", "Invalid value", value, detail))
            elif why is not None:
                problems.append(_in_body(value, f"must be of type {fmt}: {go_value(value)}"))
            if kind is str:
                if pattern is not None and not pattern.search(value):
                    problems.append(_in_body(value, f"should match '{pattern_text}'"))
                if max_length is not None and len(value) > max_length:
                    too_long = f"may not be more than {max_length} bytes"
                    problems.append(Problem("invalid", "Too long", value, too_long))
                if min_length is not None and len(value) < min_length:
                    problems.append(_in_body(value, f"should be at least {min_length} chars long"))
            elif kind is int or kind is float:
                problems += _bounds(value, minimum, maximum, exclusive_min, exclusive_max)
                if multiple_of and not math.isclose(
                    value / multiple_of, round(value / multiple_of)
                ):
                    problems.append(_in_body(value, f"should be a multiple of {multiple_of}"))
            return problems or None

        return check

    # anyOf, allOf, oneOf, not: value validation only (CRDs)

    def _combinators(self, schema: Mapping[str, Any]) -> Check | None:
        if self.dialect != "crd":
            return None
        any_of = schema.get("anyOf")
        all_of = schema.get("allOf")
        one_of = schema.get("oneOf")
        negated = schema.get("not")
        if not (any_of or all_of or one_of or isinstance(negated, dict)):
            return None
        if self._branches is None:
            self._branches = Compiler("crd", prune=False)
        compiler = self._branches
        any_nodes = [compiler.node(s) for s in any_of or ()]
        all_nodes = [compiler.node(s) for s in all_of or ()]
        one_nodes = [compiler.node(s) for s in one_of or ()]
        not_node = compiler.node(negated) if isinstance(negated, dict) else None

        def passes(node: Node, value: Any) -> bool:
            if value is None:
                return node.nullable
            if node.fast is not None and type(value) in node.fast:
                return True
            return not node.check(value)

        def check(value: Any) -> Problems | None:
            problems: Problems = []
            if any_nodes and not any(passes(n, value) for n in any_nodes):
                problems.append(
                    _combinator_problem(value, "must validate at least one schema (anyOf)")
                )
            for node in all_nodes:
                found = node.check(value) if value is not None else None
                if found:
                    problems += found
            if one_nodes and sum(passes(n, value) for n in one_nodes) != 1:
                problems.append(
                    _combinator_problem(value, "must validate one and only one schema (oneOf)")
                )
            if not_node is not None and passes(not_node, value):
                problems.append(_combinator_problem(value, "must not validate the schema (not)"))
            return problems or None

        return check


def _combinator_problem(value: Any, what: str) -> Problem:
    return _in_body(value, what)


def _bounds(
    value: float, minimum: Any, maximum: Any, exclusive_min: bool, exclusive_max: bool
) -> Problems:
    problems = []
    if minimum is not None and (value <= minimum if exclusive_min else value < minimum):
        word = "greater than" if exclusive_min else "greater than or equal to"
        problems.append(_in_body(value, f"should be {word} {minimum}"))
    if maximum is not None and (value >= maximum if exclusive_max else value > maximum):
        word = "less than" if exclusive_max else "less than or equal to"
        problems.append(_in_body(value, f"should be {word} {maximum}"))
    return problems


def _duplicates(
    value: list[Any], list_type: str, map_keys: tuple[str, ...], problems: Problems | None
) -> Problems | None:
    seen: set[str] = set()
    for index, item in enumerate(value):
        if list_type == "map":
            if not isinstance(item, dict):
                continue
            key_value: Any = {k: item.get(k) for k in map_keys}
        else:
            key_value = item
        marker = json.dumps(key_value, sort_keys=True)
        if marker in seen:
            problems = [
                *(problems or ()),
                _at(Problem("invalid", "Duplicate value", key_value), index),
            ]
        seen.add(marker)
    return problems
