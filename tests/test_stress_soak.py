"""`simulate --stress` on the RunnerSet scenarios, five seeds each: informer lag of seconds,
10% write conflicts and hook replicas restarting mid-call, with overlapping hook calls answered
on threads of their own (`concurrency: threads`), so the hook server's races can happen. Every
job runs, none is cut off by our own deletions, no registration is left, and the teardown
finishes."""

from __future__ import annotations

import pytest

from arc_sim.scenario import stressed
from arc_sim.world import World
from tests.sim_scenarios import assert_clean, scenario

SEEDS = (1, 2, 3, 4, 5)


@pytest.mark.parametrize(
    "name", ["runnerset-scaled-down-while-busy", "runnerset-autoscaled-from-zero"]
)
@pytest.mark.parametrize("seed", SEEDS)
def test_runnerset_keeps_its_promises_under_stress(name: str, seed: int) -> None:
    plain = scenario(name)
    knobs = plain.metacontroller.model_copy(update={"concurrency": "threads"})
    world = World(stressed(plain.model_copy(update={"seed": seed, "metacontroller": knobs})))
    summary = world.run()

    assert_clean(summary, none_waiting=True, all_completed=True)
    assert world.emulator.stats.max_informer_lag > 0.5
    assert world.emulator.stats.conflicts > 0
