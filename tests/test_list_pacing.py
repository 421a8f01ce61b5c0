"""A scope's runner list is served longer when listing it at the configured period would take
more than a share of the token's API budget (`hooks.github.list_pacing`)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hooks.clock import ManualClock
from hooks.github.cached import CachedGitHub
from hooks.github.list_pacing import (
    LatestRateBudget,
    ListedPages,
    RateBudget,
    list_pages,
    paced_period,
    rate_budget,
)
from hooks.github.port import GitHubRunner, Scope
from hooks.metrics import REGISTRY
from hooks.settings import Settings
from tests.test_github_cache import ScriptedPort

NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
BASE = timedelta(seconds=90)
ORG = Scope(organization="acme")


def fresh_window(limit: int = 5000) -> RateBudget:
    return RateBudget(limit=limit, remaining=limit, resets_at=NOW + timedelta(hours=1))


@pytest.mark.parametrize(
    ("runners", "budget", "seconds"),
    [
        (1000, None, 90),  # 1. no budget known: the configured period
        (1000, fresh_window(), 90),  # 10 pages: 400 calls an hour, well inside half of 5,000
        (3000, fresh_window(), 90),  # 30 pages: 1,200 an hour, still inside
        (10_000, fresh_window(), 144),  # 2. 100 pages: half of 5,000 allows one list per 144 s
        (10_000, fresh_window(15_000), 90),  # an enterprise installation's budget
        # 3. Other clients spent most of the window: half of the 200 left over 30 minutes.
        (1000, RateBudget(5000, 200, NOW + timedelta(minutes=30)), 180),
        # Nothing left: not before the reset.
        (100, RateBudget(5000, 0, NOW + timedelta(minutes=20)), 1200),
        # A window already reset (the reading is old): its remaining count says nothing.
        (1000, RateBudget(5000, 0, NOW - timedelta(seconds=1)), 90),
        # Never past the reset, however little is left: the budget is whole again then.
        (100_000, RateBudget(5000, 1, NOW + timedelta(minutes=59)), 3540),
        (100, RateBudget(5000, 1, NOW + timedelta(minutes=5)), 300),  # not an hour (review)
    ],
)
def test_the_list_period_keeps_lists_within_half_the_budget(
    runners: int, budget: RateBudget | None, seconds: float
) -> None:
    assert paced_period(BASE, list_pages(runners), budget, NOW, 0.5) == timedelta(seconds=seconds)


def test_a_configured_period_longer_than_an_hour_is_kept() -> None:
    day = timedelta(days=1)
    spent = RateBudget(5000, 0, NOW + timedelta(minutes=5))
    assert paced_period(day, list_pages(10_000), spent, NOW, 0.5) == day


@given(
    runners=st.integers(0, 1_000_000),
    base=st.floats(1, 3600),
    limit=st.integers(1, 100_000),
    spent=st.floats(0, 1),
    left=st.floats(-7200, 3600),
    share=st.floats(0.01, 1),
)
def test_lists_at_the_period_stay_within_their_share_unless_capped(
    runners: int, base: float, limit: int, spent: float, left: float, share: float
) -> None:
    remaining = int(limit * (1 - spent))
    budget = RateBudget(limit, remaining, NOW + timedelta(seconds=left))

    period = paced_period(
        timedelta(seconds=base), list_pages(runners), budget, NOW, share
    ).total_seconds()

    assert base - 1e-6 <= period <= max(base, 3600) + 1e-6
    if period < max(base, 3600) - 1e-6:  # not capped
        pages = list_pages(runners)
        assert pages * 3600 / period <= share * limit * (1 + 1e-9)
        if left > 0 and remaining == 0:  # nothing left: not before the reset
            assert period >= left - 1e-6
        elif left > 0:
            # Within the share of what is left, unless the period reaches the reset: the next
            # list then falls in the new window, with the budget whole again.
            assert period >= left - 1e-6 or pages * left / period <= share * remaining * (1 + 1e-9)


@given(runners=st.integers(0, 100_000), more=st.integers(0, 100_000))
def test_a_longer_list_is_never_served_shorter(runners: int, more: int) -> None:
    budget = RateBudget(5000, 1234, NOW + timedelta(minutes=17))
    shorter = paced_period(BASE, list_pages(runners), budget, NOW, 0.5)
    assert paced_period(BASE, list_pages(runners + more), budget, NOW, 0.5) >= shorter


def limits(limit: str, remaining: str, reset: str) -> dict[str, str]:
    return {
        "x-ratelimit-limit": limit,
        "x-ratelimit-remaining": remaining,
        "x-ratelimit-reset": reset,
    }


RESET = datetime.fromtimestamp(1772370000, UTC)


@pytest.mark.parametrize(
    ("headers", "expected"),
    [
        (
            {
                "X-RateLimit-Limit": "5000",
                "X-RateLimit-Remaining": "4321",
                "X-RateLimit-Reset": "1772370000",
            },
            RateBudget(5000, 4321, RESET),
        ),
        # Another resource's budget is not the one lists spend.
        ({**limits("30", "1", "1772370000"), "x-ratelimit-resource": "search"}, None),
        ({"x-ratelimit-limit": "5000", "x-ratelimit-remaining": "10"}, None),  # no reset
        (limits("0", "0", "1"), None),
        (limits("inf", "1", "1"), None),
        (limits("50", "nan", "1"), None),
        (limits("5", "-1", "1"), None),
        (limits("5", "1", "1e300"), None),
        (limits("5", "9", "1772370000"), RateBudget(5, 5, RESET)),  # never more than the limit
        ({}, None),
    ],
)
def test_the_budget_is_read_from_the_core_rate_limit_headers(
    headers: dict[str, str], expected: RateBudget | None
) -> None:
    assert rate_budget(headers) == expected


HEADER_NAMES = [
    "x-ratelimit-limit",
    "x-ratelimit-remaining",
    "x-ratelimit-reset",
    "x-ratelimit-resource",
]


@given(st.dictionaries(st.sampled_from(HEADER_NAMES), st.text(max_size=30)))
def test_any_rate_limit_headers_are_read_or_ignored(headers: dict[str, str]) -> None:
    budget = rate_budget(headers)
    if budget is not None:
        assert budget.limit > 0 and 0 <= budget.remaining <= budget.limit


def test_the_latest_reading_wins_and_an_unreadable_one_changes_nothing() -> None:
    latest = LatestRateBudget()
    assert latest() is None
    latest.record(limits("5000", "10", "1772370000"))
    latest.record({"x-ratelimit-limit": "bogus"})
    assert latest() == RateBudget(5000, 10, RESET)


# ----------------------------------------------------------------------------- in the cache


def cache_of(
    runners: int, budget: RateBudget | None
) -> tuple[CachedGitHub, ScriptedPort, ManualClock]:
    clock = ManualClock(NOW)
    github = ScriptedPort(clock)
    github.runners[ORG] = [GitHubRunner(i, f"runner-{i}", "online", False) for i in range(runners)]
    settings = Settings.model_validate({"GITHUB_TOKEN": "x", "GITHUB_LIST_RUNNERS_CACHE_TTL": "90"})
    return CachedGitHub(github, settings, clock, rate_budget=lambda: budget), github, clock


def test_a_large_scope_is_listed_once_per_stretched_period() -> None:
    cache, github, clock = cache_of(10_000, fresh_window())

    listing = cache.list_runners(ORG)
    assert listing.fresh_until == NOW + timedelta(seconds=144)
    period = REGISTRY.get_sample_value(
        "arc_hooks_github_runner_list_period_seconds", {"scope": "/orgs/acme"}
    )
    assert period == 144
    clock.advance(143)
    assert cache.list_runners(ORG) is listing  # served past the configured 90 s
    assert github.calls["list"] == 1
    clock.advance(1)
    cache.list_runners(ORG)
    assert github.calls["list"] == 2


def test_a_small_scope_keeps_the_configured_period() -> None:
    cache, _, _ = cache_of(300, fresh_window())
    assert cache.list_runners(ORG).fresh_until == NOW + BASE


# ------------------------------------------------------------------------- workflow reads
# The pull metrics read a repository's queued and running runs, and each run's jobs, at every
# HRA sync. Found by an independent scale run: fifty such HRAs on one 5,000-call token spent it
# in about eight virtual minutes, after which runner lists and removals were refused too.


def workflow_cache(budget: RateBudget | None) -> tuple[CachedGitHub, ScriptedPort, ManualClock]:
    clock = ManualClock(NOW)
    github = ScriptedPort(clock)
    settings = Settings.model_validate({"GITHUB_TOKEN": "x", "GITHUB_WORKFLOW_CACHE_TTL": "30"})
    return CachedGitHub(github, settings, clock, rate_budget=lambda: budget), github, clock


def read_every_repository(cache: CachedGitHub, repositories: int) -> None:
    for index in range(repositories):
        for status in ("queued", "in_progress"):
            cache.list_workflow_runs(f"acme/repo-{index}", status)


def runs_read_per_hour(
    cache: CachedGitHub, github: ScriptedPort, clock: ManualClock, n: int
) -> int:
    """HRAs reading `n` repositories' runs every minute for two hours: the reads of the
    second hour, once the first reads of each are behind."""
    for _ in range(60):
        read_every_repository(cache, n)
        clock.advance(60)
    before = github.calls["runs"]
    for _ in range(60):
        read_every_repository(cache, n)
        clock.advance(60)
    return github.calls["runs"] - before


@pytest.mark.parametrize(
    ("repositories", "limit", "expected"),
    [
        # A few HRAs: every minute's sync reads anew (GITHUB_WORKFLOW_CACHE_TTL is 30 s).
        (3, 5000, range(360, 361)),
        # 200 reads a minute would be 12,000 an hour: kept within 30% of the budget.
        (100, 5000, range(1000, 1501)),
        (100, 15_000, range(3000, 4501)),  # an App installation's larger budget
    ],
)
def test_workflow_reads_stay_within_their_share_of_the_budget(
    repositories: int, limit: int, expected: range
) -> None:
    cache, github, clock = workflow_cache(fresh_window(limit))
    assert runs_read_per_hour(cache, github, clock, repositories) in expected


def test_without_a_known_budget_workflow_reads_keep_the_configured_period() -> None:
    cache, github, clock = workflow_cache(None)
    assert runs_read_per_hour(cache, github, clock, 100) == 200 * 60


def test_with_the_budget_nearly_spent_workflow_reads_leave_the_rest_to_runners() -> None:
    """Runner lists, registrations and removals keep most of what is left of the window."""
    clock = ManualClock(NOW)
    github = ScriptedPort(clock)
    settings = Settings.model_validate({"GITHUB_TOKEN": "x", "GITHUB_WORKFLOW_CACHE_TTL": "30"})
    reset = NOW + timedelta(minutes=30)

    def budget() -> RateBudget:  # 100 calls left when it starts, as GitHub counts them down
        return RateBudget(5000, 100 - github.calls["runs"], reset)

    cache = CachedGitHub(github, settings, clock, rate_budget=budget)
    for _ in range(29):
        read_every_repository(cache, 3)
        clock.advance(60)
    # Every minute's syncs would have made 174 and spent the window. Paced, they stay near
    # their share: the period is fixed when a read is made, and the first reads of a sync
    # see fewer reads counted, so somewhat more than 30 (47 here), and half is left.
    assert github.calls["runs"] <= 50


def test_reads_not_asked_for_three_minutes_no_longer_count() -> None:
    """The jobs of runs that ended are read no more: they stop stretching the period."""
    cache, github, clock = workflow_cache(fresh_window())
    for run in range(200):
        cache.list_workflow_jobs("acme/app", run)
    clock.advance(181)
    cache.list_workflow_runs("acme/app", "queued")
    clock.advance(30)
    cache.list_workflow_runs("acme/app", "queued")
    assert github.calls["runs"] == 2


@given(
    reads=st.integers(1, 5000),
    limit=st.integers(60, 50_000),
    share=st.floats(0.05, 1.0),
)
def test_workflow_reads_at_their_period_stay_within_the_share_unless_capped(
    reads: int, limit: int, share: float
) -> None:
    budget = fresh_window(limit)
    period = paced_period(timedelta(seconds=30), reads, budget, NOW, share)
    assert period >= timedelta(seconds=30)
    if period < timedelta(hours=1):
        assert reads * 3600 / period.total_seconds() <= share * limit + 1e-6


def calls_in_second_hour(sync_minutes: int, sync_period: float) -> int:
    """200 repositories' HRAs synced every `sync_minutes`, spread evenly over that time."""
    clock = ManualClock(NOW)
    github = ScriptedPort(clock)
    settings = Settings.model_validate(
        {"GITHUB_TOKEN": "x", "GITHUB_WORKFLOW_CACHE_TTL": "30", "SYNC_PERIOD": sync_period}
    )
    budget = fresh_window()
    cache = CachedGitHub(github, settings, clock, rate_budget=lambda: budget)
    before = 0
    for minute in range(120):
        if minute == 60:
            before = github.calls["runs"]
        for repository in range(200):
            if repository % sync_minutes == minute % sync_minutes:
                for status in ("queued", "in_progress"):
                    cache.list_workflow_runs(f"acme/repo-{repository}", status)
        clock.advance(60)
    return github.calls["runs"] - before


