"""A RunnerSet as a hook request carries it: the parsed set, the problems of its spec, its
registration mode and its last status."""

from __future__ import annotations

from pydantic import ValidationError

from hooks.children import describe_validation_error
from hooks.deps import HookDeps
from hooks.metacontroller import CompositeHookRequest, KubeObject, object_or_empty
from hooks.naming import claim_names_problem
from hooks.resources.common import ObjectMeta
from hooks.resources.pod_rules import (
    DNS1123_LABEL,
    claim_spec_problems,
    metadata_problems,
    pod_problems,
)
from hooks.resources.readable_part import readable_part, readable_status
from hooks.resources.runnerset import RunnerSet, RunnerSetSpec, RunnerSetStatus
from hooks.runner.pod import jit_default_image
from hooks.runner.registration import registration_mode
from hooks.runner.validation import VALIDATION_DEFAULTS, validate_runner_spec
from hooks.runnerset.statefulset import runner_spec, statefulset
from hooks.scale_set_mode import SCALE_SET_ANNOTATION

POD_MANAGEMENT_POLICIES = ("OrderedReady", "Parallel")
INT32 = (-(2**31), 2**31 - 1)
"""What a StatefulSet's integer fields can hold: a larger number is not read at all."""


def parse_runner_set(
    request: CompositeHookRequest, deps: HookDeps
) -> tuple[RunnerSet | None, list[str]]:
    try:
        runner_set = RunnerSet.model_validate(request.parent)
    except ValidationError as error:
        return None, [describe_validation_error(error, "RunnerSet")]
    if runner_set.spec is None:
        return runner_set, ["spec is required"]
    labels = deps.with_common_labels(runner_set.spec.labels)
    if labels is not runner_set.spec.labels:
        # ARC's --common-runner-labels reach a RunnerSet's runners as a RunnerDeployment's:
        # in their registration and in the pod's hash (a change rolls them over).
        spec = runner_set.spec.model_copy(update={"labels": labels})
        runner_set = runner_set.model_copy(update={"spec": spec})
    jit = uses_jit(runner_set, deps)
    return runner_set, _spec_problems(
        runner_set,
        jit=jit,
        jit_default_image=jit_default_image(deps.settings),
    )


def readable_runner_set(
    request: CompositeHookRequest, deps: HookDeps
) -> tuple[RunnerSet | None, list[str]]:
    """The RunnerSet as far as it reads (`hooks.resources.readable_part`), with the problems of
    the whole: what a finalize stops its runners by when its spec does not read."""
    runner_set, problems = parse_runner_set(request, deps)
    if runner_set is not None and runner_set.spec is not None:
        return runner_set, problems
    return readable_part(RunnerSet, request.parent), problems


def uses_jit(runner_set: RunnerSet, deps: HookDeps) -> bool:
    """JIT when asked for, and always for a scale set's members."""
    annotations = runner_set.metadata.annotations
    mode = deps.settings.runner_registration_mode
    return SCALE_SET_ANNOTATION in annotations or registration_mode(annotations, mode) == "jit"


def observed_status(parent: KubeObject) -> RunnerSetStatus:
    return readable_status(RunnerSetStatus, parent)


def _spec_problems(runner_set: RunnerSet, *, jit: bool, jit_default_image: str) -> list[str]:
    spec = runner_set.spec
    assert spec is not None
    names = [object_or_empty(t.get("metadata")).get("name") for t in spec.volume_claim_templates]
    claimed = [name for name in names if isinstance(name, str) and name]
    try:
        as_runner = runner_spec(runner_set)
    except ValidationError as error:
        # The pod template's parts carry into the runner's spec, typed there.
        return [describe_validation_error(error, "RunnerSet spec.template.spec")]
    problems = validate_runner_spec(
        as_runner,
        jit=jit,
        metadata=_template_metadata(spec),
        claimed_volumes=claimed,
        jit_default_image=jit_default_image,
    )
    if spec.replicas is not None and spec.replicas < 0:
        problems.append("spec.replicas must not be negative")
    if len(claimed) != len(names):
        problems.append("spec.volumeClaimTemplates: every template needs metadata.name")
    if (names_problem := claim_names_problem(runner_set.metadata.name, claimed)) is not None:
        problems.append(names_problem)
    if not problems:
        # Only the pod of a spec valid so far: its problems are those of the template's own
        # fields (hostNetwork, hostname, ...), copied into the pod unread.
        problems += _statefulset_pod_problems(runner_set, jit=jit)
    return problems + _statefulset_problems(spec) + _claim_template_problems(spec)


