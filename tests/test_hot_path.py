"""The hook hot path's helpers: the bounded memo, the parsed-parent memo of the Runner
controller (never a change of answer), and the worker threads of the HTTP edge."""

from __future__ import annotations

import asyncio
import contextvars
import json
import re
import threading
import time
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st
from starlette.testclient import TestClient

from hooks.app import create_app
from hooks.children import read_once_per_state
from hooks.clock import ManualClock, format_time
from hooks.deps import HookDeps
from hooks.github.cached import CachedGitHub
from hooks.github.port import GitHubRunner, RunnerListing, Scope
from hooks.memo import Memo, ObjectMemo
from hooks.metacontroller import CompositeHookRequest, SharedChild, encode_answer
from hooks.resources.runner import Runner
from hooks.runner.controller import sync_runner
from hooks.runner.pod import build_runner_pod
from hooks.settings import Settings
from hooks.workers import WorkerThreads, dispatching_loop
from tests.call_log import record_calls
from tests.hook_app import hook_client, hook_settings
from tests.hook_driver import HookDriver, HookResponse, new_runner, running_status
from tests.in_memory_github import InMemoryGitHub

ORG = Scope(organization="acme")
SPEC = {"organization": "acme", "labels": ["linux"]}
UID = re.compile(r"\b[a-z]+-uid-\d+\b")

# ---------------------------------------------------------------- Memo


def test_memo_keeps_the_most_recently_used_entries() -> None:
    memo: Memo[str, int] = Memo(2)
    memo.put("a", 1)
    memo.put("b", 2)
    assert memo.get("a") == 1  # "b" is now the least recently used
    memo.put("c", 3)

    assert memo.get("b") is None
    assert (memo.get("a"), memo.get("c"), len(memo)) == (1, 3, 2)


def test_memo_looks_many_keys_up_as_one_by_one() -> None:
    memo: Memo[str, int] = Memo(3)
    for key, value in (("a", 1), ("b", 2), ("c", 3)):
        memo.put(key, value)

    assert memo.get_many(["b", None, "x", "a"]) == [2, None, None, 1]
    memo.put("d", 4)  # "c" was used least recently: "b" and "a" were just looked up

    assert (memo.get("c"), memo.get("a"), memo.get("b"), memo.get("d")) == (None, 1, 2, 4)


def test_memo_computes_on_a_miss_only() -> None:
    memo: Memo[str, list[int]] = Memo(4)
    calls: list[str] = []

    def compute() -> list[int]:
        calls.append("x")
        return [1]

    first = memo.get_or_compute("k", compute)
    second = memo.get_or_compute("k", compute)

    assert first is second and calls == ["x"]
    with pytest.raises(ValueError, match="at least 1"):
        Memo(0)


@given(
    st.lists(st.tuples(st.integers(0, 9), st.integers(0, 60)), max_size=60),
    st.integers(1, 5),
    st.integers(1, 100),
)
def test_memo_keeps_within_its_weight_and_its_count(
    puts: list[tuple[int, int]], max_entries: int, max_weight: int
) -> None:
    memo: Memo[int, int] = Memo(max_entries, max_weight)
    for key, weight in puts:
        memo.put(key, weight, weight=weight)
        kept = [k for k in range(10) if memo.get(k) is not None]
        assert len(kept) <= max_entries
        assert memo.weight == sum(memo.get(k) or 0 for k in kept) <= max_weight
        # The entry just put is kept whenever it fits at all; the oldest go first.
        assert (memo.get(key) is not None) == (weight <= max_weight)


