"""Graceful stop: unregister a runner from GitHub without interrupting its job.

One state machine, reused wherever a runner pod must go (Runner finalize and replacement, and
later RunnerSet scale-down and the runner-pod decorator). It is a *tick*: each call takes at
most one step, returns the new durable state to record (in status or annotations) and how long
to wait before the next call. The decision table follows ARC's `runner_graceful_stop.go`:

1. already complete                                  -> done
2. pod stopped (succeeded, failed, runner exited)    -> done (PodStopped)
3. ephemeral runner known busy (422 seen before)     -> wait for completion, no GitHub call
4. runner id unknown and not on GitHub:
     pod never started                               -> done (NotRegistered)
     pod ready longer than the registration timeout  -> done (NotRegistered)
     otherwise it may be registering right now       -> wait (grace period)
5. a DELETE was tried less than the retry delay ago  -> wait (one DELETE per retry delay)
6. DELETE: 204 -> done (Unregistered); 404 -> done (NotRegistered); 422 busy -> ephemeral:
   wait for completion, static: retry after the delay; rate limited -> retry after the reset;
   403 -> done (Forbidden, as ARC); other errors -> retry after the delay.

There is no overall unregistration timeout: a busy runner is waited for as long as it works.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from hooks.clock import Clock, format_time, parse_time
from hooks.github.port import (
    GitHubError,
    GitHubPort,
    GitHubRunner,
    RateLimitedError,
    RemoveOutcome,
    Scope,
)
from hooks.resources.runner import GracefulStopStatus
from hooks.runner.observed_pod import ObservedPod
from hooks.settings import Settings

GRACEFUL_STOP_ANNOTATION = "arc-hooks.dev/graceful-stop"
"""Where a stop's state is kept when the stopping side has no status of its own: on a
RunnerSet's StatefulSet, and on a pod the runner-pod decorator stops (GracefulStopStatus JSON)."""


BUSY_MESSAGE = "runner is running a job"
NOT_REGISTERED_YET = "not registered on GitHub (yet): waiting up to the registration timeout"


@dataclass(frozen=True)
class StopTiming:
    retry_delay: float  # between DELETE attempts on a busy static runner
    rate_limit_retry_delay: float  # when GitHub gives no reset time
    registration_timeout: float  # how long a ready pod may take to register

    @classmethod
    def from_settings(cls, settings: Settings) -> StopTiming:
        return cls(
            retry_delay=settings.unregistration_retry_delay,
            rate_limit_retry_delay=settings.rate_limit_retry_delay,
            registration_timeout=settings.registration_timeout,
        )


@dataclass(frozen=True)
class StopSubject:
    scope: Scope
    runner_name: str
    runner_id: int | None  # known from JIT or an earlier lookup
    pod: ObservedPod | None
    ephemeral: bool


@dataclass(frozen=True)
class StopTick:
    state: GracefulStopStatus
    done: bool
    retry_after: float | None = None


def begin_stop(reason: str, subject: StopSubject, clock: Clock) -> GracefulStopStatus:
    return GracefulStopStatus(
        reason=reason,
        started_at=format_time(clock.now()),
        pod_uid=subject.pod.uid if subject.pod else None,
        runner_id=subject.runner_id,
    )


def tick_graceful_stop(
    subject: StopSubject,
    state: GracefulStopStatus,
    github: GitHubPort,
    clock: Clock,
    timing: StopTiming,
) -> StopTick:
    now = clock.now()
    if state.outcome is not None:
        return StopTick(state, done=True)
    pod = subject.pod
    if pod is None or pod.stopped:
        return _complete(state, "PodStopped", now, "the runner is not running")
    if state.waiting_for_completion:
        return StopTick(state, done=False, retry_after=timing.retry_delay)

    runner_id = subject.runner_id or state.runner_id
    if runner_id is None:
        try:
            found = find_runner(github, subject.scope, subject.runner_name)
        except RateLimitedError as error:
            return _retry(state, error.retry_after, str(error))
        except GitHubError as error:
            return _retry(state, timing.retry_delay, str(error))
        if found is None:
            return _not_registered(state, pod, now, timing)
        runner_id = found.id
        state = state.model_copy(update={"runner_id": runner_id})

    if state.last_attempt_at is not None:
        wait = timing.retry_delay - _seconds_since(state.last_attempt_at, now)
        if wait > 0:
            return StopTick(state, done=False, retry_after=wait)

    return _remove(subject, state, runner_id, github, now, timing)


