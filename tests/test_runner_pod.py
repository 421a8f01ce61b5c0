"""The runner Pod, table-driven like ARC's TestNewRunnerPod: each case is a Runner spec and the
exact pod expected, written as a change to the default pod (tests/fixtures/pods/).

ARC's own rows are ported in tests/test_arc_runner_pod.py; this table covers what they leave
out: further ARC behaviour (SELinux, MTU, registry mirror, kubernetes mode, pass-through fields,
merging of user containers, ...) and this project's own (registration from a Secret, JIT)."""

from __future__ import annotations

import copy
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml

from hooks.resources.runner import Runner
from hooks.runner.pod import (
    DOCKER_CONTAINER,
    DOCKER_PRESTOP_SCRIPT,
    POD_TEMPLATE_HASH_LABEL,
    RUNNER_CONTAINER,
    build_runner_pod,
    jit_default_image,
    pod_template_hash,
)
from hooks.runner.secret import JIT_CONFIG_KEY, TOKEN_KEY
from hooks.settings import DEFAULT_JIT_RUNNER_IMAGE, Settings

Manifest = dict[str, Any]
Mutation = Callable[[Manifest], None]

K8S_VERSION = "1.33.0"
FIXTURES = Path(__file__).parent / "fixtures" / "pods"
RUNNER_NAME = "example-runner"
SECRET_NAME = "example-runner-registration"

# Every setting the pod reads, given explicitly so the environment of the test run cannot leak in.
BASE_SETTINGS: dict[str, Any] = {
    "RUNNER_IMAGE": "default-runner-image",
    "RUNNER_JIT_IMAGE": "default-runner-image",
    "DOCKER_IMAGE": "default-docker-image",
    "DOCKER_GID": "1234",
    "DOCKER_REGISTRY_MIRROR": "",
    "RUNNER_IMAGE_PULL_SECRETS": "",
    "GITHUB_RUNNER_GITHUB_URL": "https://github.com",
    "GITHUB_ENTERPRISE_URL": None,
}

# A GitHub registration token is 29 upper-case alphanumerics; PATs and app tokens have prefixes.
TOKEN_LIKE = re.compile(r"^([A-Z0-9]{29}|gh[pousr]_[A-Za-z0-9_]+)$")
REGISTRATION_ENV = ("RUNNER_TOKEN", "ACTIONS_RUNNER_INPUT_JITCONFIG")


# ------------------------------------------------------------------ building and checking


def settings_with(**overrides: Any) -> Settings:
    return Settings.model_validate({**BASE_SETTINGS, **overrides})


def new_runner(spec: Manifest, metadata: Manifest | None = None) -> Runner:
    meta = {"name": RUNNER_NAME, "namespace": "default", **(metadata or {})}
    return Runner.model_validate(
        {"metadata": meta, "spec": {"organization": "example-org", **spec}}
    )


def build(
    spec: Manifest,
    *,
    jit: bool = False,
    settings: Settings | None = None,
    metadata: Manifest | None = None,
) -> Manifest:
    """Build a pod and check what holds for every pod: valid for Kubernetes, no token literal."""
    pod = build_runner_pod(
        new_runner(spec, metadata),
        settings or settings_with(),
        secret_name=SECRET_NAME,
        jit=jit,
    )
    kubernetes_validate.validate(pod, K8S_VERSION, strict=True)
    assert_no_registration_literal(pod)
    return pod


def assert_no_registration_literal(pod: Manifest) -> None:
    spec = pod["spec"]
    for container in spec["containers"] + spec.get("initContainers", []):
        for env in container.get("env", []):
            if env["name"] in REGISTRATION_ENV:
                assert "value" not in env, f"{env['name']} must come from a Secret"
    for text in strings_in(pod):
        assert not TOKEN_LIKE.match(text), f"token-looking literal in the pod: {text!r}"


