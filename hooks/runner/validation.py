"""Runner spec validation, as ARC's admission webhook does it, plus what ARC found only when the
API server refused the pod: the spec is judged by the pod it builds (`pod_rules`).

Messages name fields, never their values (a secret pasted into the wrong field must not reach a
status condition).
"""

from __future__ import annotations

import re
from collections.abc import Collection
from typing import Any

import orjson

from hooks.memo import Memo
from hooks.resources.common import ObjectMeta
from hooks.resources.pod_rules import fragment_problems, pod_problems
from hooks.resources.replicaset import RunnerTemplate
from hooks.resources.runner import REPOSITORY_PATTERN, SCOPE_PATTERN, Runner, RunnerSpec
from hooks.runner.container_mode import pod_service_account
from hooks.runner.pod import PodDefaults, build_runner_pod, needs_a_token, starts_nothing
from hooks.runner.registration import IMPLICIT_JIT_LABELS, jit_labels

ALLOWED_WORK_ACCESS_MODES = ("ReadWriteOnce", "ReadWriteMany")
MAX_JIT_LABELS = 100
DOCKER_MTU_RANGE = (68, 65535)  # IPv4's minimum MTU to the largest an interface takes

# The spec's parts copied into the pod as they are, by the Kubernetes type each must have
# (True: a list of them).
POD_PARTS: dict[str, tuple[str, bool]] = {
    "containers": ("Container", True),
    "initContainers": ("Container", True),
    "sidecarContainers": ("Container", True),
    "ephemeralContainers": ("EphemeralContainer", True),
    "volumes": ("Volume", True),
    "volumeMounts": ("VolumeMount", True),
    "dockerVolumeMounts": ("VolumeMount", True),
    "env": ("EnvVar", True),
    "dockerEnv": ("EnvVar", True),
    "envFrom": ("EnvFromSource", True),
    "resources": ("ResourceRequirements", False),
    "dockerdContainerResources": ("ResourceRequirements", False),
    "securityContext": ("PodSecurityContext", False),
    "imagePullSecrets": ("LocalObjectReference", True),
    "affinity": ("Affinity", False),
    "tolerations": ("Toleration", True),
    "hostAliases": ("HostAlias", True),
    "topologySpreadConstraints": ("TopologySpreadConstraint", True),
    "dnsConfig": ("PodDNSConfig", False),
}

# What the settings add to a pod, as neutral values: validation judges the user's spec.
VALIDATION_DEFAULTS = PodDefaults(
    runner_image="runner",
    docker_image="docker",
    docker_gid="1001",
    docker_registry_mirror="",
    runner_image_pull_secrets=(),
    runner_github_url="https://github.com/",
)


def validate_runner_spec(
    spec: RunnerSpec,
    *,
    jit: bool = False,
    metadata: ObjectMeta | None = None,
    claimed_volumes: Collection[str] = (),
    jit_default_image: str | None = None,
) -> list[str]:
    """Every problem with the spec, in words a user can act on; empty when valid. `metadata`
    is what the runner pod's labels and annotations come from (a template's, or the Runner's);
    `claimed_volumes` are volumes the pod gets from claim templates (a RunnerSet's);
    `jit_default_image` is the runner image a JIT spec without one gets (`RUNNER_JIT_IMAGE`)."""
    problems = _scope_problems(spec)
    problems += _container_mode_problems(spec)
    problems += _docker_problems(spec)
    if jit:
        problems += _jit_problems(spec, jit_default_image)
    parts = _part_problems(spec)
    if parts:
        return problems + parts  # a pod is built only from parts of the right shape
    pod_metadata = metadata or ObjectMeta(name="runner")
    return problems + _pod_problems(spec, pod_metadata, jit, claimed_volumes)


def _part_problems(spec: RunnerSpec) -> list[str]:
    wire = spec.model_dump(by_alias=True, include=_POD_PART_FIELDS, exclude_none=True)
    problems: list[str] = []
    for field, value in wire.items():
        definition, many = POD_PARTS[field]
        items = list(enumerate(value)) if many else [(None, value)]
        for index, item in items:
            where = f"spec.{field}" + (f"[{index}]" if index is not None else "")
            problems += fragment_problems(item, definition, where)
    return problems


