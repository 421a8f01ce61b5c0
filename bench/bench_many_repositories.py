"""Many repositories on one GitHub token, each with a RunnerDeployment of its own: 100
repositories of 10 ephemeral runners (registration tokens, or `--jit` for just-in-time
configs), a five-minute job every two minutes in each, for 24 virtual minutes, then the
teardown.

Run: python -m bench.bench_many_repositories [--repositories N] [--jit]
What it shows: runner lists are paced across every scope the token lists
(`GITHUB_LIST_RUNNERS_BUDGET_SHARE`), not each scope as if it were the token's only one. Found
by an independent scale run: a hundred repositories' one-page lists, each at the configured
90 s, took about 80% of a 5,000-call token, and the teardown met the rate limit. The baseline,
in the same run, is 10 repositories. Printed: GitHub calls (list calls, rate limited), the
peak share of the hourly budget, jobs completed, when the teardown was over.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence
from typing import Any

from arc_sim.scenario import Scenario
from arc_sim.summary import Summary
from arc_sim.world import START, World

MINUTES = 24
RUNNERS = 10
JOB_EVERY_SECONDS = 120
LIST_ROUTE = "/repos/{owner}/{repo}/actions/runners"


def scenario(repositories: int, *, jit: bool) -> Scenario:
    objects: list[dict[str, Any]] = []
    jobs: list[dict[str, Any]] = []
    for index in range(repositories):
        repository = f"acme/repo{index}"
        objects.append(
            {
                "apiVersion": "actions.summerwind.dev/v1alpha1",
                "kind": "RunnerDeployment",
                "metadata": {"name": f"r{index}"},
                "spec": {
                    "replicas": RUNNERS,
                    "template": {"spec": {"repository": repository, "labels": ["linux"]}},
                },
            }
        )
        jobs.append(
            {
                "repository": repository,
                "labels": ["self-hosted", "linux"],
                "count": (MINUTES - 4) * 60 // JOB_EVERY_SECONDS,
                "start": "2m",
                "every": JOB_EVERY_SECONDS,
                "duration": "5m",
            }
        )
    return Scenario.model_validate(
        {
            "name": f"{repositories}-repositories{'-jit' if jit else ''}",
            "seed": 1,
            "duration": MINUTES * 60,
            "settings": {"RUNNER_REGISTRATION_MODE": "jit" if jit else "token"},
            "github": {"rateLimitPerHour": 5000},
            "cluster": {"nodes": 20},
            "objects": objects,
            "jobs": jobs,
        }
    )


def run(world: World) -> Summary:
    summary = world.run()
    github, jobs = summary.github, summary.jobs
    requests = world.github.requests
    lists = sum(1 for r in requests if r.route == LIST_ROUTE)
    over = max((r.at for r in requests), default=START) - START
    print(
        f"{summary.scenario:24s} wall {summary.wall_seconds:6.1f} s  "
        f"GitHub calls {github.api_calls:5d} (lists {lists}, {github.rate_limited} rate limited, "
        f"peak {github.peak_budget_percent:.1f}% of the hour's budget)  "
        f"jobs {jobs.completed}/{jobs.submitted}, "
        f"last call at virtual minute {over.total_seconds() / 60:.1f}"
    )
    return summary


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.bench_many_repositories",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--repositories", type=int, default=100)
    parser.add_argument("--jit", action="store_true", help="just-in-time runner configs")
    args = parser.parse_args(argv)
    logging.disable(logging.WARNING)
    baseline = run(World(scenario(10, jit=args.jit)))
    full = run(World(scenario(args.repositories, jit=args.jit)))
    print(
        f"{args.repositories} repositories: "
        f"{full.github.api_calls / baseline.github.api_calls:.1f}x the GitHub calls of 10, "
        f"{full.github.rate_limited} rate limited"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
