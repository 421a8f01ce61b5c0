"""Admission in the simulated API server: every object written is checked as kube-apiserver
checks it, and refused with an error shaped like its own.

- Custom resources against their CRD's structural schema: types, required fields, enum,
  pattern, bounds and lengths, the formats `date-time`, `date`, `byte`, `int32` and `int64`,
  `x-kubernetes-int-or-string`, `nullable`, `anyOf`/`allOf`/`oneOf`/`not`,
  `x-kubernetes-list-type` (set, map); unknown fields are pruned unless
  `x-kubernetes-preserve-unknown-fields` keeps them, and `default`s are applied.
- Built-in kinds against Kubernetes 1.33's OpenAPI description (`schemas/kubernetes-v1.33.json`,
  extracted from kubernetes-validate by `tests/builtin_schema_source.py`): a wrong type, a bad
  time, base64 or quantity is a decoding error (400), a missing required field 422. Beyond the
  schema, the essentials of the built-ins' validation: pod specs (containers, names, images,
  volumes and mounts, restart policy), a StatefulSet's selector and template, and the fields
  that are immutable on update (pod spec, StatefulSet spec, PVC spec, RoleBinding roleRef,
  Secret type, immutable Secrets and ConfigMaps). A Secret's `stringData` is folded into `data`,
  its type defaults to Opaque.
- Every kind: ObjectMeta's rules (name and namespace formats, labels, annotations, finalizers,
  owner references).

Field validation is the client's choice, as on a real server: `Strict` (kubectl's default)
refuses unknown fields with 400; `Warn` (the server's default, what controllers get) prunes
them and reports warnings; nulls in fields that are not nullable are pruned either way. On
update only what changed is checked again, as with CRD validation ratcheting: an unchanged
section that a schema added later would refuse is kept.

Not modelled: CEL rules (`x-kubernetes-validations`), `x-kubernetes-embedded-resource`
(accepted as it is), formats other than the ones above, admission webhooks and quotas, and the
rest of the built-ins' validation code.

Each kind's schema is compiled once, on first use, into closures; the world writes tens of
thousands of objects.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any, Literal

import yaml

from arc_sim.kube_rules import (
    EXTRA_RULES,
    NAME_RULES,
    UPDATE_RULES,
    NameRule,
    dns_subdomain,
    metadata_problems,
    secret_as_stored,
)
from arc_sim.schema_check import Compiler, Dialect, FieldError, Node, Problem

KubeObject = dict[str, Any]
FieldValidation = Literal["Strict", "Warn", "Ignore"]

BUILTIN_SCHEMA_FILE = "kubernetes-v1.33.json"
OBJECT_META = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"


class Refused(Exception):
    """The API server refuses the write: 400 (the body cannot be decoded, or an unknown field
    under strict field validation), 404 (a kind it does not serve) or 422 (invalid)."""

    def __init__(self, status: int, message: str, causes: tuple[FieldError, ...] = ()) -> None:
        super().__init__(message)
        self.status = status
        self.causes = causes


# --- kinds


@dataclass(frozen=True)
class KindSchema:
    """How one kind (an apiVersion and a kind) is admitted."""

    api_version: str
    kind: str
    namespaced: bool
    sections: Mapping[str, Node]
    """The schema of each top-level field but apiVersion, kind and metadata."""
    required: tuple[str, ...]
    preserve_unknown: bool
    dialect: Dialect
    name_rule: NameRule = dns_subdomain
    extra: Callable[[KubeObject], list[FieldError]] | None = None
    on_update: Callable[[KubeObject, KubeObject], list[FieldError]] | None = None

    @property
    def group(self) -> str:
        return self.api_version.rpartition("/")[0]

    @property
    def version(self) -> str:
        return self.api_version.rpartition("/")[2]

    @property
    def qualified_kind(self) -> str:
        return f"{self.kind}.{self.group}" if self.group else self.kind


def _kind_schema(
    compiler: Compiler,
    root: Mapping[str, Any],
    api_version: str,
    kind: str,
    namespaced: bool,
) -> KindSchema:
    sections = {
        name: compiler.node(sub)
        for name, sub in (root.get("properties") or {}).items()
        if name not in ("apiVersion", "kind", "metadata")
    }
    if compiler.dialect == "builtin":
        preserve = False
    else:
        preserve = bool(root.get("x-kubernetes-preserve-unknown-fields"))
    key = f"{api_version}/{kind}"
    return KindSchema(
        api_version=api_version,
        kind=kind,
        namespaced=namespaced,
        sections=sections,
        required=tuple(r for r in root.get("required") or () if r not in ("metadata",)),
        preserve_unknown=preserve,
        dialect=compiler.dialect,
        name_rule=NAME_RULES.get(key, dns_subdomain),
        extra=EXTRA_RULES.get(key),
        on_update=UPDATE_RULES.get(key),
    )


@cache
def builtin_schemas() -> Mapping[str, Any]:
    """The built-in kinds' schemas shipped with the simulated world."""
    text = (resources.files("arc_sim") / "schemas" / BUILTIN_SCHEMA_FILE).read_text("utf-8")
    loaded: Mapping[str, Any] = json.loads(text)
    return loaded


