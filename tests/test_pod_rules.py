"""Values Kubernetes would refuse are invalid specs, not new pods: the API server's pod rules,
the specs of every kind that builds runner pods, and conditions that never echo a value."""

from __future__ import annotations

import copy
import json
import re
from decimal import Decimal
from typing import Any

import kubernetes_validate
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from starlette.testclient import TestClient

from hooks.clock import ManualClock, format_time
from hooks.github.port import Scope
from hooks.resources.pod_rules import (
    POD_SCHEMA_FILE,
    pod_problems,
    quantity_problem,
    quantity_value,
    schema_problems,
)
from hooks.resources.runner import RunnerSpec
from hooks.runner.validation import validate_runner_spec
from tests.hook_driver import HookDriver, new_runner, running_status
from tests.in_memory_github import InMemoryGitHub

K8S_VERSION = "1.33.0"
ORG = Scope(organization="acme")
SECRET = "ghp_" + "S3cr3t" * 6  # a token pasted into the wrong field

VALID_POD: dict[str, Any] = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"name": "p", "labels": {"app.kubernetes.io/name": "runner", "a": ""}},
    "spec": {
        "restartPolicy": "Never",
        "terminationGracePeriodSeconds": 110,
        "volumes": [{"name": "work", "emptyDir": {"sizeLimit": "1Gi"}}],
        "containers": [
            {
                "name": "runner",
                "image": "ghcr.io/actions/actions-runner:2.330.0",
                "imagePullPolicy": "IfNotPresent",
                "ports": [{"containerPort": 8080, "name": "http", "protocol": "TCP"}],
                "env": [
                    {"name": "RUNNER_GRACEFUL_STOP_TIMEOUT", "value": "90"},
                    {"name": "TOKEN", "valueFrom": {"secretKeyRef": {"name": "s", "key": "t"}}},
                ],
                "resources": {"requests": {"cpu": "500m", "memory": "1Gi"}, "limits": {"cpu": 2}},
                "volumeMounts": [{"name": "work", "mountPath": "/runner/_work"}],
                "securityContext": {"runAsUser": 1001},
            }
        ],
        "tolerations": [{"key": "ci", "operator": "Exists", "effect": "NoSchedule"}],
        "nodeSelector": {"kubernetes.io/os": "linux"},
    },
}


def test_a_valid_pod_has_no_problem_and_the_schema_agrees() -> None:
    assert pod_problems(VALID_POD) == []
    kubernetes_validate.validate(VALID_POD, K8S_VERSION, strict=True)


def _mutated(path: str, value: Any) -> dict[str, Any]:
    pod = copy.deepcopy(VALID_POD)
    target: Any = pod
    *parents, last = path.split(".")
    for part in parents:
        target = target[int(part)] if part.isdigit() else target[part]
    if isinstance(target, list):
        target[int(last)] = value
    else:
        target[last] = value
    return pod


@pytest.mark.parametrize(
    ("path", "value"),
    [
        # Filled in by the API server before it validates (pkg/apis/core/v1/defaults.go).
        ("spec.containers.0.imagePullPolicy", ""),
        ("spec.containers.0.ports.0.protocol", ""),
        ("spec.restartPolicy", ""),
        ("spec.dnsPolicy", ""),
        # Checked only when given (ValidatePodSpec: `if len(...) > 0`).
        ("spec.serviceAccountName", ""),
        ("spec.priorityClassName", ""),
        # Annotation keys are checked lower-cased (ValidateAnnotations); label keys are not.
        ("metadata.annotations", {"Example.com/owner": "ci"}),
        # Accepted with a warning, and treated as 1 when the pod is deleted.
        ("spec.terminationGracePeriodSeconds", -1),
        ("spec.terminationGracePeriodSeconds", -(2**63)),
    ],
)
def test_what_the_api_server_accepts_is_no_problem(path: str, value: Any) -> None:
    """Values a manifest rendered by Helm or Terraform may carry, which Kubernetes accepts: a
    spec with them was refused, and its runners never started."""
    assert pod_problems(_mutated(path, value)) == []


