"""HorizontalRunnerAutoscaler (`actions.summerwind.dev/v1alpha1`), every field ARC accepts.

Its CRD in `metacontroller/` is generated from these models (`arc-hooks crds`). As for the other
resources, constraints the API server enforces (enums, bounds) live in the schema only, so an
object that somehow slipped past them still parses and gets a status condition from the hook.
"""

from __future__ import annotations

from typing import Literal

from pydantic import ConfigDict, Field

from hooks.resources.common import Condition, DateTime, ObjectMeta, ResourceModel
from hooks.resources.runner import API_VERSION, GitHubAPICredentialsFrom

SCALE_TARGET_KINDS = ("RunnerDeployment", "RunnerSet")
RECURRENCE_FREQUENCIES = ("Daily", "Weekly", "Monthly", "Yearly")

# The metric types ARC knows (`metrics[].type`).
METRIC_PERCENTAGE_RUNNERS_BUSY = "PercentageRunnersBusy"
METRIC_QUEUED_AND_IN_PROGRESS_WORKFLOW_RUNS = "TotalNumberOfQueuedAndInProgressWorkflowRuns"


class _EmptyObject(ResourceModel):
    """An object with no fields, as ARC's empty Go structs: the API server prunes its content.

    `additionalProperties: false` only makes the generator emit a bare `type: object` (structural
    schemas prune, they do not reject); the model itself still ignores unknown fields.
    """

    model_config = ConfigDict(json_schema_extra={"additionalProperties": False})


class ScaleTargetRef(ResourceModel):
    """The RunnerDeployment or RunnerSet to size (no kind: a RunnerDeployment)."""

    kind: str | None = Field(default=None, json_schema_extra={"enum": list(SCALE_TARGET_KINDS)})
    name: str | None = None


class MetricSpec(ResourceModel):
    """A pull-based metric. Thresholds and factors are decimal numbers written as strings."""

    type: str | None = None
    repository_names: list[str] = []
    scale_up_threshold: str | None = None
    scale_down_threshold: str | None = None
    scale_up_factor: str | None = None
    scale_down_factor: str | None = None
    scale_up_adjustment: int | None = None
    scale_down_adjustment: int | None = None


class CheckRunSpec(ResourceModel):
    types: list[str] = []
    status: str | None = None
    names: list[str] = []
    repositories: list[str] = []


class PullRequestSpec(ResourceModel):
    types: list[str] = []
    branches: list[str] = []


class PushSpec(_EmptyObject):
    pass


class WorkflowJobSpec(_EmptyObject):
    pass


class GitHubEventScaleUpTriggerSpec(ResourceModel):
    """The webhook event that scales up. Only `workflowJob` acts; the others are kept as ARC's."""

    check_run: CheckRunSpec | None = None
    pull_request: PullRequestSpec | None = None
    push: PushSpec | None = None
    workflow_job: WorkflowJobSpec | None = None


class ScaleUpTrigger(ResourceModel):
    github_event: GitHubEventScaleUpTriggerSpec | None = None
    amount: int | None = None
    duration: str | None = None  # a Go duration such as `30m`


class CapacityReservation(ResourceModel):
    name: str | None = None
    effective_time: DateTime | None = None
    expiration_time: DateTime | None = None
    replicas: int | None = None


class RecurrenceRule(ResourceModel):
    frequency: str | None = Field(
        default=None, json_schema_extra={"enum": list(RECURRENCE_FREQUENCIES)}
    )
    until_time: DateTime | None = None


class ScheduledOverride(ResourceModel):
    """A window (one-off or recurring) during which `minReplicas` replaces the spec's."""

    start_time: DateTime
    end_time: DateTime
    min_replicas: int | None = Field(default=None, json_schema_extra={"minimum": 0})
    recurrence_rule: RecurrenceRule | None = None


class HorizontalRunnerAutoscalerSpec(ResourceModel):
    scale_target_ref: ScaleTargetRef | None = None
    min_replicas: int | None = None
    max_replicas: int | None = None
    scale_down_delay_seconds_after_scale_out: int | None = None
    metrics: list[MetricSpec] = []
    scale_up_triggers: list[ScaleUpTrigger] = []
    capacity_reservations: list[CapacityReservation] = []
    scheduled_overrides: list[ScheduledOverride] = []
    github_api_credentials_from: GitHubAPICredentialsFrom | None = Field(
        default=None, alias="githubAPICredentialsFrom"
    )


class CacheEntry(ResourceModel):
    """ARC's former metric cache, which ARC no longer writes; accepted so old objects keep it."""

    key: str | None = None
    value: int | None = None
    expiration_time: DateTime | None = None


class HorizontalRunnerAutoscalerStatus(ResourceModel):
    desired_replicas: int | None = None
    last_successful_scale_out_time: DateTime | None = None
    scheduled_overrides_summary: str | None = None
    observed_generation: int | None = None
    cache_entries: list[CacheEntry] = []
    conditions: list[Condition] = []
    newest_reservation_time: DateTime | None = Field(
        default=None,
        description=(
            "The effectiveTime of the newest capacity reservation: the scale target's "
            "effectiveTime, as ARC writes it into the target's spec."
        ),
    )
    reserved_replicas: int | None = Field(
        default=None, description="Replicas of the capacity reservations counted now."
    )
    idle_beyond_min_since: DateTime | None = Field(
        default=None,
        description=(
            "Since when more of the target's runners have sat idle than minReplicas explains; "
            "after a minute of it, GitHub is asked whether reserved jobs are over (lost "
            "completed deliveries)."
        ),
    )
    assigned_jobs: int | None = Field(
        default=None,
        description="Scale-set mode: the jobs assigned to the target's runner scale set.",
    )
    assigned_jobs_time: DateTime | None = Field(
        default=None,
        description=(
            "Scale-set mode: when the listener counted them; the scale target's "
            "effectiveTime, so that a new count is needed before more runners are created."
        ),
    )


class HorizontalRunnerAutoscaler(ResourceModel):
    api_version: str = API_VERSION
    kind: Literal["HorizontalRunnerAutoscaler"] = "HorizontalRunnerAutoscaler"
    metadata: ObjectMeta = ObjectMeta()
    spec: HorizontalRunnerAutoscalerSpec = HorizontalRunnerAutoscalerSpec()
    status: HorizontalRunnerAutoscalerStatus | None = None
