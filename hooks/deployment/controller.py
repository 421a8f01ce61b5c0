"""The RunnerDeployment controller: one RunnerReplicaSet per runner template, and rollouts.

Children: RunnerReplicaSets (InPlace). The newest set is the one whose template hash matches the
current template (an existing set with that hash is taken over, e.g. after a rollback); it gets
the effective replicas. Older sets keep theirs until the newest is ready, then go to zero, and
are deleted once they report zero replicas. Their Runners leave through the Runner finalize hook,
so a rollout never cuts off a job and never leaves a registration behind.

Effective replicas: `status.desiredReplicas` of the HorizontalRunnerAutoscaler whose
`scaleTargetRef` names this RunnerDeployment (a related object, read, never written); once it is
gone, the size it last gave (`status.autoscaled`) for a while (`hooks.scale_target`), as ARC's
HRA left its answer in the deployment's spec; else `spec.replicas`, else 1.

Scale-set mode (`hooks.scale_set_mode`): the deployment keeps its runner scale set (looked up
by name, created, labels kept in sync), records it in `status.scaleSet` and gives its id to its
Runners through the template. Its finalize hook scales its sets to zero, waits until they
report no Runner (each leaves through its own finalize hook, unregistered), then deletes the
scale set. A deployment without a scale set is finalized at once, as before.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from functools import partial
from typing import Any, TypeGuard

from pydantic import ValidationError

from hooks.children import (
    ConditionValue,
    as_kept,
    describe_validation_error,
    invalid_answer,
    merge_conditions,
)
from hooks.deps import HookDeps
from hooks.github.port import Scope
from hooks.kube.port import RUNNER_DEPLOYMENTS
from hooks.metacontroller import (
    CompositeHookRequest,
    CompositeHookResponse,
    HookKind,
    HookRoute,
    KubeObject,
    object_or_empty,
)
from hooks.naming import (
    DEPLOYMENT_NAME_LABEL,
    TEMPLATE_HASH_LABEL,
    deployment_name_problem,
    deployment_name_selector,
    without_controller_uid,
)
from hooks.replicaset.controller import readable_time, template_hash
from hooks.resources.common import ScaleSetStatus
from hooks.resources.readable_part import readable_status
from hooks.resources.replicaset import (
    RunnerDeployment,
    RunnerDeploymentStatus,
    RunnerTemplate,
)
from hooks.resources.runner import API_VERSION
from hooks.runner.parse import registers_with_jit
from hooks.runner.pod import jit_default_image
from hooks.runner.validation import validate_runner_template
from hooks.scale_set_keeper import (
    SCALE_SET_READY,
    ScaleSetProblem,
    delete_scale_set,
    keep_scale_set,
    kept_condition,
    retire_scale_set,
)
from hooks.scale_set_mode import (
    SCALE_SET_ANNOTATION,
    SCALE_SET_ID_ANNOTATION,
    declared_scale_set,
)
from hooks.scale_target import (
    AUTOSCALERS_CONDITION,
    MAX_COUNT,
    TargetSize,
    autoscaler_targeting,
    autoscalers_condition,
    later_effective_time,
    target_size,
)

FINALIZE_RESYNC_SECONDS = 5.0


def customize_runner_deployment(request: dict[str, Any]) -> dict[str, Any]:
    """Ask for the HorizontalRunnerAutoscalers of the deployment's namespace; and, once a
    deployment with a scale set is being deleted, for its Runners (its finalize hook waits
    until none is left, busy ones being stopped included, before deleting the scale set)."""
    parent = object_or_empty(request.get("parent"))
    metadata = object_or_empty(parent.get("metadata"))
    namespace = metadata.get("namespace")
    rules: list[dict[str, Any]] = [
        {"apiVersion": API_VERSION, "resource": "horizontalrunnerautoscalers", "labelSelector": {}}
    ]
    name = metadata.get("name")
    selector = deployment_name_selector(name) if isinstance(name, str) else None
    if metadata.get("deletionTimestamp") and selector is not None and _has_scale_set(parent):
        rules.append({"apiVersion": API_VERSION, "resource": "runners", "labelSelector": selector})
    if isinstance(namespace, str) and namespace:
        for rule in rules:
            rule["namespace"] = namespace
    return {"relatedResources": rules}


def _has_scale_set(parent: KubeObject) -> bool:
    annotations = object_or_empty(object_or_empty(parent.get("metadata")).get("annotations"))
    status = object_or_empty(parent.get("status"))
    return SCALE_SET_ANNOTATION in annotations or bool(status.get("scaleSet"))


@dataclass(frozen=True)
class _Set:
    obj: KubeObject
    name: str
    template_hash: str | None
    spec_replicas: int
    replicas: int
    ready: int
    available: int
    registered: int
    busy: int
    stopping: int  # its Runners being deleted whose pods still run (a busy one: its job)

    @classmethod
    def read(cls, obj: KubeObject) -> _Set:
        """A RunnerReplicaSet as it reports itself. An unreadable count errs on the side of
        keeping runners: replicas read as some (the set is not deleted), readiness as none
        (older sets are not retired on its account)."""
        metadata = object_or_empty(obj.get("metadata"))
        raw_status = obj.get("status")
        status = object_or_empty(raw_status)
        status_unreadable = raw_status is not None and not isinstance(raw_status, dict)

        def count(key: str, unreadable: int) -> int:
            value = status.get(key)
            if status_unreadable or (value is not None and not _is_count(value)):
                return unreadable
            return int(value or 0)

        replicas = object_or_empty(obj.get("spec")).get("replicas")
        template_hash = object_or_empty(metadata.get("labels")).get(TEMPLATE_HASH_LABEL)
        return cls(
            obj=obj,
            name=str(metadata.get("name", "")),
            template_hash=template_hash if isinstance(template_hash, str) else None,
            spec_replicas=replicas if _is_count(replicas) else 1,
            replicas=count("replicas", unreadable=1),
            ready=count("readyReplicas", unreadable=0),
            available=count("availableReplicas", unreadable=0),
            registered=count("registeredReplicas", unreadable=0),
            busy=count("busyReplicas", unreadable=0),
            stopping=count("stoppingReplicas", unreadable=1),
        )


def _is_count(value: object) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= MAX_COUNT


def autoscaler_of(deployment: RunnerDeployment, related: list[KubeObject]) -> KubeObject | None:
    return autoscaler_targeting("RunnerDeployment", deployment.metadata.name, related)


def effective_replicas(
    deployment: RunnerDeployment, related: list[KubeObject], now: datetime
) -> TargetSize:
    """The deployment's size, and what its status keeps of its autoscaler."""
    kept = deployment.status.autoscaled if deployment.status is not None else None
    return target_size(autoscaler_of(deployment, related), deployment.spec.replicas, kept, now)


