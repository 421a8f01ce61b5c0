"""The graceful-stop decision table, branch by branch (ARC's runner_graceful_stop.go)."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import timedelta

import pytest

from hooks.clock import ManualClock, format_time
from hooks.github.port import GitHubError, RemoveOutcome, RemoveResult, Scope
from hooks.lifecycle.graceful_stop import StopSubject, StopTick, StopTiming, tick_graceful_stop
from hooks.lifecycle.steps import resolve
from hooks.resources.runner import GracefulStopStatus
from hooks.runner.observed_pod import ObservedPod
from tests.in_memory_github import InMemoryGitHub, rate_limited

SCOPE = Scope(organization="acme")
NAME = "runner-a"
TIMING = StopTiming(retry_delay=60, rate_limit_retry_delay=30, registration_timeout=600)

RUNNING = ObservedPod(
    name=NAME,
    uid="pod-1",
    phase="Running",
    labels={},
    terminating=False,
    ready=True,
    ready_since=None,
    reason="",
    message="",
    has_container_statuses=True,
    runner_exit_code=None,
    runner_started=True,
    ephemeral=True,
    scope=Scope(organization="acme"),
)
PENDING = replace(RUNNING, phase="Pending", ready=False, runner_started=False)
SUCCEEDED = replace(RUNNING, phase="Succeeded", runner_exit_code=0)
RUNNER_EXITED = replace(RUNNING, runner_exit_code=1)
TERMINATING_NO_STATUS = replace(RUNNING, terminating=True, has_container_statuses=False)


def tick(
    subject: StopSubject, state: GracefulStopStatus, github: InMemoryGitHub, clock: ManualClock
) -> StopTick:
    """One tick of the pure decision, its GitHub steps carried out on `github`."""
    return resolve(
        lambda answers: tick_graceful_stop(subject, state, answers, clock.now(), TIMING), github
    )


@dataclass
class Row:
    name: str
    pod: ObservedPod | None
    ephemeral: bool = True
    registered: bool = True
    busy: bool = False
    ready_for: float | None = 60.0  # seconds the pod has been Ready
    runner_id_known: bool = False
    state: dict[str, object] = field(default_factory=dict)
    remove_answer: RemoveResult | None = None
    list_error: GitHubError | None = None
    last_seen_busy: bool = False
    # expectations
    done: bool = False
    outcome: str | None = None
    retry_after: float | None = None
    deletes: int = 0
    waiting: bool = False


ROWS = [
    Row(
        "already complete",
        RUNNING,
        state={"outcome": "Unregistered"},
        done=True,
        outcome="Unregistered",
    ),
    Row("no pod", None, done=True, outcome="PodStopped"),
    Row("pod succeeded", SUCCEEDED, done=True, outcome="PodStopped"),
    Row("runner container exited", RUNNER_EXITED, done=True, outcome="PodStopped"),
    Row(
        "terminating without container statuses",
        TERMINATING_NO_STATUS,
        done=True,
        outcome="PodStopped",
    ),
    Row(
        "ephemeral waiting for completion: no GitHub call",
        RUNNING,
        state={"waiting_for_completion": True},
        busy=True,
        retry_after=60,
        waiting=True,
    ),
    Row("idle runner: unregistered", RUNNING, done=True, outcome="Unregistered", deletes=1),
    Row(
        "known id: no lookup, unregistered",
        RUNNING,
        runner_id_known=True,
        done=True,
        outcome="Unregistered",
        deletes=1,
    ),
    Row(
        "busy ephemeral: wait for completion",
        RUNNING,
        busy=True,
        retry_after=60,
        deletes=1,
        waiting=True,
    ),
    Row(
        "busy static: retry after the delay",
        RUNNING,
        ephemeral=False,
        busy=True,
        retry_after=60,
        deletes=1,
    ),
    Row(
        "DELETE tried 20s ago: no second DELETE",
        RUNNING,
        ephemeral=False,
        busy=True,
        state={"last_attempt_at": -20},
        retry_after=40,
    ),
    Row(
        "DELETE tried 60s ago: retried",
        RUNNING,
        ephemeral=False,
        busy=True,
        state={"last_attempt_at": -60},
        retry_after=60,
        deletes=1,
    ),
    # The record edited by hand, or written by a clock ahead: a 500 at every sync, or a
    # stop that waited until then (found by the hostile-input fuzzer).
    *[
        Row(
            f"DELETE tried at {when!r}: tried now",
            RUNNING,
            ephemeral=False,
            busy=True,
            state={"last_attempt_at": when},
            retry_after=60,
            deletes=1,
        )
        for when in ("yesterday", "0001-01-01T00:00:00+14:00", "2100-01-01T00:00:00Z")
    ],
    Row(
        "not found, pod pending: never started",
        PENDING,
        registered=False,
        done=True,
        outcome="NotRegistered",
    ),
    Row(
        "not found, ready 1 min: may be registering",
        RUNNING,
        registered=False,
        ready_for=60,
        retry_after=60,
    ),
    Row(
        "not found, ready 9.5 min: wait the rest",
        RUNNING,
        registered=False,
        ready_for=570,
        retry_after=30,
    ),
    Row(
        "not found, ready 10 min: never registered",
        RUNNING,
        registered=False,
        ready_for=600,
        done=True,
        outcome="NotRegistered",
    ),
    Row(
        "not found, not ready yet: wait",
        replace(RUNNING, ready=False),
        registered=False,
        ready_for=None,
        retry_after=60,
    ),
    Row(
        "404 on DELETE: gone already",
        RUNNING,
        remove_answer=RemoveResult(RemoveOutcome.NOT_FOUND),
        done=True,
        outcome="NotRegistered",
        deletes=1,
    ),
    # Found by a hostile probe: credentials switched to a token that may not remove runners,
    # then the RunnerDeployment deleted; both busy jobs were cut off within a minute.
    Row(
        "403 on DELETE of a runner listed busy: its job is waited for",
        RUNNING,
        busy=True,
        runner_id_known=True,
        remove_answer=RemoveResult(RemoveOutcome.FORBIDDEN, message="Resource not accessible"),
        retry_after=60,
        deletes=1,
    ),
    Row(
        "403 on DELETE and on the list, ephemeral runner last seen busy: waited for",
        RUNNING,
        runner_id_known=True,
        remove_answer=RemoveResult(RemoveOutcome.FORBIDDEN, message="Resource not accessible"),
        list_error=GitHubError("list runners: HTTP 403", 403),
        last_seen_busy=True,
        retry_after=60,
        deletes=1,
    ),
    Row(
        "403 on DELETE and on the list, static runner last seen busy: done, as ARC",
        RUNNING,
        ephemeral=False,
        runner_id_known=True,
        remove_answer=RemoveResult(RemoveOutcome.FORBIDDEN, message="Resource not accessible"),
        list_error=GitHubError("list runners: HTTP 403", 403),
        last_seen_busy=True,
        done=True,
        outcome="Forbidden",
        deletes=1,
    ),
    Row(
        "403 on DELETE: done, as ARC",
        RUNNING,
        remove_answer=RemoveResult(RemoveOutcome.FORBIDDEN, message="Resource not accessible"),
        done=True,
        outcome="Forbidden",
        deletes=1,
    ),
    Row(
        "rate limited on DELETE: retry after reset",
        RUNNING,
        remove_answer=RemoveResult(RemoveOutcome.RATE_LIMITED, retry_after=1234),
        retry_after=1234,
        deletes=1,
    ),
    Row(
        "rate limited without reset: default delay",
        RUNNING,
        remove_answer=RemoveResult(RemoveOutcome.RATE_LIMITED),
        retry_after=30,
        deletes=1,
    ),
    Row(
        "server error on DELETE: retry after delay",
        RUNNING,
        remove_answer=RemoveResult(RemoveOutcome.ERROR, message="502"),
        retry_after=60,
        deletes=1,
    ),
    Row("rate limited listing runners", RUNNING, list_error=rate_limited(300), retry_after=300),
    Row(
        "GitHub down listing runners", RUNNING, list_error=GitHubError("boom", 500), retry_after=60
    ),
]


@pytest.mark.parametrize("row", ROWS, ids=[r.name for r in ROWS])
def test_decision_table(row: Row, clock: ManualClock, github: InMemoryGitHub) -> None:
    runner_id = github.register(SCOPE, NAME, busy=row.busy) if row.registered else None
    if row.remove_answer is not None:
        github.remove_answers.append(row.remove_answer)
    github.list_error = row.list_error
    pod = row.pod
    if pod is not None and row.ready_for is not None and pod.ready:
        pod = replace(pod, ready_since=clock.now() - timedelta(seconds=row.ready_for))
    state_fields: dict[str, object] = {
        "reason": "RunnerDeleted",
        "started_at": "2026-01-01T00:00:00Z",
    }
    for key, value in row.state.items():
        if key == "last_attempt_at" and isinstance(value, int):
            value = format_time(clock.now() + timedelta(seconds=value))
        state_fields[key] = value
    state = GracefulStopStatus.model_validate(state_fields)
    subject = StopSubject(
        scope=SCOPE,
        runner_name=NAME,
        runner_id=runner_id if row.runner_id_known else None,
        pod=pod,
        ephemeral=row.ephemeral,
        last_seen_busy=row.last_seen_busy,
    )

    result = tick(subject, state, github, clock)

    assert result.done is row.done
    assert result.state.outcome == row.outcome
    assert result.retry_after == (pytest.approx(row.retry_after) if row.retry_after else None)
    assert github.count("remove_runner") == row.deletes
    assert result.state.waiting_for_completion is row.waiting
    forbidden = (
        row.remove_answer is not None and row.remove_answer.outcome is RemoveOutcome.FORBIDDEN
    )
    if row.runner_id_known and not forbidden:  # a 403 asks the (cached) list whether it is busy
        assert github.count("list_runners") == 0
    if row.done and "outcome" not in row.state:
        assert result.state.completed_at == format_time(clock.now())


def test_delete_attempt_is_recorded_and_throttles_the_next_tick(
    clock: ManualClock, github: InMemoryGitHub
) -> None:
    github.register(SCOPE, NAME, busy=True)
    subject = StopSubject(SCOPE, NAME, None, RUNNING, ephemeral=False)
    state = GracefulStopStatus(reason="RunnerDeleted", started_at=format_time(clock.now()))

    first = tick(subject, state, github, clock)
    clock.advance(1)
    second = tick(subject, first.state, github, clock)
    clock.advance(59)
    third = tick(subject, second.state, github, clock)

    assert first.state.last_attempt_at == "2026-01-01T00:00:00Z"
    assert first.state.runner_id is not None
    assert second.retry_after == pytest.approx(59)
    assert github.count("remove_runner") == 2  # the first and, a retry delay later, the third
    assert not third.done


def test_busy_ephemeral_runner_finishes_and_its_pod_stops(
    clock: ManualClock, github: InMemoryGitHub
) -> None:
    github.register(SCOPE, NAME, busy=True)
    subject = StopSubject(SCOPE, NAME, None, RUNNING, ephemeral=True)
    state = GracefulStopStatus(reason="RunnerDeleted", started_at=format_time(clock.now()))

    waiting = tick(subject, state, github, clock)
    for _ in range(10):
        clock.advance(60)
        waiting = tick(subject, waiting.state, github, clock)
    finished = tick(replace(subject, pod=SUCCEEDED), waiting.state, github, clock)

    assert github.count("remove_runner") == 1
    assert finished.done and finished.state.outcome == "PodStopped"


@pytest.mark.parametrize(
    ("ephemeral", "busy", "done", "outcome"),
    [
        (True, True, False, None),  # waits for the job of the pod's own registration
        (False, True, False, None),  # retried after the delay
        (False, False, True, "Unregistered"),  # the pod's own registration removed
    ],
)
def test_a_404_for_an_earlier_registration_of_the_name_removes_the_current_one(
    clock: ManualClock,
    github: InMemoryGitHub,
    ephemeral: bool,
    busy: bool,
    done: bool,
    outcome: str | None,
) -> None:
    """An id read from a list made before the name registered again (a token-mode runner's
    next pod, a list cached by another replica) answers 404: that proves the earlier
    registration gone, not this pod's. The name is asked for anew, and the registration found
    is the one stopped: a busy runner keeps its pod."""
    current = github.register(SCOPE, NAME, busy=busy)
    earlier = current + 1000  # removed before the current one registered
    subject = StopSubject(SCOPE, NAME, earlier, RUNNING, ephemeral=ephemeral)
    state = GracefulStopStatus(reason="RunnerDeleted", started_at=format_time(clock.now()))

    result = tick(subject, state, github, clock)

    assert (result.done, result.state.outcome) == (done, outcome)
    assert result.state.runner_id == current
    assert github.count("remove_runner") == 2  # the earlier id (404), then the current one
    assert github.count("runners_named") == 1


def test_a_404_with_nothing_registered_under_the_name_any_more_lets_the_pod_go(
    clock: ManualClock, github: InMemoryGitHub
) -> None:
    subject = StopSubject(SCOPE, NAME, 4242, RUNNING, ephemeral=False)
    state = GracefulStopStatus(reason="RunnerDeleted", started_at=format_time(clock.now()))

    result = tick(subject, state, github, clock)

    assert result.done and result.state.outcome == "NotRegistered"
    assert github.count("remove_runner") == 1


def test_a_404_whose_name_cannot_be_asked_for_is_retried_not_taken_for_gone(
    clock: ManualClock, github: InMemoryGitHub
) -> None:
    github.register(SCOPE, NAME, busy=True)
    github.list_error = GitHubError("boom", 502)
    subject = StopSubject(SCOPE, NAME, 4242, RUNNING, ephemeral=False)
    state = GracefulStopStatus(reason="RunnerDeleted", started_at=format_time(clock.now()))

    result = tick(subject, state, github, clock)

    assert not result.done and result.retry_after == pytest.approx(60)
    assert result.state.last_attempt_at == format_time(clock.now())  # the DELETE counts


def test_the_id_found_after_a_404_is_the_one_retried(
    clock: ManualClock, github: InMemoryGitHub
) -> None:
    """A pod's recorded id that predates its registration is corrected once: each later
    retry of the busy runner is one DELETE of the id found, not the 404 and the lookup again."""
    current = github.register(SCOPE, NAME, busy=True)
    subject = StopSubject(SCOPE, NAME, current + 1000, RUNNING, ephemeral=False)
    state = GracefulStopStatus(reason="PodDeleted", started_at=format_time(clock.now()))
    state = tick(subject, state, github, clock).state
    before = len(github.calls)

    for _ in range(5):
        clock.advance(TIMING.retry_delay)
        result = tick(subject, state, github, clock)
        assert not result.done
        state = result.state

    assert github.calls[before:] == [("remove_runner", str(SCOPE))] * 5
