"""The emulator's unfriendly world: workers whose syncs wait for hook calls in virtual time,
hook latency and the timeout, informer lag, write conflicts, overlapping calls and restarting
replicas; the scenario knobs for them and `simulate --stress`."""

from __future__ import annotations

import asyncio
import itertools
import json
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

import hooks.__main__ as cli
from arc_sim.events import EventLoop
from arc_sim.metacontroller import AsgiTransport, MetacontrollerEmulator, ReplicaFault
from arc_sim.metacontroller.client_limit import ClientRateLimit
from arc_sim.metacontroller.conflicts import OTHER_WRITE_SEEN_AFTER
from arc_sim.metacontroller.realism import NO_DELAY, Delay, Realism
from arc_sim.metacontroller.transport import HookPost, HookUnreachable, count_github_call
from arc_sim.scenario import ScenarioError, load_scenario, stressed
from arc_sim.store import ObjectStore
from hooks.clock import ManualClock
from tests.sim_scenarios import assert_clean, scenario_path
from tests.test_sim_metacontroller import (
    FIXTURES,
    WIDGETS,
    ScriptedHooks,
    answer,
    composite,
    config_map,
    decorator,
    widget,
)

FIXED_LATENCY = 0.25


def realism(**changes: Any) -> Realism:
    """The friendly world with `changes` (e.g. a fixed latency), calls interleaved."""
    base: dict[str, Any] = {
        "workers": 5,
        "concurrency": "interleaved",
        "hook_overhead": NO_DELAY,
        "github_call_seconds": 0.0,
        "payload_seconds_per_megabyte": 0.0,
        "informer_lag": NO_DELAY,
        "conflict_rate": 0.0,
        "seed": 3,
    }
    return Realism(**{**base, **changes})


class Sim:
    def __init__(self, knobs: Realism, *, replicas: int = 1) -> None:
        self.clock = ManualClock()
        self.loop = EventLoop(self.clock, seed=7)
        self.store = ObjectStore(self.clock)
        self.hooks = ScriptedHooks(self.clock)
        self.transport = AsgiTransport(
            [self.hooks.app] * replicas, random.Random(3), clock=self.clock
        )
        self.emulator = MetacontrollerEmulator(
            self.store, self.loop, self.transport, sync_seconds=0.0, realism=knobs
        )
        self.emulator.load_directory(FIXTURES / "crds.yaml")

    def start(self, *controllers: dict[str, Any]) -> None:
        self.emulator.load_manifests(controllers)
        self.emulator.start()

    def status(self, name: str = "w1") -> dict[str, Any]:
        found = self.store.get("Widget", "default", name)
        assert found is not None
        return found.get("status") or {}


@pytest.fixture
def closing() -> Iterator[list[Sim]]:
    sims: list[Sim] = []
    yield sims
    for sim in sims:
        sim.emulator.runner.cancel_all()
        sim.transport.close()


def sim(closing: list[Sim], knobs: Realism, **kwargs: Any) -> Sim:
    built = Sim(knobs, **kwargs)
    closing.append(built)
    return built


# --------------------------------------------------------------------------- distributions


@given(
    median=st.floats(0, 10),
    spread=st.floats(0, 3),
    tail_rate=st.floats(0, 1),
    low=st.floats(0, 5),
    extra=st.floats(0, 5),
    seed=st.integers(0, 2**32),
)
def test_a_delay_is_never_negative_and_a_tail_draw_stays_in_the_tail(
    median: float, spread: float, tail_rate: float, low: float, extra: float, seed: int
) -> None:
    delay = Delay(median, spread, tail_rate, (low, low + extra))
    rng = random.Random(seed)
    for _ in range(20):
        value = delay.draw(rng)
        assert value >= 0
        if median == 0 and tail_rate == 1:
            assert low <= value <= low + extra
    if delay.never:
        assert delay.draw(rng) == 0


def test_the_same_seed_draws_the_same_delays() -> None:
    delay = Delay(0.03, 0.8, 0.1, (0.5, 3.0))
    first = [delay.draw(random.Random(5)) for _ in range(3)]
    assert first == [delay.draw(random.Random(5)) for _ in range(3)]
    assert len({delay.draw(random.Random(seed)) for seed in range(50)}) > 40


# --------------------------------------------------------------------------- hook latency


