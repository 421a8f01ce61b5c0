"""`arc-hooks demo`: the whole system at work in under a minute: progress with the timeline
marked, the summary, and what its figures mean."""

from __future__ import annotations

import sys
import textwrap
from collections import Counter
from typing import TextIO

from arc_sim.progress import MARK, Progress
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


SCALE_SET_ANNOTATION_LINE = "annotations: {arc-hooks.dev/scale-set: octo-runners}"


def scale_set_demo_text() -> str:
    """The same manifests with the one annotation added, the jobs asking for the scale set by
    its name, GitHub's deliveries all lost (no public endpoint), and the listener running."""
    text = DEMO_SCENARIO.replace(
        "metadata: {name: octo-runners, namespace: default}\n    spec:\n      template:",
        "metadata:\n      name: octo-runners\n      namespace: default\n"
        f"      {SCALE_SET_ANNOTATION_LINE}\n    spec:\n      template:",
        1,
    )
    text = text.replace("name: demo\n", "name: demo-scale-set\n", 1)
    # A scale set answers to its name: the workflows ask for it so (`runs-on: octo-runners`).
    text = text.replace("labels: [self-hosted, linux], count:", "labels: [octo-runners], count:")
    text = text.replace(
        "webhooks: {lossRate: 0.05, duplicateRate: 0.05, delay: 1s}",
        "webhooks: {lossRate: 1.0}  # no public endpoint: GitHub's deliveries never arrive\n"
        "listeners: {replicas: 1}",
        1,
    )
    assert SCALE_SET_ANNOTATION_LINE in text and "listeners:" in text
    assert "[self-hosted, linux]" not in text
    return text


def demo_scenario(scale_set: bool = False) -> Scenario:
    return load_scenario(scale_set_demo_text() if scale_set else DEMO_SCENARIO)


def run_demo(out: TextIO = sys.stdout, *, scale_set: bool = False) -> Summary:
    if scale_set:
        return run_scale_set_demo(out)
    scenario = demo_scenario()
    out.write(
        "arc-hooks demo: a RunnerDeployment of ephemeral runners in organization octo-org,\n"
        "scaled from zero by a HorizontalRunnerAutoscaler on workflow_job webhooks (5% lost,\n"
        "5% duplicated): two bursts of jobs (30, then 20), back to zero between and after,\n"
        "one hook replica failing for 5 minutes, then teardown. Virtual time; a few seconds.\n"
        f"Lines with {MARK} mark the timeline: the hook outage and the teardown.\n\n"
    )
    world = World(scenario)
    progress = Progress(out, scenario, every_minutes=5)
    peaks = _Peaks(progress)
    try:
        summary = world.run(peaks)
    finally:  # end the live line, also before a traceback
        progress.close()
    progress.report_end(summary)
    out.write("\n" + summary.table() + "\n\n")
    out.write(explain(scenario, world, summary, progress, peaks) + "\n")
    return summary


def run_scale_set_demo(out: TextIO = sys.stdout) -> Summary:
    scenario = demo_scenario(scale_set=True)
    out.write(
        "arc-hooks demo --scale-set: the same RunnerDeployment and HorizontalRunnerAutoscaler,\n"
        "with one annotation added to the RunnerDeployment:\n"
        f"    {SCALE_SET_ANNOTATION_LINE}\n"
        "Its runners are now members of a GitHub runner scale set. `arc-hooks listen` polls\n"
        "GitHub from inside the cluster and writes how many jobs GitHub assigned to the scale\n"
        "set; the HRA asks for that many runners. Every webhook delivery is lost (no public\n"
        "endpoint); the same two bursts of jobs run, and one hook replica fails for 5 minutes.\n"
        "Virtual time; a few seconds.\n\n"
    )
    world = World(scenario)
    progress = Progress(out, scenario, every_minutes=5)
    peaks = _Peaks(progress)
    try:
        summary = world.run(peaks)
    finally:
        progress.close()
    progress.report_end(summary)
    out.write("\n" + summary.table() + "\n\n")
    out.write(explain_scale_set(world, summary, peaks) + "\n")
    return summary


def explain_scale_set(world: World, summary: Summary, peaks: _Peaks) -> str:
    listeners = [listener for replica in world.listeners for listener in replica.listeners]
    acquired = sum(listener.counts.acquired for listener in listeners)
    messages = sum(listener.counts.messages for listener in listeners)
    delivered = sum(1 for d in world.webhooks.deliveries if not d.lost)
    jobs, runners = summary.jobs, summary.runners
    sections = [
        (
            "no webhook",
            f"{len(world.webhooks.deliveries)} workflow_job deliveries were sent and "
            f"{delivered} arrived: scaling did not need them.",
        ),
        (
            "the listener",
            f"It read {messages} messages from the scale set's queue and acquired {acquired} "
            "jobs; GitHub then assigned them to the scale set. It wrote the count of assigned "
            "jobs on the HRA, which asked for minReplicas + that count (peak "
            f"{peaks.desired}), at most maxReplicas. A job is counted once however often it "
            "is announced, and a restarted listener starts from GitHub's count.",
        ),
        (
            "runners",
            f"{runners.created} runner pods for {jobs.submitted} jobs: each member registered "
            "with a JIT config from the scale set, took one job and left; a finished job's "
            "runner is replaced only when the listener's next count still asks for it.",
        ),
        (
            "invariants",
            "As for webhooks: no job interrupted, no registration left on GitHub, nothing "
            "left after the teardown (the scale set is deleted with its RunnerDeployment).",
        ),
    ]
    return figures_explained(sections)


