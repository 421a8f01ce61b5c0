"""PercentageRunnersBusy (ARC has no test for it: these follow `autoscaling.go`) and the job
filter of TotalNumberOfQueuedAndInProgressWorkflowRuns."""

from __future__ import annotations

from typing import Any

import pytest

from hooks.autoscaler import AutoscalingError, RecordedActivity, WorkflowJob, WorkflowRun
from hooks.autoscaler.metrics import (
    BusyRule,
    RunnerScope,
    busy_rule,
    job_fits,
    suggest_by_busy_runners,
    suggest_by_workflow_runs,
    workflow_run_repositories,
)
from hooks.resources.autoscaler import METRIC_PERCENTAGE_RUNNERS_BUSY, MetricSpec

VALIDATING = "validating autoscaling metrics: spec.autoscaling.metrics[]"


def busy_metric(**fields: Any) -> MetricSpec:
    return MetricSpec(type=METRIC_PERCENTAGE_RUNNERS_BUSY, **fields)


FACTORS = {
    "scale_up_threshold": "0.75",
    "scale_down_threshold": "0.25",
    "scale_up_factor": "2",
    "scale_down_factor": "0.5",
}
ADJUSTMENTS = {
    "scale_up_threshold": "0.75",
    "scale_down_threshold": "0.3",
    "scale_up_adjustment": 2,
    "scale_down_adjustment": 1,
}


@pytest.mark.parametrize(
    ("description", "fields", "replicas", "busy", "want"),
    [
        # Defaults: up at 0.8 by x1.3 (ceil), down below 0.3 by x0.7 (truncated).
        ("defaults: at the up threshold", {}, 10, 8, 13),
        ("defaults: ceil of a fraction", {}, 4, 4, 6),
        ("defaults: between the thresholds", {}, 10, 7, 10),
        ("defaults: at the down threshold stays", {}, 10, 3, 10),
        ("defaults: below the down threshold", {}, 10, 2, 7),
        ("defaults: truncation of 3 x 0.7", {}, 3, 0, 2),
        ("defaults: no replicas set means 1, busy", {}, None, 1, 2),
        ("defaults: no replicas set means 1, idle", {}, None, 0, 0),
        # Factors and thresholds of the docs' example.
        ("factors: scale up", FACTORS, 4, 3, 8),
        ("factors: scale down", FACTORS, 4, 0, 2),
        ("factors: in between", FACTORS, 4, 2, 4),
        # Adjustments instead of factors.
        ("adjustments: scale up", ADJUSTMENTS, 4, 4, 6),
        ("adjustments: scale down", ADJUSTMENTS, 4, 1, 3),
        ("adjustments: down below zero is left to the clamp", ADJUSTMENTS, 1, 0, 0),
        ("adjustments of 0 mean the factors", {"scale_up_adjustment": 0}, 10, 10, 13),
        # From zero replicas: Go's float division gives +Inf with a busy runner, NaN without.
        ("zero replicas, none busy: unchanged", {}, 0, 0, 0),
        ("zero replicas, busy: a factor cannot grow 0", {}, 0, 1, 0),
        ("zero replicas, busy: an adjustment can", ADJUSTMENTS, 0, 1, 2),
    ],
)
def test_percentage_runners_busy(
    description: str, fields: dict[str, Any], replicas: int | None, busy: int, want: int
) -> None:
    rule = busy_rule(busy_metric(**fields))

    assert suggest_by_busy_runners(rule, replicas, busy) == want


def test_defaults() -> None:
    assert busy_rule(busy_metric()) == BusyRule(0.8, 0.3, 1.3, 0.7, 0, 0)
    assert busy_rule(busy_metric(scale_up_threshold="", scale_down_factor="")) == BusyRule()


@pytest.mark.parametrize(
    ("fields", "error"),
    [
        (
            {"scale_up_threshold": "high"},
            f"{VALIDATING}.scaleUpThreshold cannot be parsed into a float64",
        ),
        (
            {"scale_down_threshold": " 0.3"},
            f"{VALIDATING}.scaleDownThreshold cannot be parsed into a float64",
        ),
        ({"scale_up_factor": "x2"}, f"{VALIDATING}.scaleUpFactor cannot be parsed into a float64"),
        (
            {"scale_down_factor": "0_5"},
            f"{VALIDATING}.scaleDownFactor cannot be parsed into a float64",
        ),
        ({"scale_up_factor": "inf"}, f"{VALIDATING}.scaleUpFactor must be a finite number"),
        # Beyond ARC: values Go's ParseFloat reads but nothing can be sized by.
        ({"scale_up_threshold": "NaN"}, f"{VALIDATING}.scaleUpThreshold must be a finite number"),
        (
            {"scale_down_threshold": "-Infinity"},
            f"{VALIDATING}.scaleDownThreshold must be a finite number",
        ),
        ({"scale_down_factor": "nan"}, f"{VALIDATING}.scaleDownFactor must be a finite number"),
        ({"scale_up_factor": "-2"}, f"{VALIDATING}.scaleUpFactor cannot be lower than 0"),
        ({"scale_down_factor": "-0.5"}, f"{VALIDATING}.scaleDownFactor cannot be lower than 0"),
        ({"scale_up_adjustment": -1}, f"{VALIDATING}.scaleUpAdjustment cannot be lower than 0"),
        ({"scale_down_adjustment": -2}, f"{VALIDATING}.scaleDownAdjustment cannot be lower than 0"),
        (
            {"scale_up_adjustment": 2, "scale_up_factor": "2"},
            f"{VALIDATING}: scaleUpAdjustment and scaleUpFactor cannot be specified together",
        ),
        (
            {"scale_down_adjustment": 1, "scale_down_factor": "0.5"},
            f"{VALIDATING}: scaleDownAdjustment and scaleDownFactor cannot be specified together",
        ),
        # Thresholds are checked first, as in ARC.
        (
            {"scale_up_adjustment": -1, "scale_down_threshold": "?"},
            f"{VALIDATING}.scaleDownThreshold cannot be parsed into a float64",
        ),
    ],
)
def test_percentage_runners_busy_validation(fields: dict[str, Any], error: str) -> None:
    with pytest.raises(AutoscalingError) as raised:
        busy_rule(busy_metric(**fields))

    assert str(raised.value) == error


