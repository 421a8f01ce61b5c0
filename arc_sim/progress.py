"""Progress of a simulated run, for `arc-hooks simulate` and `arc-hooks demo`.

On a terminal, one live line rewritten in place (`\\r`) every virtual minute; elsewhere (a pipe,
a CI log), one line per `every_minutes` of virtual time. Either way the scenario's timeline is
marked as it happens, on lines of their own starting with `==`: each action, the end of every
outage, the teardown and how it ended. Nothing here reads the wall clock.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import TYPE_CHECKING, TextIO

from arc_sim.scenario import Scenario, TimelineEntry

if TYPE_CHECKING:  # the world imports the hooks; progress itself needs none of it at import
    from arc_sim.summary import Summary
    from arc_sim.world import World

MARK = "=="
"""What a timeline line starts with, after its time."""

CLEAR_LINE = "\r\x1b[2K"
"""Back to the start of the line and erase it (ANSI), for the live line."""


@dataclass(frozen=True)
class Milestone:
    """A moment of the scenario's timeline worth a line of its own."""

    at: float  # seconds after the start
    text: str
    hook_outage_from: float | None = None  # on the end of a hook outage: when it began
    hook_outage_replica: int = 0  # ... and the replica it broke


def milestones(scenario: Scenario) -> list[Milestone]:
    """The timeline's actions, the end of each outage, and the teardown, in time order."""
    marks: list[Milestone] = []
    for index, entry in enumerate(scenario.timeline):
        marks += _entry_milestones(index, entry, scenario.hook_replicas)
    if scenario.teardown:
        marks.append(
            Milestone(
                scenario.duration,
                "teardown begins: every object the scenario applied is deleted; the finalize "
                "hooks unregister the runners before their pods go",
            )
        )
    return sorted(marks, key=lambda mark: mark.at)  # stable: same-time marks keep file order


def _entry_milestones(index: int, entry: TimelineEntry, replicas: int) -> list[Milestone]:
    at = entry.at
    if entry.hook_outage is not None:
        outage = entry.hook_outage
        replica = outage.replica % replicas
        how = (
            "answers every hook call with HTTP 503"
            if outage.mode == "error"
            else "lets every hook call time out"
        )
        return [
            Milestone(
                at,
                f"hook outage begins: hook replica {replica} of {replicas} {how} for "
                f"{_span(outage.duration)}",
            ),
            Milestone(
                at + outage.duration,
                f"hook outage ends: hook replica {replica} answers again",
                hook_outage_from=at,
                hook_outage_replica=replica,
            ),
        ]
    if entry.github_outage is not None:
        outage_gh = entry.github_outage
        what = "rate-limits every call" if outage_gh.mode == "rateLimit" else "fails every call"
        return [
            Milestone(at, f"GitHub outage begins: GitHub {what} for {_span(outage_gh.duration)}"),
            Milestone(at + outage_gh.duration, "GitHub outage ends"),
        ]
    return [Milestone(at, _describe_action(entry))]


def _describe_action(entry: TimelineEntry) -> str:
    if entry.apply is not None:
        metadata = entry.apply.get("metadata") or {}
        namespace = metadata.get("namespace", "default")
        return f"apply {entry.apply['kind']} {namespace}/{metadata['name']}"
    if entry.delete is not None:
        ref = entry.delete
        return f"delete {ref.kind} {ref.namespace}/{ref.name}"
    if entry.evict_pods is not None:
        return f"evict {_pods(entry.evict_pods.count)} in {entry.evict_pods.namespace}"
    if entry.delete_pods is not None:
        return f"delete {_pods(entry.delete_pods.count)} in {entry.delete_pods.namespace}"
    if entry.drain_node is not None:
        return f"drain node {entry.drain_node}"
    if entry.lose_node is not None:
        return f"node {entry.lose_node} stops answering"
    if entry.add_node is not None:
        return f"add node {entry.add_node}"
    return entry.action  # an action added to the format without a description here


def _pods(count: int) -> str:
    return "1 pod" if count == 1 else f"up to {count} pods"


def _span(seconds: float) -> str:
    if seconds >= 60 and seconds % 60 == 0:
        return f"{seconds / 60:g} min"
    return f"{seconds:g} s"


def stamp(seconds: float) -> str:
    """Virtual time since the start, as progress lines show it: `t= 20m`."""
    return f"t={int(seconds // 60):3d}m"