def strings_in(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield key
            yield from strings_in(item)
    elif isinstance(value, list):
        for item in value:
            yield from strings_in(item)


def default_pod() -> Manifest:
    loaded = yaml.safe_load((FIXTURES / "default-sidecar.yaml").read_text())
    assert isinstance(loaded, dict)
    return loaded


def without_hash(pod: Manifest) -> Manifest:
    stripped = copy.deepcopy(pod)
    stripped["metadata"]["labels"].pop(POD_TEMPLATE_HASH_LABEL, None)
    return stripped


def env_of(pod: Manifest, container_name: str = RUNNER_CONTAINER) -> dict[str, Any]:
    """name -> value (or valueFrom) of a container's env."""
    env = container(pod, container_name).get("env", [])
    return {e["name"]: e.get("value", e.get("valueFrom")) for e in env}


# ------------------------------------------------------------------ expected-pod mutations


def container(pod: Manifest, name: str) -> Manifest:
    matches: list[Manifest] = [c for c in pod["spec"]["containers"] if c["name"] == name]
    assert len(matches) == 1, f"expected one {name!r} container"
    return matches[0]


def compose(*mutations: Mutation) -> Mutation:
    def apply(pod: Manifest) -> None:
        for mutation in mutations:
            mutation(pod)

    return apply


def unchanged(pod: Manifest) -> None:
    """The default pod as it is."""


def set_env(name: str, value: str, in_container: str = RUNNER_CONTAINER) -> Mutation:
    def apply(pod: Manifest) -> None:
        entries = [e for e in container(pod, in_container)["env"] if e["name"] == name]
        assert len(entries) == 1, name
        entries[0]["value"] = value

    return apply


def drop_env(name: str) -> Mutation:
    def apply(pod: Manifest) -> None:
        runner = container(pod, RUNNER_CONTAINER)
        runner["env"] = [e for e in runner["env"] if e["name"] != name]

    return apply


def add_env_before_registration(*entries: Manifest) -> Mutation:
    """Insert runner env where ARC puts mode-specific env: before RUNNER_NAME and the token."""

    def apply(pod: Manifest) -> None:
        env = container(pod, RUNNER_CONTAINER)["env"]
        at = next(i for i, e in enumerate(env) if e["name"] == "RUNNER_NAME")
        env[at:at] = list(entries)

    return apply


def set_in(in_container: str, key: str, value: Any) -> Mutation:
    def apply(pod: Manifest) -> None:
        container(pod, in_container)[key] = copy.deepcopy(value)

    return apply


def set_spec(key: str, value: Any) -> Mutation:
    def apply(pod: Manifest) -> None:
        pod["spec"][key] = copy.deepcopy(value)

    return apply


def docker_gid(value: str) -> Mutation:
    return set_env("DOCKER_GROUP_GID", value, in_container=DOCKER_CONTAINER)


def runner_image(image: str) -> Mutation:
    return set_in(RUNNER_CONTAINER, "image", image)


def runner_only(pod: Manifest) -> None:
    pod["spec"]["containers"] = [container(pod, RUNNER_CONTAINER)]


def runner_volume_only(pod: Manifest) -> None:
    """No sidecar: the work dir lives inside the /runner volume, no /run to share."""
    drop_env("DOCKER_HOST")(pod)
    container(pod, RUNNER_CONTAINER)["volumeMounts"] = [MOUNT_RUNNER]
    pod["spec"]["volumes"] = [VOLUME_RUNNER]


def no_runner_volume(pod: Manifest) -> None:
    container(pod, RUNNER_CONTAINER).pop("volumeMounts")
    pod["spec"].pop("volumes")


dind_in_runner = compose(
    runner_only,
    runner_volume_only,
    set_env("DOCKERD_IN_RUNNER", "true"),
    set_in(RUNNER_CONTAINER, "securityContext", {"privileged": True}),
)

docker_disabled = compose(runner_only, runner_volume_only, set_env("DOCKER_ENABLED", "false"))

MOUNT_RUNNER = {"name": "runner", "mountPath": "/runner"}
MOUNT_WORK = {"name": "work", "mountPath": "/runner/_work"}
MOUNT_VAR_RUN = {"name": "var-run", "mountPath": "/run"}
VOLUME_RUNNER = {"name": "runner", "emptyDir": {}}
VOLUME_VAR_RUN = {"name": "var-run", "emptyDir": {"medium": "Memory", "sizeLimit": "1M"}}
SELINUX = {"seLinuxOptions": {"level": "s0:c123,c456"}}

CLAIM_SPEC = {
    "storageClassName": "fast",
    "accessModes": ["ReadWriteOnce"],
    "resources": {"requests": {"storage": "10Gi"}},
}
EPHEMERAL_WORK = {"name": "work", "ephemeral": {"volumeClaimTemplate": {"spec": CLAIM_SPEC}}}

KUBERNETES_ENV = (
    {"name": "ACTIONS_RUNNER_CONTAINER_HOOKS", "value": "/runner/k8s/index.js"},
    {"name": "ACTIONS_RUNNER_REQUIRE_JOB_CONTAINER", "value": "true"},
    {
        "name": "ACTIONS_RUNNER_POD_NAME",
        "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}},
    },
    {
        "name": "ACTIONS_RUNNER_JOB_NAMESPACE",
        "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}},
    },
)


def kubernetes_mode(claim_spec: Manifest, *extra_env: Manifest) -> Mutation:
    """No dind; `work` is a generic ephemeral volume mounted before /runner (ARC's order)."""
    work = {"name": "work", "ephemeral": {"volumeClaimTemplate": {"spec": claim_spec}}}
    return compose(
        runner_only,
        drop_env("DOCKER_HOST"),
        set_env("DOCKER_ENABLED", "false"),
        add_env_before_registration(*KUBERNETES_ENV, *extra_env),
        set_in(RUNNER_CONTAINER, "volumeMounts", [MOUNT_WORK, MOUNT_RUNNER]),
        set_spec("volumes", [work, VOLUME_RUNNER]),
    )


# ------------------------------------------------------------------ the table


@dataclass(frozen=True)
class PodCase:
    description: str
    spec: Manifest
    want: Mutation
    settings: Manifest = field(default_factory=dict)
    jit: bool = False

    def __str__(self) -> str:
        return self.description


# ARC's TestNewRunnerPod and TestNewRunnerPodFromRunnerController rows are in test_arc_runner_pod.
CASES = [
    PodCase(
        "24.04 runner image: gid 121",
        {"image": "example/runner:ubuntu-24.04"},
        compose(runner_image("example/runner:ubuntu-24.04"), docker_gid("121")),
    ),
    PodCase(
        "22.04 default image from settings: gid 121",
        {},
        compose(runner_image("example/runner:22.04"), docker_gid("121")),
        settings={"RUNNER_IMAGE": "example/runner:22.04"},
    ),
    PodCase(
        "SELinux options: dind in the runner is not privileged",
        {"dockerdWithinRunnerContainer": True, "securityContext": SELINUX},
        compose(
            dind_in_runner,
            lambda pod: container(pod, RUNNER_CONTAINER).pop("securityContext"),
            set_spec("securityContext", SELINUX),
        ),
    ),
    PodCase(
        "SELinux options: the sidecar carries them, privileged false",
        {"securityContext": SELINUX},
        compose(
            set_in(DOCKER_CONTAINER, "securityContext", {"privileged": False, **SELINUX}),
            set_spec("securityContext", SELINUX),
        ),
    ),
    PodCase(
        # As ARC (runner_controller.go, newRunnerPodWithContainerMode): dockerd needs it.
        "dind in the runner overrides the runner container's privileged: false",
        {
            "dockerdWithinRunnerContainer": True,
            "containers": [
                {"name": "runner", "securityContext": {"privileged": False, "runAsUser": 0}}
            ],
        },
        compose(
            dind_in_runner,
            set_in(RUNNER_CONTAINER, "securityContext", {"privileged": True, "runAsUser": 0}),
        ),
    ),
    PodCase(
        # As ARC: its defaults apply only to a docker container without a securityContext.
        "docker container's own securityContext kept as written",
        {"containers": [{"name": "docker", "securityContext": {"runAsUser": 0}}]},
        set_in(DOCKER_CONTAINER, "securityContext", {"runAsUser": 0}),
    ),
    PodCase(
        "docker container's empty securityContext kept as written",
        {"containers": [{"name": "docker", "securityContext": {}}]},
        set_in(DOCKER_CONTAINER, "securityContext", {}),
    ),
    PodCase(
        "MTU and registry mirror with the sidecar",
        {"dockerMTU": 1400, "dockerRegistryMirror": "https://mirror.example.com/"},
        compose(
            set_in(
                DOCKER_CONTAINER,
                "args",
                [
                    "dockerd",
                    "--host=unix:///run/docker.sock",
                    "--group=$(DOCKER_GROUP_GID)",
                    "--mtu",
                    "1400",
                    "--registry-mirror=https://mirror.example.com/",
                ],
            ),
            set_in(
                DOCKER_CONTAINER,
                "env",
                [
                    {"name": "DOCKER_GROUP_GID", "value": "1234"},
                    {"name": "DOCKERD_ROOTLESS_ROOTLESSKIT_MTU", "value": "1400"},
                ],
            ),
        ),
    ),
    PodCase(
        "MTU and registry mirror with dind in the runner",
        {
            "dockerdWithinRunnerContainer": True,
            "dockerMTU": 1400,
            "dockerRegistryMirror": "https://mirror.example.com/",
        },
        compose(
            dind_in_runner,
            add_env_before_registration(
                {"name": "MTU", "value": "1400"},
                {"name": "DOCKER_REGISTRY_MIRROR", "value": "https://mirror.example.com/"},
            ),
        ),
    ),
    PodCase(
        "registry mirror from settings",
        {},
        set_in(
            DOCKER_CONTAINER,
            "args",
            [
                "dockerd",
                "--host=unix:///run/docker.sock",
                "--group=$(DOCKER_GROUP_GID)",
                "--registry-mirror=https://settings-mirror.example.com/",
            ],
        ),
        settings={"DOCKER_REGISTRY_MIRROR": "https://settings-mirror.example.com/"},
    ),
    PodCase(
        "spec registry mirror empty overrides settings",
        {"dockerRegistryMirror": ""},
        unchanged,
        settings={"DOCKER_REGISTRY_MIRROR": "https://settings-mirror.example.com/"},
    ),
    PodCase(
        "user work volume replaces the default, mounted through spec.volumeMounts",
        {"volumeMounts": [MOUNT_WORK], "volumes": [EPHEMERAL_WORK]},
        compose(
            set_spec("volumes", [VOLUME_RUNNER, VOLUME_VAR_RUN, EPHEMERAL_WORK]),
            set_in(RUNNER_CONTAINER, "volumeMounts", [MOUNT_RUNNER, MOUNT_VAR_RUN, MOUNT_WORK]),
        ),
    ),
    PodCase(
        "kubernetes mode, ReadWriteOnce work claim: same node required",
        {"containerMode": "kubernetes", "workVolumeClaimTemplate": CLAIM_SPEC},
        kubernetes_mode(CLAIM_SPEC, {"name": "ACTIONS_RUNNER_REQUIRE_SAME_NODE", "value": "true"}),
    ),
    PodCase(
        "kubernetes mode, ReadWriteMany work claim, explicit work mount kept",
        {
            "containerMode": "kubernetes",
            "workVolumeClaimTemplate": {**CLAIM_SPEC, "accessModes": ["ReadWriteMany"]},
            "containers": [
                {"name": "runner", "volumeMounts": [{**MOUNT_WORK, "subPath": "jobs"}]},
                {"name": "docker", "image": "docker:dind"},
            ],
        },
        compose(
            kubernetes_mode(
                {**CLAIM_SPEC, "accessModes": ["ReadWriteMany"]},
                {"name": "ACTIONS_RUNNER_REQUIRE_SAME_NODE", "value": "false"},
            ),
            set_in(
                RUNNER_CONTAINER, "volumeMounts", [{**MOUNT_WORK, "subPath": "jobs"}, MOUNT_RUNNER]
            ),
        ),
    ),
    PodCase(
        "kubernetes mode without a claim template (invalid) still gives a valid pod",
        {"containerMode": "kubernetes"},
        compose(
            kubernetes_mode({}),
            set_spec("volumes", [{"name": "work", "emptyDir": {}}, VOLUME_RUNNER]),
        ),
    ),
    PodCase(
        "user containers merged: spec values fill only what they leave empty",
        {
            "containers": [
                {"name": "metrics", "image": "example/metrics"},
                {
                    "name": "docker",
                    "env": [{"name": "DOCKER_GROUP_GID", "value": "3000"}],
                    "volumeMounts": [{"name": "certs", "mountPath": "/certs"}],
                },
                {
                    "name": "runner",
                    "image": "example/own-runner",
                    "env": [{"name": "OWN", "value": "1"}],
                    "resources": {"limits": {"cpu": "2"}},
                },
            ],
            "env": [{"name": "FROM_SPEC", "value": "ignored"}],
            "envFrom": [{"configMapRef": {"name": "runner-env"}}],
            "resources": {"requests": {"cpu": "1"}, "limits": {"cpu": "4"}},
            "imagePullPolicy": "IfNotPresent",
            "dockerEnv": [{"name": "FROM_SPEC", "value": "ignored"}],
            "dockerVolumeMounts": [{"name": "ignored", "mountPath": "/ignored"}],
            "dockerdContainerResources": {"limits": {"memory": "1Gi"}},
            "sidecarContainers": [{"name": "cache", "image": "example/cache"}],
        },
        compose(
            runner_image("example/own-runner"),
            set_in(RUNNER_CONTAINER, "imagePullPolicy", "IfNotPresent"),
            set_in(RUNNER_CONTAINER, "envFrom", [{"configMapRef": {"name": "runner-env"}}]),
            set_in(
                RUNNER_CONTAINER, "resources", {"limits": {"cpu": "2"}, "requests": {"cpu": "1"}}
            ),
            lambda pod: container(pod, RUNNER_CONTAINER)["env"].insert(
                0, {"name": "OWN", "value": "1"}
            ),
            docker_gid("3000"),
            set_in(
                DOCKER_CONTAINER,
                "volumeMounts",
                [{"name": "certs", "mountPath": "/certs"}, MOUNT_RUNNER, MOUNT_VAR_RUN, MOUNT_WORK],
            ),
            set_in(DOCKER_CONTAINER, "resources", {"limits": {"memory": "1Gi"}}),
            lambda pod: pod["spec"]["containers"].extend(
                [
                    {"name": "metrics", "image": "example/metrics"},
                    {"name": "cache", "image": "example/cache"},
                ]
            ),
        ),
    ),
    PodCase(
        "runner and docker settings of the spec, without containers",
        {
            "env": [{"name": "FROM_SPEC", "value": "1"}],
            "envFrom": [{"secretRef": {"name": "runner-env"}}],
            "resources": {"requests": {"cpu": "1"}},
            "imagePullPolicy": "IfNotPresent",
            "volumeMounts": [{"name": "cache", "mountPath": "/cache"}],
            "volumes": [{"name": "cache", "emptyDir": {}}],
            "dockerEnv": [{"name": "DOCKER_FROM_SPEC", "value": "1"}],
            "dockerVolumeMounts": [{"name": "cache", "mountPath": "/cache"}],
            "dockerdContainerResources": {"requests": {"memory": "1Gi"}},
        },
        compose(
            set_in(RUNNER_CONTAINER, "imagePullPolicy", "IfNotPresent"),
            set_in(RUNNER_CONTAINER, "envFrom", [{"secretRef": {"name": "runner-env"}}]),
            set_in(RUNNER_CONTAINER, "resources", {"requests": {"cpu": "1"}}),
            lambda pod: container(pod, RUNNER_CONTAINER)["env"].insert(
                0, {"name": "FROM_SPEC", "value": "1"}
            ),
            lambda pod: container(pod, RUNNER_CONTAINER)["volumeMounts"].append(
                {"name": "cache", "mountPath": "/cache"}
            ),
            lambda pod: pod["spec"]["volumes"].append({"name": "cache", "emptyDir": {}}),
            lambda pod: container(pod, DOCKER_CONTAINER)["env"].insert(
                0, {"name": "DOCKER_FROM_SPEC", "value": "1"}
            ),
            lambda pod: container(pod, DOCKER_CONTAINER)["volumeMounts"].insert(
                0, {"name": "cache", "mountPath": "/cache"}
            ),
            set_in(DOCKER_CONTAINER, "resources", {"requests": {"memory": "1Gi"}}),
        ),
    ),
    PodCase(
        "runner volume size, medium and /run size",
        {
            "volumeSizeLimit": "10Gi",
            "volumeStorageMedium": "Memory",
            "dockerVarRunVolumeSizeLimit": "2M",
        },
        set_spec(
            "volumes",
            [
                {"name": "runner", "emptyDir": {"medium": "Memory", "sizeLimit": "10Gi"}},
                {"name": "work", "emptyDir": {}},
                {"name": "var-run", "emptyDir": {"medium": "Memory", "sizeLimit": "2M"}},
            ],
        ),
    ),
    PodCase(
        "volumeSizeLimit 0 disables the runner volume (dind in the runner)",
        {"dockerdWithinRunnerContainer": True, "volumeSizeLimit": 0},
        compose(dind_in_runner, no_runner_volume),
    ),
    PodCase(
        "volumeSizeLimit 0 disables the runner volume (docker disabled)",
        {"dockerEnabled": False, "volumeSizeLimit": "0Gi"},
        compose(docker_disabled, no_runner_volume),
    ),
    PodCase(
        "volumeSizeLimit 0 with the sidecar (invalid) keeps an unlimited runner volume",
        {"volumeSizeLimit": "0"},
        unchanged,
    ),
    PodCase(
        "custom workDir",
        {"workDir": "/work"},
        compose(
            set_env("RUNNER_WORKDIR", "/work"),
            set_in(
                RUNNER_CONTAINER,
                "volumeMounts",
                [MOUNT_RUNNER, {"name": "work", "mountPath": "/work"}, MOUNT_VAR_RUN],
            ),
            set_in(
                DOCKER_CONTAINER,
                "volumeMounts",
                [MOUNT_RUNNER, MOUNT_VAR_RUN, {"name": "work", "mountPath": "/work"}],
            ),
        ),
    ),
    PodCase(
        "repository scope, labels, group, persistent runner",
        {
            "organization": None,
            "repository": "example-org/example-repo",
            "labels": ["linux", "gpu"],
            "group": "builders",
            "ephemeral": False,
        },
        compose(
            set_env("RUNNER_ORG", ""),
            set_env("RUNNER_REPO", "example-org/example-repo"),
            set_env("RUNNER_LABELS", "linux,gpu"),
            set_env("RUNNER_GROUP", "builders"),
            set_env("RUNNER_EPHEMERAL", "false"),
        ),
    ),
    PodCase(
        "GITHUB_URL of a GitHub Enterprise Server",
        {},
        set_env("GITHUB_URL", "https://ghe.example.com/"),
        settings={
            "GITHUB_RUNNER_GITHUB_URL": None,
            "GITHUB_ENTERPRISE_URL": "https://ghe.example.com/api/v3",
        },
    ),
    PodCase(
        "JIT registration: the JIT config from the Secret, no RUNNER_TOKEN",
        {},
        compose(
            drop_env("RUNNER_TOKEN"),
            lambda pod: container(pod, RUNNER_CONTAINER)["env"].append(
                {
                    "name": "ACTIONS_RUNNER_INPUT_JITCONFIG",
                    "valueFrom": {"secretKeyRef": {"name": SECRET_NAME, "key": JIT_CONFIG_KEY}},
                }
            ),
        ),
        jit=True,
    ),
    PodCase(
        "user RUNNER_NAME and RUNNER_TOKEN kept",
        {
            "env": [
                {"name": "RUNNER_NAME", "value": "custom-name"},
                {
                    "name": "RUNNER_TOKEN",
                    "valueFrom": {"secretKeyRef": {"name": "own-secret", "key": "token"}},
                },
            ]
        },
        compose(
            drop_env("RUNNER_NAME"),
            drop_env("RUNNER_TOKEN"),
            lambda pod: container(pod, RUNNER_CONTAINER)["env"].__setitem__(
                slice(0, 0),
                [
                    {"name": "RUNNER_NAME", "value": "custom-name"},
                    {
                        "name": "RUNNER_TOKEN",
                        "valueFrom": {"secretKeyRef": {"name": "own-secret", "key": "token"}},
                    },
                ],
            ),
        ),
    ),
    PodCase(
        "user JIT config kept in JIT mode",
        {
            "env": [
                {
                    "name": "ACTIONS_RUNNER_INPUT_JITCONFIG",
                    "valueFrom": {"secretKeyRef": {"name": "own-secret", "key": "jit"}},
                }
            ]
        },
        compose(
            drop_env("RUNNER_TOKEN"),
            lambda pod: container(pod, RUNNER_CONTAINER)["env"].insert(
                0,
                {
                    "name": "ACTIONS_RUNNER_INPUT_JITCONFIG",
                    "valueFrom": {"secretKeyRef": {"name": "own-secret", "key": "jit"}},
                },
            ),
        ),
        jit=True,
    ),
]

# One row per pod field copied as-is from the Runner spec (ARC's pass-through list).
PASS_THROUGH = [
    ("initContainers", [{"name": "init", "image": "busybox", "command": ["true"]}]),
    ("nodeSelector", {"kubernetes.io/os": "linux"}),
    ("serviceAccountName", "runner-sa"),
    ("automountServiceAccountToken", False),
    ("securityContext", {"fsGroup": 1000, "runAsNonRoot": True}),
    ("imagePullSecrets", [{"name": "regcred"}]),
    (
        "affinity",
        {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [
                        {"matchExpressions": [{"key": "pool", "operator": "In", "values": ["ci"]}]}
                    ]
                }
            }
        },
    ),
    ("tolerations", [{"key": "ci", "operator": "Exists", "effect": "NoSchedule"}]),
    ("priorityClassName", "runner-priority"),
    ("terminationGracePeriodSeconds", 110),
    ("hostAliases", [{"ip": "10.0.0.1", "hostnames": ["ghe.internal"]}]),
    (
        "topologySpreadConstraints",
        [
            {
                "maxSkew": 1,
                "topologyKey": "kubernetes.io/hostname",
                "whenUnsatisfiable": "ScheduleAnyway",
                "labelSelector": {"matchLabels": {"actions-runner": ""}},
            }
        ],
    ),
    ("runtimeClassName", "gvisor"),
    ("dnsPolicy", "ClusterFirstWithHostNet"),
    (
        "dnsConfig",
        {"nameservers": ["10.0.0.53"], "options": [{"name": "ndots", "value": "2"}]},
    ),
    ("enableServiceLinks", False),
]

