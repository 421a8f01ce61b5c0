"""Ported from actions/actions-runner-controller (Apache-2.0): `TestNewRunnerPod` and
`TestNewRunnerPodFromRunnerController` of controllers/actions.summerwind.net/new_runner_pod_test.go,
row by row.

Each row keeps ARC's description (the pytest id), its inputs, and its expected pod: one of ARC's
three base pods (tests/fixtures/arc_pods/, see the NOTICE there) changed by the same statements as
ARC's `newTestPod` function. This project's deliberate differences from ARC are then applied to
that expectation, each one where it is made, under a `Deviation from ARC` comment.

`TestNewRunnerPod` calls ARC's pod-template builder with a pod template, a RunnerConfig and the
builder's defaults. Here one builder makes every runner pod, from a Runner: the template's pod
fields become Runner spec fields (as a RunnerSet's template does, see
`hooks.runnerset.statefulset.runner_spec`) next to the RunnerConfig fields, and ARC's
`RunnerPodDefaults` plus GitHub base URL are `PodDefaults`, given as they are.
`TestNewRunnerPodFromRunnerController` builds through ARC's Runner reconciler, whose defaults are
controller flags: `Settings` here.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml

from hooks.resources.runner import Runner
from hooks.runner.pod import (
    POD_TEMPLATE_HASH_LABEL,
    PodDefaults,
    build_runner_pod,
    pod_template_hash,
)
from hooks.runner.secret import TOKEN_KEY, registration_secret_name
from hooks.settings import Settings

Manifest = dict[str, Any]
Edit = Callable[[Manifest], None]

K8S_VERSION = "1.33.0"
ARC_PODS = Path(__file__).parent / "fixtures" / "arc_pods"

# ARC's TestNewRunnerPodFromRunnerController names its Runner `runner`; the pods of
# TestNewRunnerPod are built from a Runner of the same name (see `as_runner_pod`).
RUNNER_NAME = "runner"

# TestNewRunnerPod's RunnerPodDefaults and githubBaseURL. ARC's UseRunnerStatusUpdateHook: false
# has no counterpart: our pods never use the in-pod status hook.
NEW_RUNNER_POD_DEFAULTS = PodDefaults(
    runner_image="default-runner-image",
    runner_image_pull_secrets=(),
    docker_image="default-docker-image",
    docker_registry_mirror="",
    docker_gid="1234",
    runner_github_url="api.github.com",
)

# TestNewRunnerPodFromRunnerController's RunnerReconciler: its RunnerPodDefaults are controller
# flags and its GitHub base URL the GitHub client's, all of them Settings here.
CONTROLLER_SETTINGS = Settings.model_validate(
    {
        "RUNNER_IMAGE": "default-runner-image",
        "RUNNER_IMAGE_PULL_SECRETS": "",
        "DOCKER_IMAGE": "default-docker-image",
        "DOCKER_REGISTRY_MIRROR": "",
        "DOCKER_GID": "1234",
        "GITHUB_RUNNER_GITHUB_URL": "api.github.com",
        "GITHUB_ENTERPRISE_URL": None,
    }
)

# ARC's newWorkGenericEphemeralVolume(t, "10Gi").
WORK_GENERIC_EPHEMERAL_VOLUME: Manifest = {
    "name": "work",
    "ephemeral": {
        "volumeClaimTemplate": {
            "spec": {
                "accessModes": ["ReadWriteOnce"],
                "storageClassName": "runner-work-dir",
                "resources": {"requests": {"storage": "10Gi"}},
            }
        }
    },
}
RUNNER_VOLUME: Manifest = {"name": "runner", "emptyDir": {}}
VAR_RUN_VOLUME: Manifest = {"name": "var-run", "emptyDir": {"medium": "Memory", "sizeLimit": "1M"}}


# ------------------------------------------------------------------ ARC's expected pods


@dataclass(frozen=True)
class Want:
    """ARC's `newTestPod(base, f)`: a base pod and the statements of `f`."""

    base: str
    edits: tuple[Edit, ...] = ()

    def pod(self, test_function: str) -> Manifest:
        loaded = yaml.safe_load((ARC_PODS / test_function / f"{self.base}.yaml").read_text())
        assert isinstance(loaded, dict)
        for edit in self.edits:
            edit(loaded)
        return loaded


def new_test_pod(base: str, *edits: Edit) -> Want:
    return Want(base, edits)


