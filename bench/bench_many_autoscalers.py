"""Many small RunnerDeployments on one GitHub token, each scaled by its own HRA with a pull
metric: half `PercentageRunnersBusy`, half `TotalNumberOfQueuedAndInProgressWorkflowRuns` (one
repository each), every webhook delivery lost, for 15 virtual minutes, then the teardown.

Run: python -m bench.bench_many_autoscalers [--deployments N]
What it shows: the workflow-run metric's reads are paced against the token's budget
(`GITHUB_WORKFLOW_BUDGET_SHARE`), so that runner lists, registrations and removals keep
theirs. Found by an independent scale run: 100 such deployments on one 5,000-call token spent
it within about 8 virtual minutes, after which runners could no longer be listed or removed.
The baseline, in the same run, is 20 deployments. Printed: GitHub calls (rate limited), the
peak share of the hourly budget, jobs completed and left waiting, queue times.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence
from typing import Any

from arc_sim.scenario import Scenario
from arc_sim.summary import Summary
from arc_sim.world import World

ORGANIZATIONS = ("acme", "beta", "gamma", "delta")
MINUTES = 15
JOB_EVERY_SECONDS = 45


def scenario(deployments: int, max_replicas: int = 20) -> Scenario:
    objects: list[dict[str, Any]] = []
    jobs: list[dict[str, Any]] = []
    for index in range(deployments):
        organization = ORGANIZATIONS[index % len(ORGANIZATIONS)]
        namespace, name = f"team{index % 5}", f"rd{index}"
        metric: dict[str, Any]
        if index % 2 == 0:
            metric = {
                "type": "PercentageRunnersBusy",
                "scaleUpThreshold": "0.75",
                "scaleDownThreshold": "0.3",
                "scaleUpFactor": "1.5",
                "scaleDownFactor": "0.7",
            }
        else:
            metric = {
                "type": "TotalNumberOfQueuedAndInProgressWorkflowRuns",
                "repositoryNames": [f"repo{index}"],
            }
        objects += [
            {
                "apiVersion": "actions.summerwind.dev/v1alpha1",
                "kind": "RunnerDeployment",
                "metadata": {"name": name, "namespace": namespace},
                "spec": {
                    "replicas": 1,
                    "template": {"spec": {"organization": organization, "labels": [name]}},
                },
            },
            {
                "apiVersion": "actions.summerwind.dev/v1alpha1",
                "kind": "HorizontalRunnerAutoscaler",
                "metadata": {"name": name, "namespace": namespace},
                "spec": {
                    "scaleTargetRef": {"kind": "RunnerDeployment", "name": name},
                    "minReplicas": 2 if index % 2 == 0 else 0,
                    "maxReplicas": max_replicas,
                    "metrics": [metric],
                },
            },
        ]
        jobs.append(
            {
                "repository": f"{organization}/repo{index}",
                "labels": ["self-hosted", name],
                "count": (MINUTES - 2) * 60 // JOB_EVERY_SECONDS,
                "start": 60 + index % 30,
                "every": JOB_EVERY_SECONDS,
                "duration": "5m",
            }
        )
    return Scenario.model_validate(
        {
            "name": f"{deployments}-autoscaled-deployments",
            "seed": 2,
            "duration": MINUTES * 60,
            "quietPeriod": 3 * 3600,
            "webhooks": {"lossRate": 1.0},
            "cluster": {"nodes": 20},
            "objects": objects,
            "jobs": jobs,
        }
    )


def run(world: World) -> Summary:
    summary = world.run()
    github, jobs = summary.github, summary.jobs
    print(
        f"{summary.scenario:28s} wall {summary.wall_seconds:6.1f} s  "
        f"GitHub calls {github.api_calls:5d} ({github.rate_limited} rate limited, "
        f"peak {github.peak_budget_percent:.1f}% of the hour's budget)  "
        f"jobs {jobs.completed}/{jobs.submitted}, {jobs.waiting} left waiting, "
        f"queued p50 {jobs.p50_queue_seconds:.0f} s, max {jobs.max_queue_seconds:.0f} s"
    )
    return summary


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.bench_many_autoscalers",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--deployments", type=int, default=100)
    args = parser.parse_args(argv)
    logging.disable(logging.WARNING)
    baseline = run(World(scenario(20)))
    full = run(World(scenario(args.deployments)))
    print(
        f"{args.deployments} deployments: {full.github.api_calls / baseline.github.api_calls:.1f}x "
        f"the GitHub calls of 20, {full.github.rate_limited} rate limited"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
