"""The caching rules of CachedGitHub, against a scripted port on a manual clock."""

from __future__ import annotations

import math
import threading
from collections import Counter
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from typing import TypeVar

import pytest

from hooks.clock import ManualClock
from hooks.github import cached as cached_module
from hooks.github.cached import FAILED_READ_MEMORY, CachedGitHub
from hooks.github.port import (
    MAX_RATE_LIMIT_WAIT,
    GitHubError,
    GitHubPort,
    GitHubRunner,
    JitConfig,
    RateLimitedError,
    RegistrationToken,
    RemoveOutcome,
    RemoveResult,
    RunnerGroupInfo,
    Scope,
    WorkflowJob,
    WorkflowRun,
)
from hooks.github.rest import PER_PAGE
from hooks.settings import Settings

T = TypeVar("T")

ORG = Scope(organization="acme")
REPO = Scope(repository="acme/app")


class ScriptedPort:
    """An in-memory port that counts calls and answers what the test scripts."""

    def __init__(self, clock: ManualClock) -> None:
        self.clock = clock
        self.calls: Counter[str] = Counter()
        self.runners: dict[Scope, list[GitHubRunner]] = {}
        self.token_ttl = timedelta(hours=1)
        self.removals: dict[int, RemoveResult] = {}
        self.groups = {"": 1, "gpu": 7}
        self.list_hook: Callable[[], None] | None = None
        self.list_error: GitHubError | None = None
        self.jit_error: GitHubError | None = None
        self.token_error: GitHubError | None = None
        self.runs: dict[tuple[str, str], list[WorkflowRun]] = {}
        self.jobs: dict[tuple[str, int], list[WorkflowJob]] = {}
        self.visible_groups: dict[tuple[str, str], list[RunnerGroupInfo]] = {}
        # For the workflow and runner-group reads: called first, then raised if set.
        self.read_hook: Callable[[], None] | None = None
        self.read_error: GitHubError | None = None

    def list_runners(
        self, scope: Scope, *, not_before: datetime | None = None
    ) -> Sequence[GitHubRunner]:
        self.calls["list"] += 1
        answer = list(self.runners.get(scope, []))
        if self.list_hook is not None:
            self.list_hook()
        if self.list_error is not None:
            raise self.list_error
        return answer

    def runners_named(
        self, scope: Scope, name: str, *, not_before: datetime | None = None
    ) -> Sequence[GitHubRunner]:
        self.calls["named"] += 1
        answer = [r for r in self.runners.get(scope, []) if r.name == name]
        if self.list_hook is not None:
            self.list_hook()
        if self.list_error is not None:
            raise self.list_error
        return answer

    def registration_token(self, scope: Scope) -> RegistrationToken:
        self.calls["token"] += 1
        if self.token_error is not None:
            raise self.token_error
        return RegistrationToken(
            token=f"token-{self.calls['token']}", expires_at=self.clock.now() + self.token_ttl
        )

    def generate_jit_config(
        self,
        scope: Scope,
        name: str,
        labels: Sequence[str],
        runner_group_id: int,
        work_folder: str,
    ) -> JitConfig:
        self.calls["jit"] += 1
        if self.jit_error is not None:
            raise self.jit_error
        runner = GitHubRunner(id=100 + self.calls["jit"], name=name, status="offline", busy=False)
        self.runners.setdefault(scope, []).append(runner)
        return JitConfig(runner=runner, encoded_jit_config="config")

    def runner_group_id(self, scope: Scope, group_name: str) -> int:
        self.calls["group"] += 1
        return self.groups[group_name]

    def remove_runner(
        self, scope: Scope, runner_id: int, *, not_before: datetime | None = None
    ) -> RemoveResult:
        self.calls["remove"] += 1
        result = self.removals.get(runner_id, RemoveResult(RemoveOutcome.REMOVED))
        if result.outcome is RemoveOutcome.REMOVED:
            self.runners[scope] = [r for r in self.runners.get(scope, []) if r.id != runner_id]
        return result

    def list_workflow_runs(self, repository: str, status: str) -> Sequence[WorkflowRun]:
        self._read("runs")
        return list(self.runs.get((repository, status), []))

    def list_workflow_jobs(self, repository: str, run_id: int) -> Sequence[WorkflowJob]:
        self._read("jobs")
        return list(self.jobs.get((repository, run_id), []))

    def visible_runner_groups(
        self, organization: str, repository_name: str
    ) -> Sequence[RunnerGroupInfo]:
        self._read("visible_groups")
        return list(self.visible_groups.get((organization, repository_name), []))

    def _read(self, kind: str) -> None:
        self.calls[kind] += 1
        if self.read_hook is not None:
            self.read_hook()
        if self.read_error is not None:
            raise self.read_error


def runner(runner_id: int, busy: bool = False) -> GitHubRunner:
    return GitHubRunner(id=runner_id, name=f"r{runner_id}", status="online", busy=busy)


@pytest.fixture
def port(clock: ManualClock) -> ScriptedPort:
    scripted = ScriptedPort(clock)
    scripted.runners[ORG] = [runner(1), runner(2)]
    return scripted


