"""RunnerReplicaSet and RunnerDeployment hooks over HTTP with Metacontroller-shaped requests."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st
from starlette.testclient import TestClient

from hooks.app import create_app
from hooks.clock import ManualClock, format_time
from hooks.deps import HookDeps
from hooks.github.cached import CachedGitHub
from hooks.github.port import GitHubError, Scope
from hooks.scale_target import MAX_NEW_RUNNERS_PER_SYNC
from tests.hook_app import hook_client, hook_settings
from tests.in_memory_github import InMemoryGitHub

API = "actions.summerwind.dev/v1alpha1"
SPEC = {"organization": "acme", "labels": ["linux"]}


def make_client(clock: ManualClock, **settings: str) -> TestClient:
    """Like conftest's `client`, with settings of a test's own."""
    configured = hook_settings(settings)
    return hook_client(create_app(configured, github=InMemoryGitHub(clock), clock=clock))


def replica_set(
    replicas: int | None = None, *, status: dict[str, Any] | None = None, **spec: Any
) -> dict[str, Any]:
    body: dict[str, Any] = {"template": {"metadata": {"labels": {"team": "ci"}}, "spec": SPEC}}
    if replicas is not None:
        body["replicas"] = replicas
    body.update(spec)
    return {
        "apiVersion": API,
        "kind": "RunnerReplicaSet",
        "metadata": {"name": "pool", "namespace": "default", "uid": "rrs-1", "generation": 1},
        "spec": body,
        "status": status or {},
    }


def runner(
    name: str,
    created: str,
    *,
    online: bool = True,
    busy: bool = False,
    phase: str = "Running",
    terminating: bool = False,
    template_hash: str | None = None,
    sync_time: str | None = None,
) -> dict[str, Any]:
    metadata: dict[str, Any] = {
        "name": name,
        "namespace": "default",
        "uid": f"uid-{name}",
        "creationTimestamp": created,
        "labels": {"runner-template-hash": template_hash} if template_hash else {},
        "annotations": {"actions-runner/sync-time": sync_time} if sync_time else {},
    }
    if terminating:
        metadata["deletionTimestamp"] = created
    return {
        "apiVersion": API,
        "kind": "Runner",
        "metadata": metadata,
        "spec": SPEC,
        "status": {"phase": phase, "ready": phase == "Running", "online": online, "busy": busy},
    }


def sync_set(
    client: TestClient, parent: dict[str, Any], runners: list[dict[str, Any]]
) -> dict[str, Any]:
    children = {f"default/{r['metadata']['name']}": r for r in runners}
    request = {"controller": {}, "parent": parent, "children": {f"Runner.{API}": children}}
    response = client.post("/sync/runnerreplicaset", json=request)
    assert response.status_code == 200, response.text
    answer: dict[str, Any] = response.json()
    return answer


def names(answer: dict[str, Any]) -> list[str]:
    return sorted(child["metadata"]["name"] for child in answer["children"])


# ------------------------------------------------------------ RunnerReplicaSet


def test_replicas_absent_means_one_and_a_retry_gives_the_same_names(client: TestClient) -> None:
    first = sync_set(client, replica_set(), [])
    second = sync_set(client, replica_set(), [])

    assert len(first["children"]) == 1
    assert names(first) == names(second)
    child = first["children"][0]
    assert child["kind"] == "Runner" and child["spec"] == SPEC
    assert child["metadata"]["labels"]["team"] == "ci"
    assert "runner-template-hash" in child["metadata"]["labels"]
    assert "actions-runner/sync-time" in child["metadata"]["annotations"]


def test_names_are_never_reused(client: TestClient, clock: ManualClock) -> None:
    first = sync_set(client, replica_set(2), [])
    created = [c["metadata"]["name"] for c in first["children"]]
    # Both runners went away (deleted, finalized); the recorded counter moves on.
    clock.advance(300)
    later = sync_set(client, replica_set(2, status=first["status"]), [])

    assert first["status"]["nextRunnerIndex"] == 2
    assert set(names(later)).isdisjoint(created)


@pytest.mark.parametrize("counter", [2**53, 2**63, 2**64 - 1])
def test_a_counter_past_any_this_hook_writes_is_not_read(
    client: TestClient, clock: ManualClock, counter: int
) -> None:
    """Found by the hostile-input fuzzer: a counter edited past 2**64, or a Runner named with
    13 base-36 digits, made every sync a 500."""
    first = sync_set(client, replica_set(1), [])
    (made,) = first["children"]
    huge = runner(made["metadata"]["name"][:-1] + "z" * 13, format_time(clock.now()))

    answer = sync_set(client, replica_set(2, status={"nextRunnerIndex": counter}), [huge])

    assert answer["status"]["nextRunnerIndex"] < 2**53
    assert len(answer["children"]) == 2


def test_runners_asked_for_but_not_yet_seen_are_not_asked_for_again(
    client: TestClient, clock: ManualClock
) -> None:
    """Metacontroller's cache of children lags: a sync right after a scale-up may not see the
    Runners it just asked for, though the parent's status already says it did."""
    first = sync_set(client, replica_set(3), [])
    one_seen = [runner(names(first)[0], format_time(clock.now()), online=False, phase="Pending")]

    clock.advance(2)
    stale = sync_set(client, replica_set(3, status=first["status"]), one_seen)
    clock.advance(2)
    larger = sync_set(client, replica_set(5, status=stale["status"]), one_seen)

    assert names(stale) == names(first)[:1]  # nothing new, nothing deleted
    assert stale["status"]["replicas"] == 3
    assert [r["name"] for r in stale["status"]["unobservedRunners"]] == names(first)[1:]
    assert stale["resyncAfterSeconds"] == pytest.approx(58.0)
    assert len(names(larger)) == 3  # the one seen and two more; two are still on their way
    assert set(names(larger)).isdisjoint(names(first)[1:])
    assert larger["status"]["replicas"] == 5


