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
    rule_problems,
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
        ("spec.terminationGracePeriodSeconds", 2**63, "terminationGracePeriodSeconds: must be bet"),
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


# ------------------------------- probes, hooks, affinity, envFrom, profiles, sysctls, hostPath

EXEC = {"exec": {"command": ["true"]}}
TERM = "requiredDuringSchedulingIgnoredDuringExecution"
PREFERRED = "preferredDuringSchedulingIgnoredDuringExecution"
C0 = "spec.containers.0"


def _node_affinity(*expressions: dict[str, Any], **term: Any) -> dict[str, Any]:
    return {
        "nodeAffinity": {
            TERM: {"nodeSelectorTerms": [{"matchExpressions": list(expressions), **term}]}
        }
    }


def _pod_affinity(**term: Any) -> dict[str, Any]:
    return {"podAntiAffinity": {TERM: [{"topologyKey": "kubernetes.io/hostname", **term}]}}


REFUSED_WINDOWS_USER_NAMES: list[tuple[str, str]] = [
    ("", "may not be empty"),
    ("a\\b\\c", "may not contain more than one backslash"),
    ("a\x01b", "may not contain control characters"),
    ("bad|domain\\ci", "the domain must be a NetBIOS or DNS domain name"),
    ("CORP\\", "the user may not be empty"),
    ("CORP\\. .", "the user may not be only periods and spaces"),
    ("ci@corp", "the user may not contain any of"),
    ("u" * 105, "the user must be at most 104 bytes"),
    ("é" * 53, "the user must be at most 104 bytes"),
]
"""`validateWindowsSecurityContextOptions`: runAsUserName values and what is wrong."""


def _spread(**constraint: Any) -> dict[str, Any]:
    return {
        "maxSkew": 1,
        "topologyKey": "topology.kubernetes.io/zone",
        "whenUnsatisfiable": "DoNotSchedule",
        **constraint,
    }


RUNNER_LABEL = "app.kubernetes.io/name"  # a label VALID_POD has; "team" is one it has not
SPREADS = "spec.topologySpreadConstraints"


def _projected(*sources: dict[str, Any]) -> dict[str, Any]:
    """A volume `work` projecting `sources`."""
    return {"name": "work", "projected": {"sources": list(sources)}}


