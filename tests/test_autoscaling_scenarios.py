"""HorizontalRunnerAutoscaler in the simulated world: webhook-driven and pull-driven scaling from
zero and back, and scheduled overrides across a weekend. Each scenario runs once, sampled over
virtual time with `run_to`; every job completes, none is cut off, no registration is left."""

from __future__ import annotations

import itertools
import re
import statistics
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

import pytest

from arc_sim.summary import Summary
from arc_sim.world import START, World
from tests.sim_scenarios import assert_clean, world

SYNC_PERIOD = 60.0  # the HRA controller's resyncPeriodSeconds (ARC's --sync-period)
SCALE_DOWN_DELAY = 600.0  # ARC's default scaleDownDelaySecondsAfterScaleOut
QUEUED_RUNS = "TotalNumberOfQueuedAndInProgressWorkflowRuns"
BUSY_RUNNERS = "PercentageRunnersBusy"
_SUGGESTED_BY = re.compile(r"(\d+) suggested by (\w+)")

MINUTE = 60.0
HOUR = 60 * MINUTE
DAY = 24 * HOUR


@dataclass(frozen=True)
class Sample:
    """The HRA and the runners at one moment (seconds after the world's start)."""

    at: float
    desired: int | None
    reserved: int | None
    overrides_summary: str | None
    message: str  # of the ScalingActive condition
    pods: int  # live runner pods (terminating ones included)
    active_reservations: int  # CapacityReservations without spec.completionTime
    queued: int
    completed: int

    @property
    def suggested_by(self) -> str | None:
        """The metric that suggested the value, when one did."""
        match = _SUGGESTED_BY.search(self.message)
        return match.group(2) if match else None


def hra_status(sim: World) -> dict[str, Any]:
    autoscalers = sim.store.list_objects("HorizontalRunnerAutoscaler")
    assert len(autoscalers) <= 1
    status = autoscalers[0].get("status") if autoscalers else None
    return status if isinstance(status, dict) else {}


