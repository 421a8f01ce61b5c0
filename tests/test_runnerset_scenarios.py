"""RunnerSets and the runner-pod decorator in the simulated world: scale-down while busy, volume
reuse, autoscaling from zero, and a node drain that evicts runners of both kinds."""

from __future__ import annotations

from collections import Counter
from typing import Any

from arc_sim.world import World
from tests.sim_scenarios import assert_clean, scenario, world

MINUTE = 60.0
DECORATOR_FINALIZER = "metacontroller.io/decoratorcontroller-arc-hooks-runner-pod"


def runner_pods(w: World) -> list[dict[str, Any]]:
    return [
        pod
        for pod in w.store.list_objects("Pod")
        if "actions-runner" in (pod["metadata"].get("labels") or {})
    ]


def claims_of(pod: dict[str, Any]) -> set[str]:
    return {
        volume["persistentVolumeClaim"]["claimName"]
        for volume in pod["spec"].get("volumes") or []
        if "persistentVolumeClaim" in volume
    }


def test_runnerset_scaled_down_while_busy_cuts_off_no_job_and_reuses_volumes() -> None:
    w = world("runnerset-scaled-down-while-busy")
    w.begin()
    w.run_to(9 * MINUTE)
    busy_before = {pod["metadata"]["name"] for pod in runner_pods(w)}
    assert len(busy_before) == 6
    first_claims = set().union(*(claims_of(pod) for pod in runner_pods(w)))
    assert len(first_claims) == 6

    w.run_to(12 * MINUTE)  # scaled to 2 at 10m; every runner is still busy
    assert {pod["metadata"]["name"] for pod in runner_pods(w)} == busy_before
    statefulsets = w.store.list_objects("StatefulSet")
    stopping = [
        s for s in statefulsets if "arc-hooks.dev/graceful-stop" in s["metadata"]["annotations"]
    ]
    assert len(stopping) == 4
    assert all(s["spec"]["replicas"] == 1 for s in stopping)  # waited for, not released

    w.run_to(29 * MINUTE)
    assert len(runner_pods(w)) == 2
    w.run_to(36 * MINUTE)  # scaled back to 4 at 30m: the new runners mount freed claims
    pods = runner_pods(w)
    assert len(pods) == 4
    claims_now = [claims_of(pod) for pod in pods]
    assert set().union(*claims_now) <= first_claims
    assert len(set().union(*claims_now)) == 4  # never two runners on one claim
    assert len(w.store.list_objects("PersistentVolumeClaim")) == 6

    summary = w.finish()
    assert_clean(summary, none_waiting=True, all_completed=True)
    assert summary.jobs.completed == 10


def test_runnerset_autoscaled_from_zero_by_webhooks() -> None:
    w = world("runnerset-autoscaled-from-zero")
    w.begin()
    w.run_to(4 * MINUTE)
    assert runner_pods(w) == []  # nothing before the first queued job
    w.run_to(7 * MINUTE)
    assert runner_pods(w)  # reservations scaled it up from zero
    peak = 0
    for minute in range(8, 60):
        w.run_to(minute * MINUTE)
        peak = max(peak, len(runner_pods(w)))
    assert peak <= 11  # maxReplicas 10, plus one runner on its way out
    w.run_to(85 * MINUTE)
    assert runner_pods(w) == []  # back to zero after the scale-down delay
    claims = w.store.list_objects("PersistentVolumeClaim")
    assert 0 < len(claims) <= 11  # ephemeral runners came and went on a bounded pool

    summary = w.finish()
    assert_clean(summary, none_waiting=True, all_completed=True)
    assert summary.jobs.completed == 40
    assert summary.runners.created > 40  # every job ran on a fresh runner


