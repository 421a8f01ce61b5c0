"""What the Kubernetes API server refuses in a Pod, checked before the pod is asked for.

A runner pod is built from a user's spec and created later by Metacontroller; a value the API
server refuses would surface only then, after the runner it replaces was already let go. So the
spec is judged by the pod it builds: an invalid one gets a `Valid=False` condition naming the
field, and nothing is stopped or replaced for it.

Two layers, as the API server has them. First the schema: types and required fields, from
Kubernetes' own OpenAPI description of Pod metadata and PodSpec (`pod-schema-v1.33.json`,
extracted by `tests/pod_schema_source.py`), checked with jsonschema. Then the rules of
`pkg/apis/core/validation/validation.go` (Kubernetes 1.33) for the parts of a PodSpec a runner
template sets: names, labels and annotations, containers (names, images, pull policy, ports and
host ports, environment and downward-API paths, resource names and amounts, mounts, security
context), volumes (their sources' names and file modes, projected sources and tokens),
tolerations, node selectors, DNS, host
aliases, host names, grace periods, probes and lifecycle hooks, affinity and topology spread
constraints (with `matchLabelKeys`), `envFrom`, the pod's security context, seccomp and
AppArmor profiles, sysctls, host paths, the fields a pod's OS (`spec.os.name`) rules out,
Windows options (`runAsUserName`, GMSA) and HostProcess pods; and
`ValidatePersistentVolumeClaimSpec` for the claims a RunnerSet makes from its templates
(`claim_spec_problems`). Rules that depend on cluster state (admission, quotas, the policy on
privileged pods) are not here. Messages name the field and the rule, never the value: a
token pasted into the wrong field must not end up in a status condition.

The rules are ported from Kubernetes (`pkg/apis/core/validation`, `k8s.io/apimachinery` and
`k8s.io/component-helpers`), Copyright The Kubernetes Authors, licensed under Apache-2.0; each
function names the one it ports.
"""

from __future__ import annotations

import functools
import ipaddress
import json
import re
from collections.abc import Mapping
from decimal import MAX_EMAX, MAX_PREC, MIN_EMIN, ROUND_CEILING, Context, Decimal
from importlib import resources
from typing import Any

import jsonschema
import orjson

from hooks.memo import PLAIN_JSON, Memo
from hooks.naming import LABEL_VALUE
from hooks.redaction import mask_credentials

DNS1123_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
DNS1123_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
QUALIFIED_NAME_PART = re.compile(r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]")
IANA_SERVICE_NAME = re.compile(r"[-a-z0-9]+")
QUANTITY_NUMBER = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)")
QUANTITY = re.compile(rf"({QUANTITY_NUMBER.pattern})((?:[KMGTPE]i)|[numkMGTPE]|[eE][+-]?[0-9]+)?")
"""Kubernetes' quantity grammar (resource.Quantity): a signed decimal number, then a binary or
decimal SI suffix or a decimal exponent. Each part starts with what the one before cannot
contain, so a match is found in one pass, however long the text."""

BINARY_SI = {"Ki": 1, "Mi": 2, "Gi": 3, "Ti": 4, "Pi": 5, "Ei": 6}
"""Powers of 1024."""
DECIMAL_SI = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
"""Powers of ten. `1E` is an exa, `1E3` a thousand."""
_SUFFIX_TEXT = "eEinumkKMGTP+-0123456789"
"""What Kubernetes reads as a quantity's suffix (then checks it is one it knows)."""
MAX_QUANTITY_LENGTH = 128
"""Longer text is refused before it is matched: no real quantity comes near, and a request may
hold many megabytes of digits."""
EXPONENT_LIMIT = 2**31 - 1
"""Kubernetes reads a decimal exponent as a 32-bit integer."""
_EXACT = Context(prec=MAX_PREC, Emax=MAX_EMAX, Emin=MIN_EMIN)
PULL_POLICIES = ("Always", "IfNotPresent", "Never")
RESTART_POLICIES = ("Always", "OnFailure", "Never")
DNS_POLICIES = ("ClusterFirstWithHostNet", "ClusterFirst", "Default", "None")
PROTOCOLS = ("TCP", "UDP", "SCTP")
TOLERATION_OPERATORS = ("Exists", "Equal")
TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
UNSATISFIABLE_ACTIONS = ("DoNotSchedule", "ScheduleAnyway")
NODE_INCLUSION_POLICIES = ("Honor", "Ignore")
FS_GROUP_CHANGE_POLICIES = ("OnRootMismatch", "Always")
SUPPLEMENTAL_GROUPS_POLICIES = ("Merge", "Strict")
SELINUX_CHANGE_POLICIES = ("Recursive", "MountOption")
"""Every value some API server takes: 1.33 refuses `MountOption` on create unless its
`SELinuxMount` gate is on (off by default), so a cluster that turned the gate on accepts it."""
OS_NAMES = ("linux", "windows")
MAX_GMSA_CREDENTIAL_SPEC_BYTES = 64 * 1024
MAX_WINDOWS_DOMAIN_BYTES = 256
"""A runAsUserName's domain is shorter than this."""
MAX_WINDOWS_USER_BYTES = 104
CONTROL_CHARACTER = re.compile(r"[\x00-\x1f\x7f]")
"""Go's `[[:cntrl:]]`."""
NETBIOS_DOMAIN = re.compile(r'[^\\/:*?"<>|.][^\\/:*?"<>|]{0,14}')
_WINDOWS_DNS_LABEL = r"[a-zA-Z0-9](?:[a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?"
WINDOWS_DNS_DOMAIN = re.compile(rf"{_WINDOWS_DNS_LABEL}(?:\.{_WINDOWS_DNS_LABEL})*")
"""Go's `dnsSubdomainFormat` of Windows user domains: any case, no length limit of its own."""
WINDOWS_USER_FORBIDDEN = re.compile(r'["/\\:;|=,+*?<>@\[\]]')
WINDOWS_FORBIDDEN_IN_POD_CONTEXT = (
    *("appArmorProfile", "seLinuxOptions", "seccompProfile", "fsGroup", "fsGroupChangePolicy"),
    *("runAsUser", "runAsGroup", "supplementalGroups", "supplementalGroupsPolicy"),
    "seLinuxChangePolicy",
)
"""`validateWindows`: Linux-only fields of a pod's securityContext (refused when given)."""
WINDOWS_FORBIDDEN_IN_CONTAINER_CONTEXT = (
    *("appArmorProfile", "seLinuxOptions", "seccompProfile", "capabilities"),
    *("readOnlyRootFilesystem", "privileged", "allowPrivilegeEscalation", "procMount"),
    *("runAsUser", "runAsGroup"),
)
"""`validateWindows`: Linux-only fields of a container's securityContext."""
STORAGE_MEDIA = ("", "Memory", "HugePages")
MOUNT_PROPAGATIONS = ("None", "HostToContainer", "Bidirectional")
ACCESS_MODES = ("ReadWriteOnce", "ReadOnlyMany", "ReadWriteMany", "ReadWriteOncePod")
VOLUME_MODES = ("Block", "Filesystem")
MAX_ANNOTATIONS_BYTES = 256 * 1024
MAX_PORT = 65535
MAX_FILE_MODE = 0o777
MAX_ID = 2**31 - 1
"""User and group IDs: 0 to 2147483647 (`IsValidUserID`, `IsValidGroupID`)."""
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
"""An `int64` field's range: a value past it is not decoded by the API server."""
MAX_NAMESERVERS = 3
STANDARD_CONTAINER_RESOURCES = ("cpu", "memory", "ephemeral-storage")
"""The names without a domain a container may ask for, besides `hugepages-<size>`
(`IsStandardContainerResourceName`)."""
HUGEPAGES_PREFIX = "hugepages-"
NATIVE_RESOURCE_DOMAIN = "kubernetes.io/"
ENV_FIELD_PATHS = frozenset(
    {
        "metadata.name",
        "metadata.namespace",
        "metadata.uid",
        "spec.nodeName",
        "spec.serviceAccountName",
        "status.hostIP",
        "status.hostIPs",
        "status.podIP",
        "status.podIPs",
        "spec.host",  # an old name of spec.nodeName, converted before it is checked
    }
)
"""What `env[].valueFrom.fieldRef.fieldPath` may name (`validEnvDownwardAPIFieldPathExpressions`),
besides `metadata.labels['<key>']` and `metadata.annotations['<key>']`."""
FIELD_PATH_SUBSCRIPTS = ("metadata.labels", "metadata.annotations")
IPV4_SLOPPY = re.compile(r"([0-9]+)\.([0-9]+)\.([0-9]+)\.([0-9]+)")
"""An IPv4 address as Kubernetes reads one (`netutils.ParseIPSloppy`): leading zeros allowed."""

VOLUME_SOURCES = frozenset(
    {
        "hostPath",
        "emptyDir",
        "gcePersistentDisk",
        "awsElasticBlockStore",
        "gitRepo",
        "secret",
        "nfs",
        "iscsi",
        "glusterfs",
        "persistentVolumeClaim",
        "rbd",
        "flexVolume",
        "cinder",
        "cephfs",
        "flocker",
        "downwardAPI",
        "fc",
        "azureFile",
        "configMap",
        "vsphereVolume",
        "quobyte",
        "azureDisk",
        "photonPersistentDisk",
        "projected",
        "portworxVolume",
        "scaleIO",
        "storageos",
        "csi",
        "ephemeral",
        "image",
    }
)
ENV_SOURCES = ("fieldRef", "resourceFieldRef", "configMapKeyRef", "secretKeyRef")
ENV_FROM_SOURCES = ("configMapRef", "secretRef")
INT32_MAX = 2**31 - 1
PROBE_KINDS = ("livenessProbe", "readinessProbe", "startupProbe")
PROBE_COUNTS = (
    "initialDelaySeconds",
    "timeoutSeconds",
    "periodSeconds",
    "successThreshold",
    "failureThreshold",
)
PROBE_HANDLERS = ("exec", "httpGet", "tcpSocket", "grpc")
LIFECYCLE_HANDLERS = ("exec", "httpGet", "tcpSocket", "sleep")
"""The actions a probe and a lifecycle hook may take, in the order `validateHandler` counts
them: only the first one given is checked, each further one is refused."""
LIFECYCLE_HOOKS = ("postStart", "preStop")
HTTP_SCHEMES = ("HTTP", "HTTPS")
HTTP_HEADER_NAME = re.compile(r"[-A-Za-z0-9]+")
DEFAULT_GRACE_PERIOD = 30
"""A pod's terminationGracePeriodSeconds when it sets none (`SetDefaults_PodSpec`)."""
REQUIRED_TERMS = "requiredDuringSchedulingIgnoredDuringExecution"
PREFERRED_TERMS = "preferredDuringSchedulingIgnoredDuringExecution"
LABEL_SELECTOR_OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist")
NODE_SELECTOR_OPERATORS = (*LABEL_SELECTOR_OPERATORS, "Gt", "Lt")
PROFILE_TYPES = ("Localhost", "RuntimeDefault", "Unconfined")
MAX_LOCALHOST_PROFILE_BYTES = 4095
GO_SPACE = "\t\n\v\f\r \x85\xa0\u1680\u2028\u2029\u202f\u205f\u3000" + "".join(
    chr(c) for c in range(0x2000, 0x200B)
)
"""What Go's `strings.TrimSpace` trims (`unicode.IsSpace`); Python's `str.strip` trims more."""
HOST_PATH_TYPES = (
    "",
    "DirectoryOrCreate",
    "Directory",
    "FileOrCreate",
    "File",
    "Socket",
    "CharDevice",
    "BlockDevice",
)
_SYSCTL_SEGMENT = "[a-z0-9]([-_a-z0-9]*[a-z0-9])?"
SYSCTL_NAME = re.compile(rf"({_SYSCTL_SEGMENT}[\./])*{_SYSCTL_SEGMENT}")
MAX_SYSCTL_NAME = 253
IPC_SYSCTLS = frozenset(
    {
        "kernel.sem",
        "kernel.shmall",
        "kernel.shmmax",
        "kernel.shmmni",
        "kernel.shm_rmid_forced",
        "kernel.shm",
        "kernel.msgmax",
        "kernel.msgmnb",
        "kernel.msgmni",
        "kernel.msg",
    }
)
"""The sysctls of the IPC namespace by name, besides `fs.mqueue.*` (component-helpers
`sysctl.GetNamespace`); `net.*` are the network namespace's."""