_POD_PART_FIELDS = {
    name for name, info in RunnerSpec.model_fields.items() if info.alias in POD_PARTS
}


_TEMPLATE_PROBLEMS: Memo[bytes, tuple[str, ...]] = Memo(256)
"""Problems of templates seen before, by their JSON: a set is synced at every change of any
of its Runners, and its template rarely changes."""


def validate_runner_template(
    template: RunnerTemplate, *, jit: bool = False, jit_default_image: str | None = None
) -> list[str]:
    """A RunnerReplicaSet's or RunnerDeployment's template: the Runners it makes, and their
    pods, must be accepted (problems are prefixed with the template's path). `jit`: its
    Runners register with JIT configs, whose own rules apply (a set whose Runners all refuse
    to start says why itself, not only on each Runner)."""
    dumped = template.model_dump(mode="json")
    key = orjson.dumps([dumped, jit, jit_default_image], option=orjson.OPT_SORT_KEYS)
    known = _TEMPLATE_PROBLEMS.get(key)
    if known is None:
        known = tuple(_template_problems(template, jit, jit_default_image))
        _TEMPLATE_PROBLEMS.put(key, known)
    return list(known)


def _template_problems(
    template: RunnerTemplate, jit: bool, jit_default_image: str | None
) -> list[str]:
    metadata = ObjectMeta(
        name="runner",
        labels=dict(template.metadata.labels),
        annotations=dict(template.metadata.annotations),
    )
    problems = validate_runner_spec(
        template.spec, jit=jit, metadata=metadata, jit_default_image=jit_default_image
    )
    return [f"spec.template.spec: {problem}" for problem in problems]


def _pod_problems(
    spec: RunnerSpec, metadata: ObjectMeta, jit: bool, claimed_volumes: Collection[str]
) -> list[str]:
    """What the API server would refuse in the pod this spec builds."""
    runner = Runner(metadata=metadata, spec=spec)
    try:
        pod = build_runner_pod(
            runner,
            VALIDATION_DEFAULTS,
            secret_name="registration",
            jit=jit,
            service_account=pod_service_account(runner),
        )
    except (TypeError, ValueError, KeyError, AttributeError) as error:
        # Free-form parts (containers, volumes, ...) of a shape no pod can have.
        return [f"the runner pod cannot be built from this spec ({type(error).__name__})"]
    volumes = pod["spec"].setdefault("volumes", [])
    present = {v.get("name") for v in volumes if isinstance(v, dict)}
    volumes += [
        {"name": name, "persistentVolumeClaim": {"claimName": name}}
        for name in claimed_volumes
        if name not in present
    ]
    return [f"the runner pod would be refused: {problem}" for problem in pod_problems(pod)]


def _docker_problems(spec: RunnerSpec) -> list[str]:
    low, high = DOCKER_MTU_RANGE
    if spec.docker_mtu is not None and not low <= spec.docker_mtu <= high:
        return [f"spec.dockerMTU must be between {low} and {high}"]
    return []


def _scope_problems(spec: RunnerSpec) -> list[str]:
    scopes = [s for s in (spec.enterprise, spec.organization, spec.repository) if s]
    if not scopes:
        return ["spec needs enterprise, organization or repository"]
    if len(scopes) > 1:
        return ["spec cannot have many fields defined enterprise, organization and repository"]
    checks = (
        ("enterprise", spec.enterprise, SCOPE_PATTERN, "a name without '/'"),
        ("organization", spec.organization, SCOPE_PATTERN, "a name without '/'"),
        ("repository", spec.repository, REPOSITORY_PATTERN, "OWNER/NAME"),
    )
    return [
        f"spec.{field} must be {shape}"
        for field, value, pattern, shape in checks
        if value and not re.match(pattern, value)
    ]