def set_env(container: int, name: str, value: str) -> Edit:
    """ARC's setEnv(&p.Spec.Containers[container], name, value)."""

    def edit(pod: Manifest) -> None:
        entries = [e for e in pod["spec"]["containers"][container]["env"] if e["name"] == name]
        assert len(entries) == 1, name
        entries[0]["value"] = value

    return edit


def set_image(container: int, image: str) -> Edit:
    """ARC's p.Spec.Containers[container].Image = image."""

    def edit(pod: Manifest) -> None:
        pod["spec"]["containers"][container]["image"] = image

    return edit


def set_privileged(container: int, value: bool) -> Edit:
    """ARC's p.Spec.Containers[container].SecurityContext.Privileged = boolPtr(value)."""

    def edit(pod: Manifest) -> None:
        pod["spec"]["containers"][container]["securityContext"]["privileged"] = value

    return edit


def set_volumes(*volumes: Manifest) -> Edit:
    """ARC's p.Spec.Volumes = []corev1.Volume{...}."""

    def edit(pod: Manifest) -> None:
        pod["spec"]["volumes"] = copy.deepcopy(list(volumes))

    return edit


def set_volume_mounts(container: int, *mounts: Manifest) -> Edit:
    """ARC's p.Spec.Containers[container].VolumeMounts = []corev1.VolumeMount{...}."""

    def edit(pod: Manifest) -> None:
        pod["spec"]["containers"][container]["volumeMounts"] = copy.deepcopy(list(mounts))

    return edit


def mount(name: str, path: str) -> Manifest:
    return {"name": name, "mountPath": path}


# ------------------------------------------------------------------ deviations


def spec_volumes_last(*names: str) -> Edit:
    """Move the named volumes after the others, keeping both groups' order."""

    def edit(pod: Manifest) -> None:
        volumes = pod["spec"]["volumes"]
        pod["spec"]["volumes"] = [v for v in volumes if v["name"] not in names] + [
            v for v in volumes if v["name"] in names
        ]

    return edit


def as_runner_pod(pod: Manifest) -> None:
    """TestNewRunnerPod's pod template, completed into the pod of the Runner `runner`."""
    # Deviation from ARC: ARC's template builder leaves the pod name, RUNNER_NAME and the token
    # to later steps: its Runner reconciler, or for RunnerSet pods (named by their StatefulSet)
    # its pod-mutating webhook, hence the inject-registration-token label; both append the two
    # variables with `mutatePod` (see TestNewRunnerPodFromRunnerController). Here one builder
    # makes the whole pod of a named Runner, RunnerSet pods included, and no webhook runs later.
    pod["metadata"]["name"] = RUNNER_NAME
    pod["spec"]["containers"][0]["env"] += [
        {"name": "RUNNER_NAME", "value": RUNNER_NAME},
        {"name": "RUNNER_TOKEN", "value": ""},
    ]


def with_our_deviations(arc_pod: Manifest) -> Manifest:
    """ARC's expected pod with this project's deliberate differences, each said where it is made."""
    pod = copy.deepcopy(arc_pod)
    metadata = pod["metadata"]
    runner = pod["spec"]["containers"][0]
    assert runner["name"] == "runner"

    # Deviation from ARC: Metacontroller takes children as plain objects that must name their
    # apiVersion and kind; ARC's typed Go client knows them from the type.
    pod["apiVersion"], pod["kind"] = "v1", "Pod"
    # Deviation from ARC: Metacontroller sets the controller ownerReference (with the Runner's
    # uid) on every child it creates; the hook leaves it out. (ARC's template builder sets none.)
    metadata.pop("ownerReferences", None)
    # Deviation from ARC: the annotations map is always written, empty here. An empty map is
    # not stored by the API server, so the pod is the same; writing it only when non-empty
    # would change the template hash of every existing runner pod and so replace every idle
    # runner, for nothing.
    metadata["annotations"] = {}

    for env in runner["env"]:
        if env["name"] == "RUNNER_TOKEN":
            # Deviation from ARC: the registration token is never a literal in the pod. The runner
            # reads it from the Runner's registration Secret, so a token refresh neither changes
            # the pod nor puts a credential in the pod spec.
            del env["value"]
            env["valueFrom"] = {
                "secretKeyRef": {"name": registration_secret_name(RUNNER_NAME), "key": TOKEN_KEY}
            }
        if env["name"] == "GITHUB_ACTIONS_RUNNER_EXTRA_USER_AGENT":
            # Deviation from ARC: ARC sends `actions-runner-controller/<version>`. These runners
            # are managed by arc-hooks, and GitHub attributes runner traffic by this user agent,
            # so it names arc-hooks (without a version, which would change every pod's template
            # hash on each upgrade and replace every idle runner).
            assert env["value"] == "actions-runner-controller/NA"
            env["value"] = "arc-hooks"

    if runner.get("securityContext") == {}:
        # Deviation from ARC: ARC allocates an empty securityContext so that it may set
        # `privileged` later; when it does not, the empty object sets nothing. It is left out
        # here: adding it would change the template hash of every existing runner pod and so
        # replace every idle runner, for nothing.
        del runner["securityContext"]

    # Deviation from ARC: `pod-template-hash` is this project's digest of the built pod itself
    # (`pod_template_hash`), so any setting that reaches the pod replaces it; ARC's is an FNV
    # hash of the Runner's labels, annotations, spec, GitHub URL and token (8857b86c7 in
    # TestNewRunnerPodFromRunnerController), and ARC's template builder sets none. The token is
    # not part of ours: it is not in the pod.
    metadata["labels"][POD_TEMPLATE_HASH_LABEL] = pod_template_hash(pod)
    return pod


