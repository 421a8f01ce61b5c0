"""JIT registration for RunnerSets (`arc-hooks.dev/registration: jit`): each runner gets a
just-in-time config of its own, so no pod of the set ever holds a token that could register
other runners. Over HTTP with the RunnerSet driver, and in the simulated world."""

from __future__ import annotations

import json
from typing import Any

from starlette.testclient import TestClient

from hooks.app import create_app
from hooks.clock import ManualClock, format_time
from hooks.runner.registration import jit_labels
from hooks.runnerset.decide import MAX_NEW_JIT_RUNNERS_PER_SYNC
from hooks.scale_target import NEXT_BATCH_SECONDS
from tests import sim_scenarios
from tests.hook_app import hook_client, hook_settings
from tests.in_memory_github import InMemoryGitHub, rate_limited
from tests.test_runnerset_hooks import (
    ORG,
    RunnerSetWorld,
    condition,
    env_of,
    of_kind,
    runner_running,
    runner_set,
    runner_terminated,
    validate,
)

JIT = {"arc-hooks.dev/registration": "jit"}


def jit_world(client: TestClient, github: InMemoryGitHub, clock: ManualClock) -> RunnerSetWorld:
    parent = runner_set(replicas=0)
    parent["metadata"]["annotations"] = dict(JIT)
    return RunnerSetWorld(client, github, clock, parent)


def test_each_new_runner_gets_its_own_jit_config_and_no_token(
    client: TestClient, github: InMemoryGitHub, clock: ManualClock
) -> None:
    world = jit_world(client, github, clock)
    world.scale(3)
    answer = world.sync()

    assert github.count("registration_token") == 0
    assert github.count("generate_jit_config") == 3
    statefulsets = of_kind(answer, "StatefulSet")
    configs = set()
    for name, sts in statefulsets.items():
        validate(sts)
        env = env_of(sts)
        assert "RUNNER_TOKEN" not in env
        assert env["ACTIONS_RUNNER_INPUT_JITCONFIG"]["valueFrom"]["secretKeyRef"] == {
            "name": f"{name}-registration",
            "key": "jitConfig",
        }
        data = world.secret_data(name)
        assert data is not None and "token" not in data
        configs.add(data["jitConfig"])
        registered = next(r for r in github.runners[ORG] if r.name == f"{name}-0")
        assert data["runnerId"] == str(registered.id)
    assert len(configs) == 3


def test_a_started_runner_keeps_its_id_but_not_its_config(
    client: TestClient, github: InMemoryGitHub, clock: ManualClock
) -> None:
    world = jit_world(client, github, clock)
    world.scale(1)
    world.sync()
    (name,) = world.statefulsets()
    world.set_runner(name, runner_running(format_time(clock.now())))
    world.settle()

    data = world.secret_data(name)
    assert data is not None
    assert "jitConfig" not in data  # a restarted container cannot use it again
    assert "runnerId" in data  # the exact registration to remove later


def test_scale_down_of_a_jit_runner_removes_its_registration_by_id(
    client: TestClient, github: InMemoryGitHub, clock: ManualClock
) -> None:
    world = jit_world(client, github, clock)
    world.scale(1)
    world.sync()
    world.scale(0)
    world.settle(4)
    assert world.runners() == []
    assert not github.runners.get(ORG)  # nothing left registered


def test_a_name_already_registered_is_removed_then_generated_again(
    client: TestClient, github: InMemoryGitHub, clock: ManualClock
) -> None:
    world = jit_world(client, github, clock)
    world.scale(1)
    first = world.sync()
    (name,) = of_kind(first, "StatefulSet")
    # The answer was lost: Metacontroller applied nothing, the registration stayed.
    world.children.clear()
    world.pods.clear()
    world.parent["status"] = {}
    answer = world.sync()

    assert of_kind(answer, "StatefulSet") == {}
    assert condition(answer["status"], "Scaling")["reason"] == "NameConflict"
    assert not any(r.name == f"{name}-0" for r in github.runners.get(ORG, []))
    again = world.sync()
    assert list(of_kind(again, "StatefulSet")) == [name]


def test_jit_runner_sets_must_be_ephemeral(
    client: TestClient, github: InMemoryGitHub, clock: ManualClock
) -> None:
    world = jit_world(client, github, clock)
    world.change_spec(ephemeral=False)
    world.scale(1)
    answer = world.sync()
    assert condition(answer["status"], "Valid")["status"] == "False"
    assert "ephemeral" in condition(answer["status"], "Valid")["message"]
    assert github.count("generate_jit_config") == 0