def make_cache(port: ScriptedPort, clock: ManualClock, **env: float) -> CachedGitHub:
    settings = Settings.model_validate(
        {
            "GITHUB_LIST_RUNNERS_CACHE_TTL": env.get("ttl", 60.0),
            "UNREGISTRATION_RETRY_DELAY": env.get("busy_delay", 60.0),
            "RATE_LIMIT_RETRY_DELAY": env.get("rate_delay", 30.0),
            **{name: env[key] for key, name in OPTIONAL_TTLS.items() if key in env},
        }
    )
    return CachedGitHub(port, settings, clock)


# Left at their defaults unless a test sets them.
OPTIONAL_TTLS = {
    "workflow_ttl": "GITHUB_WORKFLOW_CACHE_TTL",
    "groups_ttl": "GITHUB_RUNNER_GROUPS_CACHE_TTL",
}


def test_is_a_port(port: ScriptedPort, clock: ManualClock) -> None:
    as_port: GitHubPort = make_cache(port, clock)
    assert as_port.list_runners(ORG)


def test_list_is_cached_within_ttl_and_refetched_after(
    port: ScriptedPort, clock: ManualClock
) -> None:
    cache = make_cache(port, clock)
    assert [r.id for r in cache.list_runners(ORG)] == [1, 2]
    port.runners[ORG].append(runner(3))
    clock.advance(59)
    assert [r.id for r in cache.list_runners(ORG)] == [1, 2]
    assert port.calls["list"] == 1
    clock.advance(1)
    assert [r.id for r in cache.list_runners(ORG)] == [1, 2, 3]
    assert port.calls["list"] == 2


def test_a_list_says_until_when_it_is_served(port: ScriptedPort, clock: ManualClock) -> None:
    """Runners look again just after their list stops being served: the list carries when."""
    cache = make_cache(port, clock)
    asked_at = clock.now()
    listing = cache.list_runners(ORG)
    clock.advance(30)

    assert listing.asked_at == asked_at
    assert listing.fresh_until == asked_at + timedelta(seconds=60)
    assert cache.list_runners(ORG).fresh_until == listing.fresh_until  # the same list


def test_list_is_cached_per_scope(port: ScriptedPort, clock: ManualClock) -> None:
    port.runners[REPO] = [runner(9)]
    cache = make_cache(port, clock)
    assert [r.id for r in cache.list_runners(REPO)] == [9]
    assert [r.id for r in cache.list_runners(ORG)] == [1, 2]
    cache.list_runners(REPO)
    cache.list_runners(ORG)
    assert port.calls["list"] == 2


def test_a_failed_list_is_not_asked_again_for_half_a_minute(
    port: ScriptedPort, clock: ManualClock
) -> None:
    """Found by a hostile probe: during an outage of GitHub every Runner and member asked for
    the list itself, each with its own freshness (4,010 failed lists from 929 syncs of a
    RunnerSet of 8 in 8 minutes)."""
    cache = make_cache(port, clock)
    port.list_error = GitHubError("boom", 502)
    for not_before in (None, clock.now(), clock.now() - timedelta(minutes=5)):
        with pytest.raises(GitHubError) as failed:
            cache.list_runners(ORG, not_before=not_before)
        # The failure's own text, whenever asked: it goes into status conditions, where a
        # text that changed (a countdown) rewrote the object at every sync (found in review).
        assert (str(failed.value), failed.value.status) == ("boom", 502)
        clock.advance(1)
    assert port.calls["list"] == 1
    port.list_error = None
    cache.list_runners(REPO)  # another scope asks
    clock.advance(FAILED_READ_MEMORY.total_seconds() - 3)
    assert [r.id for r in cache.list_runners(ORG)] == [1, 2]
    assert port.calls["list"] == 3


def test_rate_limited_list_is_answered_locally_until_the_wait_is_over(
    port: ScriptedPort, clock: ManualClock
) -> None:
    cache = make_cache(port, clock)
    port.list_error = RateLimitedError("slow down", retry_after=120, status=403)
    with pytest.raises(RateLimitedError):
        cache.list_runners(ORG)
    port.list_error = None
    clock.advance(100)
    with pytest.raises(RateLimitedError) as raised:
        cache.list_runners(ORG)
    assert raised.value.retry_after == pytest.approx(20)
    assert port.calls["list"] == 1
    clock.advance(20)
    assert [r.id for r in cache.list_runners(ORG)] == [1, 2]
    assert port.calls["list"] == 2


@pytest.mark.parametrize("wait", [math.inf, math.nan, 1e300])
def test_a_wait_no_github_would_ask_for_is_one_hour_at_most(
    port: ScriptedPort, clock: ManualClock, wait: float
) -> None:
    """A port's rate limit with an unschedulable wait (a proxy's `retry-after: inf`) had
    overflowed the backoff inside the call: the call in flight was never let go, and every
    later list of that scope waited on it for ever."""
    cache = make_cache(port, clock)
    port.list_error = RateLimitedError("slow down", retry_after=wait, status=429)
    with pytest.raises(RateLimitedError) as raised:
        cache.list_runners(ORG)
    assert raised.value.retry_after == MAX_RATE_LIMIT_WAIT
    port.list_error = None
    clock.advance(MAX_RATE_LIMIT_WAIT)
    assert [r.id for r in cache.list_runners(ORG)] == [1, 2]


