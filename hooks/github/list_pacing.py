"""How long a scope's runner list is served, given the API budget of the token that lists it.

A list costs one call per 100 runners. At the configured period
(`GITHUB_LIST_RUNNERS_CACHE_TTL`, 90 s) a scope of 3,000 runners spends 1,200 calls an hour on
lists and one of 10,000 runners 4,000: most of a token's 5,000, and every other call
(registration tokens, removals, autoscaling) would then meet the rate limit. So the period
stretches with the list's cost: lists may take at most a share of the token's hourly limit, and
of what is left of its current window (other scopes and other clients spend the same budget).
A longer period only delays `busy` and `online` in status: decisions that must not act on an
old list ask GitHub anew (`hooks.lifecycle`).

GitHub reports the budget in every answer's `x-ratelimit-*` headers; `LatestRateBudget` keeps
the latest for a set of credentials, `paced_period` is the rule (a list costs `list_pages`),
and `ListedPages` adds up the pages of every scope a token lists.
"""

from __future__ import annotations

import math
import threading
from collections import OrderedDict
from collections.abc import Hashable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from hooks.github.rest import PER_PAGE, header, to_float

MAX_LIST_PERIOD = timedelta(hours=1)
"""GitHub's rate-limit window: however short the budget, a list is asked for once a window."""

HOUR_SECONDS = 3600.0


@dataclass(frozen=True, slots=True)
class RateBudget:
    """The `core` rate limit of a token as GitHub last reported it."""

    limit: int
    remaining: int
    resets_at: datetime


def rate_budget(headers: Mapping[str, Any]) -> RateBudget | None:
    """The core budget an answer's headers report; None when they report none (or another
    resource's, such as search)."""
    if (header(headers, "x-ratelimit-resource") or "core") != "core":
        return None
    limit = to_float(header(headers, "x-ratelimit-limit"))
    remaining = to_float(header(headers, "x-ratelimit-remaining"))
    reset = to_float(header(headers, "x-ratelimit-reset"))
    if limit is None or remaining is None or reset is None:
        return None
    if not all(math.isfinite(value) for value in (limit, remaining, reset)):
        return None
    if not (limit > 0 and remaining >= 0):
        return None
    try:
        resets_at = datetime.fromtimestamp(reset, UTC)
    except (OverflowError, OSError, ValueError):
        return None
    return RateBudget(int(limit), int(min(remaining, limit)), resets_at)


class LatestRateBudget:
    """The latest budget one set of credentials was told of. Thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._latest: RateBudget | None = None

    def record(self, headers: Mapping[str, Any]) -> None:
        budget = rate_budget(headers)
        if budget is not None:
            with self._lock:
                self._latest = budget

    def __call__(self) -> RateBudget | None:
        with self._lock:
            return self._latest


def list_pages(runners: int) -> int:
    """The calls a list of this many runners costs."""
    return max(1, math.ceil(runners / PER_PAGE))


def paced_period(
    base: timedelta, calls: int, budget: RateBudget | None, now: datetime, share: float
) -> timedelta:
    """How long answers that cost `calls` calls to ask again are served: the longest of

    1. `base`, the configured period;
    2. what keeps them within `share` of the token's hourly limit;
    3. what keeps them within `share` of the calls left until the window resets, when the
       window has not reset already: never past the reset (none left: until the reset), when
       the budget is whole again;

    at most `MAX_LIST_PERIOD`. Without a known budget, or with nothing to ask, `base`.
    """
    if budget is None or calls <= 0:
        return base
    pages = calls
    seconds = HOUR_SECONDS * pages / (share * budget.limit)
    left = (budget.resets_at - now).total_seconds()
    if left > 0:
        if budget.remaining == 0:
            seconds = max(seconds, left)
        else:
            seconds = max(seconds, min(left * pages / (share * budget.remaining), left))
    # Rounded up to the microsecond: never a hair shorter than the share allows.
    stretched = timedelta(microseconds=math.ceil(min(seconds, HOUR_SECONDS) * 1e6))
    return max(base, min(stretched, MAX_LIST_PERIOD))


class ListedPages:
    """The pages of the runner lists one token's scopes cost, each scope's as last listed:
    their sum is what a list period must cover, every scope being listed once a period.
    Thread-safe, O(1) a call (amortized).

    A scope no one has listed for two of its periods (a deleted RunnerDeployment, a one-off
    look) no longer counts: an active scope is listed again as soon as its list is read after
    expiring, and its Runners read it every period. Scopes are forgotten oldest first, each
    by its own period, so none is forgotten early (one behind an older scope of a longer
    period may count a little longer)."""

    def __init__(self, base: timedelta) -> None:
        self._lock = threading.Lock()
        self._base = base
        # scope -> (pages, listed at, forgotten after), in the order last listed
        self._pages: OrderedDict[Hashable, tuple[int, datetime, datetime]] = OrderedDict()
        self._total = 0

    def of_others(self, scope: Hashable, now: datetime) -> int:
        """The pages of every other scope still listed."""
        with self._lock:
            self._forget_idle(now)
            own = self._pages.get(scope)
            return self._total - (own[0] if own is not None else 0)

    def record(self, scope: Hashable, pages: int, at: datetime, period: timedelta) -> None:
        with self._lock:
            previous = self._pages.pop(scope, None)
            if previous is not None:
                self._total -= previous[0]
            self._pages[scope] = (pages, at, at + 2 * max(period, self._base))  # newest last
            self._total += pages
            self._forget_idle(at)

    def _forget_idle(self, now: datetime) -> None:
        while self._pages:
            scope, (pages, _, forgotten_after) = next(iter(self._pages.items()))
            if now <= forgotten_after:
                return
            del self._pages[scope]
            self._total -= pages