ACCEPTED_NEAR_THE_PORTED_RULES: list[tuple[str, Any]] = [
    # validateProbe: one handler; counts of 0 are defaulted (SetDefaults_Probe)
    (f"{C0}.livenessProbe", EXEC),
    (f"{C0}.readinessProbe", {"httpGet": {"port": "http"}}),  # a named port
    (f"{C0}.readinessProbe", {"httpGet": {"port": 8080, "path": "", "scheme": ""}}),  # defaulted
    (
        f"{C0}.livenessProbe",
        {
            "tcpSocket": {"port": 8080},
            **dict.fromkeys(
                [
                    "initialDelaySeconds",
                    "timeoutSeconds",
                    "periodSeconds",
                    "successThreshold",
                    "failureThreshold",
                ],
                0,
            ),
        },
    ),
    (
        f"{C0}.startupProbe",
        {"grpc": {"port": 9090}, "successThreshold": 1, "terminationGracePeriodSeconds": 5},
    ),
    (f"{C0}.readinessProbe", {**EXEC, "successThreshold": 3}),  # only liveness/startup need 1
    (
        f"{C0}.livenessProbe",
        {
            "httpGet": {
                "port": 80,
                "scheme": "HTTPS",
                "httpHeaders": [{"name": "X-Probe-1", "value": ""}],
            }
        },
    ),
    (f"{C0}.livenessProbe", {**EXEC, "httpGet": None}),  # null is no handler
    # validateLifecycle, validateSleepAction (zero allowed: PodLifecycleSleepActionAllowZero)
    (f"{C0}.lifecycle", {"preStop": {"sleep": {"seconds": 0}}}),
    (
        f"{C0}.lifecycle",
        {"preStop": {"sleep": {"seconds": 110}}, "postStart": {"tcpSocket": {"port": 80}}},
    ),
    (f"{C0}.lifecycle", {}),
    # validateInitContainers: a sidecar (restartPolicy Always) may have probes and hooks
    (
        "spec.initContainers",
        [
            {
                "name": "side",
                "image": "busybox",
                "restartPolicy": "Always",
                "livenessProbe": EXEC,
                "startupProbe": EXEC,
                "lifecycle": {"preStop": EXEC},
            }
        ],
    ),
    # ValidateNodeSelector, ValidateNodeSelectorRequirement, ValidatePreferredSchedulingTerms
    ("spec.affinity", _node_affinity({"key": "kubernetes.io/os", "operator": "Exists"})),
    ("spec.affinity", _node_affinity({"key": "gpu-count", "operator": "Gt", "values": ["2"]})),
    # Gt and Lt take one value that Kubernetes does not check to be an integer
    ("spec.affinity", _node_affinity({"key": "gpu-count", "operator": "Lt", "values": ["many"]})),
    (
        "spec.affinity",
        _node_affinity(
            matchFields=[{"key": "metadata.name", "operator": "In", "values": ["node-1"]}]
        ),
    ),
    ("spec.affinity", _node_affinity()),  # an empty term is allowed (it matches no node)
    (
        "spec.affinity",
        {
            "nodeAffinity": {
                PREFERRED: [
                    {
                        "weight": 1,
                        "preference": {
                            "matchExpressions": [
                                {"key": "zone", "operator": "NotIn", "values": ["a"]}
                            ]
                        },
                    },
                    {"weight": 100, "preference": {}},
                ]
            }
        },
    ),
    # validatePodAffinityTerm, ValidateLabelSelector
    (
        "spec.affinity",
        _pod_affinity(labelSelector={"matchExpressions": [{"key": "app", "operator": "Exists"}]}),
    ),
    ("spec.affinity", _pod_affinity(namespaces=["ci", "default"], namespaceSelector={})),
    (
        "spec.affinity",
        {
            "podAffinity": {
                PREFERRED: [
                    {
                        "weight": 50,
                        "podAffinityTerm": {
                            "topologyKey": "topology.kubernetes.io/zone",
                            "labelSelector": {
                                "matchLabels": {"app": "runner"},
                                "matchExpressions": [
                                    {"key": "tier", "operator": "In", "values": ["a", ""]}
                                ],
                            },
                        },
                    }
                ]
            }
        },
    ),
    # ValidateEnvFrom: a relaxed prefix (RelaxedEnvironmentVariableValidation), names as prefixes
    (
        f"{C0}.envFrom",
        [{"configMapRef": {"name": "cm"}}, {"secretRef": {"name": "s"}, "prefix": "MY.PREFIX-1 _"}],
    ),
    (f"{C0}.envFrom", [{"configMapRef": {"name": "runner-"}, "prefix": ""}]),  # a trailing dash
    (f"{C0}.envFrom", [{"secretRef": {"name": "aB-"}}]),  # maskTrailingDash drops 'B' too
    # validateSeccompProfileField, ValidateAppArmorProfileField
    (f"{C0}.securityContext", {"seccompProfile": {"type": "RuntimeDefault"}}),
    (
        f"{C0}.securityContext",
        {"seccompProfile": {"type": "Localhost", "localhostProfile": "p/audit.json"}},
    ),
    (f"{C0}.securityContext", {"seccompProfile": {"type": "Localhost", "localhostProfile": ""}}),
    (
        "spec.securityContext",
        {"seccompProfile": {"type": "Unconfined"}, "appArmorProfile": {"type": "RuntimeDefault"}},
    ),
    (
        f"{C0}.securityContext",
        {"appArmorProfile": {"type": "Localhost", "localhostProfile": "k8s-profile"}},
    ),
    (
        f"{C0}.securityContext",
        {"appArmorProfile": {"type": "Localhost", "localhostProfile": "\x1cp"}},
    ),
    # validateSysctls
    (
        "spec.securityContext",
        {
            "sysctls": [
                {"name": "net.core.somaxconn", "value": "1024"},
                {"name": "kernel.shm_rmid_forced", "value": "0"},
                {"name": "net/ipv4/conf/eno2.100/rp_filter", "value": "1"},
            ]
        },
    ),
    # validateHostPathVolumeSource: "" is the type that checks nothing
    ("spec.volumes.0", {"name": "work", "hostPath": {"path": "/var/run/docker.sock", "type": ""}}),
    # ValidateMatchLabelKeysAndMismatchLabelKeys, after the merge of the pod's labels
    ("spec.affinity", _pod_affinity(labelSelector={}, matchLabelKeys=[RUNNER_LABEL])),
    ("spec.affinity", _pod_affinity(labelSelector={}, mismatchLabelKeys=["a", "team"])),
    (  # the selector names a key the pod has no label for: nothing is merged
        "spec.affinity",
        _pod_affinity(labelSelector={"matchLabels": {"team": "ci"}}, matchLabelKeys=["team"]),
    ),
    (  # only matchLabelKeys keys may not be selected twice
        "spec.affinity",
        _pod_affinity(
            labelSelector={"matchExpressions": [{"key": "a", "operator": "Exists"}]},
            mismatchLabelKeys=["a"],
        ),
    ),
    # validateTopologySpreadConstraints
    (
        SPREADS,
        [
            _spread(
                minDomains=2,
                nodeAffinityPolicy="Honor",
                nodeTaintsPolicy="Ignore",
                labelSelector={"matchLabels": {RUNNER_LABEL: "runner"}},
                matchLabelKeys=["a", "pod-template-hash"],
            ),
            _spread(whenUnsatisfiable="ScheduleAnyway"),  # another kind of the same key
        ],
    ),
    (  # refused by 1.33 (merging nothing), accepted where the pod's labels are merged in
        SPREADS,
        [_spread(labelSelector={"matchLabels": {"team": "ci"}}, matchLabelKeys=["team"])],
    ),
    # validatePodSpecSecurityContext
    ("spec.securityContext", {"fsGroup": 2000, "fsGroupChangePolicy": "OnRootMismatch"}),
    ("spec.securityContext", {"supplementalGroupsPolicy": "Strict"}),
    ("spec.securityContext", {"supplementalGroupsPolicy": "Merge"}),
    ("spec.securityContext", {"seLinuxChangePolicy": "Recursive"}),
    # refused by 1.33 unless its SELinuxMount gate is on: accepted where a cluster turned it on
    ("spec.securityContext", {"seLinuxChangePolicy": "MountOption"}),
    # validateWindowsSecurityContextOptions
    (
        f"{C0}.securityContext",
        {
            "windowsOptions": {
                "gmsaCredentialSpecName": "webapp-gmsa",
                "gmsaCredentialSpec": "{}",
                "runAsUserName": "NT AUTHORITY\\NETWORK SERVICE",
            }
        },
    ),
    (f"{C0}.securityContext", {"windowsOptions": {"runAsUserName": "corp.example.com\\ci"}}),
    ("spec.securityContext", {"windowsOptions": {"runAsUserName": "ContainerUser"}}),
    (
        "spec.volumes.0",
        {"name": "work", "hostPath": {"path": "/data/a..b", "type": "DirectoryOrCreate"}},
    ),
    # validateProjectionSources
    (
        "spec.volumes.0",
        {
            "name": "work",
            "projected": {
                "defaultMode": 0o440,
                "sources": [
                    {"serviceAccountToken": {"path": "token", "expirationSeconds": 600}},
                    {
                        "secret": {
                            "name": "s",
                            "items": [{"key": "k", "path": "a/k", "mode": 0o400}],
                        }
                    },
                    {"configMap": {"name": "c"}},
                    {
                        "downwardAPI": {
                            "items": [{"path": "name", "fieldRef": {"fieldPath": "metadata.name"}}]
                        }
                    },
                ],
            },
        },
    ),
]


@pytest.mark.parametrize(("path", "value"), ACCEPTED_NEAR_THE_PORTED_RULES)
def test_what_the_api_server_accepts_in_the_ported_rules_is_no_problem(
    path: str, value: Any
) -> None:
    pod = _mutated(path, value)
    assert pod_problems(pod) == []
    kubernetes_validate.validate(pod, K8S_VERSION, strict=True)


