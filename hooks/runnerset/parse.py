"""A RunnerSet as a hook request carries it: the parsed set, the problems of its spec, its
registration mode and its last status."""

from __future__ import annotations

from pydantic import ValidationError

from hooks.children import describe_validation_error
from hooks.deps import HookDeps
from hooks.metacontroller import CompositeHookRequest, KubeObject, object_or_empty
from hooks.naming import claim_names_problem
from hooks.resources.common import ObjectMeta
from hooks.resources.runnerset import RunnerSet, RunnerSetSpec, RunnerSetStatus
from hooks.runner.registration import registration_mode
from hooks.runner.validation import validate_runner_spec
from hooks.runnerset.statefulset import runner_spec
from hooks.scale_set_mode import SCALE_SET_ANNOTATION


def parse_runner_set(
    request: CompositeHookRequest, deps: HookDeps
) -> tuple[RunnerSet | None, list[str]]:
    try:
        runner_set = RunnerSet.model_validate(request.parent)
    except ValidationError as error:
        return None, [describe_validation_error(error, "RunnerSet")]
    if runner_set.spec is None:
        return runner_set, ["spec is required"]
    return runner_set, _spec_problems(runner_set, jit=uses_jit(runner_set, deps))


def uses_jit(runner_set: RunnerSet, deps: HookDeps) -> bool:
    """JIT when asked for, and always for a scale set's members."""
    annotations = runner_set.metadata.annotations
    mode = deps.settings.runner_registration_mode
    return SCALE_SET_ANNOTATION in annotations or registration_mode(annotations, mode) == "jit"


def observed_status(parent: KubeObject) -> RunnerSetStatus:
    raw = parent.get("status")
    if not isinstance(raw, dict):
        return RunnerSetStatus()
    try:
        return RunnerSetStatus.model_validate(raw)
    except ValidationError:
        return RunnerSetStatus()


def _spec_problems(runner_set: RunnerSet, *, jit: bool) -> list[str]:
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
        as_runner, jit=jit, metadata=_template_metadata(spec), claimed_volumes=claimed
    )
    if spec.replicas is not None and spec.replicas < 0:
        problems.append("spec.replicas must not be negative")
    if len(claimed) != len(names):
        problems.append("spec.volumeClaimTemplates: every template needs metadata.name")
    if (names_problem := claim_names_problem(runner_set.metadata.name, claimed)) is not None:
        problems.append(names_problem)
    return problems


def _template_metadata(spec: RunnerSetSpec) -> ObjectMeta:
    """The labels and annotations the pod template gives every runner pod."""
    template = spec.template.metadata
    return ObjectMeta(
        name="runner", labels=dict(template.labels), annotations=dict(template.annotations)
    )
