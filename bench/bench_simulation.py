"""The simulated world at scale: 100 standalone Runners for a virtual hour with a steady stream
of jobs (1,000 four-minute jobs), through the real hooks, emulator, kubelet and fake GitHub.

Run: python -m bench.bench_simulation
Target: under 60 s of wall time on a 2-core machine with the realistic Metacontroller defaults
(under 30 s with the friendly emulator). The baseline measured in the same run is the same world
with 10 Runners and 100 jobs; the ratio shows how the cost grows with scale.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence

from arc_sim.scenario import Scenario
from arc_sim.summary import Summary
from arc_sim.world import World

TARGET_SECONDS = 60.0


def scenario(runners: int, jobs: int, every_seconds: float) -> Scenario:
    return Scenario.model_validate(
        {
            "name": f"{runners}-runners-hour",
            "seed": 1,
            "duration": "1h",
            "objects": [
                {
                    "apiVersion": "actions.summerwind.dev/v1alpha1",
                    "kind": "Runner",
                    "metadata": {"name": f"runner-{i:03d}"},
                    "spec": {"organization": "acme", "labels": ["linux"]},
                }
                for i in range(runners)
            ],
            "jobs": [
                {
                    "repository": "acme/app",
                    "labels": ["self-hosted", "linux"],
                    "count": jobs,
                    "start": "1m",
                    "every": every_seconds,
                    "duration": "4m",
                }
            ],
        }
    )


def run(world: World) -> Summary:
    """Run the world and print its line: the hook server's share is the time spent answering
    hook calls (the in-process GitHub and API server included), the rest is the world's."""
    summary = world.run()
    speedup = summary.virtual_seconds / max(summary.wall_seconds, 1e-9)
    hook_share = world.emulator.stats.hook_wall_seconds / max(summary.wall_seconds, 1e-9)
    print(
        f"{summary.scenario:18s} wall {summary.wall_seconds:6.1f} s  "
        f"({speedup:5.0f}x virtual time)  hook calls {summary.hooks.calls:6d}  "
        f"hook server {hook_share:4.0%}  "
        f"jobs {summary.jobs.completed}/{summary.jobs.submitted}  "
        f"interrupted {summary.jobs.interrupted}  leaked {summary.runners.leaked_registrations}"
    )
    return summary


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.bench_simulation",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.parse_args(argv)
    logging.disable(logging.WARNING)
    baseline = run(World(scenario(10, 100, 30)))
    full = run(World(scenario(100, 1000, 3)))
    print(f"100 Runners cost {full.wall_seconds / baseline.wall_seconds:.1f}x 10 Runners")
    verdict = "meets" if full.wall_seconds < TARGET_SECONDS else "MISSES"
    print(f"a simulated hour with 100 runners {verdict} the target of {TARGET_SECONDS:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
