"""Runner lists shared by the hook replicas through ConfigMaps (hooks.github.shared_lists):
the codec at its input boundary, the cache's rules against the simulated API server, and the
board over HTTP with kr8s from a worker thread, as the server reaches it."""

from __future__ import annotations

import asyncio
import base64
import gzip
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from arc_sim.kube_api import FakeKubeApi
from arc_sim.kube_port import StoreKube, run_in_place
from arc_sim.loopback import serve_loopback
from arc_sim.store import ObjectStore
from arc_sim.world import START as WORLD_START
from arc_sim.world import World
from bench.bench_scale import scenario as bench_scenario
from hooks.clock import ManualClock
from hooks.github.cached import BOARD_RECHECK, CachedGitHub
from hooks.github.list_pacing import RateBudget
from hooks.github.port import GitHubRunner, RemoveOutcome, Scope
from hooks.github.shared_lists import (
    CLAIM_ANNOTATION,
    CLAIM_SECONDS,
    DATA_KEY,
    BoardEntry,
    BoardUnavailable,
    RunnerListBoard,
    SharedList,
    config_map_name,
    decode,
    encode,
    read_entry,
)
from hooks.kube.config_maps import KubeConfigMaps, OnServerLoop
from hooks.kube.kr8s_adapter import Kr8sKube
from hooks.settings import Settings
from tests.test_github_cache import ScriptedPort
from tests.test_kube_port import write_kubeconfig

ORG = Scope(organization="acme")
NAMESPACE = "arc-hooks"
START = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)
TTL = 90.0

runners = st.builds(
    GitHubRunner,
    id=st.integers(min_value=1, max_value=2**53),
    name=st.text(min_size=1, max_size=40),
    status=st.sampled_from(["online", "offline"]),
    busy=st.booleans(),
    labels=st.lists(st.text(max_size=20), max_size=5).map(tuple),
    ephemeral=st.none() | st.booleans(),
    runner_group_id=st.none() | st.integers(min_value=1, max_value=10_000),
)
times = st.datetimes(
    min_value=datetime(2020, 1, 1), max_value=datetime(2040, 1, 1), timezones=st.just(UTC)
).map(lambda t: t.replace(microsecond=0))


# ------------------------------------------------------------------------------ the codec


periods = st.none() | st.integers(1, 3600).map(lambda seconds: timedelta(seconds=seconds))


@given(asked_at=times, listed=st.lists(runners, max_size=30).map(tuple), period=periods)
def test_a_shared_list_reads_back_as_written(
    asked_at: datetime, listed: tuple[GitHubRunner, ...], period: timedelta | None
) -> None:
    shared = SharedList(asked_at, listed, period)
    assert decode(encode(shared)) == shared


@pytest.mark.parametrize("seconds", [0, -5, 3601, 1e308, "90", True, None, [90]])
def test_a_published_period_out_of_bounds_reads_as_none(seconds: object) -> None:
    """The reader then serves the list for its own configured period."""
    document = {"askedAt": "2026-01-05T09:00:00Z", "runners": [], "periodSeconds": seconds}
    text = base64.b64encode(gzip.compress(orjson.dumps(document))).decode()
    assert decode(text) == SharedList(START, ())


@given(text=st.text() | st.binary().map(lambda b: base64.b64encode(b).decode()))
def test_anything_else_in_the_config_map_reads_as_no_list(text: str) -> None:
    assert decode(text) is None


@pytest.mark.parametrize(
    "document",
    [
        {"askedAt": "yesterday", "runners": []},
        {"askedAt": "2026-01-05T09:00:00Z", "runners": [[1, "a", "online", "yes", [], None, 1]]},
        {"askedAt": "2026-01-05T09:00:00Z", "runners": [[1, "a", "online", True, [7], None, 1]]},
        {"askedAt": "2026-01-05T09:00:00Z", "runners": [[1, "a"]]},
        {"askedAt": "2026-01-05T09:00:00Z"},
        [1, 2, 3],
        "text",
    ],
)
def test_a_well_packed_document_of_the_wrong_shape_reads_as_no_list(document: Any) -> None:
    packed = base64.b64encode(gzip.compress(orjson.dumps(document))).decode()
    assert decode(packed) is None