@pytest.mark.parametrize(
    ("path", "value", "problem"),
    [
        # validateHandler, validateProbe, validateLivenessProbe, validateStartupProbe,
        # validateReadinessProbe
        (f"{C0}.livenessProbe", {}, "livenessProbe: must specify one of exec, httpGet"),
        (f"{C0}.livenessProbe", {"periodSeconds": 5}, "livenessProbe: must specify one of"),
        (
            f"{C0}.readinessProbe",
            {**EXEC, "tcpSocket": {"port": 80}},
            "readinessProbe.tcpSocket: may not be given beside",
        ),
        (f"{C0}.livenessProbe", {"exec": {}}, "livenessProbe.exec.command: required"),
        (
            f"{C0}.livenessProbe",
            {**EXEC, "initialDelaySeconds": -1},
            "initialDelaySeconds: must be at least 0",
        ),
        (
            f"{C0}.readinessProbe",
            {**EXEC, "timeoutSeconds": -1},
            "timeoutSeconds: must be at least 0",
        ),
        (
            f"{C0}.readinessProbe",
            {**EXEC, "periodSeconds": -10},
            "periodSeconds: must be at least 0",
        ),
        (
            f"{C0}.readinessProbe",
            {**EXEC, "failureThreshold": -3},
            "failureThreshold: must be at least 0",
        ),
        (
            f"{C0}.readinessProbe",
            {**EXEC, "successThreshold": -1},
            "successThreshold: must be at least 0",
        ),
        (
            f"{C0}.livenessProbe",
            {**EXEC, "successThreshold": 2},
            "livenessProbe.successThreshold: must be 1",
        ),
        (
            f"{C0}.startupProbe",
            {**EXEC, "successThreshold": 3},
            "startupProbe.successThreshold: must be 1",
        ),
        (
            f"{C0}.livenessProbe",
            {**EXEC, "terminationGracePeriodSeconds": 0},
            "livenessProbe.terminationGracePeriodSeconds: must be at least 1",
        ),
        (
            f"{C0}.readinessProbe",
            {**EXEC, "terminationGracePeriodSeconds": 5},
            "readinessProbe.terminationGracePeriodSeconds: not for a readinessProbe",
        ),
        (
            f"{C0}.livenessProbe",
            {"httpGet": {"port": 0}},
            "livenessProbe.httpGet.port: must be a port number",
        ),
        (
            f"{C0}.livenessProbe",
            {"httpGet": {"port": 70000}},
            "httpGet.port: must be a port number",
        ),
        (
            f"{C0}.livenessProbe",
            {"httpGet": {"port": "8080"}},
            "httpGet.port: must be a port number",
        ),  # a name needs a letter
        (
            f"{C0}.livenessProbe",
            {"httpGet": {"port": "Http"}},
            "httpGet.port: must be a port number",
        ),
        (
            f"{C0}.livenessProbe",
            {"httpGet": {"port": 80, "scheme": "http"}},
            "httpGet.scheme: must be one of HTTP, HTTPS",
        ),
        (
            f"{C0}.livenessProbe",
            {"httpGet": {"port": 80, "httpHeaders": [{"name": "X Probe", "value": "1"}]}},
            "httpGet.httpHeaders[0].name: must be letters",
        ),
        (
            f"{C0}.livenessProbe",
            {"httpGet": {"port": 80, "httpHeaders": [{"name": "", "value": "1"}]}},
            "httpHeaders[0].name: must be",
        ),
        (
            f"{C0}.startupProbe",
            {"tcpSocket": {"port": "a--b"}},
            "startupProbe.tcpSocket.port: must be a port",
        ),
        (f"{C0}.startupProbe", {"grpc": {"port": 0}}, "startupProbe.grpc.port: must be at least 1"),
        (f"{C0}.startupProbe", {"grpc": {"port": 65536}}, "grpc.port: must be at most 65535"),
        # validateLifecycle, validateSleepAction
        (
            f"{C0}.lifecycle",
            {"preStop": {}},
            "lifecycle.preStop: must specify one of exec, httpGet, tcpSocket, sleep",
        ),
        (
            f"{C0}.lifecycle",
            {"postStart": {**EXEC, "sleep": {"seconds": 1}}},
            "postStart.sleep: may not be given beside",
        ),
        (
            f"{C0}.lifecycle",
            {"preStop": {"grpc": {"port": 80}}},
            "lifecycle.preStop: must specify one of",
        ),
        (
            f"{C0}.lifecycle",
            {"preStop": {"sleep": {"seconds": -1}}},
            "preStop.sleep.seconds: must be at least 0",
        ),
        (
            f"{C0}.lifecycle",
            {"preStop": {"sleep": {"seconds": 111}}},
            "preStop.sleep.seconds: must be at most the pod's terminationGracePeriodSeconds",
        ),
        (
            f"{C0}.lifecycle",
            {"preStop": {"httpGet": {"port": -1}}},
            "preStop.httpGet.port: must be a port",
        ),
        # validateInitContainers, validateInitContainerRestartPolicy, validateContainers
        (
            "spec.initContainers",
            [{"name": "i", "image": "x", "livenessProbe": EXEC}],
            "initContainers[i].livenessProbe: may not be set for an init container",
        ),
        (
            "spec.initContainers",
            [{"name": "i", "image": "x", "lifecycle": {"preStop": EXEC}}],
            "initContainers[i].lifecycle: may not be set",
        ),
        (
            "spec.initContainers",
            [{"name": "i", "image": "x", "restartPolicy": "OnFailure"}],
            "initContainers[i].restartPolicy: must be Always",
        ),
        (
            "spec.initContainers",
            [
                {
                    "name": "i",
                    "image": "x",
                    "restartPolicy": "Always",
                    "startupProbe": {**EXEC, "successThreshold": 2},
                }
            ],
            "initContainers[i].startupProbe.successThreshold: must be 1",
        ),
        (
            f"{C0}.restartPolicy",
            "Always",
            "containers[runner].restartPolicy: may only be set for init containers",
        ),
        # validateNodeAffinity, ValidateNodeSelector, ValidateNodeSelectorRequirement
        (
            "spec.affinity",
            {"nodeAffinity": {TERM: {"nodeSelectorTerms": []}}},
            "nodeSelectorTerms: at least one term is required",
        ),
        (
            "spec.affinity",
            _node_affinity({"key": "zone", "operator": "In"}),
            "matchExpressions[0].values: required when operator is In",
        ),
        (
            "spec.affinity",
            _node_affinity({"key": "zone", "operator": "NotIn", "values": []}),
            "values: required when operator is In or NotIn",
        ),
        (
            "spec.affinity",
            _node_affinity({"key": "zone", "operator": "Exists", "values": ["a"]}),
            "values: must be empty when operator is Exists",
        ),
        (
            "spec.affinity",
            _node_affinity({"key": "zone", "operator": "DoesNotExist", "values": ["a"]}),
            "values: must be empty",
        ),
        (
            "spec.affinity",
            _node_affinity({"key": "n", "operator": "Gt", "values": ["1", "2"]}),
            "values: must be exactly one value when operator is Gt or Lt",
        ),
        (
            "spec.affinity",
            _node_affinity({"key": "n", "operator": "Lt"}),
            "values: must be exactly one value",
        ),
        (
            "spec.affinity",
            _node_affinity({"key": "zone", "operator": "Equals", "values": ["a"]}),
            "matchExpressions[0].operator: must be one of In, NotIn",
        ),
        (
            "spec.affinity",
            _node_affinity({"key": "bad key!", "operator": "Exists"}),
            "matchExpressions[0].key: must be a qualified name",
        ),
        (
            "spec.affinity",
            _node_affinity({"key": "zone", "operator": "In", "values": ["a b"]}),
            "matchExpressions[0].values[0]: must be a label value",
        ),
        (
            "spec.affinity",
            _node_affinity(
                matchFields=[{"key": "metadata.uid", "operator": "In", "values": ["n"]}]
            ),
            "matchFields[0].key: must be metadata.name",
        ),
        (
            "spec.affinity",
            _node_affinity(
                matchFields=[{"key": "metadata.name", "operator": "In", "values": ["a", "b"]}]
            ),
            "matchFields[0].values: must be exactly one value",
        ),
        (
            "spec.affinity",
            _node_affinity(matchFields=[{"key": "metadata.name", "operator": "Exists"}]),
            "matchFields[0].operator: must be In or NotIn",
        ),
        (
            "spec.affinity",
            {"nodeAffinity": {PREFERRED: [{"weight": 0, "preference": {}}]}},
            f"{PREFERRED}[0].weight: must be at least 1",
        ),
        (
            "spec.affinity",
            {"nodeAffinity": {PREFERRED: [{"weight": 101, "preference": {}}]}},
            "weight: must be at most 100",
        ),
        (
            "spec.affinity",
            {
                "nodeAffinity": {
                    PREFERRED: [
                        {
                            "weight": 1,
                            "preference": {"matchExpressions": [{"key": "z", "operator": "In"}]},
                        }
                    ]
                }
            },
            "preference.matchExpressions[0].values: required",
        ),
        # validatePodAffinityTerm, validateWeightedPodAffinityTerms, ValidateLabelSelector
        (
            "spec.affinity",
            {"podAffinity": {TERM: [{"labelSelector": {}, "topologyKey": ""}]}},
            "podAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].topologyKey: required",
        ),
        (
            "spec.affinity",
            _pod_affinity(topologyKey="bad key!"),
            "topologyKey: must be a qualified name",
        ),
        (
            "spec.affinity",
            {
                "podAntiAffinity": {
                    PREFERRED: [{"weight": 0, "podAffinityTerm": {"topologyKey": "z"}}]
                }
            },
            f"podAntiAffinity.{PREFERRED}[0].weight: must be at least 1",
        ),
        (
            "spec.affinity",
            {"podAffinity": {PREFERRED: [{"weight": 1, "podAffinityTerm": {"topologyKey": ""}}]}},
            "podAffinityTerm.topologyKey: required",
        ),
        (
            "spec.affinity",
            _pod_affinity(labelSelector={"matchExpressions": [{"key": "app", "operator": "In"}]}),
            "labelSelector.matchExpressions[0].values: required",
        ),
        (
            "spec.affinity",
            _pod_affinity(
                labelSelector={
                    "matchExpressions": [{"key": "app", "operator": "Gt", "values": ["1"]}]
                }
            ),
            "labelSelector.matchExpressions[0].operator: must be one of",
        ),
        (
            "spec.affinity",
            _pod_affinity(
                labelSelector={
                    "matchExpressions": [{"key": "app", "operator": "In", "values": ["-x"]}]
                }
            ),
            "labelSelector.matchExpressions[0].values[0]: must be a label value",
        ),
        (
            "spec.affinity",
            _pod_affinity(labelSelector={"matchLabels": {"app": "a b"}}),
            "labelSelector.matchLabels[app]: the value must be",
        ),
        (
            "spec.affinity",
            _pod_affinity(
                namespaceSelector={
                    "matchExpressions": [{"key": "k", "operator": "Exists", "values": ["v"]}]
                }
            ),
            "namespaceSelector.matchExpressions[0].values: must be empty",
        ),
        (
            "spec.affinity",
            _pod_affinity(namespaces=["Not_A_Namespace"]),
            "namespaces[0]: must be a DNS label",
        ),
        # ValidateEnvFrom, validateConfigMapEnvSource, validateSecretEnvSource
        (
            f"{C0}.envFrom",
            [{}],
            "envFrom[0]: must specify exactly one of configMapRef or secretRef",
        ),
        (f"{C0}.envFrom", [{"prefix": "P_"}], "envFrom[0]: must specify exactly one"),
        (
            f"{C0}.envFrom",
            [{"configMapRef": {"name": "c"}, "secretRef": {"name": "s"}}],
            "envFrom[0]: must specify exactly one",
        ),
        (f"{C0}.envFrom", [{"configMapRef": {}}], "envFrom[0].configMapRef.name: required"),
        (
            f"{C0}.envFrom",
            [{"secretRef": {"name": "Not_A_Name"}}],
            "envFrom[0].secretRef.name: must be a DNS subdomain",
        ),
        (
            f"{C0}.envFrom",
            [{"configMapRef": {"name": "-"}}],
            "envFrom[0].configMapRef.name: must be a DNS subdomain",
        ),
        (
            f"{C0}.envFrom",
            [{"configMapRef": {"name": "c"}, "prefix": "A=B"}],
            "envFrom[0].prefix: must be printable ASCII",
        ),
        (
            f"{C0}.envFrom",
            [{"configMapRef": {"name": "c"}, "prefix": "tab\t"}],
            "envFrom[0].prefix: must be printable ASCII",
        ),
        # validateSeccompProfileField, ValidateAppArmorProfileField
        (
            f"{C0}.securityContext",
            {"seccompProfile": {"type": "Default"}},
            "securityContext.seccompProfile.type: must be one of Localhost",
        ),
        (
            f"{C0}.securityContext",
            {"seccompProfile": {"type": ""}},
            "seccompProfile.type: required",
        ),
        (
            f"{C0}.securityContext",
            {"seccompProfile": {"type": "Localhost"}},
            "seccompProfile.localhostProfile: required when type is Localhost",
        ),
        (
            f"{C0}.securityContext",
            {"seccompProfile": {"type": "Localhost", "localhostProfile": "/etc/p.json"}},
            "localhostProfile: must be a relative path",
        ),
        (
            f"{C0}.securityContext",
            {"seccompProfile": {"type": "Localhost", "localhostProfile": "a/../p.json"}},
            "localhostProfile: must be a relative path without '..'",
        ),
        (
            "spec.securityContext",
            {"seccompProfile": {"type": "RuntimeDefault", "localhostProfile": "p"}},
            "securityContext.seccompProfile.localhostProfile: may only be set when type is",
        ),
        (
            "spec.securityContext",
            {"seccompProfile": {"type": "Unconfined", "localhostProfile": ""}},
            "localhostProfile: may only be set",
        ),
        (
            "spec.securityContext",
            {"appArmorProfile": {"type": "Complain"}},
            "spec.securityContext.appArmorProfile.type: must be one of",
        ),
        (
            f"{C0}.securityContext",
            {"appArmorProfile": {"type": "Localhost"}},
            "appArmorProfile.localhostProfile: required when type is Localhost",
        ),
        (
            f"{C0}.securityContext",
            {"appArmorProfile": {"type": "Localhost", "localhostProfile": ""}},
            "appArmorProfile.localhostProfile: required",
        ),
        (
            f"{C0}.securityContext",
            {"appArmorProfile": {"type": "Localhost", "localhostProfile": " p"}},
            "localhostProfile: must not be padded with whitespace",
        ),
        (
            f"{C0}.securityContext",
            {"appArmorProfile": {"type": "Localhost", "localhostProfile": "p" * 4096}},
            "localhostProfile: must be at most 4095 bytes",
        ),
        (
            f"{C0}.securityContext",
            {"appArmorProfile": {"type": "Unconfined", "localhostProfile": "p"}},
            "appArmorProfile.localhostProfile: may only be set",
        ),
        # validateSysctls, IsValidSysctlName
        (
            "spec.securityContext",
            {"sysctls": [{"name": "", "value": "1"}]},
            "sysctls[0].name: required",
        ),
        (
            "spec.securityContext",
            {"sysctls": [{"name": "Net.Core", "value": "1"}]},
            "sysctls[0].name: must be at most 253",
        ),
        (
            "spec.securityContext",
            {"sysctls": [{"name": "net..core", "value": "1"}]},
            "sysctls[0].name: must be at most 253",
        ),
        (
            "spec.securityContext",
            {"sysctls": [{"name": "a" * 254, "value": "1"}]},
            "sysctls[0].name: must be at most 253",
        ),
        (
            "spec.securityContext",
            {
                "sysctls": [
                    {"name": "net.core.somaxconn", "value": "1"},
                    {"name": "net.core.somaxconn", "value": "2"},
                ]
            },
            "sysctls[1].name: must be unique among the pod's sysctls",
        ),
        # validateHostPathVolumeSource
        (
            "spec.volumes.0",
            {"name": "work", "hostPath": {"path": ""}},
            "volumes[work].hostPath.path: required",
        ),
        # ValidateMatchLabelKeysAndMismatchLabelKeys, after the merge of the pod's labels
        (
            "spec.affinity",
            _pod_affinity(matchLabelKeys=[RUNNER_LABEL]),
            f"{TERM}[0].matchLabelKeys: may not be set without a labelSelector",
        ),
        (
            "spec.affinity",
            _pod_affinity(labelSelector={}, mismatchLabelKeys=["a", "not a key"]),
            f"{TERM}[0].mismatchLabelKeys[1]: must be a qualified name",
        ),
        (
            "spec.affinity",
            _pod_affinity(labelSelector={}, matchLabelKeys=["team"], mismatchLabelKeys=["team"]),
            f"{TERM}[0].matchLabelKeys[0]: is in mismatchLabelKeys too",
        ),
        (
            "spec.affinity",
            _pod_affinity(
                labelSelector={"matchLabels": {RUNNER_LABEL: "runner"}},
                matchLabelKeys=["a", RUNNER_LABEL],
            ),
            f"{TERM}[0].matchLabelKeys[1]: the labelSelector selects on this key already",
        ),
        (
            "spec.affinity",
            _pod_affinity(
                labelSelector={"matchExpressions": [{"key": "a", "operator": "Exists"}]},
                matchLabelKeys=["a"],
            ),
            f"{TERM}[0].matchLabelKeys[0]: the labelSelector selects on this key already",
        ),
        (  # selected twice as written, whatever the pod's labels
            "spec.affinity",
            _pod_affinity(
                labelSelector={
                    "matchLabels": {"team": "ci"},
                    "matchExpressions": [{"key": "team", "operator": "Exists"}],
                },
                matchLabelKeys=["team"],
            ),
            f"{TERM}[0].matchLabelKeys[0]: the labelSelector selects on this key already",
        ),
        (  # the merged In meets the merged NotIn of the same key
            "spec.affinity",
            {
                "podAffinity": {
                    PREFERRED: [
                        {
                            "weight": 1,
                            "podAffinityTerm": {
                                "topologyKey": "zone",
                                "labelSelector": {},
                                "matchLabelKeys": ["a"],
                                "mismatchLabelKeys": ["a"],
                            },
                        }
                    ]
                }
            },
            "podAffinityTerm.matchLabelKeys[0]: the labelSelector selects on this key already",
        ),
        # validateTopologySpreadConstraints
        (
            SPREADS,
            [_spread(), _spread(maxSkew=2)],
            "topologySpreadConstraints[0]: another constraint has its topologyKey and "
            "whenUnsatisfiable",
        ),
        (SPREADS, [_spread(minDomains=0)], "topologySpreadConstraints[0].minDomains: must be at"),
        (
            SPREADS,
            [_spread(minDomains=3, whenUnsatisfiable="ScheduleAnyway")],
            "minDomains: only with whenUnsatisfiable DoNotSchedule",
        ),
        (
            SPREADS,
            [_spread(nodeTaintsPolicy="Maybe")],
            "nodeTaintsPolicy: must be one of Honor, Ignore",
        ),
        (
            SPREADS,
            [_spread(labelSelector={"matchLabels": {"team": "not a value"}})],
            "topologySpreadConstraints[0].labelSelector.matchLabels[team]: the value must be",
        ),
        (
            SPREADS,
            [_spread(matchLabelKeys=["a"])],
            "matchLabelKeys: may not be set without a labelSelector",
        ),
        (
            SPREADS,
            [_spread(labelSelector={"matchLabels": {"a": ""}}, matchLabelKeys=["a"])],
            "matchLabelKeys[0]: the labelSelector selects on this key already",
        ),
        (
            SPREADS,
            [_spread(labelSelector={}, matchLabelKeys=["-a"])],
            "matchLabelKeys[0]: must be a qualified name",
        ),
        # validatePodSpecSecurityContext
        (
            "spec.securityContext",
            {"fsGroupChangePolicy": "Sometimes"},
            "securityContext.fsGroupChangePolicy: must be one of OnRootMismatch, Always",
        ),
        (
            "spec.securityContext",
            {"supplementalGroupsPolicy": "merge"},
            "securityContext.supplementalGroupsPolicy: must be one of Merge, Strict",
        ),
        (
            "spec.securityContext",
            {"seLinuxChangePolicy": "Always"},
            "securityContext.seLinuxChangePolicy: must be one of Recursive, MountOption",
        ),
        # validateWindowsSecurityContextOptions
        *(
            (
                f"{C0}.securityContext",
                {"windowsOptions": {"runAsUserName": name}},
                f"runAsUserName: {problem}",
            )
            for name, problem in REFUSED_WINDOWS_USER_NAMES
        ),
        (
            "spec.securityContext",
            {"windowsOptions": {"gmsaCredentialSpecName": "Not_A_Name"}},
            "spec.securityContext.windowsOptions.gmsaCredentialSpecName: must be a DNS",
        ),
        (
            "spec.securityContext",
            {"windowsOptions": {"gmsaCredentialSpec": ""}},
            "windowsOptions.gmsaCredentialSpec: may not be empty",
        ),
        (
            f"{C0}.securityContext",
            {"windowsOptions": {"gmsaCredentialSpec": "x" * (64 * 1024 + 1)}},
            "windowsOptions.gmsaCredentialSpec: must be under 64 KiB",
        ),
        (
            "spec.volumes.0",
            {"name": "work", "hostPath": {"path": "/var/../etc"}},
            "hostPath.path: must not contain '..'",
        ),
        (
            "spec.volumes.0",
            {"name": "work", "hostPath": {"path": "/d", "type": "Dir"}},
            "volumes[work].hostPath.type: must be one of",
        ),
        (
            "spec.volumes.0",
            _projected(
                {"secret": {"name": "s", "items": [{"key": "k", "path": "p", "mode": 512}]}}
            ),
            "projected.sources[0].secret.items[0].mode: must be a file mode",
        ),
        (
            "spec.volumes.0",
            _projected({"configMap": {"items": [{"key": "k", "path": "p"}]}}),
            "projected.sources[0].configMap.name: required",
        ),
        (
            "spec.volumes.0",
            _projected(
                {
                    "downwardAPI": {
                        "items": [
                            {
                                "path": "n",
                                "fieldRef": {"fieldPath": "metadata.name"},
                                "mode": 4096,
                            }
                        ]
                    }
                }
            ),
            "projected.sources[0].downwardAPI.items[0].mode: must be a file mode",
        ),
        (
            "spec.volumes.0",
            _projected({"serviceAccountToken": {"path": "t", "expirationSeconds": 599}}),
            "serviceAccountToken.expirationSeconds: must be at least 10 minutes",
        ),
        (
            "spec.volumes.0",
            _projected({"serviceAccountToken": {"path": "t", "expirationSeconds": 2**32 + 1}}),
            "serviceAccountToken.expirationSeconds: must be at most 2^32 seconds",
        ),
        (
            "spec.volumes.0",
            _projected({"serviceAccountToken": {"path": "../t"}}),
            "serviceAccountToken.path: must be a relative path",
        ),
        (
            "spec.volumes.0",
            _projected({"serviceAccountToken": {"path": "t"}, "configMap": {"name": "c"}}),
            "projected.sources[0]: may not specify more than 1 volume type per source",
        ),
        (
            "spec.volumes.0",
            _projected(
                {"serviceAccountToken": {"path": "x"}},
                {"secret": {"name": "s", "items": [{"key": "k", "path": "x"}]}},
            ),
            "projected.sources: conflicting duplicate paths",
        ),
        (
            "spec.volumes.0",
            _projected(
                {
                    "downwardAPI": {
                        "items": [{"path": "../x", "fieldRef": {"fieldPath": "metadata.name"}}]
                    }
                }
            ),
            "downwardAPI.items[0].path: must be a relative path",
        ),
        (
            "spec.volumes.0",
            {
                "name": "work",
                "downwardAPI": {
                    "items": [{"path": "/abs", "fieldRef": {"fieldPath": "metadata.name"}}]
                },
            },
            "downwardAPI.items[0].path: must be a relative path",
        ),
    ],
)
def test_what_the_api_server_refuses_in_the_ported_rules_is_a_problem(
    path: str, value: Any, problem: str
) -> None:
    pod = _mutated(path, value)
    problems = pod_problems(pod)
    assert any(problem in p for p in problems), problems
    assert schema_problems(pod) == []  # a rule's problem, not the schema's