CASES += [
    PodCase(f"pass-through {key}", {key: value}, set_spec(key, value))
    for key, value in PASS_THROUGH
]
CASES += [
    PodCase(
        "ephemeralContainers are not copied: pod creation would be refused",
        {"ephemeralContainers": [{"name": "debug", "image": "busybox"}]},
        lambda pod: None,
    ),
    PodCase(
        "pass-through volumes: appended after the defaults",
        {"volumes": [{"name": "cache", "emptyDir": {}}]},
        lambda pod: pod["spec"]["volumes"].append({"name": "cache", "emptyDir": {}}),
    ),
    PodCase(
        "image pull secrets from settings",
        {},
        set_spec("imagePullSecrets", [{"name": "default-a"}, {"name": "default-b"}]),
        settings={"RUNNER_IMAGE_PULL_SECRETS": "default-a,default-b"},
    ),
    PodCase(
        "image pull secrets of the spec win over settings",
        {"imagePullSecrets": [{"name": "regcred"}]},
        set_spec("imagePullSecrets", [{"name": "regcred"}]),
        settings={"RUNNER_IMAGE_PULL_SECRETS": "default-a"},
    ),
]


# ------------------------------------------------------------------ tests


def test_default_pod_is_exactly_the_fixture() -> None:
    assert build({}) == default_pod()


