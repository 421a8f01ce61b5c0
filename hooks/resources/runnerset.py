"""The RunnerSet resource (`actions.summerwind.dev/v1alpha1`), every field ARC accepts: the runner
configuration inline, beside the whole StatefulSet spec inline. Its CRD in `metacontroller/` is
generated from these models."""

from __future__ import annotations

from typing import Literal

from hooks.resources.common import (
    AutoscaledSize,
    Condition,
    CreatedRunner,
    DateTime,
    FreeFormObject,
    ObjectMeta,
    ResourceModel,
    ScaleSetStatus,
)
from hooks.resources.replicaset import LabelSelector, TemplateMeta
from hooks.resources.runner import API_VERSION, RunnerConfig, WorkVolumeClaimTemplate


class PodTemplate(ResourceModel):
    """The pod template; its spec stays free-form (a Kubernetes PodSpec), the API server
    validates it when the StatefulSet is created."""

    metadata: TemplateMeta = TemplateMeta()
    spec: FreeFormObject = {}


class PersistentVolumeClaimRetentionPolicy(ResourceModel):
    when_deleted: str | None = None
    when_scaled: str | None = None


class StatefulSetOrdinals(ResourceModel):
    start: int | None = None


class RunnerSetSpec(RunnerConfig):
    """ARC's RunnerSetSpec: RunnerConfig, effectiveTime, the kubernetes-mode fields and the
    StatefulSetSpec, all inline."""

    effective_time: DateTime | None = None
    service_account_name: str | None = None
    work_volume_claim_template: WorkVolumeClaimTemplate | None = None
    # StatefulSetSpec
    replicas: int | None = None
    selector: LabelSelector
    template: PodTemplate
    volume_claim_templates: list[FreeFormObject] = []
    service_name: str | None = None
    pod_management_policy: str | None = None
    update_strategy: FreeFormObject | None = None
    revision_history_limit: int | None = None
    min_ready_seconds: int | None = None
    persistent_volume_claim_retention_policy: PersistentVolumeClaimRetentionPolicy | None = None
    ordinals: StatefulSetOrdinals | None = None


class RunnerSetStatus(ResourceModel):
    available_replicas: int | None = None
    ready_replicas: int | None = None
    updated_replicas: int | None = None
    desired_replicas: int | None = None
    replicas: int | None = None
    # What this project adds: how many runners GitHub sees registered and busy, and the
    # counter that keeps runner names unique over the set's life.
    registered_replicas: int | None = None
    busy_replicas: int | None = None
    next_runner_index: int | None = None
    # Runners asked for but not yet among the children (hooks.unobserved).
    unobserved_runners: list[CreatedRunner] | None = None
    conditions: list[Condition] = []
    observed_generation: int | None = None
    # Scale-set mode: the scale set kept, and the listener's count the set last acted on.
    scale_set: ScaleSetStatus | None = None
    count_time: DateTime | None = None
    # The last answer created one batch of a larger scale-up (or could not create all of
    # it): the runners of that scale-up still to create, which no recreation delay holds.
    # A member that finished meanwhile is not among them: its replacement waits as any does.
    scale_up_remaining: int | None = None
    # The size the autoscaler last gave, kept once it is gone (`hooks.scale_target`).
    autoscaled: AutoscaledSize | None = None


class RunnerSet(ResourceModel):
    api_version: str = API_VERSION
    kind: Literal["RunnerSet"] = "RunnerSet"
    metadata: ObjectMeta = ObjectMeta()
    spec: RunnerSetSpec | None = None  # ARC does not require it; the hook reports it missing
    status: RunnerSetStatus | None = None