@pytest.mark.parametrize(
    ("spec", "problem"),
    [
        (
            {
                "hostNetwork": True,
                "securityContext": {"sysctls": [{"name": "net.ipv4.ip_forward", "value": "1"}]},
            },
            "sysctls[0].name: may not be set when hostNetwork is true",
        ),
        (
            {
                "hostNetwork": True,
                "securityContext": {"sysctls": [{"name": "net/ipv4/ip_forward", "value": "1"}]},
            },
            "may not be set when hostNetwork is true",
        ),
        (
            {
                "hostIPC": True,
                "securityContext": {"sysctls": [{"name": "kernel.shmmax", "value": "1"}]},
            },
            "sysctls[0].name: may not be set when hostIPC is true",
        ),
        (
            {
                "hostIPC": True,
                "securityContext": {"sysctls": [{"name": "fs.mqueue.msg_max", "value": "1"}]},
            },
            "may not be set when hostIPC is true",
        ),
        (
            {"terminationGracePeriodSeconds": 5},  # the sleep must fit in the pod's grace period
            "preStop.sleep.seconds: must be at most",
        ),
        ({"terminationGracePeriodSeconds": None}, "preStop.sleep.seconds: must be at most"),
    ],
)
def test_rules_that_read_the_rest_of_the_spec(spec: dict[str, Any], problem: str) -> None:
    pod = _pod_with(**spec)
    pod["spec"]["containers"][0]["lifecycle"] = {"preStop": {"sleep": {"seconds": 31}}}
    problems = pod_problems(pod)
    assert any(problem in p for p in problems), problems