@given(
    obj=st.none()
    | st.dictionaries(
        st.sampled_from(["metadata", "binaryData", "data", "kind"]),
        st.none() | st.integers() | st.text() | st.dictionaries(st.text(), st.text()),
    )
)
def test_a_config_map_of_any_shape_reads_without_error(obj: dict[str, Any] | None) -> None:
    entry = read_entry(obj)
    assert entry.exists is (obj is not None)


def test_the_config_map_name_is_a_stable_dns_label() -> None:
    name = config_map_name(Scope(repository="Acme/App_1"))
    assert name == config_map_name(Scope(repository="Acme/App_1"))
    assert name != config_map_name(Scope(organization="Acme"))
    assert len(name) <= 63 and name.replace("-", "").isalnum() and name.islower()


def test_a_claim_counts_while_recent_and_unanswered() -> None:
    listed = SharedList(START, ())
    claimed = BoardEntry(listed=listed, claimed_at=START + timedelta(seconds=5), exists=True)
    assert claimed.claimed_by_another(START + timedelta(seconds=6))
    assert not claimed.claimed_by_another(START + timedelta(seconds=5 + CLAIM_SECONDS))
    answered = BoardEntry(listed=SharedList(START + timedelta(seconds=7), ()), claimed_at=START)
    assert not answered.claimed_by_another(START + timedelta(seconds=8))


# ------------------------------------------------------------------------------ the cache


class Cluster:
    """Hook replicas, each with its own cache, sharing one simulated API server."""

    def __init__(self) -> None:
        self.clock = ManualClock(START)
        self.store = ObjectStore(self.clock)
        self.github = ScriptedPort(self.clock)
        self.github.runners[ORG] = [
            GitHubRunner(i, f"runner-{i}", "online", i % 2 == 0) for i in range(1, 4)
        ]
        self.config_maps: Any = KubeConfigMaps(StoreKube(self.store), run_in_place)
        self.settings = Settings.model_validate(
            {"GITHUB_TOKEN": "x", "GITHUB_LIST_RUNNERS_CACHE_TTL": str(TTL)}
        )

    def board(self) -> RunnerListBoard:
        return RunnerListBoard(self.config_maps, NAMESPACE, self.clock)

    def replica(self, budget: RateBudget | None = None) -> CachedGitHub:
        return CachedGitHub(
            self.github, self.settings, self.clock, board=self.board(), rate_budget=lambda: budget
        )

    def advance(self, seconds: float) -> None:
        self.clock.advance(seconds)

    def shared(self) -> BoardEntry:
        return self.board().read(ORG)


@pytest.fixture
def cluster() -> Cluster:
    return Cluster()


def test_one_list_per_period_serves_every_replica(cluster: Cluster) -> None:
    first, second, third = cluster.replica(), cluster.replica(), cluster.replica()

    answer = first.list_runners(ORG)
    assert cluster.github.calls["list"] == 1
    cluster.advance(30)
    assert second.list_runners(ORG) == answer
    assert third.list_runners(ORG) == answer
    assert cluster.github.calls["list"] == 1
    # Each copy lasts as long as the list is fresh, not from when it was read.
    cluster.advance(TTL - 30)
    relisted = second.list_runners(ORG)
    assert list(relisted) == list(answer) and relisted.asked_at == cluster.clock.now()
    assert cluster.github.calls["list"] == 2
    assert first.list_runners(ORG) == relisted and third.list_runners(ORG) == relisted
    assert cluster.github.calls["list"] == 2
    entry = cluster.shared()
    period = timedelta(seconds=TTL)  # no budget known: the configured period
    assert entry.listed == SharedList(START + timedelta(seconds=TTL), tuple(answer), period)
    assert entry.claimed_at is None


def test_the_period_the_lister_chose_from_its_budget_serves_every_replica(
    cluster: Cluster,
) -> None:
    """A replica that has not heard of the token's budget (it made no call yet) still serves
    the list for as long as the replica that listed chose, rather than listing again after
    its own configured period."""
    # 3 pages, 20 calls left for the 40 minutes to the reset: half of them allows one list per
    # 40 min x 3 / 10 = 12 minutes.
    budget = RateBudget(5000, 20, START + timedelta(minutes=40))
    cluster.github.runners[ORG] = [
        GitHubRunner(i, f"runner-{i}", "online", False) for i in range(1, 251)
    ]
    lister, other = cluster.replica(budget), cluster.replica(None)

    listed = lister.list_runners(ORG)
    assert listed.fresh_until == START + timedelta(minutes=12)
    cluster.advance(11 * 60)
    assert other.list_runners(ORG) == listed
    assert other.list_runners(ORG).fresh_until == START + timedelta(minutes=12)
    assert cluster.github.calls["list"] == 1
    assert cluster.shared().listed == SharedList(START, tuple(listed), timedelta(minutes=12))


