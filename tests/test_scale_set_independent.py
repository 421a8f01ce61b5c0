"""Scale-set mode end to end, in the simulated world, written independently of the feature's own
tests.

A RunnerDeployment that names a runner scale set (`arc-hooks.dev/scale-set`) is sized by the
jobs GitHub assigned to that scale set: `arc-hooks listen` (the world's `listeners`) holds the
scale set's message session, acquires the jobs offered to it and writes the assigned-job count on
the HorizontalRunnerAutoscaler, whose hook sets desiredReplicas = min(minReplicas + assigned,
maxReplicas). No webhook takes part.

Each scenario runs once (module fixtures) and is looked at every `SAMPLE_SECONDS` of virtual
time; the scale set's assigned-job count over time is rebuilt exactly from the simulated
service's job records (when each job was assigned to the scale set, and when it finished), and
the autoscaler's desiredReplicas is recorded at every write, so that the two can be compared at
every moment rather than only at the samples.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import pytest

from arc_sim.scaleset_broker import BrokerJob
from arc_sim.scenario import Scenario
from arc_sim.store import KubeObject
from arc_sim.summary import Summary
from arc_sim.world import World
from hooks.listener.worker import MAX_BACKOFF_SECONDS, STANDBY_SECONDS
from hooks.scale_set_mode import (
    ASSIGNED_JOBS_ANNOTATION,
    ASSIGNED_JOBS_TIME_ANNOTATION,
    SCALE_SET_ANNOTATION,
)

# Its tests share module-scoped runs: one worker runs them all, each run once.
pytestmark = pytest.mark.xdist_group("scale_set_independent")

ARC = "actions.summerwind.dev/v1alpha1"
NAMESPACE = "default"
SAMPLE_SECONDS = 10.0
LAG_SECONDS = 30.0
"""How long desiredReplicas may trail the scale set's assigned jobs. The chain is: the service's
count changes -> the listener's next poll (at most `pollSeconds`, 2 s, later; at once when a
message came) -> the annotation is written -> Metacontroller sees it (informer lag, up to ~3 s in
the realistic profile) and calls the HRA hook (latency up to ~2 s, plus queueing behind other
syncs). Measured, it is about a second; 30 s leaves room for an unlucky queue and is still far
below what a miscount looks like (a double count, or a count that never comes down, lasts as
long as the jobs: minutes)."""
MEMBER_SLACK = 2
"""Members beyond what the count asks for that are no fault: an ephemeral member whose job just
ended is still there a moment beside its replacement."""


# ---------------------------------------------------------------------------------- manifests


def deployment(
    name: str,
    *,
    scale_set: str | None = None,
    labels: Sequence[str] = (),
    replicas: int | None = None,
) -> KubeObject:
    metadata: dict[str, Any] = {"name": name}
    if scale_set is not None:
        metadata["annotations"] = {SCALE_SET_ANNOTATION: scale_set}
    template_spec: dict[str, Any] = {"organization": "acme", "ephemeral": True}
    if labels:
        template_spec["labels"] = list(labels)
    spec: dict[str, Any] = {"template": {"spec": template_spec}}
    if replicas is not None:
        spec["replicas"] = replicas
    return {"apiVersion": ARC, "kind": "RunnerDeployment", "metadata": metadata, "spec": spec}


def autoscaler(name: str, minimum: int, maximum: int) -> KubeObject:
    return {
        "apiVersion": ARC,
        "kind": "HorizontalRunnerAutoscaler",
        "metadata": {"name": name},
        "spec": {
            "scaleTargetRef": {"kind": "RunnerDeployment", "name": name},
            "minReplicas": minimum,
            "maxReplicas": maximum,
        },
    }


# ---------------------------------------------------------------------------------- recording


@dataclass(frozen=True)
class Sample:
    t: float  # seconds since the scenario's start
    desired: int | None  # the HRA's status.desiredReplicas
    annotation: int | None  # the listener's assigned-jobs annotation on the HRA
    status_assigned: int | None  # the HRA's status.assignedJobs
    statistics: dict[str, int] | None  # the service's statistics; None once the set is gone
    session: tuple[str, str] | None  # (session id, owner) the service holds for the set
    holders: tuple[str, ...]  # owners of the listeners that believe they hold a session
    member_pods: int  # live (not terminating) runner pods of the deployment
    member_runners: int  # Runner objects of the deployment, terminating ones included
    other_pods: int  # live runner pods of other deployments
    leaked: tuple[str, ...]  # registrations on GitHub that no live runner pod owns
    deployment_exists: bool


@dataclass
class Run:
    world: World
    deployment: str
    minimum: int
    maximum: int
    scale_set_id: int = 0
    samples: list[Sample] = field(default_factory=list)
    desired: list[tuple[float, int]] = field(default_factory=list)
    pods_created: dict[str, float] = field(default_factory=dict)
    jobs: dict[int, BrokerJob] = field(default_factory=dict)
    summary: Summary | None = None
    recording: bool = True
    deployment_status: dict[str, Any] = field(default_factory=dict)  # as last seen
    scale_set_labels: list[str] = field(default_factory=list)  # as the service last had them

    def seconds(self, when: datetime) -> float:
        return (when - self.world.scenario_start).total_seconds()

    def now(self) -> float:
        return self.seconds(self.world.clock.now())

    def desired_at(self, t: float) -> int | None:
        index = bisect.bisect_right([when for when, _ in self.desired], t) - 1
        return self.desired[index][1] if index >= 0 else None

    def member(self, name: str) -> bool:
        return name.startswith(f"{self.deployment}-")

    def history(self) -> AssignedHistory:
        return AssignedHistory(self.jobs.values(), self.seconds)

    def last_finish(self) -> float:
        finished = [job.finished_at for job in self.jobs.values() if job.finished_at is not None]
        assert finished, "no job of the scale set finished"
        return self.seconds(max(finished))

    def finished_summary(self) -> Summary:
        assert self.summary is not None
        return self.summary


class AssignedHistory:
    """How many jobs the service counted as assigned to the scale set (assigned or running:
    its `totalAssignedJobs`) at every moment, from the jobs' own records."""

    def __init__(self, jobs: Iterable[BrokerJob], seconds: Any) -> None:
        changes: list[tuple[float, int]] = []
        for job in jobs:
            if job.assigned_at is None:
                continue
            changes.append((seconds(job.assigned_at), 1))
            if job.finished_at is not None:
                changes.append((seconds(job.finished_at), -1))
        changes.sort()
        self.times: list[float] = []
        self.values: list[int] = []
        count = 0
        for when, change in changes:
            count += change
            if self.times and self.times[-1] == when:
                self.values[-1] = count
            else:
                self.times.append(when)
                self.values.append(count)

    def at(self, t: float) -> int:
        index = bisect.bisect_right(self.times, t) - 1
        return self.values[index] if index >= 0 else 0

    def window(self, t: float, width: float) -> tuple[int, int]:
        """The least and the most assigned jobs at any moment of [t - width, t]."""
        start = t - width
        values = [self.at(start)]
        values += self.values[
            bisect.bisect_right(self.times, start) : bisect.bisect_right(self.times, t)
        ]
        return min(values), max(values)