@pytest.mark.parametrize(
    ("path", "value", "problem"),
    [
        ("spec.containers.0.imagePullPolicy", "Sometimes", "imagePullPolicy: must be one of"),
        ("spec.terminationGracePeriodSeconds", 2**63, "terminationGracePeriodSeconds: must be at"),
        ("spec.terminationGracePeriodSeconds", "30", "must be of type integer"),
        ("spec.activeDeadlineSeconds", 0, "activeDeadlineSeconds: must be at least 1"),
        ("spec.restartPolicy", "Sometimes", "restartPolicy: must be one of"),
        ("spec.dnsPolicy", "None", "dnsConfig.nameservers: required"),
        ("spec.containers.0.name", "Runner_X", "name: must be a DNS label"),
        ("spec.containers.0.image", "", "image: required"),
        ("spec.containers.0.image", " runner", "leading or trailing whitespace"),
        ("spec.containers.0.ports.0.containerPort", 70000, "containerPort: must be at most"),
        ("spec.containers.0.ports.0.containerPort", 0, "containerPort: must be at least 1"),
        ("spec.containers.0.ports.0.protocol", "HTTP", "protocol: must be one of"),
        ("spec.containers.0.ports.0.name", "a-very-long-port-name", "name: must be at most 15"),
        ("spec.containers.0.env.0.name", "A=B", "printable ASCII characters other than '='"),
        ("spec.containers.0.env.1.valueFrom", {}, "valueFrom: must name exactly one source"),
        ("spec.containers.0.resources.requests.cpu", "lots", "must be a quantity"),
        ("spec.containers.0.resources.requests.cpu", "3", "must not be more than its limit"),
        ("spec.containers.0.resources.requests.memory", "-1Gi", "must not be negative"),
        ("spec.containers.0.resources.requests.memory", "1Gb", "must be a quantity"),
        ("spec.containers.0.resources.requests.memory", "1ki", "unknown suffix"),
        ("spec.containers.0.ports.0.containerPort", "80", "must be of type integer"),
        ("spec.containers.0.ports.0", {"name": "http"}, "containerPort required"),
        ("spec.containers.0.volumeMounts.0.name", "cache", "names no volume of the pod"),
        ("spec.containers.0.volumeMounts.0.subPath", "../etc", "relative path without '..'"),
        ("spec.containers.0.securityContext.runAsUser", -1, "runAsUser: must be at least 0"),
        ("spec.volumes.0.emptyDir.medium", "Disk", "medium: must be"),
        ("spec.volumes.0.emptyDir.sizeLimit", "big", "sizeLimit: must be a quantity"),
        ("spec.volumes.0.hostPath", {"path": "/tmp"}, "more than one volume type"),
        ("spec.tolerations.0.operator", "Maybe", "operator: must be one of"),
        ("spec.tolerations.0.value", "x", "value: must be empty when operator is Exists"),
        ("spec.tolerations.0.tolerationSeconds", 5, "only for the NoExecute effect"),
        ("spec.nodeSelector", {"bad key!": "linux"}, "a key's name must be"),
        ("spec.nodeSelector", {"os": "has space"}, "the value must be at most 63"),
        ("metadata.labels", {"x/" + "y" * 64: ""}, "a key's name must be"),
        ("spec.serviceAccountName", "Not_A_Name", "serviceAccountName: must be a DNS"),
        ("spec.containers", [], "at least one container is required"),
        # validateConfigMapVolumeSource, validateSecretVolumeSource, validateKeyToPath
        ("spec.volumes.0", {"name": "work", "configMap": {}}, "configMap.name: required"),
        ("spec.volumes.0", {"name": "work", "secret": {}}, "secret.secretName: required"),
        (
            "spec.volumes.0",
            {"name": "work", "secret": {"secretName": "s", "defaultMode": 4095}},
            "defaultMode: must be a file mode",
        ),
        (
            "spec.volumes.0",
            {"name": "work", "configMap": {"name": "c", "defaultMode": -1}},
            "defaultMode: must be a file mode",
        ),
        (
            "spec.volumes.0",
            {
                "name": "work",
                "configMap": {"name": "c", "items": [{"key": "k", "path": "p", "mode": 512}]},
            },
            "items[0].mode: must be a file mode",
        ),
        (
            "spec.volumes.0",
            {"name": "work", "secret": {"secretName": "s", "items": [{"key": "", "path": "p"}]}},
            "items[0].key: required",
        ),
        (
            "spec.volumes.0",
            {"name": "work", "configMap": {"name": "c", "items": [{"key": "k", "path": "../p"}]}},
            "path: must be a relative path",
        ),
        (
            "spec.volumes.0",
            {"name": "work", "downwardAPI": {"defaultMode": 1000}},
            "downwardAPI.defaultMode: must be",
        ),
        (
            "spec.volumes.0",
            {"name": "work", "persistentVolumeClaim": {"claimName": ""}},
            "claimName: required",
        ),
        # AccumulateUniqueHostPorts: one host port, protocol and host IP per pod
        (
            "spec.containers.0.ports",
            [
                {"containerPort": 80, "hostPort": 8080},
                {"containerPort": 81, "hostPort": 8080, "protocol": "TCP"},
            ],
            "ports[1].hostPort: must be unique",
        ),
        # validateContainerResourceName, ValidateResourceQuantityValue, validateResourceRequirements
        ("spec.containers.0.resources.limits", {"gpu": "1"}, "limits[gpu]: must be cpu, memory"),
        (
            "spec.containers.0.resources.limits",
            {"requests.example.com/gpu": "1"},
            "must be an extended resource name",
        ),
        (
            "spec.containers.0.resources.limits",
            {"nvidia.com/gpu": "500m"},
            "must be a whole number",
        ),
        (
            "spec.containers.0.resources.requests",
            {"nvidia.com/gpu": 1},
            "limits[nvidia.com/gpu]: required beside its request",
        ),
        (
            "spec.containers.0.resources",
            {"limits": {"nvidia.com/gpu": 2}, "requests": {"nvidia.com/gpu": 1}},
            "requests[nvidia.com/gpu]: must equal its limit",
        ),
        (
            "spec.containers.0.resources",
            {"limits": {"hugepages-2Mi": "2Mi"}},
            "hugepages require a cpu or memory",
        ),
        # validateObjectFieldSelector with validEnvDownwardAPIFieldPathExpressions
        (
            "spec.containers.0.env.1.valueFrom",
            {"fieldRef": {"fieldPath": "metadata.bogus"}},
            "fieldRef.fieldPath: must be one of",
        ),
        (
            "spec.containers.0.env.1.valueFrom",
            {"fieldRef": {"fieldPath": "metadata.labels"}},
            "fieldRef.fieldPath: must be one of",
        ),
        (
            "spec.containers.0.env.1.valueFrom",
            {"fieldRef": {"fieldPath": "spec.nodeName['x']"}},
            "only metadata.labels and metadata.annotations take a key",
        ),
        (
            "spec.containers.0.env.1.valueFrom",
            {"fieldRef": {"fieldPath": "metadata.labels['bad key!']"}},
            "the key in brackets must be a qualified name",
        ),
        (
            "spec.containers.0.env.1.valueFrom",
            {"fieldRef": {"apiVersion": "v2", "fieldPath": "metadata.name"}},
            "fieldRef.apiVersion: must be v1",
        ),
        # ValidateVolumeMounts, validateMountPropagation
        (
            "spec.containers.0.volumeMounts.0.mountPropagation",
            "Sometimes",
            "mountPropagation: must be one of",
        ),
        (
            "spec.containers.0.volumeMounts.0.mountPropagation",
            "Bidirectional",
            "Bidirectional only in privileged",
        ),
        (
            "spec.containers.0.volumeMounts.0",
            {"name": "work", "mountPath": "/w", "subPath": "a", "subPathExpr": "b"},
            "subPathExpr: may not be given beside subPath",
        ),
        (
            "spec.containers.0.volumeMounts.0.subPathExpr",
            "/$(POD)",
            "subPathExpr: must be a relative path",
        ),
        # IsValidUserID, IsValidGroupID
        (
            "spec.containers.0.securityContext.runAsUser",
            2**31,
            "runAsUser: must be at most 2147483647",
        ),
        ("spec.containers.0.securityContext", {"runAsGroup": 2**31}, "runAsGroup: must be at most"),
        ("spec.securityContext", {"fsGroup": 2**31}, "fsGroup: must be at most 2147483647"),
        (
            "spec.securityContext",
            {"supplementalGroups": [2**31]},
            "supplementalGroups: must be integers from 0",
        ),
        # validatePodDNSConfig, ValidateHostAliases, ValidatePodSpec
        (
            "spec.dnsConfig",
            {"nameservers": ["1.1.1.1", "1.0.0.1", "8.8.8.8", "8.8.4.4"]},
            "dnsConfig.nameservers: must have at most 3",
        ),
        (
            "spec.dnsConfig",
            {"nameservers": ["dns.example.com"]},
            "nameservers[0]: must be an IP address",
        ),
        (
            "spec.hostAliases",
            [{"ip": "not-an-ip", "hostnames": ["a"]}],
            "hostAliases[0].ip: must be an IP address",
        ),
        ("spec.hostAliases", [{"ip": "fe80::1%eth0"}], "hostAliases[0].ip: must be an IP address"),
        (
            "spec.hostAliases",
            [{"ip": "10.0.0.1", "hostnames": ["Not A Host"]}],
            "hostnames[0]: must be a DNS subdomain",
        ),
        ("spec.hostname", "Not_A_Label", "hostname: must be a DNS label"),
        ("spec.activeDeadlineSeconds", 2**31, "activeDeadlineSeconds: must be at most 2147483647"),
    ],
)
def test_what_the_api_server_refuses_is_a_problem(path: str, value: Any, problem: str) -> None:
    problems = pod_problems(_mutated(path, value))
    assert any(problem in p for p in problems), problems


