"""`arc-hooks demo`: the whole system at work in under a minute, with a live progress line."""

from __future__ import annotations

import sys
from collections import Counter
from typing import TextIO

from hooks.sim.scenario import Scenario, load_scenario
from hooks.sim.summary import Summary
from hooks.sim.world import World

DEMO_SCENARIO = """
name: demo
seed: 42
duration: 45m
hookReplicas: 2
settings: {UNREGISTRATION_RETRY_DELAY: 30}
cluster: {nodes: 3, startDelay: 8s}
objects:
"""

_RUNNERS = [
    ("ephemeral-1", "ephemeral: true"),
    ("ephemeral-2", "ephemeral: true"),
    ("ephemeral-3", "ephemeral: true"),
    ("ephemeral-4", "ephemeral: true"),
    ("static-1", "ephemeral: false"),
    ("static-2", "ephemeral: false"),
]

_TAIL = """
timeline:
  # A busy static runner is deleted: it is unregistered only once its job is done.
  - {at: 20m, delete: {kind: Runner, namespace: default, name: static-1}}
  # A busy ephemeral runner is deleted: its job finishes, then it goes.
  - {at: 25m, delete: {kind: Runner, namespace: default, name: ephemeral-1}}
  # One hook replica answers with errors for five minutes.
  - {at: 30m, hookOutage: {replica: 0, duration: 5m, mode: error}}
jobs:
  - {repository: octo-org/app, labels: [self-hosted, linux], count: 60, start: 1m, every: 40s,
     duration: 3m}
  - {repository: octo-org/api, labels: [self-hosted, linux], count: 6, start: 19m, every: 10s,
     duration: 8m}
teardown: true
"""


def demo_scenario() -> Scenario:
    objects = "".join(
        "  - apiVersion: actions.summerwind.dev/v1alpha1\n"
        "    kind: Runner\n"
        f"    metadata: {{name: {name}, namespace: default}}\n"
        f"    spec: {{organization: octo-org, labels: [linux], {flags}}}\n"
        for name, flags in _RUNNERS
    )
    return load_scenario(DEMO_SCENARIO + objects + _TAIL)


class ProgressLine:
    """One line per virtual interval: runners by state, jobs, API calls and hook calls."""

    def __init__(self, out: TextIO, every_minutes: int = 5) -> None:
        self.out = out
        self.every = every_minutes
        self.live = out.isatty()
        self._last = -1

    def __call__(self, world: World) -> None:
        minutes = int(world.clock.now().timestamp() - world.scenario_start.timestamp()) // 60
        if minutes == self._last or (not self.live and minutes % self.every):
            return
        self._last = minutes
        line = describe(world, minutes)
        if self.live:
            self.out.write("\r\x1b[2K" + line)
        else:
            self.out.write(line + "\n")
        self.out.flush()

    def close(self) -> None:
        if self.live:
            self.out.write("\n")


def describe(world: World, minutes: int) -> str:
    states: Counter[str] = Counter()
    for record in world.github.runner_records():
        if record.status != "online":
            states["offline"] += 1
        else:
            states["busy" if record.busy else "idle"] += 1
    pods = world.live_runner_pods()
    jobs = world.github.job_summary()
    api_calls = len(world.github.requests)
    hook_calls = sum(world.emulator.hook_calls.values())
    return (
        f"t={minutes:3d}m  runner pods {pods:2d} (busy {states['busy']}, idle {states['idle']}, "
        f"offline {states['offline']})  jobs: {jobs.waiting} queued, {jobs.in_progress} running, "
        f"{jobs.completed} done, {jobs.interrupted} interrupted  "
        f"GitHub API {api_calls}  hook calls {hook_calls}"
    )


def run_demo(out: TextIO = sys.stdout) -> Summary:
    scenario = demo_scenario()
    out.write(
        f"arc-hooks demo: {len(_RUNNERS)} Runners (4 ephemeral, 2 static) in organization "
        "octo-org, 66 jobs, a busy static and a busy ephemeral runner deleted mid-job,\n"
        "one hook replica failing for 5 minutes, then teardown. Virtual time; a few seconds.\n\n"
    )
    world = World(scenario)
    progress = ProgressLine(out)
    summary = world.run(progress)
    progress.close()
    out.write("\n" + summary.table() + "\n")
    return summary
