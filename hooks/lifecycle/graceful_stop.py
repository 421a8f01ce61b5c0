"""Graceful stop: unregister a runner from GitHub without interrupting its job.

One state machine, used wherever a runner pod must go (a Runner's finalize and replacement, a
RunnerSet's scale-down, the runner-pod decorator). It is a *tick*: each call takes at most one
step, returns the new durable state to record (in status or annotations) and how long to wait
before the next call. Pure: GitHub is read through `Answers` (see `hooks.lifecycle.steps`).
The decision table follows ARC's `runner_graceful_stop.go`:

1. already complete                                  -> done
2. pod stopped (succeeded, failed, runner exited)    -> done (PodStopped)
3. ephemeral runner known busy (422 seen before)     -> wait for completion, no GitHub call
4. runner id unknown and not on GitHub (asked anew before either conclusion below: the view
   may lag a pending pod's runner that started since, a cached list a ready one's
   registration):
     pod never started                               -> done (NotRegistered)
     pod ready longer than the registration timeout  -> done (NotRegistered)
     otherwise it may be registering right now       -> wait (grace period)
5. a DELETE was tried less than the retry delay ago  -> wait (one DELETE per retry delay)
6. DELETE: 204 -> done (Unregistered); 404 -> the name asked for anew: registered again
   (another id) -> that one removed instead, else done (NotRegistered); 422 busy -> ephemeral:
   wait for completion, static: retry after the delay; rate limited -> retry after the reset;
   403 -> busy by the cached list (or, that list refused too, an ephemeral runner last seen
   busy): retry after the delay, its job is not cut off; else done (Forbidden, as ARC); other
   errors -> retry after the delay.

There is no overall unregistration timeout: a busy runner is waited for as long as it works.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime

from pydantic import ValidationError

from hooks.clock import format_time
from hooks.github.port import GitHubError, RateLimitedError, RemoveOutcome, Scope
from hooks.lifecycle.steps import Answers
from hooks.metacontroller import observed_time
from hooks.redaction import mask_credentials
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
    # GitHub last listed it busy (its owner's record), for when a 403 refuses the list too.
    last_seen_busy: bool = False


@dataclass(frozen=True)
class StopTick:
    state: GracefulStopStatus
    done: bool
    retry_after: float | None = None


def begin_stop(reason: str, subject: StopSubject, now: datetime) -> GracefulStopStatus:
    return GracefulStopStatus(
        reason=reason,
        started_at=format_time(now),
        pod_uid=subject.pod.uid if subject.pod else None,
        runner_id=subject.runner_id,
    )


def stop_annotation(state: GracefulStopStatus) -> str:
    """A stop as recorded in an annotation: compact JSON, in a stable order. Its message quotes
    GitHub's answers, which may quote a scope: credentials are masked (`hooks.redaction`)."""
    return mask_credentials(json.dumps(state.to_wire(), sort_keys=True, separators=(",", ":")))


def read_stop(text: object) -> GracefulStopStatus | None:
    """A stop recorded in an annotation; None when absent or unreadable."""
    if not isinstance(text, str) or not text:
        return None
    try:
        return GracefulStopStatus.model_validate_json(text)
    except ValidationError:
        return None


def tick_graceful_stop(
    subject: StopSubject,
    state: GracefulStopStatus,
    github: Answers,
    now: datetime,
    timing: StopTiming,
) -> StopTick:
    if state.outcome is not None:
        return StopTick(state, done=True)
    pod = subject.pod
    if pod is None or pod.stopped:
        return _complete(state, "PodStopped", now, "the runner is not running")
    if state.waiting_for_completion:
        return StopTick(state, done=False, retry_after=timing.retry_delay)

    # The stop's own record first: a 404 on the subject's id (a pod's id recorded from a list
    # that predated its registration) records the id found since (`_not_found`).
    runner_id = state.runner_id or subject.runner_id
    learned: dict[str, object] = {}  # recorded with the step's outcome: one copy per tick
    if runner_id is None:
        try:
            found = github.find_runner(subject.scope, subject.runner_name)
        except RateLimitedError as error:
            return _retry(state, error.retry_after, str(error))
        except GitHubError as error:
            return _retry(state, timing.retry_delay, str(error))
        if found is None and _would_conclude_unregistered(pod, now, timing):
            # Concluding that nothing registered lets the pod go. A pending pod in view may
            # have started since (the view lags), and a cached list may predate a ready pod's
            # registration: its runner could have registered, even taken a job, after the
            # list was made. Asked anew.
            try:
                found = github.find_runner(subject.scope, subject.runner_name, not_before=now)
            except RateLimitedError as error:
                return _retry(state, error.retry_after, str(error))
            except GitHubError as error:
                return _retry(state, timing.retry_delay, str(error))
        if found is None:
            return _not_registered(state, pod, now, timing)
        runner_id = found.id
        learned["runner_id"] = runner_id

    last_attempt = observed_time(state.last_attempt_at)
    if last_attempt is not None and last_attempt <= now:  # one unreadable or ahead: none
        wait = timing.retry_delay - (now - last_attempt).total_seconds()
        if wait > 0:
            return StopTick(_updated(state, learned), done=False, retry_after=wait)

    return _remove(subject, state, runner_id, learned, github, now, timing)