def test_jit_labels_carry_the_implicit_ones_config_sh_would_add() -> None:
    assert jit_labels(["linux", "gpu"], {}) == ["self-hosted", "Linux", "gpu"]
    assert jit_labels(["Self-Hosted", "big"], {"kubernetes.io/arch": "arm64"}) == [
        "self-hosted",
        "Linux",
        "ARM64",
        "big",
    ]


def test_scenario_no_object_ever_holds_a_registration_token() -> None:
    """scenarios/runnerset-jit-registration.yaml, checked on every write to the API server: no
    Secret of the runners' namespace has a token (the hook server's own bearer token lives
    elsewhere), no pod or StatefulSet names one, GitHub issued none; every job runs."""
    world = sim_scenarios.world("runnerset-jit-registration")
    seen_configs: set[str] = set()

    def check(_event: str, obj: dict[str, Any]) -> None:
        kind, metadata = obj.get("kind"), obj["metadata"]
        if kind == "Secret" and metadata.get("namespace") == "default":
            data = obj.get("data") or {}
            assert "token" not in data, metadata["name"]
            if "jitConfig" in data:
                seen_configs.add(metadata["name"])
        elif kind in ("Pod", "StatefulSet"):
            assert "RUNNER_TOKEN" not in json.dumps(obj)

    world.store.watch(check)
    summary = world.run()

    assert summary.invariants.hold(), summary.table()
    assert summary.jobs.completed == summary.jobs.submitted == 24
    assert len(seen_configs) >= 24  # a config of its own for every runner that ran a job
    token_calls = [r for r in world.github.requests if r.route and "registration-token" in r.route]
    assert token_calls == []


def test_a_secret_in_view_before_its_statefulset_is_kept(
    client: TestClient, github: InMemoryGitHub, clock: ManualClock
) -> None:
    """Children reach Metacontroller's informer one by one: a sync may see a new runner's
    Secret and not yet its StatefulSet. Left out of the answer, the Secret would be deleted,
    and the pod, which reads its JIT config from it, could never start."""
    world = jit_world(client, github, clock)
    world.scale(1)
    world.sync()
    (name,) = world.statefulsets()
    world.children.pop(("StatefulSet", name))
    world.pods.clear()
    answer = world.sync()

    secrets = of_kind(answer, "Secret")
    assert f"{name}-registration" in secrets
    assert "jitConfig" in (world.secret_data(name) or {})
    assert github.count("generate_jit_config") == 1  # not registered a second time


def test_a_jit_config_deleted_by_hand_replaces_the_runner_once_it_had_time_to_show_up(
    client: TestClient, github: InMemoryGitHub, clock: ManualClock
) -> None:
    world = jit_world(client, github, clock)
    world.scale(1)
    world.sync()
    (name,) = world.statefulsets()
    world.children.pop(("Secret", f"{name}-registration"))
    stop = "arc-hooks.dev/graceful-stop"

    world.sync()  # not seen yet: it may still be on its way to the informer
    assert stop not in world.statefulsets()[name]["metadata"]["annotations"]
    clock.advance(61)
    world.sync()
    recorded = json.loads(world.statefulsets()[name]["metadata"]["annotations"][stop])
    assert recorded["reason"] == "RegistrationLost"


