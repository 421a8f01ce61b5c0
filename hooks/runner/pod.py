"""The runner Pod, built from a Runner the way ARC's `newRunnerPodWithContainerMode` builds it.

One difference from ARC on purpose: the registration material is never a literal in the pod. The
runner container reads it from the Runner's registration Secret (`RUNNER_TOKEN`, or
`ACTIONS_RUNNER_INPUT_JITCONFIG` in JIT mode), so a token refresh changes neither the pod nor its
template hash.

Everything here is pure: the same Runner and Settings always give the same pod, byte for byte.
The pod depends on the Runner's metadata and spec (never its status) and on the settings in
`PodDefaults` only, which is what lets the controller memoize built pods.
"""

from __future__ import annotations

import copy
import hashlib
import json
import re
from dataclasses import dataclass, field
from typing import Any, TypeVar

from hooks.github.credentials import ApiCredentials, Credentials
from hooks.naming import CONTROLLER_UID_LABEL  # on a Runner it names the Runner's parent
from hooks.resources.runner import Runner, RunnerSpec, WorkVolumeClaimTemplate
from hooks.runner.secret import JIT_CONFIG_KEY, TOKEN_KEY
from hooks.scale_set_mode import JOB_STARTED_ANNOTATION
from hooks.settings import DEFAULT_JIT_RUNNER_IMAGE, Settings

Manifest = dict[str, Any]

POD_TEMPLATE_HASH_LABEL = "pod-template-hash"
RUNNER_LABEL = "actions-runner"
INJECT_TOKEN_LABEL = "actions-runner-controller/inject-registration-token"
API_CREDS_SECRET_ANNOTATION = "actions-runner/github-api-creds-secret"

RUNNER_CONTAINER = "runner"
DOCKER_CONTAINER = "docker"

RUNNER_VOLUME = "runner"
RUNNER_VOLUME_PATH = "/runner"
WORK_VOLUME = "work"
DEFAULT_WORK_DIR = "/runner/_work"

TOKEN_STARTED_IMAGE = re.compile(
    r"(^|/)(summerwind|actions-runner-controller)/actions-runner(-dind(-rootless)?)?$"
)
"""ARC's runner images (`summerwind/actions-runner`, also published under
`actions-runner-controller/`): their startup.sh exits without `RUNNER_TOKEN`, and knows no JIT
config."""
GITHUB_RUNNER_IMAGE = re.compile(r"(^|/)actions/actions-runner$")
"""GitHub's runner image: it starts nothing by itself; `run.sh` reads a JIT config from
`ACTIONS_RUNNER_INPUT_JITCONFIG`."""
GITHUB_IMAGE_RUN_SCRIPT = "/home/runner/run.sh"


def image_repository(image: str) -> str:
    """An image reference without its tag and digest."""
    name = image.split("@", 1)[0]
    colon = name.rfind(":")
    return name[:colon] if colon > name.rfind("/") else name


def starts_nothing(image: str) -> bool:
    return GITHUB_RUNNER_IMAGE.search(image_repository(image)) is not None


def needs_a_token(image: str) -> bool:
    return TOKEN_STARTED_IMAGE.search(image_repository(image)) is not None


def runner_work_dir(work_dir: str | None) -> str:
    """Where a runner works: the spec's `workDir`, or ARC's default."""
    return work_dir or DEFAULT_WORK_DIR


def jit_work_folder(spec: RunnerSpec) -> str:
    """The work folder a JIT config names: the work directory when the pod mounts a volume
    there (the work volume, shared with the docker sidecar, or the runner volume it lies in);
    relative, it would lie under the image's own runner directory, off the volume. With no
    volume there, the runner's default (`_work`, under its directory): an image's user may not
    create `/runner` itself (found in review)."""
    layout = _layout(spec, VOLUME_ONLY_DEFAULTS)
    mounted = layout.kubernetes_mode or layout.runner_volume
    return layout.work_dir if mounted else "_work"


VAR_RUN_VOLUME = "var-run"
VAR_RUN_PATH = "/run"
DEFAULT_VAR_RUN_SIZE_LIMIT = "1M"