def test_huge_runner_specs_cannot_fill_the_parsed_runners_memo(
    deps: HookDeps, github: InMemoryGitHub, clock: ManualClock
) -> None:
    """Found by the hostile fuzzer: each version of a 1 MB spec kept 2.5 MB (its text, the
    model and the pod) while the memo counted entries only: 170 edits filled a 512 MiB pod."""
    from hooks.deps import PARSED_TEXT_PER_RUNNER
    from hooks.runner import parse

    sized = HookDeps(github, clock, deps.settings.model_copy(update={"hook_memo_runners": 4}))
    budget = 4 * PARSED_TEXT_PER_RUNNER
    for version in range(12):
        env = [{"name": "BLOB", "value": f"{version}" + "x" * 6000}]
        parse.parse_runner(_request(new_runner({**SPEC, "env": env}, name="big")), sized)
        assert sized.parsed_parents.weight <= budget
    assert 0 < len(sized.parsed_parents) < 12


def test_object_memo_finds_the_very_object_only() -> None:
    memo: ObjectMemo[str] = ObjectMemo(2)
    a, b = {"metadata": {"name": "a"}}, {"metadata": {"name": "a"}}
    memo.put(a, "read a")

    assert memo.get(a) == "read a"
    assert memo.get(b) is None  # equal, but not the same object: its fields are not trusted
    memo.put(b, "read b")
    memo.put({"x": 1}, "third")  # past its size: it starts again
    assert (memo.get(a), memo.get(b), len(memo)) == (None, None, 1)
    with pytest.raises(ValueError, match="at least 1"):
        ObjectMemo(0)


def test_children_read_once_per_state_and_the_same_objects_not_looked_at_again() -> None:
    memo: Memo[Any, Any] = Memo(16)
    by_object: ObjectMemo[Any] = ObjectMemo(16)
    reads: list[str] = []

    def read(obj: dict[str, Any]) -> str:
        reads.append(obj["metadata"]["name"])
        return f"{obj['metadata']['name']}@{obj['metadata']['resourceVersion']}"

    def child(name: str, version: str) -> dict[str, Any]:
        return {"metadata": {"name": name, "uid": f"uid-{name}", "resourceVersion": version}}

    a, b = child("a", "1"), child("b", "1")
    assert read_once_per_state([a, b], "Runner", read, str, memo, by_object) == ["a@1", "b@1"]
    # The same objects: found by identity, not read again.
    a_seen = by_object.get(a)
    assert read_once_per_state([a, b], "Runner", read, str, memo, by_object) == ["a@1", "b@1"]
    # A copy of an unchanged state (decoded anew): found by uid and resourceVersion.
    copy_of_a = child("a", "1")
    changed_b = child("b", "2")
    answer = read_once_per_state([copy_of_a, changed_b], "Runner", read, str, memo, by_object)
    assert answer == ["a@1", "b@2"]
    assert reads == ["a", "b", "b"]
    assert a_seen == "a@1" and by_object.get(copy_of_a) == "a@1"
    # Without a uid no state is named: only the very object is found again.
    bare = {"metadata": {"name": "c", "resourceVersion": "1"}}
    for obj in (bare, bare, dict(bare)):
        read_once_per_state([obj], "Runner", read, str, memo, by_object)
    assert reads[3:] == ["c", "c"]


def test_a_sets_children_are_remembered_by_identity_only_when_the_request_shares_them(
    deps: HookDeps,
) -> None:
    # A small request is decoded whole, each time into new objects: remembering them by
    # identity would keep a copy per sync alive, up to the memo's size.
    from bench.bench_replicaset import request as replica_set_request
    from hooks.replicaset.controller import sync_runner_replica_set

    body = replica_set_request(ManualClock(), runners=5)
    for _ in range(3):
        sync_runner_replica_set(CompositeHookRequest.model_validate(body), deps)
    assert len(deps.children_by_object) == 0
    shared = CompositeHookRequest.model_validate(body)
    shared.share_members()
    for _ in range(3):
        sync_runner_replica_set(shared, deps)
    assert len(deps.children_by_object) == 5


# ---------------------------------------------------------------- parsed-parent memo


class _Client:
    """Sends each call to a fresh app (cold memo) or to one app (warm memo)."""

    def __init__(self, settings: Settings, github: CachedGitHub, clock: ManualClock, warm: bool):
        self._settings = settings
        self._github = github
        self._clock = clock
        self._warm = self._make() if warm else None

    def _make(self) -> TestClient:
        return hook_client(create_app(self._settings, github=self._github, clock=self._clock))

    def post(self, url: str, *, json: Any) -> HookResponse:
        client = self._warm or self._make()
        return client.post(url, json=json)