# ------------------------------------------------------------------ TestNewRunnerPod


@dataclass(frozen=True)
class TemplateRow:
    description: str
    template: Manifest
    config: Manifest
    want: Want
    deviations: tuple[Edit, ...] = ()

    def __str__(self) -> str:
        return self.description


NEW_RUNNER_POD = [
    # TestNewRunnerPod
    TemplateRow(
        "it should have unprivileged runner and privileged sidecar docker container",
        template={},
        config={},
        want=new_test_pod("base"),
    ),
    # TestNewRunnerPod
    TemplateRow(
        "it should respect DOCKER_GROUP_GID of the dockerd sidecar container",
        template={
            "spec": {
                "containers": [
                    {"name": "docker", "env": [{"name": "DOCKER_GROUP_GID", "value": "2345"}]}
                ]
            }
        },
        config={},
        want=new_test_pod("base", set_env(1, "DOCKER_GROUP_GID", "2345")),
    ),
    # TestNewRunnerPod
    TemplateRow(
        "it should add DOCKER_GROUP_GID=1001 to the dockerd sidecar container for Ubuntu 20.04 "
        "runners",
        template={},
        config={"image": "ghcr.io/summerwind/actions-runner:ubuntu-20.04-20210726-1"},
        want=new_test_pod(
            "base",
            set_env(1, "DOCKER_GROUP_GID", "1001"),
            set_image(0, "ghcr.io/summerwind/actions-runner:ubuntu-20.04-20210726-1"),
        ),
    ),
    # TestNewRunnerPod
    TemplateRow(
        "it should add DOCKER_GROUP_GID=121 to the dockerd sidecar container for Ubuntu 22.04 "
        "runners",
        template={},
        config={"image": "ghcr.io/summerwind/actions-runner:ubuntu-22.04-20210726-1"},
        want=new_test_pod(
            "base",
            set_env(1, "DOCKER_GROUP_GID", "121"),
            set_image(0, "ghcr.io/summerwind/actions-runner:ubuntu-22.04-20210726-1"),
        ),
    ),
    # TestNewRunnerPod
    TemplateRow(
        "dockerdWithinRunnerContainer=true should set privileged=true and omit the dind sidecar "
        "container",
        template={},
        config={"dockerdWithinRunnerContainer": True},
        want=new_test_pod("dinrBase"),
    ),
    # TestNewRunnerPod
    TemplateRow(
        "in the default config you should provide both dockerdWithinRunnerContainer=true and "
        "runnerImage",
        template={},
        config={"dockerdWithinRunnerContainer": True, "image": "dind-runner-image"},
        want=new_test_pod("dinrBase", set_image(0, "dind-runner-image")),
    ),
    # TestNewRunnerPod
    TemplateRow(
        "dockerEnabled=false should have no effect when dockerdWithinRunnerContainer=true",
        template={},
        config={"dockerdWithinRunnerContainer": True, "dockerEnabled": False},
        want=new_test_pod("dinrBase"),
    ),
    # TestNewRunnerPod
    TemplateRow(
        "dockerEnabled=false should omit the dind sidecar and set privileged=false and envvars "
        "DOCKER_ENABLED=false and DOCKERD_IN_RUNNER=false",
        template={},
        config={"dockerEnabled": False},
        want=new_test_pod("dockerDisabled"),
    ),
    # TestNewRunnerPod
    TemplateRow(
        "TODO: dockerEnabled=false results in privileged=false by default but you can override it",
        template={
            "spec": {"containers": [{"name": "runner", "securityContext": {"privileged": True}}]}
        },
        config={"dockerEnabled": False},
        want=new_test_pod("dockerDisabled", set_privileged(0, True)),
    ),
    # TestNewRunnerPod
    TemplateRow(
        "Mount generic ephemeral volume onto work (with explicit volumeMount)",
        template={
            "spec": {
                "containers": [
                    {"name": "runner", "volumeMounts": [mount("work", "/runner/_work")]}
                ],
                "volumes": [WORK_GENERIC_EPHEMERAL_VOLUME],
            }
        },
        config={},
        want=new_test_pod(
            "base",
            set_volumes(WORK_GENERIC_EPHEMERAL_VOLUME, RUNNER_VOLUME, VAR_RUN_VOLUME),
            set_volume_mounts(
                0,
                mount("work", "/runner/_work"),
                mount("runner", "/runner"),
                mount("var-run", "/run"),
            ),
        ),
        # Deviation from ARC: the template's volumes come after the default ones, not before.
        # They are Runner spec volumes here, which ARC's Runner reconciler appends after its
        # defaults too (TestNewRunnerPodFromRunnerController's row of the same name); the order
        # of a pod's volumes has no effect.
        deviations=(spec_volumes_last("work"),),
    ),
    # TestNewRunnerPod
    TemplateRow(
        "Mount generic ephemeral volume onto work (without explicit volumeMount)",
        template={"spec": {"volumes": [WORK_GENERIC_EPHEMERAL_VOLUME]}},
        config={},
        want=new_test_pod(
            "base", set_volumes(WORK_GENERIC_EPHEMERAL_VOLUME, RUNNER_VOLUME, VAR_RUN_VOLUME)
        ),
        # Deviation from ARC: the template's volumes come last, as in the row above.
        deviations=(spec_volumes_last("work"),),
    ),
]