@pytest.mark.parametrize("minutes", [1, 5, 10])
def test_hras_synced_less_often_still_count_every_read(minutes: int) -> None:
    """Found in review: with SYNC_PERIOD raised past three minutes (as the README advises
    against this metric's cost), reads dropped out of the count between syncs, and 10-minute
    syncs spent 48% of the limit."""
    assert calls_in_second_hour(minutes, sync_period=60.0 * minutes) <= 0.3 * 5000 * 1.05


def test_reads_that_stopped_no_longer_stretch_the_period() -> None:
    cache, github, clock = workflow_cache(fresh_window())
    for run in range(5000):
        cache.list_workflow_jobs("acme/app", run)
    clock.advance(3600)  # nothing read for an hour
    cache.list_workflow_runs("acme/app", "queued")
    clock.advance(30)
    cache.list_workflow_runs("acme/app", "queued")
    assert github.calls["runs"] == 2  # the configured 30 s again


def test_the_lists_of_many_scopes_on_one_token_share_its_budget() -> None:
    """Found by an independent scale run: a hundred repositories' small lists, each paced as
    if it were the token's only one, took about 80% of a 5,000-call token's budget."""
    clock = ManualClock(NOW)
    github = ScriptedPort(clock)
    scopes = [Scope(repository=f"acme/repo-{index}") for index in range(100)]
    for scope in scopes:
        github.runners[scope] = [GitHubRunner(1, "runner-1", "online", False)]
    settings = Settings.model_validate({"GITHUB_TOKEN": "x", "GITHUB_LIST_RUNNERS_CACHE_TTL": "90"})
    budget = fresh_window()
    cache = CachedGitHub(github, settings, clock, rate_budget=lambda: budget)
    before = 0
    for minute in range(120):  # every Runner's sync reads its scope's list each minute
        if minute == 60:
            before = github.calls["list"]
        for scope in scopes:
            cache.list_runners(scope)
        clock.advance(60)
    # One page each: at the configured 90 s, 3,000 lists an hour; half the budget allows 2,500.
    assert github.calls["list"] - before <= 0.5 * 5000