def test_runners_never_seen_are_asked_for_anew_after_a_minute(
    client: TestClient, clock: ManualClock
) -> None:
    first = sync_set(client, replica_set(2), [])
    clock.advance(61)
    later = sync_set(client, replica_set(2, status=first["status"]), [])
    seen = sync_set(client, replica_set(2, status=later["status"]), [])

    assert len(names(later)) == 2 and set(names(later)).isdisjoint(names(first))
    assert "unobservedRunners" not in seen["status"] or [
        r["name"] for r in seen["status"]["unobservedRunners"]
    ] == names(later)


def test_a_new_set_with_the_same_name_uses_new_names(client: TestClient) -> None:
    first = sync_set(client, replica_set(1), [])
    recreated = replica_set(1)
    recreated["metadata"]["uid"] = "rrs-2"
    second = sync_set(client, recreated, [])

    assert names(first) != names(second)


@pytest.mark.parametrize(
    ("replicas", "kept"),
    [
        (3, ["busy-old", "idle-new", "idle-old"]),
        (2, ["busy-old", "idle-old"]),
        (1, ["busy-old"]),
        (0, []),
    ],
)
def test_scale_down_removes_unregistered_then_newest_idle_and_busy_last(
    client: TestClient, replicas: int, kept: list[str]
) -> None:
    runners = [
        runner("busy-old", "2026-01-01T00:00:00Z", busy=True),
        runner("idle-old", "2026-01-01T00:01:00Z"),
        runner("idle-new", "2026-01-01T00:05:00Z"),
        runner("never-registered", "2026-01-01T00:00:30Z", online=False, phase="Pending"),
    ]

    answer = sync_set(client, replica_set(replicas), runners)

    assert names(answer) == sorted(kept)


@pytest.mark.parametrize("phase", ["Pending", "Failed", "Completed", "Succeeded"])
def test_terminating_runners_are_left_alone_and_replaced_once(
    client: TestClient, phase: str
) -> None:
    runners = [
        runner("going", "2026-01-01T00:00:00Z", terminating=True, phase=phase),
        runner("staying", "2026-01-01T00:00:00Z"),
    ]

    answer = sync_set(client, replica_set(2), runners)

    assert "going" not in names(answer)
    assert len(answer["children"]) == 2
    assert answer["status"]["replicas"] == 2


@pytest.mark.parametrize("busy", [True, False])
def test_a_runner_being_removed_while_its_pod_runs_counts_against_replicas(
    client: TestClient, busy: bool
) -> None:
    """Scaled from 3 to 1 while two runners work, then back to 3: the two still finishing
    their jobs count, as ARC counts their running pods, so no more than 3 runners (and
    registrations) exist at once. Once they are gone, they are replaced."""
    staying = runner("staying", "2026-01-01T00:00:00Z")
    leaving = [
        runner(f"leaving-{i}", "2026-01-01T00:00:00Z", terminating=True, busy=busy)
        for i in range(2)
    ]

    while_leaving = sync_set(client, replica_set(3), [staying, *leaving])
    after = sync_set(client, replica_set(3), [staying])

    assert names(while_leaving) == ["staying"]
    assert len(after["children"]) == 3


def test_busy_runners_being_removed_count_as_busy_and_registered(client: TestClient) -> None:
    """Found by a failure scenario: eight busy runners being removed (their reservations had
    expired) read as none busy, and an HRA reading these counts started waiting reservations
    for runners that were not free."""
    staying = runner("staying", "2026-01-01T00:00:00Z", busy=True)
    leaving = [
        runner("leaving-busy", "2026-01-01T00:00:00Z", terminating=True, busy=True),
        runner("leaving-idle", "2026-01-01T00:00:00Z", terminating=True),
    ]

    status = sync_set(client, replica_set(1), [staying, *leaving])["status"]

    assert (status["busyReplicas"], status["registeredReplicas"]) == (2, 2)
    assert status["stoppingReplicas"] == 2


def test_a_runner_being_removed_whose_pod_is_gone_is_replaced(client: TestClient) -> None:
    """Its status keeps the phase last seen, `Running`, while its finalize waits for GitHub
    (a killed runner's registration still assigned its job, or GitHub failing); no pod
    runs, so it counts nothing, as ARC counts pods."""
    podless = runner("podless", "2026-01-01T00:00:00Z", terminating=True, busy=True)
    podless["status"]["ready"] = False

    answer = sync_set(client, replica_set(1), [podless])

    assert len(answer["children"]) == 1 and "podless" not in names(answer)


def test_an_outdated_runner_being_removed_does_not_hold_back_the_new_template(
    client: TestClient,
) -> None:
    going = runner("old", "2026-01-01T00:00:00Z", terminating=True, template_hash="0ld")

    answer = sync_set(client, replica_set(1), [going])

    assert len(answer["children"]) == 1 and "old" not in names(answer)


def test_completed_ephemeral_runner_is_removed_and_replaced(client: TestClient) -> None:
    runners = [runner("done", "2026-01-01T00:00:00Z", phase="Completed", online=False)]

    answer = sync_set(client, replica_set(1), runners)

    assert "done" not in names(answer)
    assert len(answer["children"]) == 1