def runner_of_template(template: Manifest, config: Manifest) -> Runner:
    """The Runner a pod template and a RunnerConfig make: the template's pod fields and the
    config's fields, side by side in its spec."""
    spec = {**template.get("spec", {}), **config}
    return Runner.model_validate({"metadata": {"name": RUNNER_NAME}, "spec": spec})


@pytest.mark.parametrize("row", NEW_RUNNER_POD, ids=str)
def test_new_runner_pod(row: TemplateRow) -> None:
    got = build_runner_pod(
        runner_of_template(row.template, row.config),
        NEW_RUNNER_POD_DEFAULTS,
        secret_name=registration_secret_name(RUNNER_NAME),
        jit=False,
    )
    arc = row.want.pod("TestNewRunnerPod")
    as_runner_pod(arc)
    for deviation in row.deviations:
        deviation(arc)
    want = with_our_deviations(arc)
    kubernetes_validate.validate(want, K8S_VERSION, strict=True)
    assert got == want


# ------------------------------------------------------------------ FromRunnerController


@dataclass(frozen=True)
class RunnerRow:
    description: str
    runner: Manifest
    want: Want

    def __str__(self) -> str:
        return self.description


NEW_RUNNER_POD_FROM_RUNNER_CONTROLLER = [
    # TestNewRunnerPodFromRunnerController
    RunnerRow(
        "it should have unprivileged runner and privileged sidecar docker container",
        runner={"metadata": {"name": "runner"}, "spec": {}},
        want=new_test_pod("base"),
    ),
    # TestNewRunnerPodFromRunnerController
    RunnerRow(
        "dockerdWithinRunnerContainer=true should set privileged=true and omit the dind sidecar "
        "container",
        runner={"metadata": {"name": "runner"}, "spec": {"dockerdWithinRunnerContainer": True}},
        want=new_test_pod("dinrBase"),
    ),
    # TestNewRunnerPodFromRunnerController
    RunnerRow(
        "in the default config you should provide both dockerdWithinRunnerContainer=true and "
        "runnerImage",
        runner={
            "metadata": {"name": "runner"},
            "spec": {"dockerdWithinRunnerContainer": True, "image": "dind-runner-image"},
        },
        want=new_test_pod("dinrBase", set_image(0, "dind-runner-image")),
    ),
    # TestNewRunnerPodFromRunnerController
    RunnerRow(
        "dockerEnabled=false should have no effect when dockerdWithinRunnerContainer=true",
        runner={
            "metadata": {"name": "runner"},
            "spec": {"dockerdWithinRunnerContainer": True, "dockerEnabled": False},
        },
        want=new_test_pod("dinrBase"),
    ),
    # TestNewRunnerPodFromRunnerController
    RunnerRow(
        "dockerEnabled=false should omit the dind sidecar and set privileged=false and envvars "
        "DOCKER_ENABLED=false and DOCKERD_IN_RUNNER=false",
        runner={"metadata": {"name": "runner"}, "spec": {"dockerEnabled": False}},
        want=new_test_pod("dockerDisabled"),
    ),
    # TestNewRunnerPodFromRunnerController
    RunnerRow(
        "TODO: dockerEnabled=false results in privileged=false by default but you can override it",
        runner={
            "metadata": {"name": "runner"},
            "spec": {
                "dockerEnabled": False,
                "containers": [{"name": "runner", "securityContext": {"privileged": True}}],
            },
        },
        want=new_test_pod("dockerDisabled", set_privileged(0, True)),
    ),
    # TestNewRunnerPodFromRunnerController
    RunnerRow(
        "Mount generic ephemeral volume onto work (with explicit volumeMount)",
        runner={
            "metadata": {"name": "runner"},
            "spec": {
                "containers": [
                    {
                        "name": "runner",
                        "volumeMounts": [
                            mount("work", "/runner/_work"),
                            mount("var-run", "/run"),
                        ],
                    }
                ],
                "volumes": [WORK_GENERIC_EPHEMERAL_VOLUME],
            },
        },
        want=new_test_pod(
            "base",
            set_volumes(RUNNER_VOLUME, VAR_RUN_VOLUME, WORK_GENERIC_EPHEMERAL_VOLUME),
            set_volume_mounts(
                0,
                mount("work", "/runner/_work"),
                mount("var-run", "/run"),
                mount("runner", "/runner"),
            ),
        ),
    ),
    # TestNewRunnerPodFromRunnerController
    RunnerRow(
        "Mount generic ephemeral volume onto work (without explicit volumeMount)",
        runner={
            "metadata": {"name": "runner"},
            "spec": {"volumes": [WORK_GENERIC_EPHEMERAL_VOLUME]},
        },
        want=new_test_pod(
            "base", set_volumes(RUNNER_VOLUME, VAR_RUN_VOLUME, WORK_GENERIC_EPHEMERAL_VOLUME)
        ),
    ),
]


