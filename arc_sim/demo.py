"""`arc-hooks demo`: the whole system at work in under a minute, with a live progress line."""

from __future__ import annotations

import sys
from collections import Counter
from typing import TextIO

from arc_sim.scenario import Scenario, load_scenario
from arc_sim.summary import Summary
from arc_sim.world import World

DEMO_SCENARIO = """
name: demo
seed: 42
duration: 60m
hookReplicas: 2
settings: {UNREGISTRATION_RETRY_DELAY: 30}
cluster: {nodes: 3, startDelay: 8s}
webhooks: {lossRate: 0.05, duplicateRate: 0.05, delay: 1s}
objects:
  # Ephemeral organization runners, scaled from zero by workflow_job webhooks, as in ARC's
  # autoscaling documentation.
  - apiVersion: actions.summerwind.dev/v1alpha1
    kind: RunnerDeployment
    metadata: {name: octo-runners, namespace: default}
    spec:
      template:
        spec: {organization: octo-org, labels: [linux], ephemeral: true}
  - apiVersion: actions.summerwind.dev/v1alpha1
    kind: HorizontalRunnerAutoscaler
    metadata: {name: octo-runners, namespace: default}
    spec:
      scaleTargetRef: {kind: RunnerDeployment, name: octo-runners}
      minReplicas: 0
      maxReplicas: 12
      scaleUpTriggers:
        - githubEvent: {workflowJob: {}}
          duration: 30m
timeline:
  # One hook replica answers with errors for five minutes.
  - {at: 20m, hookOutage: {replica: 0, duration: 5m, mode: error}}
jobs:
  - {repository: octo-org/app, labels: [self-hosted, linux], count: 30, start: 2m, every: 10s,
     duration: 4m}
  - {repository: octo-org/api, labels: [self-hosted, linux], count: 20, start: 30m, every: 5s,
     duration: 3m}
teardown: true
"""


def demo_scenario() -> Scenario:
    return load_scenario(DEMO_SCENARIO)


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
    desired = reserved = 0
    for hra in world.store.list_objects("HorizontalRunnerAutoscaler"):
        status = hra.get("status") or {}
        desired += int(status.get("desiredReplicas") or 0)
        reserved += int(status.get("reservedReplicas") or 0)
    return (
        f"t={minutes:3d}m  HRA desired {desired:2d} (reserved {reserved:2d})  "
        f"runner pods {pods:2d} (busy {states['busy']}, idle {states['idle']}, "
        f"offline {states['offline']})  jobs: {jobs.waiting} queued, {jobs.in_progress} running, "
        f"{jobs.completed} done, {jobs.interrupted} interrupted  "
        f"GitHub API {api_calls}  hook calls {hook_calls}"
    )


def run_demo(out: TextIO = sys.stdout) -> Summary:
    scenario = demo_scenario()
    out.write(
        "arc-hooks demo: a RunnerDeployment of ephemeral runners in organization octo-org,\n"
        "scaled from zero by a HorizontalRunnerAutoscaler on workflow_job webhooks (5% lost,\n"
        "5% duplicated): two bursts of jobs (30, then 20), back to zero between and after,\n"
        "one hook replica failing for 5 minutes, then teardown. Virtual time; a few seconds.\n\n"
    )
    world = World(scenario)
    progress = ProgressLine(out)
    summary = world.run(progress)
    progress.close()
    out.write("\n" + summary.table() + "\n")
    return summary