def test_recreation_waits_after_a_webhook_scale_up(client: TestClient, clock: ManualClock) -> None:
    effective = format_time(clock.now())
    clock.advance(60)
    recent = format_time(clock.now())
    runners = [runner("done", recent, phase="Completed", sync_time=recent)]
    parent = replica_set(1, effectiveTime=effective)

    held = sync_set(client, parent, runners)
    clock.advance(600)
    released = sync_set(client, parent, runners)

    assert held["children"] == []
    assert held["resyncAfterSeconds"] == pytest.approx(600)
    assert len(released["children"]) == 1


def test_a_webhook_scale_up_made_in_batches_is_not_held_between_them(
    client: TestClient, clock: ManualClock
) -> None:
    # Found in review: the second batch's runners were held as recreations for 10 minutes
    # (ARC creates a scale-up at once, so its hold never splits one).
    wanted = MAX_NEW_RUNNERS_PER_SYNC + 10
    parent = replica_set(wanted, effectiveTime=format_time(clock.now()), ephemeral=True)
    first = sync_set(client, parent, [])
    assert len(first["children"]) == MAX_NEW_RUNNERS_PER_SYNC
    assert first["status"]["scaleUpRemaining"] == 10
    clock.advance(1)
    created = [
        runner(c["metadata"]["name"], format_time(clock.now()), sync_time=format_time(clock.now()))
        for c in first["children"]
    ]
    second = sync_set(client, {**parent, "status": first["status"]}, created)
    assert len(second["children"]) == wanted
    assert "scaleUpRemaining" not in second["status"]
    # Done: a runner that finished its job is held as ARC holds it.
    clock.advance(60)
    done = [{**created[0], "status": {**created[0]["status"], "phase": "Completed"}}]
    done += created[1:] + [
        runner(c["metadata"]["name"], format_time(clock.now()))
        for c in second["children"][MAX_NEW_RUNNERS_PER_SYNC:]
    ]
    held = sync_set(client, {**parent, "status": second["status"]}, done)
    assert len(held["children"]) == wanted - 1


def test_a_member_that_finishes_between_batches_is_replaced_as_any_recreation(
    client: TestClient, clock: ManualClock
) -> None:
    # Found in review: the next batch replaced it at once, one runner more than the scale-up
    # asked for, which ARC's 10-minute hold after a webhook scale-up exists to prevent.
    wanted = MAX_NEW_RUNNERS_PER_SYNC + 10
    parent = replica_set(wanted, effectiveTime=format_time(clock.now()), ephemeral=True)
    first = sync_set(client, parent, [])
    clock.advance(1)
    now = format_time(clock.now())
    created = [runner(c["metadata"]["name"], now, sync_time=now) for c in first["children"]]
    created[0] = runner(created[0]["metadata"]["name"], now, phase="Completed", sync_time=now)

    second = sync_set(client, {**parent, "status": first["status"]}, created)

    # The 499 still running, and the scale-up's 10 left: the finished one's replacement waits.
    assert len(second["children"]) == wanted - 1
    assert created[0]["metadata"]["name"] not in names(second)
    assert "scaleUpRemaining" not in second["status"]
    assert second["resyncAfterSeconds"] == pytest.approx(600)


def test_a_held_scale_up_larger_than_a_batch_stays_held(
    client: TestClient, clock: ManualClock
) -> None:
    # Found in review: the batch limit was applied before the hold, so a held scale-up of more
    # than a batch recorded a batch under way, and the next sync, a second later, created it.
    effective = format_time(clock.now())
    clock.advance(60)
    recent = format_time(clock.now())
    done = [runner("done", recent, phase="Completed", sync_time=recent)]
    parent = replica_set(MAX_NEW_RUNNERS_PER_SYNC + 100, effectiveTime=effective, ephemeral=True)

    held = sync_set(client, parent, done)
    clock.advance(1)
    again = sync_set(client, {**parent, "status": held["status"]}, done)

    assert held["children"] == [] and again["children"] == []
    assert "scaleUpRemaining" not in held["status"]
    assert again["resyncAfterSeconds"] == pytest.approx(599)


def test_recreation_is_immediate_without_effective_time(client: TestClient) -> None:
    now = format_time(ManualClock().now())
    runners = [runner("done", now, phase="Completed", sync_time=now)]
    assert len(sync_set(client, replica_set(1), runners)["children"]) == 1


def test_outdated_idle_runner_is_replaced_one_at_a_time(client: TestClient) -> None:
    runners = [
        runner("old-a", "2026-01-01T00:00:00Z", template_hash="stale"),
        runner("old-b", "2026-01-01T00:00:00Z", template_hash="stale"),
        runner("old-busy", "2026-01-01T00:00:00Z", template_hash="stale", busy=True),
    ]

    answer = sync_set(client, replica_set(3), runners)

    kept = [n for n in names(answer) if n.startswith("old-")]
    assert kept == ["old-b", "old-busy"]
    assert len(answer["children"]) == 3


def listed_client(clock: ManualClock, github: InMemoryGitHub) -> TestClient:
    """A server whose runner lists are dated, as the cache dates every list in production."""
    settings = hook_settings({})
    cached = CachedGitHub(github, settings, clock)
    return hook_client(create_app(settings, github=cached, clock=clock))


def reported(obj: dict[str, Any], at: str) -> dict[str, Any]:
    """The Runner's status as of a list asked at `at`."""
    return {**obj, "status": {**obj["status"], "lastRegistrationCheckTime": at}}