def test_scopes_no_longer_listed_stop_stretching_the_period() -> None:
    """Found by review: a scope listed once (a deleted RunnerDeployment, a one-off look) counted
    for an hour, and after a lull even older ones counted towards the first list's period."""
    clock = ManualClock(NOW)
    github = ScriptedPort(clock)
    settings = Settings.model_validate({"GITHUB_TOKEN": "x", "GITHUB_LIST_RUNNERS_CACHE_TTL": "90"})
    budget = fresh_window()
    cache = CachedGitHub(github, settings, clock, rate_budget=lambda: budget)
    for index in range(300):
        cache.list_runners(Scope(repository=f"acme/repo-{index}"))
    active = Scope(repository="acme/app")
    stretched = cache.list_runners(active)
    assert stretched.fresh_until is not None and stretched.asked_at is not None
    assert (stretched.fresh_until - stretched.asked_at).total_seconds() > 300
    clock.advance(3 * 3600)  # budget and lists long since renewed, the 300 never read again
    budget = RateBudget(5000, 5000, clock.now() + timedelta(hours=1))
    listing = cache.list_runners(active)
    assert listing.fresh_until is not None and listing.asked_at is not None
    assert listing.fresh_until - listing.asked_at == timedelta(seconds=90)


@given(
    events=st.lists(
        st.tuples(
            st.integers(0, 20), st.integers(1, 30), st.integers(0, 600), st.integers(90, 3600)
        ),
        max_size=60,
    )
)
def test_a_scope_is_counted_for_two_of_its_periods_at_least(
    events: list[tuple[int, int, int, int]],
) -> None:
    """Whatever the order of lists and their periods: every other scope last listed within
    two of its periods (at least two configured TTLs) counts, none is counted twice, and a
    scope past that counts only while an older one still does (found in review: a scope of a
    long period was forgotten as soon as a later list got a short one)."""
    base = timedelta(seconds=90)
    pages = ListedPages(base)
    now = NOW
    last: dict[int, tuple[int, datetime, timedelta]] = {}
    for scope, count, wait, period_seconds in events:
        now += timedelta(seconds=wait)
        period = timedelta(seconds=period_seconds)
        pages.record(scope, count, now, period)
        last[scope] = (count, now, period)
        live = sum(c for s, (c, at, p) in last.items() if s != 0 and now <= at + 2 * max(p, base))
        recorded = sum(c for s, (c, _, _) in last.items() if s != 0)
        assert live <= pages.of_others(0, now) <= recorded
