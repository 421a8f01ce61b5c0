"""The rules of kube-apiserver's validation beyond schemas, for the simulated API server:
ObjectMeta's (names, namespaces, labels, annotations, finalizers, owner references), the
essentials of the built-in kinds' own validation (pod specs, workloads' selectors and templates)
and the fields they keep immutable on update."""

from __future__ import annotations

import base64
import copy
import re
from collections.abc import Callable, Mapping
from typing import Any

from arc_sim.schema_check import FieldError, go_value

KubeObject = dict[str, Any]

# --- ObjectMeta's rules (k8s.io/apimachinery/pkg/api/validation)

DNS1123_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?\Z")
DNS1123_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\Z")
DNS1035_LABEL = re.compile(r"[a-z]([-a-z0-9]*[a-z0-9])?\Z")
_QUALIFIED_NAME = re.compile(r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]\Z")
_LABEL_VALUE = re.compile(r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?\Z")
MAX_ANNOTATIONS_BYTES = 256 * 1024

_SUBDOMAIN_MESSAGE = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' "
    "or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex "
    "used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)
_LABEL_MESSAGE = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and "
    "must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex "
    "used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
)
_DNS1035_MESSAGE = (
    "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an "
    "alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or "
    "'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"
)
_QUALIFIED_MESSAGE = (
    "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and "
    "end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex "
    "used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
)
_LABEL_VALUE_MESSAGE = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or "
    "'.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or "
    "'my_value',  or '12345', regex used for validation is "
    "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
)

NameRule = Callable[[str], list[str]]


def dns_subdomain(name: str) -> list[str]:
    problems = []
    if len(name) > 253:
        problems.append("must be no more than 253 characters")
    if not DNS1123_SUBDOMAIN.match(name):
        problems.append(_SUBDOMAIN_MESSAGE)
    return problems


def dns_label(name: str) -> list[str]:
    problems = []
    if len(name) > 63:
        problems.append("must be no more than 63 characters")
    if not DNS1123_LABEL.match(name):
        problems.append(_LABEL_MESSAGE)
    return problems


def dns1035_label(name: str) -> list[str]:
    problems = []
    if len(name) > 63:
        problems.append("must be no more than 63 characters")
    if not DNS1035_LABEL.match(name):
        problems.append(_DNS1035_MESSAGE)
    return problems


def path_segment(name: str) -> list[str]:
    if name in (".", ".."):
        return [f"may not be '{name}'"]
    return [f"may not contain '{c}'" for c in ("/", "%") if c in name]


def qualified_name(name: str) -> list[str]:
    """A label or annotation key, a finalizer: `[prefix/]name`."""
    prefix, slash, short = name.rpartition("/")
    problems = []
    if slash:
        if not prefix:
            problems.append("prefix part must be non-empty")
        else:
            problems += [f"prefix part {p}" for p in dns_subdomain(prefix)]
    if not short:
        problems.append("name part must be non-empty")
        return problems
    if len(short) > 63:
        problems.append("name part must be no more than 63 characters")
    if not _QUALIFIED_NAME.match(short):
        problems.append(_QUALIFIED_MESSAGE)
    return problems


def label_value(value: str) -> list[str]:
    problems = []
    if len(value) > 63:
        problems.append("must be no more than 63 characters")
    if not _LABEL_VALUE.match(value):
        problems.append(_LABEL_VALUE_MESSAGE)
    return problems


