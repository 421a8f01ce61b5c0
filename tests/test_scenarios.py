"""The Runner lifecycle in the simulated world: each scenario under scenarios/ with the
invariants and the figures that matter."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from arc_sim.world import World
from tests.sim_scenarios import assert_clean, run, scenario, scenario_path


def test_static_and_ephemeral_runners_deleted_while_busy_finish_their_jobs() -> None:
    summary = run("runners-deleted-while-busy")

    assert_clean(summary)
    assert summary.jobs.completed == 2
    assert summary.runners.created == 2  # deleted Runners get no new pods


def test_registration_token_expired_before_the_pod_started() -> None:
    summary = run("token-expires-before-pod-starts")

    assert_clean(summary)
    assert summary.jobs.completed == 1
    # the first pod fails on its expired token; the replacement registers and runs the job
    assert summary.runners.created >= 2
    assert summary.github.by_endpoint["POST /orgs/{org}/actions/runners/registration-token"] >= 2


def test_runner_that_never_registers_is_replaced_after_the_timeout() -> None:
    summary = run("runner-never-registers")

    assert_clean(summary)
    assert summary.jobs.completed == 1
    assert 500 <= summary.jobs.max_queue_seconds <= 700  # the 10-minute registration timeout


def test_github_rate_limited_during_teardown() -> None:
    summary = run("rate-limited-teardown")

    assert_clean(summary)
    assert summary.github.rate_limited >= 1
    assert summary.jobs.completed == 6


def test_summary_shows_the_rate_limit_headroom_at_the_tightest_moment() -> None:
    """One credential, a run shorter than a rate-limit window: the peak share of the budget is
    every charged call over the hour's limit (a 304 is not charged)."""
    loaded = scenario("runners-deleted-while-busy")
    loaded = loaded.model_copy(
        update={"github": loaded.github.model_copy(update={"rate_limit_per_hour": 400})}
    )
    assert loaded.duration < 3600
    world = World(loaded)
    summary = world.run()

    charged = [r for r in world.github.requests if r.status != 304]
    assert len({r.caller_id for r in charged}) == 1
    assert summary.github.peak_budget_percent == round(100 * len(charged) / 400, 1)
    assert 0 < summary.github.peak_budget_percent < 100
    assert f"peak {summary.github.peak_budget_percent:g}% of an hour's budget" in summary.table()


def test_hook_replicas_failing_for_a_while_then_converging() -> None:
    summary = run("hook-replicas-failing")

    assert_clean(summary)
    assert summary.hooks.errors > 0
    assert summary.jobs.completed == 20


def test_pod_evicted_while_idle_is_replaced() -> None:
    summary = run("pod-evicted-while-idle")

    assert_clean(summary)
    assert summary.jobs.completed == 3
    assert summary.runners.created == 2


def test_busy_pod_deleted_out_of_band_reports_the_interrupted_job() -> None:
    summary = run("busy-pod-deleted-out-of-band")

    assert summary.jobs.interrupted == 1
    assert summary.invariants.no_interrupted_jobs is False
    assert summary.runners.leaked_registrations == 0
    assert summary.invariants.converged


def test_same_scenario_and_seed_give_the_same_summary() -> None:
    """In the repeatable mode (docs/scenarios.md, "What stays repeatable"): with the default
    `threads`, overlapping calls reach GitHub in the order threads are scheduled."""
    first = run("hook-replicas-failing", concurrency="interleaved").to_json()
    second = run("hook-replicas-failing", concurrency="interleaved").to_json()
    first.pop("wallSeconds")
    second.pop("wallSeconds")
    assert first == second


@pytest.mark.parametrize(
    ("name", "status"),
    [("runners-deleted-while-busy", 0), ("busy-pod-deleted-out-of-band", 1)],
)
def test_simulate_command_prints_json_and_exits_on_invariants(name: str, status: int) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "hooks", "simulate", str(scenario_path(name)), "--json"],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == status, result.stderr
    summary = json.loads(result.stdout.strip().splitlines()[-1])
    assert summary["scenario"] == name
    for key in ("jobs", "runners", "github", "hooks", "invariants"):
        assert key in summary


def test_simulate_command_names_the_field_of_a_broken_file(tmp_path: Path) -> None:
    broken = tmp_path / "broken.yaml"
    broken.write_text("name: broken\njobs: [{repository: acme/app, count: many}]\n")
    result = subprocess.run(
        [sys.executable, "-m", "hooks", "simulate", str(broken)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 2
    assert "jobs[0].count" in result.stderr
    assert "Traceback" not in result.stderr


def test_demo_runs_and_holds_its_invariants() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "hooks", "demo"],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "noLeakedRegistrations  ok" in result.stdout


def test_an_ephemeral_pool_keeps_its_runners_through_a_rate_limit() -> None:
    """Found by an independent run: through a 30-minute rate limit the pool ran dry (0 pods,
    60 jobs queued, the slowest 600 s), though its token was valid for 26 more minutes."""
    summary = run("rate-limit-ephemeral-pool")

    assert_clean(summary, all_completed=True)
    assert summary.jobs.max_queue_seconds < 60
