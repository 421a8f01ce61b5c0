"""Runner pods and RunnerSet StatefulSets as ARC builds them, where a manifest written for ARC
would otherwise run differently: the runner image, dockerd's command line and socket group, the
URL a runner registers at, the container modes, a RunnerSet's labels and service account.

Each case cites ARC's `controllers/actions.summerwind.net/` (actions/actions-runner-controller,
Apache-2.0): `runner_controller.go` `newRunnerPodWithContainerMode` and `runnerset_controller.go`
`newStatefulSet`. Children are taken from the hooks' answers over HTTP."""

from __future__ import annotations

import base64
import copy
from pathlib import Path
from typing import Any

import pytest
import yaml
from starlette.applications import Starlette
from starlette.testclient import TestClient

from hooks.app import create_app
from hooks.clock import ManualClock
from hooks.resources.runner import Runner
from hooks.runner.pod import PodDefaults, build_runner_pod
from hooks.settings import Settings
from tests.hook_driver import HookDriver, new_runner
from tests.in_memory_github import InMemoryGitHub

API = "actions.summerwind.dev/v1alpha1"
RUNNERSET_CONTROLLER = yaml.safe_load(
    (Path(__file__).parent.parent / "metacontroller" / "runnerset-controller.yaml").read_text()
)
IMAGE_2204 = "ghcr.io/actions/actions-runner:ubuntu-22.04"
IMAGE_2004 = "summerwind/actions-runner:ubuntu-20.04"


@pytest.fixture
def app(settings: Settings, github: InMemoryGitHub, clock: ManualClock) -> Starlette:
    # A resource's own credentials are served by the same in-memory GitHub.
    return create_app(settings, github=github, clock=clock, build_credentials_port=lambda _: github)


def runner_answer(
    client: TestClient, spec: dict[str, Any], related: dict[str, Any] | None = None
) -> dict[str, Any]:
    driver = HookDriver(client, new_runner({"organization": "acme", **spec}))
    driver.related = related or {}
    return driver.sync()


def runner_pod(
    client: TestClient, spec: dict[str, Any], related: dict[str, Any] | None = None
) -> dict[str, Any]:
    children: list[dict[str, Any]] = runner_answer(client, spec, related)["children"]
    (pod,) = [c for c in children if c["kind"] == "Pod"]
    return pod


def runner_set(spec: dict[str, Any], labels: dict[str, str] | None = None) -> dict[str, Any]:
    return {
        "apiVersion": API,
        "kind": "RunnerSet",
        "metadata": {
            "name": "build",
            "namespace": "ci",
            "uid": "uid-build",
            "generation": 1,
            "resourceVersion": "1",
            "creationTimestamp": "2026-01-01T00:00:00Z",
            **({"labels": labels} if labels else {}),
        },
        "spec": {
            "organization": "acme",
            "replicas": 1,
            "selector": {"matchLabels": {"app": "build"}},
            "serviceName": "build",
            "template": {"metadata": {"labels": {"app": "build"}}},
            **spec,
        },
    }


def statefulset(
    client: TestClient, parent: dict[str, Any], related: dict[str, Any] | None = None
) -> dict[str, Any]:
    request = {
        "controller": RUNNERSET_CONTROLLER,
        "parent": copy.deepcopy(parent),
        "children": {},
        "related": related or {},
        "finalizing": False,
    }
    answer = client.post("/sync/runnerset", json=request)
    assert answer.status_code == 200, answer.text
    (sts,) = [c for c in answer.json()["children"] if c["kind"] == "StatefulSet"]
    assert isinstance(sts, dict)
    return sts


def template_with(runner: dict[str, Any], *others: dict[str, Any]) -> dict[str, Any]:
    return {
        "template": {
            "metadata": {"labels": {"app": "build"}},
            "spec": {"containers": [{"name": "runner", **runner}, *others]},
        }
    }


def container(pod_spec: dict[str, Any], name: str) -> dict[str, Any]:
    containers: list[dict[str, Any]] = pod_spec["containers"]
    (found,) = [c for c in containers if c["name"] == name]
    return found


