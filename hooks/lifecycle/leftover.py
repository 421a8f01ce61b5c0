"""Leftover registrations: what a runner that stopped without unregistering left on GitHub.

Two ways to remove it, both pure (GitHub read through `Answers`):

- `remove_leftover_registration`, for the owners (Runner, RunnerSet): the registration with
  the runner's name, asked for by name (or read from a cached list newer than the stop, or
  from the scope's next list by a caller that can wait for it), so
  that an ephemeral runner that removed itself after its job costs no DELETE; retried on a
  later sync, nothing recorded.
- `remove_stopped_runner`, for the runner-pod decorator, whose only record is the pod's stop
  annotation: the recorded runner id (or the name's), one DELETE per retry delay, each attempt
  recorded in the stop.

Answers obtained before the runner was seen stopped (`stopped_at`) are never used: a "busy"
from while it worked says nothing about it now.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from hooks.clock import format_time
from hooks.github.port import (
    GitHubError,
    GitHubRunner,
    RateLimitedError,
    RemoveOutcome,
    RunnerListing,
    Scope,
)
from hooks.lifecycle.graceful_stop import StopTiming
from hooks.lifecycle.steps import Answers
from hooks.metacontroller import observed_time
from hooks.resources.runner import GracefulStopStatus

LIST_PATIENCE = timedelta(minutes=2)
"""How long a leftover check waits for the scope's next runner list rather than ask by name
(the lists of a busy scope come every 90 s by default, GITHUB_LIST_RUNNERS_CACHE_TTL), or
for as long as the lists are paced apart (`hooks.github.list_pacing`), up to
`MAX_LIST_PATIENCE`: asking anew is what the pacing spares the budget."""
MAX_LIST_PATIENCE = timedelta(minutes=10)
LIST_PATIENCE_MARGIN = 1.0  # seconds past the list's expiry: the next call lists anew


@dataclass(frozen=True)
class LeftoverCheck:
    done: bool
    retry_after: float | None = None
    message: str = ""


def remove_leftover_registration(
    github: Answers,
    scope: Scope,
    name: str,
    timing: StopTiming,
    *,
    stopped_at: datetime | None = None,
    now: datetime | None = None,
    keep: int | None = None,
) -> LeftoverCheck:
    """Remove the registration the stopped runner `name` left behind (GitHub keeps one per
    name, and a runner keeps its name). Registration `keep`, if given, is the next runner's
    under the name (a just-in-time config generated for the next pod): none is left then.

    Given `now`, a caller that can wait does: when the scope's cached list predates the stop
    and its next one is due within `LIST_PATIENCE`, the check is made on that list. An
    ephemeral runner that removed itself after its job then costs no call at all, where
    asking by name cost one per job: the largest share of GitHub calls for ephemeral runners."""
    try:
        if stopped_at is not None and now is not None:
            listing = github.list_runners(scope)
            asked_at, next_list = listing.asked_at, listing.fresh_until
            if asked_at is not None and asked_at >= stopped_at:
                found = listing.named(name)
                return _remove_found(github, scope, _unless(found, keep), timing, stopped_at)
            if next_list is not None and now < next_list <= now + _patience(listing):
                wait = (next_list - now).total_seconds() + LIST_PATIENCE_MARGIN
                return LeftoverCheck(False, wait, "looking in the next list of the scope's runners")
        found = github.find_runner(scope, name, not_before=stopped_at)
    except RateLimitedError as error:
        return LeftoverCheck(False, error.retry_after, str(error))
    except GitHubError as error:
        return LeftoverCheck(False, timing.retry_delay, str(error))
    return _remove_found(github, scope, _unless(found, keep), timing, stopped_at)


def _patience(listing: RunnerListing) -> timedelta:
    """How long to wait for the scope's next list: at least `LIST_PATIENCE`, and as long as
    lists are paced apart (found in a fleet of 100 repositories on one token: each list paced
    to 144 s, the checks of runners leaving asked anew once that passed two minutes)."""
    paced = timedelta(0)
    if listing.asked_at is not None and listing.fresh_until is not None:
        paced = listing.fresh_until - listing.asked_at
    return min(max(LIST_PATIENCE, paced), MAX_LIST_PATIENCE)


def _unless(found: GitHubRunner | None, keep: int | None) -> GitHubRunner | None:
    return None if found is not None and found.id == keep else found


def _remove_found(
    github: Answers,
    scope: Scope,
    found: GitHubRunner | None,
    timing: StopTiming,
    stopped_at: datetime | None,
) -> LeftoverCheck:
    for leftover in [found] if found is not None else []:
        result = github.remove_runner(scope, leftover.id, not_before=stopped_at)
        match result.outcome:
            case RemoveOutcome.REMOVED | RemoveOutcome.NOT_FOUND | RemoveOutcome.FORBIDDEN:
                continue
            case RemoveOutcome.RATE_LIMITED:
                delay = result.retry_after or timing.rate_limit_retry_delay
                return LeftoverCheck(False, delay, result.message or "GitHub rate limit")
            case RemoveOutcome.BUSY:
                message = "GitHub still assigns a job to the stopped runner's registration"
                return LeftoverCheck(False, timing.retry_delay, message)
            case _:
                return LeftoverCheck(False, timing.retry_delay, result.message or "GitHub error")
    return LeftoverCheck(True)


@dataclass(frozen=True)
class LeftoverStep:
    state: GracefulStopStatus  # to record
    retry_after: float | None  # None: nothing is left


def remove_stopped_runner(
    github: Answers,
    scope: Scope,
    runner_name: str,
    state: GracefulStopStatus,
    now: datetime,
    timing: StopTiming,
) -> LeftoverStep:
    """The runner stopped without unregistering (killed mid-job, out of grace time, or a
    static runner): remove its registration, one DELETE per retry delay."""
    wait = _pause_before_next_delete(state, now, timing)
    if wait > 0:
        return LeftoverStep(state, wait)
    stopped_at = observed_time(state.completed_at)
    runner_id = state.runner_id
    if runner_id is None:
        try:
            found = github.find_runner(scope, runner_name, not_before=stopped_at)
        except RateLimitedError as error:
            return LeftoverStep(_noted(state, str(error)), error.retry_after)
        except GitHubError as error:
            return LeftoverStep(_noted(state, str(error)), timing.retry_delay)
        if found is None:
            return LeftoverStep(_noted(state, "no registration left"), None)
        runner_id = found.id
        state = state.model_copy(update={"runner_id": runner_id})
    result = github.remove_runner(scope, runner_id, not_before=stopped_at)
    match result.outcome:
        case RemoveOutcome.REMOVED | RemoveOutcome.NOT_FOUND:
            return LeftoverStep(_noted(state, "leftover registration removed"), None)
        case RemoveOutcome.FORBIDDEN:
            return LeftoverStep(_noted(state, result.message or "forbidden"), None)
        case RemoveOutcome.RATE_LIMITED:
            delay = result.retry_after or timing.rate_limit_retry_delay
            return LeftoverStep(_noted(state, result.message or "GitHub rate limit"), delay)
        case RemoveOutcome.BUSY:
            # GitHub still holds the job the runner was killed in; it lets the runner go once
            # it gives the job up.
            message = "runner still assigned a job on GitHub"
            return LeftoverStep(_attempted(state, now, message), timing.retry_delay)
        case _:
            message = result.message or "GitHub error"
            return LeftoverStep(_attempted(state, now, message), timing.retry_delay)


def _pause_before_next_delete(
    state: GracefulStopStatus, now: datetime, timing: StopTiming
) -> float:
    last = observed_time(state.last_attempt_at)
    completed = observed_time(state.completed_at)
    if last is None or completed is None or last > now:  # a record ahead of now: no pause
        return 0.0
    if last < completed:
        return 0.0  # that attempt was the graceful stop's, before the runner stopped
    return timing.retry_delay - (now - last).total_seconds()


def _noted(state: GracefulStopStatus, message: str) -> GracefulStopStatus:
    return state.model_copy(update={"message": message})


def _attempted(state: GracefulStopStatus, now: datetime, message: str) -> GracefulStopStatus:
    return state.model_copy(update={"last_attempt_at": format_time(now), "message": message})