WINDOWS = {"name": "windows"}
HOST_PROCESS = {"windowsOptions": {"hostProcess": True}}


def _windows_pod(**spec: Any) -> dict[str, Any]:
    """VALID_POD made a Windows pod: its runner container's runAsUser is a Linux field."""
    pod = _pod_with(os=WINDOWS, **spec)
    pod["spec"]["containers"][0].pop("securityContext")
    return pod


def _container(name: str, **fields: Any) -> dict[str, Any]:
    return {"name": name, "image": "mcr.microsoft.com/windows/nanoserver:ltsc2022", **fields}


@pytest.mark.parametrize(
    "pod",
    [
        _pod_with(os={"name": "linux"}),  # runAsUser: a Linux field
        _windows_pod(
            securityContext={"windowsOptions": {"runAsUserName": "ContainerUser"}},
            hostPID=False,
            hostIPC=False,
        ),
        _windows_pod(  # a HostProcess pod: every container inherits it, on the host's network
            securityContext=HOST_PROCESS,
            hostNetwork=True,
            initContainers=[_container("setup", securityContext=HOST_PROCESS)],
        ),
        _pod_with(  # no OS named: a pod may set both kinds of fields
            securityContext={"windowsOptions": {"gmsaCredentialSpecName": "ci"}}
        ),
    ],
)
def test_fields_of_the_pods_own_os_are_no_problem(pod: dict[str, Any]) -> None:
    assert pod_problems(pod) == []
    kubernetes_validate.validate(pod, K8S_VERSION, strict=True)