def effective_time(deployment: RunnerDeployment, related: list[KubeObject]) -> str | None:
    return later_effective_time(autoscaler_of(deployment, related), deployment.spec.effective_time)


def sync_runner_deployment(request: CompositeHookRequest, deps: HookDeps) -> CompositeHookResponse:
    now = deps.clock.now()
    try:
        deployment = RunnerDeployment.model_validate(request.parent)
    except ValidationError as error:
        return invalid_answer(
            request,
            [describe_validation_error(error, "RunnerDeployment")],
            now,
            ["RunnerReplicaSet"],
        )
    # JIT's rules judge the template the deployment rolls out, with the labels its runners
    # get: one its Runners could not start with is not rolled out, and says why (its sets
    # already made keep scaling down, `hooks.replicaset.controller`).
    mode = deps.settings.runner_registration_mode
    template = _runner_template(deployment, deps)
    jit = SCALE_SET_ANNOTATION in deployment.metadata.annotations or registers_with_jit(
        template.metadata.annotations, mode
    )
    problems = validate_runner_template(
        template,
        jit=jit,
        jit_default_image=jit_default_image(deps.settings),
    )
    if (name_problem := deployment_name_problem(deployment.metadata.name)) is not None:
        problems.append(name_problem)
    if deployment.spec.replicas is not None and deployment.spec.replicas < 0:
        problems.append("spec.replicas must not be negative")
    if not readable_time(deployment.spec.effective_time):
        problems.append("spec.effectiveTime must be an RFC 3339 time")
    try:
        declaration = declared_scale_set(deployment.metadata.annotations)
    except ValueError as error:
        problems.append(str(error))
        declaration = None
    if problems:
        return invalid_answer(request, problems, now, ["RunnerReplicaSet"])

    previous_status = deployment.status or RunnerDeploymentStatus()
    recorded = previous_status.scale_set
    scale_set: ScaleSetStatus | None = None
    conditions: dict[str, ConditionValue] = {"Valid": ("True", "Valid", "")}
    if declaration is not None:
        kept = keep_scale_set(deps, _scope(deployment), declaration, recorded)
        if isinstance(kept, ScaleSetProblem):
            # Its runners cannot register without it: the sets stay as they are.
            conditions[SCALE_SET_READY] = kept.condition
            status = previous_status.model_copy(
                update={"conditions": merge_conditions(previous_status.conditions, conditions, now)}
            )
            return CompositeHookResponse(
                status=status.to_wire(),
                children=[as_kept(obj) for obj in request.objects("RunnerReplicaSet")],
                resync_after_seconds=kept.retry_after,
            )
        scale_set = kept
        conditions[SCALE_SET_READY] = kept_condition(kept)

    template = _runner_template(deployment, deps, scale_set)
    hash_ = template_hash(template)
    autoscalers = request.objects("HorizontalRunnerAutoscaler", related=True)
    size = effective_replicas(deployment, autoscalers, now)
    had_it = any(c.type == AUTOSCALERS_CONDITION for c in previous_status.conditions)
    conflict = autoscalers_condition(
        "RunnerDeployment", deployment.metadata.name, autoscalers, had_it
    )
    if conflict is not None:
        conditions[AUTOSCALERS_CONDITION] = conflict
    desired = size.replicas
    if deps.observe_size is not None:
        metadata = deployment.metadata
        deps.observe_size("RunnerDeployment", metadata.namespace, metadata.name, desired)
    sets = [
        _Set.read(obj)
        for obj in request.objects("RunnerReplicaSet")
        if not obj["metadata"].get("deletionTimestamp")  # observed: identified
    ]
    newest = next((s for s in sets if s.template_hash == hash_), None)
    old = [s for s in sets if s is not newest]

    children: list[KubeObject] = [
        _replica_set(deployment, template, hash_, desired, effective_time(deployment, autoscalers))
    ]
    newest_ready = newest is not None and (desired == 0 or newest.ready >= desired)
    for previous in old:
        if not newest_ready:
            children.append(as_kept(previous.obj))  # keeps its runners until the new set is up
        elif previous.spec_replicas > 0 or previous.replicas > 0 or previous.stopping > 0:
            children.append(_scaled_to_zero(previous.obj))
        # else: at zero, reporting zero and no Runner still stopping: left out, so it is
        # deleted (a scale set it kept outlives its runners' jobs: `_leave_scale_set`)
    if old:
        conditions["RollingOut"] = (
            "True",
            "NewRunnersReady" if newest_ready else "WaitingForNewRunners",
            f"{len(old)} older RunnerReplicaSet(s) being retired",
        )
    else:
        conditions["RollingOut"] = ("False", "UpToDate", "")
    resync: float | None = None
    if declaration is None and recorded is not None:
        scale_set, resync = _leave_scale_set(deps, deployment, recorded, old, conditions)

    status = RunnerDeploymentStatus(
        available_replicas=sum(s.available for s in sets),
        ready_replicas=sum(s.ready for s in sets),
        updated_replicas=newest.replicas if newest is not None else 0,
        desired_replicas=desired,
        replicas=sum(s.replicas for s in sets),
        registered_replicas=sum(s.registered for s in sets),
        busy_replicas=sum(s.busy for s in sets),
        conditions=merge_conditions(previous_status.conditions, conditions, now),
        scale_set=scale_set,
        autoscaled=size.autoscaled,
    )
    waits = [wait for wait in (resync, size.recheck_after) if wait is not None]
    return CompositeHookResponse(
        status=status.to_wire(), children=children, resync_after_seconds=min(waits, default=None)
    )