def github_url_of_settings(pod: Manifest) -> None:
    # Deviation from ARC's test, not from ARC: the test sets the GitHub client's GithubBaseURL
    # directly, skipping the trailing "/" ARC's own client configuration adds to a runner GitHub
    # URL (github/github.go); Settings.runner_github_url adds it as ARC does. The runner's
    # startup script appends the scope to GITHUB_URL, so the "/" is needed.
    set_env(0, "GITHUB_URL", "api.github.com/")(pod)


@pytest.mark.parametrize("row", NEW_RUNNER_POD_FROM_RUNNER_CONTROLLER, ids=str)
def test_new_runner_pod_from_runner_controller(row: RunnerRow) -> None:
    runner = Runner.model_validate(row.runner)
    got = build_runner_pod(
        runner,
        CONTROLLER_SETTINGS,
        secret_name=registration_secret_name(runner.metadata.name),
        jit=False,
    )
    arc = row.want.pod("TestNewRunnerPodFromRunnerController")
    github_url_of_settings(arc)
    want = with_our_deviations(arc)
    kubernetes_validate.validate(want, K8S_VERSION, strict=True)
    assert got == want


def test_every_row_of_arc_is_ported() -> None:
    # 11 rows in ARC's TestNewRunnerPod, 8 in TestNewRunnerPodFromRunnerController, no repeats.
    assert len({row.description for row in NEW_RUNNER_POD}) == len(NEW_RUNNER_POD) == 11
    descriptions = {row.description for row in NEW_RUNNER_POD_FROM_RUNNER_CONTROLLER}
    assert len(descriptions) == len(NEW_RUNNER_POD_FROM_RUNNER_CONTROLLER) == 8