@pytest.mark.parametrize("case", CASES, ids=str)
def test_new_runner_pod(case: PodCase) -> None:
    want = without_hash(default_pod())
    case.want(want)
    got = build(case.spec, jit=case.jit, settings=settings_with(**case.settings))
    assert without_hash(got) == want


def test_registration_token_comes_from_the_secret() -> None:
    env = env_of(build({}))
    assert env["RUNNER_TOKEN"] == {"secretKeyRef": {"name": SECRET_NAME, "key": TOKEN_KEY}}
    assert "ACTIONS_RUNNER_INPUT_JITCONFIG" not in env


def test_jit_config_comes_from_the_secret() -> None:
    env = env_of(build({}, jit=True))
    assert env["ACTIONS_RUNNER_INPUT_JITCONFIG"] == {
        "secretKeyRef": {"name": SECRET_NAME, "key": JIT_CONFIG_KEY}
    }
    assert "RUNNER_TOKEN" not in env


def test_the_docker_sidecar_always_gets_arcs_prestop_and_keeps_other_handlers() -> None:
    # ARC (runner_controller.go, newRunnerPodWithContainerMode) sets the sidecar's lifecycle to
    # its preStop whatever the spec says: dockerd must outlive the runner's registration.
    own = {
        "postStart": {"exec": {"command": ["true"]}},
        "preStop": {"exec": {"command": ["/bin/sh", "-c", "exit 0"]}},
    }
    pod = build({"containers": [{"name": "docker", "lifecycle": own}]})

    docker = next(c for c in pod["spec"]["containers"] if c["name"] == "docker")
    assert docker["lifecycle"] == {
        "postStart": own["postStart"],
        "preStop": {"exec": {"command": ["/bin/sh", "-c", DOCKER_PRESTOP_SCRIPT]}},
    }