DOCKER_HOST = "unix:///run/docker.sock"
DOCKER_GROUP_GID_ENV = "DOCKER_GROUP_GID"
CONTAINER_HOOKS_PATH = "/runner/k8s/index.js"
GITHUB_IMAGE_HOOKS_PATH = "/home/runner/k8s/index.js"
"""Where GitHub's runner image keeps the container hooks (ARC's scale-set chart's value)."""
KUBERNETES_MODE = "kubernetes"

# Without a version: a version here would change every pod's template hash on each upgrade of
# the hooks and so replace every idle runner.
EXTRA_USER_AGENT = "arc-hooks"

# ARC's preStop for the dind sidecar: keep dockerd up while the runner still holds its
# registration (/runner/.runner), and do not let SIGTERM reach a dockerd that has not started yet.
DOCKER_PRESTOP_SCRIPT = (
    'timeout "${RUNNER_GRACEFUL_STOP_TIMEOUT:-15}" /bin/sh -c "'
    "echo 'Prestop hook started'; "
    "while [ -f /runner/.runner ]; do sleep 1; done; "
    "echo 'Waiting for dockerd to start'; "
    "while ! pgrep -x dockerd; do sleep 1; done; "
    "echo 'Prestop hook stopped'"
    '" >/proc/1/fd/1 2>&1'
)

# Annotations that record how the Runner itself was applied (copied onto the pod they would
# describe the wrong object and confuse the next apply), or that change during the runner's
# life (on the pod they would change its template, and so replace a busy runner's pod).
_RUNNER_ONLY_ANNOTATIONS = frozenset(
    {
        "metacontroller.k8s.io/last-applied-configuration",
        "kubectl.kubernetes.io/last-applied-configuration",
        JOB_STARTED_ANNOTATION,
    }
)

# (RunnerSpec attribute, PodSpec key) copied as-is when the Runner sets them.
# `ephemeralContainers` is accepted in the Runner spec but not copied: the API server refuses
# it on pod creation (ephemeral containers are added later through the pod's subresource).
_PASS_THROUGH_FIELDS = (
    ("init_containers", "initContainers"),
    ("node_selector", "nodeSelector"),
    ("service_account_name", "serviceAccountName"),
    ("automount_service_account_token", "automountServiceAccountToken"),
    ("security_context", "securityContext"),
    ("affinity", "affinity"),
    ("tolerations", "tolerations"),
    ("priority_class_name", "priorityClassName"),
    ("termination_grace_period_seconds", "terminationGracePeriodSeconds"),
    ("host_aliases", "hostAliases"),
    ("topology_spread_constraints", "topologySpreadConstraints"),
    ("runtime_class_name", "runtimeClassName"),
    ("dns_policy", "dnsPolicy"),
    ("dns_config", "dnsConfig"),
    ("enable_service_links", "enableServiceLinks"),
)

_QUANTITY_NUMBER = re.compile(r"^[+-]?(\d+(\.\d*)?|\.\d+)")

_JsonValue = TypeVar("_JsonValue")
_IMMUTABLE_SCALARS = (str, int, float, bool, type(None))


@dataclass(frozen=True)
class PodDefaults:
    """Every setting a runner pod depends on; nothing else in `Settings` reaches the pod."""

    runner_image: str
    docker_image: str
    docker_gid: str
    docker_registry_mirror: str
    runner_image_pull_secrets: tuple[str, ...]
    runner_github_url: str
    # Out of the repr, which RunnerSets' template hashes digest: a field added there would
    # roll every set over on upgrade (found in review). A JIT set's hash takes the image.
    jit_runner_image: str | None = field(default=None, repr=False)

    @classmethod
    def from_settings(cls, settings: Settings) -> PodDefaults:
        return cls(
            runner_image=settings.runner_image,
            docker_image=settings.docker_image,
            docker_gid=settings.docker_gid,
            docker_registry_mirror=settings.docker_registry_mirror,
            runner_image_pull_secrets=tuple(settings.runner_image_pull_secrets),
            runner_github_url=settings.runner_github_url,
            jit_runner_image=settings.runner_jit_image,
        )

    def image_for(self, *, jit: bool) -> str:
        """The runner image of a spec that names none: for a JIT runner, RUNNER_JIT_IMAGE,
        else RUNNER_IMAGE unless that is ARC's image, which cannot start from a JIT config."""
        if not jit:
            return self.runner_image
        if self.jit_runner_image:
            return self.jit_runner_image
        return DEFAULT_JIT_RUNNER_IMAGE if needs_a_token(self.runner_image) else self.runner_image