def _lifecycle(warm: bool, annotations: dict[str, str]) -> list[str]:
    """Answers of a Runner's whole life: creation, registration, resyncs, a template change
    and deletion. Every call is made twice, as Metacontroller's resyncs do."""
    clock = ManualClock(datetime(2026, 1, 1, tzinfo=UTC))
    backend = InMemoryGitHub(clock)
    settings = hook_settings()
    github = CachedGitHub(backend, settings, clock)
    client = _Client(settings, github, clock, warm)
    driver = HookDriver(client, new_runner(SPEC, name="memo-runner", annotations=annotations))
    answers: list[str] = []

    def step(call: str) -> None:
        for _ in range(2):
            answer = driver.finalize() if call == "finalize" else driver.sync()
            # Object uids come from a counter shared by both worlds; the rest must be equal.
            answers.append(UID.sub("uid", json.dumps(answer, sort_keys=True)))

    step("sync")
    driver.set_pod_status(running_status(format_time(clock.now())))
    if "memo-runner" not in {r.name for r in backend.list_runners(ORG)}:
        backend.register(ORG, "memo-runner")
    clock.advance(120)
    step("sync")
    driver.parent["spec"] = {**SPEC, "labels": ["linux", "x64"]}
    driver.parent["metadata"]["generation"] += 1
    step("sync")
    step("sync")
    clock.advance(120)
    step("finalize")
    step("finalize")
    return answers


@pytest.mark.parametrize("annotations", [{}, {"arc-hooks.dev/registration": "jit"}])
def test_memo_never_changes_an_answer(annotations: dict[str, str]) -> None:
    assert _lifecycle(warm=True, annotations=annotations) == _lifecycle(
        warm=False, annotations=annotations
    )


def _request(parent: dict[str, Any]) -> CompositeHookRequest:
    return CompositeHookRequest.model_validate({"parent": parent, "children": {}})


@pytest.fixture
def deps(github: InMemoryGitHub, clock: ManualClock) -> HookDeps:
    settings = Settings.model_validate({"GITHUB_TOKEN": "ghp_" + "x" * 36})
    return HookDeps(github, clock, settings)


def _pod_of(answer: dict[str, Any]) -> dict[str, Any]:
    return next(c for c in answer["children"] if c["kind"] == "Pod")


def test_a_memoized_pod_is_the_pod_built_now(deps: HookDeps) -> None:
    parent = new_runner(SPEC)
    first = _pod_of(sync_runner(_request(parent), deps).to_wire())
    again = _pod_of(sync_runner(_request(json.loads(json.dumps(parent))), deps).to_wire())

    fresh = build_runner_pod(
        Runner.model_validate(parent),
        deps.settings,
        secret_name="example-runner-registration",
        jit=False,
    )
    assert len(deps.parsed_parents) == 1
    assert first == again == fresh


def test_settings_that_reach_the_pod_are_part_of_the_key(deps: HookDeps) -> None:
    parent = new_runner(SPEC)
    before = _pod_of(sync_runner(_request(parent), deps).to_wire())
    deps.settings.runner_image = "example.com/runner:2"

    after = _pod_of(sync_runner(_request(parent), deps).to_wire())

    assert before["spec"]["containers"][0]["image"] != "example.com/runner:2"
    assert after["spec"]["containers"][0]["image"] == "example.com/runner:2"
    assert len(deps.parsed_parents) == 2


def test_a_parent_that_is_not_plain_json_is_parsed_without_the_memo(
    deps: HookDeps,
) -> None:
    parent = new_runner({**SPEC})  # its spec is changed below
    parent["spec"]["dockerdWithinRunnerContainer"] = datetime(2026, 1, 1, tzinfo=UTC)

    answer = sync_runner(_request(parent), deps)

    assert len(deps.parsed_parents) == 0
    assert "InvalidSpec" in json.dumps(answer.to_wire())