@pytest.mark.parametrize(
    ("reported_at", "kept"),
    [
        # Status mirrors a list minutes old: the list now says idle-new took a job.
        ("2025-12-31T23:50:00Z", ["idle-new", "idle-old"]),
        # Status reports a newer list than this replica's: status decides (newest idle goes).
        ("2026-01-01T00:00:30Z", ["idle-mid", "idle-old"]),
    ],
)
def test_scale_down_ranks_by_the_scopes_list_where_it_is_newer_than_status(
    clock: ManualClock, reported_at: str, kept: list[str]
) -> None:
    """Found in review: a Runner whose state held a while reports it up to five minutes late;
    a scale-down by status alone stopped runners that had just taken jobs (their jobs waited
    for, each static one's DELETE retried every minute) and kept the idle ones."""
    github = InMemoryGitHub(clock)
    github.register(Scope(organization="acme"), "idle-new", busy=True)
    github.register(Scope(organization="acme"), "idle-mid")
    github.register(Scope(organization="acme"), "idle-old")
    runners = [
        reported(runner(name, created), reported_at)
        for name, created in [
            ("idle-old", "2026-01-01T00:01:00Z"),
            ("idle-mid", "2026-01-01T00:03:00Z"),
            ("idle-new", "2026-01-01T00:05:00Z"),
        ]
    ]
    with listed_client(clock, github) as client:
        answer = sync_set(client, replica_set(2), runners)

    assert names(answer) == kept


def test_an_outdated_runner_the_list_shows_busy_is_not_replaced_yet(clock: ManualClock) -> None:
    github = InMemoryGitHub(clock)
    github.register(Scope(organization="acme"), "old-a", busy=True)
    github.register(Scope(organization="acme"), "old-b")
    runners = [
        reported(
            runner(name, "2026-01-01T00:00:00Z", template_hash="stale"), "2025-12-31T23:50:00Z"
        )
        for name in ("old-a", "old-b")
    ]
    with listed_client(clock, github) as client:
        answer = sync_set(client, replica_set(2), runners)

    assert [n for n in names(answer) if n.startswith("old-")] == ["old-a"]


def test_a_scale_down_without_the_list_ranks_by_status(clock: ManualClock) -> None:
    github = InMemoryGitHub(clock)
    github.list_error = GitHubError("boom", 502)
    runners = [
        runner("idle-old", "2026-01-01T00:01:00Z"),
        runner("idle-new", "2026-01-01T00:05:00Z"),
    ]
    with listed_client(clock, github) as client:
        answer = sync_set(client, replica_set(1), runners)

    assert names(answer) == ["idle-old"]


def test_status_counts(client: TestClient) -> None:
    runners = [
        runner("a", "2026-01-01T00:00:00Z", busy=True),
        runner("b", "2026-01-01T00:00:00Z"),
        runner("c", "2026-01-01T00:00:00Z", online=False, phase="Pending"),
    ]

    status = sync_set(client, replica_set(3), runners)["status"]

    assert status["replicas"] == 3
    assert status["readyReplicas"] == status["availableReplicas"] == 2
    assert status["registeredReplicas"] == 2 and status["busyReplicas"] == 1


def versioned(obj: dict[str, Any], version: str) -> dict[str, Any]:
    return {**obj, "metadata": {**obj["metadata"], "resourceVersion": version}}