VOLUME_ONLY_DEFAULTS = PodDefaults("", "", "", "", (), "")
"""Defaults for reading a spec's layout alone (which volumes the pod has): no setting decides
that."""


def jit_default_image(settings: Settings) -> str:
    """The runner image of a JIT runner whose spec names none (`PodDefaults.image_for`)."""
    return PodDefaults.from_settings(settings).image_for(jit=True)


def pod_defaults(settings: Settings, credentials: Credentials) -> PodDefaults:
    """The pod defaults of a resource: the server's, with the URLs of its
    `githubAPICredentialsFrom` Secret (`github_enterprise_url`, `github_runner_url`), as ARC
    gives the pod the URL of the client those credentials make. A runner of a GHES instance
    must register there, not at the server's GitHub."""
    if isinstance(credentials, ApiCredentials) and credentials.urls:
        settings = settings.model_copy(update=credentials.url_overrides())
    return PodDefaults.from_settings(settings)


@dataclass(frozen=True)
class _Layout:
    """Which containers and volumes the pod gets: the decisions every later step reads."""

    kubernetes_mode: bool
    dockerd_in_runner: bool
    docker_sidecar: bool
    runner_volume: bool
    privileged_allowed: bool
    work_dir: str
    registry_mirror: str

    @property
    def docker_enabled(self) -> bool:
        # ARC ignores dockerEnabled: false when dockerd runs in the runner container.
        return self.dockerd_in_runner or self.docker_sidecar


def build_runner_pod(
    runner: Runner,
    settings: Settings | PodDefaults,
    *,
    secret_name: str,
    jit: bool,
    service_account: str | None = None,
) -> dict[str, Any]:
    """The complete runner Pod for `runner`; its registration material comes from `secret_name`.
    `service_account` is what the pod runs as when the spec names none (a kubernetes-mode
    Runner's own, see `hooks.runner.container_mode`).

    The spec is expected to be valid (see `hooks.runner.validation`). Where an invalid spec
    reaches here anyway the pod stays well-formed: kubernetes mode without a claim template gets
    an emptyDir `work`, and `volumeSizeLimit: 0` keeps the runner volume the dind sidecar needs.
    """
    defaults = (
        settings if isinstance(settings, PodDefaults) else PodDefaults.from_settings(settings)
    )
    layout = _layout(runner.spec, defaults)
    pod: Manifest = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": _metadata(runner),
        "spec": _pod_spec(runner, defaults, layout, secret_name=secret_name, jit=jit),
    }
    if service_account and not runner.spec.service_account_name:
        pod["spec"]["serviceAccountName"] = service_account
    pod["metadata"]["labels"][POD_TEMPLATE_HASH_LABEL] = pod_template_hash(pod)
    return pod


def pod_template_hash(pod: dict[str, Any]) -> str:
    """A short digest of the pod, stable across processes and Python versions.

    The pod's own `pod-template-hash` label is left out, so hashing a built pod again gives the
    value on its label.
    """
    metadata = pod.get("metadata") or {}
    labels = metadata.get("labels") or {}
    subject = {
        **pod,
        "metadata": {
            **metadata,
            "labels": {k: v for k, v in labels.items() if k != POD_TEMPLATE_HASH_LABEL},
        },
    }
    canonical = json.dumps(subject, sort_keys=True, separators=(",", ":"), allow_nan=False)
    return hashlib.sha256(canonical.encode()).hexdigest()[:10]


# ------------------------------------------------------------------ layout and metadata


