"""How the simulated world's cost grows with the number of runners: a RunnerDeployment of N
static organization runners, each taking ten four-minute jobs an hour, through the realistic
Metacontroller defaults, the hooks, the kubelet and the fake GitHub.

Run: python -m bench.bench_scale [--sizes 100,300,1000] [--minutes 60]

For each size it prints the wall time of the virtual minutes asked for (start-up included) and,
apart, of the teardown that follows (deleting the RunnerDeployment and draining its runners,
whose jobs may still run for four minutes), the hook calls per runner-hour, the GitHub calls
per runner-hour in steady state (after the first `--warmup` minutes, before the teardown; exact
counts in virtual time), the hook server's own time per runner-hour, and at the end the growth
exponent of the running wall time against runners, fitted by least squares over the sizes
measured (1.0 is linear). Jobs arrive from the first minute to the end of the run, none during
the teardown. Every row comes from the same run, so the smallest size is the baseline of the
others.
"""

from __future__ import annotations

import argparse
import itertools
import logging
import math
import statistics
import sys
import time
from dataclasses import dataclass
from datetime import timedelta

from arc_sim.scenario import GitHubKnobs, Scenario
from arc_sim.world import START, World

JOBS_PER_RUNNER_HOUR = 10
JOB_MINUTES = 4
FIRST_JOB_MINUTE = 1


def teardown_quiet_period(runners: int) -> float:
    """How long the teardown may take: the default two hours, and one more for every budget's
    worth of runners, since each registered runner removed costs one `DELETE` (README, "GitHub
    rate limits") and the removals wait for the rate limit's reset once the budget is spent."""
    default: float = Scenario.model_fields["quiet_period"].default
    return default + 3600.0 * math.ceil(runners / GitHubKnobs().rate_limit_per_hour)


def scenario(runners: int, minutes: float) -> Scenario:
    every = 3600 / (runners * JOBS_PER_RUNNER_HOUR)
    jobs = max(1, math.ceil((minutes - FIRST_JOB_MINUTE) * 60 / every))
    template = {"spec": {"organization": "acme", "labels": ["linux"], "ephemeral": False}}
    return Scenario.model_validate(
        {
            "name": f"{runners}-runners",
            "seed": 1,
            "duration": minutes * 60,
            "quietPeriod": teardown_quiet_period(runners),
            # As the README asks of a deployment this large: every Runner fits in the memo.
            "settings": {"HOOK_MEMO_RUNNERS": max(4096, runners)},
            "objects": [
                {
                    "apiVersion": "actions.summerwind.dev/v1alpha1",
                    "kind": "RunnerDeployment",
                    "metadata": {"name": "web"},
                    "spec": {"replicas": runners, "template": template},
                }
            ],
            "jobs": [
                {
                    "repository": "acme/app",
                    "labels": ["self-hosted", "linux"],
                    "count": jobs,
                    "start": FIRST_JOB_MINUTE * 60,
                    "every": every,
                    "duration": f"{JOB_MINUTES}m",
                }
            ],
        }
    )


@dataclass(frozen=True)
class Point:
    runners: int
    wall_seconds: float
    teardown_seconds: float
    hook_calls: int
    steady_github_calls: int
    steady_runner_hours: float
    hook_seconds: float
    runner_hours: float
    jobs: str
    clean: bool

    def row(self) -> str:
        per = self.runner_hours
        return (
            f"{self.runners:>7,d} {self.wall_seconds:>9.1f} {self.teardown_seconds:>10.1f} "
            f"{self.hook_calls:>10,d} "
            f"{self.hook_calls / per:>9.1f} "
            f"{self.steady_github_calls / self.steady_runner_hours:>9.2f} "
            f"{1000 * self.hook_seconds / per:>11.1f}  {self.jobs:>11s}  "
            f"{'ok' if self.clean else 'INVARIANTS BROKEN'}"
        )


HEADER = (
    f"{'runners':>7s} {'wall s':>9s} {'teardown s':>10s} {'hook calls':>10s} {'hook/rh':>9s} "
    f"{'GitHub/rh':>9s} {'hook ms/rh':>11s}  {'jobs':>11s}"
)


def measure(runners: int, minutes: float, warmup: float) -> Point:
    world = World(scenario(runners, minutes))
    started = time.perf_counter()
    world.begin()
    world.run_to(minutes * 60)
    ran = time.perf_counter()
    summary = world.finish()
    wall, teardown = ran - started, time.perf_counter() - ran
    steady_from, steady_to = START + timedelta(minutes=warmup), START + timedelta(minutes=minutes)
    steady = sum(1 for r in world.github.requests if steady_from <= r.at < steady_to)
    return Point(
        runners=runners,
        wall_seconds=wall,
        teardown_seconds=teardown,
        hook_calls=summary.hooks.calls,
        steady_github_calls=steady,
        steady_runner_hours=runners * (minutes - warmup) / 60,
        hook_seconds=world.emulator.stats.hook_wall_seconds,
        runner_hours=runners * minutes / 60,
        jobs=f"{summary.jobs.completed}/{summary.jobs.submitted}",
        clean=summary.invariants.hold(),
    )


def growth_exponent(points: list[Point]) -> float:
    """The slope of log(wall) against log(runners): the running wall time grows as runners to
    this power (the teardown is left out: it drains whatever jobs are running at the end)."""
    xs = [math.log(p.runners) for p in points]
    ys = [math.log(p.wall_seconds) for p in points]
    return statistics.linear_regression(xs, ys).slope


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.bench_scale",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--sizes",
        default="100,300,1000",
        help="runner counts, comma-separated (default: %(default)s)",
    )
    parser.add_argument(
        "--minutes",
        type=float,
        default=60.0,
        help="virtual minutes per size (default: %(default)s)",
    )
    parser.add_argument(
        "--warmup",
        type=float,
        default=5.0,
        help="minutes before GitHub calls count as steady (default: %(default)s)",
    )
    args = parser.parse_args(argv)
    if not 0 <= args.warmup < args.minutes:
        parser.error("--warmup must be at least 0 and less than --minutes")
    sizes = sorted(int(size) for size in args.sizes.split(","))
    logging.disable(logging.WARNING)
    print(
        f"{args.minutes:g} virtual minutes per size; rh = runner-hour; GitHub/rh counted from "
        f"minute {args.warmup:g} to {args.minutes:g}"
    )
    print(HEADER)
    points = []
    for size in sizes:
        point = measure(size, args.minutes, args.warmup)
        points.append(point)
        print(point.row(), flush=True)
    if len(points) >= 2:
        overall = growth_exponent(points)
        print(f"growth exponent of wall time, {sizes[0]}-{sizes[-1]}: {overall:.2f}")
        for low, high in itertools.pairwise(points):
            pair = growth_exponent([low, high])
            print(f"  {low.runners}-{high.runners}: {pair:.2f}")
    return 0 if all(point.clean for point in points) else 1


if __name__ == "__main__":
    sys.exit(main())
