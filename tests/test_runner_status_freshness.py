"""How fresh a running Runner's `status.busy` and `status.online` are, and what keeping them so
costs in `/sync/runner` calls, checked from outside in the simulated world (README, "GitHub rate
limits").

The README promises: the hooks list each scope's runners once per
`GITHUB_LIST_RUNNERS_CACHE_TTL`, and a Runner whose pod runs is synced again just after its
scope's next list while what it reports changes, so its status reports GitHub's busy and online
states within about that TTL (plus the emulated Metacontroller's latency, queue and workers:
`SLACK`); once a state has held a while, the Runner looks again after half as long as it held,
up to `STEADY_WATCH_MAX_SECONDS`, so the change that ends a long hold may show that much later
(`allowance`). A running Runner is no longer synced every minute.

The world is the scale benchmark's (`bench.bench_scale.scenario`): a RunnerDeployment of static
organization runners, each taking about ten four-minute jobs an hour, so that a runner's busy
state flips every few minutes. Every `STEP` virtual seconds the test compares, runner by runner
(a Runner and its GitHub registration share a name), GitHub's state with the Runner's status.
GitHub's busy history is exact: a runner is busy from its job's `started_at` to its
`completed_at`, and spans that touch are one (a runner handed its next job as it finishes one
never looks idle); at every sample it is checked against GitHub's own `busy`. A runner's idle
state before its first job dates from when it was first seen online. The staleness of a
disagreement is how long GitHub has held the state the Runner fails to report; it must stay
below the allowance for how long the state before it had held.

Why the checks fail when the behaviour breaks:
- Runners synced only by Metacontroller's resync (600 s in the shipped manifests) or on pod
  events: the status misses job starts and ends for minutes, far beyond the tolerance.
- Runners synced every minute by Metacontroller's resync (the shipped manifests before this
  check): the syncs reach one per Runner per minute (260 in the 240 runner-minutes). Their
  status was as fresh, since the first sync past a list's period made the next list.
- A status refreshed on a fixed period, whatever the TTL: the run with a 30 s TTL, whose
  tolerance is 60 s after a short hold, catches it.
- Looks spaced by the whole hold instead of half: the changes after long holds (the world
  has runners idle or busy for ten minutes) show too late (checked by hand). The cap, longer
  than this world's holds, is checked in `test_lifecycle_decisions`.
- A run that compares nothing (no runner busy, or idle, for longer than the tolerance) fails
  on the counts of settled samples.
(Checked by hand: with a tolerance of 10 s instead of TTL + `SLACK` the freshness test fails,
the worst disagreement lasting about TTL seconds.)
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from datetime import datetime
from functools import cache

import pytest

from arc_sim.fake_github import SimJob
from arc_sim.world import World
from bench.bench_scale import scenario
from hooks.lifecycle.incarnation import STEADY_WATCH_MAX_SECONDS

pytestmark = [pytest.mark.long_run, pytest.mark.xdist_group("runner_status_freshness")]

RUNNERS = 30
MINUTES = 12
STEP = 5.0
"""Virtual seconds between samples."""
SLACK = 30.0
"""The emulated Metacontroller's latency, queue and workers, on top of the TTL."""
STARTED_BY = 3 * 60.0
"""Every runner is registered and online by then (virtual seconds)."""
STEADY_FROM = 4 * 60.0
"""Start-up (pods, registrations, the first lists and their syncs) is over by then."""
DEFAULT_TTL = 90.0


@dataclass
class Disagreement:
    """The longest a Runner's status failed to report a state GitHub held."""

    seconds: float = 0.0
    runner: str = ""
    at: float = 0.0
    samples: int = 0
    """Samples (runner and moment) where the status disagreed at all."""

    allowed: float = 0.0
    """What the longest disagreement was allowed."""
    beyond: int = 0
    """Samples where the disagreement lasted longer than allowed."""

    def saw(self, seconds: float, runner: str, at: float, allowed: float) -> None:
        self.samples += 1
        self.beyond += seconds >= allowed
        if seconds > self.seconds:
            self.seconds, self.runner, self.at, self.allowed = seconds, runner, at, allowed

    def __str__(self) -> str:
        return (
            f"{self.samples} disagreeing samples; the longest: {self.runner} at "
            f"{self.at:g} s, GitHub's state {self.seconds:g} s old (allowed {self.allowed:g} s); "
            f"{self.beyond} beyond what was allowed"
        )


@dataclass
class Observation:
    ttl: float
    all_online_at: float | None = None
    busy: Disagreement = field(default_factory=Disagreement)
    online: Disagreement = field(default_factory=Disagreement)
    settled_busy: int = 0
    """Samples of a runner busy for longer than the tolerance: its status had to say busy."""
    settled_idle: int = 0
    """Samples of a runner idle for longer than the tolerance: its status had to say idle."""
    longest_late_after: float = 0.0
    """The longest hold of a state before a change its Runner reported late."""
    syncs: dict[float, int] = field(default_factory=dict)
    """`/sync/runner` calls so far, at each sample."""

    @property
    def tolerance(self) -> float:
        return self.ttl + SLACK