def test_token_is_reused_until_less_than_30_minutes_remain(
    port: ScriptedPort, clock: ManualClock
) -> None:
    cache = make_cache(port, clock)
    first = cache.registration_token(ORG)
    clock.advance(29 * 60)
    assert cache.registration_token(ORG) is first
    clock.advance(60 - 1)  # 30 min 1 s of validity left
    assert cache.registration_token(ORG) is first
    assert port.calls["token"] == 1
    clock.advance(1)  # exactly 30 minutes left: refresh
    second = cache.registration_token(ORG)
    assert second.token != first.token
    assert second.expires_at - clock.now() >= timedelta(minutes=30)
    assert port.calls["token"] == 2


def test_token_cached_per_scope(port: ScriptedPort, clock: ManualClock) -> None:
    cache = make_cache(port, clock)
    assert cache.registration_token(ORG).token != cache.registration_token(REPO).token
    cache.registration_token(ORG)
    assert port.calls["token"] == 2


def test_short_lived_token_is_not_kept(port: ScriptedPort, clock: ManualClock) -> None:
    port.token_ttl = timedelta(minutes=20)
    cache = make_cache(port, clock)
    cache.registration_token(ORG)
    cache.registration_token(ORG)
    assert port.calls["token"] == 2


def test_runner_group_id_cached_for_a_bounded_time(port: ScriptedPort, clock: ManualClock) -> None:
    cache = make_cache(port, clock)
    assert cache.runner_group_id(ORG, "gpu") == 7
    assert cache.runner_group_id(ORG, "gpu") == 7
    assert cache.runner_group_id(ORG, "") == 1
    assert port.calls["group"] == 2
    port.groups["gpu"] = 8
    clock.advance(10 * 60)
    assert cache.runner_group_id(ORG, "gpu") == 8


def test_runners_named_comes_from_a_list_recent_enough(
    port: ScriptedPort, clock: ManualClock
) -> None:
    cache = make_cache(port, clock)
    cache.list_runners(ORG)
    listed_at = clock.now()
    clock.advance(5)
    assert [r.id for r in cache.runners_named(ORG, "r2", not_before=listed_at)] == [2]
    assert list(cache.runners_named(ORG, "r7")) == []
    assert (port.calls["list"], port.calls["named"]) == (1, 0)


def test_runners_named_lists_a_one_page_scope_again_for_every_reader(
    port: ScriptedPort, clock: ManualClock
) -> None:
    """A scope of up to 100 runners costs one call either way: the list, which then serves
    the other readers too."""
    cache = make_cache(port, clock)
    cache.list_runners(ORG)
    clock.advance(5)
    port.runners[ORG] = [runner(1)]  # r2 removed itself after its job
    stopped_at = clock.now()
    assert list(cache.runners_named(ORG, "r2", not_before=stopped_at)) == []
    assert [r.id for r in cache.runners_named(ORG, "r1", not_before=stopped_at)] == [1]
    assert [r.id for r in cache.list_runners(ORG)] == [1]
    assert (port.calls["list"], port.calls["named"]) == (2, 0)


def listed_big_scope(port: ScriptedPort, clock: ManualClock) -> CachedGitHub:
    """A cache that listed a scope of more than one page, 5 seconds ago."""
    port.runners[ORG] = [runner(i) for i in range(1, PER_PAGE + 2)]
    cache = make_cache(port, clock)
    cache.list_runners(ORG)
    clock.advance(5)
    return cache


def test_runners_named_asks_a_larger_scope_by_name_when_its_list_is_older_than_the_fact(
    port: ScriptedPort, clock: ManualClock
) -> None:
    """A runner seen stopped after the list was read: GitHub is asked for its name alone (one
    page instead of one per hundred runners), and the answer corrects the cached list."""
    cache = listed_big_scope(port, clock)
    port.runners[ORG] = [r for r in port.runners[ORG] if r.id != 2]
    stopped_at = clock.now()
    assert list(cache.runners_named(ORG, "r2", not_before=stopped_at)) == []
    assert (port.calls["list"], port.calls["named"]) == (1, 1)
    assert 2 not in {r.id for r in cache.list_runners(ORG)}
    assert port.calls["list"] == 1
    # The corrected list keeps the age of its own read: a later check asks by name again.
    assert list(cache.runners_named(ORG, "r2", not_before=stopped_at)) == []
    assert port.calls["named"] == 2


def test_runners_named_replaces_the_listed_state_of_that_runner(
    port: ScriptedPort, clock: ManualClock
) -> None:
    cache = listed_big_scope(port, clock)
    port.runners[ORG][1] = runner(2, busy=True)
    (found,) = cache.runners_named(ORG, "r2", not_before=clock.now())
    assert found.busy
    assert {r.id: r.busy for r in cache.list_runners(ORG)}[2] is True
    assert port.calls["list"] == 1


