"""scenarios/eviction-storm.yaml: every kind of runner owner evicted, deleted, drained and lost
while jobs run, replayed with three seeds, and two more under `--stress`. Whatever happens to
the jobs, GitHub must be left with no registration, the teardown must finish, and no job may be
lost.

Each seed is run once (about 15-25 s of wall time) and shared by the tests of that seed.
"""

from __future__ import annotations

import functools
import time
from dataclasses import dataclass
from datetime import datetime, timedelta

import pytest

from arc_sim.github_jobs import SimJob
from arc_sim.scenario import Scenario, stressed
from arc_sim.summary import Summary
from arc_sim.world import World
from tests import sim_scenarios

SCENARIO = "eviction-storm"
SEEDS = [
    pytest.param(seed, marks=pytest.mark.xdist_group(f"eviction-storm-{seed}"))
    for seed in (3, 8, 21, "stress-1", "stress-2")
]
"""3 is the file's own seed; `stress-N` is seed N under `simulate --stress` (informer lag of
seconds, 10% write conflicts, hook replicas restarting mid-call). The tests of one seed share
its run (`storm`), so they run on one test worker."""

# The job streams, by their one label besides `self-hosted`. Jobs of these streams are shorter
# than the graceful-stop timeout of the runners that take them (`fast` and `cache`: 60-75 s
# jobs, 90 s timeout and 110 s grace; `solo`: 10 s jobs, the default 15 s timeout): an
# eviction, a drain or `kubectl delete pod` lets them finish. Only the lost node can cut them.
SHORTER_THAN_THEIR_TIMEOUT = {"fast", "cache", "solo"}
# 6-minute (`slow`, static) and 2-minute (`auto`, ephemeral, HRA-driven) jobs on runners with
# the default 15 s graceful stop: a busy runner evicted or deleted cuts its job off (ARC's
# graceful-stop.sh; README, "Pods deleted out of band").
LONGER_THAN_THEIR_TIMEOUT = {"slow", "auto"}


@dataclass(frozen=True)
class Storm:
    scenario: Scenario
    world: World
    summary: Summary
    lost_node: str
    lost_at: datetime
    runners_on_lost_node: frozenset[str]
    """Runner names (and pod names) on the lost node just before it went."""


@functools.cache
def storm(seed: int | str) -> Storm:
    stress = isinstance(seed, str)
    number = int(str(seed).removeprefix("stress-"))
    scenario = sim_scenarios.scenario(SCENARIO).model_copy(update={"seed": number})
    if stress:
        scenario = stressed(scenario)
    loss = next(entry for entry in scenario.timeline if entry.lose_node is not None)
    assert loss.lose_node is not None
    started = time.perf_counter()
    world = World(scenario)
    world.begin()
    world.run_to(loss.at - 0.001)
    on_node: set[str] = set()
    for key in world.kubelet.pods_on(loss.lose_node):
        namespace, name = key.split("/", 1)
        on_node.add(name)
        agent = world.kubelet.agent(namespace, name)
        if agent is not None:
            on_node.add(agent.config.name)
    world.run_to(scenario.duration)
    summary = world.finish()
    summary.wall_seconds = round(time.perf_counter() - started, 2)
    return Storm(
        scenario=scenario,
        world=world,
        summary=summary,
        lost_node=loss.lose_node,
        lost_at=world.scenario_start + timedelta(seconds=loss.at),
        runners_on_lost_node=frozenset(on_node),
    )


def stream(job: SimJob) -> str:
    (label,) = [label for label in job.labels if label != "self-hosted"]
    return label