Problems = list[str]


POD_SCHEMA_FILE = "pod-schema-v1.33.json"
MAX_SCHEMA_PROBLEMS = 10


def pod_problems(pod: Mapping[str, Any]) -> Problems:
    """Every reason the API server would refuse to create `pod` (empty when it would not).
    A pod of the wrong shape is reported by its shape only: the rules read well-typed fields."""
    pod = _whole_numbers_as_integers(pod)
    problems = schema_problems(pod)
    if problems:
        return problems
    return rule_problems(pod)


def schema_problems(pod: Mapping[str, Any]) -> Problems:
    """Where `pod` breaks the schema of Pod metadata and PodSpec (types, required fields)."""
    if not isinstance(pod, Mapping):
        return ["pod: must be of type object"]
    problems: Problems = []
    metadata = pod.get("metadata")
    if metadata is not None:
        problems += _part_problems(metadata, "metadata", _METADATA_TYPE)
    spec = pod.get("spec")
    if spec is not None:
        problems += _spec_problems(spec)
    return sorted(problems)[:MAX_SCHEMA_PROBLEMS]


_METADATA_TYPE = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
_SPEC_TYPE = "io.k8s.api.core.v1.PodSpec"
_SPEC_PROBLEMS: Memo[bytes, tuple[str, ...]] = Memo(256)


def _spec_problems(spec: object) -> Problems:
    """The spec's schema problems, remembered by the spec's shape: its JSON with every string
    value blanked. The schema asserts types, required fields, structure and the range of
    integers, never the text of a string (it has no patterns or enums, and only integer formats
    are asserted), so specs of one shape have the same problems, and the pods of a set's
    runners, which differ in the names written into them, share one check."""
    try:
        key = orjson.dumps(_shape(spec), option=PLAIN_JSON)
    except orjson.JSONEncodeError:
        return _part_problems(spec, "spec", _SPEC_TYPE)
    found = _SPEC_PROBLEMS.get(key)
    if found is None:
        found = tuple(_part_problems(spec, "spec", _SPEC_TYPE))
        _SPEC_PROBLEMS.put(key, found)
    return list(found)