@pytest.mark.parametrize(
    ("pod", "problem"),
    [
        (_pod_with(os={"name": "macos"}), "spec.os.name: must be one of linux, windows"),
        (
            _pod_with(os={"name": "linux"}, securityContext=HOST_PROCESS),
            "spec.securityContext.windowsOptions: may not be set for a linux pod",
        ),
        (
            _pod_with(os=WINDOWS),
            "spec.containers[runner].securityContext.runAsUser: may not be set for a windows pod",
        ),
        (
            _windows_pod(securityContext={"fsGroup": 1000}),
            "spec.securityContext.fsGroup: may not be set for a windows pod",
        ),
        (
            _windows_pod(securityContext={"supplementalGroups": []}),
            "spec.securityContext.supplementalGroups: may not be set for a windows pod",
        ),
        (
            _windows_pod(securityContext={"sysctls": [{"name": "kernel.msgmax", "value": "1"}]}),
            "spec.securityContext.sysctls: may not be set for a windows pod",
        ),
        (_windows_pod(hostPID=True), "spec.hostPID: may not be set for a windows pod"),
        (
            _windows_pod(shareProcessNamespace=False),
            "spec.shareProcessNamespace: may not be set for a windows pod",
        ),
        (_windows_pod(hostUsers=True), "spec.hostUsers: may not be set for a windows pod"),
        (
            _windows_pod(
                initContainers=[_container("setup", securityContext={"privileged": False})]
            ),
            "spec.initContainers[setup].securityContext.privileged: may not be set for a windows",
        ),
        (
            _windows_pod(securityContext=HOST_PROCESS),
            "spec.hostNetwork: must be true with HostProcess containers",
        ),
        (
            _windows_pod(
                hostNetwork=True,
                initContainers=[_container("setup", securityContext=HOST_PROCESS)],
            ),
            "spec: every container must be a HostProcess container when one is",
        ),
        (
            _windows_pod(
                hostNetwork=True,
                securityContext=HOST_PROCESS,
                initContainers=[
                    _container("setup", securityContext={"windowsOptions": {"hostProcess": False}})
                ],
            ),
            "initContainers[setup].securityContext.windowsOptions.hostProcess: must be the pod's",
        ),
    ],
)
def test_fields_of_another_os_than_the_pods_are_problems(pod: dict[str, Any], problem: str) -> None:
    problems = pod_problems(pod)
    assert any(problem in p for p in problems), problems
    assert schema_problems(pod) == []