def simulate(
    scenario: Scenario, *, deployment: str, minimum: int, maximum: int, until: float
) -> Run:
    """Run `scenario`, sampling every `SAMPLE_SECONDS` up to `until`, then tear it down."""
    world = World(scenario)
    run = Run(world, deployment, minimum, maximum)

    def watch(event: str, obj: KubeObject) -> None:
        if not run.recording:
            return
        kind, metadata = obj.get("kind"), obj["metadata"]
        if kind == "HorizontalRunnerAutoscaler" and metadata["name"] == deployment:
            desired = (obj.get("status") or {}).get("desiredReplicas")
            if isinstance(desired, int) and (not run.desired or run.desired[-1][1] != desired):
                run.desired.append((run.now(), desired))
        elif kind == "Pod" and event == "ADDED" and run.member(metadata["name"]):
            run.pods_created.setdefault(metadata["name"], run.now())

    world.store.watch(watch)
    world.begin()
    t = 0.0
    while t <= until:
        world.run_to(t)
        run.samples.append(_sample(run))
        t += SAMPLE_SECONDS
    run.recording = False
    run.summary = world.finish()
    return run


def _sample(run: Run) -> Sample:
    world = run.world
    hra = world.store.get("HorizontalRunnerAutoscaler", NAMESPACE, run.deployment)
    rd = world.store.get("RunnerDeployment", NAMESPACE, run.deployment)
    if rd is not None:
        run.deployment_status = dict(rd.get("status") or {})
        if not run.scale_set_id:
            recorded = run.deployment_status.get("scaleSet") or {}
            run.scale_set_id = int(recorded.get("id") or 0)
    statistics: dict[str, int] | None = None
    session: tuple[str, str] | None = None
    if run.scale_set_id:
        try:
            scale_set = world.broker.scale_set(run.scale_set_id)
        except KeyError:
            pass
        else:
            statistics = dict(world.broker.statistics(run.scale_set_id))
            run.scale_set_labels = [name for _, name in scale_set.labels]
            if scale_set.session is not None:
                session = (str(scale_set.session.id), scale_set.session.owner)
        # The service's job records, kept even after it forgets them (a deleted scale set).
        for request_id in range(1, len(world.github.jobs()) + 1):
            if request_id not in run.jobs:
                try:
                    job = world.broker.job(request_id)
                except KeyError:
                    continue
                if job.scale_set_id == run.scale_set_id:
                    run.jobs[request_id] = job
    annotations = (hra or {}).get("metadata", {}).get("annotations") or {}
    status = (hra or {}).get("status") or {}
    annotation = annotations.get(ASSIGNED_JOBS_ANNOTATION)
    # The count and the time it was counted are written together.
    assert (annotation is None) == (annotations.get(ASSIGNED_JOBS_TIME_ANNOTATION) is None)
    holders = tuple(
        listener.owner
        for replica in world.listeners
        if replica.fleet is not None
        for listener in replica.fleet.listeners.values()
        if listener.has_session
    )
    pods = [
        pod["metadata"]["name"]
        for pod in world.store.list_objects("Pod", NAMESPACE)
        if "actions-runner" in (pod["metadata"].get("labels") or {})
        and not pod["metadata"].get("deletionTimestamp")
    ]
    members = [name for name in pods if run.member(name)]
    runners = [
        r
        for r in world.store.list_objects("Runner", NAMESPACE)
        if run.member(r["metadata"]["name"])
    ]
    return Sample(
        t=run.now(),
        desired=status.get("desiredReplicas"),
        annotation=int(annotation) if isinstance(annotation, str) else None,
        status_assigned=status.get("assignedJobs"),
        statistics=statistics,
        session=session,
        holders=holders,
        member_pods=len(members),
        member_runners=len(runners),
        other_pods=len(pods) - len(members),
        leaked=tuple(world.leaked_registrations()),
        deployment_exists=rd is not None,
    )


