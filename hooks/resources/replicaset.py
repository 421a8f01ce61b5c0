"""RunnerReplicaSet and RunnerDeployment (`actions.summerwind.dev/v1alpha1`), every field ARC
accepts. Their CRDs in `metacontroller/` are generated from these models."""

from __future__ import annotations

from typing import Literal

from hooks.resources.common import (
    AutoscaledSize,
    Condition,
    CreatedRunner,
    DateTime,
    ObjectMeta,
    ResourceModel,
    ScaleSetStatus,
)
from hooks.resources.runner import API_VERSION, RunnerSpec


class LabelSelectorRequirement(ResourceModel):
    key: str
    operator: str  # In, NotIn, Exists or DoesNotExist
    values: list[str] = []


class LabelSelector(ResourceModel):
    match_labels: dict[str, str] = {}
    match_expressions: list[LabelSelectorRequirement] = []


class TemplateMeta(ResourceModel):
    """The metadata a template may carry (ARC accepts the full ObjectMeta; labels and
    annotations are what a Runner inherits)."""

    name: str | None = None
    namespace: str | None = None
    labels: dict[str, str] = {}
    annotations: dict[str, str] = {}
    finalizers: list[str] = []


class RunnerTemplate(ResourceModel):
    metadata: TemplateMeta = TemplateMeta()
    spec: RunnerSpec = RunnerSpec()


class RunnerReplicaSetSpec(ResourceModel):
    replicas: int | None = None
    effective_time: DateTime | None = None
    selector: LabelSelector | None = None
    template: RunnerTemplate = RunnerTemplate()


class RunnerReplicaSetStatus(ResourceModel):
    replicas: int | None = None
    ready_replicas: int | None = None
    available_replicas: int | None = None
    # What this project adds: how many runners GitHub sees registered and busy.
    registered_replicas: int | None = None
    busy_replicas: int | None = None
    # Runners being deleted whose pods still run (a busy one stops after its job): the
    # deployment keeps a retired set, and the scale set its runners joined, until they end.
    stopping_replicas: int | None = None
    next_runner_index: int | None = None
    # Runners asked for but not yet among the children (hooks.unobserved).
    unobserved_runners: list[CreatedRunner] | None = None
    conditions: list[Condition] = []
    observed_generation: int | None = None
    # Scale-set members: the listener's count (`effectiveTime`) the set last acted on.
    count_time: DateTime | None = None
    # The last answer created one batch of a larger scale-up (or could not create all of
    # it): the runners of that scale-up still to create, which no recreation delay holds.
    # A member that finished meanwhile is not among them: its replacement waits as any does.
    scale_up_remaining: int | None = None


class RunnerReplicaSet(ResourceModel):
    api_version: str = API_VERSION
    kind: Literal["RunnerReplicaSet"] = "RunnerReplicaSet"
    metadata: ObjectMeta = ObjectMeta()
    spec: RunnerReplicaSetSpec = RunnerReplicaSetSpec()
    status: RunnerReplicaSetStatus | None = None


class RunnerDeploymentSpec(ResourceModel):
    replicas: int | None = None
    effective_time: DateTime | None = None
    selector: LabelSelector | None = None
    template: RunnerTemplate = RunnerTemplate()


class RunnerDeploymentStatus(ResourceModel):
    available_replicas: int | None = None
    ready_replicas: int | None = None
    updated_replicas: int | None = None
    desired_replicas: int | None = None
    replicas: int | None = None
    registered_replicas: int | None = None
    busy_replicas: int | None = None
    conditions: list[Condition] = []
    observed_generation: int | None = None
    scale_set: ScaleSetStatus | None = None
    # The size the autoscaler last gave, kept once it is gone (`hooks.scale_target`).
    autoscaled: AutoscaledSize | None = None


class RunnerDeployment(ResourceModel):
    api_version: str = API_VERSION
    kind: Literal["RunnerDeployment"] = "RunnerDeployment"
    metadata: ObjectMeta = ObjectMeta()
    spec: RunnerDeploymentSpec = RunnerDeploymentSpec()
    status: RunnerDeploymentStatus | None = None