def test_a_large_jit_scale_up_grows_a_batch_a_sync_with_nothing_left_unused_on_github(
    client: TestClient, github: InMemoryGitHub, clock: ManualClock
) -> None:
    # Each JIT runner is a GitHub call inside the sync: 98 at once had ended the sync in a
    # 500 after registering 63 runners no StatefulSet would ever use.
    world = jit_world(client, github, clock)
    world.scale(100)
    answer = world.sync()

    assert len(of_kind(answer, "StatefulSet")) == MAX_NEW_JIT_RUNNERS_PER_SYNC
    assert github.count("generate_jit_config") == MAX_NEW_JIT_RUNNERS_PER_SYNC
    assert answer["resyncAfterSeconds"] == NEXT_BATCH_SECONDS
    syncs = 1
    while len(world.statefulsets()) < 100:
        world.sync()
        syncs += 1
    assert syncs == -(-100 // MAX_NEW_JIT_RUNNERS_PER_SYNC)
    registered = {r.name for r in github.runners[ORG]}
    assert registered == {f"{name}-0" for name in world.statefulsets()}
    assert github.count("generate_jit_config") == 100  # no config generated twice


def test_a_large_jit_scale_down_is_answered(
    client: TestClient, github: InMemoryGitHub, clock: ManualClock
) -> None:
    world = jit_world(client, github, clock)
    world.scale(80)
    world.settle(6)
    for name in world.statefulsets():
        world.start(name, register=False)  # registered by its JIT config already
    world.sync()
    world.scale(0)
    world.settle(6)
    assert world.runners() == []
    assert not github.runners.get(ORG)


def test_a_webhook_scale_up_made_in_batches_is_not_held_between_them(
    client: TestClient, github: InMemoryGitHub, clock: ManualClock
) -> None:
    # Found in review: after the first batch, the rest was held 10 minutes as recreations of
    # ephemeral runners (ARC #1180's delay, which applies to runners that finished a job).
    world = jit_world(client, github, clock)
    world.change_spec(effectiveTime=format_time(clock.now()))
    world.scale(40)
    counts = []
    for _ in range(4):
        world.sync()
        counts.append(len(world.statefulsets()))
        clock.advance(1)
    assert counts == [16, 32, 40, 40]
    assert "scaleUpRemaining" not in world.parent["status"]


def test_a_member_that_finishes_between_batches_is_replaced_as_any_recreation(
    client: TestClient, github: InMemoryGitHub, clock: ManualClock
) -> None:
    # Found in review: the next batch replaced it at once, one runner more than the scale-up
    # asked for, which ARC's 10-minute hold after a webhook scale-up exists to prevent.
    world = jit_world(client, github, clock)
    world.change_spec(effectiveTime=format_time(clock.now()))
    world.scale(40)
    clock.advance(1)  # created after the scale-up was asked for: ARC's hold then applies
    world.sync()
    first = sorted(world.statefulsets())[0]
    world.start(first, register=False)  # registered by its JIT config already
    clock.advance(1)
    world.set_runner(first, runner_terminated(0, format_time(clock.now())))
    for _ in range(6):
        world.sync()
        clock.advance(1)

    assert github.count("generate_jit_config") == 40  # the scale-up's 40, no 41st
    assert first not in world.statefulsets()
    assert len(world.statefulsets()) == 39
    assert "scaleUpRemaining" not in world.parent["status"]
    # Its replacement waits for the hold, as any recreation after a webhook scale-up does.
    clock.advance(600)
    world.settle(3)
    assert len(world.statefulsets()) == 40


def test_the_rest_of_a_scale_up_waits_for_the_rate_limit_not_for_a_next_batch(
    client: TestClient, github: InMemoryGitHub, clock: ManualClock
) -> None:
    # Found by an independent run: with a refused config's runner left for later
    # (`scaleUpRemaining`) and another member finished meanwhile, each sync asked to be synced
    # again a second later for a next batch, and asked GitHub for a config again: 682 refused
    # calls in a 12-minute rate limit.
    world = jit_world(client, github, clock)
    world.scale(3)
    world.settle(3)
    for name in world.statefulsets():
        world.start(name, register=False)  # registered by its JIT config already
    world.sync()
    github.jit_error = rate_limited(600)
    resyncs = []
    for name in sorted(world.statefulsets())[:2]:  # two finish, one after the other
        clock.advance(30)
        world.set_runner(name, runner_terminated(0, format_time(clock.now())))
        for _ in range(4):
            resyncs.append(world.sync()["resyncAfterSeconds"])
            clock.advance(1)
    assert len(world.statefulsets()) == 1
    assert world.parent["status"]["scaleUpRemaining"] == 1  # the first one's replacement
    assert min(resyncs[-3:]) > NEXT_BATCH_SECONDS  # the refusal's wait, not a next batch's

    github.jit_error = None
    clock.advance(600)
    world.settle(3)
    assert len(world.statefulsets()) == 3
    assert "scaleUpRemaining" not in world.parent["status"]


def test_jit_runners_register_with_the_common_runner_labels(
    github: InMemoryGitHub, clock: ManualClock
) -> None:
    app = create_app(hook_settings({"COMMON_RUNNER_LABELS": "gpu"}), github=github, clock=clock)
    with hook_client(app) as client:
        world = jit_world(client, github, clock)
        world.scale(1)
        world.sync()

    (registered,) = github.runners[ORG]
    assert "gpu" in registered.labels