def tracking_errors(
    run: Run, *, until: float, skip: Sequence[tuple[float, float]] = ()
) -> list[str]:
    """Moments (outside `skip`) when desiredReplicas was not min + the assigned jobs of some
    moment of the last `LAG_SECONDS` (clamped to max): checked at every write of desired and
    whenever a change of the count leaves the window, which is where a violation starts."""
    history = run.history()
    points = {when for when, _ in run.desired} | {e + LAG_SECONDS + 1e-6 for e in history.times}
    errors = []
    for t in sorted(points):
        if t > until or any(start <= t <= end for start, end in skip):
            continue
        desired = run.desired_at(t)
        if desired is None:
            continue
        fewest, most = history.window(t, LAG_SECONDS)
        lower = min(run.maximum, run.minimum + fewest)
        upper = min(run.maximum, run.minimum + most)
        if not lower <= desired <= upper:
            errors.append(
                f"t={t:.1f}s: desiredReplicas {desired}, but the scale set had {fewest} to "
                f"{most} assigned jobs in the {LAG_SECONDS:g}s before (min {run.minimum}, "
                f"max {run.maximum})"
            )
    return errors


# ---------------------------------------------------------------------------------- scenarios

BURST_START = 300.0


def burst_scenario(
    name: str,
    *,
    seed: int,
    duration: str,
    bounds: tuple[int, int],
    count: int,
    every: str,
    **extra: Any,
) -> Scenario:
    """A deployment `burst` in scale-set mode (scale set `arc-burst`) sized by an HRA within
    `bounds`, one listener unless `extra` says otherwise, and `count` jobs of 2 minutes for the
    scale set from BURST_START on, one every `every`."""
    minimum, maximum = bounds
    return Scenario.model_validate(
        {
            "name": name,
            "seed": seed,
            "duration": duration,
            "listeners": {"replicas": 1},
            "objects": [
                deployment("burst", scale_set="arc-burst"),
                autoscaler("burst", minimum, maximum),
            ],
            "jobs": [
                {
                    "repository": "acme/app",
                    "labels": ["arc-burst"],
                    "count": count,
                    "start": BURST_START,
                    "every": every,
                    "duration": "2m",
                }
            ],
            **extra,
        }
    )