def _leave_scale_set(
    deps: HookDeps,
    deployment: RunnerDeployment,
    recorded: ScaleSetStatus,
    old: list[_Set],
    conditions: dict[str, ConditionValue],
) -> tuple[ScaleSetStatus | None, float | None]:
    """The annotation is gone: the scale set it kept is deleted once the sets of its runners
    (an older template) are, so that no job runs on in it (a retired set stays while its
    Runners still run: `stoppingReplicas`). Until then it stays recorded, so that deleting the
    deployment meanwhile deletes it too. Left on GitHub, with no listener acquiring, it held
    every job of its labels that it was offered."""
    condition, resync, gone = retire_scale_set(
        deps, _scope(deployment), recorded, bool(old), "deployment"
    )
    conditions[SCALE_SET_READY] = condition
    return (None if gone else recorded), resync


def _scope(deployment: RunnerDeployment) -> Scope:
    spec = deployment.spec.template.spec
    return Scope(
        enterprise=spec.enterprise or "",
        organization=spec.organization or "",
        repository=spec.repository or "",
    )


def finalize_runner_deployment(
    request: CompositeHookRequest, deps: HookDeps
) -> CompositeHookResponse:
    """A deployment with a scale set: its sets go to zero, then the scale set is deleted. Any
    other deployment is finalized at once (its sets are garbage-collected, as before)."""
    now = deps.clock.now()
    sets = [_Set.read(obj) for obj in request.objects("RunnerReplicaSet")]
    # A composite answer's status replaces the old one (null wipes it): it is given back.
    observed_status = request.parent.get("status")
    unchanged = observed_status if isinstance(observed_status, dict) else None
    try:
        deployment: RunnerDeployment | None = RunnerDeployment.model_validate(request.parent)
    except ValidationError:
        deployment = None  # what status and the sets record still says which scale set goes
    metadata = object_or_empty(request.parent.get("metadata"))
    annotations = object_or_empty(metadata.get("annotations"))
    try:
        declaration = declared_scale_set(
            {str(key): value for key, value in annotations.items() if isinstance(value, str)}
        )
    except ValueError:
        declaration = None
    # Decided by its record of the scale set, whatever else in the object no longer reads.
    previous = readable_status(RunnerDeploymentStatus, request.parent)
    recorded = previous.scale_set
    if declaration is None and recorded is None:
        return CompositeHookResponse(status=unchanged, children=[], finalized=True)
    scope = _scope(deployment) if deployment is not None else _recorded_scope(request)
    if scope is None:
        return CompositeHookResponse(status=unchanged, children=[], finalized=True)
    runners = request.objects("Runner", related=True)
    remaining = sum(max(s.replicas, s.spec_replicas) for s in sets) + len(runners)
    if remaining:
        return CompositeHookResponse(
            status=unchanged,
            children=[_scaled_to_zero(s.obj) for s in sets],
            resync_after_seconds=FINALIZE_RESYNC_SECONDS,
        )
    problem = delete_scale_set(deps, scope, recorded)
    if problem is not None:
        status = previous.model_copy(
            update={
                "conditions": merge_conditions(
                    previous.conditions, {SCALE_SET_READY: problem.condition}, now
                )
            }
        )
        return CompositeHookResponse(
            status=status.to_wire(),
            children=[as_kept(s.obj) for s in sets],
            resync_after_seconds=max(problem.retry_after, 1.0),
        )
    return CompositeHookResponse(status=unchanged, children=[], finalized=True)