class Progress:
    """Called by `World.run` after every virtual minute (and every teardown step).

    `every_minutes` spaces the lines when the stream is not a terminal; `live` forces the mode
    (default: the stream's `isatty()`)."""

    def __init__(
        self,
        out: TextIO,
        scenario: Scenario,
        *,
        every_minutes: int = 10,
        live: bool | None = None,
    ) -> None:
        if every_minutes < 1:
            raise ValueError("every_minutes must be at least 1")
        self.out = out
        self.every = every_minutes
        self.live = out.isatty() if live is None else live
        self.teardown = scenario.teardown
        self.quiet_period = scenario.quiet_period
        self._pending = milestones(scenario)
        self._last_minute = -1
        self._live_line = False  # a live line is on screen, without its newline
        self._outages: list[_Outage] = []  # hook outages over

    def __call__(self, world: World) -> None:
        elapsed = (world.clock.now() - world.scenario_start).total_seconds()
        minute = int(elapsed // 60)
        marked = False
        while self._pending and self._pending[0].at <= elapsed:
            self._mark(world, self._pending.pop(0))
            marked = True
        if minute == self._last_minute and not marked:
            return
        if self.live:
            self._last_minute = minute
            self.out.write(CLEAR_LINE + describe(world, elapsed))
            self._live_line = True
            self.out.flush()
        elif minute != self._last_minute and minute % self.every == 0:
            self._last_minute = minute
            self.out.write(describe(world, elapsed) + "\n")
            self.out.flush()

    def close(self) -> None:
        """End the live line, if one is on screen."""
        self._end_live_line()
        self.out.flush()

    def report_end(self, summary: Summary) -> None:
        """After a teardown, say how it ended."""
        self._end_live_line()
        if self.teardown:
            if summary.invariants.converged:
                text = "teardown done: no ARC object and no runner pod left"
            else:
                text = (
                    f"teardown not done within quietPeriod ({_span(self.quiet_period)}): "
                    "ARC objects or runner pods are left"
                )
            self._line(summary.virtual_seconds, text)
        self.out.flush()

    def hook_errors_in_outages(self, world: World) -> int:
        """Hook calls that failed while a hook outage (one that has ended) lasted."""
        return _failed_hook_calls(world, self._outages)

    def _mark(self, world: World, mark: Milestone) -> None:
        text = mark.text
        if mark.hook_outage_from is not None:
            outage = _Outage(mark.hook_outage_from, mark.at, mark.hook_outage_replica)
            self._outages.append(outage)
            failed = _failed_hook_calls(world, [outage])
            calls = "hook call" if failed == 1 else "hook calls"
            text += f" ({failed} {calls} failed while it lasted)"
        self._end_live_line()
        self._line(mark.at, text)

    def _line(self, seconds: float, text: str) -> None:
        self.out.write(f"{stamp(seconds)}  {MARK} {text}\n")

    def _end_live_line(self) -> None:
        if self._live_line:
            self.out.write("\n")
            self._live_line = False


@dataclass(frozen=True)
class _Outage:
    start: float  # seconds after the start
    end: float  # excluded
    replica: int


def _failed_hook_calls(world: World, outages: list[_Outage]) -> int:
    """The calls each outage's replica failed while it lasted (two outages at once count each
    its own replica's, and none is missed: the emulator's list of recent errors is bounded)."""
    count = 0
    for made_at, replica in world.transport.faulted_calls:
        at = (made_at - world.scenario_start).total_seconds()
        count += any(o.replica == replica and o.start <= at < o.end for o in outages)
    return count


def describe(world: World, elapsed: float) -> str:
    """One progress line: the HRAs' desired replicas (when there are HRAs), runner pods by
    state, jobs, API and hook calls."""
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
    autoscalers = world.store.list_objects("HorizontalRunnerAutoscaler")
    desired = reserved = 0
    for hra in autoscalers:
        status = hra.get("status") or {}
        desired += int(status.get("desiredReplicas") or 0)
        reserved += int(status.get("reservedReplicas") or 0)
    scaling = f"HRA desired {desired:2d} (reserved {reserved:2d})  " if autoscalers else ""
    return (
        f"{stamp(elapsed)}  {scaling}"
        f"runner pods {pods:2d} (busy {states['busy']}, idle {states['idle']}, "
        f"offline {states['offline']})  jobs: {jobs.waiting} queued, {jobs.in_progress} running, "
        f"{jobs.completed} done, {jobs.interrupted} interrupted  "
        f"GitHub API {api_calls}  hook calls {hook_calls}"
    )