def test_invalid_parents_are_memoized_with_their_problems(deps: HookDeps) -> None:
    parent = new_runner({"organization": "acme", "repository": "acme/app"})
    answers = [sync_runner(_request(parent), deps).to_wire() for _ in range(2)]

    assert answers[0] == answers[1]
    assert "cannot have many fields" in answers[0]["status"]["message"]
    assert len(deps.parsed_parents) == 1


def test_more_runners_than_the_memo_holds_are_validated_once_each(
    deps: HookDeps, github: InMemoryGitHub, clock: ManualClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    from hooks.runner import parse

    validated = record_calls(
        monkeypatch, parse, "validate_runner_spec", lambda spec, **kw: kw["metadata"].name
    )
    small = HookDeps(github, clock, deps.settings.model_copy(update={"hook_memo_runners": 1}))
    parents = [
        new_runner(SPEC, name="first"),
        new_runner({"organization": "acme", "repository": "acme/app"}, name="invalid"),
        new_runner(SPEC, name="third", annotations={"arc-hooks.dev/registration": "jit"}),
    ]

    parsed = [parse.parse_runner(_request(p), small) for p in parents * 3]

    assert sorted(validated) == ["first", "invalid", "third"]
    fresh = [
        parse.parse_runner(_request(p), HookDeps(github, clock, deps.settings)) for p in parents
    ]
    for again, now in zip(parsed, fresh * 3, strict=True):
        assert (again.runner, again.problems, again.jit) == (now.runner, now.problems, now.jit)
        assert again.runner is None or again.pod() == now.pod()
    assert parsed[1].problems and not parsed[0].problems and parsed[2].jit


def test_a_runners_spec_is_checked_again_only_when_its_pod_could_change(
    deps: HookDeps, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A Runner's life changes its metadata (Metacontroller's finalizer, then deletion): the
    spec's problems depend on the spec and what the pod takes from the metadata only."""
    from hooks.runner import parse

    validated = record_calls(
        monkeypatch, parse, "validate_runner_spec", lambda spec, **kw: str(kw["metadata"].labels)
    )
    invalid = {"organization": "acme", "repository": "acme/app"}
    parent = new_runner(invalid, name="changing")
    finalized = json.loads(json.dumps(parent))
    finalized["metadata"]["finalizers"] = ["metacontroller.io/compositecontroller-runner"]
    deleted = json.loads(json.dumps(finalized))
    deleted["metadata"].update(deletionTimestamp="2026-01-01T00:00:00Z", generation=2)
    relabelled = json.loads(json.dumps(deleted))
    relabelled["metadata"]["labels"] = {"team": "a"}

    parsed = [parse.parse_runner(_request(p), deps) for p in (parent, finalized, deleted)]
    assert len(validated) == 1
    assert len({p.problems for p in parsed}) == 1 and parsed[0].problems
    assert parsed[2].runner is not None and parsed[2].runner.metadata.deletion_timestamp

    parse.parse_runner(_request(relabelled), deps)
    assert validated[-1] == str({"team": "a"}) and len(validated) == 2


def test_the_memo_holds_as_many_runners_as_the_setting_says(
    deps: HookDeps, github: InMemoryGitHub, clock: ManualClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Metacontroller syncs each Runner in turn: with HOOK_MEMO_RUNNERS at least their number,
    the second round parses none of them."""
    from hooks.runner import parse

    parsed = record_calls(monkeypatch, parse, "_parse_now", lambda p, *_: p["metadata"]["name"])
    parents = [new_runner(SPEC, name=f"runner-{index}") for index in range(5)]

    def parsed_in_two_rounds(memo_runners: int) -> int:
        parsed.clear()
        update = {"hook_memo_runners": memo_runners}
        sized = HookDeps(github, clock, deps.settings.model_copy(update=update))
        for _ in range(2):
            for parent in parents:
                parse.parse_runner(_request(parent), sized)
        return len(parsed)

    assert parsed_in_two_rounds(5) == 5
    assert parsed_in_two_rounds(4) == 10  # one short: each is evicted before its next turn


def test_a_runners_pod_and_secret_are_read_once_per_state(
    deps: HookDeps, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Periodic syncs find the pod and Secret as they were: read once, until either changes."""
    from hooks.runner import controller

    read = record_calls(
        monkeypatch, controller, "observe_pod", lambda pod: pod["metadata"]["resourceVersion"]
    )
    pod = _pod_of(sync_runner(_request(new_runner(SPEC)), deps).to_wire())
    pod["metadata"] = {**pod["metadata"], "uid": "pod-1", "resourceVersion": "5"}
    pod["status"] = running_status(format_time(deps.clock.now()))
    secret = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "example-runner-registration", "uid": "s-1", "resourceVersion": "3"},
    }

    def answer() -> dict[str, Any]:
        request = CompositeHookRequest.model_validate(
            {
                "parent": new_runner(SPEC),
                "children": {"Pod.v1": {"p": pod}, "Secret.v1": {"s": secret}},
            }
        )
        return sync_runner(request, deps).to_wire()

    first, second = answer(), answer()
    pod["status"] = running_status(format_time(deps.clock.now()), exit_code=0)
    pod["metadata"]["resourceVersion"] = "6"
    third = answer()

    assert read == ["5", "6"]
    assert UID.sub("uid", str(first)) == UID.sub("uid", str(second))
    assert "gracefulStop" not in first["status"]
    assert third["status"]["gracefulStop"]["reason"] == "RunnerCompleted"  # the new state read