def describe_leftovers(world: World) -> str:
    """ARC objects and runner pods still in the API, and what holds them."""
    lines = []
    for kind in world.store.kinds():
        for obj in world.store.list_objects(kind):
            metadata = obj["metadata"]
            arc = str(obj.get("apiVersion", "")).startswith("actions.summerwind.dev/")
            runner_pod = kind == "Pod" and "actions-runner" in (metadata.get("labels") or {})
            if not (arc or runner_pod):
                continue
            where = ""
            if runner_pod:
                node = world.kubelet.node_of(metadata["namespace"], metadata["name"])
                where = f" node={node} lost={node in world.kubelet.lost_nodes}"
            lines.append(
                f"{kind} {metadata['name']}:{where} "
                f"deletionTimestamp={metadata.get('deletionTimestamp')} "
                f"finalizers={metadata.get('finalizers')} "
                f"phase={(obj.get('status') or {}).get('phase')}"
            )
    return "\n".join(lines)


@pytest.mark.long_run
@pytest.mark.parametrize("seed", SEEDS)
def test_no_registration_is_left_on_github(seed: int | str) -> None:
    run = storm(seed)
    summary = run.summary

    assert run.world.leaked_registrations() == [], summary.table()
    assert summary.runners.leaked_registrations == 0
    assert summary.invariants.no_leaked_registrations
    assert summary.runners.registered_at_end == 0
    assert run.world.github.runner_records() == []
    assert summary.runners.created > 100  # the storm replaced runners over and over


@pytest.mark.long_run
@pytest.mark.parametrize("seed", SEEDS)
def test_teardown_converges(seed: int | str) -> None:
    run = storm(seed)
    converged = run.summary.invariants.converged

    assert converged, (
        f"seed {seed}: left after a {run.scenario.quiet_period / 60:.0f}-minute teardown "
        f"(node {run.lost_node} lost):\n{describe_leftovers(run.world)}"
    )
    # Under stress a replica restarting mid-call loses the answers of the calls it was
    # answering (overlapping calls may share a restart): an error each.
    assert run.summary.hooks.errors <= run.world.transport.answers_lost


@pytest.mark.long_run
@pytest.mark.parametrize("seed", SEEDS)
def test_every_job_completes_or_is_reported_interrupted(seed: int | str) -> None:
    run = storm(seed)
    jobs = run.summary.jobs
    never_ran = [job for job in run.world.github.jobs() if job.status != "completed"]
    waiting = jobs.waiting

    assert jobs.submitted == sum(s.count for s in run.scenario.jobs)
    assert jobs.submitted == jobs.completed + jobs.interrupted + jobs.waiting
    assert waiting == 0, (
        f"seed {seed}: {waiting} jobs never ran: "
        f"{sorted((stream(job), job.id) for job in never_ran)}\n"
        f"left after teardown:\n{describe_leftovers(run.world)}"
    )


@pytest.mark.long_run
@pytest.mark.parametrize("seed", SEEDS)
def test_jobs_are_cut_off_only_by_a_short_graceful_stop_or_the_lost_node(seed: int | str) -> None:
    run = storm(seed)
    interrupted = [job for job in run.world.github.jobs() if job.interrupted]
    assert run.runners_on_lost_node, "the lost node ran no runner: the exemption below is moot"

    unexpected = [
        (job.id, stream(job), job.runner_name, job.completed_at)
        for job in interrupted
        if stream(job) not in LONGER_THAN_THEIR_TIMEOUT
        # A node that goes away takes its containers at once: whatever job ran there is cut
        # off, however long the graceful stop would have been.
        and not (job.runner_name in run.runners_on_lost_node and job.completed_at == run.lost_at)
    ]
    assert unexpected == [], f"seed {seed}: jobs cut off that had time to finish"
    assert {stream(job) for job in interrupted} <= (
        LONGER_THAN_THEIR_TIMEOUT | SHORTER_THAN_THEIR_TIMEOUT
    )
    # The storm is hostile: busy runners with the default 15 s graceful stop are evicted, and
    # the summary reports the jobs they lose.
    assert any(stream(job) in LONGER_THAN_THEIR_TIMEOUT for job in interrupted)
    assert run.summary.jobs.interrupted == len(interrupted)
    assert run.summary.invariants.no_interrupted_jobs is False