def test_a_replica_serves_the_last_list_while_another_makes_the_next(cluster: Cluster) -> None:
    first, second = cluster.replica(), cluster.replica()
    answer = first.list_runners(ORG)
    cluster.advance(TTL + 1)
    other = cluster.board()
    assert other.claim(ORG, other.read(ORG))  # a third replica is listing now

    meanwhile = second.list_runners(ORG)
    assert meanwhile == answer
    assert cluster.github.calls["list"] == 1
    # Served for a couple of seconds only: its Runners look again then, not a period later.
    assert meanwhile.fresh_until == cluster.clock.now() + BOARD_RECHECK
    # It looks at the board again shortly, and takes the new list once published.
    cluster.advance(BOARD_RECHECK.total_seconds())
    newer = SharedList(cluster.clock.now(), (GitHubRunner(9, "runner-9", "online", False),))
    other.publish(ORG, newer)
    assert tuple(second.list_runners(ORG)) == newer.runners
    assert cluster.github.calls["list"] == 1


def test_an_abandoned_claim_ends(cluster: Cluster) -> None:
    first = cluster.replica()
    first.list_runners(ORG)
    cluster.advance(TTL + 1)
    other = cluster.board()
    assert other.claim(ORG, other.read(ORG))  # and then that replica died
    cluster.advance(CLAIM_SECONDS)

    cluster.replica().list_runners(ORG)
    assert cluster.github.calls["list"] == 2


def test_only_one_replica_wins_a_claim(cluster: Cluster) -> None:
    cluster.replica().list_runners(ORG)
    cluster.advance(TTL + 1)
    one, two = cluster.board(), cluster.board()
    seen_by_one, seen_by_two = one.read(ORG), two.read(ORG)

    assert one.claim(ORG, seen_by_one)
    assert not two.claim(ORG, seen_by_two)


def test_the_first_claim_creates_the_config_map_once(cluster: Cluster) -> None:
    one, two = cluster.board(), cluster.board()
    nothing = one.read(ORG)
    assert not nothing.exists
    assert one.claim(ORG, nothing)
    assert not two.claim(ORG, nothing)
    made = cluster.store.get("ConfigMap", NAMESPACE, config_map_name(ORG))
    assert made is not None
    assert made["metadata"]["annotations"][CLAIM_ANNOTATION] == "2026-01-05T09:00:00Z"


def test_a_caller_that_knows_more_than_the_shared_list_gets_a_newer_one(
    cluster: Cluster,
) -> None:
    cluster.replica().list_runners(ORG)
    cluster.advance(10)

    cluster.replica().list_runners(ORG, not_before=cluster.clock.now())
    assert cluster.github.calls["list"] == 2


def test_a_replica_that_removed_a_runner_does_not_take_an_older_list(cluster: Cluster) -> None:
    first, second = cluster.replica(), cluster.replica()
    first.list_runners(ORG)
    cluster.advance(5)
    assert second.remove_runner(ORG, 1).outcome is RemoveOutcome.REMOVED
    cluster.advance(5)

    assert [r.id for r in second.list_runners(ORG)] == [2, 3]
    assert cluster.github.calls["list"] == 2


class Unreachable:
    def get(self, namespace: str, name: str) -> None:
        raise BoardUnavailable("forbidden")

    def create(self, obj: Any) -> bool:
        raise BoardUnavailable("forbidden")

    def merge_patch(self, namespace: str, name: str, patch: Any) -> bool:
        raise BoardUnavailable("forbidden")


def test_without_the_board_each_replica_lists_for_itself(cluster: Cluster) -> None:
    cluster.config_maps = Unreachable()
    first, second = cluster.replica(), cluster.replica()

    assert first.list_runners(ORG) == second.list_runners(ORG)
    assert cluster.github.calls["list"] == 2
    cluster.advance(TTL / 2)
    first.list_runners(ORG)
    assert cluster.github.calls["list"] == 2  # each replica's own copy still serves