def test_runners_named_failure_is_an_error_and_not_kept(
    port: ScriptedPort, clock: ManualClock
) -> None:
    cache = listed_big_scope(port, clock)
    port.list_error = GitHubError("boom", 502)
    with pytest.raises(GitHubError):
        cache.runners_named(ORG, "r1", not_before=clock.now())
    port.list_error = None
    assert [r.id for r in cache.runners_named(ORG, "r1", not_before=clock.now())] == [1]
    assert port.calls["named"] == 2


def during_the_next_read(port: ScriptedPort, action: Callable[[], None]) -> None:
    """Run `action` once, while the port answers its next runner read."""

    def once() -> None:
        port.list_hook = None
        action()

    port.list_hook = once


def test_a_removal_during_a_lookup_by_name_stays_removed(
    port: ScriptedPort, clock: ManualClock
) -> None:
    """The pod decorator's DELETE lands while the Runner's lookup by name is in flight: the
    lookup's older answer goes to its caller but does not bring the runner back to the list."""
    cache = listed_big_scope(port, clock)

    def meanwhile() -> None:
        assert cache.remove_runner(ORG, 2).outcome is RemoveOutcome.REMOVED

    during_the_next_read(port, meanwhile)
    found = cache.runners_named(ORG, "r2", not_before=clock.now())
    assert [r.id for r in found] == [2]  # read before the DELETE
    assert 2 not in {r.id for r in cache.list_runners(ORG)}
    assert port.calls["list"] == 1


def test_a_lookup_by_name_does_not_correct_a_list_read_after_it_was_asked(
    port: ScriptedPort, clock: ManualClock
) -> None:
    cache = listed_big_scope(port, clock)
    asked_at = clock.now()

    def meanwhile() -> None:
        port.runners[ORG] = [r for r in port.runners[ORG] if r.id != 2]
        clock.advance(61)  # the old list expires; another reader lists anew
        assert 2 not in {r.id for r in cache.list_runners(ORG)}

    port.runners[ORG][1] = runner(2, busy=True)  # what the lookup by name reads first
    during_the_next_read(port, meanwhile)
    cache.runners_named(ORG, "r2", not_before=asked_at)
    assert 2 not in {r.id for r in cache.list_runners(ORG)}


def test_an_answer_counts_as_of_when_it_was_asked_not_when_it_came(
    port: ScriptedPort, clock: ManualClock
) -> None:
    """A list asked for before a runner was seen stopped, and answered after, says nothing of
    the runner after its stop."""
    cache = make_cache(port, clock)
    seen: dict[str, datetime] = {}

    def meanwhile() -> None:
        clock.advance(2)
        seen["stopped_at"] = clock.now()
        port.runners[ORG] = [runner(1)]
        clock.advance(2)

    during_the_next_read(port, meanwhile)
    cache.list_runners(ORG)
    assert list(cache.runners_named(ORG, "r2", not_before=seen["stopped_at"])) == []
    assert port.calls["list"] == 2


def test_a_lookup_by_name_lets_a_list_in_flight_be_kept(
    port: ScriptedPort, clock: ManualClock
) -> None:
    cache = listed_big_scope(port, clock)
    stopped_at = clock.now()
    clock.advance(61)  # the cached list expired
    entered, release = threading.Event(), threading.Event()

    def slow_list() -> None:
        entered.set()
        assert release.wait(10)

    port.list_hook = slow_list
    lister = threading.Thread(target=cache.list_runners, args=(ORG,))
    lister.start()
    assert entered.wait(10)
    port.list_hook = None
    cache.runners_named(ORG, "r2", not_before=stopped_at)  # completes first
    release.set()
    lister.join(10)
    cache.list_runners(ORG)
    assert port.calls["list"] == 2  # the list in flight was kept


def test_removed_runner_is_evicted_from_the_cached_list(
    port: ScriptedPort, clock: ManualClock
) -> None:
    cache = make_cache(port, clock)
    assert [r.id for r in cache.list_runners(ORG)] == [1, 2]
    assert cache.remove_runner(ORG, 1).outcome is RemoveOutcome.REMOVED
    assert [r.id for r in cache.list_runners(ORG)] == [2]
    assert port.calls["list"] == 1


def test_not_found_runner_is_evicted_from_the_cached_list(
    port: ScriptedPort, clock: ManualClock
) -> None:
    cache = make_cache(port, clock)
    cache.list_runners(ORG)
    port.removals[2] = RemoveResult(RemoveOutcome.NOT_FOUND)
    assert cache.remove_runner(ORG, 2).outcome is RemoveOutcome.NOT_FOUND
    assert [r.id for r in cache.list_runners(ORG)] == [1]


def test_gone_runner_is_not_deleted_twice(port: ScriptedPort, clock: ManualClock) -> None:
    cache = make_cache(port, clock)
    assert cache.remove_runner(ORG, 1).outcome is RemoveOutcome.REMOVED
    assert cache.remove_runner(ORG, 1).outcome is RemoveOutcome.REMOVED
    assert port.calls["remove"] == 1