@pytest.mark.parametrize(
    ("spec", "image", "command"),
    [
        # A spec naming no image gets RUNNER_JIT_IMAGE, GitHub's, started as ARC's scale-set
        # chart starts it.
        ({}, "ghcr.io/actions/actions-runner:latest", ["/home/runner/run.sh"]),
        (
            {"image": "mirror.example/actions/actions-runner:2.330.0"},
            "mirror.example/actions/actions-runner:2.330.0",
            ["/home/runner/run.sh"],
        ),
        # A command of the spec's own is kept; another image is taken as it is.
        (
            {"containers": [{"name": "runner", "command": ["/start.sh"]}]},
            "ghcr.io/actions/actions-runner:latest",
            ["/start.sh"],
        ),
        ({"image": "example.com/own-runner:1"}, "example.com/own-runner:1", None),
    ],
)
def test_a_jit_runner_gets_an_image_that_starts_from_its_jit_config(
    spec: Manifest, image: str, command: list[str] | None
) -> None:
    settings = settings_with(RUNNER_JIT_IMAGE="ghcr.io/actions/actions-runner:latest")
    runner = container(build(spec, jit=True, settings=settings), RUNNER_CONTAINER)

    assert (runner["image"], runner.get("command")) == (image, command)


@pytest.mark.parametrize(
    ("settings", "image"),
    [
        # RUNNER_IMAGE of the user's own serves JIT runners too (it may be JIT-ready)...
        ({"RUNNER_IMAGE": "registry.local/runner:1"}, "registry.local/runner:1"),
        # ...but not ARC's, which cannot start from a JIT config.
        ({"RUNNER_IMAGE": "summerwind/actions-runner:latest"}, DEFAULT_JIT_RUNNER_IMAGE),
        (
            {"RUNNER_IMAGE": "registry.local/runner:1", "RUNNER_JIT_IMAGE": "jit/runner:2"},
            "jit/runner:2",
        ),
    ],
)
def test_the_image_of_a_jit_runner_that_names_none(settings: Manifest, image: str) -> None:
    overrides = {"RUNNER_JIT_IMAGE": None, **settings}
    runner = container(build({}, jit=True, settings=settings_with(**overrides)), RUNNER_CONTAINER)

    assert runner["image"] == image


