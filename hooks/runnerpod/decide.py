"""What the runner-pod decorator decides, pure, from the pod (`RunnerPod`) and GitHub's answers.

- sync: the runner's GitHub id, to record on the pod once GitHub lists the runner.
- finalize: a pod no owner stops itself gets its own graceful stop, then whatever registration
  is left is removed; the state is the pod's `arc-hooks.dev/graceful-stop` annotation, since a
  pod has no status of ours.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime

from hooks.github.port import GitHubError, RateLimitedError
from hooks.lifecycle.graceful_stop import (
    GRACEFUL_STOP_ANNOTATION,
    StopSubject,
    StopTiming,
    begin_stop,
    read_stop,
    tick_graceful_stop,
)
from hooks.lifecycle.leftover import remove_stopped_runner
from hooks.lifecycle.steps import Answers
from hooks.metacontroller import observed_time
from hooks.resources.runner import GracefulStopStatus
from hooks.runnerpod.facts import RunnerPod, node_unreachable
from hooks.settings import Settings

CLEAN_OUTCOMES = ("Unregistered", "NotRegistered")
"""Outcomes after which nothing is left on GitHub for this pod."""

# A 403 ends a stop as in ARC: asking again for a DELETE GitHub just refused would not help.
_FINAL_OUTCOMES = (*CLEAN_OUTCOMES, "Forbidden")


@dataclass(frozen=True)
class RunnerIdLookup:
    runner_id: int | None = None  # to record on the pod
    retry_after: float | None = None


def decide_runner_id(
    pod: RunnerPod, now: datetime, settings: Settings, github: Answers
) -> RunnerIdLookup:
    """The runner's id once GitHub lists it; look again until then, for a while."""
    if pod.scope is None or pod.runner_id is not None:
        return RunnerIdLookup()
    if pod.observed.stopped or not pod.runner_running:
        return RunnerIdLookup()  # a pod status change calls again when it starts
    running_since = pod.observed.ready_since or pod.runner_running_since
    timeout = settings.registration_timeout
    if running_since is not None and (now - running_since).total_seconds() >= timeout:
        return RunnerIdLookup()  # it never registered; its owner replaces it
    try:
        found = github.find_runner(pod.scope, pod.runner_name)
    except RateLimitedError as error:
        return RunnerIdLookup(retry_after=error.retry_after)
    except GitHubError:
        return RunnerIdLookup(retry_after=settings.registration_check_interval)
    if found is None:
        return RunnerIdLookup(retry_after=settings.registration_check_interval)
    return RunnerIdLookup(runner_id=found.id)


@dataclass(frozen=True)
class PodStop:
    state: GracefulStopStatus  # to record on the pod
    finalized: bool  # the pod may go
    retry_after: float | None = None


def decide_pod_stop(pod: RunnerPod, now: datetime, timing: StopTiming, github: Answers) -> PodStop:
    """One step of the pod's stop: the graceful stop, then whatever registration is left."""
    assert pod.scope is not None
    unreachable = node_unreachable(pod, now)
    subject = _subject(pod, now, unreachable)
    state = recorded_stop(pod)
    if state is None:
        reason = "PodDeleted" if pod.observed.terminating else "PodUnselected"
        state = begin_stop(reason, subject, now)
    if unreachable and state.waiting_for_completion:
        # Its exit would never be reported: ask GitHub again instead of waiting for it.
        state = state.model_copy(update={"waiting_for_completion": False})
    tick = tick_graceful_stop(subject, state, github, now, timing)
    if not tick.done:
        return PodStop(tick.state, finalized=False, retry_after=tick.retry_after)
    if tick.state.outcome in _FINAL_OUTCOMES:
        return PodStop(tick.state, finalized=True)
    leftover = remove_stopped_runner(github, pod.scope, pod.runner_name, tick.state, now, timing)
    return PodStop(leftover.state, leftover.retry_after is None, leftover.retry_after)


def _subject(pod: RunnerPod, now: datetime, unreachable: bool) -> StopSubject:
    assert pod.scope is not None
    observed = pod.observed
    if unreachable and observed.ready_since is None:
        # Not Ready any more, so the registration grace period counts from the runner's start
        # (or the deletion): a runner that never registered does not hold the pod.
        since = pod.runner_running_since or pod.deletion_timestamp or now
        observed = replace(observed, ready_since=since)
    return StopSubject(
        scope=pod.scope,
        runner_name=pod.runner_name,
        runner_id=pod.runner_id,
        pod=observed,
        # Waiting for an ephemeral runner's completion needs a node that reports it.
        ephemeral=observed.ephemeral and not unreachable,
    )


def recorded_stop(pod: RunnerPod) -> GracefulStopStatus | None:
    """This pod's stop as recorded; an unreadable record, or another pod's, starts anew. The
    record is anyone's to write who may edit the pod: the runner id it names is kept only when
    it is the pod's own (the decorator records each id a stop learns as the pod's, sealed),
    else the runner is looked up by name."""
    state = read_stop(pod.annotations.get(GRACEFUL_STOP_ANNOTATION))
    if state is None or state.pod_uid != pod.uid or not _times_readable(state):
        return None
    if state.runner_id is not None and state.runner_id != pod.runner_id:
        return state.model_copy(update={"runner_id": None})
    return state


def _times_readable(state: GracefulStopStatus) -> bool:
    """Every time the record holds reads as a time (the annotation may have been edited)."""
    recorded = (state.started_at, state.last_attempt_at, state.completed_at)
    return all(text is None or observed_time(text) is not None for text in recorded)