def _whole_numbers_as_integers(value: Any) -> Any:
    """`value` with each whole float (`1000.0`) an integer, as the API server receives it:
    Metacontroller decodes our answer with apimachinery's JSON, which turns them into int64s.
    The rules then judge the integer (a `defaultMode` of `1000.0` is out of range)."""
    if isinstance(value, float):
        return int(value) if value.is_integer() else value
    if isinstance(value, dict):
        return {key: _whole_numbers_as_integers(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_whole_numbers_as_integers(item) for item in value]
    return value


def _shape(value: object) -> object:
    if isinstance(value, str):
        return ""
    if isinstance(value, dict):
        return {key: _shape(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_shape(item) for item in value]
    return value


def _part_problems(value: object, field: str, definition: str) -> Problems:
    problems: Problems = []
    for error in _type_schema(definition).iter_errors(value):
        problems.append(
            f"{field}{_json_path(error.absolute_path, nested=True)}: {_schema_rule(error)}"
        )
        if len(problems) >= MAX_SCHEMA_PROBLEMS:
            break
    return problems


def fragment_problems(value: object, definition: str, where: str) -> Problems:
    """Where `value` breaks the schema of one Kubernetes type (e.g. `Container`), for a part
    of a spec that is copied into a pod as it is."""
    problems = [
        f"{where}{_json_path(error.absolute_path, nested=True)}: {_schema_rule(error)}"
        for error in _fragment_schema(definition).iter_errors(value)
    ]
    return sorted(problems)[:MAX_SCHEMA_PROBLEMS]


def rule_problems(pod: Mapping[str, Any]) -> Problems:
    """The API server's validation rules beyond the schema."""
    problems: Problems = []
    metadata = pod.get("metadata")
    if isinstance(metadata, Mapping):
        problems += metadata_problems(metadata, "metadata")
    spec = pod.get("spec")
    if not isinstance(spec, Mapping):
        return [*problems, "spec: must be an object"]
    labels = metadata.get("labels") if isinstance(metadata, Mapping) else None
    return problems + pod_spec_problems(spec, "spec", labels if isinstance(labels, Mapping) else {})


def metadata_problems(metadata: Mapping[str, Any], where: str) -> Problems:
    problems: Problems = []
    labels = metadata.get("labels")
    if labels is not None:
        problems += label_problems(labels, f"{where}.labels")
    annotations = metadata.get("annotations")
    if annotations is not None:
        if not _is_string_map(annotations):
            problems.append(f"{where}.annotations: must map strings to strings")
        else:
            # Kubernetes checks annotation keys lower-cased (`ValidateAnnotations`), unlike
            # label keys: `Example.com/owner` is a valid annotation.
            problems += [
                f"{where}.annotations[{_short(key)}]: {problem}"
                for key in annotations
                for problem in qualified_name_problems(key.lower())
            ]
            size = sum(len(k) + len(v) for k, v in annotations.items())
            if size > MAX_ANNOTATIONS_BYTES:
                problems.append(f"{where}.annotations: must be at most 256 KiB in all")
    return problems


def label_problems(labels: object, where: str) -> Problems:
    if not _is_string_map(labels):
        return [f"{where}: must map strings to strings"]
    assert isinstance(labels, Mapping)
    problems: Problems = []
    for key, value in labels.items():
        path = f"{where}[{_short(key)}]"
        problems += [f"{path}: {problem}" for problem in qualified_name_problems(key)]
        if len(value) > 63 or not LABEL_VALUE.fullmatch(value):
            problems.append(
                f"{path}: the value must be at most 63 characters of letters, digits, '-', '_' "
                "and '.', starting and ending with a letter or digit"
            )
    return problems


def qualified_name_problems(key: str) -> Problems:
    """A label or annotation key: an optional DNS subdomain prefix and '/', then a name."""
    prefix, slash, name = key.rpartition("/")
    problems: Problems = []
    if slash and not _is_subdomain(prefix):
        problems.append("a key's prefix must be a DNS subdomain (lowercase, at most 253)")
    if len(name) > 63 or not QUALIFIED_NAME_PART.fullmatch(name):
        problems.append(
            "a key's name must be at most 63 characters of letters, digits, '-', '_' and '.', "
            "starting and ending with a letter or digit"
        )
    return problems


def pod_spec_problems(spec: Mapping[str, Any], where: str, labels: Mapping[str, Any]) -> Problems:
    """`labels`: the pod's, which the API server merges into selectors that name them in
    `matchLabelKeys` before it validates (`_label_keys_problems`)."""
    problems: Problems = []
    volumes = _objects(spec, "volumes", where, problems)
    volume_names = {v.get("name") for _, v in volumes}
    problems += _volume_problems(volumes)
    containers = _objects(spec, "containers", where, problems)
    if not containers:
        problems.append(f"{where}.containers: at least one container is required")
    init_containers = _objects(spec, "initContainers", where, problems)
    all_containers = [*init_containers, *containers]
    seen: set[object] = set()
    for path, container in all_containers:
        name = container.get("name")
        if name in seen:
            problems.append(f"{path}.name: must be unique among the pod's containers")
        seen.add(name)
        problems += container_problems(container, path, volume_names)
    problems += _probe_and_hook_problems(spec, containers, init_containers)
    problems += _host_process_problems(spec, where, all_containers)
    problems += _os_problems(spec, where, all_containers)
    host_network = spec.get("hostNetwork") is True
    # Host ports are shared by the containers that run together: all regular containers, and
    # each init container on its own (they run one after another).
    problems += _host_port_problems(containers, host_network=host_network)
    for init_container in init_containers:
        problems += _host_port_problems([init_container], host_network=host_network)
    if host_network:
        problems += _host_network_port_problems(containers)
    problems += _enum(spec, "restartPolicy", RESTART_POLICIES, where, defaulted=True)
    problems += _enum(spec, "dnsPolicy", DNS_POLICIES, where, defaulted=True)
    if spec.get("dnsPolicy") == "None":
        config = spec.get("dnsConfig")
        servers = config.get("nameservers") if isinstance(config, Mapping) else None
        if not servers:
            problems.append(f"{where}.dnsConfig.nameservers: required when dnsPolicy is None")
    dns_config = spec.get("dnsConfig")
    if isinstance(dns_config, Mapping):
        problems += _dns_config_problems(dns_config, f"{where}.dnsConfig")
    for path, alias in _objects(spec, "hostAliases", where, problems):
        problems += _host_alias_problems(alias, path)
    for field in ("hostname", "subdomain"):
        value = spec.get(field)
        if isinstance(value, str) and value and not _is_label(value):
            problems.append(f"{where}.{field}: must be a DNS label (lowercase, at most 63)")
    if spec.get("hostPID") is True and spec.get("shareProcessNamespace") is True:
        problems.append(f"{where}.shareProcessNamespace: cannot be true when hostPID is true")
    # A negative grace period is accepted with a warning and treated as 1 (`warningsForPodSpec`,
    # the graceful delete): refusing it would refuse manifests Kubernetes and ARC run.
    problems += _integer(
        spec, "terminationGracePeriodSeconds", where, minimum=INT64_MIN, maximum=INT64_MAX
    )
    problems += _integer(spec, "activeDeadlineSeconds", where, minimum=1, maximum=MAX_ID)
    node_selector = spec.get("nodeSelector")
    if node_selector is not None:
        problems += label_problems(node_selector, f"{where}.nodeSelector")
    for field in ("serviceAccountName", "priorityClassName", "runtimeClassName"):
        value = spec.get(field)  # "" is no name: Kubernetes checks only one given
        if value not in (None, "") and (not isinstance(value, str) or not _is_subdomain(value)):
            problems.append(f"{where}.{field}: must be a DNS subdomain (lowercase, at most 253)")
    for path, toleration in _objects(spec, "tolerations", where, problems):
        problems += _toleration_problems(toleration, path)
    constraints = _objects(spec, "topologySpreadConstraints", where, problems)
    for index, (path, constraint) in enumerate(constraints):
        problems += _spread_problems(constraint, path, labels)
        if any(_same_spread(constraint, later) for _, later in constraints[index + 1 :]):
            problems.append(f"{path}: another constraint has its topologyKey and whenUnsatisfiable")
    context = spec.get("securityContext")
    if context is not None:
        problems += _security_context_problems(context, f"{where}.securityContext", pod=True)
    if isinstance(context, Mapping):
        problems += _sysctl_problems(context, spec, f"{where}.securityContext")
    affinity = spec.get("affinity")
    if affinity is not None:
        problems += _affinity_problems(affinity, f"{where}.affinity", labels)
    return problems


def container_problems(
    container: Mapping[str, Any], where: str, volume_names: set[object]
) -> Problems:
    problems: Problems = []
    name = container.get("name")
    if not isinstance(name, str) or not _is_label(name):
        problems.append(f"{where}.name: must be a DNS label (lowercase, at most 63)")
    image = container.get("image")
    if not isinstance(image, str) or not image:
        problems.append(f"{where}.image: required")
    elif image != image.strip():
        problems.append(f"{where}.image: must not have leading or trailing whitespace")
    problems += _enum(container, "imagePullPolicy", PULL_POLICIES, where, defaulted=True)
    port_names: set[str] = set()
    for path, port in _objects(container, "ports", where, problems):
        problems += _port_problems(port, path, port_names)
    for path, env in _objects(container, "env", where, problems):
        problems += _env_problems(env, path)
    for path, source in _objects(container, "envFrom", where, problems):
        problems += _env_from_problems(source, path)
    resources = container.get("resources")
    if resources is not None:
        problems += _resources_problems(resources, f"{where}.resources")
    mount_paths: set[str] = set()
    context = container.get("securityContext")
    privileged = isinstance(context, Mapping) and context.get("privileged") is True
    for path, mount in _objects(container, "volumeMounts", where, problems):
        problems += _mount_problems(mount, path, volume_names, mount_paths, privileged=privileged)
    if context is not None:
        problems += _security_context_problems(context, f"{where}.securityContext", pod=False)
    return problems


def claim_spec_problems(spec: object, where: str) -> Problems:
    """Every reason the API server would refuse a PersistentVolumeClaim of this spec
    (`ValidatePersistentVolumeClaimSpec`): its schema, then access modes, a positive storage
    request, a class name and a volume mode it knows."""
    if not isinstance(spec, Mapping):
        return [f"{where}: must be an object"]
    problems = fragment_problems(spec, "PersistentVolumeClaimSpec", where)
    if problems:
        return problems
    modes = spec.get("accessModes") or []
    if not modes:
        problems.append(f"{where}.accessModes: at least one access mode is required")
    if any(mode not in ACCESS_MODES for mode in modes):
        problems.append(f"{where}.accessModes: must be among {', '.join(ACCESS_MODES)}")
    elif "ReadWriteOncePod" in modes and len(set(modes)) > 1:
        problems.append(f"{where}.accessModes: ReadWriteOncePod may not be given with another")
    resources = spec.get("resources") or {}
    storage = (resources.get("requests") or {}).get("storage")
    path = f"{where}.resources.requests[storage]"
    if storage is None:
        problems.append(f"{path}: required")
    elif problem := quantity_problem(storage):
        problems.append(f"{path}: {problem}")
    elif quantity_value(storage) <= 0:
        problems.append(f"{path}: must be more than zero")
    class_name = spec.get("storageClassName")
    if class_name and not _is_subdomain(class_name):
        problems.append(
            f"{where}.storageClassName: must be a DNS subdomain (lowercase, at most 253)"
        )
    return problems + _enum(spec, "volumeMode", VOLUME_MODES, where)


def quantity_problem(value: object) -> str | None:
    """Why `value` is not a Kubernetes resource quantity (None when it is one)."""
    if isinstance(value, bool):
        return "must be a quantity such as 500m, 1Gi or 2"
    if isinstance(value, int):
        return None
    if not isinstance(value, str):
        return "must be a quantity such as 500m, 1Gi or 2"
    if len(value) > MAX_QUANTITY_LENGTH:
        return f"must be a quantity of at most {MAX_QUANTITY_LENGTH} characters"
    match = QUANTITY.fullmatch(value)
    if match is None:
        number = QUANTITY_NUMBER.match(value)
        if number is not None and not value[number.end() :].strip(_SUFFIX_TEXT):
            return "must be a quantity such as 500m, 1Gi or 2 (unknown suffix)"
        return "must be a quantity such as 500m, 1Gi or 2"
    suffix = match.group(2) or ""
    exponent = suffix not in BINARY_SI and suffix not in DECIMAL_SI
    if exponent and not _exponent_in_range(suffix[1:]):
        return "must be a quantity such as 500m, 1Gi or 2 (exponent out of range)"
    return None


def _exponent_in_range(text: str) -> bool:
    digits = text.lstrip("+-").lstrip("0")
    return len(digits) <= len(str(EXPONENT_LIMIT)) and int(digits or "0") <= EXPONENT_LIMIT


def quantity_value(value: int | str) -> Decimal:
    """The quantity as an exact number (only for quantities `quantity_problem` accepts)."""
    if isinstance(value, int):
        return Decimal(value)
    match = QUANTITY.fullmatch(value)
    assert match is not None
    number, suffix = Decimal(match.group(1)), match.group(2) or ""
    if suffix in BINARY_SI:
        return _EXACT.multiply(number, _EXACT.power(Decimal(1024), BINARY_SI[suffix]))
    exponent = DECIMAL_SI[suffix] if suffix in DECIMAL_SI else int(suffix[1:])
    return number.scaleb(exponent, _EXACT)


# ------------------------------------------------------------------------------ parts


def _volume_problems(volumes: list[tuple[str, Mapping[str, Any]]]) -> Problems:
    problems: Problems = []
    names: set[object] = set()
    for path, volume in volumes:
        name = volume.get("name")
        if not isinstance(name, str) or not _is_label(name):
            problems.append(f"{path}.name: must be a DNS label (lowercase, at most 63)")
        elif name in names:
            problems.append(f"{path}.name: must be unique among the pod's volumes")
        names.add(name)
        sources = [key for key in volume if key in VOLUME_SOURCES]
        if len(sources) > 1:
            problems.append(f"{path}: may not specify more than one volume type")
        empty_dir = volume.get("emptyDir")
        if isinstance(empty_dir, Mapping):
            medium = empty_dir.get("medium")
            if medium is not None and not (
                isinstance(medium, str)
                and (medium in STORAGE_MEDIA or medium.startswith("HugePages-"))
            ):
                problems.append(f"{path}.emptyDir.medium: must be '', Memory or HugePages")
            limit = empty_dir.get("sizeLimit")
            if limit is not None:
                problems += _quantity(limit, f"{path}.emptyDir.sizeLimit")
        problems += _volume_source_problems(volume, path)
    return problems


def _volume_source_problems(volume: Mapping[str, Any], where: str) -> Problems:
    """The rules of the sources that name what they mount, and of the modes of its files."""
    problems: Problems = []
    for source, name_field in (("configMap", "name"), ("secret", "secretName")):
        found = volume.get(source)
        if not isinstance(found, Mapping):
            continue
        if not found.get(name_field):
            problems.append(f"{where}.{source}.{name_field}: required")
        for path, item in _objects(found, "items", f"{where}.{source}", problems):
            problems += _key_to_path_problems(item, path)
    for source in ("configMap", "secret", "downwardAPI", "projected"):
        found = volume.get(source)
        if isinstance(found, Mapping):
            problems += _file_mode(found, "defaultMode", f"{where}.{source}")
    problems += _downward_api_problems(volume, where)
    projected = volume.get("projected")
    if isinstance(projected, Mapping):
        sources = _objects(projected, "sources", f"{where}.projected", problems)
        for path, item in sources:
            problems += _projection_problems(item, path)
        problems += _duplicate_projected_paths([item for _, item in sources], where)
    claim = volume.get("persistentVolumeClaim")
    if isinstance(claim, Mapping) and not claim.get("claimName"):
        problems.append(f"{where}.persistentVolumeClaim.claimName: required")
    host_path = volume.get("hostPath")
    if isinstance(host_path, Mapping):
        problems += _host_path_problems(host_path, f"{where}.hostPath")
    ephemeral = volume.get("ephemeral")
    if isinstance(ephemeral, Mapping):
        problems += _ephemeral_problems(ephemeral, f"{where}.ephemeral")
    return problems


PROJECTION_KINDS = (
    "secret",
    "configMap",
    "downwardAPI",
    "serviceAccountToken",
    "clusterTrustBundle",
    "podCertificate",
)
MIN_TOKEN_SECONDS, MAX_TOKEN_SECONDS = 10 * 60, 1 << 32
"""A projected service account token's lifetime (`expirationSeconds`; 3600 when unset)."""


def _projection_problems(source: Mapping[str, Any], where: str) -> Problems:
    """`validateProjectionSources`, for one source: one kind of projection, the name of what a
    secret or config map projects, its files' paths and modes, a token's path and lifetime."""
    problems: Problems = []
    if sum(source.get(kind) is not None for kind in PROJECTION_KINDS) > 1:
        problems.append(f"{where}: may not specify more than 1 volume type per source")
    for kind in ("secret", "configMap"):
        found = source.get(kind)
        if not isinstance(found, Mapping):
            continue
        if not found.get("name"):
            problems.append(f"{where}.{kind}.name: required")
        for path, item in _objects(found, "items", f"{where}.{kind}", problems):
            problems += _key_to_path_problems(item, path)
    problems += _downward_api_problems(source, where)
    token = source.get("serviceAccountToken")
    if isinstance(token, Mapping):
        token_where = f"{where}.serviceAccountToken"
        seconds = token.get("expirationSeconds")
        if isinstance(seconds, int) and not isinstance(seconds, bool):
            if seconds < MIN_TOKEN_SECONDS:
                problems.append(f"{token_where}.expirationSeconds: must be at least 10 minutes")
            if seconds > MAX_TOKEN_SECONDS:
                problems.append(f"{token_where}.expirationSeconds: must be at most 2^32 seconds")
        problems += _relative_path_problems(token.get("path"), f"{token_where}.path")
    return problems


def _downward_api_problems(owner: Mapping[str, Any], where: str) -> Problems:
    """The files of a downward API volume, or of a projected volume's downward API source."""
    downward = owner.get("downwardAPI")
    if not isinstance(downward, Mapping):
        return []
    problems: Problems = []
    for path, item in _objects(downward, "items", f"{where}.downwardAPI", problems):
        problems += _downward_file_problems(item, path)
    return problems


def _downward_file_problems(item: Mapping[str, Any], where: str) -> Problems:
    """`validateDownwardAPIVolumeFile`: a relative path without '..', and its file's mode."""
    return _relative_path_problems(item.get("path"), f"{where}.path") + _file_mode(
        item, "mode", where
    )


def _relative_path_problems(path: object, where: str) -> Problems:
    """A file's path in a volume: required, relative, without '..'."""
    if not path:
        return [f"{where}: required"]
    if isinstance(path, str) and not _is_local_path(path):
        return [f"{where}: must be a relative path without '..'"]
    return []


def _duplicate_projected_paths(sources: list[Mapping[str, Any]], where: str) -> Problems:
    """`validateProjectionSources`: no two files of a projected volume at one path."""
    paths: list[object] = []
    for source in sources:
        for kind in ("secret", "configMap", "downwardAPI"):
            found = source.get(kind)
            items = found.get("items") if isinstance(found, Mapping) else None
            if isinstance(items, list):
                paths += [item.get("path") for item in items if isinstance(item, Mapping)]
        token = source.get("serviceAccountToken")
        if isinstance(token, Mapping):
            paths.append(token.get("path"))
    texts = [path for path in paths if isinstance(path, str) and path]
    if len(set(texts)) < len(texts):
        return [f"{where}.projected.sources: conflicting duplicate paths"]
    return []


def _ephemeral_problems(ephemeral: Mapping[str, Any], where: str) -> Problems:
    """`validateEphemeralVolumeSource`: a claim template, whose spec is a claim's
    (`ValidatePersistentVolumeClaimTemplate`). Kubernetes container mode's work volume is one."""
    template = ephemeral.get("volumeClaimTemplate")
    if template is None:
        return [f"{where}.volumeClaimTemplate: required"]
    if not isinstance(template, Mapping):
        return [f"{where}.volumeClaimTemplate: must be an object"]
    return claim_spec_problems(template.get("spec"), f"{where}.volumeClaimTemplate.spec")


def _host_path_problems(host_path: Mapping[str, Any], where: str) -> Problems:
    """`validateHostPathVolumeSource`: a path without '..' (absolute or not), and a type it
    knows; "" is the type that checks nothing (and what the API server fills in)."""
    path = host_path.get("path")
    if not path:
        return [f"{where}.path: required"]
    problems: Problems = []
    if isinstance(path, str) and ".." in path.split("/"):
        problems.append(f"{where}.path: must not contain '..'")
    return problems + _enum(host_path, "type", HOST_PATH_TYPES, where)


def _key_to_path_problems(item: Mapping[str, Any], where: str) -> Problems:
    problems: Problems = []
    if not item.get("key"):
        problems.append(f"{where}.key: required")
    problems += _relative_path_problems(item.get("path"), f"{where}.path")
    return problems + _file_mode(item, "mode", where)


def _file_mode(owner: Mapping[str, Any], field: str, where: str) -> Problems:
    value = owner.get(field)
    if isinstance(value, int) and not isinstance(value, bool) and not 0 <= value <= MAX_FILE_MODE:
        return [f"{where}.{field}: must be a file mode from 0 to 0777 (octal), 511 in decimal"]
    return []


def _host_port_problems(
    containers: list[tuple[str, Mapping[str, Any]]], *, host_network: bool
) -> Problems:
    """No two ports of containers that run together may take the same host port, protocol
    and host IP. With the host's network, a port's host port is its container port."""
    problems: Problems = []
    taken: set[tuple[object, object, int]] = set()
    for container_path, container in containers:
        for path, port in _objects(container, "ports", container_path, []):
            host_port = port.get("hostPort") or (port.get("containerPort") if host_network else 0)
            if not isinstance(host_port, int) or isinstance(host_port, bool) or host_port == 0:
                continue
            key = (port.get("protocol") or "TCP", port.get("hostIP") or "", host_port)
            if key in taken:
                problems.append(
                    f"{path}.hostPort: must be unique among the pod's containers "
                    "(for its protocol and hostIP)"
                )
            taken.add(key)
    return problems


def _host_network_port_problems(containers: list[tuple[str, Mapping[str, Any]]]) -> Problems:
    problems: Problems = []
    for container_path, container in containers:
        for path, port in _objects(container, "ports", container_path, []):
            host_port = port.get("hostPort")
            if host_port and host_port != port.get("containerPort"):
                problems.append(
                    f"{path}.hostPort: must match containerPort when hostNetwork is true"
                )
    return problems


def _dns_config_problems(config: Mapping[str, Any], where: str) -> Problems:
    servers = config.get("nameservers")
    if not isinstance(servers, list):
        return []
    problems: Problems = []
    if len(servers) > MAX_NAMESERVERS:
        problems.append(f"{where}.nameservers: must have at most {MAX_NAMESERVERS} nameservers")
    problems += [
        f"{where}.nameservers[{index}]: must be an IP address"
        for index, server in enumerate(servers)
        if not _is_ip(server)
    ]
    return problems


def _host_alias_problems(alias: Mapping[str, Any], where: str) -> Problems:
    problems: Problems = []
    if not _is_ip(alias.get("ip")):
        problems.append(f"{where}.ip: must be an IP address")
    hostnames = alias.get("hostnames")
    for index, hostname in enumerate(hostnames if isinstance(hostnames, list) else []):
        if not isinstance(hostname, str) or not _is_subdomain(hostname):
            problems.append(
                f"{where}.hostnames[{index}]: must be a DNS subdomain (lowercase, at most 253)"
            )
    return problems


def _port_problems(port: Mapping[str, Any], where: str, names: set[str]) -> Problems:
    problems = _integer(port, "containerPort", where, minimum=1, maximum=MAX_PORT, required=True)
    problems += _integer(port, "hostPort", where, minimum=0, maximum=MAX_PORT)
    problems += _enum(port, "protocol", PROTOCOLS, where, defaulted=True)
    name = port.get("name")
    if name is not None:
        if not isinstance(name, str) or not _is_service_name(name):
            problems.append(
                f"{where}.name: must be at most 15 lowercase letters, digits and '-', with a "
                "letter, not starting or ending with '-'"
            )
        elif name in names:
            problems.append(f"{where}.name: must be unique within the container")
        else:
            names.add(name)
    return problems


def _env_problems(env: Mapping[str, Any], where: str) -> Problems:
    problems: Problems = []
    name = env.get("name")
    # Kubernetes 1.33 accepts any printable ASCII but '=' (RelaxedEnvironmentVariableValidation).
    if not isinstance(name, str) or not name or not all(" " <= c <= "~" and c != "=" for c in name):
        problems.append(f"{where}.name: must be printable ASCII characters other than '='")
    value_from = env.get("valueFrom")
    if value_from is not None:
        if not isinstance(value_from, Mapping):
            problems.append(f"{where}.valueFrom: must be an object")
        else:
            sources = [key for key in ENV_SOURCES if value_from.get(key) is not None]
            if len(sources) != 1:
                problems.append(f"{where}.valueFrom: must name exactly one source")
            if env.get("value"):
                problems.append(f"{where}.valueFrom: may not be given beside a value")
            field_ref = value_from.get("fieldRef")
            if isinstance(field_ref, Mapping):
                problems += _field_ref_problems(field_ref, f"{where}.valueFrom.fieldRef")
    value = env.get("value")
    if value is not None and not isinstance(value, str):
        problems.append(f"{where}.value: must be a string")
    return problems


def _field_ref_problems(field_ref: Mapping[str, Any], where: str) -> Problems:
    """What a pod may tell a container of itself (`validateObjectFieldSelector`): a path of
    the list, or a label or annotation by a valid key. The API version defaults to v1, the
    only one there is."""
    version = field_ref.get("apiVersion")
    if version not in (None, "", "v1"):
        return [f"{where}.apiVersion: must be v1"]
    path = field_ref.get("fieldPath")
    if not isinstance(path, str) or not path:
        return [f"{where}.fieldPath: required"]
    base, subscripted, key = path.removesuffix("']").partition("['")
    if path.endswith("']") and subscripted and base:
        if base not in FIELD_PATH_SUBSCRIPTS:
            return [f"{where}.fieldPath: only metadata.labels and metadata.annotations take a key"]
        key = key.lower() if base == "metadata.annotations" else key
        if qualified_name_problems(key):
            return [f"{where}.fieldPath: the key in brackets must be a qualified name"]
        return []
    if path not in ENV_FIELD_PATHS:
        shown = ", ".join(sorted(ENV_FIELD_PATHS - {"spec.host"}))
        return [
            f"{where}.fieldPath: must be one of {shown}, metadata.labels['<key>'] or "
            "metadata.annotations['<key>']"
        ]
    return []


def _resources_problems(resources: object, where: str) -> Problems:
    if not isinstance(resources, Mapping):
        return [f"{where}: must be an object"]
    problems: Problems = []
    amounts: dict[str, dict[str, Decimal]] = {}
    for kind in ("limits", "requests"):
        values = resources.get(kind)
        if values is None:
            continue
        if not isinstance(values, Mapping):
            problems.append(f"{where}.{kind}: must map resource names to quantities")
            continue
        amounts[kind] = {}
        for resource, value in values.items():
            if not isinstance(resource, str) or qualified_name_problems(resource):
                problems.append(f"{where}.{kind}: resource names must be qualified names")
                continue
            path = f"{where}.{kind}[{_short(resource)}]"
            name_problem = _resource_name_problem(resource)
            if name_problem:
                problems.append(f"{path}: {name_problem}")
                continue
            found = _quantity(value, path)
            if found:
                problems += found
                continue
            amount = quantity_value(value)
            if amount < 0:
                problems.append(f"{path}: must not be negative")
            elif _is_extended_resource(resource) and not _is_whole(amount):
                problems.append(f"{path}: must be a whole number (an extended resource)")
            amounts[kind][resource] = amount
    limits, requests = amounts.get("limits", {}), amounts.get("requests", {})
    for resource, request in requests.items():
        path = f"{where}.requests[{_short(resource)}]"
        if _overcommit_allowed(resource):
            if resource in limits and request > limits[resource]:
                problems.append(f"{path}: must not be more than its limit")
        elif resource not in limits:
            problems.append(f"{where}.limits[{_short(resource)}]: required beside its request")
        elif request != limits[resource]:
            problems.append(f"{path}: must equal its limit (it cannot be overcommitted)")
    named = {*limits, *requests}
    if any(r.startswith(HUGEPAGES_PREFIX) for r in named) and not named & {"cpu", "memory"}:
        problems.append(f"{where}: hugepages require a cpu or memory request or limit")
    return problems


def _resource_name_problem(name: str) -> str | None:
    """What a container may ask for (`validateContainerResourceName`): a standard resource,
    one in the kubernetes.io domain, or an extended resource of another domain."""
    if "/" not in name:
        if name in STANDARD_CONTAINER_RESOURCES or name.startswith(HUGEPAGES_PREFIX):
            return None
        return (
            "must be cpu, memory, ephemeral-storage, hugepages-<size> or a name with a "
            "domain (example.com/gpu)"
        )
    if NATIVE_RESOURCE_DOMAIN in name:
        return None
    if name.startswith("requests.") or qualified_name_problems("requests." + name):
        return "must be an extended resource name (its domain at most 244 characters)"
    return None


def _is_extended_resource(name: str) -> bool:
    return "/" in name and NATIVE_RESOURCE_DOMAIN not in name


def _overcommit_allowed(name: str) -> bool:
    """Requests may be below limits except for extended resources and hugepages."""
    return not _is_extended_resource(name) and not name.startswith(HUGEPAGES_PREFIX)


def _is_whole(amount: Decimal) -> bool:
    """As Kubernetes tells an integer quantity: its value in thousandths, rounded up, is a
    multiple of 1000."""
    exponent = amount.as_tuple().exponent
    if isinstance(exponent, int) and exponent >= 0:
        return True  # no fraction, however large
    millis = _EXACT.multiply(amount, Decimal(1000)).to_integral_value(rounding=ROUND_CEILING)
    return _EXACT.remainder(millis, Decimal(1000)) == 0


def _mount_problems(
    mount: Mapping[str, Any],
    where: str,
    volume_names: set[object],
    paths: set[str],
    *,
    privileged: bool,
) -> Problems:
    problems: Problems = []
    name = mount.get("name")
    if not isinstance(name, str) or not name:
        problems.append(f"{where}.name: required")
    elif name not in volume_names:
        problems.append(f"{where}.name: names no volume of the pod")
    path = mount.get("mountPath")
    if not isinstance(path, str) or not path:
        problems.append(f"{where}.mountPath: required")
    elif path in paths:
        problems.append(f"{where}.mountPath: must be unique within the container")
    else:
        paths.add(path)
    for field in ("subPath", "subPathExpr"):
        sub_path = mount.get(field)
        if isinstance(sub_path, str) and (sub_path.startswith("/") or ".." in sub_path.split("/")):
            problems.append(f"{where}.{field}: must be a relative path without '..'")
    if mount.get("subPath") and mount.get("subPathExpr"):
        problems.append(f"{where}.subPathExpr: may not be given beside subPath")
    problems += _enum(mount, "mountPropagation", MOUNT_PROPAGATIONS, where)
    if mount.get("mountPropagation") == "Bidirectional" and not privileged:
        problems.append(f"{where}.mountPropagation: Bidirectional only in privileged containers")
    return problems


def _security_context_problems(context: object, where: str, *, pod: bool) -> Problems:
    if not isinstance(context, Mapping):
        return [f"{where}: must be an object"]
    fields = ["runAsUser", "runAsGroup"] + (["fsGroup"] if pod else [])
    problems = [
        p for field in fields for p in _integer(context, field, where, minimum=0, maximum=MAX_ID)
    ]
    if pod:
        groups = context.get("supplementalGroups")
        if groups is not None and (
            not isinstance(groups, list)
            or not all(
                isinstance(g, int) and not isinstance(g, bool) and 0 <= g <= MAX_ID for g in groups
            )
        ):
            problems.append(f"{where}.supplementalGroups: must be integers from 0 to {MAX_ID}")
        problems += _enum(context, "fsGroupChangePolicy", FS_GROUP_CHANGE_POLICIES, where)
        problems += _enum(context, "supplementalGroupsPolicy", SUPPLEMENTAL_GROUPS_POLICIES, where)
        problems += _enum(context, "seLinuxChangePolicy", SELINUX_CHANGE_POLICIES, where)
    elif context.get("privileged") is True and context.get("allowPrivilegeEscalation") is False:
        problems.append(
            f"{where}: allowPrivilegeEscalation cannot be false for a privileged container"
        )
    windows = context.get("windowsOptions")
    if isinstance(windows, Mapping):
        problems += _windows_options_problems(windows, f"{where}.windowsOptions")
    seccomp = context.get("seccompProfile")
    if seccomp is not None:
        problems += _seccomp_problems(seccomp, f"{where}.seccompProfile")
    apparmor = context.get("appArmorProfile")
    if apparmor is not None:
        problems += _apparmor_problems(apparmor, f"{where}.appArmorProfile")
    return problems


def _windows_options_problems(options: Mapping[str, Any], where: str) -> Problems:
    """`validateWindowsSecurityContextOptions`: a GMSA spec's name and size, and a
    runAsUserName of `[DOMAIN\\]USER` (a NetBIOS or DNS domain, a user name of allowed
    characters). Lengths are in bytes, as Go counts them."""
    problems: Problems = []
    name = options.get("gmsaCredentialSpecName")
    if isinstance(name, str) and not _is_subdomain(name):
        problems.append(
            f"{where}.gmsaCredentialSpecName: must be a DNS subdomain (lowercase, at most 253)"
        )
    spec = options.get("gmsaCredentialSpec")
    if isinstance(spec, str):
        if not spec:
            problems.append(f"{where}.gmsaCredentialSpec: may not be empty")
        elif _utf8_length(spec) > MAX_GMSA_CREDENTIAL_SPEC_BYTES:
            problems.append(f"{where}.gmsaCredentialSpec: must be under 64 KiB")
    user = options.get("runAsUserName")
    if isinstance(user, str):
        problems += [f"{where}.runAsUserName: {p}" for p in _windows_user_name_problems(user)]
    return problems


def _windows_user_name_problems(name: str) -> Problems:
    if not name:
        return ["may not be empty"]
    if CONTROL_CHARACTER.search(name):
        return ["may not contain control characters"]
    parts = name.split("\\")
    if len(parts) > 2:
        return ["may not contain more than one backslash"]
    domain, user = (parts[0], parts[1]) if len(parts) == 2 else ("", parts[0])
    problems: Problems = []
    if _utf8_length(domain) >= MAX_WINDOWS_DOMAIN_BYTES:
        problems.append(f"the domain must be shorter than {MAX_WINDOWS_DOMAIN_BYTES} bytes")
    if len(parts) == 2 and not (
        NETBIOS_DOMAIN.fullmatch(domain) or WINDOWS_DNS_DOMAIN.fullmatch(domain)
    ):
        problems.append("the domain must be a NetBIOS or DNS domain name")
    if not user:
        problems.append("the user may not be empty")
    elif _utf8_length(user) > MAX_WINDOWS_USER_BYTES:
        problems.append(f"the user must be at most {MAX_WINDOWS_USER_BYTES} bytes")
    if user and not user.strip(". "):
        problems.append("the user may not be only periods and spaces")
    if WINDOWS_USER_FORBIDDEN.search(user):
        problems.append('the user may not contain any of "/\\:;|=,+*?<>@[]')
    return problems


def _utf8_length(text: str) -> int:
    return len(text.encode("utf-8", "surrogatepass"))


def _os_problems(
    spec: Mapping[str, Any], where: str, containers: list[tuple[str, Mapping[str, Any]]]
) -> Problems:
    """`validateOS`, then `validateLinux` or `validateWindows`: a pod that names its OS may not
    set the other OS's fields (a pod that names none may set both)."""
    pod_os = spec.get("os")
    if not isinstance(pod_os, Mapping):
        return []
    name = pod_os.get("name")
    if not name:
        return [f"{where}.os.name: required"]
    if name not in OS_NAMES:
        return [f"{where}.os.name: must be one of {', '.join(OS_NAMES)}"]
    context = spec.get("securityContext")
    context = context if isinstance(context, Mapping) else {}
    contexts = [(f"{where}.securityContext", context)] + [
        (f"{path}.securityContext", c["securityContext"])
        for path, c in containers
        if isinstance(c.get("securityContext"), Mapping)
    ]
    if name == "linux":
        return [
            f"{path}.windowsOptions: may not be set for a linux pod"
            for path, container_context in contexts
            if container_context.get("windowsOptions") is not None
        ]
    forbidden = [f"{where}.{field}" for field in ("hostUsers",) if spec.get(field) is not None]
    forbidden += [f"{where}.{field}" for field in ("hostPID", "hostIPC") if spec.get(field) is True]
    if spec.get("shareProcessNamespace") is not None:
        forbidden.append(f"{where}.shareProcessNamespace")
    if context.get("sysctls"):
        forbidden.append(f"{where}.securityContext.sysctls")
    forbidden += [
        f"{where}.securityContext.{field}"
        for field in WINDOWS_FORBIDDEN_IN_POD_CONTEXT
        if context.get(field) is not None
    ]
    forbidden += [
        f"{path}.{field}"
        for path, container_context in contexts[1:]
        for field in WINDOWS_FORBIDDEN_IN_CONTAINER_CONTEXT
        if container_context.get(field) is not None
    ]
    return [f"{path}: may not be set for a windows pod" for path in forbidden]


def _host_process_problems(
    spec: Mapping[str, Any], where: str, containers: list[tuple[str, Mapping[str, Any]]]
) -> Problems:
    """`validateWindowsHostProcessPod`: a container's hostProcess agrees with the pod's where
    both are given, and a pod with a HostProcess container has only such containers and the
    host's network. (Whether the cluster allows privileged pods at all is its policy.)"""
    pod_value = _host_process(spec.get("securityContext"))
    problems: Problems = []
    host_process = 0
    for path, container in containers:
        value = _host_process(container.get("securityContext"))
        if pod_value is not None and value is not None and value != pod_value:
            problems.append(
                f"{path}.securityContext.windowsOptions.hostProcess: must be the pod's when both "
                "are given"
            )
        if value is True or (value is None and pod_value is True):
            host_process += 1
    if host_process:
        if host_process != len(containers):
            problems.append(f"{where}: every container must be a HostProcess container when one is")
        if spec.get("hostNetwork") is not True:
            problems.append(f"{where}.hostNetwork: must be true with HostProcess containers")
    return problems


def _host_process(context: object) -> bool | None:
    options = context.get("windowsOptions") if isinstance(context, Mapping) else None
    value = options.get("hostProcess") if isinstance(options, Mapping) else None
    return value if isinstance(value, bool) else None


def _toleration_problems(toleration: Mapping[str, Any], where: str) -> Problems:
    problems: Problems = []
    key = toleration.get("key")
    if key not in (None, "") and (not isinstance(key, str) or qualified_name_problems(key)):
        problems.append(f"{where}.key: must be a qualified name")
    operator = toleration.get("operator")
    problems += _enum(toleration, "operator", (*TOLERATION_OPERATORS, ""), where)
    if operator == "Exists" and toleration.get("value"):
        problems.append(f"{where}.value: must be empty when operator is Exists")
    if operator != "Exists" and not key and operator is not None:
        problems.append(f"{where}.operator: must be Exists when key is empty")
    problems += _enum(toleration, "effect", (*TAINT_EFFECTS, ""), where)
    if toleration.get("tolerationSeconds") is not None and toleration.get("effect") != "NoExecute":
        problems.append(f"{where}.tolerationSeconds: only for the NoExecute effect")
    return problems


def _spread_problems(
    constraint: Mapping[str, Any], where: str, labels: Mapping[str, Any]
) -> Problems:
    """`validateTopologySpreadConstraints` for one constraint: `ValidateMaxSkew`,
    `ValidateTopologyKey`, `ValidateWhenUnsatisfiable`, `validateMinDomains`,
    `validateNodeInclusionPolicy`, the selector (label values as on create) and its
    `matchLabelKeys`. (`ValidateSpreadConstraintNotRepeat` reads the others: in
    `pod_spec_problems`.)"""
    problems = _integer(constraint, "maxSkew", where, minimum=1, required=True)
    if not constraint.get("topologyKey"):
        problems.append(f"{where}.topologyKey: required")
    problems += _enum(constraint, "whenUnsatisfiable", UNSATISFIABLE_ACTIONS, where)
    if constraint.get("whenUnsatisfiable") is None:
        problems.append(f"{where}.whenUnsatisfiable: required")
    if constraint.get("minDomains") is not None:
        problems += _integer(constraint, "minDomains", where, minimum=1)
        if constraint.get("whenUnsatisfiable") != "DoNotSchedule":
            problems.append(f"{where}.minDomains: only with whenUnsatisfiable DoNotSchedule")
    for field in ("nodeAffinityPolicy", "nodeTaintsPolicy"):
        problems += _enum(constraint, field, NODE_INCLUSION_POLICIES, where)
    selector = constraint.get("labelSelector")
    if selector is not None:
        problems += _label_selector_problems(selector, f"{where}.labelSelector")
    return problems + _label_keys_problems(constraint, where, labels, spread=True)


def _same_spread(one: Mapping[str, Any], other: Mapping[str, Any]) -> bool:
    """`ValidateSpreadConstraintNotRepeat`: one kind of spread per topology key and action."""
    return all(one.get(field) == other.get(field) for field in ("topologyKey", "whenUnsatisfiable"))


def _label_keys_problems(
    term: Mapping[str, Any], where: str, labels: Mapping[str, Any], *, spread: bool
) -> Problems:
    """`ValidateMatchLabelKeysAndMismatchLabelKeys` (pod affinity terms) and
    `ValidateMatchLabelKeysInTopologySpread` (`spread`: constraints have matchLabelKeys only):
    label keys, given only beside a labelSelector, no key in both lists, and no matchLabelKeys
    key the selector selects on twice once the pod's labels are merged in (`_selected_twice`).
    For spread constraints, Kubernetes 1.33 refuses a matchLabelKeys key the selector names,
    whatever the pod's labels; 1.34 and later merge the pod's labels in first, as for affinity,
    and refuse it only when the pod has that label. A key is refused here when both would."""
    problems: Problems = []
    selector = term.get("labelSelector")
    given: dict[str, list[object]] = {}
    for field in ("matchLabelKeys",) if spread else ("matchLabelKeys", "mismatchLabelKeys"):
        keys = term.get(field)
        if not keys:
            continue
        if not isinstance(keys, list):
            problems.append(f"{where}.{field}: must be a list")
            continue
        if selector is None:
            problems.append(f"{where}.{field}: may not be set without a labelSelector")
            continue
        given[field] = keys
        problems += [
            f"{where}.{field}[{index}]: must be a qualified name (a label key)"
            for index, key in enumerate(keys)
            if not isinstance(key, str) or qualified_name_problems(key)
        ]
    match, mismatch = given.get("matchLabelKeys", []), given.get("mismatchLabelKeys", [])
    problems += [
        f"{where}.matchLabelKeys[{index}]: is in mismatchLabelKeys too"
        for index, key in enumerate(match)
        if isinstance(key, str) and key in mismatch
    ]
    labelled, expressed = _selector_keys(selector)
    for key in _selected_twice(selector, match, mismatch, labels):
        if not spread or key in labelled or key in expressed:
            index = max(i for i, k in enumerate(match) if k == key)  # Go reports the last
            problems.append(
                f"{where}.matchLabelKeys[{index}]: the labelSelector selects on this key already"
            )
    return problems


def _selected_twice(
    selector: object, match: list[object], mismatch: list[object], labels: Mapping[str, Any]
) -> list[str]:
    """The matchLabelKeys keys a selector selects on twice once the API server has merged the
    pod's labels into it: on create it appends `key In (value)` for each matchLabelKeys key and
    `key NotIn (value)` for each mismatchLabelKeys key the pod has a label for (the pod
    strategy's PrepareForCreate), then meets matchLabels and matchExpressions in that order."""
    if not isinstance(selector, Mapping):
        return []  # nothing is merged into no selector
    seen, met = _selector_keys(selector)
    keyed = {key for key in match if isinstance(key, str)}
    met += [key for key in (*match, *mismatch) if isinstance(key, str) and key in labels]
    twice: list[str] = []
    for key in met:
        if key in keyed and key in seen and key not in twice:
            twice.append(key)
        seen.add(key)
    return twice


def _selector_keys(selector: object) -> tuple[set[str], list[str]]:
    """The label keys a selector's matchLabels name, and those of its matchExpressions in
    order."""
    if not isinstance(selector, Mapping):
        return set(), []
    match_labels = selector.get("matchLabels")
    labelled = (
        {k for k in match_labels if isinstance(k, str)}
        if isinstance(match_labels, Mapping)
        else set()
    )
    expressions = selector.get("matchExpressions")
    expressed = [
        e["key"]
        for e in (expressions if isinstance(expressions, list) else [])
        if isinstance(e, Mapping) and isinstance(e.get("key"), str)
    ]
    return labelled, expressed


# ------------------------------------------------------------ probes and lifecycle hooks


def _probe_and_hook_problems(
    spec: Mapping[str, Any],
    containers: list[tuple[str, Mapping[str, Any]]],
    init_containers: list[tuple[str, Mapping[str, Any]]],
) -> Problems:
    """`validateContainers` and `validateInitContainers`: regular containers and sidecars (init
    containers with restartPolicy Always) may have probes and lifecycle hooks; other init
    containers may not, and only init containers may set a restartPolicy."""
    grace = _pod_grace_period(spec)
    problems: Problems = []
    for path, container in containers:
        problems += _hook_problems(container, path, grace)
        if container.get("restartPolicy") is not None:
            problems.append(f"{path}.restartPolicy: may only be set for init containers")
    for path, container in init_containers:
        policy = container.get("restartPolicy")
        if policy is not None and policy != "Always":
            problems.append(f"{path}.restartPolicy: must be Always when set")
        if policy == "Always":
            problems += _hook_problems(container, path, grace)
            continue
        problems += [
            f"{path}.{field}: may not be set for an init container without restartPolicy Always"
            for field in ("lifecycle", *PROBE_KINDS)
            if container.get(field) is not None
        ]
    return problems


def _pod_grace_period(spec: Mapping[str, Any]) -> int | None:
    """The grace period a sleep hook is held to (None: not an integer, refused elsewhere)."""
    grace = spec.get("terminationGracePeriodSeconds")
    if grace is None:
        return DEFAULT_GRACE_PERIOD
    return grace if _is_int(grace) else None


def _hook_problems(container: Mapping[str, Any], where: str, grace: int | None) -> Problems:
    problems: Problems = []
    lifecycle = container.get("lifecycle")
    if isinstance(lifecycle, Mapping):
        # `validateLifecycle`; stopSignal is an alpha field of 1.33, dropped while its gate is off.
        for hook in LIFECYCLE_HOOKS:
            handler = lifecycle.get(hook)
            if isinstance(handler, Mapping):
                problems += _handler_problems(
                    handler, LIFECYCLE_HANDLERS, f"{where}.lifecycle.{hook}", grace
                )
    for kind in PROBE_KINDS:
        probe = container.get(kind)
        if isinstance(probe, Mapping):
            problems += _probe_problems(probe, f"{where}.{kind}", kind)
    return problems


def _probe_problems(probe: Mapping[str, Any], where: str, kind: str) -> Problems:
    """`validateProbe` with `validateLivenessProbe`, `validateReadinessProbe` and
    `validateStartupProbe`. A count of 0 is defaulted (timeout 1, period 10, thresholds 1 and
    3) before it is checked, so only a negative one is refused."""
    problems = _handler_problems(probe, PROBE_HANDLERS, where, None)
    for field in PROBE_COUNTS:
        problems += _integer(probe, field, where, minimum=0, maximum=INT32_MAX)
    success = probe.get("successThreshold")
    if kind != "readinessProbe" and _is_int(success) and success not in (0, 1):
        problems.append(f"{where}.successThreshold: must be 1 for a {kind}")
    if probe.get("terminationGracePeriodSeconds") is not None:
        if kind == "readinessProbe":
            problems.append(f"{where}.terminationGracePeriodSeconds: not for a readinessProbe")
        problems += _integer(
            probe, "terminationGracePeriodSeconds", where, minimum=1, maximum=INT64_MAX
        )
    return problems


def _handler_problems(
    owner: Mapping[str, Any], handlers: tuple[str, ...], where: str, grace: int | None
) -> Problems:
    """`validateHandler`: exactly one action; only the first is checked further."""
    given = [name for name in handlers if owner.get(name) is not None]
    if not given:
        return [f"{where}: must specify one of {', '.join(handlers)}"]
    problems = [f"{where}.{name}: may not be given beside another handler" for name in given[1:]]
    first = given[0]
    action = owner[first]
    if not isinstance(action, Mapping):
        return [*problems, f"{where}.{first}: must be an object"]
    return problems + _action_problems(first, action, f"{where}.{first}", grace)


def _action_problems(
    kind: str, action: Mapping[str, Any], where: str, grace: int | None
) -> Problems:
    if kind == "exec":  # validateExecAction
        return [] if action.get("command") else [f"{where}.command: required"]
    if kind == "httpGet":
        return _http_get_problems(action, where)
    if kind == "tcpSocket":  # validateTCPSocketAction
        return _port_number_or_name(action.get("port"), f"{where}.port")
    if kind == "grpc":  # validateGRPCAction
        return _integer(action, "port", where, minimum=1, maximum=MAX_PORT, required=True)
    return _sleep_problems(action, where, grace)


def _http_get_problems(action: Mapping[str, Any], where: str) -> Problems:
    """`validateHTTPGetAction`. An empty path and scheme are defaulted ("/" and HTTP,
    `SetDefaults_HTTPGetAction`) before they are checked."""
    problems = _port_number_or_name(action.get("port"), f"{where}.port")
    problems += _enum(action, "scheme", HTTP_SCHEMES, where, defaulted=True)
    headers = action.get("httpHeaders")
    for index, header in enumerate(headers if isinstance(headers, list) else []):
        name = header.get("name") if isinstance(header, Mapping) else None
        if not isinstance(name, str) or not HTTP_HEADER_NAME.fullmatch(name):
            problems.append(
                f"{where}.httpHeaders[{index}].name: must be letters, digits and '-' "
                "(an HTTP header name)"
            )
    return problems


def _port_number_or_name(port: object, where: str) -> Problems:
    """`ValidatePortNumOrName`: a number from 1 to 65535 or an IANA service name. A missing port
    reads as the number 0."""
    if isinstance(port, int) and not isinstance(port, bool) and 1 <= port <= MAX_PORT:
        return []
    if isinstance(port, str) and _is_service_name(port):
        return []
    return [
        f"{where}: must be a port number from 1 to {MAX_PORT} or a port name (at most 15 "
        "lowercase letters, digits and '-', with a letter)"
    ]


def _sleep_problems(action: Mapping[str, Any], where: str, grace: int | None) -> Problems:
    """`validateSleepAction` with PodLifecycleSleepActionAllowZero (beta, on in 1.33): from 0 to
    the pod's terminationGracePeriodSeconds. A negative grace period, accepted with a warning,
    leaves no sleep valid, as in Kubernetes."""
    problems = _integer(action, "seconds", where, minimum=0, required=True)
    if not problems and grace is not None and action["seconds"] > grace:
        problems.append(
            f"{where}.seconds: must be at most the pod's terminationGracePeriodSeconds "
            f"({DEFAULT_GRACE_PERIOD} when unset)"
        )
    return problems


# ----------------------------------------------------------------------------- envFrom


def _env_from_problems(source: Mapping[str, Any], where: str) -> Problems:
    """`ValidateEnvFrom` with RelaxedEnvironmentVariableValidation (beta, on in 1.33): a prefix
    of printable ASCII but '=', and exactly one source, named."""
    problems: Problems = []
    prefix = source.get("prefix")
    if isinstance(prefix, str) and prefix and not _is_relaxed_env_name(prefix):
        problems.append(f"{where}.prefix: must be printable ASCII characters other than '='")
    given = [name for name in ENV_FROM_SOURCES if source.get(name) is not None]
    if len(given) != 1:
        problems.append(f"{where}: must specify exactly one of configMapRef or secretRef")
    for name in given:
        reference = source[name]
        ref_name = reference.get("name") if isinstance(reference, Mapping) else None
        if not ref_name:
            problems.append(f"{where}.{name}.name: required")
        elif not isinstance(ref_name, str) or not _is_subdomain(_mask_trailing_dash(ref_name)):
            problems.append(
                f"{where}.{name}.name: must be a DNS subdomain (lowercase, at most 253)"
            )
    return problems


def _is_relaxed_env_name(name: str) -> bool:
    """`IsRelaxedEnvVarName`."""
    return bool(name) and all(" " <= c <= "~" and c != "=" for c in name)


def _mask_trailing_dash(name: str) -> str:
    """`maskTrailingDash`, as `NameIsDNSSubdomain(name, prefix=true)` applies it (Kubernetes
    drops the character before the dash too)."""
    if len(name) > 1 and name.endswith("-"):
        return name[:-2] + "a"
    return name


# ---------------------------------------------------------------------------- affinity


def _affinity_problems(affinity: object, where: str, labels: Mapping[str, Any]) -> Problems:
    """`validateAffinity`."""
    if not isinstance(affinity, Mapping):
        return [f"{where}: must be an object"]
    problems: Problems = []
    node = affinity.get("nodeAffinity")
    if isinstance(node, Mapping):
        problems += _node_affinity_problems(node, f"{where}.nodeAffinity")
    for kind in ("podAffinity", "podAntiAffinity"):
        pod = affinity.get(kind)
        if isinstance(pod, Mapping):
            problems += _pod_affinity_problems(pod, f"{where}.{kind}", labels)
    return problems


def _node_affinity_problems(affinity: Mapping[str, Any], where: str) -> Problems:
    """`validateNodeAffinity`, `ValidateNodeSelector` and `ValidatePreferredSchedulingTerms`.
    The values of required terms are label values since 1.32 (AllowInvalidLabelValueInRequired-
    NodeAffinity is false on create); those of preferred terms are not checked here."""
    problems: Problems = []
    required = affinity.get(REQUIRED_TERMS)
    if isinstance(required, Mapping):
        path = f"{where}.{REQUIRED_TERMS}"
        if not required.get("nodeSelectorTerms"):
            problems.append(f"{path}.nodeSelectorTerms: at least one term is required")
        for term_path, term in _objects(required, "nodeSelectorTerms", path, problems):
            problems += _node_selector_term_problems(term, term_path, label_values=True)
    for path, term in _objects(affinity, PREFERRED_TERMS, where, problems):
        problems += _integer(term, "weight", path, minimum=1, maximum=100, required=True)
        preference = term.get("preference")
        if isinstance(preference, Mapping):
            problems += _node_selector_term_problems(
                preference, f"{path}.preference", label_values=False
            )
    return problems


def _node_selector_term_problems(
    term: Mapping[str, Any], where: str, *, label_values: bool
) -> Problems:
    """`ValidateNodeSelectorTerm`. Gt and Lt take one value, which is not checked to be an
    integer (a value that is not one only matches no node)."""
    problems: Problems = []
    for path, requirement in _objects(term, "matchExpressions", where, problems):
        problems += _requirement_problems(
            requirement, path, NODE_SELECTOR_OPERATORS, label_values=label_values
        )
    for path, requirement in _objects(term, "matchFields", where, problems):
        problems += _node_field_problems(requirement, path)
    return problems


def _requirement_problems(
    requirement: Mapping[str, Any],
    where: str,
    operators: tuple[str, ...],
    *,
    label_values: bool,
) -> Problems:
    """`ValidateNodeSelectorRequirement` and `ValidateLabelSelectorRequirement`."""
    problems: Problems = []
    operator = requirement.get("operator")
    values = requirement.get("values")
    values = values if isinstance(values, list) else []
    if operator not in operators:
        problems.append(f"{where}.operator: must be one of {', '.join(operators)}")
    elif operator in ("In", "NotIn") and not values:
        problems.append(f"{where}.values: required when operator is In or NotIn")
    elif operator in ("Exists", "DoesNotExist") and values:
        problems.append(f"{where}.values: must be empty when operator is Exists or DoesNotExist")
    elif operator in ("Gt", "Lt") and len(values) != 1:
        problems.append(f"{where}.values: must be exactly one value when operator is Gt or Lt")
    key = requirement.get("key")
    if not isinstance(key, str) or qualified_name_problems(key):
        problems.append(f"{where}.key: must be a qualified name (a label key)")
    if label_values:
        problems += [
            f"{where}.values[{index}]: must be a label value (at most 63 characters of letters, "
            "digits, '-', '_' and '.', starting and ending with a letter or digit)"
            for index, value in enumerate(values)
            if not _is_label_value(value)
        ]
    return problems


def _node_field_problems(requirement: Mapping[str, Any], where: str) -> Problems:
    """`ValidateNodeFieldSelectorRequirement`: metadata.name, In or NotIn, one node name."""
    problems: Problems = []
    values = requirement.get("values")
    values = values if isinstance(values, list) else []
    if requirement.get("operator") not in ("In", "NotIn"):
        problems.append(f"{where}.operator: must be In or NotIn")
    elif len(values) != 1:
        problems.append(f"{where}.values: must be exactly one value")
    if requirement.get("key") != "metadata.name":
        problems.append(f"{where}.key: must be metadata.name")
    else:
        problems += [
            f"{where}.values[{index}]: must be a DNS subdomain (lowercase, at most 253)"
            for index, value in enumerate(values)
            if not isinstance(value, str) or not _is_subdomain(value)
        ]
    return problems


def _pod_affinity_problems(
    affinity: Mapping[str, Any], where: str, labels: Mapping[str, Any]
) -> Problems:
    """`validatePodAffinity`, `validatePodAntiAffinity`, `validateWeightedPodAffinityTerms`."""
    problems: Problems = []
    for path, term in _objects(affinity, REQUIRED_TERMS, where, problems):
        problems += _pod_affinity_term_problems(term, path, labels)
    for path, weighted in _objects(affinity, PREFERRED_TERMS, where, problems):
        problems += _integer(weighted, "weight", path, minimum=1, maximum=100, required=True)
        weighted_term = weighted.get("podAffinityTerm")
        if isinstance(weighted_term, Mapping):
            problems += _pod_affinity_term_problems(
                weighted_term, f"{path}.podAffinityTerm", labels
            )
    return problems


def _pod_affinity_term_problems(
    term: Mapping[str, Any], where: str, labels: Mapping[str, Any]
) -> Problems:
    """`validatePodAffinityTerm`: valid selectors, namespace names, matchLabelKeys and
    mismatchLabelKeys, and a topology key."""
    problems: Problems = []
    for field in ("labelSelector", "namespaceSelector"):
        selector = term.get(field)
        if selector is not None:
            problems += _label_selector_problems(selector, f"{where}.{field}")
    namespaces = term.get("namespaces")
    problems += [
        f"{where}.namespaces[{index}]: must be a DNS label (lowercase, at most 63)"
        for index, name in enumerate(namespaces if isinstance(namespaces, list) else [])
        if not isinstance(name, str) or not _is_label(name)
    ]
    problems += _label_keys_problems(term, where, labels, spread=False)
    key = term.get("topologyKey")
    if not key:
        problems.append(f"{where}.topologyKey: required")
    elif not isinstance(key, str) or qualified_name_problems(key):
        problems.append(f"{where}.topologyKey: must be a qualified name (a label key)")
    return problems


def _label_selector_problems(selector: object, where: str) -> Problems:
    """`ValidateLabelSelector` (apimachinery), with label values checked as on create."""
    if not isinstance(selector, Mapping):
        return [f"{where}: must be an object"]
    problems: Problems = []
    match_labels = selector.get("matchLabels")
    if match_labels is not None:
        problems += label_problems(match_labels, f"{where}.matchLabels")
    for path, requirement in _objects(selector, "matchExpressions", where, problems):
        problems += _requirement_problems(
            requirement, path, LABEL_SELECTOR_OPERATORS, label_values=True
        )
    return problems


# ---------------------------------------------------------- security profiles, sysctls


def _seccomp_problems(profile: object, where: str) -> Problems:
    """`validateSeccompProfileField`: a known type, and a relative localhostProfile without '..'
    exactly when the type is Localhost (even "" counts as given)."""
    if not isinstance(profile, Mapping):
        return [f"{where}: must be an object"]
    problems = _profile_type_problems(profile, where)
    local = profile.get("localhostProfile")
    if profile.get("type") == "Localhost":
        if local is None:
            problems.append(f"{where}.localhostProfile: required when type is Localhost")
        elif isinstance(local, str) and (local.startswith("/") or ".." in local.split("/")):
            problems.append(f"{where}.localhostProfile: must be a relative path without '..'")
    elif local is not None:
        problems.append(f"{where}.localhostProfile: may only be set when type is Localhost")
    return problems


def _apparmor_problems(profile: object, where: str) -> Problems:
    """`ValidateAppArmorProfileField`: a known type; with Localhost, a profile name that is not
    empty, not padded with whitespace and at most 4095 bytes; with another, no profile name."""
    if not isinstance(profile, Mapping):
        return [f"{where}: must be an object"]
    problems = _profile_type_problems(profile, where)
    local = profile.get("localhostProfile")
    kind = profile.get("type")
    if kind != "Localhost":
        if kind in PROFILE_TYPES and local is not None:
            problems.append(f"{where}.localhostProfile: may only be set when type is Localhost")
        return problems
    if local is None or local == "":
        problems.append(f"{where}.localhostProfile: required when type is Localhost")
    elif isinstance(local, str):
        if local.strip(GO_SPACE) != local:
            problems.append(f"{where}.localhostProfile: must not be padded with whitespace")
        if len(local.encode("utf-8", "surrogatepass")) > MAX_LOCALHOST_PROFILE_BYTES:
            problems.append(
                f"{where}.localhostProfile: must be at most {MAX_LOCALHOST_PROFILE_BYTES} bytes"
            )
    return problems


def _profile_type_problems(profile: Mapping[str, Any], where: str) -> Problems:
    kind = profile.get("type")
    if kind is None or kind == "":
        return [f"{where}.type: required"]
    return _enum(profile, "type", PROFILE_TYPES, where)


def _sysctl_problems(context: Mapping[str, Any], spec: Mapping[str, Any], where: str) -> Problems:
    """`validateSysctls` and `ValidateHostSysctl`: valid, distinct names, and none of a
    namespace the pod shares with its host."""
    problems: Problems = []
    seen: set[object] = set()
    for path, sysctl in _objects(context, "sysctls", where, problems):
        name = sysctl.get("name")
        if not name:
            problems.append(f"{path}.name: required")
        elif not isinstance(name, str) or not _is_sysctl_name(name):
            problems.append(
                f"{path}.name: must be at most {MAX_SYSCTL_NAME} characters of lowercase "
                "letters, digits, '-' and '_' in segments joined by '.' or '/'"
            )
        elif name in seen:
            problems.append(f"{path}.name: must be unique among the pod's sysctls")
        if isinstance(name, str):
            seen.add(name)
            shared = _shared_sysctl_namespace(name, spec)
            if shared:
                problems.append(f"{path}.name: may not be set when {shared} is true")
    return problems


def _is_sysctl_name(name: str) -> bool:
    """`IsValidSysctlName`."""
    return len(name) <= MAX_SYSCTL_NAME and SYSCTL_NAME.fullmatch(name) is not None


def _shared_sysctl_namespace(name: str, spec: Mapping[str, Any]) -> str | None:
    """Which host namespace the pod shares that `name` belongs to (component-helpers
    `sysctl.GetNamespace` of the name as `NormalizeName` writes it, up to a '*')."""
    separator = next((i for i, c in enumerate(name) if c in "./"), -1)
    if separator >= 0 and name[separator] == "/":
        name = name.translate(str.maketrans("./", "/."))
    name = name.partition("*")[0]
    if name.startswith("net.") and spec.get("hostNetwork") is True:
        return "hostNetwork"
    ipc = name in IPC_SYSCTLS or name.startswith("fs.mqueue.")
    return "hostIPC" if ipc and spec.get("hostIPC") is True else None


# ------------------------------------------------------------------------------ helpers


@functools.cache
def _schema_document() -> dict[str, Any]:
    text = resources.files("hooks.resources").joinpath(POD_SCHEMA_FILE).read_text("utf-8")
    document: dict[str, Any] = json.loads(text)
    return document


def _fragment_schema(definition: str) -> jsonschema.Draft202012Validator:
    return _type_schema(f"io.k8s.api.core.v1.{definition}")


INTEGER_FORMATS = {"int32": (-(2**31), INT32_MAX), "int64": (INT64_MIN, INT64_MAX)}
"""What the schema's integer formats hold: the API server cannot read a larger number into its
Go field, and refuses the object."""


def _fits(low: int, high: int, instance: object) -> bool:
    return not isinstance(instance, int) or isinstance(instance, bool) or low <= instance <= high


def _integer_formats() -> jsonschema.FormatChecker:
    """Asserts the integer formats only (`date-time` is the API server's to parse)."""
    checker = jsonschema.FormatChecker(formats=())
    for name, (low, high) in INTEGER_FORMATS.items():
        checker.checks(name)(functools.partial(_fits, low, high))
    return checker


@functools.cache
def _type_schema(name: str) -> jsonschema.Draft202012Validator:
    definitions = _schema_document()["$defs"]
    if name not in definitions:
        raise KeyError(f"no Kubernetes type {name} in {POD_SCHEMA_FILE}")
    return jsonschema.Draft202012Validator(
        {"$ref": f"#/$defs/{name}", "$defs": definitions}, format_checker=_integer_formats()
    )


def _schema_rule(error: jsonschema.ValidationError) -> str:
    """What a schema error requires, without the value that broke it."""
    expected: Any = error.validator_value
    match error.validator:
        case "type":
            kinds = [expected] if isinstance(expected, str) else list(expected)
            return "must be of type " + " or ".join(k for k in kinds if k != "null")
        case "required":
            present = error.instance if isinstance(error.instance, Mapping) else {}
            missing = [str(field) for field in expected if field not in present]
            return f"{', '.join(missing) or 'a field'} required"
        case "enum":
            return "must be one of " + ", ".join(str(v) for v in expected if v is not None)
        case "format" if expected in INTEGER_FORMATS:
            low, high = INTEGER_FORMATS[expected]
            return f"must be between {low} and {high} (an {expected})"
        case "format":
            return f"must be in the {expected} format"
        case _:
            return f"does not satisfy the schema ({error.validator})"


def _json_path(path: Any, *, nested: bool = False) -> str:
    text = ""
    for part in path:
        if isinstance(part, int):
            text += f"[{part}]"
        else:
            text += f".{part}" if text or nested else str(part)
    return text or ("" if nested else "pod")


def _objects(
    owner: Mapping[str, Any], field: str, where: str, problems: Problems
) -> list[tuple[str, Mapping[str, Any]]]:
    """`owner[field]` as a list of (path, object), reporting anything else there."""
    items = owner.get(field)
    if items is None:
        return []
    if not isinstance(items, list):
        problems.append(f"{where}.{field}: must be a list")
        return []
    found = []
    for index, item in enumerate(items):
        path = f"{where}.{field}[{_label(item, index)}]"
        if isinstance(item, Mapping):
            found.append((path, item))
        else:
            problems.append(f"{path}: must be an object")
    return found


def _label(item: object, index: int) -> str:
    """How a list item is named in a message: its (short, safe) name, else its index."""
    name = item.get("name") if isinstance(item, Mapping) else None
    if isinstance(name, str) and _is_label(name):
        return name
    return str(index)


def _enum(
    owner: Mapping[str, Any],
    field: str,
    allowed: tuple[str, ...],
    where: str,
    *,
    defaulted: bool = False,
) -> Problems:
    """`defaulted`: the API server fills an empty value in before it validates (`defaults.go`),
    so "" is taken as absent."""
    value = owner.get(field)
    if value is None or value in allowed or (defaulted and value == ""):
        return []
    shown = ", ".join(a for a in allowed if a) or "''"
    return [f"{where}.{field}: must be one of {shown}"]


def _integer(
    owner: Mapping[str, Any],
    field: str,
    where: str,
    *,
    minimum: int | None = None,
    maximum: int | None = None,
    required: bool = False,
) -> Problems:
    value = owner.get(field)
    if value is None:
        return [f"{where}.{field}: required"] if required else []
    if not isinstance(value, int) or isinstance(value, bool):
        return [f"{where}.{field}: must be an integer"]
    if minimum is not None and value < minimum:
        return [f"{where}.{field}: must be at least {minimum}"]
    if maximum is not None and value > maximum:
        return [f"{where}.{field}: must be at most {maximum}"]
    return []


def _quantity(value: object, where: str) -> Problems:
    problem = quantity_problem(value)
    return [f"{where}: {problem}"] if problem else []


def _storage_medium(value: object) -> bool:
    return isinstance(value, str) and (value in STORAGE_MEDIA or value.startswith("HugePages-"))


def _short(name: str) -> str:
    """A key as a message may quote it: keys are names, but a long one is cut short (after
    masking what looks like a credential: a cut one would no longer look like one)."""
    name = mask_credentials(name)
    return name if len(name) <= 40 else name[:37] + "..."


def _is_string_map(value: object) -> bool:
    return isinstance(value, Mapping) and all(
        isinstance(k, str) and isinstance(v, str) for k, v in value.items()
    )


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_label_value(value: object) -> bool:
    return isinstance(value, str) and len(value) <= 63 and LABEL_VALUE.fullmatch(value) is not None


def _is_label(value: str) -> bool:
    return len(value) <= 63 and DNS1123_LABEL.fullmatch(value) is not None


def _is_subdomain(value: str) -> bool:
    return len(value) <= 253 and DNS1123_SUBDOMAIN.fullmatch(value) is not None


def _is_local_path(path: str) -> bool:
    """Relative, with no '..' in it and not starting with '..' (`ValidateLocalNonReservedPath`)."""
    return not path.startswith("/") and ".." not in path.split("/") and not path.startswith("..")


def _is_ip(value: object) -> bool:
    """An IPv4 or IPv6 address as Kubernetes reads one (`netutils.ParseIPSloppy`): IPv4 parts
    may have leading zeros, an address has no zone."""
    if not isinstance(value, str) or "%" in value:
        return False
    if _is_ipv4(value):
        return True
    head, colon, tail = value.rpartition(":")
    if not colon:
        return False
    if "." in tail:  # an IPv6 address ending in an IPv4 one
        if not _is_ipv4(tail):
            return False
        value = head + ":" + ".".join(part.lstrip("0") or "0" for part in tail.split("."))
    try:
        ipaddress.IPv6Address(value)
    except ValueError:
        return False
    return True


def _is_ipv4(value: str) -> bool:
    match = IPV4_SLOPPY.fullmatch(value)
    return match is not None and all(
        len(part.lstrip("0")) <= 3 and int(part.lstrip("0") or "0") <= 255
        for part in match.groups()
    )


def _is_service_name(value: str) -> bool:
    return (
        len(value) <= 15
        and IANA_SERVICE_NAME.fullmatch(value) is not None
        and re.search("[a-z]", value) is not None
        and not value.startswith("-")
        and not value.endswith("-")
        and "--" not in value
    )