STATEFULSET_POD_LABELS = {
    "controller-revision-hash": "runner-0",
    "statefulset.kubernetes.io/pod-name": "runner-0",
    "apps.kubernetes.io/pod-index": "0",
}
"""What the StatefulSet controller adds to the labels of each pod it creates (over the
template's): the API server judges the pod's `matchLabelKeys` against them too."""


def _statefulset_pod_problems(runner_set: RunnerSet, *, jit: bool) -> list[str]:
    """What the API server would refuse in the pod of a runner's StatefulSet, built as the sync
    builds it: the runner pod with the template's other fields, and the claims of a slot."""
    spec = runner_set.spec
    assert spec is not None
    slot = 0 if spec.volume_claim_templates else None
    try:
        built = statefulset(
            runner_set,
            VALIDATION_DEFAULTS,
            name="runner",
            hash_="0",
            slot=slot,
            created_at="",
            jit=jit,
        )
    except (TypeError, ValueError, KeyError, AttributeError) as error:
        return [f"the runner pod cannot be built from this spec ({type(error).__name__})"]
    template = built["spec"]["template"]
    metadata = template.get("metadata") or {}
    labels = {**(metadata.get("labels") or {}), **STATEFULSET_POD_LABELS}
    pod = {**template, "metadata": {**metadata, "labels": labels}}

    return [f"the runner pod would be refused: {problem}" for problem in pod_problems(pod)]


def _statefulset_problems(spec: RunnerSetSpec) -> list[str]:
    """The rules of a StatefulSet (`ValidateStatefulSetSpec`) for the fields copied into the
    StatefulSets of the runners."""
    problems: list[str] = []
    if spec.template.spec.get("activeDeadlineSeconds") is not None:
        problems.append(
            "spec.template.spec.activeDeadlineSeconds: must not be set, a StatefulSet's pods "
            "have no deadline"
        )
    name = spec.service_name
    if name and not (len(name) <= 63 and DNS1123_LABEL.fullmatch(name)):
        # The StatefulSet controller makes it each pod's subdomain (found by the hostile-input
        # fuzzer: `Bad_Name` was valid, and no runner pod could ever be made).
        problems.append("spec.serviceName: must be a DNS label (lowercase, at most 63)")
    policy = spec.pod_management_policy
    if policy and policy not in POD_MANAGEMENT_POLICIES:
        problems.append("spec.podManagementPolicy: must be OrderedReady or Parallel")
    if spec.min_ready_seconds is not None and not 0 <= spec.min_ready_seconds <= INT32[1]:
        problems.append(f"spec.minReadySeconds: must be from 0 to {INT32[1]}")
    limit = spec.revision_history_limit
    if limit is not None and not INT32[0] <= limit <= INT32[1]:
        problems.append("spec.revisionHistoryLimit: must be a 32-bit integer")
    return problems


def _claim_template_problems(spec: RunnerSetSpec) -> list[str]:
    """Each claim template becomes the PersistentVolumeClaims of its slots: its labels,
    annotations and spec must be those of a claim the API server accepts."""
    problems: list[str] = []
    for index, template in enumerate(spec.volume_claim_templates):
        where = f"spec.volumeClaimTemplates[{_template_label(template, index)}]"
        metadata = template.get("metadata")
        if metadata is not None and not isinstance(metadata, dict):
            problems.append(f"{where}.metadata: must be an object")
        elif metadata:
            problems += metadata_problems(metadata, f"{where}.metadata")
        claim_spec = template.get("spec")
        problems += claim_spec_problems({} if claim_spec is None else claim_spec, f"{where}.spec")
    return problems


def _template_label(template: dict[str, object], index: int) -> str:
    """How a claim template is named in a message: its name when it is a DNS label (the only
    names a volume may have), else its index."""
    name = object_or_empty(template.get("metadata")).get("name")
    if isinstance(name, str) and 0 < len(name) <= 63 and DNS1123_LABEL.fullmatch(name):
        return name
    return str(index)


def _template_metadata(spec: RunnerSetSpec) -> ObjectMeta:
    """The labels and annotations the pod template gives every runner pod."""
    template = spec.template.metadata
    return ObjectMeta(
        name="runner", labels=dict(template.labels), annotations=dict(template.annotations)
    )