def test_a_sync_writes_its_status_only_once_the_hook_answered_in_virtual_time(
    closing: list[Sim],
) -> None:
    world = sim(closing, realism(hook_overhead=Delay(median=FIXED_LATENCY)))
    world.hooks.on("/sync", lambda request: answer(status={"seen": "yes"}))
    world.start(composite())
    world.store.create(widget())
    world.loop.run_for(FIXED_LATENCY * 0.9)
    assert world.hooks.calls("/sync"), "the call was made at once"
    assert world.status().get("seen") is None, "the answer is not back yet"
    world.loop.run_for(FIXED_LATENCY * 0.2)
    assert world.status().get("seen") == "yes"
    assert world.emulator.stats.max_hook_latency == pytest.approx(FIXED_LATENCY)


def test_github_calls_made_while_answering_make_the_call_slower(closing: list[Sim]) -> None:
    world = sim(closing, realism(github_call_seconds=0.5))

    def sync(request: dict[str, Any]) -> Any:
        for _ in range(3):
            count_github_call()
        return answer(status={"seen": "yes"})

    world.hooks.on("/sync", sync)
    world.start(composite())
    world.store.create(widget())
    world.loop.run_for(1.4)
    assert world.status().get("seen") is None
    world.loop.run_for(0.2)
    assert world.status().get("seen") == "yes"


def test_a_large_request_and_answer_make_the_call_slower(closing: list[Sim]) -> None:
    # A parent with thousands of children is not synced a hundred times a second: its JSON is
    # encoded and decoded on both sides.
    world = sim(closing, realism(payload_seconds_per_megabyte=1.0))
    bulk = "x" * 400_000

    world.hooks.on("/sync", lambda request: answer(status={"seen": "yes", "bulk": bulk}))
    world.start(composite())
    world.store.create(widget())
    world.loop.run_for(0.39)
    assert world.status().get("seen") is None, "0.4 MB of answer take 0.4 s"
    world.loop.run_for(0.05)
    assert world.status().get("seen") == "yes"
    world.loop.run_for(1.0)
    # The status write syncs again, and that request carries the 0.4 MB status as well.
    assert world.emulator.stats.max_hook_latency == pytest.approx(0.8, abs=0.01)


def test_a_call_slower_than_the_timeout_fails_after_the_timeout_with_its_side_effects_done(
    closing: list[Sim],
) -> None:
    world = sim(closing, realism(github_call_seconds=1.0))
    side_effects: list[float] = []

    def slow(request: dict[str, Any]) -> Any:
        side_effects.append(world.loop.clock.now().timestamp())
        for _ in range(11):  # 11 s > the 10 s timeout
            count_github_call()
        return answer(status={"seen": "yes"})

    world.hooks.on("/sync", slow)
    world.start(composite())
    world.store.create(widget())
    world.loop.run_for(9.9)
    assert world.emulator.stats.errors["timeout"] == 0
    world.loop.run_for(0.2)
    stats = world.emulator.stats
    assert stats.errors["timeout"] == 1
    assert stats.timeouts_exceeded == len(side_effects), "every call was too slow"
    assert stats.injected_timeouts == 0
    assert world.status().get("seen") is None, "a timed-out answer writes nothing"
    world.loop.run_for(30)
    assert len(side_effects) > 2, "retried with backoff, the side effects repeated"
    assert world.status().get("seen") is None


def test_a_broken_replica_times_out_after_the_timeout_and_is_not_counted_as_too_slow(
    closing: list[Sim],
) -> None:
    world = sim(closing, realism(hook_overhead=Delay(median=0.01)))
    world.hooks.on("/sync", lambda request: answer(status={"seen": "yes"}))
    world.transport.break_replica(0, ReplicaFault("timeout"))
    world.start(composite())
    world.store.create(widget())
    world.loop.run_for(9.9)
    assert world.emulator.stats.injected_timeouts == 1
    assert world.emulator.stats.errors["timeout"] == 0, "the worker waits the whole timeout"
    world.loop.run_for(0.2)
    assert world.emulator.stats.errors["timeout"] == 1
    assert world.emulator.stats.timeouts_exceeded == 0