def test_sysctls_of_another_namespace_than_the_hosts_are_no_problem() -> None:
    """Only the sysctls of a namespace the pod shares with the host are refused
    (`ValidateHostSysctl`): kernel.* beside hostNetwork, net.* beside hostIPC."""
    sysctls = [
        {"name": "kernel.shm_rmid_forced", "value": "1"},
        {"name": "kernel.shmx", "value": "1"},
    ]
    pod = _pod_with(hostNetwork=True, securityContext={"sysctls": sysctls})
    pod["spec"]["containers"][0]["ports"] = []
    assert pod_problems(pod) == []
    ipc = _pod_with(
        hostIPC=True,
        securityContext={
            "sysctls": [
                {"name": "net.core.somaxconn", "value": "1"},
                {"name": "kernel.shmx", "value": "1"},
            ]
        },
    )
    assert pod_problems(ipc) == []
    # the grace period a sleep may reach defaults to 30
    unset = _pod_with(terminationGracePeriodSeconds=None)
    unset["spec"]["containers"][0]["lifecycle"] = {"preStop": {"sleep": {"seconds": 30}}}
    assert pod_problems(unset) == []


def test_messages_of_the_ported_rules_never_quote_a_value() -> None:
    runner = copy.deepcopy(VALID_POD["spec"]["containers"][0])
    runner["livenessProbe"] = {
        "httpGet": {
            "port": SECRET,
            "scheme": SECRET,
            "httpHeaders": [{"name": SECRET, "value": SECRET}],
        }
    }
    runner["readinessProbe"] = {"tcpSocket": {"port": SECRET}}
    runner["envFrom"] = [{"configMapRef": {"name": SECRET}, "prefix": SECRET + "="}]
    runner["securityContext"] = {
        "seccompProfile": {"type": SECRET, "localhostProfile": "/" + SECRET},
        "appArmorProfile": {"type": "Localhost", "localhostProfile": " " + SECRET},
    }
    selector = {
        "matchExpressions": [{"key": SECRET + "!", "operator": SECRET, "values": [SECRET + "!"]}]
    }
    pod = _pod_with(
        containers=[runner],
        affinity={
            "nodeAffinity": {
                TERM: {
                    "nodeSelectorTerms": [
                        {
                            **selector,
                            "matchFields": [{"key": SECRET, "operator": "In", "values": [SECRET]}],
                        }
                    ]
                }
            },
            "podAffinity": {
                TERM: [
                    {
                        "topologyKey": SECRET + "!",
                        "labelSelector": selector,
                        "namespaces": [SECRET],
                        "matchLabelKeys": [SECRET + "!", SECRET + "!"],
                        "mismatchLabelKeys": [SECRET + "!"],
                    }
                ]
            },
        },
        securityContext={
            "sysctls": [{"name": SECRET, "value": SECRET}],
            "seccompProfile": {"type": "Localhost", "localhostProfile": "../" + SECRET},
        },
        volumes=[{"name": "work", "hostPath": {"path": "/../" + SECRET, "type": SECRET}}],
        topologySpreadConstraints=[
            _spread(
                topologyKey=SECRET,
                nodeAffinityPolicy=SECRET,
                labelSelector={"matchLabels": {SECRET + "!": SECRET + "!"}},
                matchLabelKeys=[SECRET],
            )
        ]
        * 2,
    )
    problems = pod_problems(pod)
    assert len(problems) >= 20, problems
    assert not any(SECRET in p or SECRET.lower()[:12] in p for p in problems), problems