class PublishFails:
    def __init__(self, inner: KubeConfigMaps) -> None:
        self.inner = inner

    def get(self, namespace: str, name: str) -> Any:
        return self.inner.get(namespace, name)

    def create(self, obj: Any) -> bool:
        return self.inner.create(obj)

    def merge_patch(self, namespace: str, name: str, patch: Any) -> bool:
        if "binaryData" in patch:
            raise BoardUnavailable("the API server went away")
        return self.inner.merge_patch(namespace, name, patch)


def test_a_list_that_cannot_be_published_still_answers(cluster: Cluster) -> None:
    cluster.config_maps = PublishFails(cluster.config_maps)
    assert len(cluster.replica().list_runners(ORG)) == 3
    assert cluster.shared().listed is None


def test_a_corrupt_config_map_costs_one_list_and_is_replaced(cluster: Cluster) -> None:
    cluster.replica().list_runners(ORG)
    name = config_map_name(ORG)
    current = cluster.store.get("ConfigMap", NAMESPACE, name)
    assert current is not None
    cluster.store.update({**current, "binaryData": {DATA_KEY: "bm90IGd6aXA="}})

    assert len(cluster.replica().list_runners(ORG)) == 3
    assert cluster.github.calls["list"] == 2
    assert cluster.shared().listed is not None


# ------------------------------------------------------------------------------ over HTTP

TOKEN = "board-token-that-must-never-show"


@pytest.fixture
def api_server(tmp_path: Path) -> Iterator[tuple[ObjectStore, str]]:
    store = ObjectStore(ManualClock(START))
    with serve_loopback(FakeKubeApi(store, token=TOKEN)) as url:
        yield store, write_kubeconfig(tmp_path / "kubeconfig", url, TOKEN)


def test_the_board_over_kr8s_from_a_worker_thread(api_server: tuple[ObjectStore, str]) -> None:
    store, kubeconfig = api_server
    clock = ManualClock(START)
    server_loop = OnServerLoop()
    listed = SharedList(START, (GitHubRunner(1, "runner-1", "online", True, ("linux",)),))

    async def main() -> tuple[BoardEntry, BoardEntry, bool, bool]:
        kube = await Kr8sKube.connect(kubeconfig=kubeconfig)
        try:
            server_loop.bind(asyncio.get_running_loop())
            board = RunnerListBoard(KubeConfigMaps(kube, server_loop), NAMESPACE, clock)
            nothing = await asyncio.to_thread(board.read, ORG)
            won = await asyncio.to_thread(board.claim, ORG, nothing)
            lost = await asyncio.to_thread(board.claim, ORG, nothing)  # exists by now
            await asyncio.to_thread(board.publish, ORG, listed)
            return nothing, await asyncio.to_thread(board.read, ORG), won, lost
        finally:
            await kube.aclose()

    nothing, published, won, lost = asyncio.run(main())
    assert not nothing.exists
    assert (won, lost) == (True, False)
    assert published.listed == listed and published.claimed_at is None
    stored = store.get("ConfigMap", NAMESPACE, config_map_name(ORG))
    assert stored is not None and stored["metadata"]["labels"]["app.kubernetes.io/managed-by"]


def test_a_stale_claim_over_http_is_refused(api_server: tuple[ObjectStore, str]) -> None:
    _, kubeconfig = api_server
    clock = ManualClock(START)
    server_loop = OnServerLoop()

    async def main() -> bool:
        kube = await Kr8sKube.connect(kubeconfig=kubeconfig)
        try:
            server_loop.bind(asyncio.get_running_loop())
            board = RunnerListBoard(KubeConfigMaps(kube, server_loop), NAMESPACE, clock)
            await asyncio.to_thread(board.claim, ORG, BoardEntry())
            seen = await asyncio.to_thread(board.read, ORG)
            await asyncio.to_thread(board.publish, ORG, SharedList(START, ()))  # changes it
            return await asyncio.to_thread(board.claim, ORG, seen)
        finally:
            await kube.aclose()

    assert asyncio.run(main()) is False


def test_a_refusing_api_server_makes_the_board_unavailable_without_the_token(
    api_server: tuple[ObjectStore, str], tmp_path: Path
) -> None:
    _, kubeconfig = api_server
    wrong = Path(kubeconfig).read_text().replace(TOKEN, "another-secret-token")
    (tmp_path / "wrong").write_text(wrong)
    server_loop = OnServerLoop()

    async def main() -> str:
        kube = await Kr8sKube.connect(kubeconfig=str(tmp_path / "wrong"))
        try:
            server_loop.bind(asyncio.get_running_loop())
            maps = KubeConfigMaps(kube, server_loop)
            with pytest.raises(BoardUnavailable) as refused:
                await asyncio.to_thread(maps.get, NAMESPACE, "anything")
            return str(refused.value)
        finally:
            await kube.aclose()

    message = asyncio.run(main())
    assert "401" in message and "another-secret-token" not in message