def _recorded_scope(request: CompositeHookRequest) -> Scope | None:
    """Where a deployment whose spec no longer reads registered its runners: its template's
    scope fields that still read, else its newest RunnerReplicaSet's (found by the hostile-input
    fuzzer: a deployment deleted with a field of the wrong type left its scale set on GitHub)."""
    templates = [object_or_empty(request.parent.get("spec"))]
    sets = sorted(
        request.objects("RunnerReplicaSet"),
        key=lambda obj: str(obj["metadata"].get("creationTimestamp") or ""),
        reverse=True,
    )
    templates += [object_or_empty(obj.get("spec")) for obj in sets]
    for spec in templates:
        runner = object_or_empty(object_or_empty(spec.get("template")).get("spec"))
        fields = [runner.get(key) for key in ("enterprise", "organization", "repository")]
        enterprise, organization, repository = (f if isinstance(f, str) else "" for f in fields)
        if enterprise or organization or repository:
            return Scope(enterprise=enterprise, organization=organization, repository=repository)
    return None


def _runner_template(
    deployment: RunnerDeployment,
    deps: HookDeps,
    scale_set: ScaleSetStatus | None = None,
) -> RunnerTemplate:
    """The template with ARC's --common-runner-labels appended and, in scale-set mode, the
    scale set's id (both take part in the hash: a new scale set rolls its runners over)."""
    template = deployment.spec.template
    labels = deps.with_common_labels(template.spec.labels)
    if labels is not template.spec.labels:
        spec = template.spec.model_copy(update={"labels": labels})
        template = template.model_copy(update={"spec": spec})
    if scale_set is not None:
        annotations = {**template.metadata.annotations, SCALE_SET_ID_ANNOTATION: str(scale_set.id)}
        metadata = template.metadata.model_copy(update={"annotations": annotations})
        template = template.model_copy(update={"metadata": metadata})
    return template