@pytest.mark.parametrize(
    ("job_labels", "runner_labels", "fits"),
    [
        (("label1",), ("label1",), True),
        (("self-hosted", "label1"), ("label1",), True),
        (("self-hosted",), (), True),
        (("label1", "label2"), ("label1",), False),
        (("Label1",), ("label1",), False),
        (("Self-Hosted",), ("label1",), False),
        (("ubuntu-latest",), ("label1",), False),
        ((), ("label1",), False),
    ],
)
def test_job_fits(job_labels: tuple[str, ...], runner_labels: tuple[str, ...], fits: bool) -> None:
    assert job_fits(WorkflowJob("queued", job_labels), runner_labels) is fits


def test_unknown_job_and_run_statuses_do_not_count() -> None:
    repo = "acme/app"
    activity = RecordedActivity(
        runs={
            (repo, "queued"): (WorkflowRun(1, "queued"), WorkflowRun(0, "waiting")),
            (repo, "in_progress"): (WorkflowRun(2, "in_progress"),),
        },
        jobs={
            (repo, 1): (WorkflowJob("waiting", ("x",)), WorkflowJob("queued", ("x",))),
            (repo, 2): (WorkflowJob("in_progress", ("x",)), WorkflowJob("completed", ("x",))),
        },
    )

    counts = suggest_by_workflow_runs(
        MetricSpec(), RunnerScope(repository=repo, labels=("x",)), activity
    )

    assert (counts.queued, counts.in_progress, counts.total) == (1, 1, 2)


@pytest.mark.parametrize(
    ("scope", "names", "want"),
    [
        (RunnerScope(repository="acme/app"), ["ignored"], ["acme/app"]),
        (RunnerScope(organization="acme"), ["app", "lib"], ["acme/app", "acme/lib"]),
        (RunnerScope(organization="acme", repository="acme/app"), [], ["acme/app"]),
    ],
)
def test_workflow_run_repositories(scope: RunnerScope, names: list[str], want: list[str]) -> None:
    assert workflow_run_repositories(MetricSpec(repository_names=names), scope) == want


def test_a_repository_must_be_owner_slash_name() -> None:
    with pytest.raises(AutoscalingError, match="repository is not of the form OWNER/REPO"):
        workflow_run_repositories(MetricSpec(), RunnerScope(repository="app"))


# ARC #1962 (fixed upstream in PR #4593): with reservations, the replicas in effect and the busy
# runners both include what the reservations added; the caller adds the reservations again.


def test_reserved_runners_are_taken_out_of_the_busy_fraction() -> None:
    rule = busy_rule(busy_metric())
    # 3 replicas of which 1 reserved (its runner busy with the reserved job), 1 of the other 2
    # busy: 50%, between the thresholds: 2 for demand, the caller adds 1 reserved again.
    assert suggest_by_busy_runners(rule, 3, 2, reserved=1) == 2
    # Only reserved runners busy: nothing for demand beyond what the fraction gives.
    assert suggest_by_busy_runners(rule, 2, 2, reserved=2) == 0
    # More reserved than replicas (a reservation not yet in effect): never negative.
    assert suggest_by_busy_runners(rule, 1, 0, reserved=3) == 0


def test_one_reservation_and_half_busy_runners_give_a_steady_answer() -> None:
    """The issue's sequence: 3 -> 4 -> 5 -> 6 -> 7 -> 8 over six syncs without the fix."""
    rule = busy_rule(busy_metric())
    reserved = 1
    desired = 3
    answers = []
    for _ in range(6):
        demand_runners = desired - reserved
        busy = reserved + demand_runners // 2  # the reserved job's runner, and half the others
        desired = suggest_by_busy_runners(rule, desired, busy, reserved=reserved) + reserved
        answers.append(desired)
    assert answers == [3] * 6