def test_a_worker_is_busy_while_its_call_is_in_flight(closing: list[Sim]) -> None:
    world = sim(closing, realism(workers=1, hook_overhead=Delay(median=1.0)))
    world.hooks.on("/sync", lambda request: answer())
    world.start(composite())
    world.store.create(widget("w1"))
    world.store.create(widget("w2"))
    world.loop.run_for(0.5)
    assert len(world.hooks.calls("/sync")) == 1
    world.loop.run_for(1.0)
    assert len(world.hooks.calls("/sync")) == 2
    assert world.hooks.call_times("/sync") == [0.0, 1.0]


def test_calls_of_one_instant_overlap_in_the_hook_server(closing: list[Sim]) -> None:
    world = sim(closing, realism(hook_overhead=Delay(median=0.1)))
    world.hooks.on("/sync", lambda request: answer())
    world.start(composite())
    for index in range(4):
        world.store.create(widget(f"w{index}"))
    world.loop.run_for(1)
    assert world.emulator.stats.max_concurrent_calls == 4
    assert world.hooks.call_times("/sync")[:4] == [0.0] * 4


def test_one_parent_is_never_synced_by_two_workers_at_once(closing: list[Sim]) -> None:
    world = sim(closing, realism(hook_overhead=Delay(median=0.5)))
    world.hooks.on("/sync", lambda request: answer())
    world.start(composite())
    world.store.create(widget())
    world.loop.run_for(0.1)
    for stamp in range(5):  # changes while the first sync waits for its answer
        world.store.patch_metadata("Widget", "default", "w1", annotations={"n": str(stamp)})
    world.loop.run_for(0.3)
    assert len(world.hooks.calls("/sync")) == 1
    world.loop.run_for(1)
    times = world.hooks.call_times("/sync")
    assert times[:2] == [0.0, 0.5], "the changes bring one more sync, after the first"


def test_syncs_still_waiting_when_a_world_is_dropped_are_unwound(closing: list[Sim]) -> None:
    world = sim(closing, realism(hook_overhead=Delay(median=5.0)))
    world.hooks.on("/sync", lambda request: answer(status={"seen": "yes"}))
    world.start(composite())
    world.store.create(widget())
    world.loop.run_for(1)
    assert world.emulator.runner.in_flight == 1
    world.emulator.runner.cancel_all()
    assert world.emulator.runner.in_flight == 0
    world.loop.run_for(10)  # the answer comes, nobody waits for it any more
    assert world.status().get("seen") is None


# --------------------------------------------------------------------------- informer lag


def test_a_change_reaches_the_controllers_only_after_the_informer_lag(closing: list[Sim]) -> None:
    world = sim(closing, realism(informer_lag=Delay(median=2.0)))
    world.hooks.on("/sync", lambda request: answer())
    world.start(composite())
    world.store.create(widget())
    world.loop.run_for(1.9)
    assert world.emulator.cache.get("Widget", "default", "w1") is None
    assert not world.hooks.calls("/sync")
    world.loop.run_for(0.2)
    assert world.emulator.cache.get("Widget", "default", "w1") is not None
    assert world.hooks.calls("/sync")
    assert world.emulator.stats.max_informer_lag == pytest.approx(2.0)


@given(seed=st.integers(0, 2**16))
def test_events_of_one_watch_reach_the_cache_in_order(seed: int) -> None:
    clock = ManualClock()
    loop = EventLoop(clock)
    store = ObjectStore(clock)
    knobs = realism(
        informer_lag=Delay(median=0.05, spread=2.0, tail_rate=0.3, tail=(0, 3), maximum=5)
    )
    emulator = MetacontrollerEmulator(
        store,
        loop,
        AsgiTransport([Starlette()], random.Random(0)),
        realism=Realism(**{**knobs.__dict__, "seed": seed}),
    )
    emulator.start()
    seen: list[str] = []
    original = emulator.cache.observe

    def observe(event: Any, obj: dict[str, Any]) -> Any:
        seen.append(obj["metadata"]["resourceVersion"])
        return original(event, obj)

    emulator.cache.observe = observe  # type: ignore[method-assign]
    created = store.create(
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "d"}}
    )
    written = [created["metadata"]["resourceVersion"]]
    for value in range(10):
        updated = store.patch_metadata("ConfigMap", "d", "c", labels={"v": str(value)})
        written.append(updated["metadata"]["resourceVersion"])
    loop.run_for(60)  # 11 events, each at most 5 s behind the one before
    assert seen == written