def run_burst() -> Run:
    """60 jobs of 2 minutes, one every 3 s, for a scale set of 1 to 12 runners; GitHub loses
    every webhook delivery, so only the listener can make it scale."""
    scenario = burst_scenario(
        "independent-scale-set-burst",
        seed=11,
        duration="30m",
        bounds=(1, 12),
        count=60,
        every="3s",
        webhooks={"lossRate": 1.0},
    )
    return simulate(scenario, deployment="burst", minimum=1, maximum=12, until=29 * 60)


@pytest.fixture(scope="module")
def burst() -> Run:
    return run_burst()


DELETE_AT = 300.0


def run_neighbours() -> Run:
    """A scale-set deployment beside an ordinary one (labels [linux], 2 replicas) in the same
    organization; jobs for each, a job that asks only for `self-hosted`, and a job of another
    organization that names the scale set. The scale-set deployment is deleted at 5 minutes,
    while its members run their 4-minute jobs."""
    scenario = Scenario.model_validate(
        {
            "name": "independent-scale-set-neighbours",
            "seed": 4,
            "duration": "14m",
            "listeners": {"replicas": 1},
            "objects": [
                deployment("small", scale_set="arc-small"),
                autoscaler("small", 1, 8),
                deployment("plain", labels=["linux"], replicas=2),
            ],
            "timeline": [
                {"at": DELETE_AT, "delete": {"kind": "RunnerDeployment", "name": "small"}}
            ],
            "jobs": [
                {
                    "repository": "acme/app",
                    "labels": ["arc-small"],
                    "count": 6,
                    "start": "3m",
                    "every": "5s",
                    "duration": "4m",
                },
                {
                    "repository": "acme/lib",
                    "labels": ["self-hosted", "linux"],
                    "count": 8,
                    "start": "3m",
                    "every": "15s",
                    "duration": "1m",
                },
                {
                    "repository": "acme/app",
                    "labels": ["self-hosted"],
                    "count": 3,
                    "start": "4m",
                    "every": "20s",
                    "duration": "1m",
                },
                {
                    "repository": "other/app",
                    "labels": ["arc-small"],
                    "count": 1,
                    "start": "4m",
                    "duration": "1m",
                },
            ],
        }
    )
    return simulate(scenario, deployment="small", minimum=1, maximum=8, until=13 * 60)


@pytest.fixture(scope="module")
def neighbours() -> Run:
    return run_neighbours()


CRASH_AT = 420.0
SESSION_TIMEOUT = 300.0


def run_takeover() -> Run:
    """Two listener replicas; the one holding the session crashes at 7 minutes (its session is
    left behind, to expire after 5 minutes, the service's default) and comes back a minute
    later."""
    scenario = burst_scenario(
        "independent-scale-set-takeover",
        seed=7,
        duration="30m",
        bounds=(0, 12),
        count=60,
        every="5s",
        listeners={"replicas": 2, "sessionTimeout": SESSION_TIMEOUT},
        timeline=[{"at": CRASH_AT, "restartListener": {"replica": 0, "down": "1m", "crash": True}}],
    )
    return simulate(scenario, deployment="burst", minimum=0, maximum=12, until=29 * 60)


@pytest.fixture(scope="module")
def takeover() -> Run:
    return run_takeover()


def run_from_zero() -> Run:
    """50 jobs of 2 minutes, one every 4 s, for a scale set of 0 to 10 runners."""
    scenario = burst_scenario(
        "independent-scale-set-from-zero",
        seed=4,
        duration="35m",
        bounds=(0, 10),
        count=50,
        every="4s",
    )
    return simulate(scenario, deployment="burst", minimum=0, maximum=10, until=34 * 60)


