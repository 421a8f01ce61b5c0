"""Desired replicas beyond ARC's tables (tests/test_arc_autoscaling.py): metric
combinations, clamps, the scale-down delay, scheduled overrides and reservations as
`desired_replicas` combines them."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hooks.autoscaler import (
    AutoscalingError,
    RecordedActivity,
    Reservation,
    RunnerScope,
    ScaleTarget,
    WorkflowJob,
    WorkflowRun,
    desired_replicas,
)
from hooks.autoscaler.desired import (
    CAPPED_AT_MAX,
    RAISED_TO_MIN,
    SCALE_DOWN_DELAYED,
    SUGGESTED,
    Decision,
)
from hooks.autoscaler.errors import InvalidSpecError
from hooks.clock import format_time
from hooks.resources.autoscaler import (
    METRIC_PERCENTAGE_RUNNERS_BUSY,
    METRIC_QUEUED_AND_IN_PROGRESS_WORKFLOW_RUNS,
    CapacityReservation,
    HorizontalRunnerAutoscaler,
    HorizontalRunnerAutoscalerSpec,
    HorizontalRunnerAutoscalerStatus,
    MetricSpec,
    RecurrenceRule,
    ScheduledOverride,
)
from hooks.resources.common import ObjectMeta

NOW = datetime(2022, 3, 1, 12, 0, tzinfo=UTC)
REPO = "test/valid"


def queued_jobs(count: int, busy: int = 0) -> RecordedActivity:
    """`count` queued runs of REPO with one queued `label1` job each."""
    return RecordedActivity(
        busy=busy,
        runs={
            (REPO, "queued"): tuple(WorkflowRun(id=i, status="queued") for i in range(1, count + 1))
        },
        jobs={
            (REPO, i): (WorkflowJob(status="queued", labels=("label1",)),)
            for i in range(1, count + 1)
        },
    )


def hra(
    min_replicas: int | None = 1,
    max_replicas: int | None = 10,
    metrics: Sequence[MetricSpec] = (),
    *,
    desired: int | None = None,
    scaled_out_at: datetime | None = None,
    delay_seconds: int | None = None,
    overrides: Sequence[ScheduledOverride] = (),
    spec_reservations: Sequence[CapacityReservation] = (),
) -> HorizontalRunnerAutoscaler:
    status = None
    if desired is not None or scaled_out_at is not None:
        status = HorizontalRunnerAutoscalerStatus(
            desired_replicas=desired,
            last_successful_scale_out_time=format_time(scaled_out_at) if scaled_out_at else None,
        )
    return HorizontalRunnerAutoscaler(
        metadata=ObjectMeta(name="testhra", namespace="testns"),
        spec=HorizontalRunnerAutoscalerSpec(
            min_replicas=min_replicas,
            max_replicas=max_replicas,
            metrics=list(metrics),
            scale_down_delay_seconds_after_scale_out=delay_seconds,
            scheduled_overrides=list(overrides),
            capacity_reservations=list(spec_reservations),
        ),
        status=status,
    )


QUEUED_RUNS = MetricSpec(type=METRIC_QUEUED_AND_IN_PROGRESS_WORKFLOW_RUNS)


# The HRA and its metrics.


class NoGitHub:
    """An activity source that fails when asked: proves a metric was not consulted."""

    def __init__(self, busy: int | None = None) -> None:
        self.busy = busy

    def busy_runners(self) -> int:
        if self.busy is None:
            raise AssertionError("busy runners were asked for")
        return self.busy

    def workflow_runs(self, repository: str, status: str) -> Sequence[WorkflowRun]:
        raise AssertionError(f"workflow runs of {repository} were asked for")

    def workflow_jobs(self, repository: str, run_id: int) -> Sequence[WorkflowJob]:
        raise AssertionError(f"jobs of {repository} run {run_id} were asked for")


REPO_TARGET = ScaleTarget(RunnerScope(repository=REPO, labels=("label1",)), replicas=4)
BUSY = MetricSpec(type=METRIC_PERCENTAGE_RUNNERS_BUSY)
THREE_QUEUED = queued_jobs(3)


def test_no_metric_gives_min_plus_reserved_without_asking_github() -> None:
    decision = desired_replicas(hra(2, 10), REPO_TARGET, NoGitHub(), NOW)

    assert decision.desired_replicas == 2
    assert decision.suggestion.replicas is None
    assert decision.reason == SUGGESTED


def test_percentage_runners_busy_scales_the_replicas_in_effect() -> None:
    decision = desired_replicas(hra(1, 10, [BUSY]), REPO_TARGET, NoGitHub(busy=4), NOW)

    assert decision.desired_replicas == 6  # ceil(4 x 1.3)
    assert decision.suggestion.metric == METRIC_PERCENTAGE_RUNNERS_BUSY


def test_the_second_metric_is_asked_only_when_the_first_suggests_zero() -> None:
    idle = ScaleTarget(REPO_TARGET.scope, replicas=1)  # int(1 x 0.7) = 0

    fallback = desired_replicas(hra(0, 10, [BUSY, QUEUED_RUNS]), idle, THREE_QUEUED, NOW)
    busy = desired_replicas(hra(0, 10, [BUSY, QUEUED_RUNS]), REPO_TARGET, NoGitHub(busy=4), NOW)

    assert (fallback.desired_replicas, fallback.suggestion.metric) == (
        3,
        METRIC_QUEUED_AND_IN_PROGRESS_WORKFLOW_RUNS,
    )
    assert busy.desired_replicas == 6


def test_a_suggestion_of_zero_is_not_replaced_by_min_before_the_clamp() -> None:
    decision = desired_replicas(hra(2, 10, [QUEUED_RUNS]), REPO_TARGET, RecordedActivity(), NOW)

    assert decision.suggestion.replicas == 0
    assert (decision.desired_replicas, decision.reason) == (2, RAISED_TO_MIN)


@pytest.mark.parametrize(
    ("autoscaler", "error"),
    [
        (hra(None, 10), "horizontalrunnerautoscaler testns/testhra is missing minReplicas"),
        (hra(1, None), "horizontalrunnerautoscaler testns/testhra is missing maxReplicas"),
        (
            hra(1, 10, [BUSY, QUEUED_RUNS, BUSY]),
            "too many autoscaling metrics configured: It must be 0 to 2, but got 3",
        ),
        (
            hra(1, 10, [MetricSpec(type="Unknown")]),
            "validating autoscaling metrics: unsupported metric type in spec.metrics[0].type: "
            'it must be one of "PercentageRunnersBusy" or '
            '"TotalNumberOfQueuedAndInProgressWorkflowRuns"',
        ),
        (
            hra(1, 10, [QUEUED_RUNS, BUSY]),
            "invalid HRA Spec: Metrics[0] of TotalNumberOfQueuedAndInProgressWorkflowRuns cannot "
            "be combined with Metrics[1] of PercentageRunnersBusy: The only allowed combination "
            "is 0=PercentageRunnersBusy and 1=TotalNumberOfQueuedAndInProgressWorkflowRuns",
        ),
        (
            hra(
                1, 10, [BUSY, MetricSpec(type=METRIC_PERCENTAGE_RUNNERS_BUSY, scale_up_factor="x")]
            ),
            "invalid HRA Spec: Metrics[0] of PercentageRunnersBusy cannot be combined with "
            "Metrics[1] of PercentageRunnersBusy: The only allowed combination is "
            "0=PercentageRunnersBusy and 1=TotalNumberOfQueuedAndInProgressWorkflowRuns",
        ),
        # ARC prints the second type too; any text there is not repeated.
        (
            hra(1, 10, [BUSY, MetricSpec(type="ghp_pasted")]),
            "invalid HRA Spec: Metrics[0] of PercentageRunnersBusy cannot be combined with "
            "Metrics[1] of an unsupported type: The only allowed combination is "
            "0=PercentageRunnersBusy and 1=TotalNumberOfQueuedAndInProgressWorkflowRuns",
        ),
    ],
)
def test_invalid_autoscalers(autoscaler: HorizontalRunnerAutoscaler, error: str) -> None:
    with pytest.raises(AutoscalingError) as raised:
        desired_replicas(autoscaler, REPO_TARGET, NoGitHub(busy=4), NOW)

    assert str(raised.value) == error


def test_enterprise_runners_cannot_use_workflow_runs() -> None:
    enterprise = ScaleTarget(RunnerScope(enterprise="acme"))

    with pytest.raises(AutoscalingError, match="enterprise runners have no repositories"):
        desired_replicas(hra(1, 10, [QUEUED_RUNS]), enterprise, NoGitHub(), NOW)


# Clamps.


@pytest.mark.parametrize(
    ("min_replicas", "max_replicas", "queued", "want", "reason"),
    [
        (2, 5, 1, 2, RAISED_TO_MIN),
        (2, 5, 4, 4, SUGGESTED),
        (2, 5, 7, 5, CAPPED_AT_MAX),
        (0, 5, 0, 0, SUGGESTED),
        (3, 3, 6, 3, CAPPED_AT_MAX),
        # ARC reads a negative min as 1.
        (-4, 5, 0, 1, RAISED_TO_MIN),
    ],
)
def test_clamps(min_replicas: int, max_replicas: int, queued: int, want: int, reason: str) -> None:
    activity = queued_jobs(queued)

    decision = desired_replicas(
        hra(min_replicas, max_replicas, [QUEUED_RUNS]), REPO_TARGET, activity, NOW
    )

    assert (decision.desired_replicas, decision.reason) == (want, reason)


# The scale-down delay and the last scale-out time.


@dataclass(frozen=True)
class DelayCase:
    description: str
    queued: int
    desired: int | None
    scaled_out_at: datetime | None
    want: int
    want_scaled_out_at: datetime | None
    delay_seconds: int | None = None
    want_next_change: datetime | None = None
    max_replicas: int = 10


DELAY_CASES = [
    # Found by a hostile probe: maxReplicas lowered from 30 to 5 mid-burst kept 30 for the
    # delay, and runners were still created beyond 5 (ARC keeps the old value too).
    DelayCase(
        "held, but never above a maxReplicas lowered since",
        2,
        30,
        NOW - timedelta(minutes=4),
        5,
        NOW - timedelta(minutes=4),
        want_next_change=NOW + timedelta(minutes=6),
        max_replicas=5,
    ),
    DelayCase(
        "no hold once the lowered maximum is the value anyway",
        7,
        30,
        NOW - timedelta(minutes=4),
        5,
        NOW - timedelta(minutes=4),
        max_replicas=5,
    ),
    DelayCase(
        "held within the default 10 minutes",
        2,
        5,
        NOW - timedelta(minutes=4),
        5,
        NOW - timedelta(minutes=4),
        want_next_change=NOW + timedelta(minutes=6),
    ),
    DelayCase(
        "held until the delay of the spec",
        2,
        5,
        NOW - timedelta(seconds=30),
        5,
        NOW - timedelta(seconds=30),
        delay_seconds=60,
        want_next_change=NOW + timedelta(seconds=30),
    ),
    DelayCase(
        "over once the delay of the spec passed",
        2,
        5,
        NOW - timedelta(minutes=4),
        2,
        NOW - timedelta(minutes=4),
        delay_seconds=60,
    ),
    DelayCase(
        "over when the delay ends exactly now",
        2,
        5,
        NOW - timedelta(minutes=10),
        2,
        NOW - timedelta(minutes=10),
    ),
    DelayCase("no delay without a scale-out time", 2, 5, None, 2, None),
    DelayCase(
        "no delay without a previous value",
        1,
        None,
        NOW - timedelta(minutes=1),
        1,
        NOW - timedelta(minutes=1),
    ),
    DelayCase(
        "scaling out is never delayed, and records the time",
        7,
        5,
        NOW - timedelta(minutes=1),
        7,
        NOW,
    ),
    DelayCase(
        "same value: no new scale-out time",
        5,
        5,
        NOW - timedelta(hours=1),
        5,
        NOW - timedelta(hours=1),
    ),
    DelayCase("first value above 1 is a scale-out", 2, None, None, 2, NOW),
    DelayCase("first value of 1 is not", 1, None, None, 1, None),
]


@pytest.mark.parametrize("case", DELAY_CASES, ids=[c.description for c in DELAY_CASES])
def test_scale_down_delay(case: DelayCase) -> None:
    autoscaler = hra(
        1,
        case.max_replicas,
        [QUEUED_RUNS],
        desired=case.desired,
        scaled_out_at=case.scaled_out_at,
        delay_seconds=case.delay_seconds,
    )
    activity = queued_jobs(case.queued)

    decision = desired_replicas(autoscaler, REPO_TARGET, activity, NOW)

    assert decision.desired_replicas == case.want
    assert decision.last_scale_out_time == case.want_scaled_out_at
    assert decision.next_change_at == case.want_next_change
    assert (decision.reason == SCALE_DOWN_DELAYED) == (case.want_next_change is not None)


def test_the_default_delay_is_passed_in() -> None:
    autoscaler = hra(1, 10, desired=5, scaled_out_at=NOW - timedelta(minutes=2))

    held = desired_replicas(autoscaler, REPO_TARGET, NoGitHub(), NOW)
    short = desired_replicas(
        autoscaler, REPO_TARGET, NoGitHub(), NOW, default_scale_down_delay=timedelta(minutes=1)
    )

    assert (held.desired_replicas, short.desired_replicas) == (5, 1)
    assert "1 after the scale-down delay" in held.message


def test_the_delay_keeps_no_value_above_a_lowered_max() -> None:
    """ARC keeps 5 here for the rest of the delay; a lowered maxReplicas applies at once."""
    autoscaler = hra(1, 3, desired=5, scaled_out_at=NOW - timedelta(minutes=2))

    assert desired_replicas(autoscaler, REPO_TARGET, NoGitHub(), NOW).desired_replicas == 3


# Scheduled overrides and reservations in the decision.


def test_an_active_override_sets_min_and_its_end_is_the_next_change() -> None:
    weekend = ScheduledOverride(
        start_time="2022-03-01T00:00:00Z", end_time="2022-03-02T00:00:00Z", min_replicas=4
    )

    decision = desired_replicas(hra(1, 10, overrides=[weekend]), REPO_TARGET, NoGitHub(), NOW)

    assert decision.min_replicas == decision.desired_replicas == 4
    assert decision.scheduled_overrides_summary == "min=1 time=2022-03-02 00:00:00 +0000 UTC"
    assert decision.next_change_at == datetime(2022, 3, 2, tzinfo=UTC)


def test_the_number_of_overrides_is_bounded_before_any_is_matched() -> None:
    """Found by a hostile probe: each override is a recurrence rule matched at every sync, and
    11,000 of them took a sync past Metacontroller's timeout."""
    weekly = ScheduledOverride(
        start_time="2022-03-01T00:00:00Z",
        end_time="2022-03-02T00:00:00Z",
        min_replicas=4,
        recurrence_rule=RecurrenceRule(frequency="Weekly"),
    )
    at_most = desired_replicas(hra(1, 10, overrides=[weekly] * 100), REPO_TARGET, NoGitHub(), NOW)

    with pytest.raises(InvalidSpecError, match=r"spec.scheduledOverrides: at most 100"):
        desired_replicas(hra(1, 10, overrides=[weekly] * 101), REPO_TARGET, NoGitHub(), NOW)
    assert at_most.desired_replicas == 4