def test_busy_answer_is_remembered_for_the_retry_delay(
    port: ScriptedPort, clock: ManualClock
) -> None:
    cache = make_cache(port, clock, busy_delay=60)
    cache.list_runners(ORG)
    port.removals[1] = RemoveResult(RemoveOutcome.BUSY, message="still running a job")
    for _ in range(50):
        assert cache.remove_runner(ORG, 1).outcome is RemoveOutcome.BUSY
        clock.advance(1)
    assert port.calls["remove"] == 1
    # GitHub's answer is fresher than the cached list.
    assert [r.busy for r in cache.list_runners(ORG) if r.id == 1] == [True]
    clock.advance(10)  # 60 s after the DELETE
    del port.removals[1]
    assert cache.remove_runner(ORG, 1).outcome is RemoveOutcome.REMOVED
    assert port.calls["remove"] == 2


def test_rate_limited_answer_is_remembered_for_retry_after(
    port: ScriptedPort, clock: ManualClock
) -> None:
    cache = make_cache(port, clock)
    port.removals[1] = RemoveResult(RemoveOutcome.RATE_LIMITED, retry_after=90)
    assert cache.remove_runner(ORG, 1).retry_after == 90
    clock.advance(30)
    again = cache.remove_runner(ORG, 1)
    assert again.outcome is RemoveOutcome.RATE_LIMITED
    assert again.retry_after == pytest.approx(60)
    assert port.calls["remove"] == 1
    clock.advance(60)
    del port.removals[1]
    assert cache.remove_runner(ORG, 1).outcome is RemoveOutcome.REMOVED
    assert port.calls["remove"] == 2


def test_rate_limited_without_retry_after_uses_the_configured_delay(
    port: ScriptedPort, clock: ManualClock
) -> None:
    cache = make_cache(port, clock, rate_delay=30)
    port.removals[1] = RemoveResult(RemoveOutcome.RATE_LIMITED)
    cache.remove_runner(ORG, 1)
    clock.advance(29)
    cache.remove_runner(ORG, 1)
    assert port.calls["remove"] == 1
    clock.advance(1)
    cache.remove_runner(ORG, 1)
    assert port.calls["remove"] == 2


@pytest.mark.parametrize("outcome", [RemoveOutcome.FORBIDDEN, RemoveOutcome.ERROR])
def test_failures_are_not_remembered(
    port: ScriptedPort, clock: ManualClock, outcome: RemoveOutcome
) -> None:
    cache = make_cache(port, clock)
    port.removals[1] = RemoveResult(outcome)
    cache.remove_runner(ORG, 1)
    cache.remove_runner(ORG, 1)
    assert port.calls["remove"] == 2


def test_remove_dedupe_is_per_scope_and_runner(port: ScriptedPort, clock: ManualClock) -> None:
    cache = make_cache(port, clock)
    port.removals[1] = RemoveResult(RemoveOutcome.BUSY)
    port.removals[2] = RemoveResult(RemoveOutcome.BUSY)
    cache.remove_runner(ORG, 1)
    cache.remove_runner(ORG, 2)
    cache.remove_runner(REPO, 1)
    assert port.calls["remove"] == 3


def test_jit_config_is_not_cached_and_its_registration_joins_the_cached_list(
    port: ScriptedPort, clock: ManualClock
) -> None:
    # A fleet of JIT runners had its scope listed anew after every config (the list was
    # evicted): the registration GitHub answered with is what the next list would show.
    cache = make_cache(port, clock)
    cache.list_runners(ORG)
    first = cache.generate_jit_config(ORG, "a", ["self-hosted"], 1, "_work")
    second = cache.generate_jit_config(ORG, "b", ["self-hosted"], 1, "_work")
    assert first.runner.id != second.runner.id
    assert port.calls["jit"] == 2
    assert [r.name for r in cache.list_runners(ORG)] == ["r1", "r2", "a", "b"]
    assert port.calls["list"] == 1


@pytest.mark.parametrize("error", [GitHubError("timeout", None), GitHubError("broken", 502)])
def test_a_jit_config_without_an_answer_evicts_the_list(
    port: ScriptedPort, clock: ManualClock, error: GitHubError
) -> None:
    """The registration may exist all the same: the next read lists anew."""
    cache = make_cache(port, clock)
    cache.list_runners(ORG)
    port.jit_error = error
    with pytest.raises(GitHubError):
        cache.generate_jit_config(ORG, "a", ["self-hosted"], 1, "_work")
    cache.list_runners(ORG)
    assert port.calls["list"] == 2


def test_a_rate_limited_jit_config_is_refused_locally_until_the_wait_is_over(
    port: ScriptedPort, clock: ManualClock
) -> None:
    # Found by an independent run: a JIT RunnerSet whose runners kept finishing asked GitHub
    # at each of their syncs through a 12-minute rate limit (682 refused calls).
    cache = make_cache(port, clock)
    port.jit_error = RateLimitedError("slow down", retry_after=120, status=429)
    with pytest.raises(RateLimitedError):
        cache.generate_jit_config(ORG, "a", ["self-hosted"], 1, "_work")
    port.jit_error = None
    clock.advance(100)
    with pytest.raises(RateLimitedError) as raised:
        cache.generate_jit_config(ORG, "b", ["self-hosted"], 1, "_work")
    assert raised.value.retry_after == pytest.approx(20)
    assert port.calls["jit"] == 1
    # Another scope's configs are not held back by this one's refusal.
    cache.generate_jit_config(REPO, "c", ["self-hosted"], 1, "_work")
    clock.advance(20)
    assert cache.generate_jit_config(ORG, "b", ["self-hosted"], 1, "_work").runner.name == "b"
    assert port.calls["jit"] == 3