def _layout(spec: RunnerSpec, defaults: PodDefaults) -> _Layout:
    kubernetes_mode = spec.container_mode == KUBERNETES_MODE
    dockerd_in_runner = bool(spec.dockerd_within_runner_container) and not kubernetes_mode
    docker_sidecar = (
        spec.docker_enabled is not False and not dockerd_in_runner and not kubernetes_mode
    )
    selinux = (spec.security_context or {}).get("seLinuxOptions") is not None
    return _Layout(
        kubernetes_mode=kubernetes_mode,
        dockerd_in_runner=dockerd_in_runner,
        docker_sidecar=docker_sidecar,
        runner_volume=docker_sidecar or not _is_zero_quantity(spec.volume_size_limit),
        # Privileged containers and SELinux labels do not mix: ARC drops privileged for both.
        privileged_allowed=not selinux,
        work_dir=runner_work_dir(spec.work_dir),
        registry_mirror=(
            spec.docker_registry_mirror
            if spec.docker_registry_mirror is not None
            else defaults.docker_registry_mirror
        ),
    )


def _metadata(runner: Runner) -> Manifest:
    meta = runner.metadata
    copied = {k: v for k, v in meta.labels.items() if k != CONTROLLER_UID_LABEL}
    labels = {**copied, RUNNER_LABEL: "", INJECT_TOKEN_LABEL: "true"}
    annotations = {k: v for k, v in meta.annotations.items() if k not in _RUNNER_ONLY_ANNOTATIONS}
    credentials = runner.spec.github_api_credentials_from
    if credentials is not None and credentials.secret_ref is not None:
        annotations[API_CREDS_SECRET_ANNOTATION] = credentials.secret_ref.name
    metadata: Manifest = {"name": meta.name, "labels": labels, "annotations": annotations}
    if meta.namespace:
        metadata["namespace"] = meta.namespace
    return metadata


# ------------------------------------------------------------------ pod spec


def _pod_spec(
    runner: Runner, defaults: PodDefaults, layout: _Layout, *, secret_name: str, jit: bool
) -> Manifest:
    spec = runner.spec
    pod_spec: Manifest = {
        "containers": _containers(runner, defaults, layout, secret_name=secret_name, jit=jit),
        # Never restart a runner container in place (ARC forces this too): a finished ephemeral
        # runner would come back with a spent registration; the Runner hook replaces the pod.
        "restartPolicy": "Never",
    }
    _set_list(pod_spec, "volumes", _volumes(spec, layout))
    for attribute, key in _PASS_THROUGH_FIELDS:
        value = getattr(spec, attribute)
        if _is_set(value):
            pod_spec[key] = _copy_json(value)
    pull_secrets = _image_pull_secrets(spec, defaults)
    if pull_secrets:
        pod_spec["imagePullSecrets"] = pull_secrets
    return pod_spec


def _image_pull_secrets(spec: RunnerSpec, defaults: PodDefaults) -> list[Manifest]:
    if spec.image_pull_secrets:
        return _copy_json(spec.image_pull_secrets)
    return [{"name": name} for name in defaults.runner_image_pull_secrets]


def _containers(
    runner: Runner, defaults: PodDefaults, layout: _Layout, *, secret_name: str, jit: bool
) -> list[Manifest]:
    """`runner` first, then `docker`, then the user's other containers, then the sidecars."""
    spec = runner.spec
    others = _copy_json(spec.containers)
    runner_base = _pop_named(others, RUNNER_CONTAINER)
    runner_container = _runner_container(
        runner_base, runner, defaults, layout, secret_name=secret_name, jit=jit
    )
    containers = [runner_container]
    if layout.docker_sidecar:
        docker_base = _pop_named(others, DOCKER_CONTAINER)
        runner_image = str(runner_container["image"])
        containers.append(_docker_container(docker_base, spec, defaults, layout, runner_image))
    elif layout.kubernetes_mode:
        # Jobs run in their own pods there; a dind sidecar would only waste a privileged slot.
        _pop_named(others, DOCKER_CONTAINER)
    return containers + others + _copy_json(spec.sidecar_containers)


def _pop_named(containers: list[Manifest], name: str) -> Manifest | None:
    for index, container in enumerate(containers):
        if container.get("name") == name:
            return containers.pop(index)
    return None


# ------------------------------------------------------------------ runner container