def _pod_with(**spec: Any) -> dict[str, Any]:
    pod = copy.deepcopy(VALID_POD)
    pod["spec"].update(spec)
    return pod


def test_what_the_api_server_accepts_near_those_rules_stays_valid() -> None:
    """The edges of the rules above: each value here is accepted by Kubernetes 1.30+."""
    runner = copy.deepcopy(VALID_POD["spec"]["containers"][0])
    runner["ports"] = [
        {"containerPort": 80, "hostPort": 8080},
        {"containerPort": 80, "hostPort": 8080, "protocol": "UDP"},  # another protocol
        {"containerPort": 81, "hostPort": 8080, "hostIP": "10.0.0.1"},  # another host IP
    ]
    runner["env"] += [
        {"name": f"F{i}", "valueFrom": {"fieldRef": {"fieldPath": path}}}
        for i, path in enumerate(
            [
                "metadata.name",
                "metadata.labels['app.kubernetes.io/name']",
                "metadata.annotations['Example.com/Key']",  # read in lower case
                "status.podIPs",
                "spec.serviceAccountName",
                "spec.host",  # the old name of spec.nodeName
            ]
        )
    ]
    runner["env"].append(
        {"name": "V", "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.uid"}}}
    )
    runner["resources"] = {
        "limits": {"cpu": 2, "nvidia.com/gpu": 1, "hugepages-2Mi": "4Mi"},
        "requests": {"memory": "1Gi", "nvidia.com/gpu": "1", "example.kubernetes.io/x": "0.5"},
    }
    runner["volumeMounts"] += [
        {"name": "config", "mountPath": "/c", "mountPropagation": "HostToContainer"},
        {"name": "config", "mountPath": "/d", "subPathExpr": "$(POD_NAME)"},
    ]
    runner["securityContext"] = {"runAsUser": 2**31 - 1, "runAsGroup": 0}
    privileged = {
        "name": "mounter",
        "image": "busybox",
        "securityContext": {"privileged": True},
        "volumeMounts": [{"name": "work", "mountPath": "/w", "mountPropagation": "Bidirectional"}],
    }
    init = [
        {"name": f"init-{i}", "image": "busybox", "ports": [{"containerPort": 9, "hostPort": 9}]}
        for i in range(2)  # init containers run one at a time: the same host port is fine
    ]
    pod = _pod_with(
        containers=[runner, privileged],
        initContainers=init,
        volumes=[
            *VALID_POD["spec"]["volumes"],
            {
                "name": "config",
                "configMap": {
                    "name": "c",
                    "defaultMode": 0o777,
                    "items": [{"key": "k", "path": "a/b", "mode": 0}],
                },
            },
            {"name": "token", "secret": {"secretName": "s", "defaultMode": 0o400}},
        ],
        dnsConfig={"nameservers": ["10.0.0.10", "2001:db8::53", "010.000.000.001"]},
        hostAliases=[{"ip": "::ffff:10.0.0.1", "hostnames": ["runner.local"]}],
        hostname="runner-0",
        securityContext={"fsGroup": 2**31 - 1, "supplementalGroups": [0, 2**31 - 1]},
        activeDeadlineSeconds=2**31 - 1,
    )
    assert pod_problems(pod) == []
    kubernetes_validate.validate(pod, K8S_VERSION, strict=True)