# ---------------------------------------------------------------- worker threads


def test_workers_answer_raise_and_see_the_callers_context() -> None:
    workers = WorkerThreads()
    where: contextvars.ContextVar[str] = contextvars.ContextVar("where", default="-")

    def fail() -> None:
        raise KeyError("boom")

    async def main() -> tuple[int, str, str]:
        where.set("caller")
        total = await workers.run(sum, [1, 2, 3])
        seen = await workers.run(where.get)
        with pytest.raises(KeyError, match="boom"):
            await workers.run(fail)
        return total, seen, threading.current_thread().name

    total, seen, loop_thread = asyncio.run(main())
    assert (total, seen) == (6, "caller")
    assert not loop_thread.startswith("hook-worker")


def test_a_worker_knows_the_loop_that_handed_it_the_call() -> None:
    workers = WorkerThreads()

    async def schedule_back() -> str:
        return threading.current_thread().name

    def in_worker() -> tuple[bool, str]:
        loop = dispatching_loop()
        assert loop is not None
        ran_on = asyncio.run_coroutine_threadsafe(schedule_back(), loop).result(timeout=5)
        return loop is not None, ran_on

    async def main() -> tuple[asyncio.AbstractEventLoop, bool, str, bool]:
        found, ran_on = await workers.run(in_worker)
        after = await workers.run(dispatching_loop)
        return asyncio.get_running_loop(), found, ran_on, after is asyncio.get_running_loop()

    _, found, ran_on, again = asyncio.run(main())
    assert found and again
    assert not ran_on.startswith("hook-worker")  # on the loop's thread
    assert dispatching_loop() is None  # not in a worker call


def test_workers_run_calls_side_by_side_up_to_their_limit() -> None:
    workers = WorkerThreads(max_threads=3)
    running = 0
    most = 0
    lock = threading.Lock()

    def slow(index: int) -> int:
        nonlocal running, most
        with lock:
            running += 1
            most = max(most, running)
        time.sleep(0.05)
        with lock:
            running -= 1
        return index

    async def main() -> list[int]:
        return list(await asyncio.gather(*(workers.run(slow, i) for i in range(8))))

    assert asyncio.run(main()) == list(range(8))
    assert most == 3
    assert workers.threads == 3