def _runner_container(
    base: Manifest | None,
    runner: Runner,
    defaults: PodDefaults,
    layout: _Layout,
    *,
    secret_name: str,
    jit: bool,
) -> Manifest:
    spec = runner.spec
    container: Manifest = base if base is not None else {"name": RUNNER_CONTAINER}
    # ARC: `spec.image` wins over the container's own image, the default comes last.
    container["image"] = spec.image or container.get("image") or defaults.image_for(jit=jit)
    if jit and not container.get("command") and starts_nothing(str(container["image"])):
        container["command"] = [GITHUB_IMAGE_RUN_SCRIPT]  # as ARC's scale-set chart gives it
    container["imagePullPolicy"] = (
        container.get("imagePullPolicy") or spec.image_pull_policy or "Always"
    )
    _fill_list(container, "envFrom", spec.env_from)
    _fill_resources(container, spec.resources)
    env = container.get("env") or _copy_json(spec.env)
    env += _runner_env(spec, defaults, layout, user_env=env, image=str(container["image"]))
    env += _registration_env(env, runner.metadata.name, secret_name=secret_name, jit=jit)
    container["env"] = env
    _set_list(
        container,
        "volumeMounts",
        _with_default_mounts(
            container.get("volumeMounts") or [],
            _runner_default_mounts(layout),
            _copy_json(spec.volume_mounts),
        ),
    )
    if layout.dockerd_in_runner and layout.privileged_allowed:
        # dockerd needs it, so it overrides the user's value, as in ARC; only ever set to true:
        # an explicit `privileged: false` keeps some Windows pods from being admitted (GKE).
        container.setdefault("securityContext", {})["privileged"] = True
    return container


def _runner_env(
    spec: RunnerSpec,
    defaults: PodDefaults,
    layout: _Layout,
    *,
    user_env: list[Manifest],
    image: str,
) -> list[Manifest]:
    """ARC's injected runner environment, in ARC's order."""
    ephemeral = spec.ephemeral is not False
    env = [
        _env("RUNNER_ORG", spec.organization or ""),
        _env("RUNNER_REPO", spec.repository or ""),
        _env("RUNNER_ENTERPRISE", spec.enterprise or ""),
        _env("RUNNER_LABELS", ",".join(spec.labels)),
        _env("RUNNER_GROUP", spec.group or ""),
        _env("DOCKER_ENABLED", _bool(layout.docker_enabled)),
        _env("DOCKERD_IN_RUNNER", _bool(layout.dockerd_in_runner)),
        _env("GITHUB_URL", defaults.runner_github_url),
        _env("RUNNER_WORKDIR", layout.work_dir),
        _env("RUNNER_EPHEMERAL", _bool(ephemeral)),
        # The in-pod status hook of ARC is not used: status comes from GitHub and the pod.
        _env("RUNNER_STATUS_UPDATE_HOOK", "false"),
        _env("GITHUB_ACTIONS_RUNNER_EXTRA_USER_AGENT", EXTRA_USER_AGENT),
    ]
    if layout.kubernetes_mode:
        present = {item.get("name") for item in user_env}
        env += [
            item
            for item in _kubernetes_mode_env(spec.work_volume_claim_template, image)
            if item["name"] not in present
        ]
    if layout.dockerd_in_runner:
        if spec.docker_mtu is not None:
            env.append(_env("MTU", str(spec.docker_mtu)))
        if layout.registry_mirror:
            env.append(_env("DOCKER_REGISTRY_MIRROR", layout.registry_mirror))
    if layout.docker_sidecar:
        env.append(_env("DOCKER_HOST", DOCKER_HOST))
    return env