def test_with_the_hosts_network_a_container_port_is_its_host_port() -> None:
    """SetDefaults_Pod gives each port of a host-network pod its container port as host port
    (then AccumulateUniqueHostPorts), and validatePodHostNetworkDeps refuses another."""
    sidecar = {"name": "side", "image": "busybox", "ports": [{"containerPort": 8080}]}
    same_port = _pod_with(hostNetwork=True, containers=[*VALID_POD["spec"]["containers"], sidecar])
    assert any("ports[0].hostPort: must be unique" in p for p in pod_problems(same_port))
    assert pod_problems(_pod_with(containers=same_port["spec"]["containers"])) == []

    other_port = _mutated("spec.containers.0.ports.0.hostPort", 9090)
    other_port["spec"]["hostNetwork"] = True
    assert any("must match containerPort when hostNetwork" in p for p in pod_problems(other_port))
    matching = _mutated("spec.containers.0.ports.0.hostPort", 8080)
    matching["spec"]["hostNetwork"] = True
    assert pod_problems(matching) == []


def test_messages_of_the_new_rules_never_quote_a_value() -> None:
    pod = _pod_with(
        hostname=SECRET,
        dnsConfig={"nameservers": [SECRET]},
        hostAliases=[{"ip": SECRET, "hostnames": [SECRET]}],
        volumes=[
            *VALID_POD["spec"]["volumes"],
            {
                "name": "c",
                "configMap": {"name": "c", "items": [{"key": "k", "path": "/" + SECRET}]},
            },
        ],
    )
    pod["spec"]["containers"][0]["env"][1]["valueFrom"] = {"fieldRef": {"fieldPath": SECRET}}
    problems = pod_problems(pod)
    assert len(problems) >= 6, problems
    assert not any(SECRET in p or SECRET.lower()[:12] in p for p in problems), problems