def metadata_problems(
    metadata: Mapping[str, Any], *, namespaced: bool | None, name_rule: NameRule
) -> list[FieldError]:
    """ObjectMeta's rules; `namespaced` None: the kind's scope is not known."""
    errors: list[FieldError] = []
    name = metadata.get("name")
    if not name:
        errors.append(
            FieldError("Required value", "metadata.name", detail="name or generateName is required")
        )
    elif isinstance(name, str):
        errors += [FieldError("Invalid value", "metadata.name", name, m) for m in name_rule(name)]
    namespace = metadata.get("namespace")
    if namespaced and not namespace:
        errors.append(FieldError("Required value", "metadata.namespace"))
    elif namespaced is False and namespace:
        errors.append(
            FieldError("Forbidden", "metadata.namespace", detail="not allowed on this type")
        )
    elif isinstance(namespace, str) and namespace:
        errors += [
            FieldError("Invalid value", "metadata.namespace", namespace, m)
            for m in dns_label(namespace)
        ]
    labels = metadata.get("labels")
    if isinstance(labels, dict):
        for key, value in labels.items():
            errors += [
                FieldError("Invalid value", "metadata.labels", key, m) for m in qualified_name(key)
            ]
            if isinstance(value, str):
                errors += [
                    FieldError("Invalid value", "metadata.labels", value, m)
                    for m in label_value(value)
                ]
    annotations = metadata.get("annotations")
    if isinstance(annotations, dict):
        total = 0
        for key, value in annotations.items():
            errors += [
                FieldError("Invalid value", "metadata.annotations", key, m)
                for m in qualified_name(key.lower())
            ]
            total += len(key) + (len(value) if isinstance(value, str) else 0)
        if total > MAX_ANNOTATIONS_BYTES:
            errors.append(
                FieldError(
                    "Too long",
                    "metadata.annotations",
                    detail=f"may not be more than {MAX_ANNOTATIONS_BYTES} bytes",
                )
            )
    finalizers = metadata.get("finalizers")
    if isinstance(finalizers, list):
        seen: set[str] = set()
        for index, finalizer in enumerate(finalizers):
            where = f"metadata.finalizers[{index}]"
            if not isinstance(finalizer, str):
                continue
            errors += [
                FieldError("Invalid value", where, finalizer, m) for m in qualified_name(finalizer)
            ]
            if finalizer in seen:
                errors.append(FieldError("Duplicate value", where, finalizer))
            seen.add(finalizer)
    references = metadata.get("ownerReferences")
    if isinstance(references, list):
        controllers = 0
        for reference in references:
            if not isinstance(reference, dict):
                continue
            for member, what in (
                ("apiVersion", "version must not be empty"),
                ("kind", "kind must not be empty"),
                ("name", "name must not be empty"),
                ("uid", "uid must not be empty"),
            ):
                if reference.get(member) == "":  # a missing one is the schema's to report
                    errors.append(
                        FieldError(
                            "Invalid value",
                            f"metadata.ownerReferences.{member}",
                            reference.get(member, ""),
                            what,
                        )
                    )
            if reference.get("controller") is True:
                controllers += 1
        if controllers > 1:
            errors.append(
                FieldError(
                    "Invalid value",
                    "metadata.ownerReferences",
                    references,
                    "Only one reference can have Controller set to true",
                )
            )
    return errors


# --- the essentials of built-in kinds' validation beyond their schema

RESTART_POLICIES = ("Always", "OnFailure", "Never")
_POD_UPDATABLE = (
    "pod updates may not change fields other than `spec.containers[*].image`,"
    "`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only "
    "additions to existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be "
    "set to 1 if it was previously negative)"
)


def pod_spec_problems(spec: Any, where: str, *, template: str | None = None) -> list[FieldError]:
    """Containers (at least one; names DNS labels, unique; an image), volumes (names DNS
    labels, unique), volume mounts naming a volume, the restart policy."""
    if not isinstance(spec, dict):
        return [FieldError("Required value", where)]
    errors: list[FieldError] = []
    volumes: set[str] = set()
    for index, volume in enumerate(spec.get("volumes") or ()):
        name = volume.get("name") if isinstance(volume, dict) else None
        path = f"{where}.volumes[{index}].name"
        if not isinstance(name, str):
            continue  # missing: the schema's to report
        if not name:
            errors.append(FieldError("Required value", path))
            continue
        errors += [FieldError("Invalid value", path, name, m) for m in dns_label(name)]
        if name in volumes:
            errors.append(FieldError("Duplicate value", path, name))
        volumes.add(name)
    if spec.get("containers") == []:  # a missing list is the schema's to report
        errors.append(FieldError("Required value", f"{where}.containers"))
    names: set[str] = set()
    for group in ("initContainers", "containers"):
        for index, container in enumerate(spec.get(group) or ()):
            if not isinstance(container, dict):
                continue
            at = f"{where}.{group}[{index}]"
            name = container.get("name")
            if name == "":
                errors.append(FieldError("Required value", f"{at}.name"))
            elif isinstance(name, str):
                errors += [
                    FieldError("Invalid value", f"{at}.name", name, m) for m in dns_label(name)
                ]
                if name in names:
                    errors.append(FieldError("Duplicate value", f"{at}.name", name))
                names.add(name)
            if not container.get("image"):  # optional in the schema, required here
                errors.append(FieldError("Required value", f"{at}.image"))
            for mount_index, mount in enumerate(container.get("volumeMounts") or ()):
                mount_name = mount.get("name") if isinstance(mount, dict) else None
                mount_at = f"{at}.volumeMounts[{mount_index}].name"
                if mount_name == "":
                    errors.append(FieldError("Required value", mount_at))
                elif isinstance(mount_name, str) and mount_name not in volumes:
                    errors.append(FieldError("Not found", mount_at, mount_name))
            for env_index, variable in enumerate(container.get("env") or ()):
                if isinstance(variable, dict) and variable.get("name") == "":
                    errors.append(FieldError("Required value", f"{at}.env[{env_index}].name"))
    policy = spec.get("restartPolicy")
    allowed = RESTART_POLICIES if template is None else (template,)
    if policy is not None and policy not in allowed:
        errors.append(
            FieldError(
                "Unsupported value",
                f"{where}.restartPolicy",
                policy,
                "supported values: " + ", ".join(go_value(p) for p in allowed),
            )
        )
    return errors