def test_idle_workers_end() -> None:
    workers = WorkerThreads(idle_seconds=0.05)

    async def main() -> None:
        await asyncio.gather(*(workers.run(time.sleep, 0.01) for _ in range(3)))

    asyncio.run(main())
    assert workers.threads >= 1
    deadline = time.monotonic() + 5
    while workers.threads and time.monotonic() < deadline:
        time.sleep(0.01)
    assert workers.threads == 0
    asyncio.run(main())  # and start again when needed


def test_a_cancelled_caller_drops_the_answer_quietly() -> None:
    workers = WorkerThreads()
    release = threading.Event()
    problems: list[dict[str, Any]] = []

    async def main() -> None:
        asyncio.get_running_loop().set_exception_handler(lambda _, ctx: problems.append(ctx))
        call = asyncio.ensure_future(workers.run(release.wait))
        await asyncio.sleep(0.01)
        call.cancel()
        release.set()
        await asyncio.sleep(0.05)  # the answer arrives after the cancellation
        assert call.cancelled()

    asyncio.run(main())
    assert problems == []


# ----------------------------------------------------------- lookups by name

_NAMES = st.sampled_from(["a", "b", "c", "a-0"])


@st.composite
def _observed_groups(draw: st.DrawFn) -> dict[str, dict[str, Any]]:
    """Pods and Secrets under both inner-key formats and two apiVersions, names repeating
    across namespaces and groups."""
    groups: dict[str, dict[str, Any]] = {}
    for group_key in draw(st.lists(st.sampled_from(["Pod.v1", "Pod.v2", "Secret.v1"]))):
        members = groups.setdefault(group_key, {})
        for index, (name, namespace) in enumerate(
            draw(st.lists(st.tuples(_NAMES, st.sampled_from(["x", "y"])), max_size=6))
        ):
            members[f"{namespace}/{name}/{index}"] = {
                "metadata": {"name": name, "namespace": namespace, "uid": f"{group_key}-{index}"}
            }
    return groups


@given(groups=_observed_groups(), related=st.booleans())
def test_objects_by_name_finds_what_object_named_finds(
    groups: dict[str, dict[str, Any]], related: bool
) -> None:
    """A set's sync looks a thousand members up in one index; each lookup must find the very
    object the one-by-one lookup finds, duplicates included."""
    parent = {"metadata": {"name": "p", "namespace": "x"}}
    request = CompositeHookRequest.model_validate(
        {
            "parent": parent,
            "children": {} if related else groups,
            "related": groups if related else {},
        }
    )
    for kind in ("Pod", "Secret"):
        index = request.objects_by_name(kind, related=related)
        for name in ["a", "b", "c", "a-0", "", "missing"]:
            assert index.get(name) is request.object_named(kind, name, related=related)


# ---------------------------------------------------------------- a runner list's changes

_LISTED = st.lists(
    # Ids from a small range: GitHub's are unique, but a list read page by page may repeat one.
    st.tuples(st.integers(1, 9), st.sampled_from(["a", "b", "c", "d"]), st.booleans()),
    max_size=8,
).map(
    lambda rows: RunnerListing(
        tuple(
            GitHubRunner(id=runner_id, name=name, status="online", busy=busy)
            for runner_id, name, busy in rows
        )
    )
)
_CHANGES = st.lists(
    st.tuples(
        st.sampled_from(["without", "busy", "corrected"]),
        st.integers(0, 9),  # a runner id (some not listed)
        st.sampled_from(["a", "b", "c", "d", "e"]),
    ),
    max_size=8,
)