def _schema_keywords(node: object) -> set[str]:
    if isinstance(node, dict):
        found = set(node)
        for key, value in node.items():
            if key not in ("properties", "$defs"):
                found |= _schema_keywords(value)
            elif isinstance(value, dict):
                for item in value.values():
                    found |= _schema_keywords(item)
        return found
    if isinstance(node, list):
        return set().union(*(_schema_keywords(item) for item in node)) if node else set()
    return set()


def test_the_pod_schema_never_judges_the_text_of_a_string() -> None:
    """The premise of remembering a spec's schema check by its shape (strings blanked): no
    keyword of the schema reads a string's text, and formats are annotations only."""
    from importlib import resources

    text = resources.files("hooks.resources").joinpath(POD_SCHEMA_FILE).read_text("utf-8")
    keywords = _schema_keywords(json.loads(text))
    assert not keywords & {"pattern", "enum", "const", "minLength", "maxLength"}
    typo = _mutated("spec.containers.0.image", "not a reference at all ::")
    assert schema_problems(typo) == []  # text is the rules' business, not the schema's


_STRING_LEAVES = [
    "spec.containers.0.name",
    "spec.containers.0.image",
    "spec.containers.0.env.0.value",
    "spec.volumes.0.name",
    "spec.restartPolicy",
]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    texts=st.lists(st.text(max_size=12), min_size=5, max_size=5),
    broken=st.sampled_from(
        [None, ("spec.terminationGracePeriodSeconds", "110"), ("spec.containers.0.ports", {})]
    ),
)
def test_specs_of_one_shape_share_a_check_and_its_answer(
    texts: list[str], broken: tuple[str, Any] | None
) -> None:
    """Other strings in the same places get the answer of the spec checked before, and it
    names the places a fresh check of the whole pod finds (none, or the broken type)."""
    pod = copy.deepcopy(VALID_POD) if broken is None else _mutated(*broken)
    before = schema_problems(pod)
    for path, text in zip(_STRING_LEAVES, texts, strict=True):
        *parents, last = path.split(".")
        target: Any = pod
        for part in parents:
            target = target[int(part)] if part.isdigit() else target[part]
        target[last] = text
    assert schema_problems(pod) == before
    assert _places(before) == _uncached_schema_problems(pod)
    assert (broken is None) == (before == [])