def _selector_matches(selector: Mapping[str, Any], labels: Mapping[str, Any]) -> bool:
    for key, value in (selector.get("matchLabels") or {}).items():
        if labels.get(key) != value:
            return False
    for expression in selector.get("matchExpressions") or ():
        key, operator = expression.get("key"), expression.get("operator")
        values = expression.get("values") or ()
        present = key in labels
        if (
            (operator == "In" and (not present or labels[key] not in values))
            or (operator == "NotIn" and present and labels[key] in values)
            or (operator == "Exists" and not present)
            or (operator == "DoesNotExist" and present)
        ):
            return False
    return True


def _workload_problems(obj: KubeObject, restart: str | None) -> list[FieldError]:
    """A controller of pods (StatefulSet, Deployment, ...): a selector its template matches,
    and a valid pod template."""
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return [FieldError("Required value", "spec")]
    errors: list[FieldError] = []
    selector = spec.get("selector")
    raw_template = spec.get("template")
    template: dict[str, Any] = raw_template if isinstance(raw_template, dict) else {}
    labels = (template.get("metadata") or {}).get("labels") or {}
    if not isinstance(selector, dict) or not (
        selector.get("matchLabels") or selector.get("matchExpressions")
    ):
        errors.append(FieldError("Required value", "spec.selector"))
    elif not _selector_matches(selector, labels):
        errors.append(
            FieldError(
                "Invalid value",
                "spec.template.metadata.labels",
                labels,
                "`selector` does not match template `labels`",
            )
        )
    errors += pod_spec_problems(template.get("spec"), "spec.template.spec", template=restart)
    return errors


def _extra_pod(obj: KubeObject) -> list[FieldError]:
    return pod_spec_problems(obj.get("spec"), "spec")


def _extra_statefulset(obj: KubeObject) -> list[FieldError]:
    return _workload_problems(obj, "Always")


EXTRA_RULES: dict[str, Callable[[KubeObject], list[FieldError]]] = {
    "v1/Pod": _extra_pod,
    "apps/v1/StatefulSet": _extra_statefulset,
    "apps/v1/Deployment": _extra_statefulset,
    "apps/v1/ReplicaSet": _extra_statefulset,
    "apps/v1/DaemonSet": _extra_statefulset,
}


def _pod_update(current: KubeObject, updated: KubeObject) -> list[FieldError]:
    before, after = current.get("spec") or {}, updated.get("spec") or {}
    if before == after:
        return []
    allowed = copy.deepcopy(before)
    for group in ("containers", "initContainers"):
        new = after.get(group) or []
        old = allowed.get(group) or []
        if len(new) == len(old):
            for mine, theirs in zip(old, new, strict=True):
                if isinstance(mine, dict) and isinstance(theirs, dict) and "image" in theirs:
                    mine["image"] = theirs["image"]
    for member in ("activeDeadlineSeconds", "terminationGracePeriodSeconds"):
        if member in after:
            allowed[member] = after[member]
    old_tolerations = before.get("tolerations") or []
    new_tolerations = after.get("tolerations") or []
    if new_tolerations and new_tolerations[: len(old_tolerations)] == old_tolerations:
        allowed["tolerations"] = new_tolerations
    if not before.get("nodeName") and after.get("nodeName"):
        allowed["nodeName"] = after["nodeName"]  # the binding the scheduler makes
    if "schedulingGates" in before and not after.get("schedulingGates"):
        allowed.pop("schedulingGates", None)
        if "schedulingGates" in after:
            allowed["schedulingGates"] = after["schedulingGates"]
    if allowed == after:
        return []
    return [FieldError("Forbidden", "spec", detail=_POD_UPDATABLE)]