def test_spec_and_object_reservations_add_up_and_expire() -> None:
    in_spec = CapacityReservation(
        name="from-spec",
        effective_time=format_time(NOW - timedelta(minutes=5)),
        expiration_time=format_time(NOW + timedelta(minutes=25)),
        replicas=2,
    )
    expired_in_spec = CapacityReservation(
        effective_time=format_time(NOW - timedelta(minutes=30)),
        expiration_time=format_time(NOW),
        replicas=5,
    )
    job_reservation = Reservation(
        "job-42",
        NOW - timedelta(minutes=1),
        NOW + timedelta(minutes=9),
        started_at=NOW - timedelta(minutes=1),
    )

    decision = desired_replicas(
        hra(1, 10, spec_reservations=[in_spec, expired_in_spec]),
        REPO_TARGET,
        NoGitHub(),
        NOW,
        reservations=[job_reservation],
    )

    assert decision.desired_replicas == 4  # min 1 + 2 + 1
    assert decision.reservations.expired == ("spec.capacityReservations[1]",)
    assert decision.next_change_at == NOW + timedelta(minutes=9)


def test_reservations_add_to_the_metric_suggestion() -> None:
    reservation = Reservation("job-1", NOW, NOW + timedelta(minutes=30), replicas=1, started_at=NOW)

    decision = desired_replicas(
        hra(1, 10, [QUEUED_RUNS]), REPO_TARGET, THREE_QUEUED, NOW, reservations=[reservation]
    )

    assert decision.desired_replicas == 4
    assert decision.message == (
        "4 replicas: 3 suggested by TotalNumberOfQueuedAndInProgressWorkflowRuns, "
        "1 reserved, min 1, max 10"
    )


