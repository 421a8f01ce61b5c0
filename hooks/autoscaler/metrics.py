"""The two pull metrics of ARC's `autoscaling.go`, over observations from an `ActivitySource`.

PercentageRunnersBusy scales the replicas in effect by the fraction of busy runners;
TotalNumberOfQueuedAndInProgressWorkflowRuns asks for one runner per queued or running job.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass

from hooks.autoscaler.activity import IN_PROGRESS, QUEUED, ActivitySource, WorkflowJob
from hooks.autoscaler.errors import AutoscalingError
from hooks.resources.autoscaler import (
    METRIC_PERCENTAGE_RUNNERS_BUSY,
    METRIC_QUEUED_AND_IN_PROGRESS_WORKFLOW_RUNS,
    MetricSpec,
)

SUPPORTED_METRICS = (METRIC_PERCENTAGE_RUNNERS_BUSY, METRIC_QUEUED_AND_IN_PROGRESS_WORKFLOW_RUNS)
SELF_HOSTED = "self-hosted"  # GitHub gives it to every self-hosted runner
# ARC's own messages (autoscaling.go), its field path included.
_VALIDATING = "validating autoscaling metrics: spec.autoscaling.metrics[]"
_ALLOWED_TYPES = " or ".join(json.dumps(name) for name in SUPPORTED_METRICS)


@dataclass(frozen=True)
class RunnerScope:
    """Where the scale target's runners register, and with which labels."""

    enterprise: str = ""
    organization: str = ""
    repository: str = ""  # owner/name
    labels: tuple[str, ...] = ()


@dataclass(frozen=True)
class BusyRule:
    """PercentageRunnersBusy, validated. An adjustment of 0 means "use the factor"."""

    scale_up_threshold: float = 0.8
    scale_down_threshold: float = 0.3
    scale_up_factor: float = 1.3
    scale_down_factor: float = 0.7
    scale_up_adjustment: int = 0
    scale_down_adjustment: int = 0


@dataclass(frozen=True)
class JobCounts:
    queued: int = 0
    in_progress: int = 0

    @property
    def total(self) -> int:
        return self.queued + self.in_progress


def busy_rule(metric: MetricSpec) -> BusyRule:
    """The rule a PercentageRunnersBusy metric defines, with ARC's validation and messages."""
    defaults = BusyRule()
    up_threshold = _finite(metric.scale_up_threshold, "scaleUpThreshold")
    down_threshold = _finite(metric.scale_down_threshold, "scaleDownThreshold")
    up_adjustment, up_factor = _step(metric.scale_up_adjustment, metric.scale_up_factor, "Up")
    down_adjustment, down_factor = _step(
        metric.scale_down_adjustment, metric.scale_down_factor, "Down"
    )
    return BusyRule(
        scale_up_threshold=_or(up_threshold, defaults.scale_up_threshold),
        scale_down_threshold=_or(down_threshold, defaults.scale_down_threshold),
        scale_up_factor=_or(up_factor, defaults.scale_up_factor),
        scale_down_factor=_or(down_factor, defaults.scale_down_factor),
        scale_up_adjustment=up_adjustment,
        scale_down_adjustment=down_adjustment,
    )


def suggest_by_busy_runners(
    rule: BusyRule, replicas: int | None, busy: int, reserved: int = 0
) -> int:
    """ARC's `suggestReplicasByPercentageRunnerBusy` from the replicas in effect (None: 1).

    The replicas in effect include what reservations added, and the runners serving reserved
    jobs are busy; the caller adds the reservations again. So they are taken out of both first
    (ARC #1962, fixed upstream in PR #4593): the metric scales the runners that exist for
    demand, and steady demand gives a steady answer instead of one reservation more per sync.

    With 0 replicas the fraction is Go's float division: +Inf when some runner is busy (scale
    up from 0, which only an adjustment can do), NaN otherwise (no threshold matches).
    """
    before = max((1 if replicas is None else replicas) - reserved, 0)
    busy = max(busy - reserved, 0)
    fraction = _busy_fraction(busy, before)
    if fraction >= rule.scale_up_threshold:
        if rule.scale_up_adjustment > 0:
            return before + rule.scale_up_adjustment
        return math.ceil(before * rule.scale_up_factor)
    if fraction < rule.scale_down_threshold:
        if rule.scale_down_adjustment > 0:
            return before - rule.scale_down_adjustment
        return int(before * rule.scale_down_factor)
    return before


MAX_WORKFLOW_RUN_REPOSITORIES = 50
"""Repositories one TotalNumberOfQueuedAndInProgressWorkflowRuns metric may watch: a sync
reads each of them (ARC has no limit, and 3,000 made one sync 6,000 GitHub calls, more than a
token's hourly budget and far past Metacontroller's hook timeout)."""


def suggest_by_workflow_runs(
    metric: MetricSpec, scope: RunnerScope, activity: ActivitySource
) -> JobCounts:
    """ARC's `suggestReplicasByQueuedAndInProgressWorkflowRuns`: the queued and running jobs
    this target's runners could take, in the repositories the metric watches.

    A run without an id, or whose jobs list is empty, counts nothing (ARC >= 0.27.5, PR #2671):
    GitHub lists such runs before their jobs exist, and they are no work a runner can take."""
    queued = in_progress = 0
    for repository in workflow_run_repositories(metric, scope):
        for listed_status in (QUEUED, IN_PROGRESS):
            for run in activity.workflow_runs(repository, listed_status):
                if run.status not in (QUEUED, IN_PROGRESS) or not run.id:
                    continue  # completed (or unknown) by now, or no jobs to list
                counts = _count_jobs(activity.workflow_jobs(repository, run.id), scope.labels)
                queued += counts.queued
                in_progress += counts.in_progress
    return JobCounts(queued=queued, in_progress=in_progress)