@pytest.fixture(scope="module")
def from_zero() -> Run:
    return run_from_zero()


def session_changes(run: Run) -> list[tuple[float, tuple[str, str] | None]]:
    changes: list[tuple[float, tuple[str, str] | None]] = []
    for sample in run.samples:
        if not changes or changes[-1][1] != sample.session:
            changes.append((sample.t, sample.session))
    return changes


def total_acquired(world: World) -> int:
    return sum(
        listener.counts.acquired for replica in world.listeners for listener in replica.listeners
    )


# ---------------------------------------------------------------------------------- the tests


def test_burst_is_sized_by_assigned_jobs_without_any_webhook(burst: Run) -> None:
    world, summary = burst.world, burst.finished_summary()
    # Every webhook delivery was lost: whatever scaled the deployment, it was no webhook.
    assert world.webhooks.deliveries and all(d.lost for d in world.webhooks.deliveries)

    # The deployment keeps its scale set and records it; the service has it under that name,
    # answering `runs-on: arc-burst`.
    assert burst.scale_set_id > 0
    assert burst.deployment_status["scaleSet"] == {
        "id": burst.scale_set_id,
        "name": "arc-burst",
        "runnerGroup": "Default",
    }
    assert burst.scale_set_labels == ["arc-burst"]

    # Every job went to the scale set, was taken by one of its members, and succeeded.
    assert len(burst.jobs) == 60
    assert {(job.status, job.result) for job in burst.jobs.values()} == {("completed", "succeeded")}
    assert all(job.runner_name.startswith("burst-") for job in burst.jobs.values())
    assert summary.jobs.submitted == summary.jobs.completed == 60
    assert summary.jobs.interrupted == 0
    assert summary.invariants.hold(), summary.invariants.failed()

    # One listener, one session, each job acquired once: nothing was counted twice.
    (listener,) = world.listeners[0].listeners
    assert listener.counts.sessions_opened == 1
    assert total_acquired(world) == 60

    # The burst reached maxReplicas, and desiredReplicas followed the assigned jobs all along.
    assert max(desired for _, desired in burst.desired) == burst.maximum
    assert max(s.member_pods for s in burst.samples) <= burst.maximum + MEMBER_SLACK
    assert tracking_errors(burst, until=burst.samples[-1].t) == []

    # Once the jobs are over: desired is back to minReplicas within a minute (no scale-down
    # delay in this mode), the pods within two.
    done = burst.last_finish()
    settled = [s for s in burst.samples if s.t >= done + 60]
    assert len(settled) >= 30, "the scenario ends too early to see the runners go back"
    assert {s.desired for s in settled} == {burst.minimum}
    assert {(s.annotation, s.status_assigned) for s in settled} == {(0, 0)}
    assert {s.member_pods for s in settled if s.t >= done + 120} == {burst.minimum}
    last = burst.samples[-1].statistics
    assert last is not None
    assert last["totalAssignedJobs"] == last["totalAvailableJobs"] == 0


def test_members_take_only_the_jobs_that_name_the_scale_set(neighbours: Run) -> None:
    world, summary = neighbours.world, neighbours.finished_summary()
    scale_set_id = neighbours.scale_set_id
    assert scale_set_id > 0

    # The service was offered the scale set's jobs of its own organization, and nothing else.
    offered = sorted((job.repository, job.labels) for job in neighbours.jobs.values())
    assert offered == [("acme/app", ("arc-small",))] * 6

    for job in world.github.jobs():
        if job.repository == "other/app":
            # Names the scale set, but the scale set is acme's: nobody may take it.
            assert (job.status, job.runner_name) == ("queued", None)
        elif job.labels == ("arc-small",):
            assert job.status == "completed" and job.conclusion == "success", job
            assert job.runner_name is not None and job.runner_name.startswith("small-"), job
            assert not job.interrupted
        else:
            # `self-hosted` (and `self-hosted, linux`) jobs are the ordinary runners', even while
            # idle scale-set members are there.
            assert job.status == "completed" and job.conclusion == "success", job
            assert job.runner_name is not None and job.runner_name.startswith("plain-"), job
    assert {job.runner_name for job in neighbours.jobs.values()} <= set(neighbours.pods_created)

    # Deleting the deployment deletes its scale set, its runners and their registrations, and
    # the listener lets go; the ordinary deployment is untouched.
    last = neighbours.samples[-1]
    assert not last.deployment_exists
    assert last.statistics is None and last.session is None and last.holders == ()
    assert (last.member_runners, last.member_pods) == (0, 0)
    assert last.other_pods == 2
    with pytest.raises(KeyError):
        world.broker.scale_set(scale_set_id)
    assert [r.name for r in world.github.runner_records() if r.scale_set_id == scale_set_id] == []

    assert summary.jobs.interrupted == 0
    assert (summary.jobs.completed, summary.jobs.waiting, summary.jobs.unservable) == (17, 1, 1)
    assert summary.invariants.hold(), summary.invariants.failed()