def test_the_earliest_change_wins() -> None:
    override = ScheduledOverride(
        start_time="2022-03-01T12:20:00Z", end_time="2022-03-01T13:00:00Z", min_replicas=3
    )
    reservation = Reservation("job-1", NOW, NOW + timedelta(minutes=30), started_at=NOW)

    decision = desired_replicas(
        hra(1, 10, overrides=[override]), REPO_TARGET, NoGitHub(), NOW, reservations=[reservation]
    )

    assert decision.next_change_at == datetime(2022, 3, 1, 12, 20, tzinfo=UTC)


# PercentageRunnersBusy: one step per sync period.

PERIOD = timedelta(seconds=60)


class CountingBusy:
    """Busy runners as GitHub would count them, and how often they were asked for."""

    def __init__(self, busy: int) -> None:
        self.busy = busy
        self.asked = 0

    def busy_runners(self) -> int:
        self.asked += 1
        return self.busy

    def workflow_runs(self, repository: str, status: str) -> Sequence[WorkflowRun]:
        raise AssertionError("workflow runs were asked for")

    def workflow_jobs(self, repository: str, run_id: int) -> Sequence[WorkflowJob]:
        raise AssertionError("jobs were asked for")


def after_sync(
    autoscaler: HorizontalRunnerAutoscaler, decision: Decision
) -> HorizontalRunnerAutoscaler:
    """The HRA as the next sync sees it: the status the controller writes from `decision`."""
    step = decision.suggestion.busy_step
    status = HorizontalRunnerAutoscalerStatus(
        desired_replicas=decision.desired_replicas,
        observed_generation=autoscaler.metadata.generation or None,
        cache_entries=[step.cache_entry()] if step else [],
    )
    return autoscaler.model_copy(update={"status": status})