_STATEFULSET_UPDATABLE = (
    "replicas",
    "ordinals",
    "template",
    "updateStrategy",
    "revisionHistoryLimit",
    "persistentVolumeClaimRetentionPolicy",
    "minReadySeconds",
)


def _statefulset_update(current: KubeObject, updated: KubeObject) -> list[FieldError]:
    before, after = current.get("spec") or {}, updated.get("spec") or {}
    fixed_before = {k: v for k, v in before.items() if k not in _STATEFULSET_UPDATABLE}
    fixed_after = {k: v for k, v in after.items() if k not in _STATEFULSET_UPDATABLE}
    if fixed_before == fixed_after:
        return []
    return [
        FieldError(
            "Forbidden",
            "spec",
            detail="updates to statefulset spec for fields other than 'replicas', 'ordinals', "
            "'template', 'updateStrategy', 'revisionHistoryLimit', "
            "'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden",
        )
    ]


def _claim_update(current: KubeObject, updated: KubeObject) -> list[FieldError]:
    def fixed(spec: Mapping[str, Any]) -> dict[str, Any]:
        mutable = ("resources", "volumeAttributesClassName", "volumeName")
        return {k: v for k, v in spec.items() if k not in mutable}

    before, after = current.get("spec") or {}, updated.get("spec") or {}
    bound = before.get("volumeName")
    if fixed(before) == fixed(after) and (not bound or bound == after.get("volumeName")):
        return []
    return [
        FieldError(
            "Forbidden",
            "spec",
            detail="spec is immutable after creation except resources.requests and "
            "volumeAttributesClassName for bound claims",
        )
    ]


def _role_binding_update(current: KubeObject, updated: KubeObject) -> list[FieldError]:
    if current.get("roleRef") == updated.get("roleRef"):
        return []
    return [FieldError("Invalid value", "roleRef", updated.get("roleRef"), "cannot change roleRef")]


def _immutable_data(current: KubeObject, updated: KubeObject) -> list[FieldError]:
    errors = []
    if current.get("kind") == "Secret" and current.get("type") != updated.get("type"):
        errors.append(
            FieldError("Invalid value", "type", updated.get("type"), "field is immutable")
        )
    if current.get("immutable") is True:
        for member in ("data", "binaryData"):
            if current.get(member) != updated.get(member):
                errors.append(
                    FieldError(
                        "Forbidden", member, detail="field is immutable when `immutable` is set"
                    )
                )
        if updated.get("immutable") is not True:
            errors.append(
                FieldError(
                    "Forbidden", "immutable", detail="field is immutable when `immutable` is set"
                )
            )
    return errors


UPDATE_RULES: dict[str, Callable[[KubeObject, KubeObject], list[FieldError]]] = {
    "v1/Pod": _pod_update,
    "apps/v1/StatefulSet": _statefulset_update,
    "v1/PersistentVolumeClaim": _claim_update,
    "rbac.authorization.k8s.io/v1/RoleBinding": _role_binding_update,
    "rbac.authorization.k8s.io/v1/ClusterRoleBinding": _role_binding_update,
    "v1/Secret": _immutable_data,
    "v1/ConfigMap": _immutable_data,
}
NAME_RULES: dict[str, NameRule] = {
    "v1/Service": dns1035_label,
    "v1/Namespace": dns_label,
    "rbac.authorization.k8s.io/v1/Role": path_segment,
    "rbac.authorization.k8s.io/v1/RoleBinding": path_segment,
    "rbac.authorization.k8s.io/v1/ClusterRole": path_segment,
    "rbac.authorization.k8s.io/v1/ClusterRoleBinding": path_segment,
}


def secret_as_stored(secret: KubeObject) -> None:
    """What the API server makes of a Secret before checking it: `stringData` written into
    `data` (base64), and the type defaulted to Opaque."""
    if not secret.get("type"):
        secret["type"] = "Opaque"
    string_data = secret.get("stringData")
    if not isinstance(string_data, dict):
        return
    data = secret.get("data")
    data = dict(data) if isinstance(data, dict) else {}
    for key, value in string_data.items():
        if isinstance(value, str):
            data[key] = base64.b64encode(value.encode()).decode()
    secret["data"] = data
    del secret["stringData"]