@pytest.mark.parametrize(("status", "remembered"), [(None, True), (502, True), (422, False)])
def test_a_jit_config_that_failed_on_githubs_side_is_not_asked_again_for_a_while(
    port: ScriptedPort, clock: ManualClock, status: int | None, remembered: bool
) -> None:
    """A server error (or no answer) is GitHub's: the next syncs would meet it too, so they
    do not ask for 30 s. A refusal of this request (422: the name is taken) says nothing of
    the next, which asks at once."""
    cache = make_cache(port, clock)
    port.jit_error = GitHubError("broken", status)
    with pytest.raises(GitHubError):
        cache.generate_jit_config(ORG, "a", ["self-hosted"], 1, "_work")
    port.jit_error = None
    clock.advance(FAILED_READ_MEMORY.total_seconds() - 1)
    if remembered:
        # In the scope's words: the first request's runner name may be another namespace's.
        with pytest.raises(GitHubError, match="a JIT config of /orgs/acme failed") as raised:
            cache.generate_jit_config(ORG, "b", ["self-hosted"], 1, "_work")
        assert "broken" not in str(raised.value) and "'a'" not in str(raised.value)
        assert port.calls["jit"] == 1
        clock.advance(1)
    assert cache.generate_jit_config(ORG, "a", ["self-hosted"], 1, "_work").runner.name == "a"
    assert port.calls["jit"] == 2


def test_entries_are_bounded(port: ScriptedPort, clock: ManualClock) -> None:
    settings = Settings()
    cache = CachedGitHub(port, settings, clock, max_entries=3)
    for i in range(10):
        port.removals[i] = RemoveResult(RemoveOutcome.BUSY)
        cache.remove_runner(ORG, i)
    assert len(cache._removals) == 3
    cache.remove_runner(ORG, 9)  # the newest entries are kept
    assert port.calls["remove"] == 10


def run_concurrently(
    monkeypatch: pytest.MonkeyPatch,
    hook_into_port: Callable[[Callable[[], None]], None],
    call: Callable[[], T],
    callers: int = 8,
) -> list[T]:
    """The answers of `callers` threads making `call` at once: the first is held inside the
    port until all the others wait for its flight."""
    entered = threading.Event()
    release = threading.Event()
    waiting = threading.Condition()
    waiters = 0

    def slow_port() -> None:
        entered.set()
        assert release.wait(timeout=10)

    original_wait = cached_module._Flight.wait

    def counting_wait(flight: cached_module._Flight) -> None:
        nonlocal waiters
        with waiting:
            waiters += 1
            waiting.notify_all()
        original_wait(flight)

    monkeypatch.setattr(cached_module._Flight, "wait", counting_wait)
    hook_into_port(slow_port)
    results: list[T] = []
    results_lock = threading.Lock()

    def caller() -> None:
        answer = call()
        with results_lock:
            results.append(answer)

    threads = [threading.Thread(target=caller) for _ in range(callers)]
    threads[0].start()
    assert entered.wait(timeout=10)  # the first caller is inside GitHub now
    for thread in threads[1:]:
        thread.start()
    with waiting:  # every other caller is parked on the flight
        assert waiting.wait_for(lambda: waiters == callers - 1, timeout=10)
    release.set()
    for thread in threads:
        thread.join(timeout=10)
    assert len(results) == callers
    return results


