"""The RunnerDeployment controller: one RunnerReplicaSet per runner template, and rollouts.

Children: RunnerReplicaSets (InPlace). The newest set is the one whose template hash matches the
current template (an existing set with that hash is taken over, e.g. after a rollback); it gets
the effective replicas. Older sets keep theirs until the newest is ready, then go to zero, and
are deleted once they report zero replicas. Their Runners leave through the Runner finalize hook,
so a rollout never cuts off a job and never leaves a registration behind.

Effective replicas: `status.desiredReplicas` of the HorizontalRunnerAutoscaler whose
`scaleTargetRef` names this RunnerDeployment (a related object, read, never written), else
`spec.replicas`, else 1.
"""

from __future__ import annotations

from dataclasses import dataclass
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
from hooks.kube.port import RUNNER_DEPLOYMENTS
from hooks.metacontroller import (
    CompositeHookRequest,
    CompositeHookResponse,
    HookKind,
    HookRoute,
    KubeObject,
    object_or_empty,
)
from hooks.naming import DEPLOYMENT_NAME_LABEL, TEMPLATE_HASH_LABEL
from hooks.replicaset.controller import readable_time, template_hash
from hooks.resources.replicaset import (
    RunnerDeployment,
    RunnerDeploymentStatus,
    RunnerTemplate,
)
from hooks.resources.runner import API_VERSION
from hooks.runner.validation import validate_runner_template
from hooks.scale_target import autoscaler_targeting, later_effective_time, scaled_replicas


def customize_runner_deployment(request: dict[str, Any]) -> dict[str, Any]:
    """Ask for the HorizontalRunnerAutoscalers of the deployment's namespace."""
    metadata = object_or_empty(object_or_empty(request.get("parent")).get("metadata"))
    namespace = metadata.get("namespace")
    rule: dict[str, Any] = {
        "apiVersion": API_VERSION,
        "resource": "horizontalrunnerautoscalers",
        "labelSelector": {},
    }
    if isinstance(namespace, str) and namespace:
        rule["namespace"] = namespace
    return {"relatedResources": [rule]}


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
        )


def _is_count(value: object) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def autoscaler_of(deployment: RunnerDeployment, related: list[KubeObject]) -> KubeObject | None:
    return autoscaler_targeting("RunnerDeployment", deployment.metadata.name, related)


def effective_replicas(deployment: RunnerDeployment, related: list[KubeObject]) -> int:
    return scaled_replicas(autoscaler_of(deployment, related), deployment.spec.replicas)


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
    problems = validate_runner_template(deployment.spec.template)
    if deployment.spec.replicas is not None and deployment.spec.replicas < 0:
        problems.append("spec.replicas must not be negative")
    if not readable_time(deployment.spec.effective_time):
        problems.append("spec.effectiveTime must be an RFC 3339 time")
    if problems:
        return invalid_answer(request, problems, now, ["RunnerReplicaSet"])

    template = _runner_template(deployment, deps.common_runner_labels)
    hash_ = template_hash(template)
    autoscalers = request.objects("HorizontalRunnerAutoscaler", related=True)
    desired = effective_replicas(deployment, autoscalers)
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
    conditions: dict[str, ConditionValue] = {"Valid": ("True", "Valid", "")}
    newest_ready = newest is not None and (desired == 0 or newest.ready >= desired)
    for previous in old:
        if not newest_ready:
            children.append(as_kept(previous.obj))  # keeps its runners until the new set is up
        elif previous.spec_replicas > 0 or previous.replicas > 0:
            children.append(_scaled_to_zero(previous.obj))
        # else: at zero and reporting zero: left out, so it is deleted
    if old:
        conditions["RollingOut"] = (
            "True",
            "NewRunnersReady" if newest_ready else "WaitingForNewRunners",
            f"{len(old)} older RunnerReplicaSet(s) being retired",
        )
    else:
        conditions["RollingOut"] = ("False", "UpToDate", "")

    previous_status = deployment.status or RunnerDeploymentStatus()
    status = RunnerDeploymentStatus(
        available_replicas=sum(s.available for s in sets),
        ready_replicas=sum(s.ready for s in sets),
        updated_replicas=newest.replicas if newest is not None else 0,
        desired_replicas=desired,
        replicas=sum(s.replicas for s in sets),
        registered_replicas=sum(s.registered for s in sets),
        busy_replicas=sum(s.busy for s in sets),
        conditions=merge_conditions(previous_status.conditions, conditions, now),
    )
    return CompositeHookResponse(status=status.to_wire(), children=children)


def _runner_template(
    deployment: RunnerDeployment, common_labels: tuple[str, ...]
) -> RunnerTemplate:
    """The template with ARC's --common-runner-labels appended (they take part in the hash)."""
    template = deployment.spec.template
    if not common_labels:
        return template
    labels = list(template.spec.labels)
    labels += [label for label in common_labels if label not in labels]
    spec = template.spec.model_copy(update={"labels": labels})
    return template.model_copy(update={"spec": spec})


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
        "selector": {"matchLabels": labels},
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
            "labels": {**deployment.metadata.labels, **labels},
        },
        "spec": spec,
    }


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
            # A RunnerDeployment deleted since the cache saw it asks for no set again.
            fresh_parent=lambda _request: RUNNER_DEPLOYMENTS,
        ),
        HookRoute("/customize/runnerdeployment", HookKind.CUSTOMIZE, customize_runner_deployment),
    ]