def _kubernetes_mode_env(template: WorkVolumeClaimTemplate | None, image: str) -> list[Manifest]:
    """ARC's `runnerHookEnvs` (runner_controller.go). The container hooks find their pod, its
    namespace and its work claim (`<pod>-work`) from these; a hook template is the user's
    `ACTIONS_RUNNER_CONTAINER_HOOK_TEMPLATE` in `env`, with the file mounted from a volume.

    Unlike ARC, a variable the user sets is not set a second time: ARC appended its own after
    the user's, and the last of two wins, so a runner image keeping the hooks elsewhere
    (`/home/runner/k8s/index.js`) could not say so."""
    env = [
        _env(
            "ACTIONS_RUNNER_CONTAINER_HOOKS",
            GITHUB_IMAGE_HOOKS_PATH if starts_nothing(image) else CONTAINER_HOOKS_PATH,
        ),
        _env("ACTIONS_RUNNER_REQUIRE_JOB_CONTAINER", "true"),
        _field_env("ACTIONS_RUNNER_POD_NAME", "metadata.name"),
        _field_env("ACTIONS_RUNNER_JOB_NAMESPACE", "metadata.namespace"),
    ]
    # A ReadWriteOnce work volume can only be shared by job pods on the runner's node. Without a
    # template (an invalid spec) there is no claim to share: left out.
    if template is not None:
        same_node = "ReadWriteOnce" in template.access_modes
        env.append(_env("ACTIONS_RUNNER_REQUIRE_SAME_NODE", _bool(same_node)))
    return env


def _registration_env(
    env: list[Manifest], runner_name: str, *, secret_name: str, jit: bool
) -> list[Manifest]:
    """RUNNER_NAME and the registration material, unless the user already provides them."""
    present = {item.get("name") for item in env}
    material_name, material_key = (
        ("ACTIONS_RUNNER_INPUT_JITCONFIG", JIT_CONFIG_KEY) if jit else ("RUNNER_TOKEN", TOKEN_KEY)
    )
    added = []
    if "RUNNER_NAME" not in present:
        added.append(_env("RUNNER_NAME", runner_name))
    if material_name not in present:
        added.append(_secret_env(material_name, secret_name, material_key))
    return added


def _runner_default_mounts(layout: _Layout) -> list[Manifest]:
    runner_mount = [_mount(RUNNER_VOLUME, RUNNER_VOLUME_PATH)] if layout.runner_volume else []
    work_mount = _mount(WORK_VOLUME, layout.work_dir)
    if layout.kubernetes_mode:
        return [work_mount, *runner_mount]
    if layout.docker_sidecar:
        return [*runner_mount, work_mount, _mount(VAR_RUN_VOLUME, VAR_RUN_PATH)]
    # dockerd in the runner, or no docker: the work dir lives inside the runner volume.
    return runner_mount


# ------------------------------------------------------------------ docker sidecar


def _docker_container(
    base: Manifest | None,
    spec: RunnerSpec,
    defaults: PodDefaults,
    layout: _Layout,
    runner_image: str,
) -> Manifest:
    container: Manifest = base if base is not None else {"name": DOCKER_CONTAINER}
    container["image"] = container.get("image") or defaults.docker_image
    user_args = list(container.get("args") or [])
    if not user_args or user_args[0] != "dockerd":
        container["args"] = _dockerd_args(spec, layout, user_args)
    # else a whole command line of the user's own (ARC would run `dockerd` twice): kept as is
    env = container.get("env") or _copy_json(spec.docker_env)
    env += _docker_env(env, spec, defaults, runner_image)
    container["env"] = env
    container["volumeMounts"] = _with_default_mounts(
        container.get("volumeMounts") or _copy_json(spec.docker_volume_mounts),
        _docker_default_mounts(layout),
        [],
    )
    _fill_resources(container, spec.dockerd_container_resources)
    _fill_docker_security_context(container, spec, layout)
    # ARC's preStop always (it replaces the sidecar's whole lifecycle): a preStop of the
    # user's own would let dockerd stop under a job step. Other handlers are kept.
    lifecycle = container.get("lifecycle")
    container["lifecycle"] = {
        **(lifecycle if isinstance(lifecycle, dict) else {}),
        "preStop": {"exec": {"command": ["/bin/sh", "-c", DOCKER_PRESTOP_SCRIPT]}},
    }
    return container