def test_node_drain_evicts_ten_runners_and_leaks_no_registration() -> None:
    w = world("node-drain-evicts-runners")
    w.begin()
    w.run_to(10 * MINUTE - 1)
    on_node = [
        pod
        for pod in runner_pods(w)
        if pod["spec"].get("nodeName") == "node-1" and not pod["metadata"].get("deletionTimestamp")
    ]
    kinds = Counter(
        "RunnerSet" if "runnerset-name" in pod["metadata"]["labels"] else "RunnerDeployment"
        for pod in on_node
    )
    assert kinds == {"RunnerSet": 5, "RunnerDeployment": 5}
    assert all(w.kubelet.agent("default", p["metadata"]["name"]).job for p in on_node)  # type: ignore[union-attr]

    w.run_to(10 * MINUTE + 30)
    evicted = [p for p in runner_pods(w) if p["metadata"].get("deletionTimestamp")]
    assert len(evicted) == 10
    # The decorator's finalizer holds the RunnerSet pods until their registrations are settled;
    # the RunnerDeployment's Runners settle theirs themselves, so those pods are not held.
    held = {
        "runnerset-name" in p["metadata"]["labels"]
        for p in evicted
        if DECORATOR_FINALIZER in p["metadata"].get("finalizers", [])
    }
    assert held == {True}

    summary = w.finish()
    # the grace period covers the 4-minute jobs
    assert_clean(summary, none_waiting=True, all_completed=True)
    assert summary.jobs.completed == 20


def test_node_drain_with_the_default_grace_period_reports_cut_off_jobs() -> None:
    drain = scenario("node-drain-evicts-runners")
    for obj in drain.objects:  # ARC's defaults: 15 s to finish, killed at 30 s
        spec = obj["spec"]
        template = spec["template"]["spec"]
        template.pop("terminationGracePeriodSeconds")
        template.pop("env", None)
        for container in template.get("containers") or []:
            container.pop("env", None)
    summary = World(drain).run()

    assert summary.jobs.interrupted == 10  # the evicted runners' jobs, reported as cut off
    assert summary.jobs.completed == 10
    assert summary.runners.leaked_registrations == 0  # still nothing left on GitHub
    assert summary.runners.registered_at_end == 0


def test_the_volume_pool_shrinks_back_after_a_github_outage() -> None:
    w = world("runnerset-github-outage")
    w.begin()
    peak = 0
    for minute in range(1, 31):
        w.run_to(minute * MINUTE)
        peak = max(peak, len(w.store.list_objects("PersistentVolumeClaim")))
    # Completed runners waited for GitHub, so their replacements took other slots ...
    assert peak > 8
    # ... and the slots beyond twice the set's size went once they were free.
    claims = w.store.list_objects("PersistentVolumeClaim")
    assert len(claims) == 8
    mounted = set().union(*(claims_of(pod) for pod in runner_pods(w)))
    assert mounted <= {claim["metadata"]["name"] for claim in claims}

    summary = w.finish()
    assert_clean(summary, none_waiting=True, all_completed=True)


def test_spent_registration_secrets_are_not_written_again_at_every_sync() -> None:
    """A started runner's Secret holds nothing: answered as `data: {}`, which the API server
    stores as no `data` at all, Metacontroller's merge found a difference at every RunnerSet
    sync and wrote the Secret again (582 of 602 Secret updates in this scenario changed
    nothing)."""
    w = world("runnerset-scaled-down-while-busy")
    writes: Counter[str] = Counter()
    update = w.store.update

    def counted(obj: dict[str, Any], **options: Any) -> dict[str, Any]:
        before = w.store.get(obj["kind"], obj["metadata"]["namespace"], obj["metadata"]["name"])
        written = update(obj, **options)
        changed = (
            before is None
            or written["metadata"]["resourceVersion"] != before["metadata"]["resourceVersion"]
        )
        writes["changed" if changed else "unchanged"] += 1
        return written

    w.store.update = counted  # type: ignore[method-assign]
    summary = w.run()

    assert_clean(summary, none_waiting=True, all_completed=True)
    assert writes["changed"] > 0
    assert writes["unchanged"] <= writes["changed"] // 10


def test_a_runner_set_turning_over_under_a_backlog_reads_busy() -> None:
    """Found by an independent run: the runners of an ephemeral set turning over together
    registered after the scope's list was read, and busyReplicas fell from 8 to 1 every third
    minute while all 8 were busy."""
    sim = world("runnerset-turnover-busy-count")
    sim.begin()
    seen: list[tuple[int, int]] = []
    for minute in range(10, 26):
        sim.run_to(minute * 60)
        (rs,) = sim.store.list_objects("RunnerSet")
        status = rs.get("status") or {}
        if sim.github.job_summary().waiting:  # a backlog: every runner soon takes a job
            seen.append((status.get("registeredReplicas") or 0, status.get("busyReplicas") or 0))
    sim.run_to(sim.scenario.duration)
    summary = sim.finish()

    assert_clean(summary)
    assert seen
    assert min(busy for _, busy in seen) >= 5, seen
    assert min(registered for registered, _ in seen) >= 7, seen
