"""A caching decorator for any GitHubPort.

The API budget is the main scaling limit of a runner controller: without a cache, every Runner
sync would list the scope's runners, every retried deletion would send another DELETE, and every
autoscaler sync would list a repository's runs and their jobs again. These
caches are bounded optimizations (TTL and entry count); an answer missing from them only costs a
call, never correctness.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import Generic, TypeVar, cast

from hooks.clock import Clock
from hooks.github.list_pacing import ListedPages, RateBudget, list_pages, paced_period
from hooks.github.offline import refuse_if_offline
from hooks.github.port import (
    GitHubError,
    GitHubPort,
    GitHubRunner,
    JitConfig,
    RateLimitedError,
    RegistrationToken,
    RemoveOutcome,
    RemoveResult,
    RunnerGroupInfo,
    RunnerListing,
    Scope,
    WorkflowJob,
    WorkflowRun,
)
from hooks.github.rest import PER_PAGE
from hooks.github.shared_lists import (
    CLAIM_SECONDS,
    BoardUnavailable,
    RunnerListBoard,
    SharedList,
)
from hooks.metrics import GITHUB_RUNNER_LIST_PERIOD
from hooks.redaction import mask_credentials
from hooks.settings import Settings

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")
T = TypeVar("T")
Item = TypeVar("Item")

# The port promises a registration token with at least this much validity left.
TOKEN_MIN_VALIDITY = timedelta(minutes=30)
SPARE_TOKEN_MIN_VALIDITY = timedelta(minutes=10)
"""While GitHub refuses a new token (a rate limit, an outage), the last one is still handed out
until this much validity is left, what a new pod needs to register (a pool ran dry through a
rate limit with a token valid for 26 more minutes)."""
# Group ids change only when an admin recreates a group; ten minutes bounds the staleness.
RUNNER_GROUP_TTL = timedelta(minutes=10)
DEFAULT_MAX_ENTRIES = 4096
# While another replica lists a scope, a copy past its period is served this long before the
# board is read again.
BOARD_RECHECK = timedelta(seconds=2)

FAILED_READ_MEMORY = timedelta(seconds=30)
"""How long a failed runner list, runner-group lookup or token request is answered with its
error rather than asked again: during an outage of GitHub every Runner, member and webhook
delivery asked for itself (a RunnerSet of 8 made 4,000 list calls in 8 minutes)."""


def _no_budget() -> RateBudget | None:
    return None


class _TTLMap(Generic[K, V]):
    """A dict whose entries expire, bounded in size, and remember when they were stored (an
    answer older than a fact the caller observed since is not served). Not thread-safe: the
    owner locks."""

    def __init__(self, max_entries: int) -> None:
        self._max = max_entries
        self._data: dict[K, tuple[V, datetime, datetime]] = {}

    def get(self, key: K, now: datetime, not_before: datetime | None = None) -> V | None:
        item = self._data.get(key)
        if item is None:
            return None
        if now >= item[1]:
            del self._data[key]
            return None
        if not_before is not None and item[2] < not_before:
            return None
        return item[0]

    def expiry(self, key: K) -> datetime | None:
        item = self._data.get(key)
        return item[1] if item else None

    def stored_at(self, key: K) -> datetime | None:
        """When the answer of the entry was asked for (None when there is none)."""
        item = self._data.get(key)
        return item[2] if item else None

    def put(self, key: K, value: V, expires_at: datetime, now: datetime) -> None:
        self._data.pop(key, None)
        self._data[key] = (value, expires_at, now)
        if len(self._data) > self._max:
            for stale in [k for k, (_, exp, _) in self._data.items() if now >= exp]:
                del self._data[stale]
            # Still full: drop the oldest insertions (dicts keep insertion order).
            while len(self._data) > self._max:
                del self._data[next(iter(self._data))]

    def amend(self, key: K, value: V) -> None:
        """Correct an entry in place: same expiry, and as old as the answer it came from."""
        item = self._data.get(key)
        if item is not None:
            self._data[key] = (value, item[1], item[2])

    def pop(self, key: K) -> None:
        self._data.pop(key, None)

    def __len__(self) -> int:
        return len(self._data)


@dataclass(eq=False)
class _Flight:
    """One call in progress; callers asking for the same key meanwhile wait for its answer."""

    started_at: datetime
    done: threading.Event = field(default_factory=threading.Event)
    result: object = None
    error: BaseException | None = None
    # Set when the answer became outdated while in flight (e.g. a runner was removed during a
    # list); it is still returned to its waiters but not stored.
    stale: bool = False

    def wait(self) -> None:
        self.done.wait()


WORKFLOW_READS_WINDOW = timedelta(minutes=3)
"""Workflow reads asked for within this window (or three sync periods, if longer) count as read
again at every period: the metrics of every HRA ask for them at each sync, answered from the
cache or not; the jobs of a run that ended drop out."""


class CachedGitHub(GitHubPort):
    """Caches list_runners, registration_token, runner_group_id, the workflow runs and jobs
    reads and visible_runner_groups, and deduplicates removals.

    Thread-safe. Concurrent callers of the same read share one in-flight call, so N runners
    syncing at once cause one list call, not N. With a `board`, the replicas of the server
    share each scope's runner list too (`hooks.github.shared_lists`): one list per period for
    all of them.
    """

    def __init__(
        self,
        inner: GitHubPort,
        settings: Settings,
        clock: Clock,
        *,
        max_entries: int = DEFAULT_MAX_ENTRIES,
        runner_group_ttl: timedelta = RUNNER_GROUP_TTL,
        board: RunnerListBoard | None = None,
        rate_budget: Callable[[], RateBudget | None] | None = None,
    ) -> None:
        self._inner = inner
        self._board = board
        self._clock = clock
        self._list_ttl = timedelta(seconds=settings.list_runners_cache_ttl)
        self._list_budget_share = settings.list_runners_budget_share
        # The inner port's latest word on its token's budget (None: it does not tell).
        self._rate_budget = rate_budget or _no_budget
        self._busy_delay = timedelta(seconds=settings.unregistration_retry_delay)
        self._rate_limit_delay = timedelta(seconds=settings.rate_limit_retry_delay)
        self._group_ttl = runner_group_ttl
        # Runs and jobs change by the second, so their answers are reused only briefly: enough to
        # spare the calls of autoscalers that share a repository and sync together.
        self._workflow_ttl = timedelta(seconds=settings.workflow_cache_ttl)
        self._workflow_budget_share = settings.workflow_budget_share
        self._workflow_reads_window = max(
            WORKFLOW_READS_WINDOW, timedelta(seconds=3 * settings.sync_period)
        )
        # When each workflow read (runs of a repository and status, jobs of a run) was last
        # asked for, answered from the cache or not, the oldest first: those of the window
        # are what the metrics read again at every period (`_workflow_period`).
        self._workflow_reads: OrderedDict[Hashable, datetime] = OrderedDict()
        self._max_workflow_reads = max_entries
        self._visible_groups_ttl = timedelta(seconds=settings.runner_groups_cache_ttl)
        self._lock = threading.Lock()
        self._flights: dict[Hashable, _Flight] = {}
        self._lists: _TTLMap[Scope, RunnerListing] = _TTLMap(max_entries)
        # How many runners each scope's last list had (kept past the list's expiry): what a
        # fresh list would cost in pages.
        self._list_sizes: dict[Scope, int] = {}
        # The pages of every scope's last list: all of them together are what the budget's
        # share must cover (`_list_period`).
        self._listed_pages = ListedPages(self._list_ttl)
        # When this replica last learnt something of a scope's runners that a list asked for
        # before then lacks (a removal, a busy answer, a new registration): an older shared
        # list is not taken.
        self._scope_changed_at: dict[Scope, datetime] = {}
        self._tokens: _TTLMap[Scope, RegistrationToken] = _TTLMap(max_entries)
        self._spare_tokens: _TTLMap[Scope, RegistrationToken] = _TTLMap(max_entries)
        self._groups: _TTLMap[tuple[Scope, str], int] = _TTLMap(max_entries)
        self._removals: _TTLMap[tuple[Scope, int], RemoveResult] = _TTLMap(max_entries)
        self._runs: _TTLMap[tuple[str, str], tuple[WorkflowRun, ...]] = _TTLMap(max_entries)
        self._jobs: _TTLMap[tuple[str, int], tuple[WorkflowJob, ...]] = _TTLMap(max_entries)
        self._visible_groups: _TTLMap[tuple[str, str], tuple[RunnerGroupInfo, ...]] = _TTLMap(
            max_entries
        )
        # Reads (and JIT configs) that GitHub rate-limited: refused locally until the wait is
        # over.
        self._backoff: _TTLMap[Hashable, str] = _TTLMap(max_entries)
        # Reads that failed (not rate-limited) and are not asked again for a while.
        self._failed_reads: _TTLMap[Hashable, tuple[str, int | None]] = _TTLMap(max_entries)

    @property
    def inner(self) -> GitHubPort:
        return self._inner

    # -- reads -------------------------------------------------------------------------------

    def list_runners(self, scope: Scope, *, not_before: datetime | None = None) -> RunnerListing:
        """The scope's runners, dated by when they were asked for (a list amended since with
        what this replica learnt keeps that date)."""

        def cached() -> RunnerListing | None:
            return self._lists.get(scope, self._clock.now(), not_before)

        def fetch() -> RunnerListing:
            if self._board is not None:
                found = self._list_through_board(self._board, scope, not_before)
                if found is not None:
                    return RunnerListing(found[0].runners, found[0].asked_at, found[1])
            asked_at = self._clock.now()
            runners = tuple(self._inner.list_runners(scope))
            period = self._list_period(scope, len(runners))
            return RunnerListing(runners, asked_at, asked_at + period)

        def store(value: RunnerListing, asked_at: datetime) -> None:
            asked_at = value.asked_at or asked_at
            expires = value.fresh_until or asked_at + self._list_period(scope, len(value))
            self._lists.put(scope, value, expires, asked_at)
            label = mask_credentials(str(scope))  # /metrics is read without authentication
            GITHUB_RUNNER_LIST_PERIOD.labels(label).set((expires - asked_at).total_seconds())
            self._list_sizes[scope] = len(value)
            self._listed_pages.record(scope, list_pages(len(value)), asked_at, expires - asked_at)

        return self._single_flight(
            ("list", scope), cached, fetch, store, not_before=not_before, remember_failure=True
        )

    def _list_through_board(
        self, board: RunnerListBoard, scope: Scope, not_before: datetime | None
    ) -> tuple[SharedList, datetime] | None:
        """The scope's list from the board, or listed by this replica and published there;
        with the time the answer may be served until. None: the board is out of reach, and
        the caller lists GitHub on its own."""
        now = self._clock.now()
        with self._lock:
            changed = self._scope_changed_at.get(scope)
        try:
            entry = board.read(scope)
            listed = entry.listed
            known_since = max((t for t in (not_before, changed) if t is not None), default=None)
            if listed is not None and known_since is not None and listed.asked_at < known_since:
                listed = None  # older than what this replica or its caller knows
            # Served for the period its lister chose (from its view of the budget).
            period = (listed.period or self._list_ttl) if listed is not None else self._list_ttl
            if listed is not None and now - listed.asked_at < period:
                return listed, listed.asked_at + period
            # Past its period: the first replica to claim the next list makes it. Another's
            # answer is due within seconds; a copy a little past its period serves meanwhile
            # (bounded, since an abandoned claim ends).
            stale_limit = period + timedelta(seconds=CLAIM_SECONDS)
            meanwhile = None
            if listed is not None and now - listed.asked_at < stale_limit:
                meanwhile = (listed, now + BOARD_RECHECK)
            if meanwhile is not None and entry.claimed_by_another(now):
                return meanwhile
            if not board.claim(scope, entry):
                return meanwhile
        except BoardUnavailable:
            return None
        asked_at = self._clock.now()
        runners = tuple(self._inner.list_runners(scope))
        period = self._list_period(scope, len(runners))
        fresh = SharedList(asked_at, runners, period)
        board.publish(scope, fresh)
        return fresh, asked_at + period

    def _list_period(self, scope: Scope, runners: int) -> timedelta:
        """How long a list of this many runners is served: long enough that the lists of
        every scope this replica lists, each made once a period, stay within the token's share
        (`hooks.github.list_pacing.paced_period`). Found by an independent scale run: a
        hundred repositories' small lists, each paced as if alone, took 80% of a token's
        budget."""
        now = self._clock.now()
        pages = list_pages(runners) + self._listed_pages.of_others(scope, now)
        return paced_period(
            self._list_ttl, pages, self._rate_budget(), now, self._list_budget_share
        )

    def runners_named(
        self, scope: Scope, name: str, *, not_before: datetime | None = None
    ) -> Sequence[GitHubRunner]:
        """From the cached list when it is recent enough. Otherwise a scope whose last list
        fitted in one page is listed again (the same one call, and it serves every other
        reader); a larger one is asked for this name alone (one page instead of all), and the
        answer corrects the cached list."""
        if self._list_sizes.get(scope, 0) <= PER_PAGE:
            listed = self.list_runners(scope, not_before=not_before)
            return tuple(r for r in listed if r.name == name)

        def cached() -> tuple[GitHubRunner, ...] | None:
            listed = self._lists.get(scope, self._clock.now(), not_before)
            return None if listed is None else tuple(r for r in listed.runners if r.name == name)

        def store(found: tuple[GitHubRunner, ...], asked_at: datetime) -> None:
            self._correct_list(scope, name, found, asked_at)

        return self._single_flight(
            ("named", scope, name),
            cached,
            lambda: tuple(self._inner.runners_named(scope, name)),
            store,
            not_before=not_before,
        )

    def registration_token(self, scope: Scope) -> RegistrationToken:
        def cached() -> RegistrationToken | None:
            # Entries expire when their validity drops under the minimum (see store).
            return self._tokens.get(scope, self._clock.now())

        def store(value: RegistrationToken, now: datetime) -> None:
            self._tokens.put(scope, value, value.expires_at - TOKEN_MIN_VALIDITY, now)
            self._spare_tokens.put(scope, value, value.expires_at - SPARE_TOKEN_MIN_VALIDITY, now)

        try:
            # A failure is answered for a while rather than asked again: each pod of a set
            # that fails to start in an outage syncs the set, and each sync asked (found by an
            # independent failure run: 362 failed token requests in 25 minutes for 2 pods).
            return self._single_flight(
                ("token", scope),
                cached,
                lambda: self._inner.registration_token(scope),
                store,
                remember_failure=True,
            )
        except GitHubError as error:
            # Only while GitHub cannot answer: a refusal (bad credentials, a scope gone) is
            # said at once (found in review).
            unavailable = isinstance(error, RateLimitedError) or (error.status or 500) >= 500
            with self._lock:
                spare = self._spare_tokens.get(scope, self._clock.now()) if unavailable else None
            if spare is None:
                raise
            return spare

    def runner_group_id(self, scope: Scope, group_name: str) -> int:
        key = (scope, group_name)

        def store(value: int, at: datetime) -> None:
            self._groups.put(key, value, at + self._group_ttl, at)

        return self._single_flight(
            ("group", *key),
            lambda: self._groups.get(key, self._clock.now()),
            lambda: self._inner.runner_group_id(scope, group_name),
            store,
        )

    def list_workflow_runs(self, repository: str, status: str) -> Sequence[WorkflowRun]:
        return self._paced_workflow_read(
            "runs",
            self._runs,
            (repository, status),
            lambda: self._inner.list_workflow_runs(repository, status),
        )

    def list_workflow_jobs(self, repository: str, run_id: int) -> Sequence[WorkflowJob]:
        return self._paced_workflow_read(
            "jobs",
            self._jobs,
            (repository, run_id),
            lambda: self._inner.list_workflow_jobs(repository, run_id),
        )

    def _paced_workflow_read(
        self,
        kind: str,
        entries: _TTLMap[K, tuple[Item, ...]],
        key: K,
        call: Callable[[], Sequence[Item]],
    ) -> tuple[Item, ...]:
        """A workflow read, served for the period in effect when it was asked for
        (`_workflow_period`), as a runner list is."""

        def served() -> tuple[Item, ...] | None:
            now = self._clock.now()
            self._note_workflow_read((kind, key), now)
            return entries.get(key, now)

        def store(value: tuple[Item, ...], at: datetime) -> None:
            entries.put(key, value, at + self._workflow_period(at), at)

        return self._single_flight((kind, key), served, lambda: tuple(call()), store)

    def _note_workflow_read(self, read: Hashable, now: datetime) -> None:
        """Called under the lock."""
        reads = self._workflow_reads
        reads[read] = now
        reads.move_to_end(read)
        self._forget_workflow_reads(now)

    def _forget_workflow_reads(self, now: datetime) -> None:
        """Reads older than the window no longer count; at most `max_entries` are kept."""
        reads, horizon = self._workflow_reads, now - self._workflow_reads_window
        while reads and (
            len(reads) > self._max_workflow_reads or next(iter(reads.values())) < horizon
        ):
            reads.popitem(last=False)

    def _workflow_period(self, now: datetime) -> timedelta:
        """How long a workflow read is served: each read of the last `WORKFLOW_READS_WINDOW`
        asked again once a period stays within the token's share
        (`hooks.github.list_pacing.paced_period`). A few HRAs keep
        `GITHUB_WORKFLOW_CACHE_TTL`; fifty on one token read less often, rather than spend
        the budget that runner lists and removals need."""
        self._forget_workflow_reads(now)
        return paced_period(
            self._workflow_ttl,
            len(self._workflow_reads),
            self._rate_budget(),
            now,
            self._workflow_budget_share,
        )

    def visible_runner_groups(
        self, organization: str, repository_name: str
    ) -> Sequence[RunnerGroupInfo]:
        # A webhook delivery asks at every job; GitHub failing, the receiver treats every group
        # as visible anyway: one call per repository while it fails, not one per delivery.
        return self._cached_listing(
            "visible-groups",
            self._visible_groups,
            (organization, repository_name),
            self._visible_groups_ttl,
            lambda: self._inner.visible_runner_groups(organization, repository_name),
            remember_failure=True,
        )

    # -- writes ------------------------------------------------------------------------------

    def generate_jit_config(
        self,
        scope: Scope,
        name: str,
        labels: Sequence[str],
        runner_group_id: int,
        work_folder: str,
    ) -> JitConfig:
        key = ("jit", scope)
        with self._lock:
            # Refused a moment ago: every sync would ask again (a set's runners that finish,
            # each an event) and be refused again, through the rate limit or the outage.
            self._raise_if_backing_off(key)
            self._raise_if_failed_lately(key)
        refuse_if_offline("a JIT config")
        config: JitConfig | None = None
        try:
            config = self._inner.generate_jit_config(
                scope, name, labels, runner_group_id, work_folder
            )
            return config
        # Remembered in words of the scope's, not of this request's (its runner's name, which
        # may be another namespace's, would reach the status of every set asking meanwhile).
        except RateLimitedError as error:
            with self._lock:
                now = self._clock.now()
                until = now + timedelta(seconds=error.retry_after)
                self._backoff.put(key, f"JIT configs of {scope} ({_status(error)})", until, now)
            raise
        except GitHubError as error:
            if error.status is None or error.status >= 500:  # not a refusal of this request
                with self._lock:
                    now = self._clock.now()
                    failed = f"a JIT config of {scope} failed a moment ago ({_status(error)})"
                    self._failed_reads.put(
                        key, (failed, error.status), now + FAILED_READ_MEMORY, now
                    )
            raise
        finally:
            with self._lock:
                if config is not None:
                    # The registration GitHub made, added to the cached list: a fleet of JIT
                    # runners had its scope listed anew after every config.
                    self._add_to_list(scope, config.runner)
                else:
                    # No answer: a runner may now exist that the cached list lacks.
                    self._invalidate_list(scope)

    def remove_runner(
        self, scope: Scope, runner_id: int, *, not_before: datetime | None = None
    ) -> RemoveResult:
        key = (scope, runner_id)

        def store(result: RemoveResult, at: datetime) -> None:
            self._after_removal(scope, runner_id, result, at)

        return self._single_flight(
            ("remove", *key),
            lambda: self._remembered_removal(key, not_before),
            lambda: self._inner.remove_runner(scope, runner_id),
            store,
            backoff=False,
            not_before=not_before,
        )

    # -- internals ---------------------------------------------------------------------------

    def _cached_listing(
        self,
        kind: str,
        entries: _TTLMap[K, tuple[Item, ...]],
        key: K,
        ttl: timedelta,
        call: Callable[[], Sequence[Item]],
        *,
        remember_failure: bool = False,
    ) -> tuple[Item, ...]:
        """A list read kept `ttl` per key, one call at a time per key. Failures are not kept
        (a rate limit is waited out, as for every read)."""

        def store(value: tuple[Item, ...], at: datetime) -> None:
            entries.put(key, value, at + ttl, at)

        return self._single_flight(
            (kind, key),
            lambda: entries.get(key, self._clock.now()),
            lambda: tuple(call()),
            store,
            remember_failure=remember_failure,
        )

    def _remembered_removal(
        self, key: tuple[Scope, int], not_before: datetime | None
    ) -> RemoveResult | None:
        now = self._clock.now()
        result = self._removals.get(key, now, not_before)
        if result is None:
            return None
        if result.outcome is RemoveOutcome.RATE_LIMITED:
            expires = self._removals.expiry(key)
            left = (expires - now).total_seconds() if expires else 0.0
            return replace(result, retry_after=max(left, 0.0))
        return result

    def _after_removal(
        self, scope: Scope, runner_id: int, result: RemoveResult, now: datetime
    ) -> None:
        key = (scope, runner_id)
        outcome = result.outcome
        if outcome in (RemoveOutcome.REMOVED, RemoveOutcome.NOT_FOUND):
            # Runner ids are never reused, so "gone" stays true; remembering it spares a DELETE
            # per sync while the Kubernetes side catches up.
            self._removals.put(key, result, now + self._busy_delay, now)
            self._drop_from_list(scope, runner_id)
        elif outcome is RemoveOutcome.BUSY:
            self._removals.put(key, result, now + self._busy_delay, now)
            self._mark_busy(scope, runner_id)
        elif outcome is RemoveOutcome.RATE_LIMITED:
            wait = (
                timedelta(seconds=result.retry_after)
                if result.retry_after is not None
                else self._rate_limit_delay
            )
            self._removals.put(key, result, now + wait, now)
        # FORBIDDEN and ERROR are not remembered: the caller decides when to retry.

    def _drop_from_list(self, scope: Scope, runner_id: int) -> None:
        self._mark_scope_reads_stale(scope)
        runners = self._lists.get(scope, self._clock.now())
        if runners is None:
            return
        kept = runners.without(runner_id)
        if kept is not runners:
            self._lists.amend(scope, kept)

    def _correct_list(
        self, scope: Scope, name: str, found: tuple[GitHubRunner, ...], asked_at: datetime
    ) -> None:
        # An answer about one name, asked for after the cached list was: it replaces the
        # list's entry. A list in flight is stored as it comes, with the time it was asked for
        # (older than this answer), so that no caller takes it for newer than it is.
        listed_at = self._lists.stored_at(scope)
        runners = self._lists.get(scope, self._clock.now())
        if runners is not None and listed_at is not None and listed_at <= asked_at:
            self._lists.amend(scope, runners.corrected(name, found))

    def _mark_busy(self, scope: Scope, runner_id: int) -> None:
        # GitHub just told us the runner is busy: fresher than a cached list that says idle.
        self._mark_scope_reads_stale(scope)
        runners = self._lists.get(scope, self._clock.now())
        if runners is None:
            return
        self._lists.amend(scope, runners.marked_busy(runner_id))

    def _add_to_list(self, scope: Scope, runner: GitHubRunner) -> None:
        self._mark_scope_reads_stale(scope)
        runners = self._lists.get(scope, self._clock.now())
        if runners is not None:
            self._lists.amend(scope, runners.corrected(runner.name, (runner,)))

    def _invalidate_list(self, scope: Scope) -> None:
        self._lists.pop(scope)
        self._mark_scope_reads_stale(scope)

    def _mark_scope_reads_stale(self, scope: Scope) -> None:
        """Reads of the scope's runners in flight may predate what just happened: their answers
        go to their callers but are not kept (nor used to correct the cached list), and a
        shared list asked for before now is not taken."""
        self._scope_changed_at[scope] = self._clock.now()
        for key, flight in self._flights.items():
            if isinstance(key, tuple) and key[:1] in (("list",), ("named",)) and key[1] == scope:
                flight.stale = True

    def _single_flight(
        self,
        key: Hashable,
        cached: Callable[[], T | None],
        call: Callable[[], T],
        store: Callable[[T, datetime], None],
        *,
        backoff: bool = True,
        not_before: datetime | None = None,
        remember_failure: bool = False,
    ) -> T:
        """Run `call` once for all concurrent callers of `key`; `store` its answer.

        `cached` is re-checked under the lock, because another caller may have stored an answer
        between the caller's first look and now. A call in flight since before `not_before` is
        not joined: its answer may predate what the caller knows. An answer is stored as of the
        time it was asked for, the latest time it is sure to be true of.
        """
        with self._lock:
            hit = cached()
            if hit is not None:
                return hit
            if backoff:
                self._raise_if_backing_off(key)
            if remember_failure:
                self._raise_if_failed_lately(key)
            refuse_if_offline("a GitHub call not answered from the cache")
            flight = self._flights.get(key)
            joinable = flight is None or not_before is None or flight.started_at >= not_before
            leader = flight is None
            if flight is None:
                flight = self._flights[key] = _Flight(self._clock.now())
        if not joinable:
            # The call in flight is too old to answer for what the caller knows, and it is
            # not ours to replace: call on our own.
            asked_at = self._clock.now()
            result = call()
            with self._lock:
                store(result, asked_at)
            return result
        if not leader:
            flight.wait()
            if flight.error is not None:
                raise flight.error
            return cast(T, flight.result)
        try:
            result = call()
        except BaseException as exc:
            flight.error = exc
            try:
                with self._lock:
                    del self._flights[key]
                    now = self._clock.now()
                    if backoff and isinstance(exc, RateLimitedError):
                        until = now + timedelta(seconds=exc.retry_after)
                        self._backoff.put(key, str(exc), until, now)
                    elif remember_failure and isinstance(exc, GitHubError):
                        failure = (str(exc), exc.status)
                        self._failed_reads.put(key, failure, now + FAILED_READ_MEMORY, now)
            finally:  # followers waiting on this flight are let go, whatever happens here
                flight.done.set()
            raise
        flight.result = result
        with self._lock:
            if not flight.stale:
                store(result, flight.started_at)
            del self._flights[key]
        flight.done.set()
        return result

    def _raise_if_failed_lately(self, key: Hashable) -> None:
        now = self._clock.now()
        failure = self._failed_reads.get(key, now)
        if failure is not None:
            # The same text as the failure's: it goes into status conditions, where a text
            # that changed at every sync (a countdown) rewrote the object, which synced it again.
            message, status = failure
            raise GitHubError(message, status)

    def _raise_if_backing_off(self, key: Hashable) -> None:
        now = self._clock.now()
        message = self._backoff.get(key, now)
        expiry = self._backoff.expiry(key)
        if message is not None and expiry is not None:
            left = (expiry - now).total_seconds()
            raise RateLimitedError(f"still rate limited: {message}", retry_after=left, status=None)


def _status(error: GitHubError) -> str:
    return f"HTTP {error.status}" if error.status is not None else "no answer"