def _dockerd_args(spec: RunnerSpec, layout: _Layout, user_args: list[str]) -> list[str]:
    """ARC's dockerd command line around the user's own flags: `dockerd` explicitly (the dind
    entrypoint would otherwise add TCP and TLS), the socket, then the user's args, then the
    socket's group, the MTU and the registry mirror."""
    args = ["dockerd", f"--host={DOCKER_HOST}", *user_args, f"--group=$({DOCKER_GROUP_GID_ENV})"]
    if spec.docker_mtu is not None:
        args += ["--mtu", str(spec.docker_mtu)]
    if layout.registry_mirror:
        args.append(f"--registry-mirror={layout.registry_mirror}")
    return args


def _docker_env(
    env: list[Manifest], spec: RunnerSpec, defaults: PodDefaults, runner_image: str
) -> list[Manifest]:
    present = {item.get("name") for item in env}
    added = []
    if DOCKER_GROUP_GID_ENV not in present:
        # The runner container's image as it runs (ARC reads the container, not the spec).
        gid = _docker_group_gid(runner_image, defaults)
        added.append(_env(DOCKER_GROUP_GID_ENV, gid))
    if spec.docker_mtu is not None and "DOCKERD_ROOTLESS_ROOTLESSKIT_MTU" not in present:
        added.append(_env("DOCKERD_ROOTLESS_ROOTLESSKIT_MTU", str(spec.docker_mtu)))
    return added


def _docker_group_gid(runner_image: str, defaults: PodDefaults) -> str:
    """The docker group of the runner image, so the runner user can use the socket.

    ARC's Ubuntu 22.04 and 24.04 runner images use gid 121, its 20.04 images 1001.
    """
    if "22.04" in runner_image or "24.04" in runner_image:
        return "121"
    if "20.04" in runner_image:
        return "1001"
    return defaults.docker_gid


def _docker_default_mounts(layout: _Layout) -> list[Manifest]:
    runner_mount = [_mount(RUNNER_VOLUME, RUNNER_VOLUME_PATH)] if layout.runner_volume else []
    return [
        *runner_mount,
        _mount(VAR_RUN_VOLUME, VAR_RUN_PATH),
        _mount(WORK_VOLUME, layout.work_dir),
    ]


def _fill_docker_security_context(container: Manifest, spec: RunnerSpec, layout: _Layout) -> None:
    # Only when the user gave none, as ARC: a securityContext of their own is theirs whole,
    # never made more privileged than they wrote it.
    if container.get("securityContext") is not None:
        return
    security: Manifest = {"privileged": layout.privileged_allowed}
    selinux = (spec.security_context or {}).get("seLinuxOptions")
    if selinux is not None:
        security["seLinuxOptions"] = _copy_json(selinux)
    container["securityContext"] = security


# ------------------------------------------------------------------ volumes


def _volumes(spec: RunnerSpec, layout: _Layout) -> list[Manifest]:
    """ARC's volumes, then the user's; a user volume replaces the default of the same name."""
    defaults: list[Manifest] = []
    if layout.kubernetes_mode:
        defaults.append(_work_claim_volume(spec.work_volume_claim_template))
    if layout.runner_volume:
        defaults.append(_runner_volume(spec))
    if layout.docker_sidecar:
        defaults.append({"name": WORK_VOLUME, "emptyDir": {}})
        defaults.append(_var_run_volume(spec))
    user = _copy_json(spec.volumes)
    user_names = {volume.get("name") for volume in user}
    return [v for v in defaults if v["name"] not in user_names] + user


def _runner_volume(spec: RunnerSpec) -> Manifest:
    empty_dir: Manifest = {}
    if spec.volume_storage_medium:
        empty_dir["medium"] = spec.volume_storage_medium
    # A zero limit means "no runner volume"; where the sidecar still needs one, it is unlimited.
    if spec.volume_size_limit is not None and not _is_zero_quantity(spec.volume_size_limit):
        empty_dir["sizeLimit"] = str(spec.volume_size_limit)
    return {"name": RUNNER_VOLUME, "emptyDir": empty_dir}


def _var_run_volume(spec: RunnerSpec) -> Manifest:
    limit = spec.docker_var_run_volume_size_limit
    size_limit = DEFAULT_VAR_RUN_SIZE_LIMIT if limit is None else str(limit)
    return {"name": VAR_RUN_VOLUME, "emptyDir": {"medium": "Memory", "sizeLimit": size_limit}}