def workflow_run_repositories(metric: MetricSpec, scope: RunnerScope) -> list[str]:
    """The target's repository, or `org/<name>` for each of the metric's repositoryNames."""
    if scope.repository:
        if "/" not in scope.repository:
            raise AutoscalingError("the scale target's repository is not of the form OWNER/REPO")
        return [scope.repository]
    if not scope.organization:
        raise AutoscalingError(
            f"{METRIC_QUEUED_AND_IN_PROGRESS_WORKFLOW_RUNS} needs repository or organization "
            "runners: enterprise runners have no repositories to watch"
        )
    if not metric.repository_names:
        raise AutoscalingError(
            f"{_VALIDATING}.repositoryNames is required and must have one more more entries "
            "for organizational runner deployment"
        )
    distinct = len(set(metric.repository_names))  # a name given twice is read once (cached)
    if distinct > MAX_WORKFLOW_RUN_REPOSITORIES:
        raise AutoscalingError(
            f"spec.metrics[].repositoryNames has {distinct} repositories, at most "
            f"{MAX_WORKFLOW_RUN_REPOSITORIES} are read: each costs two GitHub calls and one per "
            "run at every sync; webhook-driven scaling serves many repositories without them"
        )
    return [f"{scope.organization}/{name}" for name in metric.repository_names]


def job_fits(job: WorkflowJob, runner_labels: Sequence[str]) -> bool:
    """A job fits when the runners have each of its labels but `self-hosted` (exact match).
    ARC skips jobs without labels."""
    if not job.labels:
        return False
    return all(label == SELF_HOSTED or label in runner_labels for label in job.labels)


def check_metric_types(metrics: Sequence[MetricSpec]) -> None:
    """0 to 2 metrics; two only as [PercentageRunnersBusy, TotalNumberOf...WorkflowRuns].

    ARC checks the pair only when the first metric suggests 0; checking it up front gives the
    same error for every sync instead of only for idle ones.
    """
    if len(metrics) > 2:
        raise AutoscalingError(
            f"too many autoscaling metrics configured: It must be 0 to 2, but got {len(metrics)}"
        )
    if metrics and metrics[0].type not in SUPPORTED_METRICS:
        # ARC quotes the type; it may be any text, so the field is named instead.
        raise AutoscalingError(
            "validating autoscaling metrics: unsupported metric type in spec.metrics[0].type: "
            f"it must be one of {_ALLOWED_TYPES}"
        )
    if len(metrics) == 2 and (
        metrics[0].type != METRIC_PERCENTAGE_RUNNERS_BUSY
        or metrics[1].type != METRIC_QUEUED_AND_IN_PROGRESS_WORKFLOW_RUNS
    ):
        raise AutoscalingError(
            f"invalid HRA Spec: Metrics[0] of {_type_shown(metrics[0])} cannot be combined with "
            f"Metrics[1] of {_type_shown(metrics[1])}: The only allowed combination is "
            f"0={METRIC_PERCENTAGE_RUNNERS_BUSY} and "
            f"1={METRIC_QUEUED_AND_IN_PROGRESS_WORKFLOW_RUNS}"
        )


def _type_shown(metric: MetricSpec) -> str:
    """A known type as ARC prints it; any other text is not repeated."""
    if metric.type is not None and metric.type in SUPPORTED_METRICS:
        return metric.type
    return "an unsupported type"


def _count_jobs(jobs: Sequence[WorkflowJob], runner_labels: Sequence[str]) -> JobCounts:
    fitting = [job for job in jobs if job_fits(job, runner_labels)]
    return JobCounts(
        queued=sum(job.status == QUEUED for job in fitting),
        in_progress=sum(job.status == IN_PROGRESS for job in fitting),
    )


def _busy_fraction(busy: int, before: int) -> float:
    if before:
        return busy / before
    return math.inf if busy > 0 else math.nan


def _decimal(text: str | None, field: str) -> float | None:
    """Go's `strconv.ParseFloat` for the decimal texts ARC stores: no blanks, no underscores."""
    if not text:
        return None
    try:
        if text.strip() != text or "_" in text:
            raise ValueError(text)
        return float(text)
    except ValueError:
        raise AutoscalingError(f"{_VALIDATING}.{field} cannot be parsed into a float64") from None


def _step(adjustment: int | None, factor_text: str | None, way: str) -> tuple[int, float | None]:
    """An adjustment (a count) or a factor (a ratio), never both."""
    if adjustment:
        if adjustment < 0:
            raise AutoscalingError(f"{_VALIDATING}.scale{way}Adjustment cannot be lower than 0")
        if factor_text:
            raise AutoscalingError(
                f"{_VALIDATING}: scale{way}Adjustment and scale{way}Factor cannot be specified "
                "together"
            )
        return adjustment, None
    factor = _finite(factor_text, f"scale{way}Factor")
    if factor is not None and factor < 0:
        # Replicas times a negative number: ARC would size to its minimum, whatever the load.
        raise AutoscalingError(f"{_VALIDATING}.scale{way}Factor cannot be lower than 0")
    return 0, factor


def _finite(text: str | None, field: str) -> float | None:
    """A decimal that sizes something: NaN (no threshold ever matches, so the metric silently
    never scales) and the infinities are refused, where ARC's ParseFloat reads them."""
    value = _decimal(text, field)
    if value is not None and not math.isfinite(value):
        raise AutoscalingError(f"{_VALIDATING}.{field} must be a finite number")
    return value


def _or(value: float | None, default: float) -> float:
    return default if value is None else value