class _Peaks:
    """Passes each progress call on, and keeps the HRAs' highest desired and reserved replicas."""

    def __init__(self, progress: Progress) -> None:
        self.progress = progress
        self.desired = 0
        self.reserved = 0

    def __call__(self, world: World) -> None:
        for hra in world.store.list_objects("HorizontalRunnerAutoscaler"):
            status = hra.get("status") or {}
            self.desired = max(self.desired, int(status.get("desiredReplicas") or 0))
            self.reserved = max(self.reserved, int(status.get("reservedReplicas") or 0))
        self.progress(world)


def explain(
    scenario: Scenario, world: World, summary: Summary, progress: Progress, peaks: _Peaks
) -> str:
    """What the summary's figures mean, with this run's numbers."""
    hra = next(o for o in scenario.objects if o["kind"] == "HorizontalRunnerAutoscaler")
    max_replicas = int(hra["spec"]["maxReplicas"])
    outage = next(e for e in scenario.timeline if e.hook_outage is not None)
    assert outage.hook_outage is not None
    outage_from, outage_to = outage.at, outage.at + outage.hook_outage.duration
    sent = [d for d in world.webhooks.deliveries if d.copy == 1]
    lost: Counter[str] = Counter(d.action for d in sent if d.lost)
    duplicated = sum(1 for d in world.webhooks.deliveries if d.copy > 1)
    lost_text = ", ".join(f"{n} {action}" for action, n in sorted(lost.items())) or "none"
    errors = summary.hooks.errors
    in_outage = progress.hook_errors_in_outages(world)
    other_errors = errors - in_outage
    jobs, runners = summary.jobs, summary.runners
    sections = [
        (
            "maxReplicas",
            f"The HRA's spec.maxReplicas is {max_replicas}: it never asks for more runners. Its "
            f"desired replicas peaked at {peaks.desired} while up to {peaks.reserved} jobs held "
            "a reservation, so at the height of a burst jobs waited for a runner to free up: "
            f"that is the queue time (max {jobs.max_queue_seconds:.0f} s) and the runners' "
            f"peak ({runners.peak}).",
        ),
        (
            "lost deliveries",
            f"{len(sent)} workflow_job deliveries, {sum(lost.values())} lost ({lost_text}): "
            "GitHub never sent them and does not retry. A lost `queued` leaves its job "
            "without a reservation of its own, so it waits for a runner another job's "
            "reservation started. A lost `completed` keeps a runner reserved until the HRA "
            "finds the job completed on GitHub (it asks while runners sit idle) or the "
            "reservation's duration ends. A lost `in_progress` keeps the job's reservation "
            "renewed as if the job still waited, until its `completed` arrives.",
        ),
        (
            "duplicated deliveries",
            f"{duplicated} deliveries were sent twice. They change nothing: a reservation is "
            "named after its job (job-<id>), so the second `queued` finds it there and the "
            "second `completed` finds it completed.",
        ),
        (
            "hook errors",
            f"{errors} hook calls failed, {in_outage} of them during the hook "
            f"outage (minutes {outage_from / 60:g} to {outage_to / 60:g}), when one of the "
            f"{scenario.hook_replicas} replicas answered HTTP 503. They are expected and "
            "harmless: Metacontroller retries a failed call, which then usually reaches the "
            "healthy replica, and the hooks keep no state, so a call that fails or is "
            "repeated changes nothing. "
            + (
                "No call failed outside the outage."
                if other_errors == 0
                else f"{other_errors} failed outside it: worth a look on a real cluster."
            ),
        ),
        (
            "client rate limit",
            f"{summary.hooks.client_rate_limit_waits} of Metacontroller's API requests waited "
            "for its client's rate limit "
            f"({summary.hooks.client_rate_limit_wait_seconds:.0f} s together): one bucket of "
            "100 requests a second, with bursts of 200, serves all of its controllers, as the "
            "README's install sets it (`--client-go-qps`, `--client-go-burst`; Metacontroller's "
            "own default is 5 and 10). Every sync costs at least one request.",
        ),
        (
            "runners",
            f"{runners.created} runner pods for {jobs.submitted} jobs: an ephemeral runner "
            "takes one job and is replaced, and runners started for demand that has passed "
            "are removed unused. 'registered at end' and 'leaked' count registrations still "
            "on GitHub after the teardown.",
        ),
        (
            "invariants",
            "noInterruptedJobs: no job was cut off by its runner going away. "
            "noLeakedRegistrations: every runner registered was removed from GitHub with its "
            "pod. converged: after the teardown no ARC object and no runner pod is left.",
        ),
    ]
    return figures_explained(sections)


def figures_explained(sections: list[tuple[str, str]]) -> str:
    """Named paragraphs, wrapped beside their names."""
    width = max(len(name) for name, _ in sections)
    lines = ["What the figures mean:"]
    for name, text in sections:
        wrapped = textwrap.wrap(text, width=96 - width - 4)
        lines.append(f"  {name.ljust(width)}  {wrapped[0]}")
        lines += [f"  {' ' * width}  {rest}" for rest in wrapped[1:]]
    return "\n".join(lines)