def ephemeral_volume_names(spec: RunnerSpec) -> list[str]:
    """The pod's generic ephemeral volumes, each given a claim named after the pod: the
    work volume in kubernetes container mode, and the spec's own."""
    names = [WORK_VOLUME] if spec.container_mode == KUBERNETES_MODE else []
    for volume in spec.volumes:
        name = volume.get("name") if isinstance(volume, dict) else None
        if isinstance(name, str) and "ephemeral" in volume:
            names.append(name)
    return names


def _work_claim_volume(template: WorkVolumeClaimTemplate | None) -> Manifest:
    """The generic ephemeral volume whose PVC (`<pod>-work`) the container hooks share with jobs."""
    if template is None:
        return {"name": WORK_VOLUME, "emptyDir": {}}
    claim_spec: Manifest = {}
    if template.access_modes:
        claim_spec["accessModes"] = list(template.access_modes)
    # Left out when unset so the cluster's default StorageClass applies; ARC wrote "" here,
    # which means "no class" and disables dynamic provisioning.
    if template.storage_class_name is not None:
        claim_spec["storageClassName"] = template.storage_class_name
    if template.resources:
        claim_spec["resources"] = _copy_json(template.resources)
    return {"name": WORK_VOLUME, "ephemeral": {"volumeClaimTemplate": {"spec": claim_spec}}}


# ------------------------------------------------------------------ building blocks


def _with_default_mounts(
    leading: list[Manifest], defaults: list[Manifest], trailing: list[Manifest]
) -> list[Manifest]:
    """`leading`, the defaults the user does not mount already (by name or path), `trailing`."""
    user = leading + trailing
    names = {mount.get("name") for mount in user}
    paths = {mount.get("mountPath") for mount in user}
    kept = [m for m in defaults if m["name"] not in names and m["mountPath"] not in paths]
    return leading + kept + trailing


def _set_list(manifest: Manifest, key: str, value: list[Manifest]) -> None:
    """Set `key`, or leave it out when empty, as Kubernetes itself serializes empty lists."""
    if value:
        manifest[key] = value
    else:
        manifest.pop(key, None)


def _fill_list(container: Manifest, key: str, value: list[Manifest]) -> None:
    if not container.get(key) and value:
        container[key] = _copy_json(value)


def _fill_resources(container: Manifest, resources: Manifest | None) -> None:
    """Fill requests, limits, ... that the container leaves empty, as ARC does one by one."""
    merged = dict(container.get("resources") or {})
    for key, value in (resources or {}).items():
        if not merged.get(key) and value:
            merged[key] = _copy_json(value)
    if merged:
        container["resources"] = merged


def _copy_json(value: _JsonValue) -> _JsonValue:
    """A deep copy of decoded JSON (what `copy.deepcopy` gives, several times faster)."""
    if isinstance(value, dict):
        return {key: _copy_json(item) for key, item in value.items()}  # type: ignore[return-value]
    if isinstance(value, list):
        return [_copy_json(item) for item in value]  # type: ignore[return-value]
    if isinstance(value, _IMMUTABLE_SCALARS):
        return value
    return copy.deepcopy(value)


def _is_set(value: object) -> bool:
    if isinstance(value, list | dict | str):
        return bool(value)
    return value is not None


def _is_zero_quantity(value: int | str | None) -> bool:
    if value is None:
        return False
    number = _QUANTITY_NUMBER.match(str(value).strip())
    return number is not None and float(number.group(0)) == 0


def _bool(value: bool) -> str:
    return "true" if value else "false"


def _env(name: str, value: str) -> Manifest:
    return {"name": name, "value": value}


def _field_env(name: str, field_path: str) -> Manifest:
    return {"name": name, "valueFrom": {"fieldRef": {"fieldPath": field_path}}}


def _secret_env(name: str, secret_name: str, key: str) -> Manifest:
    return {"name": name, "valueFrom": {"secretKeyRef": {"name": secret_name, "key": key}}}


def _mount(name: str, path: str) -> Manifest:
    return {"name": name, "mountPath": path}
