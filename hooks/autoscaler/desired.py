"""The HRA's desired replicas, as ARC's `horizontalrunnerautoscaler_controller.go` computes them.

1. min: the first active scheduled override's `minReplicas`, else `spec.minReplicas` (1 when
   unset or negative);
2. suggested: from the metrics (none: nothing suggested, so min); for a target in scale-set
   mode, min + the jobs GitHub assigned to its scale set, as GitHub's listener sizes a scale
   set (the metrics and webhook reservations are not read: the count already holds them);
3. desired = suggested + the replicas of the reservations that count;
4. clamped: below min gives min, else above max gives max (so min wins only from below);
5. anti-flap: within `scaleDownDelaySecondsAfterScaleOut` (default 10 minutes) of the last
   scale-out, a value not above the current `status.desiredReplicas` keeps the current one
   (not in scale-set mode), but never above `maxReplicas` (ARC keeps it above a lowered max);
6. `lastSuccessfulScaleOutTime` becomes now when the value goes up (from nothing: above 1).

PercentageRunnersBusy steps from the replicas in effect, so it takes one step per sync period,
as ARC's HRA, synced once a period, does: its suggestion stands until the period ends
(`status.cacheEntries`, ARC's former cache of it), however often the target's or the
reservations' changes sync the HRA meanwhile. Stepped at every such sync, 12 idle runners went
to 6, 3 and 2 within a second, and then, with the two left busy, back up to 12.

Unlike ARC, a spec whose values ARC would misuse (a negative maxReplicas, minReplicas above
maxReplicas, a negative delay or reservation) is refused with InvalidSpecError, checked where
ARC checks that min and max are set (`validation.py`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from hooks.autoscaler.activity import ActivitySource
from hooks.autoscaler.errors import AutoscalingError, InvalidSpecError
from hooks.autoscaler.metrics import (
    JobCounts,
    RunnerScope,
    busy_rule,
    check_metric_types,
    suggest_by_busy_runners,
    suggest_by_workflow_runs,
)
from hooks.autoscaler.reservations import (
    Reservation,
    ReservationCount,
    count_reservations,
    reservations_from_spec,
)
from hooks.autoscaler.schedule import (
    match_overrides,
    min_replicas_with,
    next_boundary,
    summarize_overrides,
)
from hooks.autoscaler.validation import spec_problems, trigger_duration_notes
from hooks.children import problems_message
from hooks.clock import format_time, parse_time
from hooks.resources.autoscaler import (
    METRIC_PERCENTAGE_RUNNERS_BUSY,
    CacheEntry,
    HorizontalRunnerAutoscaler,
    HorizontalRunnerAutoscalerStatus,
)

DEFAULT_SCALE_DOWN_DELAY = timedelta(minutes=10)

# Why the value is what it is (`Decision.reason`).
SUGGESTED = "Suggested"
RAISED_TO_MIN = "MinReplicas"
CAPPED_AT_MAX = "MaxReplicas"
SCALE_DOWN_DELAYED = "ScaleDownDelay"
ASSIGNED_JOBS = "ScaleSetAssignedJobs"  # the suggestion's source in scale-set mode


@dataclass(frozen=True)
class ScaleTarget:
    """The RunnerDeployment or RunnerSet the HRA sizes."""

    scope: RunnerScope
    replicas: int | None = None  # in effect now: what PercentageRunnersBusy scales from
    scale_set: bool = False  # sized by the jobs assigned to its runner scale set
    assigned_jobs: int | None = None  # as the listener last counted them (None: not yet)


BUSY_STEP_KEY = "desiredReplicas"
"""The key of the standing PercentageRunnersBusy suggestion in `status.cacheEntries` (ARC's
`CacheEntryKeyDesiredReplicas`)."""


@dataclass(frozen=True)
class BusyStep:
    """A PercentageRunnersBusy suggestion and the end of the sync period it stands for."""

    replicas: int
    until: datetime

    def cache_entry(self) -> CacheEntry:
        return CacheEntry(
            key=BUSY_STEP_KEY, value=self.replicas, expiration_time=format_time(self.until)
        )


def standing_busy_step(
    hra: HorizontalRunnerAutoscaler, now: datetime, period: timedelta
) -> BusyStep | None:
    """The step the status records, while its period lasts and the spec is the one it was
    taken for. An expiry beyond one period from now (another replica's clock ahead, an edit)
    or an unreadable one stands for nothing."""
    status = hra.status
    if status is None or status.observed_generation != (hra.metadata.generation or None):
        return None
    for entry in status.cache_entries:
        if entry.key != BUSY_STEP_KEY or entry.value is None:
            continue
        try:
            until = parse_time(entry.expiration_time or "")
        except ValueError:
            continue
        if now < until <= now + period:
            return BusyStep(entry.value, until)
    return None


@dataclass(frozen=True)
class Suggestion:
    replicas: int | None  # None: no metric, or none that suggests anything
    metric: str = ""  # the metric that suggested it
    jobs: JobCounts | None = None  # what TotalNumberOf...WorkflowRuns counted, when asked
    busy: int | None = None  # what PercentageRunnersBusy counted, when asked
    busy_step: BusyStep | None = None  # PercentageRunnersBusy's step, taken or standing
    busy_replicas: int | None = None  # PercentageRunnersBusy's own suggestion, when asked


@dataclass(frozen=True)
class Decision:
    desired_replicas: int
    last_scale_out_time: datetime | None  # the value `status.lastSuccessfulScaleOutTime` holds
    scheduled_overrides_summary: str | None  # None: cleared, as ARC does
    reason: str
    message: str
    next_change_at: datetime | None  # the next moment the answer may change without new input
    min_replicas: int
    suggestion: Suggestion
    reservations: ReservationCount


@dataclass(frozen=True)
class _Hold:
    replicas: int
    until: datetime


def desired_replicas(
    hra: HorizontalRunnerAutoscaler,
    target: ScaleTarget,
    activity: ActivitySource,
    now: datetime,
    *,
    reservations: Sequence[Reservation] = (),
    busy_runners: int = 0,
    idle_runners: int = 0,
    default_scale_down_delay: timedelta = DEFAULT_SCALE_DOWN_DELAY,
    sync_period: timedelta | None = None,
) -> Decision:
    """Size the target. `reservations` come in addition to `spec.capacityReservations`.
    `sync_period`: how long a PercentageRunnersBusy step stands (None: a step every call).

    Raises AutoscalingError (with ARC's message where ARC has one) for an HRA that cannot be
    sized as configured.
    """
    spec = hra.spec
    _check_bounds(hra)  # before the overrides are matched: their number is bounded
    overrides = match_overrides(spec.scheduled_overrides, now)
    minimum = min_replicas_with(overrides, spec.min_replicas)
    counted = count_reservations(
        [*reservations_from_spec(spec.capacity_reservations), *reservations],
        spec.max_replicas,
        now,
        busy_runners=busy_runners,
        # The warm runners (`minReplicas`) take jobs no reservation brought, and a metric
        # counts running jobs itself: only a webhook-only HRA's busy runners beyond its
        # minimum are its reservations' jobs.
        renew_beyond=None if spec.metrics else minimum,
        idle_runners=idle_runners,
    )
    if target.scale_set:
        suggestion = suggest_by_assigned_jobs(hra, target, minimum)
    else:
        standing = standing_busy_step(hra, now, sync_period) if sync_period else None
        suggestion = suggest_replicas(
            hra,
            target,
            activity,
            reserved=counted.reserved,
            standing=standing,
            next_step_at=now + sync_period if sync_period else None,
        )
    suggested = minimum if suggestion.replicas is None else suggestion.replicas
    clamped, reason = _clamp(suggested + counted.reserved, minimum, spec.max_replicas)
    delay = _scale_down_delay(hra, default_scale_down_delay)
    # An assigned job is a fact, not an estimate: nothing to smooth, and an ephemeral member
    # kept past its job would only be replaced by an idle one (GitHub's listener holds none).
    hold = (
        None
        if target.scale_set
        else _scale_down_hold(hra.status, clamped, delay, now, spec.max_replicas)
    )
    desired = hold.replicas if hold else clamped
    message = _message(suggestion, minimum, counted.reserved, spec.max_replicas, desired)
    if hold:
        reason = SCALE_DOWN_DELAYED
        message += f"; {clamped} after the scale-down delay, at {format_time(hold.until)}"
    # Said in status: the receiver falls back to ten minutes with at most a line in its log.
    message = problems_message([message, *trigger_duration_notes(spec.scale_up_triggers)])
    return Decision(
        desired_replicas=desired,
        last_scale_out_time=_last_scale_out_time(hra.status, desired, now),
        scheduled_overrides_summary=summarize_overrides(overrides, spec.min_replicas),
        reason=reason,
        message=message,
        next_change_at=_earliest(
            next_boundary(spec.scheduled_overrides, now),
            counted.next_expiry,
            hold.until if hold else None,
            suggestion.busy_step.until if suggestion.busy_step else None,
        ),
        min_replicas=minimum,
        suggestion=suggestion,
        reservations=counted,
    )


def suggest_replicas(
    hra: HorizontalRunnerAutoscaler,
    target: ScaleTarget,
    activity: ActivitySource,
    *,
    reserved: int = 0,
    standing: BusyStep | None = None,
    next_step_at: datetime | None = None,
) -> Suggestion:
    """ARC's `suggestDesiredReplicas`: the second metric is asked only when the first
    suggests nothing (0), which is how PercentageRunnersBusy scales up from zero. `reserved`
    is what reservations add on top of the suggestion (PercentageRunnersBusy discounts it).
    `standing`: PercentageRunnersBusy's step of this sync period, taken already; else a step
    is taken, to stand until `next_step_at` (None: not recorded)."""
    spec = hra.spec
    _check_bounds(hra)
    check_metric_types(spec.metrics)
    suggestion = Suggestion(replicas=None)
    busy: int | None = None
    for metric in spec.metrics:
        if metric.type == METRIC_PERCENTAGE_RUNNERS_BUSY and standing is not None:
            suggestion = Suggestion(
                standing.replicas, metric.type, busy_step=standing, busy_replicas=standing.replicas
            )
        elif metric.type == METRIC_PERCENTAGE_RUNNERS_BUSY:
            busy = activity.busy_runners()
            replicas = suggest_by_busy_runners(busy_rule(metric), target.replicas, busy, reserved)
            step = BusyStep(replicas, next_step_at) if next_step_at is not None else None
            suggestion = Suggestion(
                replicas, metric.type, busy=busy, busy_step=step, busy_replicas=replicas
            )
        else:
            jobs = suggest_by_workflow_runs(metric, target.scope, activity)
            suggestion = Suggestion(
                jobs.total,
                metric.type or "",
                jobs=jobs,
                busy=busy,
                busy_step=suggestion.busy_step,
                busy_replicas=suggestion.busy_replicas,
            )
        if suggestion.replicas is not None and suggestion.replicas > 0:
            break
    return suggestion


def suggest_by_assigned_jobs(
    hra: HorizontalRunnerAutoscaler, target: ScaleTarget, minimum: int
) -> Suggestion:
    """min + assigned jobs: every assigned job gets a runner, and min runners wait idle."""
    _check_bounds(hra)
    if target.assigned_jobs is None:
        return Suggestion(replicas=None, metric=ASSIGNED_JOBS)
    return Suggestion(replicas=minimum + target.assigned_jobs, metric=ASSIGNED_JOBS)


def _check_bounds(hra: HorizontalRunnerAutoscaler) -> None:
    spec = hra.spec
    name = f"{hra.metadata.namespace}/{hra.metadata.name}"
    if spec.min_replicas is None:
        raise AutoscalingError(f"horizontalrunnerautoscaler {name} is missing minReplicas")
    if spec.max_replicas is None:
        raise AutoscalingError(f"horizontalrunnerautoscaler {name} is missing maxReplicas")
    problems = spec_problems(spec)
    if problems:
        raise InvalidSpecError(problems_message(problems))


def _clamp(value: int, minimum: int, maximum: int | None) -> tuple[int, str]:
    if value < minimum:
        return minimum, RAISED_TO_MIN
    if maximum is not None and value > maximum:
        return maximum, CAPPED_AT_MAX
    return value, SUGGESTED


def _scale_down_delay(hra: HorizontalRunnerAutoscaler, default: timedelta) -> timedelta:
    seconds = hra.spec.scale_down_delay_seconds_after_scale_out
    return default if seconds is None else timedelta(seconds=seconds)


def _scale_down_hold(
    status: HorizontalRunnerAutoscalerStatus | None,
    value: int,
    delay: timedelta,
    now: datetime,
    max_replicas: int | None,
) -> _Hold | None:
    """The current value kept above `value` by the scale-down delay, if it is. (ARC also
    "keeps" an equal value; that changes nothing, so it is no hold here.) Never above a
    `maxReplicas` lowered since: ARC keeps the old value, and runners were still created
    beyond the new maximum for up to the delay."""
    current = status.desired_replicas if status is not None else None
    if current is not None and max_replicas is not None:
        current = min(current, max_replicas)
    if status is None or current is None or current <= value:
        return None
    if status.last_successful_scale_out_time is None:
        return None
    until = _status_time(status.last_successful_scale_out_time) + delay
    return _Hold(current, until) if until > now else None


def _last_scale_out_time(
    status: HorizontalRunnerAutoscalerStatus | None, desired: int, now: datetime
) -> datetime | None:
    current = status.desired_replicas if status else None
    if (current is None and desired > 1) or (current is not None and desired > current):
        return now
    recorded = status.last_successful_scale_out_time if status else None
    return _status_time(recorded) if recorded else None


def _status_time(text: str) -> datetime:
    try:
        return parse_time(text)
    except ValueError as error:
        raise AutoscalingError(
            "status.lastSuccessfulScaleOutTime is not an RFC 3339 time"
        ) from error


def _message(
    suggestion: Suggestion, minimum: int, reserved: int, maximum: int | None, desired: int
) -> str:
    source = (
        f"{suggestion.replicas} suggested by {suggestion.metric}"
        if suggestion.replicas is not None
        else "no metric suggestion"
    )
    return f"{desired} replicas: {source}, {reserved} reserved, min {minimum}, max {maximum}"


def _earliest(*moments: datetime | None) -> datetime | None:
    return min((moment for moment in moments if moment is not None), default=None)