_PORTED_KEYS = [
    *("exec", "httpGet", "tcpSocket", "grpc", "sleep", "port", "scheme", "httpHeaders"),
    *("name", "command", "seconds", "successThreshold", "periodSeconds", "postStart", "preStop"),
    *("terminationGracePeriodSeconds", "nodeAffinity", "podAffinity", "podAntiAffinity", TERM),
    *(PREFERRED, "nodeSelectorTerms", "matchExpressions", "matchFields", "matchLabels", "key"),
    *("operator", "values", "weight", "preference", "podAffinityTerm", "topologyKey"),
    *("namespaces", "labelSelector", "namespaceSelector", "configMapRef", "secretRef", "prefix"),
    *("type", "localhostProfile", "seccompProfile", "appArmorProfile", "sysctls", "path"),
    *("restartPolicy", "livenessProbe", "lifecycle", "image", "matchLabelKeys"),
    *("mismatchLabelKeys", "maxSkew", "whenUnsatisfiable", "minDomains", "nodeTaintsPolicy"),
    *("windowsOptions", "hostProcess", "runAsUser", "fsGroup", "supplementalGroups"),
]
_PORTED_WORDS = [
    *("In", "Exists", "Gt", "Localhost", "Always", "HTTP", "net.core.x", "metadata.name"),
    *("a", RUNNER_LABEL, "DoNotSchedule", "Honor", "windows", "linux"),
]
shaped_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.text(max_size=8)
    | st.sampled_from(_PORTED_WORDS),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(st.sampled_from(_PORTED_KEYS), inner, max_size=4)
    ),
    max_leaves=16,
)
PORTED_PATHS = [
    f"{C0}.livenessProbe",
    f"{C0}.readinessProbe",
    f"{C0}.startupProbe",
    f"{C0}.lifecycle",
    f"{C0}.envFrom",
    f"{C0}.restartPolicy",
    f"{C0}.securityContext",
    "spec.affinity",
    "spec.securityContext",
    "spec.os",
    SPREADS,
    "spec.volumes.0.hostPath",
    "spec.terminationGracePeriodSeconds",
    "spec.initContainers",
]


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(path=st.sampled_from(PORTED_PATHS), value=json_values | shaped_values)
def test_any_content_of_the_ported_fields_gives_problems_never_an_error(
    path: str, value: Any
) -> None:
    """Arbitrary values in the fields of the ported rules: a list of problems, never an error,
    from the whole check and (but for containers, whose names the rules hash) from the rules
    alone, which read them without the schema's guard."""
    pod = _mutated(path, value)
    problems = pod_problems(pod)
    assert isinstance(problems, list) and all(isinstance(p, str) for p in problems)
    if path != "spec.initContainers":
        assert all(isinstance(p, str) for p in rule_problems(pod))
    if not problems:
        kubernetes_validate.validate(pod, K8S_VERSION, strict=False)


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
        # Kubernetes container mode's work volume is an ephemeral volume of this claim spec.
        (
            {
                "containerMode": "kubernetes",
                "workVolumeClaimTemplate": {"accessModes": ["ReadWriteOnce"]},
            },
            "ephemeral.volumeClaimTemplate.spec.resources.requests[storage]: required",
        ),
        (
            {
                "containerMode": "kubernetes",
                "workVolumeClaimTemplate": {
                    "accessModes": ["ReadWriteSometimes"],
                    "resources": {"requests": {"storage": "1Gi"}},
                },
            },
            "ephemeral.volumeClaimTemplate.spec.accessModes",
        ),
        (
            {"volumes": [{"name": "scratch", "ephemeral": {}}]},
            "volumes[scratch].ephemeral.volumeClaimTemplate: required",
        ),
        (
            {
                "volumes": [
                    {
                        "name": "scratch",
                        "ephemeral": {
                            "volumeClaimTemplate": {
                                "spec": {
                                    "accessModes": ["ReadWriteOnce"],
                                    "resources": {"requests": {"storage": "0"}},
                                }
                            }
                        },
                    }
                ]
            },
            "requests[storage]: must be more than zero",
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
            "volumes": [
                {
                    "name": "scratch",
                    "ephemeral": {
                        "volumeClaimTemplate": {
                            "spec": {
                                "accessModes": ["ReadWriteOnce"],
                                "storageClassName": "fast-ssd",
                                "resources": {"requests": {"storage": "20Gi"}},
                            }
                        }
                    },
                }
            ],
            "volumeMounts": [{"name": "scratch", "mountPath": "/scratch"}],
        },
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
        ({"organization": "acme", "serviceAccountName": SECRET}, "spec.serviceAccountName"),
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


INT32_MAX, INT64_MAX = 2**31 - 1, 2**63 - 1
TOLERATION = {"key": "k", "operator": "Exists", "effect": "NoExecute"}
ISCSI = {"targetPortal": "10.0.0.1:3260", "iqn": "iqn.2001-04.com.example:storage", "lun": 0}


def _integer_fields(int32: int, int64: int) -> list[tuple[str, Any, str]]:
    """Integer fields of the int32 and int64 formats, with their values at `int32`, `int64`."""
    return [
        (SPREADS, [_spread(maxSkew=int32)], "maxSkew"),
        (f"{C0}.livenessProbe", {**EXEC, "periodSeconds": int32}, "periodSeconds"),
        ("spec.terminationGracePeriodSeconds", int64, "terminationGracePeriodSeconds"),
        (SPREADS, [_spread(minDomains=int32)], "minDomains"),
        ("spec.tolerations", [{**TOLERATION, "tolerationSeconds": int64}], "tolerationSeconds"),
        ("spec.volumes.0", {"name": "work", "iscsi": {**ISCSI, "lun": int32}}, "iscsi.lun"),
        (
            "spec.volumes.0",
            {"name": "work", "fc": {"targetWWNs": ["500a0982991b8dc5"], "lun": int32}},
            "fc.lun",
        ),
        (
            "spec.volumes.0",
            {"name": "work", "awsElasticBlockStore": {"volumeID": "vol-1", "partition": int32}},
            "awsElasticBlockStore.partition",
        ),
        (
            "spec.volumes.0",
            _projected({"serviceAccountToken": {"path": "t", "expirationSeconds": int64}}),
            "expirationSeconds",
        ),
    ]


@pytest.mark.parametrize(("path", "value", "field"), _integer_fields(INT32_MAX, INT64_MAX))
def test_integers_at_the_top_of_their_format_are_no_type_problem(
    path: str, value: Any, field: str
) -> None:
    pod = _mutated(path, value)
    assert schema_problems(pod) == [], field


@pytest.mark.parametrize(("path", "value", "field"), _integer_fields(INT32_MAX + 1, INT64_MAX + 1))
def test_integers_past_their_format_are_a_problem(path: str, value: Any, field: str) -> None:
    """The API server cannot read such a number into its int32 or int64 field."""
    problems = pod_problems(_mutated(path, value))
    assert any(field in p and "must be between" in p for p in problems), problems


@pytest.mark.parametrize(
    ("path", "value", "problem"),
    [
        (
            "spec.volumes.0",
            {"name": "work", "secret": {"secretName": "s", "defaultMode": 1000.0}},
            "secret.defaultMode: must be a file mode",
        ),
        (
            "spec.volumes.0",
            {
                "name": "work",
                "configMap": {"name": "c", "items": [{"key": "k", "path": "p", "mode": 512.0}]},
            },
            "mode: must be a file mode",
        ),
        ("spec.tolerations", [{**TOLERATION, "tolerationSeconds": 1e19}], "tolerationSeconds"),
        (SPREADS, [_spread(maxSkew=0.0)], "maxSkew"),
    ],
)
def test_whole_floats_are_judged_as_the_integers_they_arrive_as(
    path: str, value: Any, problem: str
) -> None:
    """Metacontroller decodes an answer's `1000.0` into the integer 1000: its range is checked."""
    problems = pod_problems(_mutated(path, value))
    assert any(problem in p for p in problems), problems


def test_a_whole_float_within_range_is_no_problem_and_a_fraction_is_one() -> None:
    mode = {"name": "work", "secret": {"secretName": "s", "defaultMode": 420.0}}
    assert pod_problems(_mutated("spec.volumes.0", mode)) == []
    fraction = {"name": "work", "secret": {"secretName": "s", "defaultMode": 420.5}}
    assert pod_problems(_mutated("spec.volumes.0", fraction)) == [
        "spec.volumes[0].secret.defaultMode: must be of type integer"
    ]
