"""The scale benchmark's arithmetic and its scenario: what its printed curve rests on."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from arc_sim.scenario import load_scenario
from bench.bench_scale import JOBS_PER_RUNNER_HOUR, Point, growth_exponent, scenario


def point(runners: int, wall: float) -> Point:
    return Point(runners, wall, 0.0, 0, 0, 1.0, 0.0, runners / 1.0, "0/0", clean=True)


@given(exponent=st.floats(min_value=0.2, max_value=3.0), scale=st.floats(0.01, 100.0))
def test_growth_exponent_recovers_a_power_law(exponent: float, scale: float) -> None:
    points = [point(n, scale * n**exponent) for n in (100, 300, 1000, 3000)]
    assert math.isclose(growth_exponent(points), exponent, rel_tol=1e-9)


@pytest.mark.parametrize(("runners", "minutes"), [(100, 60.0), (300, 10.0), (7, 2.0), (3000, 5.0)])
def test_scenario_asks_ten_jobs_per_runner_hour_until_the_run_ends(
    runners: int, minutes: float
) -> None:
    built = scenario(runners, minutes)
    (deployment,) = built.objects
    assert deployment["spec"]["replicas"] == runners
    (jobs,) = built.jobs
    assert jobs.every * runners * JOBS_PER_RUNNER_HOUR == pytest.approx(3600)
    last = jobs.start + (jobs.count - 1) * jobs.every
    assert last < built.duration <= last + jobs.every  # none left for the teardown
    assert built.duration == minutes * 60


@pytest.mark.parametrize("runners", [100, 1000, 5000, 10000, 30000])
def test_teardown_outlasts_the_removals_the_token_budget_allows(runners: int) -> None:
    # Removing N registered runners costs N DELETEs; the scenario's token allows 5,000 an hour.
    built = scenario(runners, 10.0)
    assert built.github.rate_limit_per_hour == 5000
    assert built.quiet_period >= 7200.0
    assert built.quiet_period >= 3600.0 * (runners / built.github.rate_limit_per_hour + 1)


def test_the_burst_scenario_is_the_one_bench_readme_describes() -> None:
    """bench/README.md's 2,000-job burst, runnable with `arc-hooks simulate`."""
    burst = load_scenario(Path(__file__).parent.parent / "bench" / "webhook-burst-2000.yaml")
    (jobs,) = burst.jobs
    (autoscaler,) = [o for o in burst.objects if o["kind"] == "HorizontalRunnerAutoscaler"]
    assert (jobs.count, jobs.every, burst.duration) == (2000, 0.1, 40 * 60)
    assert autoscaler["spec"]["maxReplicas"] == 500