class Admission:
    """The checks of one API server. `serve_unknown_kinds=False` refuses (404) objects of a
    kind that is neither built in nor defined by a CRD added with `add_crd`, as a cluster
    does; with True (the default, for tests that store kinds of their own) they get the
    metadata checks only."""

    def __init__(self, *, serve_unknown_kinds: bool = True) -> None:
        self.serve_unknown_kinds = serve_unknown_kinds
        self._kinds: dict[tuple[str, str], KindSchema | None] = {}
        self._crds: dict[tuple[str, str], tuple[Mapping[str, Any], bool]] = {}
        self._builtin_compiler: Compiler | None = None
        self._meta: Node | None = None

    # --- what is served

    def add_crd(self, crd: Mapping[str, Any]) -> list[tuple[str, str]]:
        """Serve the versions a CustomResourceDefinition declares, each with its schema;
        returns the (apiVersion, kind) added."""
        spec = crd.get("spec") or {}
        names = spec.get("names") or {}
        group, kind = spec.get("group"), names.get("kind")
        if not (isinstance(group, str) and isinstance(kind, str)):
            raise ValueError("a CustomResourceDefinition needs spec.group and spec.names.kind")
        namespaced = spec.get("scope", "Namespaced") == "Namespaced"
        added = []
        for version in spec.get("versions") or ():
            if not version.get("served", True):
                continue
            api_version = f"{group}/{version['name']}"
            schema = ((version.get("schema") or {}).get("openAPIV3Schema")) or {
                "type": "object",
                "x-kubernetes-preserve-unknown-fields": True,
            }
            self._crds[api_version, kind] = (schema, namespaced)
            self._kinds.pop((api_version, kind), None)
            added.append((api_version, kind))
        return added

    def schema(self, api_version: str, kind: str) -> KindSchema | None:
        """The kind's compiled schema; None for a kind served without one."""
        key = (api_version, kind)
        if key in self._kinds:
            return self._kinds[key]
        found = self._compile(api_version, kind)
        self._kinds[key] = found
        return found

    def _compile(self, api_version: str, kind: str) -> KindSchema | None:
        crd = self._crds.get((api_version, kind))
        if crd is not None:
            schema, namespaced = crd
            return _kind_schema(Compiler("crd"), schema, api_version, kind, namespaced)
        entry = builtin_schemas()["kinds"].get(f"{api_version}/{kind}")
        if entry is None:
            return None
        compiler = self._builtins()
        root = compiler.definitions[entry["definition"]]
        return _kind_schema(compiler, root, api_version, kind, bool(entry["namespaced"]))

    def _builtins(self) -> Compiler:
        if self._builtin_compiler is None:
            self._builtin_compiler = Compiler("builtin", builtin_schemas()["$defs"])
        return self._builtin_compiler

    def _metadata_node(self) -> Node:
        if self._meta is None:
            self._meta = self._builtins().ref(OBJECT_META)
        return self._meta

    # --- admitting writes (each changes the object it is given: pruning, defaults)

    def admit_create(
        self, obj: KubeObject, field_validation: FieldValidation = "Warn"
    ) -> list[str]:
        """A new object; returns the warnings (unknown fields pruned)."""
        schema = self._served(obj)
        return self._admit(obj, schema, None, None, field_validation)

    def admit_update(
        self, current: KubeObject, updated: KubeObject, field_validation: FieldValidation = "Warn"
    ) -> list[str]:
        """A replacement: what changed is checked, and the kind's rules on updates."""
        schema = self._served(current)
        changed = {
            key
            for key in {*current, *updated}
            if key not in ("apiVersion", "kind") and current.get(key) != updated.get(key)
        }
        return self._admit(updated, schema, current, changed, field_validation)

    def admit_status(self, current: KubeObject, updated: KubeObject) -> list[str]:
        """The status subresource: the new status only."""
        schema = self._served(current)
        if current.get("status") == updated.get("status"):
            return []
        return self._admit(updated, schema, current, {"status"}, "Warn")

    def admit_metadata(self, current: KubeObject, updated: KubeObject) -> list[str]:
        """A patch of labels, annotations or finalizers."""
        schema = self._served(current)
        return self._admit(updated, schema, current, {"metadata"}, "Warn")

    def _served(self, obj: KubeObject) -> KindSchema | None:
        api_version, kind = str(obj.get("apiVersion", "")), str(obj.get("kind", ""))
        schema = self.schema(api_version, kind)
        if schema is None and not self.serve_unknown_kinds:
            raise Refused(404, f'no matches for kind "{kind}" in version "{api_version}"')
        return schema

    def _admit(
        self,
        obj: KubeObject,
        schema: KindSchema | None,
        current: KubeObject | None,
        changed: set[str] | None,
        field_validation: FieldValidation,
    ) -> list[str]:
        def check(key: str) -> bool:
            return changed is None or key in changed

        if schema is not None and schema.kind == "Secret" and schema.group == "":
            secret_as_stored(obj)
        problems: list[tuple[str, Problem]] = []
        errors: list[FieldError] = []
        metadata = obj.get("metadata")
        if check("metadata"):
            if metadata is not None:
                found = self._metadata_node().check(metadata) or ()
                problems += [("metadata", p) for p in found]
            errors += metadata_problems(
                metadata if isinstance(metadata, dict) else {},
                namespaced=schema.namespaced if schema is not None else None,
                name_rule=schema.name_rule if schema is not None else dns_subdomain,
            )
        if schema is not None:
            doomed = []
            for key, value in obj.items():
                if key in ("apiVersion", "kind", "metadata") or not check(key):
                    continue
                node = schema.sections.get(key)
                if node is None:
                    if not schema.preserve_unknown:
                        doomed.append(key)
                        problem = Problem("unknown", "Unknown field")
                        problem.segments.append(key)
                        problems.append(("", problem))
                    continue
                if value is None:
                    if not node.nullable:
                        doomed.append(key)
                    continue
                if node.fast is not None and type(value) in node.fast:
                    continue
                for problem in node.check(value) or ():
                    problem.segments.append(key)
                    problems.append(("", problem))
            for key in doomed:
                del obj[key]
            for key in schema.required:
                if key not in obj and check(key):
                    errors.append(FieldError("Required value", key))
            if schema.extra is not None and (changed is None or changed - {"metadata", "status"}):
                errors += schema.extra(obj)
            if current is not None and schema.on_update is not None:
                errors += schema.on_update(current, obj)
        return self._verdict(obj, schema, problems, errors, field_validation)

    def _verdict(
        self,
        obj: KubeObject,
        schema: KindSchema | None,
        problems: list[tuple[str, Problem]],
        errors: list[FieldError],
        field_validation: FieldValidation,
    ) -> list[str]:
        kind = str(obj.get("kind", ""))
        version = schema.version if schema is not None else str(obj.get("apiVersion", ""))
        unknown = [
            f'unknown field "{p.path(prefix)}"' for prefix, p in problems if p.kind == "unknown"
        ]
        decode = [p.field_error(prefix) for prefix, p in problems if p.kind == "decode"]
        cannot = f'{kind} in version "{version}" cannot be handled as a {kind}'
        if decode:
            raise Refused(400, f"{cannot}: {decode[0].detail}", tuple(decode))
        if unknown and field_validation == "Strict":
            raise Refused(400, f"{cannot}: strict decoding error: {', '.join(unknown)}")
        invalid = [p.field_error(prefix) for prefix, p in problems if p.kind == "invalid"]
        invalid += errors
        if invalid:
            qualified = schema.qualified_kind if schema is not None else kind
            name = (obj.get("metadata") or {}).get("name") or ""
            listed = str(invalid[0]) if len(invalid) == 1 else f"[{', '.join(map(str, invalid))}]"
            raise Refused(422, f'{qualified} "{name}" is invalid: {listed}', tuple(invalid))
        return unknown if field_validation == "Warn" else []


def crds_under(path: Path) -> list[KubeObject]:
    """The CustomResourceDefinitions in the YAML files under `path` (a directory, searched
    recursively, or one file), as Metacontroller's emulator finds them."""
    files = [path] if path.is_file() else sorted(path.rglob("*"))
    found: list[KubeObject] = []
    for file in files:
        if file.suffix in (".yaml", ".yml") and file.is_file():
            with file.open(encoding="utf-8") as stream:
                found += [
                    document
                    for document in yaml.safe_load_all(stream)
                    if isinstance(document, dict)
                    and document.get("kind") == "CustomResourceDefinition"
                ]
    return found