def _container_mode_problems(spec: RunnerSpec) -> list[str]:
    # ARC compares the mode with "kubernetes" alone: any other word (`dind`, the scale-set
    # chart's) builds the default pod, as "" does.
    if (spec.container_mode or "") != "kubernetes":
        if _is_zero_quantity(spec.volume_size_limit) and _docker_sidecar(spec):
            return ["spec.volumeSizeLimit 0 disables the runner volume the docker sidecar needs"]
        return []
    template = spec.work_volume_claim_template
    if template is None:
        return ["spec.containerMode: kubernetes must have workVolumeClaimTemplate field specified"]
    problems: list[str] = []
    if not template.access_modes:
        problems.append("Access mode should have at least one mode specified")
    problems += [
        f"Access mode {mode!r} is not supported"
        for mode in template.access_modes
        if mode not in ALLOWED_WORK_ACCESS_MODES and len(mode) <= len("ReadWriteOncePod")
    ]
    if any(len(mode) > len("ReadWriteOncePod") for mode in template.access_modes):
        problems.append("spec.workVolumeClaimTemplate.accessModes: an access mode is not supported")
    if any(v.get("name") == "work" for v in spec.volumes):
        problems.append("spec.volumes must not define 'work' in kubernetes container mode")
    if any(m.get("name") == "work" for m in spec.volume_mounts):
        problems.append("spec.volumeMounts must not mount 'work' in kubernetes container mode")
    if any(_mounts_work(c) for c in spec.containers if c.get("name") == "runner"):
        # The claim is mounted at the work directory, where the container hooks expect it:
        # mounted elsewhere, the job pods would see an empty workspace.
        problems.append("the runner container must not mount 'work' in kubernetes container mode")
    return problems


def _mounts_work(container: dict[str, Any]) -> bool:
    mounts = container.get("volumeMounts")
    return isinstance(mounts, list) and any(
        isinstance(m, dict) and m.get("name") == "work" for m in mounts
    )


def jit_start_problem(spec: RunnerSpec, jit_default_image: str | None) -> str | None:
    """Why a runner pod built from `spec` could not start from a JIT config, if it could
    not: its runner container runs ARC's own image with no `command` of the spec's, whose
    startup.sh needs a registration token. Any other image is taken on trust (GitHub's gets
    its `run.sh` as command, `hooks.runner.pod`)."""
    runner = next((c for c in spec.containers if c.get("name") == "runner"), {})
    if runner.get("command"):
        return None
    image = spec.image or runner.get("image") or jit_default_image
    if not isinstance(image, str):
        return None
    if spec.dockerd_within_runner_container and starts_nothing(image):
        return (
            "dockerdWithinRunnerContainer needs a runner image with dockerd, and "
            "ghcr.io/actions/actions-runner, the image of JIT runners that name none, has "
            "none: name one (spec.image) that also starts from a JIT config"
        )
    if not needs_a_token(image):
        return None
    where = (
        "spec.image"
        if spec.image
        else "the runner container's image"
        if runner.get("image")
        else "RUNNER_JIT_IMAGE"
    )
    return (
        f"JIT registration needs a runner image that starts from a JIT config: {where} is "
        "ARC's summerwind/actions-runner, whose startup.sh needs a registration token; use "
        "ghcr.io/actions/actions-runner (or leave the image to RUNNER_JIT_IMAGE)"
    )


def _jit_problems(spec: RunnerSpec, jit_default_image: str | None) -> list[str]:
    problems: list[str] = []
    if (start := jit_start_problem(spec, jit_default_image)) is not None:
        problems.append(start)
    if spec.ephemeral is False:
        problems.append(
            "JIT registration makes ephemeral runners: spec.ephemeral must not be false"
        )
    if len(jit_labels(spec.labels, spec.node_selector)) > MAX_JIT_LABELS:
        problems.append(
            f"JIT registration allows at most {MAX_JIT_LABELS} labels, "
            f"{', '.join(IMPLICIT_JIT_LABELS)} and COMMON_RUNNER_LABELS included"
        )
    return problems


def _docker_sidecar(spec: RunnerSpec) -> bool:
    return spec.docker_enabled is not False and not spec.dockerd_within_runner_container


def _is_zero_quantity(value: int | str | None) -> bool:
    if value is None:
        return False
    try:
        return float(str(value).rstrip("KMGTPEikmnu")) == 0
    except ValueError:
        return False