def find_runner(
    github: GitHubPort, scope: Scope, name: str, *, not_before: datetime | None = None
) -> GitHubRunner | None:
    listed = github.list_runners(scope, not_before=not_before)
    return next((r for r in listed if r.name == name), None)


@dataclass(frozen=True)
class LeftoverCheck:
    done: bool
    retry_after: float | None = None
    message: str = ""


def remove_leftover_registration(
    github: GitHubPort,
    scope: Scope,
    name: str,
    runner_id: int | None,
    timing: StopTiming,
    *,
    stopped_at: datetime | None = None,
) -> LeftoverCheck:
    """Remove whatever registration a stopped runner left behind.

    The (cached) runner list is consulted first, so a runner that unregistered itself, as
    ephemeral runners do after their job, costs no DELETE. Answers obtained before the runner
    was seen stopped (`stopped_at`) are not used: a "busy" from while it worked says nothing
    about it now."""
    try:
        listed = github.list_runners(scope, not_before=stopped_at)
    except RateLimitedError as error:
        return LeftoverCheck(False, error.retry_after, str(error))
    except GitHubError as error:
        return LeftoverCheck(False, timing.retry_delay, str(error))
    for leftover in [r for r in listed if r.name == name or r.id == runner_id]:
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


def _remove(
    subject: StopSubject,
    state: GracefulStopStatus,
    runner_id: int,
    github: GitHubPort,
    now: datetime,
    timing: StopTiming,
) -> StopTick:
    result = github.remove_runner(subject.scope, runner_id)
    attempted = state.model_copy(
        update={"last_attempt_at": format_time(now), "message": result.message}
    )
    match result.outcome:
        case RemoveOutcome.REMOVED:
            return _complete(attempted, "Unregistered", now, "unregistered from GitHub")
        case RemoveOutcome.NOT_FOUND:
            return _complete(attempted, "NotRegistered", now, "no longer registered on GitHub")
        case RemoveOutcome.FORBIDDEN:
            # ARC treats 403 as final rather than blocking the pod forever on a permission issue.
            return _complete(attempted, "Forbidden", now, result.message or "forbidden")
        case RemoveOutcome.BUSY if subject.ephemeral:
            # An ephemeral runner unregisters itself after its job: just wait for it.
            waiting = attempted.model_copy(
                update={"waiting_for_completion": True, "message": "waiting for the job to end"}
            )
            return StopTick(waiting, done=False, retry_after=timing.retry_delay)
        case RemoveOutcome.BUSY:
            busy = attempted.model_copy(update={"message": BUSY_MESSAGE})
            return StopTick(busy, done=False, retry_after=timing.retry_delay)
        case RemoveOutcome.RATE_LIMITED:
            delay = result.retry_after or timing.rate_limit_retry_delay
            return _retry(state, delay, result.message or "GitHub rate limit")
        case _:
            return StopTick(attempted, done=False, retry_after=timing.retry_delay)


def _not_registered(
    state: GracefulStopStatus, pod: ObservedPod, now: datetime, timing: StopTiming
) -> StopTick:
    if pod.pending:
        return _complete(state, "NotRegistered", now, "the runner never started")
    if pod.ready_since is not None:
        ready_for = (now - pod.ready_since).total_seconds()
        if ready_for >= timing.registration_timeout:
            return _complete(state, "NotRegistered", now, "the runner never registered")
        # The runner may be registering right now: deleting the pod could race a job
        # assignment, so give it the rest of the registration timeout (ARC's case "2-3").
        wait = min(timing.retry_delay, timing.registration_timeout - ready_for)
        return _retry(state, wait, NOT_REGISTERED_YET)
    return _retry(state, timing.retry_delay, NOT_REGISTERED_YET)


def _complete(state: GracefulStopStatus, outcome: str, now: datetime, message: str) -> StopTick:
    completed = state.model_copy(
        update={"outcome": outcome, "completed_at": format_time(now), "message": message}
    )
    return StopTick(completed, done=True)


def _retry(state: GracefulStopStatus, delay: float, message: str) -> StopTick:
    return StopTick(state.model_copy(update={"message": message}), done=False, retry_after=delay)


def _seconds_since(timestamp: str, now: datetime) -> float:
    return (now - parse_time(timestamp)).total_seconds()