def busy_spans(jobs: list[SimJob], start: datetime) -> dict[str, list[tuple[float, float]]]:
    """Per runner name, when it was busy on GitHub (seconds from `start`; a running job ends
    at infinity), spans that touch joined."""

    def seconds(moment: datetime) -> float:
        return (moment - start).total_seconds()

    spans: dict[str, list[tuple[float, float]]] = {}
    for job in jobs:
        if job.started_at is None or job.runner_name is None:
            continue
        end = math.inf if job.completed_at is None else seconds(job.completed_at)
        spans.setdefault(job.runner_name, []).append((seconds(job.started_at), end))
    joined: dict[str, list[tuple[float, float]]] = {}
    for name, runner_spans in spans.items():
        merged: list[tuple[float, float]] = []
        for begin, end in sorted(runner_spans):
            if merged and begin <= merged[-1][1]:
                merged[-1] = (merged[-1][0], max(merged[-1][1], end))
            else:
                merged.append((begin, end))
        joined[name] = merged
    return joined


def held(
    spans: list[tuple[float, float]], now: float, online_since: float
) -> tuple[bool, float, float]:
    """Whether the runner is busy at `now`, since when GitHub has said so, and since when it
    had said the opposite before (never before the runner was first seen online)."""
    since = previous = online_since
    for begin, end in spans:
        if begin > now:
            break
        if now < end:
            return True, max(begin, online_since), max(since, online_since)
        since, previous = max(since, end), max(begin, online_since)
    return False, since, previous


def allowance(ttl: float, prior_hold: float) -> float:
    """How late a Runner's status may report a state: the list's TTL and `SLACK`, and, once
    the state before had held a while, half as long as it held, up to
    `STEADY_WATCH_MAX_SECONDS` (README, "GitHub rate limits")."""
    return ttl + SLACK + min(max(prior_hold, 0.0) / 2, STEADY_WATCH_MAX_SECONDS)


@cache
def observe(ttl: float) -> Observation:
    """Run the world for `MINUTES` virtual minutes, comparing every `STEP` seconds."""
    base = scenario(RUNNERS, MINUTES)
    settings = {**base.settings, "GITHUB_LIST_RUNNERS_CACHE_TTL": ttl}
    world = World(base.model_copy(update={"settings": settings}))
    assert world.settings.list_runners_cache_ttl == ttl
    seen = Observation(ttl)
    online_since: dict[str, float] = {}
    world.begin()
    now = 0.0
    while now < MINUTES * 60:
        now += STEP
        world.run_to(now)
        seen.syncs[now] = world.emulator.hook_calls["/sync/runner"]
        records = world.github.runner_records()
        for record in records:
            if record.status == "online":
                online_since.setdefault(record.name, now)
            else:
                online_since.pop(record.name, None)
        if seen.all_online_at is None and len(online_since) == RUNNERS:
            seen.all_online_at = now
        statuses = {
            runner["metadata"]["name"]: runner.get("status") or {}
            for runner in world.store.list_objects("Runner")
        }
        spans = busy_spans(world.github.jobs(), world.scenario_start)
        for record in records:
            if record.name not in online_since:
                continue
            assert record.name in statuses, f"GitHub's runner {record.name} has no Runner"
            status = statuses[record.name]
            busy, since, before = held(spans.get(record.name, []), now, online_since[record.name])
            assert busy == record.busy, f"{record.name} at {now:g} s: jobs and GitHub disagree"
            age = now - since
            allowed = allowance(seen.ttl, since - before)
            if age > allowed:
                if busy:
                    seen.settled_busy += 1
                else:
                    seen.settled_idle += 1
            if status.get("busy") is not busy:
                seen.busy.saw(age, record.name, now, allowed)
                seen.longest_late_after = max(seen.longest_late_after, since - before)
            if status.get("online") is not True:
                seen.online.saw(now - online_since[record.name], record.name, now, seen.tolerance)
    return seen


@pytest.mark.parametrize("ttl", [DEFAULT_TTL, 30.0])
def test_running_runners_report_githubs_busy_and_online_within_the_list_ttl(ttl: float) -> None:
    seen = observe(ttl)
    assert seen.all_online_at is not None
    assert seen.all_online_at <= STARTED_BY
    # Teeth: many runners held each state for longer than the tolerance while compared.
    assert seen.settled_busy >= RUNNERS * 10
    assert seen.settled_idle >= RUNNERS * 10
    assert seen.busy.beyond == 0, str(seen.busy)
    assert seen.online.beyond == 0, str(seen.online)


def test_running_runners_are_synced_less_than_once_a_minute() -> None:
    """In steady state (the jobs keep coming, nothing starts or stops) fewer `/sync/runner`
    calls than one per Runner per virtual minute: about one per Runner per list, every TTL,
    and Metacontroller's resync (600 s) on top."""
    seen = observe(DEFAULT_TTL)
    end = MINUTES * 60.0
    syncs = seen.syncs[end] - seen.syncs[STEADY_FROM]
    runner_minutes = RUNNERS * (end - STEADY_FROM) / 60
    assert syncs < runner_minutes, f"{syncs} syncs in {runner_minutes:g} runner-minutes"