def test_githubs_image_finds_the_container_hooks_where_it_keeps_them() -> None:
    spec = {
        "containerMode": "kubernetes",
        "workVolumeClaimTemplate": {
            "storageClassName": "standard",
            "accessModes": ["ReadWriteOnce"],
            "resources": {"requests": {"storage": "1Gi"}},
        },
    }
    for image, hooks in (
        ("ghcr.io/actions/actions-runner:2.330.0", "/home/runner/k8s/index.js"),
        ("summerwind/actions-runner:latest", "/runner/k8s/index.js"),
    ):
        pod = build({**spec, "image": image}, jit=True, settings=settings_with())
        env = {e["name"]: e.get("value") for e in container(pod, RUNNER_CONTAINER)["env"]}
        assert env["ACTIONS_RUNNER_CONTAINER_HOOKS"] == hooks


def test_a_token_runner_keeps_runner_image() -> None:
    runner = container(build({}, settings=settings_with()), RUNNER_CONTAINER)

    assert runner["image"] == "default-runner-image" and "command" not in runner


def test_the_jit_image_default_is_githubs() -> None:
    assert DEFAULT_JIT_RUNNER_IMAGE == "ghcr.io/actions/actions-runner:latest"
    assert jit_default_image(Settings.model_validate({})) == DEFAULT_JIT_RUNNER_IMAGE