def _replica_set(
    deployment: RunnerDeployment,
    template: RunnerTemplate,
    hash_: str,
    replicas: int,
    effective: str | None,
) -> KubeObject:
    name = deployment.metadata.name
    labels = {DEPLOYMENT_NAME_LABEL: name, TEMPLATE_HASH_LABEL: hash_}
    template_wire = template.to_manifest()
    template_metadata = template_wire.setdefault("metadata", {})
    template_metadata["labels"] = {**template_metadata.get("labels", {}), **labels}
    spec: dict[str, Any] = {
        "replicas": replicas,
        "selector": _replica_set_selector(deployment, hash_),
        "template": template_wire,
    }
    if effective is not None:
        spec["effectiveTime"] = effective
    return {
        "apiVersion": API_VERSION,
        "kind": "RunnerReplicaSet",
        "metadata": {
            "name": f"{name}-{hash_[:5]}",
            "namespace": deployment.metadata.namespace,
            # As ARC's: the template's labels with the two above, so that the deployment's
            # selector (which matches its template) finds its sets.
            "labels": without_controller_uid(dict(template_metadata["labels"])),
        },
        "spec": spec,
    }


def _replica_set_selector(deployment: RunnerDeployment, hash_: str) -> KubeObject:
    """As ARC's: the deployment's selector, or its name label when it has none, with the
    template hash added (newRunnerReplicaSet). Metacontroller finds the Runners through its
    own `controller-uid` label; this one is for whoever reads the set."""
    selector = deployment.spec.selector
    match_labels = dict(selector.match_labels) if selector is not None else {}
    if selector is None:
        match_labels[DEPLOYMENT_NAME_LABEL] = deployment.metadata.name
    match_labels[TEMPLATE_HASH_LABEL] = hash_
    wire: KubeObject = {"matchLabels": match_labels}
    if selector is not None and selector.match_expressions:
        wire["matchExpressions"] = [
            requirement.to_manifest() for requirement in selector.match_expressions
        ]
    return wire


def _scaled_to_zero(obj: KubeObject) -> KubeObject:
    kept = as_kept(obj)
    kept["spec"] = {**object_or_empty(kept.get("spec")), "replicas": 0}
    return kept


def routes(deps: HookDeps) -> list[HookRoute]:
    return [
        HookRoute(
            "/sync/runnerdeployment",
            HookKind.COMPOSITE,
            partial(sync_runner_deployment, deps=deps),
            blocking=True,  # keeps its runner scale set, if it declares one
            # A RunnerDeployment deleted since the cache saw it asks for no set again.
            fresh_parent=lambda _request: RUNNER_DEPLOYMENTS,
        ),
        HookRoute(
            "/finalize/runnerdeployment",
            HookKind.COMPOSITE,
            partial(finalize_runner_deployment, deps=deps),
            blocking=True,
        ),
        HookRoute("/customize/runnerdeployment", HookKind.CUSTOMIZE, customize_runner_deployment),
    ]