def active_reservations(reservations: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    return [r for r in reservations if not (r.get("spec") or {}).get("completionTime")]


def sample(sim: World) -> Sample:
    status = hra_status(sim)
    conditions = [c for c in status.get("conditions") or [] if c.get("type") == "ScalingActive"]
    jobs = sim.github.jobs()
    return Sample(
        at=(sim.clock.now() - START).total_seconds(),
        desired=status.get("desiredReplicas"),
        reserved=status.get("reservedReplicas"),
        overrides_summary=status.get("scheduledOverridesSummary"),
        message=str(conditions[0].get("message", "")) if conditions else "",
        pods=sim.live_runner_pods(),
        active_reservations=len(active_reservations(sim.store.list_objects("CapacityReservation"))),
        queued=sum(job.status == "queued" for job in jobs),
        completed=sum(job.status == "completed" for job in jobs),
    )


@dataclass
class Run:
    """A scenario run to its duration, sampled every `step` seconds, then torn down."""

    samples: list[Sample]
    summary: Summary
    last_completion: float  # seconds after the start at which the last job completed
    first_queued: float  # ... at which the first job was queued
    reservations_at_end: list[dict[str, Any]] = field(default_factory=list)
    status_at_end: dict[str, Any] = field(default_factory=dict)

    def between(self, start: float, end: float) -> list[Sample]:
        return [s for s in self.samples if start <= s.at < end]

    def first(self, predicate: Callable[[Sample], bool], after: float = 0.0) -> Sample:
        return next(s for s in self.samples if s.at >= after and predicate(s))


def run_sampled(name: str, step: float, times: Iterable[float] = ()) -> Run:
    """Run `name` to its duration, sampling every `step` seconds and at `times`."""
    sim = world(name)
    sim.begin()
    duration = sim.scenario.duration
    moments = sorted({*(step * i for i in range(1, int(duration // step) + 1)), *times})
    samples = []
    for moment in moments:
        if moment > duration:
            break
        sim.run_to(moment)
        samples.append(sample(sim))
    sim.run_to(duration)
    jobs = sim.github.jobs()
    reservations = sim.store.list_objects("CapacityReservation")
    status = hra_status(sim)
    summary = sim.finish()
    return Run(
        samples=samples,
        summary=summary,
        last_completion=max(seconds(j.completed_at) for j in jobs if j.completed_at),
        first_queued=min(seconds(j.queued_at) for j in jobs),
        reservations_at_end=reservations,
        status_at_end=status,
    )


def seconds(when: datetime) -> float:
    return (when - START).total_seconds()


# ---------------------------------------------------------------------- webhook-burst-lossy


@pytest.fixture(scope="module")
def burst() -> Run:
    """The 200-job burst with lossy, duplicated webhooks (~50 s of wall time: run once)."""
    return run_sampled("webhook-burst-lossy", step=30.0)


@pytest.mark.long_run
@pytest.mark.xdist_group("webhook_burst_lossy")
def test_webhook_burst_lossy_completes_every_job_within_max_replicas(burst: Run) -> None:
    summary = burst.summary

    assert_clean(summary, none_waiting=True, all_completed=True)
    assert summary.jobs.submitted == 200
    assert 1 < summary.runners.peak <= 40  # maxReplicas
    assert max(s.desired or 0 for s in burst.samples) == 40
    assert all(s.pods <= 40 for s in burst.samples)
    # Scaled out from zero by webhooks alone (no metrics): runners before the jobs, none.
    assert all(s.desired == 0 and s.pods == 0 for s in burst.between(0, burst.first_queued))
    assert burst.first(lambda s: (s.desired or 0) > 0).at <= burst.first_queued + SYNC_PERIOD
    # 200 three-minute jobs on at most 40 runners: about five waves.
    assert summary.jobs.p50_queue_seconds <= 240  # measured 152 s
    assert summary.jobs.max_queue_seconds <= 600  # measured 301 s
    assert summary.runners.created >= 200  # ephemeral: one runner per job, and then some


@pytest.mark.long_run
@pytest.mark.xdist_group("webhook_burst_lossy")
def test_webhook_burst_lossy_reservations_return_to_zero(burst: Run) -> None:
    # One reservation per queued job whose delivery arrived; beyond maxReplicas they wait.
    assert max(s.active_reservations for s in burst.samples) > 40
    assert max(s.reserved or 0 for s in burst.samples) > 40

    assert active_reservations(burst.reservations_at_end) == []
    assert burst.status_at_end.get("reservedReplicas") == 0
    assert burst.status_at_end.get("desiredReplicas") == 0
    assert burst.samples[-1].pods == 0


@pytest.mark.long_run
@pytest.mark.xdist_group("webhook_burst_lossy")
def test_webhook_burst_lossy_idle_runners_go_within_the_scale_down_delay(burst: Run) -> None:
    # Some `completed` deliveries were lost: their reservations are settled by asking GitHub
    # once runners sit idle, so nothing holds a runner past the scale-down delay.
    idle_from = burst.last_completion + SCALE_DOWN_DELAY + SYNC_PERIOD
    late = [s for s in burst.samples if s.at > idle_from]
    assert late, "the run ends before the scale-down delay is over"
    assert all(s.pods == 0 and s.desired == 0 for s in late), late[:3]
    assert all(s.active_reservations == 0 for s in late)


# ---------------------------------------------------------------------- pull, queued runs


def test_pull_queued_runs_alone_scales_from_zero_and_back() -> None:
    run = run_sampled("pull-queued-runs-from-zero", step=15.0)
    first_burst, second_burst = 5 * MINUTE, 35 * MINUTE

    assert_clean(run.summary, none_waiting=True, all_completed=True)
    assert run.summary.jobs.completed == 20
    assert run.first_queued == first_burst
    # Nothing before the first job: no webhook arrives, and the metric counts no run.
    assert all(s.desired == 0 and s.pods == 0 for s in run.between(0, first_burst))
    # The queue is read at the next sync: runners within about one sync period.
    for burst_start in (first_burst, second_burst):
        scaled = run.first(lambda s: (s.desired or 0) > 0, after=burst_start)
        assert scaled.at <= burst_start + SYNC_PERIOD, scaled
        assert scaled.suggested_by == QUEUED_RUNS
    # One runner per queued job: the first burst (8 jobs) asks for 8, the second (12) for the
    # maximum, 10.
    assert max(s.desired or 0 for s in run.between(first_burst, second_burst)) == 8
    assert max(s.desired or 0 for s in run.between(second_burst, run.summary.virtual_seconds)) == 10
    assert run.summary.runners.peak == 10
    # Back to zero between the bursts and at the end, once the scale-down delay is over.
    assert all(s.desired == 0 and s.pods == 0 for s in run.between(30 * MINUTE, second_burst))
    idle_from = run.last_completion + SCALE_DOWN_DELAY + SYNC_PERIOD
    assert all(s.desired == 0 and s.pods == 0 for s in run.samples if s.at > idle_from)
    # Pull-driven: a job waits for the next sync, a pod start and a registration.
    assert run.summary.jobs.p50_queue_seconds <= 2 * SYNC_PERIOD  # measured 47 s
    assert run.summary.jobs.max_queue_seconds <= 300  # measured 201 s: 12 jobs on 10 runners
    assert run.summary.github.by_endpoint  # the metric is paid in API calls...
    assert run.summary.github.rate_limited == 0  # ...within the budget


# ---------------------------------------------------------------------- pull, busy + fallback


def test_pull_busy_runners_scales_from_zero_through_the_queued_runs_fallback() -> None:
    run = run_sampled("pull-busy-with-queued-fallback", step=15.0)

    assert_clean(run.summary, none_waiting=True, all_completed=True)
    assert run.summary.jobs.completed == 22
    assert all(s.desired == 0 and s.pods == 0 for s in run.between(0, run.first_queued))
    # PercentageRunnersBusy has nothing to go on at zero (no runner, none busy): the first
    # value above zero comes from the second metric, within about a sync period.
    from_zero = run.first(lambda s: (s.desired or 0) > 0)
    assert from_zero.at <= run.first_queued + SYNC_PERIOD, from_zero
    assert from_zero.suggested_by == QUEUED_RUNS, from_zero.message
    # Then the busy runners drive it: PercentageRunnersBusy takes it above what the queue asked.
    fallback_peak = max(
        s.desired or 0 for s in run.samples if s.suggested_by == QUEUED_RUNS and s.desired
    )
    by_busy = [s for s in run.samples if s.suggested_by == BUSY_RUNNERS and (s.desired or 0) > 0]
    assert by_busy
    assert max(s.desired or 0 for s in by_busy) > fallback_peak
    assert run.summary.runners.peak <= 10  # maxReplicas
    # And back to zero after the last job (the busy metric scales down to 0, then the fallback
    # finds an empty queue).
    idle_from = run.last_completion + SCALE_DOWN_DELAY + SYNC_PERIOD
    assert all(s.desired == 0 and s.pods == 0 for s in run.samples if s.at > idle_from)
    assert run.samples[-1].suggested_by == QUEUED_RUNS
    assert run.summary.jobs.p50_queue_seconds <= SYNC_PERIOD  # measured 0 s
    assert run.summary.jobs.max_queue_seconds <= 2 * SYNC_PERIOD  # measured 58 s


# ---------------------------------------------------------------------- scheduled override


def weekday(when: float) -> str:
    return f"{START + timedelta(seconds=when):%a}"


def test_scheduled_override_scales_to_zero_for_the_weekend() -> None:
    friday = 4 * DAY  # Friday 2026-01-09 09:00 UTC, when the HRA is applied
    saturday = 4 * DAY + 15 * HOUR  # Saturday 00:00
    monday = saturday + 2 * DAY  # Monday 2026-01-12 00:00
    boundaries = [t + d for t in (saturday, monday) for d in (-30.0, 30.0, MINUTE, 10 * MINUTE)]
    run = run_sampled("scheduled-override-weekend", step=10 * MINUTE, times=boundaries)

    assert_clean(run.summary, none_waiting=True, all_completed=True)
    assert run.summary.jobs.completed == 8
    assert run.summary.runners.peak == 2
    fridays = run.between(friday + 10 * MINUTE, saturday)
    weekend = run.between(saturday + MINUTE, monday)
    mondays = run.between(monday + MINUTE, run.summary.virtual_seconds)
    assert {weekday(s.at) for s in fridays} == {"Fri"}
    assert {weekday(s.at) for s in weekend} == {"Sat", "Sun"}
    assert {weekday(s.at) for s in mondays} == {"Mon"}

    assert {s.desired for s in fridays} == {2}
    assert {s.pods for s in fridays} == {2}
    assert {s.overrides_summary for s in fridays} == {"min=0 time=2026-01-10 00:00:00 +0000 UTC"}

    # The override starts at midnight: the HRA is synced at the boundary, not a period later.
    assert {s.desired for s in weekend} == {0}
    assert {s.pods for s in run.between(saturday + 10 * MINUTE, monday)} == {0}
    assert {s.overrides_summary for s in weekend} == {"min=2 time=2026-01-12 00:00:00 +0000 UTC"}

    assert {s.desired for s in mondays} == {2}
    assert {s.pods for s in run.between(monday + 10 * MINUTE, run.summary.virtual_seconds)} == {2}
    assert {s.overrides_summary for s in mondays} == {"min=0 time=2026-01-17 00:00:00 +0000 UTC"}
    # Jobs on Friday and Monday ran on the two weekday runners.
    assert run.summary.jobs.max_queue_seconds <= 5 * MINUTE  # measured 190 s


def test_busy_metric_with_webhook_reservations_gives_a_steady_answer_to_steady_load() -> None:
    """ARC #1962: the busy metric must not count again the runners reservations added. Steady
    load (about three jobs at a time, each also reserving a runner) keeps the answer steady for
    two hours; counting reservations twice climbed to 21 of 30 here."""
    run = run_sampled("busy-metric-with-webhook-reservations", step=MINUTE)

    assert_clean(run.summary, none_waiting=True, all_completed=True)
    steady = run.between(20 * MINUTE, 125 * MINUTE)
    desired = [s.desired for s in steady if s.desired is not None]
    assert len(desired) == len(steady)
    # Demand is about 3 runners: the answer stays near it, whatever reservations add.
    assert max(desired) <= 8, desired
    # No ratchet (one reservation more per sync climbed to 21): the second hour asks for
    # about what the first did, on average within half a runner; the busy count's own ups and
    # downs (a runner listed busy a sync earlier or later) may move a few minutes by one.
    first_hour = [s.desired for s in run.between(20 * MINUTE, 75 * MINUTE) if s.desired]
    second_hour = [s.desired for s in run.between(75 * MINUTE, 125 * MINUTE) if s.desired]
    assert max(second_hour) <= max(first_hour) + 1, desired
    assert statistics.mean(second_hour) <= statistics.mean(first_hour) + 0.5, desired
    assert BUSY_RUNNERS in {s.suggested_by for s in steady}


def test_the_busy_metric_takes_one_step_a_sync_period() -> None:
    """Found by an independent run: the HRA, synced at each change of its target, applied its
    factor at every such sync (12 idle runners to 6, 3 and 2 within a second, then back to 12
    with the two left busy): nine runners churned and 21 ran against maxReplicas 12."""
    run = run_sampled("percentage-busy-steps", step=5.0)

    assert_clean(run.summary, all_completed=True)
    assert run.summary.runners.peak <= 12  # maxReplicas
    assert run.summary.runners.created == 12  # static runners: none replaced
    # The scale-down after the load: one step a minute (12, 6, 3, 2), never faster.
    answers = [(s.at, s.desired) for s in run.samples if s.desired is not None]
    falls = [at for (_, before), (at, now) in itertools.pairwise(answers) if now < before]
    assert len(falls) >= 3, answers
    assert all(b - a >= SYNC_PERIOD - 5 for a, b in itertools.pairwise(falls)), answers


def test_jobs_asking_for_a_common_runner_label_are_served_by_webhook_scaling() -> None:
    """Found by an independent run: the receiver matched jobs against the template's labels
    alone, so jobs asking for a COMMON_RUNNER_LABELS label never reserved a runner from zero;
    and the summary's servable-jobs check ignored those labels too, so it called the outage ok."""
    run = run_sampled("common-runner-labels-webhook", step=MINUTE)

    assert_clean(run.summary, none_waiting=True, all_completed=True)
    assert run.summary.jobs.unservable == 0