def test_a_crashed_listener_leaves_its_session_to_expire_and_the_standby_takes_over(
    takeover: Run,
) -> None:
    world, summary = takeover.world, takeover.finished_summary()
    changes = session_changes(takeover)
    sessions = [(t, s) for t, s in changes if s is not None]
    assert len({s[0] for _, s in sessions}) == 2, changes  # the first one, and the takeover's
    (first_at, first), (taken_at, taken) = (
        sessions[0],
        next((t, s) for t, s in sessions if s != sessions[0][1]),
    )
    # Replica 0 opened the session; the crash left it behind, and no one else could open one
    # until it expired (the standby does not steal a live session).
    assert first[1] == "arc-hooks-listener-0-1" and first_at < BURST_START
    before_expiry = [s for s in takeover.samples if s.t < CRASH_AT + SESSION_TIMEOUT - 2]
    assert all(s.session in (None, first) for s in before_expiry)
    assert all(s.session == first for s in before_expiry if s.t >= first_at)
    # Then another listener took it over, within a standby period (and a sample) of expiry.
    assert taken[1] != first[1]
    assert taken_at >= CRASH_AT + SESSION_TIMEOUT - 2
    assert taken_at <= CRASH_AT + SESSION_TIMEOUT + STANDBY_SECONDS + SAMPLE_SECONDS
    assert all(s.session == taken for s in takeover.samples if s.t >= taken_at)

    # Never two listeners counting at once: at most one believes it holds a session, and it is
    # the one the service knows. Each job was acquired once, by one listener or the other.
    for sample in takeover.samples:
        assert len(sample.holders) <= 1, sample
        if sample.holders and sample.session is not None:
            assert sample.holders == (sample.session[1],), sample
    assert total_acquired(world) == 60
    # And never more members than maxReplicas (a finished ephemeral member may linger a moment
    # beside its replacement: MEMBER_SLACK).
    assert max(s.member_pods for s in takeover.samples) <= takeover.maximum + MEMBER_SLACK
    registered = [s.statistics["totalRegisteredRunners"] for s in takeover.samples if s.statistics]
    assert max(registered) <= takeover.maximum + MEMBER_SLACK
    assert (
        sum(
            listener.counts.sessions_opened
            for replica in world.listeners
            for listener in replica.listeners
        )
        == 2
    )

    # Outside the time nobody counted (the crash until the takeover's count arrived),
    # desiredReplicas is min + assigned jobs: the standby never added to the crashed count.
    skip = [(CRASH_AT, taken_at + LAG_SECONDS)]
    assert tracking_errors(takeover, until=takeover.samples[-1].t, skip=skip) == []
    assert max(s.desired or 0 for s in takeover.samples) <= takeover.maximum

    # Jobs were delayed, none lost: every one ran on a member and succeeded.
    assert {(job.status, job.result) for job in takeover.jobs.values()} == {
        ("completed", "succeeded")
    }
    assert summary.jobs.completed == 60 and summary.jobs.interrupted == 0
    assert summary.invariants.hold(), summary.invariants.failed()
    assert {s.desired for s in takeover.samples if s.t >= takeover.last_finish() + 60} == {0}


OUTAGE_AT = 420.0
OUTAGE_SECONDS = 300.0