def test_restart_policy_is_forced_to_never() -> None:
    assert build({"dockerdWithinRunnerContainer": True})["spec"]["restartPolicy"] == "Never"


def test_metadata_copies_labels_and_annotations() -> None:
    metadata = {
        "labels": {
            "runner-deployment-name": "example",
            "runner-template-hash": "abc",
            "controller-uid": "uid-of-the-replica-set",
        },
        "annotations": {
            "team": "ci",
            "kubectl.kubernetes.io/last-applied-configuration": "{}",
            "metacontroller.k8s.io/last-applied-configuration": "{}",
        },
        "uid": "1234",
        "ownerReferences": [{"apiVersion": "v1", "kind": "X", "name": "x", "uid": "y"}],
    }
    spec = {"githubAPICredentialsFrom": {"secretRef": {"name": "github-app"}}}
    pod = build(spec, metadata=metadata)
    assert pod["metadata"]["labels"] == {
        "runner-deployment-name": "example",
        "runner-template-hash": "abc",
        "actions-runner": "",
        "actions-runner-controller/inject-registration-token": "true",
        POD_TEMPLATE_HASH_LABEL: pod_template_hash(pod),
    }
    assert pod["metadata"]["annotations"] == {
        "team": "ci",
        "actions-runner/github-api-creds-secret": "github-app",
    }
    # Metacontroller owns these: it adds the ownerReference and the controller-uid label.
    assert set(pod["metadata"]) == {"name", "namespace", "labels", "annotations"}
    assert pod["metadata"]["name"] == RUNNER_NAME
    assert pod["metadata"]["namespace"] == "default"