def _remove(
    subject: StopSubject,
    state: GracefulStopStatus,
    runner_id: int,
    learned: dict[str, object],
    github: Answers,
    now: datetime,
    timing: StopTiming,
) -> StopTick:
    result = github.remove_runner(subject.scope, runner_id)
    attempted = {**learned, "last_attempt_at": format_time(now), "message": result.message}
    match result.outcome:
        case RemoveOutcome.REMOVED:
            return _complete(state, "Unregistered", now, "unregistered from GitHub", attempted)
        case RemoveOutcome.NOT_FOUND:
            return _not_found(subject, state, runner_id, attempted, github, now, timing)
        case RemoveOutcome.FORBIDDEN if _busy_though_forbidden(subject, github):
            message = (
                f"{result.message or 'forbidden'}; the runner is busy: waiting for its job to "
                "end, or for credentials that may remove runners"
            )
            forbidden = _updated(state, {**attempted, "message": message})
            return StopTick(forbidden, done=False, retry_after=timing.retry_delay)
        case RemoveOutcome.FORBIDDEN:
            # ARC treats 403 as final rather than blocking the pod forever on a permission issue.
            message = result.message or "forbidden"
            return _complete(state, "Forbidden", now, message, attempted)
        case RemoveOutcome.BUSY if subject.ephemeral:
            # An ephemeral runner unregisters itself after its job: just wait for it.
            waiting = {"waiting_for_completion": True, "message": "waiting for the job to end"}
            updated = _updated(state, {**attempted, **waiting})
            return StopTick(updated, done=False, retry_after=timing.retry_delay)
        case RemoveOutcome.BUSY:
            busy = _updated(state, {**attempted, "message": BUSY_MESSAGE})
            return StopTick(busy, done=False, retry_after=timing.retry_delay)
        case RemoveOutcome.RATE_LIMITED:
            delay = result.retry_after or timing.rate_limit_retry_delay
            message = result.message or "GitHub rate limit"
            return StopTick(
                _updated(state, {**learned, "message": message}), done=False, retry_after=delay
            )
        case _:
            return StopTick(_updated(state, attempted), done=False, retry_after=timing.retry_delay)


def _busy_though_forbidden(subject: StopSubject, github: Answers) -> bool:
    """After a 403 on removal (credentials that may not remove runners): wait rather than cut
    a job off when the scope's list, as cached, says the runner is busy. When that list cannot
    be read either, an ephemeral runner last seen busy is waited for (its pod ends with its
    job); a static one goes, as in ARC, rather than be held until the credentials change."""
    try:
        found = github.find_runner(subject.scope, subject.runner_name)
    except GitHubError:
        return subject.ephemeral and subject.last_seen_busy
    return found is not None and found.busy


def _not_found(
    subject: StopSubject,
    state: GracefulStopStatus,
    runner_id: int,
    attempted: dict[str, object],
    github: Answers,
    now: datetime,
    timing: StopTiming,
) -> StopTick:
    """Row 6's 404 proves only that `runner_id` is gone. The name may have registered again
    since the id was read: a token-mode runner's next pod registers under the same name, and a
    list cached before that (another replica's) still gives the earlier id. So the name is
    asked for anew: another registration under it is this pod's runner, removed in its place;
    none (or the same id, removed meanwhile) and the runner is gone."""
    try:
        found = github.find_runner(subject.scope, subject.runner_name, not_before=now)
    except RateLimitedError as error:
        return _retry(_updated(state, attempted), error.retry_after, str(error))
    except GitHubError as error:
        return _retry(_updated(state, attempted), timing.retry_delay, str(error))
    if found is None or found.id == runner_id:
        message = "no longer registered on GitHub"
        return _complete(state, "NotRegistered", now, message, attempted)
    # Removing the newer registration may answer 404 too (gone meanwhile): the same question
    # then has the same answer, found.id is the id tried, and the runner is gone.
    return _remove(subject, state, found.id, {"runner_id": found.id}, github, now, timing)


def _would_conclude_unregistered(pod: ObservedPod, now: datetime, timing: StopTiming) -> bool:
    """Whether a runner not found on GitHub is taken for one that never registered (row 4)."""
    if pod.pending:
        return True
    ready_since = pod.ready_since
    return (
        ready_since is not None
        and (now - ready_since).total_seconds() >= timing.registration_timeout
    )


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


def _complete(
    state: GracefulStopStatus,
    outcome: str,
    now: datetime,
    message: str,
    changes: dict[str, object] | None = None,
) -> StopTick:
    completion = {"outcome": outcome, "completed_at": format_time(now), "message": message}
    return StopTick(_updated(state, {**(changes or {}), **completion}), done=True)


def _updated(state: GracefulStopStatus, changes: dict[str, object]) -> GracefulStopStatus:
    return state.model_copy(update=changes) if changes else state


def _retry(state: GracefulStopStatus, delay: float, message: str) -> StopTick:
    return StopTick(state.model_copy(update={"message": message}), done=False, retry_after=delay)