def test_a_busy_step_stands_for_the_sync_period_however_often_the_hra_is_synced() -> None:
    """Found by an independent run: synced at each change of its target, the HRA applied its
    factor again and again, 12 idle runners to 6, 3 and 2 within a second, then back to 12."""
    autoscaler = hra(1, 20, [BUSY])
    github = CountingBusy(busy=0)
    replicas, seen = 12, []
    for seconds in (0, 1, 2, 30, 59, 60, 61, 120):
        now = NOW + timedelta(seconds=seconds)
        target = ScaleTarget(REPO_TARGET.scope, replicas=replicas)
        decision = desired_replicas(autoscaler, target, github, now, sync_period=PERIOD)
        autoscaler = after_sync(autoscaler, decision)
        replicas = decision.desired_replicas
        seen.append(replicas)

    assert seen == [8, 8, 8, 8, 8, 5, 5, 3]  # int(12 x 0.7), int(8 x 0.7), int(5 x 0.7)
    assert github.asked == 3  # and GitHub is asked once a period
    entry = autoscaler.status.cache_entries[0]  # type: ignore[union-attr]
    assert (entry.key, entry.value) == ("desiredReplicas", 3)  # ARC's former cache entry


@pytest.mark.parametrize(
    "changed",
    ["spec edited", "expiry beyond a period", "expiry unreadable"],
)
def test_a_recorded_step_that_cannot_be_trusted_is_taken_again(changed: str) -> None:
    first = desired_replicas(
        hra(1, 20, [BUSY]),
        ScaleTarget(REPO_TARGET.scope, 12),
        CountingBusy(0),
        NOW,
        sync_period=PERIOD,
    )
    autoscaler = after_sync(hra(1, 20, [BUSY]), first)
    recorded = autoscaler.status
    assert recorded is not None
    if changed == "spec edited":
        metadata = autoscaler.metadata.model_copy(update={"generation": 2})
        autoscaler = autoscaler.model_copy(update={"metadata": metadata})
    else:
        expiry = format_time(NOW + 2 * PERIOD) if changed == "expiry beyond a period" else "soon"
        entry = recorded.cache_entries[0].model_copy(update={"expiration_time": expiry})
        status = recorded.model_copy(update={"cache_entries": [entry]})
        autoscaler = autoscaler.model_copy(update={"status": status})
    github = CountingBusy(busy=0)

    later = desired_replicas(
        autoscaler,
        ScaleTarget(REPO_TARGET.scope, 8),
        github,
        NOW + timedelta(seconds=1),
        sync_period=PERIOD,
    )

    assert github.asked == 1 and later.desired_replicas == 5


@given(
    offsets=st.lists(st.floats(min_value=0, max_value=59.999), min_size=1, max_size=12),
    busy=st.integers(0, 30),
    replicas=st.integers(0, 30),
)
@settings(max_examples=200)
def test_within_a_period_the_busy_metric_is_asked_once_and_its_answer_stands(
    offsets: list[float], busy: int, replicas: int
) -> None:
    autoscaler = hra(0, 40, [BUSY])
    github = CountingBusy(busy)
    suggestions = set()
    for offset in sorted(offsets):
        now = NOW + timedelta(seconds=offset)
        target = ScaleTarget(REPO_TARGET.scope, replicas=replicas)
        decision = desired_replicas(autoscaler, target, github, now, sync_period=PERIOD)
        autoscaler = after_sync(autoscaler, decision)
        replicas = decision.desired_replicas
        suggestions.add(decision.suggestion.replicas)

    assert github.asked == 1
    assert len(suggestions) == 1