def test_the_board_is_never_waited_for_on_the_event_loop() -> None:
    server_loop = OnServerLoop()

    async def ask() -> dict[str, Any]:
        return {}

    with pytest.raises(BoardUnavailable, match="not running"):
        server_loop(ask())

    async def main() -> None:
        server_loop.bind(asyncio.get_running_loop())
        with pytest.raises(BoardUnavailable, match="event loop"):
            server_loop(ask())

    asyncio.run(main())


# ------------------------------------------------------------------------------ in the world


def steady_calls(
    runners: int, replicas: int, minutes: float, warmup: float, rate_limit_per_hour: int = 5000
) -> tuple[int, int]:
    """GitHub calls, and `/sync/runner` calls, from `warmup` to `minutes` of a RunnerDeployment
    of static runners taking ten four-minute jobs per runner-hour (bench.bench_scale's
    workload), on a token of `rate_limit_per_hour` calls an hour. No call is refused."""
    built = bench_scenario(runners, minutes)
    knobs = built.github.model_copy(update={"rate_limit_per_hour": rate_limit_per_hour})
    built = built.model_copy(update={"hook_replicas": replicas, "github": knobs})
    world = World(built)
    world.begin()
    world.run_to(warmup * 60)
    synced_before = world.emulator.hook_calls["/sync/runner"]
    world.run_to(minutes * 60)
    runner_syncs = world.emulator.hook_calls["/sync/runner"] - synced_before
    since, until = WORLD_START + timedelta(minutes=warmup), WORLD_START + timedelta(minutes=minutes)
    steady = [r for r in world.github.requests if since <= r.at < until]
    assert {r.route for r in steady} <= {"/orgs/{org}/actions/runners"}
    assert all(r.status < 400 for r in world.github.requests)
    assert world.github.job_summary().interrupted == 0
    return len(steady), runner_syncs


def steady_list_calls(runners: int, replicas: int, minutes: float, warmup: float) -> int:
    return steady_calls(runners, replicas, minutes, warmup)[0]


def test_the_github_cost_of_runner_lists_is_flat_in_hook_replicas() -> None:
    (one, one_syncs), (three, three_syncs) = (steady_calls(150, r, 8, 3) for r in (1, 3))
    assert one == three
    assert 0 < three <= 2 * 4  # two pages per list, one list per 90 s at most, in 5 minutes
    # A running Runner is synced just after each list (busy and online change only then), and
    # once more after each status write that reports a change: less than once a minute, which
    # Metacontroller's 60 s resync alone would cost (measured: 690 syncs; 826 with it).
    lists = 5 * 60 / 91
    for syncs in (one_syncs, three_syncs):
        assert 150 * (lists - 1) <= syncs < 150 * 5


@pytest.mark.long_run
def test_a_thousand_runners_on_three_replicas_cost_at_most_half_a_call_per_runner_hour() -> None:
    minutes, warmup = 6, 2
    calls = steady_list_calls(1000, 3, minutes, warmup)
    runner_hours = 1000 * (minutes - warmup) / 60
    assert calls / runner_hours <= 0.5  # measured: 20 calls, 0.30 per runner-hour


@pytest.mark.long_run
def test_a_token_too_small_for_the_list_period_stretches_it_and_is_never_exceeded() -> None:
    """A list every 90 s would cost 40 calls an hour, twice a token of 20. Lists then take at
    most half of it (one per 6 minutes or more) on three replicas, no call is refused, and the
    Runners, registering ones included, wait for those lists instead of looking again every
    minute (measured: 1 list call and 397 Runner syncs in 10 minutes; 883 syncs when
    registering Runners looked every minute; at 90 s lists, 6 to 7 calls)."""
    calls, syncs = steady_calls(100, 3, 13, 3, rate_limit_per_hour=20)
    assert 0 < calls <= 0.5 * 20 * 10 / 60 + 1  # half the budget, and one list begun
    assert syncs < 100 * 10 * 60 / 91  # fewer than one per Runner per 90 s list