def test_hash_is_stable_for_equal_input() -> None:
    first = build({"labels": ["a", "b"], "dockerMTU": 1400})
    second = build({"labels": ["a", "b"], "dockerMTU": 1400})
    assert first == second
    labels = first["metadata"]["labels"]
    assert labels[POD_TEMPLATE_HASH_LABEL] == pod_template_hash(first)
    assert re.fullmatch(r"[0-9a-f]{10}", labels[POD_TEMPLATE_HASH_LABEL])


def test_hash_is_pinned_across_processes_and_versions() -> None:
    # The fixture's label was computed once; any Python that disagrees would replace every pod.
    assert pod_template_hash(default_pod()) == "f2e87a6e04"


@pytest.mark.parametrize(
    ("description", "spec", "settings"),
    [
        ("runner image", {"image": "example/other-runner"}, {}),
        ("default runner image", {}, {"RUNNER_IMAGE": "example/other-runner"}),
        ("docker image", {}, {"DOCKER_IMAGE": "docker:27-dind"}),
        ("runner labels", {"labels": ["gpu"]}, {}),
    ],
)
def test_hash_changes_with_the_template(
    description: str, spec: Manifest, settings: Manifest
) -> None:
    changed = build(spec, settings=settings_with(**settings))
    assert pod_label_hash(changed) != pod_label_hash(build({})), description


def test_hash_ignores_its_own_label() -> None:
    pod = build({})
    relabelled = copy.deepcopy(pod)
    relabelled["metadata"]["labels"][POD_TEMPLATE_HASH_LABEL] = "something-else"
    assert pod_template_hash(relabelled) == pod_label_hash(pod)


def test_building_does_not_touch_the_runner() -> None:
    runner = new_runner(
        {
            "containers": [{"name": "runner", "env": [{"name": "OWN", "value": "1"}]}],
            "volumes": [EPHEMERAL_WORK],
            "dockerEnv": [{"name": "X", "value": "1"}],
            "tolerations": [{"key": "ci", "operator": "Exists"}],
        }
    )
    before = runner.model_dump()
    pod = build_runner_pod(runner, settings_with(), secret_name=SECRET_NAME, jit=False)
    assert runner.model_dump() == before
    # The pod shares no mutable part with the Runner.
    pod["spec"]["containers"][0]["env"].clear()
    pod["spec"]["volumes"][-1]["ephemeral"].clear()
    pod["spec"]["tolerations"][0].clear()
    assert runner.model_dump() == before


def pod_label_hash(pod: Manifest) -> str:
    value = pod["metadata"]["labels"][POD_TEMPLATE_HASH_LABEL]
    assert isinstance(value, str)
    return value