def _uncached_schema_problems(pod: dict[str, Any]) -> list[str]:
    """Where jsonschema finds the whole pod breaking the whole schema, in one pass: the place
    of each problem, as `schema_problems` writes it."""
    from importlib import resources

    import jsonschema

    text = resources.files("hooks.resources").joinpath(POD_SCHEMA_FILE).read_text("utf-8")
    validator = jsonschema.Draft202012Validator(json.loads(text))
    places = [
        "".join(f"[{part}]" if isinstance(part, int) else f".{part}" for part in error.path)
        for error in validator.iter_errors(pod)
    ]
    return sorted(place.removeprefix(".") for place in places)


def _places(problems: list[str]) -> list[str]:
    return sorted(problem.split(": ", 1)[0] for problem in problems)


def test_duplicate_names_are_problems() -> None:
    pod = copy.deepcopy(VALID_POD)
    pod["spec"]["containers"].append(copy.deepcopy(pod["spec"]["containers"][0]))
    pod["spec"]["volumes"].append({"name": "work"})
    problems = pod_problems(pod)
    assert any("must be unique among the pod's containers" in p for p in problems)
    assert any("must be unique among the pod's volumes" in p for p in problems)


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("500m", "0.5"),
        ("1Gi", str(1024**3)),
        ("2", "2"),
        ("1e3", "1000"),
        ("1.5k", "1500"),
        ("100Mi", str(100 * 1024**2)),
        ("+1", "1"),
        ("1E", str(10**18)),  # exa
        ("1Ei", str(1024**6)),  # exbi
        ("2E3", "2000"),  # an exponent
        ("1e-3", "0.001"),
        ("1.", "1"),
        (".5Ki", "512"),
        ("1e9999999", "1e9999999"),  # large, but Kubernetes reads it
    ],
)
def test_quantities(text: str, value: str) -> None:
    assert quantity_problem(text) is None
    assert quantity_value(text) == Decimal(value)


@pytest.mark.parametrize(
    "text",
    [
        "",
        "1Gb",
        "lots",
        "1.2.3",
        "1 Gi",
        "Gi",
        "0x10",
        "1K",  # kilo is k
        "1E+",
        "1e",
        "1e2.5",
        "1e99999999999",  # the exponent is a 32-bit integer
        "1" * 30_000 + "x",  # refused by its length, before it is matched
        "1" * 30_000,
        True,
        1.5,
    ],
)
def test_not_quantities(text: object) -> None:
    assert quantity_problem(text) is not None


def _go_quantity(text: str) -> Decimal | None:
    """Kubernetes' reading (resource.ParseQuantity, in Go's own steps): a number of digits and
    dots, then a suffix of suffix letters, a sign and digits, interpreted as a binary or decimal
    SI suffix or as `e` with a 32-bit exponent. None when it is refused."""
    split = re.fullmatch(r"([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)", text)
    if split is None or split.group(1).lstrip("+-").count(".") > 1:
        return None
    number, suffix = split.groups()
    if number.lstrip("+-") == ".":
        return None
    binary = {"Ki": 1, "Mi": 2, "Gi": 3, "Ti": 4, "Pi": 5, "Ei": 6}
    decimal = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
    if suffix in binary:
        return Decimal(number) * Decimal(1024) ** binary[suffix]
    if suffix in decimal:
        return Decimal(number).scaleb(decimal[suffix])
    exponent = re.fullmatch(r"[eE]([-+]?[0-9]+)", suffix)
    if exponent is None or abs(int(exponent.group(1))) > 2**31 - 1:
        return None
    return Decimal(number).scaleb(int(exponent.group(1)))