@given(listing=_LISTED, changes=_CHANGES, look_first=st.booleans())
def test_a_runner_lists_changes_are_the_plain_ones(
    listing: RunnerListing, changes: list[tuple[str, int, str]], look_first: bool
) -> None:
    """The cache changes its shared list once per runner removed or found busy; each change
    keeps the name index instead of building it again. Whatever the changes, the listing and
    every name's lookup are what the plain definitions give, repeated names and ids included."""
    plain = listing.runners
    for change, runner_id, name in changes:
        if look_first:
            listing.named(name)  # the index exists before the change
        if change == "without":
            listing = listing.without(runner_id)
            plain = tuple(r for r in plain if r.id != runner_id)
        elif change == "busy":
            listing = listing.marked_busy(runner_id)
            plain = tuple(replace(r, busy=True) if r.id == runner_id else r for r in plain)
        else:
            found = (GitHubRunner(id=100 + runner_id, name=name, status="offline", busy=False),)
            listing = listing.corrected(name, found)
            plain = (*(r for r in plain if r.name != name), *found)
        assert listing.runners == plain
        for each in ["a", "b", "c", "d", "e"]:
            assert listing.named(each) == next((r for r in plain if r.name == each), None)


_JSON_LEAVES = st.none() | st.booleans() | st.integers(-(2**53), 2**53) | st.text(max_size=5)
_JSON_VALUES = st.recursive(
    _JSON_LEAVES,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3)
    ),
    max_leaves=8,
)


@given(
    children=st.lists(
        st.tuples(st.dictionaries(st.text(max_size=4), _JSON_VALUES, max_size=4), st.booleans()),
        max_size=5,
    )
)
def test_an_answer_with_shared_children_encodes_as_the_plain_answer(
    children: list[tuple[dict[str, Any], bool]],
) -> None:
    wire = {"status": {"replicas": 1}, "children": [dict(child) for child, _ in children]}
    with_shared = {
        "status": {"replicas": 1},
        "children": [SharedChild(child) if shared else child for child, shared in children],
    }
    for _ in range(3):  # encoded with the answer, then once, then that encoding reused
        assert encode_answer(with_shared) == orjson.dumps(wire)


def test_a_set_answers_a_changed_runner_as_it_is_now_not_as_encoded_before() -> None:
    """A Runner's encoding is kept with its reading (one state: uid and resourceVersion); a new
    state is read, and encoded, anew."""
    clock = ManualClock(datetime(2026, 1, 5, 9, 0, tzinfo=UTC))
    client = hook_client(create_app(hook_settings(), github=InMemoryGitHub(clock), clock=clock))
    parent = {
        "apiVersion": "actions.summerwind.dev/v1alpha1",
        "kind": "RunnerReplicaSet",
        "metadata": {"name": "pool", "namespace": "default", "uid": "rrs-1", "generation": 1},
        "spec": {"replicas": 2, "template": {"spec": {"organization": "acme"}}},
    }

    def runner(name: str, version: str, labels: dict[str, str]) -> dict[str, Any]:
        return {
            "apiVersion": "actions.summerwind.dev/v1alpha1",
            "kind": "Runner",
            "metadata": {
                "name": name,
                "namespace": "default",
                "uid": f"uid-{name}",
                "resourceVersion": version,
                "creationTimestamp": "2026-01-05T08:00:00Z",
                "labels": labels,
            },
            "spec": {"organization": "acme"},
            "status": {"phase": "Running", "ready": True, "online": True, "busy": False},
        }

    def kept_labels(runners: list[dict[str, Any]]) -> dict[str, dict[str, str]]:
        children = {f"default/{r['metadata']['name']}": r for r in runners}
        request = {"controller": {}, "parent": parent, "children": {"Runner.v1": children}}
        response = client.post("/sync/runnerreplicaset", json=request)
        assert response.status_code == 200, response.text
        answer = response.json()
        return {c["metadata"]["name"]: c["metadata"]["labels"] for c in answer["children"]}

    first = [runner("a", "1", {"pool": "x"}), runner("b", "1", {"pool": "x"})]
    assert kept_labels(first) == {"a": {"pool": "x"}, "b": {"pool": "x"}}
    assert kept_labels(first) == {"a": {"pool": "x"}, "b": {"pool": "x"}}  # from the memo
    changed = [runner("a", "2", {"pool": "y"}), first[1]]
    assert kept_labels(changed) == {"a": {"pool": "y"}, "b": {"pool": "x"}}
