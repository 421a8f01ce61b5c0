"""Scale-set mode end to end in the simulated world (scenarios/scale-set-*.yaml): the hooks,
the listener and GitHub's scale-set service together, with no webhook.

Every 5 virtual seconds the HRA's desiredReplicas is compared with what GitHub's service
counts as assigned to the scale set: it may never ask for more than minReplicas + the assigned
jobs of the last `LAG` seconds (a count travels listener -> HRA -> RunnerDeployment), except
while no listener can count (a listener down, the service down) and for the time the HRA takes
to see its count is stale.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from arc_sim.scenario import load_scenario
from arc_sim.summary import Summary
from arc_sim.world import START, World
from hooks.autoscaler.controller import COUNT_STALE

SCENARIOS = Path(__file__).parent.parent / "scenarios"
SAMPLE_SECONDS = 5.0
LAG = timedelta(seconds=20)
SETTLED = timedelta(minutes=3)  # after the last job: back to minReplicas by then


@dataclass
class Sample:
    at: datetime
    desired: int | None
    assigned: int
    runners: int  # Runners not being deleted


@dataclass
class Run:
    world: World
    summary: Summary
    samples: list[Sample] = field(default_factory=list)
    # Each job's time assigned to the scale set: (assigned, finished or None).
    assignments: list[tuple[datetime, datetime | None]] = field(default_factory=list)

    def desired_above_assigned(
        self, minimum: int, excused: list[tuple[datetime, datetime]]
    ) -> list[Sample]:
        """Samples whose desired count exceeds min + the most jobs assigned at any moment of
        the last LAG (counted exactly from the service's job records, not from samples: a job
        may end and the next be assigned between two samples)."""
        changes = sorted(
            [(start, 1) for start, _ in self.assignments]
            + [(end, -1) for _, end in self.assignments if end is not None]
        )
        times, counts, count = [], [], 0
        for moment, step in changes:  # the assigned count from each change on
            count += step
            times.append(moment)
            counts.append(count)

        def most_assigned(since: datetime, until: datetime) -> int:
            first = bisect.bisect_right(times, since)
            last = bisect.bisect_right(times, until)
            at_start = counts[first - 1] if first else 0
            return max([at_start, *counts[first:last]])

        bad = []
        for sample in self.samples:
            if sample.desired is None or any(a <= sample.at <= b for a, b in excused):
                continue
            if sample.desired > minimum + most_assigned(sample.at - LAG, sample.at):
                bad.append(sample)
        return bad


def run(name: str, autoscaler: str = "burst") -> Run:
    world = World(load_scenario(SCENARIOS / f"{name}.yaml"))
    samples: list[Sample] = []

    def sample() -> None:
        hra = world.store.get("HorizontalRunnerAutoscaler", "default", autoscaler) or {}
        desired = (hra.get("status") or {}).get("desiredReplicas")
        scale_sets = list(world.broker._scale_sets)
        assigned = world.broker.statistics(scale_sets[0])["totalAssignedJobs"] if scale_sets else 0
        runners = [
            r
            for kind in ("Runner", "StatefulSet")  # a RunnerDeployment's, a RunnerSet's
            for r in world.store.list_objects(kind)
            if not r["metadata"].get("deletionTimestamp")
        ]
        samples.append(Sample(world.clock.now(), desired, assigned, len(runners)))
        world.loop.call_later(SAMPLE_SECONDS, sample)

    world.begin()
    world.loop.call_later(SAMPLE_SECONDS, sample)
    world.run_to(world.scenario.duration)
    # Sampling ends with the scenario: the teardown deletes the autoscaler, and with the scale
    # set the service forgets its jobs.
    samples_taken = list(samples)
    assignments = [
        (job.assigned_at, job.finished_at)
        for job in world.broker._jobs.values()
        if job.assigned_at is not None
    ]
    summary = world.finish()
    return Run(world, summary, samples_taken, assignments)


def last_completion(world: World) -> datetime:
    return max(job.completed_at for job in world.github.jobs() if job.completed_at is not None)


def check_jobs_and_runners(result: Run, minimum: int) -> None:
    summary = result.summary
    assert summary.jobs.completed == summary.jobs.submitted > 0
    assert summary.jobs.interrupted == 0
    assert summary.runners.leaked_registrations == 0
    assert all(summary.invariants.model_dump().values()), summary.invariants
    settled = last_completion(result.world) + SETTLED
    after = [s for s in result.samples if s.at >= settled]
    assert after and all(s.runners == minimum for s in after), after[:3]


def window(start_seconds: float, seconds: float) -> tuple[datetime, datetime]:
    """From an outage's start until the HRA has seen the count go stale (and a lag more)."""
    begin = START + timedelta(seconds=start_seconds)
    return begin, begin + timedelta(seconds=seconds) + COUNT_STALE + LAG


@pytest.mark.long_run
def test_a_burst_of_500_jobs_from_zero_with_no_webhook() -> None:
    result = run("scale-set-burst-from-zero")
    check_jobs_and_runners(result, minimum=0)
    assert result.summary.jobs.submitted == 500
    assert result.desired_above_assigned(0, []) == []
    assert max(s.desired or 0 for s in result.samples) == 100  # maxReplicas, reached
    # No webhook, so no capacity reservation: the scale set's count did it all.
    assert result.world.store.list_objects("CapacityReservation") == []
    assert result.summary.runners.created <= 1.3 * 500  # a member per job, little churn


def test_a_listener_that_crashes_mid_burst_loses_and_double_counts_nothing() -> None:
    result = run("scale-set-listener-restarted")
    check_jobs_and_runners(result, minimum=1)
    # Down 30 s, then the crashed session blocks the new one until it expires (5 minutes).
    excused = [window(6 * 60, 30 + 300)]
    assert result.desired_above_assigned(1, excused) == []
    (replica,) = result.world.listeners
    assert replica.generation == 2
    restarted = replica.listeners[-1]
    assert restarted.counts.conflicts >= 1 and restarted.counts.sessions_opened == 1


def test_the_service_down_for_5_minutes_delays_but_loses_no_job() -> None:
    result = run("scale-set-broker-outage")
    check_jobs_and_runners(result, minimum=1)
    assert result.desired_above_assigned(1, [window(6 * 60, 300)]) == []
    (replica,) = result.world.listeners
    assert replica.listeners[0].counts.errors > 0  # it did meet the outage


def test_two_listener_replicas_never_add_to_each_others_count() -> None:
    result = run("scale-set-two-listeners")
    check_jobs_and_runners(result, minimum=1)
    # The first stops cleanly (its session deleted): the standby takes over within its
    # standby interval, so no window is excused.
    assert result.desired_above_assigned(1, []) == []
    first, second = result.world.listeners
    assert first.listeners[0].counts.sessions_opened == 1
    standby = second.listeners[0]
    assert standby.counts.conflicts >= 1 and standby.counts.sessions_opened == 1
    # While the first held the session, the standby published nothing.
    assert standby.counts.published[0:1] != [] and first.listeners[0].counts.published


def test_a_runner_set_switches_with_the_same_annotation() -> None:
    result = run("scale-set-runnerset", autoscaler="builds")
    check_jobs_and_runners(result, minimum=0)
    assert result.desired_above_assigned(0, []) == []
    runner_set = result.world.store.get("RunnerSet", "default", "builds")
    assert runner_set is None  # torn down, and with it its scale set
    assert result.world.broker._scale_sets == {}
    assert result.summary.runners.created <= 1.3 * result.summary.jobs.submitted