@given(st.text(alphabet="0123456789.+-eEiKMGTPnumk", max_size=10))
def test_quantities_read_as_kubernetes_reads_them(text: str) -> None:
    expected = _go_quantity(text)
    if expected is None:
        assert quantity_problem(text) is not None
    else:
        assert quantity_problem(text) is None
        assert quantity_value(text) == expected


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=12,
)
POD_PATHS = [
    "spec.containers.0.name",
    "spec.containers.0.image",
    "spec.containers.0.imagePullPolicy",
    "spec.containers.0.ports",
    "spec.containers.0.ports.0",
    "spec.containers.0.env",
    "spec.containers.0.env.0",
    "spec.containers.0.resources",
    "spec.containers.0.resources.limits",
    "spec.containers.0.volumeMounts",
    "spec.containers.0.volumeMounts.0",
    "spec.containers.0.env.1.valueFrom",
    "spec.containers.0.securityContext",
    "spec.containers",
    "spec.volumes",
    "spec.volumes.0",
    "spec.volumes.0.emptyDir",
    "spec.volumes.0.configMap",
    "spec.dnsConfig",
    "spec.hostAliases",
    "spec.hostNetwork",
    "spec.tolerations",
    "spec.tolerations.0",
    "spec.nodeSelector",
    "spec.terminationGracePeriodSeconds",
    "spec.dnsPolicy",
    "spec.securityContext",
    "metadata.labels",
    "metadata.annotations",
    "spec",
]


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(path=st.sampled_from(POD_PATHS), value=json_values)
def test_any_content_gives_problems_never_an_error(path: str, value: Any) -> None:
    problems = pod_problems(_mutated(path, value))
    assert all(isinstance(p, str) for p in problems)
    if not problems:
        # What we accept, the API server's schema accepts too (types, required fields).
        kubernetes_validate.validate(_mutated(path, value), K8S_VERSION, strict=False)


# --------------------------------------------------------------------- Runner specs


@pytest.mark.parametrize(
    ("spec", "field"),
    [
        ({"imagePullPolicy": "Sometimes"}, "containers[runner].imagePullPolicy"),
        ({"terminationGracePeriodSeconds": 2**63}, "terminationGracePeriodSeconds"),
        ({"dockerMTU": -1}, "spec.dockerMTU"),
        ({"dockerMTU": 10**12}, "spec.dockerMTU"),
        ({"resources": {"limits": {"memory": "2Gi"}, "requests": {"memory": "4Gi"}}}, "requests"),
        ({"env": [{"name": "A=B", "value": "1"}]}, "containers[runner].env"),
        ({"volumeSizeLimit": "huge"}, "sizeLimit"),
        ({"volumeStorageMedium": "Disk"}, "emptyDir.medium"),
        ({"tolerations": [{"operator": "Sometimes"}]}, "tolerations[0].operator"),
        ({"containers": [{"name": "runner", "ports": [{"containerPort": -1}]}]}, "containerPort"),
        ({"volumeMounts": [{"name": "nope", "mountPath": "/x"}]}, "names no volume"),
        ({"containers": [{"name": "runner", "env": "not-a-list"}]}, "spec.containers[0].env"),
        ({"env": [{"name": 5}]}, "spec.env[0].name: must be of type string"),
        ({"tolerations": [{"tolerationSeconds": "long"}]}, "spec.tolerations[0].toleration"),
        ({"volumes": [{"name": "cm", "configMap": {}}]}, "volumes[cm].configMap.name: required"),
        ({"resources": {"limits": {"gpu": "1"}}}, "containers[runner].resources.limits[gpu]"),
        ({"dnsConfig": {"nameservers": ["a", "b", "c", "d"]}}, "spec.dnsConfig.nameservers"),
        ({"securityContext": {"runAsUser": 2**31}}, "spec.securityContext.runAsUser"),
        (
            {"env": [{"name": "X", "valueFrom": {"fieldRef": {"fieldPath": "metadata.bogus"}}}]},
            "containers[runner].env[0].valueFrom.fieldRef.fieldPath",
        ),
        (
            {
                "volumes": [{"name": "v", "emptyDir": {}}],
                "volumeMounts": [{"name": "v", "mountPath": "/v", "mountPropagation": "Bogus"}],
            },
            "volumeMounts[v].mountPropagation",
        ),
        (
            {
                "sidecarContainers": [
                    {"name": "a", "image": "x", "ports": [{"containerPort": 1, "hostPort": 80}]},
                    {"name": "b", "image": "x", "ports": [{"containerPort": 2, "hostPort": 80}]},
                ]
            },
            "containers[b].ports[0].hostPort",
        ),
    ],
)
def test_a_runner_spec_is_judged_by_the_pod_it_builds(spec: dict[str, Any], field: str) -> None:
    problems = validate_runner_spec(RunnerSpec.model_validate({"organization": "acme", **spec}))
    assert any(field in p for p in problems), problems