def test_concurrent_callers_share_one_list_call(
    port: ScriptedPort, clock: ManualClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = make_cache(port, clock)

    def hook(slow: Callable[[], None]) -> None:
        port.list_hook = slow

    results = run_concurrently(monkeypatch, hook, lambda: cache.list_runners(ORG))
    assert port.calls["list"] == 1
    assert all([r.id for r in result] == [1, 2] for result in results)


def test_concurrent_callers_share_a_failure(
    port: ScriptedPort, clock: ManualClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = make_cache(port, clock)
    entered = threading.Event()
    release = threading.Event()
    parked = threading.Event()

    def slow_failing_list() -> None:
        entered.set()
        assert release.wait(timeout=10)
        raise GitHubError("bad gateway", 502)

    original_wait = cached_module._Flight.wait

    def signalling_wait(flight: cached_module._Flight) -> None:
        parked.set()
        original_wait(flight)

    monkeypatch.setattr(cached_module._Flight, "wait", signalling_wait)
    port.list_hook = slow_failing_list
    errors: list[BaseException] = []

    def call() -> None:
        try:
            cache.list_runners(ORG)
        except GitHubError as exc:
            errors.append(exc)

    leader = threading.Thread(target=call)
    follower = threading.Thread(target=call)
    leader.start()
    assert entered.wait(timeout=10)
    follower.start()
    assert parked.wait(timeout=10)
    release.set()
    leader.join(timeout=10)
    follower.join(timeout=10)
    assert len(errors) == 2
    assert port.calls["list"] == 1


def test_list_fetched_during_a_removal_is_not_cached(
    port: ScriptedPort, clock: ManualClock
) -> None:
    cache = make_cache(port, clock)

    def removal_during_list() -> None:
        port.list_hook = None
        # The list answer was computed before the DELETE landed.
        cache.remove_runner(ORG, 1)

    port.list_hook = removal_during_list
    port.runners[ORG] = [runner(1), runner(2)]
    assert [r.id for r in cache.list_runners(ORG)] == [1, 2]
    # The next read does not serve the outdated list.
    assert [r.id for r in cache.list_runners(ORG)] == [2]
    assert port.calls["list"] == 2


def test_expiry_is_measured_on_the_injected_clock(port: ScriptedPort) -> None:
    clock = ManualClock(datetime(2030, 6, 1, tzinfo=UTC))
    cache = make_cache(port, clock)
    cache.list_runners(ORG)
    clock.advance(61)
    cache.list_runners(ORG)
    assert port.calls["list"] == 2


# Workflow runs and jobs, and the runner groups a repository may use


APP = "acme/app"
DEFAULT_GROUP = RunnerGroupInfo(1, "Default", default=True)
READS: dict[str, Callable[[CachedGitHub], Sequence[object]]] = {
    "runs": lambda cache: cache.list_workflow_runs(APP, "queued"),
    "jobs": lambda cache: cache.list_workflow_jobs(APP, 7),
    "visible_groups": lambda cache: cache.visible_runner_groups("acme", "app"),
}


@pytest.fixture
def activity(port: ScriptedPort) -> ScriptedPort:
    port.runs[(APP, "queued")] = [WorkflowRun(7, "queued")]
    port.jobs[(APP, 7)] = [WorkflowJob("queued", ("gpu",), 70)]
    port.visible_groups[("acme", "app")] = [DEFAULT_GROUP]
    return port


def test_runs_are_kept_30_seconds_per_repository_and_status(
    activity: ScriptedPort, clock: ManualClock
) -> None:
    cache = make_cache(activity, clock)
    assert cache.list_workflow_runs(APP, "queued") == (WorkflowRun(7, "queued"),)
    assert cache.list_workflow_runs(APP, "in_progress") == ()
    assert cache.list_workflow_runs("acme/other", "queued") == ()
    assert activity.calls["runs"] == 3
    activity.runs[(APP, "queued")].append(WorkflowRun(8, "queued"))
    clock.advance(29)
    assert [r.id for r in cache.list_workflow_runs(APP, "queued")] == [7]
    assert cache.list_workflow_runs(APP, "in_progress") == ()  # an empty answer is kept too
    assert activity.calls["runs"] == 3
    clock.advance(1)
    assert [r.id for r in cache.list_workflow_runs(APP, "queued")] == [7, 8]
    assert activity.calls["runs"] == 4


def test_jobs_are_kept_per_run_for_the_configured_time(
    activity: ScriptedPort, clock: ManualClock
) -> None:
    cache = make_cache(activity, clock, workflow_ttl=5)
    activity.jobs[(APP, 8)] = [WorkflowJob("in_progress", ("k8s",), 80)]
    assert [j.id for j in cache.list_workflow_jobs(APP, 7)] == [70]
    assert [j.id for j in cache.list_workflow_jobs(APP, 8)] == [80]
    activity.jobs[(APP, 7)] = [WorkflowJob("completed", ("gpu",), 70)]
    clock.advance(4)
    assert cache.list_workflow_jobs(APP, 7)[0].status == "queued"
    assert activity.calls["jobs"] == 2
    clock.advance(1)
    assert cache.list_workflow_jobs(APP, 7)[0].status == "completed"
    assert activity.calls["jobs"] == 3


def test_visible_runner_groups_are_kept_60_seconds_per_repository(
    activity: ScriptedPort, clock: ManualClock
) -> None:
    cache = make_cache(activity, clock)
    shared = RunnerGroupInfo(4, "shared", inherited=True)
    activity.visible_groups[("acme", "deploy")] = [DEFAULT_GROUP, shared]
    assert cache.visible_runner_groups("acme", "app") == (DEFAULT_GROUP,)
    assert cache.visible_runner_groups("acme", "deploy") == (DEFAULT_GROUP, shared)
    activity.visible_groups[("acme", "app")] = [DEFAULT_GROUP, shared]
    clock.advance(59)
    assert cache.visible_runner_groups("acme", "app") == (DEFAULT_GROUP,)
    assert activity.calls["visible_groups"] == 2
    clock.advance(1)
    assert cache.visible_runner_groups("acme", "app") == (DEFAULT_GROUP, shared)
    assert activity.calls["visible_groups"] == 3


def test_the_runner_groups_ttl_is_a_setting(activity: ScriptedPort, clock: ManualClock) -> None:
    cache = make_cache(activity, clock, groups_ttl=10, workflow_ttl=300)
    cache.visible_runner_groups("acme", "app")
    cache.list_workflow_runs(APP, "queued")
    clock.advance(10)
    cache.visible_runner_groups("acme", "app")
    cache.list_workflow_runs(APP, "queued")
    assert (activity.calls["visible_groups"], activity.calls["runs"]) == (2, 1)


@pytest.mark.parametrize("read", ["runs", "jobs"])
def test_read_errors_are_not_cached(activity: ScriptedPort, clock: ManualClock, read: str) -> None:
    cache = make_cache(activity, clock)
    activity.read_error = GitHubError("bad gateway", 502)
    with pytest.raises(GitHubError):
        READS[read](cache)
    activity.read_error = None
    assert len(READS[read](cache)) == 1
    assert len(READS[read](cache)) == 1
    assert activity.calls[read] == 2


def test_a_failed_runner_group_lookup_is_not_asked_again_for_half_a_minute(
    activity: ScriptedPort, clock: ManualClock
) -> None:
    """Every webhook delivery looks its repository's groups up: during an outage of GitHub
    the ephemeral storm asked once per job (about 400 calls), to treat every group as
    visible each time anyway."""
    cache = make_cache(activity, clock)
    activity.read_error = GitHubError("bad gateway", 502)
    for _ in range(5):
        with pytest.raises(GitHubError) as failed:
            cache.visible_runner_groups("acme", "app")
        assert "bad gateway" in str(failed.value)
    assert activity.calls["visible_groups"] == 1
    activity.read_error = None
    assert cache.visible_runner_groups("acme", "other") == ()  # another repository asks
    clock.advance(FAILED_READ_MEMORY.total_seconds() - 1)
    with pytest.raises(GitHubError):
        cache.visible_runner_groups("acme", "app")
    clock.advance(1)
    assert cache.visible_runner_groups("acme", "app") == (DEFAULT_GROUP,)
    assert activity.calls["visible_groups"] == 3


def test_rate_limited_runs_are_answered_locally_until_the_wait_is_over(
    activity: ScriptedPort, clock: ManualClock
) -> None:
    cache = make_cache(activity, clock)
    activity.read_error = RateLimitedError("slow down", retry_after=90, status=429)
    with pytest.raises(RateLimitedError):
        cache.list_workflow_runs(APP, "queued")
    activity.read_error = None
    clock.advance(60)
    with pytest.raises(RateLimitedError) as raised:
        cache.list_workflow_runs(APP, "queued")
    assert raised.value.retry_after == pytest.approx(30)
    assert len(cache.list_workflow_jobs(APP, 7)) == 1  # another read is not held back
    clock.advance(30)
    assert len(cache.list_workflow_runs(APP, "queued")) == 1
    assert activity.calls["runs"] == 2


@pytest.mark.parametrize("read", list(READS))
def test_concurrent_callers_share_one_read(
    activity: ScriptedPort, clock: ManualClock, monkeypatch: pytest.MonkeyPatch, read: str
) -> None:
    cache = make_cache(activity, clock)

    def hook(slow: Callable[[], None]) -> None:
        activity.read_hook = slow

    results = run_concurrently(monkeypatch, hook, lambda: READS[read](cache))
    assert activity.calls[read] == 1
    assert all(len(result) == 1 for result in results)


def test_a_token_still_valid_is_handed_out_while_github_refuses_a_new_one(
    port: ScriptedPort, clock: ManualClock
) -> None:
    """Found by an independent run: through a 30-minute rate limit a pool of ephemeral runners
    ran dry, though the token fetched before it was valid for 26 more minutes: the cache drops
    a token 30 minutes before it expires, and a new pod needs 10."""
    cache = make_cache(port, clock)
    first = cache.registration_token(ORG)
    clock.advance(35 * 60)  # 25 minutes left: past the cache, still good for a new pod
    port.token_error = RateLimitedError("rate limited", retry_after=600)

    assert cache.registration_token(ORG) is first
    clock.advance(15 * 60)  # 10 minutes left: no more
    with pytest.raises(RateLimitedError):
        cache.registration_token(ORG)


@pytest.mark.parametrize("status", [401, 403, 404])
def test_a_refused_token_request_is_not_answered_with_the_last_token(
    port: ScriptedPort, clock: ManualClock, status: int
) -> None:
    """Found in review: bad credentials or a scope gone were hidden for up to 20 minutes."""
    cache = make_cache(port, clock)
    cache.registration_token(ORG)
    clock.advance(35 * 60)
    port.token_error = GitHubError("refused", status)

    with pytest.raises(GitHubError):
        cache.registration_token(ORG)


def test_a_token_request_github_failed_is_answered_with_its_failure_for_a_while(
    port: ScriptedPort, clock: ManualClock
) -> None:
    """Found by an independent failure run: through an outage each pod of a set that failed
    to start synced the set, and each sync asked for a token again (362 failed requests in
    25 minutes for 2 pods)."""
    cache = make_cache(port, clock)
    port.token_error = GitHubError("create token: GitHub server error (HTTP 5xx)", 502)
    for _ in range(2):
        with pytest.raises(GitHubError) as raised:
            cache.registration_token(ORG)
        assert raised.value.status == 502
    assert port.calls["token"] == 1

    clock.advance(FAILED_READ_MEMORY.total_seconds())
    port.token_error = None
    assert cache.registration_token(ORG).token
    assert port.calls["token"] == 2