def test_a_hook_sees_an_old_set_of_children_while_the_cache_lags(closing: list[Sim]) -> None:
    world = sim(closing, realism(informer_lag=Delay(median=5.0)))
    world.hooks.on(
        "/sync",
        lambda request: answer(
            {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c1"}}
        ),
    )
    world.start(composite())
    world.store.create(widget())
    world.loop.run_for(1)
    world.store.patch_metadata("Widget", "default", "w1", annotations={"n": "1"})
    world.loop.run_for(5.5)  # syncs at 5 s (creating c1) and 6 s (the change)
    assert world.store.get("ConfigMap", "default", "c1") is not None
    second = world.hooks.calls("/sync")[1]
    assert second["parent"]["metadata"]["annotations"] == {"n": "1"}
    assert second["children"]["ConfigMap.v1"] == {}, "c1 is not in the cache yet"


# --------------------------------------------------------------------------- conflicts


def test_a_conflicting_finalizer_removal_keeps_the_finalizer_and_finalize_runs_again(
    closing: list[Sim],
) -> None:
    """The conflict stands for another writer's change, whose event syncs the object again:
    the finalizer goes then, with no further change to the object."""
    world = sim(closing, realism(conflict_rate=0.5))
    draws = iter([0.9, 0.0] + [0.9] * 100)  # the finalizer addition passes, the removal conflicts
    world.emulator._context.conflicts.rng.random = lambda: next(draws)  # type: ignore[method-assign]
    world.hooks.on("/decorate", lambda request: {"labels": {"decorated": "yes"}})
    world.hooks.on("/undecorate", lambda request: {"finalized": True})
    world.start(
        decorator(resources=[{"apiVersion": WIDGETS, "resource": "widgets"}], finalize=True)
    )
    world.store.create(widget())
    world.loop.run_for(1)
    world.store.delete("Widget", "default", "w1")
    world.loop.run_for(OTHER_WRITE_SEEN_AFTER / 2)
    assert len(world.hooks.calls("/undecorate")) == 1
    held = world.store.get("Widget", "default", "w1")
    assert held is not None, "finalized: true, but the conflict kept the finalizer"
    assert world.emulator.stats.injected_conflicts == 1
    world.loop.run_for(OTHER_WRITE_SEEN_AFTER)
    assert len(world.hooks.calls("/undecorate")) == 2
    assert world.store.get("Widget", "default", "w1") is None


def test_status_updates_conflict_at_the_rate_and_the_composite_retries(closing: list[Sim]) -> None:
    world = sim(closing, realism(conflict_rate=0.5))
    draws = iter([0.0] + [0.9] * 100)
    world.emulator._context.conflicts.rng.random = lambda: next(draws)  # type: ignore[method-assign]
    world.hooks.on("/sync", lambda request: answer(status={"seen": "yes"}))
    world.start(composite())
    world.store.create(widget())
    world.loop.run_for(1)
    assert world.emulator.stats.injected_conflicts == 1
    assert world.status().get("seen") == "yes", "RetryOnConflict wrote it on the next attempt"


# --------------------------------------------------------------------------- replicas


def _slow_app(arrived: asyncio.Event, count: list[int]) -> Starlette:
    async def endpoint(request: Request) -> Response:
        count[0] += 1
        if count[0] == 1:
            await asyncio.wait_for(arrived.wait(), 5)  # only the second call sets it
        else:
            arrived.set()
        return JSONResponse({"n": count[0]})

    return Starlette(routes=[Route("/hook", endpoint, methods=["POST"])])


def test_post_many_overlaps_the_calls_in_the_hook_server() -> None:
    count = [0]
    transport = AsgiTransport([_slow_app(asyncio.Event(), count)], random.Random(0))
    try:
        posts = [HookPost("http://h/hook", b"{}", 10.0) for _ in range(2)]
        exchanges = transport.post_many(posts)
    finally:
        transport.close()
    assert [e.reply[0] for e in exchanges if e.reply] == [200, 200]


def test_a_replica_restarting_mid_call_loses_the_answer_and_its_memory() -> None:
    served: list[int] = []

    def app(generation: int) -> Starlette:
        async def endpoint(request: Request) -> Response:
            served.append(generation)
            return JSONResponse({})

        return Starlette(routes=[Route("/hook", endpoint, methods=["POST"])])

    generations = iter(range(1, 10))
    transport = AsgiTransport(
        [app(0)],
        random.Random(0),
        restart=lambda index: app(next(generations)),
        restart_rate=1.0,
    )
    try:
        with pytest.raises(HookUnreachable, match="restarted"):
            transport.post("http://h/hook", b"{}", 10.0)
        with pytest.raises(HookUnreachable):
            transport.post("http://h/hook", b"{}", 10.0)
    finally:
        transport.close()
    assert served == [0, 1], "the side effects were done, on a new replica the second time"
    assert transport.restarts == 2


# --------------------------------------------------------------------------- scenario knobs


def test_a_scenario_is_realistic_unless_it_says_otherwise() -> None:
    knobs = load_scenario("name: s\nseed: 4\ngithub: {latency: 20ms}\n")
    realism_of = knobs.metacontroller.realism(knobs.seed, knobs.github.latency)
    assert realism_of.workers == 5 and realism_of.concurrency == "interleaved"
    assert realism_of.github_call_seconds == pytest.approx(0.02)
    assert not realism_of.informer_lag.never and realism_of.conflict_rate == 0.01
    assert realism_of.seed == 4

    friendly = load_scenario("name: s\nmetacontroller: {profile: friendly, conflictRate: 0.2}\n")
    calm = friendly.metacontroller.realism(1, 0.05)
    assert calm.informer_lag.never and not calm.takes_time
    assert calm.conflict_rate == 0.2, "a knob given explicitly applies on top of the profile"


def test_stress_adds_lag_of_seconds_conflicts_and_restarts_to_any_scenario() -> None:
    plain = load_scenario(scenario_path("pod-evicted-while-idle"))
    stress = stressed(plain).metacontroller.realism(plain.seed, plain.github.latency)
    assert stress.conflict_rate == 0.10
    assert stress.replica_restart_rate > 0
    assert stress.informer_lag.median >= 0.5 and stress.informer_lag.tail[1] >= 2
    assert stressed(plain).objects == plain.objects


@given(rate=st.one_of(st.floats(max_value=-0.001), st.floats(min_value=1.001)))
def test_a_conflict_rate_outside_0_to_1_is_refused_with_its_field(rate: float) -> None:
    with pytest.raises(ScenarioError, match=r"metacontroller\.conflictRate"):
        load_scenario(f"name: s\nmetacontroller: {{conflictRate: {rate!r}}}\n")


@pytest.mark.parametrize(
    ("knob", "field"),
    [
        ("{workers: 0}", "metacontroller.workers"),
        ("{concurrency: goroutines}", "metacontroller.concurrency"),
        ("{informerLag: {tail: [3s, 1s]}}", "metacontroller.informerLag"),
        ("{hookLatency: {perGitHubCall: soon}}", "metacontroller.hookLatency.perGitHubCall"),
        ("{hookLatency: {perGithubCall: 50ms}}", "metacontroller.hookLatency.perGithubCall"),
        ("{lag: 1s}", "metacontroller.lag"),
    ],
)
def test_a_wrong_knob_is_named(knob: str, field: str) -> None:
    with pytest.raises(ScenarioError, match=field.replace(".", r"\.")):
        load_scenario(f"name: s\nmetacontroller: {knob}\n")


def test_the_per_github_call_latency_is_spelt_as_documented() -> None:
    scenario = load_scenario("name: s\nmetacontroller: {hookLatency: {perGitHubCall: 80ms}}\n")

    assert scenario.metacontroller.hook_latency.per_github_call == pytest.approx(0.08)


def test_the_documented_format_loads_as_it_is_written() -> None:
    """docs/scenarios.md's Format block, every field with its example value."""
    text = (Path(__file__).parent.parent / "docs" / "scenarios.md").read_text()
    block = text.split("## Format", 1)[1].split("```yaml\n", 1)[1].split("```", 1)[0]

    scenario = load_scenario(block)

    assert scenario.name == "burst-on-ephemeral-runners"
    assert scenario.metacontroller.hook_latency.per_github_call == pytest.approx(0.05)
    assert len(scenario.timeline) >= 11


# --------------------------------------------------------------------------- whole worlds


def test_a_scenario_under_the_defaults_counts_lag_latency_and_conflicts(
    capsys: pytest.CaptureFixture[str],
) -> None:
    status = cli.main(
        [
            "simulate",
            "--json",
            "--progress-every",
            "0",
            str(scenario_path("pod-evicted-while-idle")),
        ]
    )
    summary = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert status == 0
    hooks = summary["hooks"]
    assert hooks["maxInformerLagSeconds"] > 0
    assert hooks["maxLatencySeconds"] > 0
    assert hooks["timeoutsExceeded"] == 0
    assert summary["invariants"]["noHookTimeouts"] is True


def test_simulate_stress_runs_a_scenario_unchanged_and_keeps_its_promises(
    capsys: pytest.CaptureFixture[str],
) -> None:
    status = cli.main(
        [
            "simulate",
            "--stress",
            "--json",
            "--progress-every",
            "0",
            str(scenario_path("pod-evicted-while-idle")),
        ]
    )
    summary = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert status == 0, summary
    assert summary["hooks"]["maxInformerLagSeconds"] > 0.5
    assert summary["hooks"]["conflicts"] > 0


def test_an_interleaved_world_gives_the_same_run_for_the_same_seed() -> None:
    from arc_sim.world import World

    plain = load_scenario(scenario_path("pod-evicted-while-idle"))
    knobs = plain.metacontroller.model_copy(update={"concurrency": "interleaved"})
    scenario = plain.model_copy(update={"metacontroller": knobs})
    first, second = World(scenario).run(), World(scenario).run()
    assert_clean(first)
    first.wall_seconds = second.wall_seconds = 0.0
    assert first == second


# --------------------------------------------------------------- the API client's rate limit


def test_the_client_rate_limit_serves_a_burst_then_qps() -> None:
    limit = ClientRateLimit(qps=5, burst=10)
    waits = [limit.reserve(100.0) for _ in range(12)]
    assert waits[:10] == [0.0] * 10
    assert waits[10:] == [pytest.approx(0.2), pytest.approx(0.4)]  # owed tokens queue up
    assert limit.reserve(101.0) == 0.0  # 5 tokens a second later: the 2 owed, and 3 to spare
    assert ClientRateLimit(qps=0, burst=1).reserve(0.0) == 0.0  # no limit


@given(
    gaps=st.lists(st.floats(0, 2), min_size=1, max_size=60),
    qps=st.floats(0.5, 50),
    burst=st.integers(1, 20),
)
def test_requests_never_go_faster_than_the_bucket_allows(
    gaps: list[float], qps: float, burst: int
) -> None:
    """However requests arrive, those that went by any moment number at most `burst` plus
    `qps` per second since the first, and they go in the order they came."""
    limit = ClientRateLimit(qps=qps, burst=burst)
    now, went = 0.0, []
    for gap in gaps:
        now += gap
        went.append(now + limit.reserve(now))
    for index, moment in enumerate(went):
        assert index + 1 <= burst + qps * (moment - went[0]) + 1e-6
    assert all(later >= earlier - 1e-9 for earlier, later in itertools.pairwise(went))


def test_a_sync_writing_many_children_waits_for_the_client_rate_limit(closing: list[Sim]) -> None:
    """Metacontroller's `--client-go-qps` counts every request: 20 children at 2 a second,
    with bursts of 4, take about 10 s to be created (after the status read and write)."""
    world = sim(closing, realism(client_qps=2.0, client_burst=4))
    children = [config_map(f"c{index}") for index in range(20)]
    world.hooks.on("/sync", lambda request: answer(*children))
    world.start(composite())
    world.store.create(widget("w1"))

    world.loop.run_for(3)
    created = len(world.store.list_objects("ConfigMap"))
    assert 4 <= created <= 4 + 2 * 3
    world.loop.run_for(20)
    assert len(world.store.list_objects("ConfigMap")) == 20
    assert world.emulator.stats.client_waits >= 15


def test_without_a_client_rate_limit_the_children_are_created_at_once(closing: list[Sim]) -> None:
    world = sim(closing, realism(client_qps=0.0))
    children = [config_map(f"c{index}") for index in range(20)]
    world.hooks.on("/sync", lambda request: answer(*children))
    world.start(composite())
    world.store.create(widget("w1"))
    world.loop.run_for(0.1)
    assert len(world.store.list_objects("ConfigMap")) == 20
    assert world.emulator.stats.client_waits == 0