def test_the_documented_runner_specs_stay_valid() -> None:
    for spec in (
        {"organization": "acme"},
        {"repository": "acme/app", "dockerMTU": 1400, "dockerdWithinRunnerContainer": True},
        {"organization": "acme", "dockerEnabled": False, "volumeSizeLimit": "4Gi"},
        {"organization": "acme", "terminationGracePeriodSeconds": -1},  # Kubernetes warns
        {
            "organization": "acme",
            "containerMode": "kubernetes",
            "workVolumeClaimTemplate": {
                "accessModes": ["ReadWriteOnce"],
                "resources": {"requests": {"storage": "10Gi"}},
            },
        },
    ):
        assert validate_runner_spec(RunnerSpec.model_validate(spec)) == [], spec


# --------------------------------------------------- over HTTP: no runner is stopped for it


@pytest.mark.parametrize(
    "change",
    [
        {"imagePullPolicy": "Sometimes"},
        {"terminationGracePeriodSeconds": 2**63},
        {"dockerMTU": -1500},
        {"imagePullPolicy": SECRET},
    ],
    ids=["pull-policy", "grace-period", "mtu", "secret-pasted"],
)
def test_an_idle_runner_made_invalid_keeps_its_pod_and_registration(
    client: TestClient, github: InMemoryGitHub, clock: ManualClock, change: dict[str, Any]
) -> None:
    driver = HookDriver(client, new_runner({"organization": "acme", "labels": ["linux"]}))
    driver.sync()
    driver.sync()
    driver.set_pod_status(running_status(format_time(clock.now())))
    github.register(ORG, driver.parent["metadata"]["name"])
    driver.sync()
    pod_before = copy.deepcopy(driver.pod())

    driver.parent["spec"].update(change)
    driver.parent["metadata"]["generation"] = 2
    answer = driver.sync()

    assert driver.pod() == pod_before  # the idle runner is not stopped or replaced
    assert [c["kind"] for c in answer["children"]].count("Pod") == 1
    assert github.count("remove_runner") == 0
    valid = next(c for c in answer["status"]["conditions"] if c["type"] == "Valid")
    assert valid["status"] == "False" and valid["reason"] == "InvalidSpec"
    assert next(iter(change)) in valid["message"]
    assert SECRET not in json.dumps(answer)


@pytest.mark.parametrize(
    ("spec", "field"),
    [
        ({"repository": SECRET}, "spec.repository"),
        ({"organization": "a/" + SECRET}, "spec.organization"),
        ({"organization": "acme", "containerMode": SECRET}, "spec.containerMode"),
        ({"organization": "acme", "imagePullPolicy": SECRET}, "imagePullPolicy"),
        ({"organization": "acme", "env": [{"name": SECRET + "=", "value": "x"}]}, "env"),
    ],
)
def test_conditions_name_the_field_never_the_value(
    client: TestClient, spec: dict[str, Any], field: str
) -> None:
    answer = HookDriver(client, new_runner(spec)).sync()
    valid = next(c for c in answer["status"]["conditions"] if c["type"] == "Valid")
    assert valid["status"] == "False" and field in valid["message"]
    assert SECRET not in json.dumps(answer)
    assert SECRET[:12] not in json.dumps(answer)