def env_value(of: dict[str, Any], name: str) -> Any:
    values = [e.get("value") for e in of.get("env", []) if e["name"] == name]
    return values[-1] if values else None  # of duplicate names, the last one wins


# ---------------------------------------------------------------- the runner image


def test_spec_image_wins_over_the_runner_containers_own(client: TestClient) -> None:
    """ARC: `if runnerSpec.Image != "" { runnerContainer.Image = runnerSpec.Image }`, then the
    default. A manifest bumping `spec.image` while its template still names an old image ran
    the old one."""
    pod = runner_pod(
        client, {"image": IMAGE_2204, "containers": [{"name": "runner", "image": "old"}]}
    )
    sts = statefulset(client, runner_set({"image": IMAGE_2204, **template_with({"image": "old"})}))

    assert container(pod["spec"], "runner")["image"] == IMAGE_2204
    assert container(sts["spec"]["template"]["spec"], "runner")["image"] == IMAGE_2204


# ---------------------------------------------------------------- dockerd


def test_the_docker_containers_args_are_added_to_dockerds_command_line(client: TestClient) -> None:
    """ARC puts `dockerd --host=...` before the user's args, then the socket's group, the MTU
    and the mirror. Taken alone, the user's args started dockerd without `--group` (the
    runner user could not reach the socket) and dropped `dockerMTU` and the mirror."""
    extra = ["--insecure-registry=registry.internal:5000"]
    pod = runner_pod(
        client,
        {
            "dockerMTU": 1400,
            "dockerRegistryMirror": "https://mirror.gcr.io",
            "containers": [{"name": "runner"}, {"name": "docker", "args": extra}],
        },
    )

    assert container(pod["spec"], "docker")["args"] == [
        "dockerd",
        "--host=unix:///run/docker.sock",
        *extra,
        "--group=$(DOCKER_GROUP_GID)",
        "--mtu",
        "1400",
        "--registry-mirror=https://mirror.gcr.io",
    ]


def test_a_whole_dockerd_command_line_of_the_users_own_is_kept(client: TestClient) -> None:
    """ARC would start `dockerd dockerd ...`, which fails; earlier versions of this project
    ran args as written, so manifests with the whole command exist."""
    own = ["dockerd", "--host=unix:///run/docker.sock", "--group=$(DOCKER_GROUP_GID)", "--debug"]
    pod = runner_pod(client, {"containers": [{"name": "runner"}, {"name": "docker", "args": own}]})

    assert container(pod["spec"], "docker")["args"] == own


def test_the_socket_group_follows_the_image_the_runner_container_runs(
    client: TestClient, settings: Settings
) -> None:
    """ARC reads `runnerContainer.Image` (121 for Ubuntu 22.04 and 24.04, 1001 for 20.04), not
    `spec.image` or the default alone."""
    pod = runner_pod(client, {"containers": [{"name": "runner", "image": IMAGE_2204}]})
    sts = statefulset(client, runner_set(template_with({"image": IMAGE_2204})))
    defaults = PodDefaults.from_settings(settings.model_copy(update={"runner_image": IMAGE_2204}))
    runner = Runner.model_validate(
        {
            "metadata": {"name": "r", "namespace": "default"},
            "spec": {
                "organization": "acme",
                "containers": [{"name": "runner", "image": IMAGE_2004}],
            },
        }
    )
    built = build_runner_pod(runner, defaults, secret_name="r-registration", jit=False)

    assert env_value(container(pod["spec"], "docker"), "DOCKER_GROUP_GID") == "121"
    assert (
        env_value(container(sts["spec"]["template"]["spec"], "docker"), "DOCKER_GROUP_GID") == "121"
    )
    assert env_value(container(built["spec"], "docker"), "DOCKER_GROUP_GID") == "1001"


# ---------------------------------------------------------------- where runners register