def test_a_set_reads_again_only_the_runners_whose_state_changed(
    clock: ManualClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    from hooks.replicaset import controller

    read: list[str] = []
    read_child = controller.read_child

    def counting(obj: dict[str, Any]) -> controller.RunnerChild:
        read.append(obj["metadata"]["name"])
        return read_child(obj)

    monkeypatch.setattr(controller, "read_child", counting)
    warm = make_client(clock)
    created = format_time(clock.now())
    idle = {name: versioned(runner(name, created), "1") for name in ("a", "b", "c")}
    # The same states again, then "b" busy (a new resourceVersion) and "c" gone: the set keeps
    # two, so a busy "b" decides which one goes.
    rounds = [
        list(idle.values()),
        list(idle.values()),
        [idle["a"], versioned(runner("b", created, busy=True), "2"), idle["c"]],
    ]
    answers = [sync_set(warm, replica_set(2), runners) for runners in rounds]

    assert read == ["a", "b", "c", "b"]
    cold = [sync_set(make_client(clock), replica_set(2), runners) for runners in rounds]
    assert answers == cold
    assert names(answers[2]) == ["a", "b"]  # the busy one stays


def test_invalid_template_keeps_runners_and_creates_none(client: TestClient) -> None:
    parent = replica_set(3)
    parent["spec"]["template"]["spec"] = {"labels": ["linux"]}
    runners = [runner("a", "2026-01-01T00:00:00Z")]

    answer = sync_set(client, parent, runners)

    assert names(answer) == ["a"]
    valid = next(c for c in answer["status"]["conditions"] if c["type"] == "Valid")
    assert valid["status"] == "False"
    assert "enterprise, organization or repository" in valid["message"]


# ------------------------------------------------------------ RunnerDeployment


def deployment(replicas: int | None = 2, **spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"template": {"spec": dict(SPEC, **spec)}}
    if replicas is not None:
        body["replicas"] = replicas
    return {
        "apiVersion": API,
        "kind": "RunnerDeployment",
        "metadata": {"name": "web", "namespace": "default", "uid": "rd-1", "generation": 1},
        "spec": body,
    }


def sync_deployment(
    client: TestClient,
    parent: dict[str, Any],
    sets: list[dict[str, Any]] | None = None,
    hras: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    request = {
        "controller": {},
        "parent": parent,
        "children": {f"RunnerReplicaSet.{API}": {s["metadata"]["name"]: s for s in sets or []}},
        "related": {
            f"HorizontalRunnerAutoscaler.{API}": {h["metadata"]["name"]: h for h in hras or []}
        },
    }
    response = client.post("/sync/runnerdeployment", json=request)
    assert response.status_code == 200, response.text
    answer: dict[str, Any] = response.json()
    return answer


def observed(desired: dict[str, Any], *, replicas: int, ready: int) -> dict[str, Any]:
    """A set as Metacontroller shows it back, with the status its own hook wrote."""
    return {
        **desired,
        "status": {"replicas": replicas, "readyReplicas": ready, "availableReplicas": ready},
    }


def hra(name: str, target: str, desired: int) -> dict[str, Any]:
    return {
        "apiVersion": API,
        "kind": "HorizontalRunnerAutoscaler",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"scaleTargetRef": {"name": target}, "minReplicas": 0, "maxReplicas": 10},
        "status": {"desiredReplicas": desired},
    }


def test_new_deployment_gets_one_replica_set(client: TestClient) -> None:
    answer = sync_deployment(client, deployment(2))

    (child,) = answer["children"]
    labels = child["metadata"]["labels"]
    assert child["kind"] == "RunnerReplicaSet"
    assert child["spec"]["replicas"] == 2
    assert labels["runner-deployment-name"] == "web"
    assert child["metadata"]["name"] == "web-" + labels["runner-template-hash"][:5]
    assert child["spec"]["selector"]["matchLabels"] == labels
    assert child["spec"]["template"]["metadata"]["labels"] == labels
    assert answer["status"]["desiredReplicas"] == 2


def test_replicas_absent_means_one(client: TestClient) -> None:
    answer = sync_deployment(client, deployment(None))
    assert answer["children"][0]["spec"]["replicas"] == 1


def test_template_hash_ignores_replicas_and_effective_time_but_not_the_image(
    client: TestClient,
) -> None:
    base = sync_deployment(client, deployment(2))["children"][0]["metadata"]["name"]
    scaled = deployment(7)
    scaled["spec"]["effectiveTime"] = "2026-01-01T00:00:00Z"
    same = sync_deployment(client, scaled)["children"][0]
    changed = sync_deployment(client, deployment(2, image="example/runner:2"))["children"][0]

    assert same["metadata"]["name"] == base
    assert same["spec"]["effectiveTime"] == "2026-01-01T00:00:00Z"
    assert changed["metadata"]["name"] != base


def test_replicas_come_from_the_autoscaler_that_targets_the_deployment(
    client: TestClient,
) -> None:
    hras = [hra("other", "another-deployment", 9), hra("mine", "web", 5)]
    answer = sync_deployment(client, deployment(2), hras=hras)

    assert answer["children"][0]["spec"]["replicas"] == 5
    assert answer["status"]["desiredReplicas"] == 5


@pytest.mark.parametrize("spec_replicas", [None, 2])
def test_a_deleted_autoscaler_leaves_the_deployment_at_the_size_it_gave_for_a_while(
    client: TestClient, clock: ManualClock, spec_replicas: int | None
) -> None:
    """ARC's HRA writes its answer into the deployment's `spec.replicas`, where it stays when
    the HRA is deleted or replaced (found by an ARC conformance check: the pool fell to one
    runner, or to `spec.replicas`, the moment its HRA went). The size holds for ten minutes,
    or until the deployment's own `spec.replicas` changes; then the spec decides (found in
    review: held for good, it could not be undone by applying the same spec again)."""
    parent = deployment(spec_replicas)  # ARC's docs: remove `replicas:` when autoscaling
    scaled = sync_deployment(client, parent, hras=[hra("web-autoscaler", "web", 5)])
    assert scaled["status"]["autoscaled"] == {
        "autoscaler": "web-autoscaler",
        "replicas": 5,
        **({"specReplicas": spec_replicas} if spec_replicas is not None else {}),
    }
    parent["status"] = scaled["status"]  # as Metacontroller writes it
    sets = [observed(scaled["children"][0], replicas=5, ready=5)]

    held = sync_deployment(client, parent, sets, hras=[])  # kubectl delete hra web-autoscaler
    assert held["children"][0]["spec"]["replicas"] == 5
    assert held["status"]["desiredReplicas"] == 5
    assert held["resyncAfterSeconds"] == pytest.approx(600)
    parent["status"] = held["status"]
    # Another HRA not yet answering (a replacement being applied) changes nothing either.
    clock.advance(599)
    unanswered = {**hra("replacement", "web", 0), "status": {}}
    replacing = sync_deployment(client, parent, sets, hras=[unanswered])
    assert replacing["status"]["desiredReplicas"] == 5
    clock.advance(1)
    own = 1 if spec_replicas is None else spec_replicas
    assert sync_deployment(client, parent, sets, hras=[])["status"]["desiredReplicas"] == own

    clock.advance(-600)
    parent["spec"]["replicas"] = 3  # the user sizes it now
    resized = sync_deployment(client, parent, sets, hras=[])
    assert resized["children"][0]["spec"]["replicas"] == 3
    assert "autoscaled" not in resized["status"]
    parent["status"] = resized["status"]
    assert sync_deployment(client, parent, sets, hras=[])["status"]["desiredReplicas"] == 3


def test_a_replica_whose_clock_is_behind_does_not_move_the_hold(
    client: TestClient, clock: ManualClock
) -> None:
    """Found in review: a replica 15 minutes behind rewrote `goneSince` with its own time, and
    the hold ended early on every other replica."""
    ahead = format_time(clock.now() + timedelta(minutes=15))
    parent = deployment(None)
    kept = {"autoscaler": "gone", "replicas": 5, "goneSince": ahead}
    parent["status"] = {"autoscaled": kept}

    answer = sync_deployment(client, parent, hras=[])

    assert answer["status"]["desiredReplicas"] == 5
    assert answer["status"]["autoscaled"]["goneSince"] == ahead


def test_a_kept_size_beyond_int32_is_not_read(client: TestClient) -> None:
    """Found in review: a hand's `status.autoscaled.replicas` of 2**40 sized the set."""
    parent = deployment(2)
    parent["status"] = {"autoscaled": {"autoscaler": "gone", "replicas": 2**40, "specReplicas": 2}}

    assert sync_deployment(client, parent, hras=[])["status"]["desiredReplicas"] == 2


def test_the_size_a_deployment_runs_at_is_arcs_spec_replicas_gauge(client: TestClient) -> None:
    """ARC's `runnerdeployment_spec_replicas` reads `spec.replicas`, which ARC's HRA writes
    (found by an ARC conformance check: dashboards on it went empty)."""
    sync_deployment(client, deployment(2), hras=[hra("web-autoscaler", "web", 5)])

    metrics = client.get("/metrics").text

    assert 'runnerdeployment_spec_replicas{namespace="default",runnerdeployment="web"} 5.0' in (
        metrics
    )


def test_a_deployment_never_autoscaled_follows_its_spec(client: TestClient) -> None:
    answer = sync_deployment(client, deployment(None), hras=[hra("other", "elsewhere", 7)])

    assert answer["status"]["desiredReplicas"] == 1
    assert "autoscaled" not in answer["status"]


def test_rollout_keeps_old_runners_until_the_new_set_is_ready(client: TestClient) -> None:
    old_desired = sync_deployment(client, deployment(2))["children"][0]
    old = observed(old_desired, replicas=2, ready=2)
    new_parent = deployment(2, image="example/runner:2")
    new_desired = sync_deployment(client, new_parent, [old])["children"]

    # Step 1: the new set is created; the old one keeps its replicas.
    assert len(new_desired) == 2
    kept_old = next(c for c in new_desired if c["metadata"]["name"] == old["metadata"]["name"])
    assert kept_old["spec"]["replicas"] == 2
    new = next(c for c in new_desired if c["metadata"]["name"] != old["metadata"]["name"])

    # Step 2: the new set is ready; the old one goes to zero.
    ready = sync_deployment(client, new_parent, [old, observed(new, replicas=2, ready=2)])
    zeroed = next(c for c in ready["children"] if c["metadata"]["name"] == old["metadata"]["name"])
    assert zeroed["spec"]["replicas"] == 0

    # Step 3: the old set reports zero replicas; it is left out, so it is deleted.
    old_at_zero = observed({**old, "spec": {**old["spec"], "replicas": 0}}, replicas=0, ready=0)
    done = sync_deployment(client, new_parent, [old_at_zero, observed(new, replicas=2, ready=2)])
    assert [c["metadata"]["name"] for c in done["children"]] == [new["metadata"]["name"]]
    assert done["status"]["updatedReplicas"] == 2


def test_common_runner_labels_are_appended_and_hashed(clock: ManualClock) -> None:
    with make_client(clock) as plain, make_client(clock, COMMON_RUNNER_LABELS="fast,ssd") as extra:
        without = sync_deployment(plain, deployment(1))["children"][0]
        with_labels = sync_deployment(extra, deployment(1))["children"][0]

    assert with_labels["spec"]["template"]["spec"]["labels"] == ["linux", "fast", "ssd"]
    assert with_labels["metadata"]["name"] != without["metadata"]["name"]


LABELS = st.lists(st.sampled_from(["linux", "Linux", "gpu", "GPU", "x64", "fast"]), max_size=6)


@given(spec_labels=LABELS, common=LABELS)
def test_common_labels_are_added_once_each_whatever_their_case(
    spec_labels: list[str], common: list[str]
) -> None:
    deps = HookDeps(
        InMemoryGitHub(ManualClock()),
        ManualClock(),
        hook_settings({"COMMON_RUNNER_LABELS": ",".join(common)}),
    )

    labels = deps.with_common_labels(spec_labels)

    assert labels[: len(spec_labels)] == spec_labels  # the spec's own, as written
    added = [label.casefold() for label in labels[len(spec_labels) :]]
    assert len(added) == len(set(added))
    assert not set(added) & {label.casefold() for label in spec_labels}
    assert {label.casefold() for label in common} <= {label.casefold() for label in labels}


def test_customize_asks_for_the_autoscalers_of_the_namespace(client: TestClient) -> None:
    response = client.post(
        "/customize/runnerdeployment", json={"controller": {}, "parent": deployment(1)}
    )

    assert response.status_code == 200
    assert response.json() == {
        "relatedResources": [
            {
                "apiVersion": API,
                "resource": "horizontalrunnerautoscalers",
                "labelSelector": {},
                "namespace": "default",
            }
        ]
    }


def test_invalid_deployment_keeps_its_sets(client: TestClient) -> None:
    existing = observed(sync_deployment(client, deployment(2))["children"][0], replicas=2, ready=2)
    broken = deployment(2)
    broken["spec"]["template"]["spec"] = {"organization": "a", "repository": "a/b"}

    answer = sync_deployment(client, broken, [existing])

    assert [c["metadata"]["name"] for c in answer["children"]] == [existing["metadata"]["name"]]
    valid = next(c for c in answer["status"]["conditions"] if c["type"] == "Valid")
    assert valid["status"] == "False"


@pytest.mark.parametrize(("length", "fits"), [(230, True), (231, False), (235, False)])
def test_a_set_named_too_long_for_its_runners_ephemeral_claims_is_invalid(
    client: TestClient, length: int, fits: bool
) -> None:
    # Its Runners are named `<set>-<tag><counter>` (18 more characters), their pods after
    # them, and the work volume's claim `<pod>-work`: at most 253 characters.
    claim = {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}
    spec = {**SPEC, "containerMode": "kubernetes", "workVolumeClaimTemplate": claim}
    parent = replica_set(2)
    parent["metadata"]["name"] = "p" * length
    parent["spec"]["template"]["spec"] = spec
    answer = sync_set(client, parent, [])
    valid = {c["type"]: c for c in answer["status"]["conditions"]}["Valid"]
    assert valid["status"] == ("True" if fits else "False")
    assert len(answer["children"]) == (2 if fits else 0)


@pytest.mark.parametrize("huge", [2**31, 2**64 - 1, 2**70])
def test_a_count_beyond_what_kubernetes_holds_is_not_summed(client: TestClient, huge: int) -> None:
    # Found by the hostile-input fuzzer: two sets' readyReplicas summed past what JSON
    # numbers hold, and the deployment's answer could not be written (a 500).
    (desired,) = sync_deployment(client, deployment(2))["children"]
    first = observed(desired, replicas=2, ready=huge)
    second = {**first, "metadata": {**first["metadata"], "name": "web-other"}}
    answer = sync_deployment(client, deployment(2), [first, second])
    assert answer["status"]["readyReplicas"] == 0  # unreadable: none ready


@pytest.mark.parametrize(("name", "asks_for_runners"), [("ci", True), ("x" * 67, False)])
def test_a_deployment_being_deleted_with_a_scale_set_asks_for_runners_by_a_valid_selector(
    client: TestClient, name: str, asks_for_runners: bool
) -> None:
    """Found by a hostile probe: a name past 63 characters (an invalid deployment, which never
    made runners) gave a selector Metacontroller refuses, so its finalize was never called."""
    parent = deployment(1)
    parent["metadata"].update(name=name, deletionTimestamp="2026-01-01T00:00:00Z")
    parent["metadata"]["annotations"] = {"arc-hooks.dev/scale-set": "octo"}

    response = client.post("/customize/runnerdeployment", json={"controller": {}, "parent": parent})

    assert response.status_code == 200
    resources = [rule["resource"] for rule in response.json()["relatedResources"]]
    assert ("runners" in resources) is asks_for_runners


@pytest.mark.parametrize(("value_bytes", "batch"), [(0, MAX_NEW_RUNNERS_PER_SYNC), (10**6, 8)])
def test_a_batch_of_new_runners_is_bounded_by_bytes_too(
    client: TestClient, value_bytes: int, batch: int
) -> None:
    """Found by a hostile probe: 500 Runners of a template carrying a 1 MB env value made an
    answer of 500 MB; a quarter of HOOK_MAX_REQUEST_BYTES (32 MiB) holds 8 of them."""
    env = [{"name": "BIG", "value": "x" * value_bytes}]
    parent = replica_set(1000)
    parent["spec"]["template"]["spec"] = {**SPEC, "env": env}

    answer = sync_set(client, parent, [])

    assert len(answer["children"]) == batch
    assert len(orjson.dumps(answer)) < 32 * 2**20 // 4 + 2**20


def as_served(child: dict[str, Any], index: int) -> dict[str, Any]:
    """A Runner the set made, as the API server serves it back: with Metacontroller's
    last-applied copy of itself, a uid and a status."""
    metadata = child["metadata"]
    annotations = {
        **(metadata.get("annotations") or {}),
        "metacontroller.k8s.io/last-applied-configuration": orjson.dumps(child).decode(),
    }
    return {
        **child,
        "metadata": {
            **metadata,
            "namespace": "default",
            "uid": f"runner-uid-{index}",
            "creationTimestamp": "2026-01-01T00:00:00Z",
            "annotations": annotations,
        },
        "status": {"phase": "Running"},
    }


def test_a_set_is_not_grown_past_what_its_sync_requests_can_carry(client: TestClient) -> None:
    """Found in review: each Runner comes back in the set's request, with Metacontroller's
    last-applied copy; past HOOK_MAX_REQUEST_BYTES every sync got 413, and the set could
    neither scale nor replace anything, nor be deleted, saying nothing. Runners of 1 MB weigh
    2 MB there: 13 fit nine tenths of 32 MiB."""
    parent = replica_set(1000)
    parent["spec"]["template"]["spec"] = {**SPEC, "env": [{"name": "BIG", "value": "x" * 10**6}]}
    answers = [sync_set(client, parent, [])]
    for _ in range(2):
        observed = [as_served(c, i) for i, c in enumerate(answers[-1]["children"])]
        answers.append(sync_set(client, {**parent, "status": answers[-1]["status"]}, observed))

    assert [len(a["children"]) for a in answers] == [8, 13, 13]
    scaling = next(c for c in answers[-1]["status"]["conditions"] if c["type"] == "Scaling")
    assert (scaling["status"], scaling["reason"]) == ("False", "RequestLimit")
    assert "13 runners" in scaling["message"] and "HOOK_MAX_REQUEST_BYTES" in scaling["message"]
    request_bytes = sum(len(orjson.dumps(as_served(c, 0))) for c in answers[-1]["children"])
    assert request_bytes < 32 * 2**20


@pytest.mark.parametrize("asked_by", ["setting", "annotation"])
def test_a_jit_template_of_static_runners_is_invalid_on_the_sets_themselves(
    clock: ManualClock, asked_by: str
) -> None:
    """Found by an independent run: with JIT registration, `ephemeral: false` made Runners that
    each said why they never started, while their RunnerDeployment and RunnerReplicaSet said
    Valid and no job ran."""
    env = {"RUNNER_REGISTRATION_MODE": "jit"} if asked_by == "setting" else {}
    rd = deployment(2, ephemeral=False)
    rrs = replica_set(2, ephemeral=False)
    rrs["spec"]["template"]["spec"] = {**SPEC, "ephemeral": False}
    if asked_by == "annotation":
        jit = {"arc-hooks.dev/registration": "jit"}
        rd["spec"]["template"]["metadata"] = {"annotations": jit}
        rrs["spec"]["template"]["metadata"]["annotations"] = jit

    with make_client(clock, **env) as client:
        answers = [sync_deployment(client, rd), sync_set(client, rrs, [])]

    for answer in answers:
        valid = next(c for c in answer["status"]["conditions"] if c["type"] == "Valid")
        assert valid["status"] == "False"
        assert "spec.ephemeral must not be false" in valid["message"]
        assert answer["children"] == []


def test_a_set_that_has_runners_still_scales_them_down_whatever_jits_rules_say(
    clock: ManualClock,
) -> None:
    """Found in review: switching the server to JIT made every set of static runners invalid,
    and an invalid set keeps its Runners as they are: a rollout's old set never went to zero
    and its token-registered runners took jobs for good."""
    old = replica_set(0, ephemeral=False)
    old["spec"]["template"]["spec"] = {**SPEC, "ephemeral": False}
    runners = [runner(f"pool-{i}", "2026-01-01T00:00:00Z") for i in range(3)]

    with make_client(clock, RUNNER_REGISTRATION_MODE="jit") as client:
        answer = sync_set(client, old, runners)

    assert answer["children"] == []  # scaled down to its zero replicas
    valid = next(c for c in answer["status"]["conditions"] if c["type"] == "Valid")
    assert valid["status"] == "True"


def test_two_autoscalers_on_one_deployment_are_named_in_its_status(client: TestClient) -> None:
    """Found by an independent run: the first HRA by name sized the deployment and the other
    said ScalingActive with its own answer; nothing said which one counted."""
    both = sync_deployment(
        client, deployment(1), hras=[hra("b-high", "web", 6), hra("a-low", "web", 2)]
    )

    (rs,) = both["children"]
    assert rs["spec"]["replicas"] == 2
    autoscaled = next(c for c in both["status"]["conditions"] if c["type"] == "Autoscaled")
    assert (autoscaled["status"], autoscaled["reason"]) == ("False", "ConflictingAutoscalers")
    assert "a-low sizes it; b-high do not" in autoscaled["message"]

    parent = {**deployment(1), "status": both["status"]}
    one = sync_deployment(client, parent, hras=[hra("b-high", "web", 6)])
    autoscaled = next(c for c in one["status"]["conditions"] if c["type"] == "Autoscaled")
    assert autoscaled["status"] == "True"

    plain = sync_deployment(client, deployment(1), hras=[hra("b-high", "web", 6)])
    assert all(c["type"] != "Autoscaled" for c in plain["status"]["conditions"])


def test_a_set_that_has_runners_creates_none_jits_rules_would_stop(clock: ManualClock) -> None:
    """Found in review: under a JIT server an old static set scaled up into Runners that each
    refused to start."""
    old = replica_set(4, ephemeral=False)
    old["spec"]["template"]["spec"] = {**SPEC, "ephemeral": False}

    with make_client(clock, RUNNER_REGISTRATION_MODE="jit") as client:
        answer = sync_set(client, old, [runner("pool-0", "2026-01-01T00:00:00Z")])

    assert [c["metadata"]["name"] for c in answer["children"]] == ["pool-0"]
    scaling = next(c for c in answer["status"]["conditions"] if c["type"] == "Scaling")
    assert (scaling["status"], scaling["reason"]) == ("False", "InvalidSpec")
    assert "spec.ephemeral must not be false" in scaling["message"]


def test_a_deployment_edited_to_what_jit_cannot_run_says_so_and_keeps_its_sets(
    clock: ManualClock,
) -> None:
    """Found in review: a deployment that had a set said Valid while its new set, of a template
    its Runners could not start with, waited for good."""
    with make_client(clock, RUNNER_REGISTRATION_MODE="jit") as client:
        first = sync_deployment(client, deployment(2))
        (existing,) = first["children"]
        edited = deployment(2, ephemeral=False)
        answer = sync_deployment(client, edited, [observed(existing, replicas=2, ready=2)])

    valid = next(c for c in answer["status"]["conditions"] if c["type"] == "Valid")
    assert valid["status"] == "False" and "spec.ephemeral must not be false" in valid["message"]
    assert [c["metadata"]["name"] for c in answer["children"]] == [existing["metadata"]["name"]]