def test_an_outage_of_the_scale_set_service_delays_jobs_but_loses_none() -> None:
    scenario = burst_scenario(
        "independent-scale-set-broker-outage",
        seed=5,
        duration="35m",
        bounds=(0, 10),
        count=50,
        every="4s",
        timeline=[{"at": OUTAGE_AT, "brokerOutage": {"duration": OUTAGE_SECONDS}}],
    )
    run = simulate(scenario, deployment="burst", minimum=0, maximum=10, until=34 * 60)
    world, summary = run.world, run.finished_summary()
    outage_end = OUTAGE_AT + OUTAGE_SECONDS

    acquired = sorted(run.seconds(job.acquired_at) for job in run.jobs.values() if job.acquired_at)
    assert len(acquired) == 50
    # Nothing was acquired while the service was down, and jobs queued up meanwhile.
    assert not [t for t in acquired if OUTAGE_AT <= t < outage_end]
    during = [s for s in run.samples if OUTAGE_AT <= s.t < outage_end and s.statistics]
    assert max(s.statistics["totalAvailableJobs"] for s in during if s.statistics) >= 30
    assert max(s.desired or 0 for s in during) <= run.maximum
    # The listener came back within its longest back-off (and a poll) of the end of the outage.
    resumed = next(t for t in acquired if t >= outage_end)
    assert resumed <= outage_end + MAX_BACKOFF_SECONDS + 5, resumed

    # No job was lost, failed, assigned twice or acquired twice.
    assert {(job.status, job.result, job.assignments) for job in run.jobs.values()} == {
        ("completed", "succeeded", 1)
    }
    assert total_acquired(world) == 50
    assert summary.jobs.completed == 50 and summary.jobs.interrupted == 0
    assert summary.invariants.hold(), summary.invariants.failed()

    # Before the outage and once the count came back, desired followed the assigned jobs.
    skip = [(OUTAGE_AT, resumed + LAG_SECONDS)]
    assert tracking_errors(run, until=run.samples[-1].t, skip=skip) == []
    assert {s.desired for s in run.samples if s.t >= run.last_finish() + 60} == {0}


# Each case guards a defect this test found once:
# - ramp-down: a count that created no member (the set was at size) let each member that
#   finished its job be replaced at once under that count, and the replacement was deleted idle
#   a second later by the next count (the set now records the count it acted on);
# - from-zero: a member deleted right after its creation left its JIT registration on GitHub
#   (the Runner finalize trusted a view and a runner list older than the registration);
# - deletion: the scale set was deleted while busy members were still stopping (the
#   RunnerReplicaSet's status.replicas leaves terminating Runners out).
@pytest.mark.parametrize(
    "case",
    ["ramp-down", "from-zero", "deletion"],
)
def test_scale_set_members_are_the_ones_the_count_asks_for(
    case: str, request: pytest.FixtureRequest
) -> None:
    """The scale set's members follow the count: no member beyond min that never runs a job, no
    registration left behind once the jobs are over, and the scale set outlives every member.
    Each case looks at one of the runs above."""
    if case == "ramp-down":
        run: Run = request.getfixturevalue("burst")
        ran = {job.runner_name for job in run.world.github.jobs()}
        never_ran = sorted(set(run.pods_created) - ran)
        created_at = {name: round(run.pods_created[name]) for name in never_ran}
        # minReplicas idle runners, and a couple of races (a job taken by an older idle runner).
        assert len(never_ran) <= run.minimum + 2, (
            f"{len(never_ran)} of {len(run.pods_created)} member pods never ran a job (created "
            f"at {created_at} s; the last job ended at {run.last_finish():.0f} s)"
        )
    elif case == "from-zero":
        run = request.getfixturevalue("from_zero")
        done = run.last_finish()
        # A registration may outlive its pod for a moment (the finalize removes it); not for
        # five minutes after the last job.
        leaked = sorted({name for s in run.samples if s.t >= done + 300 for name in s.leaked})
        assert leaked == [], f"registrations without a pod from {done + 300:.0f} s on"
    else:
        run = request.getfixturevalue("neighbours")
        orphaned = [
            (s.t, s.member_runners)
            for s in run.samples
            if s.member_runners and s.statistics is None
        ]
        assert orphaned == [], "(time, member Runners left) after the scale set was deleted"