def credentials_secret(namespace: str, **values: str) -> dict[str, Any]:
    data = {k: base64.b64encode(v.encode()).decode() for k, v in values.items()}
    secret = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "ghes", "namespace": namespace, "uid": "uid-ghes"},
        "data": data,
    }
    return {"Secret.v1": {f"{namespace}/ghes": secret}}


CREDENTIALS = {"githubAPICredentialsFrom": {"secretRef": {"name": "ghes"}}}
TOKEN = "ghp_" + "a" * 36


@pytest.mark.parametrize(
    ("urls", "registered_at"),
    [
        ({"github_enterprise_url": "https://ghes.example.com"}, "https://ghes.example.com/"),
        ({"github_runner_url": "https://ghe.example.net"}, "https://ghe.example.net/"),
        ({}, "https://github.com/"),  # the server's own
    ],
    ids=["enterprise-url", "runner-url", "none"],
)
def test_a_runner_registers_where_its_credentials_secret_points(
    client: TestClient, urls: dict[str, str], registered_at: str
) -> None:
    """ARC builds the pod's `GITHUB_URL` from the client of the resource's credentials
    (`InitForRunner`, `InitForRunnerSet`). With the server's URL, a runner whose Secret names
    a GHES instance got its token there and registered at github.com: never online."""
    pod = runner_pod(client, CREDENTIALS, credentials_secret("default", github_token=TOKEN, **urls))
    sts = statefulset(
        client, runner_set(CREDENTIALS), credentials_secret("ci", github_token=TOKEN, **urls)
    )

    assert env_value(container(pod["spec"], "runner"), "GITHUB_URL") == registered_at
    runner = container(sts["spec"]["template"]["spec"], "runner")
    assert env_value(runner, "GITHUB_URL") == registered_at


# ---------------------------------------------------------------- container modes


@pytest.mark.parametrize("mode", ["dind", "docker", "Kubernetes"])
def test_a_container_mode_other_than_kubernetes_builds_the_default_pod(
    client: TestClient, mode: str
) -> None:
    """ARC's field has no enum and its code compares with "kubernetes" alone. Refused here,
    `containerMode: dind` (the scale-set chart's word) had started no runner at all."""
    answer = runner_answer(client, {"containerMode": mode})

    (pod,) = [c for c in answer["children"] if c["kind"] == "Pod"]
    assert container(pod["spec"], "docker")["args"][0] == "dockerd"
    assert "ACTIONS_RUNNER_CONTAINER_HOOKS" not in {
        e["name"] for e in container(pod["spec"], "runner")["env"]
    }


# ---------------------------------------------------------------- RunnerSet metadata


def test_a_runner_sets_statefulsets_carry_its_labels(client: TestClient) -> None:
    """ARC: `Labels: CloneAndAddLabel(runnerSet.Labels, ...)`. Tools selecting by the labels put
    on the RunnerSet found none of its StatefulSets. The template's stay: the RunnerSet's
    selector, by which Metacontroller claims them, reads those."""
    sts = statefulset(client, runner_set({}, labels={"team": "platform"}))

    assert sts["metadata"]["labels"]["team"] == "platform"
    assert sts["metadata"]["labels"]["app"] == "build"


@pytest.mark.parametrize(("mode", "account"), [(None, "runner-sa"), ("kubernetes", "kube-mode-sa")])
def test_a_runner_sets_service_account_counts_in_kubernetes_mode_alone(
    client: TestClient, mode: str | None, account: str
) -> None:
    """ARC copies `spec.serviceAccountName` inside `if ContainerMode == "kubernetes"` only."""
    spec: dict[str, Any] = {
        "serviceAccountName": "kube-mode-sa",
        "template": {
            "metadata": {"labels": {"app": "build"}},
            "spec": {"serviceAccountName": "runner-sa"},
        },
    }
    if mode is not None:
        spec |= {
            "containerMode": mode,
            "workVolumeClaimTemplate": {
                "accessModes": ["ReadWriteOnce"],
                "resources": {"requests": {"storage": "1Gi"}},
            },
        }

    sts = statefulset(client, runner_set(spec))

    assert sts["spec"]["template"]["spec"]["serviceAccountName"] == account
