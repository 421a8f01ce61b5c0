"""The scenarios under scenarios/ as the tests run them: a world built from a file, run whole or
stepped with `begin`/`run_to`/`finish`, and the invariants every clean run holds."""

from __future__ import annotations

from pathlib import Path

from arc_sim.metacontroller.realism import Concurrency
from arc_sim.scenario import Scenario, load_scenario
from arc_sim.summary import Summary
from arc_sim.world import World

SCENARIOS = Path(__file__).resolve().parents[1] / "scenarios"


def scenario_path(name: str) -> Path:
    """scenarios/<name>.yaml"""
    return SCENARIOS / f"{name}.yaml"


def scenario(name: str) -> Scenario:
    return load_scenario(scenario_path(name))


def world(name: str) -> World:
    """A world for scenarios/<name>.yaml, not started."""
    return World(scenario(name))


def run(name: str, *, concurrency: Concurrency | None = None) -> Summary:
    """scenarios/<name>.yaml run to its end, teardown included (with `concurrency`, the hook
    calls overlapping in that way rather than the file's)."""
    loaded = scenario(name)
    if concurrency is not None:
        knobs = loaded.metacontroller.model_copy(update={"concurrency": concurrency})
        loaded = loaded.model_copy(update={"metacontroller": knobs})
    return World(loaded).run()


def assert_clean(
    summary: Summary,
    *,
    none_registered: bool = True,
    none_waiting: bool = False,
    all_completed: bool = False,
) -> None:
    """The invariants hold, no job was cut off and no registration leaked; and, as asked: no
    runner is registered at the end, no job is left waiting, every submitted job completed."""
    assert summary.invariants.hold(), summary.table()
    assert summary.jobs.interrupted == 0
    assert summary.runners.leaked_registrations == 0
    if none_registered:
        assert summary.runners.registered_at_end == 0
    if none_waiting:
        assert summary.jobs.waiting == 0
    if all_completed:
        assert summary.jobs.completed == summary.jobs.submitted
