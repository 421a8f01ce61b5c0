"""One scale set's listener, as GitHub's (`listener/listener.go` of `actions/scaleset`, MIT
license), a step at a time so that a process can run it in a thread and the simulated world on
virtual time.

A step is one of:

1. no session: open one. A conflict (another listener holds it) waits `STANDBY_SECONDS` and
   tries again: that other listener counts, so two never double-count. The session's
   statistics are published at once: a restarted listener resumes from GitHub's count, not
   from memory.
2. poll with the last message id and `maxCapacity` (the HRA's maxReplicas). Empty: publish the
   last statistics again (GitHub's listener does the same).
3. a message: acknowledge it (delete), acquire the jobs it offers, mark the Runners that
   started a job, publish its statistics. Should the delete or the acquire fail, the session
   is given up and a new one opened (after the back-off): the service offers a job once per
   session, so one offered and not acquired would wait for ever.

What is published is `totalAssignedJobs`, an absolute count, with the time it was counted
(strictly increasing, in microseconds). It is written when it changed, after a message with
job events (a finished job's runner is replaced only after a new count: `hooks.scale_set_mode`),
and every `REPUBLISH_SECONDS` otherwise, to repair an annotation someone removed. A lower count
is written only once it has stood `DIP_HOLD_SECONDS`: a job ending and the next one assigned a
moment later is not a scale-down. A failed call
backs off (doubling up to `MAX_BACKOFF_SECONDS`); a session the service no longer knows is
opened again.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Protocol

from hooks.clock import Clock
from hooks.github.port import GitHubError
from hooks.github.scaleset.client import MessageSession, ScaleSetClient
from hooks.github.scaleset.errors import (
    MessageQueueTokenExpiredError,
    ScaleSetHTTPError,
    SessionConflictError,
)
from hooks.github.scaleset.models import JobStarted, RunnerScaleSetStatistic
from hooks.listener.targets import ListenerTarget

log = logging.getLogger("arc_hooks.listener")

STANDBY_SECONDS = 30.0
MIN_BACKOFF_SECONDS = 5.0
MAX_BACKOFF_SECONDS = 120.0
REPUBLISH_SECONDS = 60.0  # the autoscaler takes a count older than 3 minutes for none
DIP_HOLD_SECONDS = 5.0  # a lower count is published once it has stood this long
_LOST_SESSION_STATUSES = (401, 404)


class ListenerSink(Protocol):
    """Where a listener's findings go (Kubernetes, in `hooks.listener.sink`)."""

    def write_assigned_jobs(self, target: ListenerTarget, assigned: int, counted_at: str) -> None:
        """`counted_at`: RFC 3339 with microseconds, later than any before."""
        ...

    def mark_job_started(self, target: ListenerTarget, job: JobStarted) -> None: ...


class ListenerObserver(Protocol):
    """Metrics, as GitHub's listener records them."""

    def statistics(self, target: ListenerTarget, statistics: RunnerScaleSetStatistic) -> None: ...

    def job_started(self, target: ListenerTarget, job: JobStarted) -> None: ...

    def job_completed(self, target: ListenerTarget, result: str, seconds: float | None) -> None: ...


@dataclass(frozen=True)
class Next:
    """When to step again: `after` seconds; `polled_empty` says a poll came back with nothing
    (a real long poll has waited already; a simulated one answers at once)."""

    after: float
    polled_empty: bool = False


@dataclass
class ListenerCounts:
    """What one listener did, for tests and summaries."""

    sessions_opened: int = 0
    conflicts: int = 0
    polls: int = 0
    messages: int = 0
    acquired: int = 0
    errors: int = 0
    published: list[int] = field(default_factory=list)


class ScaleSetListener:
    def __init__(
        self,
        client: ScaleSetClient,
        target: ListenerTarget,
        sink: ListenerSink,
        *,
        owner: str,
        clock: Clock,
        observer: ListenerObserver | None = None,
    ) -> None:
        self.client = client
        self.target = target
        self.sink = sink
        self.owner = owner
        self.clock = clock
        self.observer = observer
        self.counts = ListenerCounts()
        self._session: MessageSession | None = None
        self._last_message_id = 0
        self._latest: RunnerScaleSetStatistic | None = None
        self._published: tuple[int, datetime] | None = None
        self._lower_since: datetime | None = None  # since when the count is below the published
        self._failures = 0
        self._restarts = 0  # sessions given up in a row after a failed delete or acquire
        self._abandoned: MessageSession | None = None  # given up, but not deleted yet

    @property
    def has_session(self) -> bool:
        return self._session is not None

    def retarget(self, target: ListenerTarget) -> None:
        """The same scale set with new bounds or a new autoscaler: published again."""
        if target.autoscaler != self.target.autoscaler:
            self._published = None
        self.target = target

    def step(self) -> Next:
        try:
            if self._session is None:
                return self._open()
            return self._poll(self._session)
        except GitHubError as error:
            return self._failed(error)

    def close(self) -> None:
        """Delete the session (a clean shutdown), so that another listener takes over now."""
        session, self._session = self._session, None
        if session is not None:
            try:
                session.close()
            except GitHubError as error:
                log.warning("scale set %s: session not deleted: %s", self._name, error)

    def forget_session(self) -> None:
        """Drop the session without deleting it (what a crash leaves behind)."""
        self._session = None

    # ------------------------------------------------------------------ steps

    def _open(self) -> Next:
        if self._abandoned is not None:  # a failure here backs off, as any failed call
            try:
                self._abandoned.close()
            except ScaleSetHTTPError as error:
                if error.status != 404:  # 404: the service let it go already
                    raise
            self._abandoned = None
        try:
            session = self.client.create_message_session(self.target.scale_set_id, self.owner)
        except SessionConflictError:
            self.counts.conflicts += 1
            return Next(STANDBY_SECONDS)
        self.counts.sessions_opened += 1
        self._session, self._last_message_id, self._failures = session, 0, 0
        statistics = session.session.statistics
        if statistics is not None:
            self._publish(statistics, news=True)
        log.info("scale set %s: session opened by %s", self._name, self.owner)
        return Next(0.0)

    def _poll(self, session: MessageSession) -> Next:
        self.counts.polls += 1
        message = session.get_message(self._last_message_id, self.target.max_runners)
        self._failures = 0
        if message is None:
            if self._latest is not None:
                self._publish(self._latest)
            return Next(0.0, polled_empty=True)
        self.counts.messages += 1
        self._last_message_id = message.message_id
        available = [job.runner_request_id for job in message.jobs_available]
        restart_error: GitHubError | None = None
        try:
            session.delete_message(message.message_id)
            if available:
                self.counts.acquired += len(session.acquire_jobs(available))
            self._restarts = 0
        except GitHubError as error:
            if _session_lost(error):
                raise  # opened again at once (`_failed`)
            # The service offers a job once per session: one offered and not acquired would
            # wait for ever, and count against the capacity sent with every poll. GitHub's
            # listener exits here, and its restart opens a new session: so does this one.
            self._restart_session(error)
            restart_error = error
        for started in message.jobs_started:
            if self.observer is not None:
                self.observer.job_started(self.target, started)
            self.sink.mark_job_started(self.target, started)
        if self.observer is not None:
            for completed in message.jobs_completed:
                seconds = None
                if completed.finish_time and completed.runner_assign_time:
                    seconds = (completed.finish_time - completed.runner_assign_time).total_seconds()
                self.observer.job_completed(self.target, completed.result, seconds)
        if message.statistics is not None:
            self._publish(message.statistics, news=bool(message.jobs))
        if restart_error is not None:  # restarting: backing off as after any failure
            return Next(_backoff(self._restarts, restart_error))
        return Next(0.0)

    def _restart_session(self, error: GitHubError) -> None:
        """Give the session up (deleted when the service answers) and open a new one at the
        next step, which the service offers every job not yet acquired again."""
        self.counts.errors += 1
        self._restarts += 1
        log.warning(
            "scale set %s: %s; opening a new session, offered jobs not acquired are offered "
            "again there",
            self._name,
            error,
        )
        session, self._session = self._session, None
        if session is None:
            return
        try:
            session.close()
        except GitHubError as close_error:
            # Still open on the service, it would refuse a new one (a conflict, as if another
            # listener held it) until it expires: deleted before the next is opened.
            log.warning("scale set %s: session not deleted: %s", self._name, close_error)
            self._abandoned = session

    def _failed(self, error: GitHubError) -> Next:
        self.counts.errors += 1
        if _session_lost(error) and self._session is not None:
            log.warning("scale set %s: session lost (%s); opening a new one", self._name, error)
            self._session = None
            return Next(0.0)
        self._failures += 1
        wait = _backoff(self._failures, error)
        log.warning("scale set %s: %s; trying again in %.0f s", self._name, error, wait)
        return Next(wait)

    def _publish(self, statistics: RunnerScaleSetStatistic, *, news: bool = False) -> None:
        self._latest = statistics
        if self.observer is not None:
            self.observer.statistics(self.target, statistics)
        assigned = statistics.total_assigned_jobs
        now = self.clock.now()
        if self._holds_dip(assigned, now):
            return
        due = (
            news
            or self._published is None
            or self._published[0] != assigned
            or now - self._published[1] >= timedelta(seconds=REPUBLISH_SECONDS)
        )
        if not due or self.target.autoscaler is None:
            return
        if self._published is not None and now <= self._published[1]:
            now = self._published[1] + timedelta(microseconds=1)
        try:
            self.sink.write_assigned_jobs(self.target, assigned, precise_time(now))
        except Exception as error:  # the next message publishes again
            log.warning("scale set %s: assigned jobs not written: %s", self._name, error)
            return
        self._published = (assigned, now)
        self.counts.published.append(assigned)

    def _holds_dip(self, assigned: int, now: datetime) -> bool:
        """Whether a count lower than the one published is held back: it is published once it
        has stood `DIP_HOLD_SECONDS` (at the next message or empty poll after that). GitHub
        reports a finished job and the next one assigned in separate messages, so the count
        often falls by one for a moment; published, the dip deletes an idle runner, and the
        next count creates another."""
        if self._published is None or assigned >= self._published[0]:
            self._lower_since = None
            return False
        if self._lower_since is None:
            self._lower_since = now
        return (now - self._lower_since).total_seconds() < DIP_HOLD_SECONDS

    @property
    def _name(self) -> str:
        return f"{self.target.scale_set_name} ({self.target.namespace}/{self.target.deployment})"


def precise_time(when: datetime) -> str:
    """RFC 3339 with microseconds (a valid date-time for the CRDs)."""
    return when.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _backoff(failures: int, error: GitHubError) -> float:
    """Seconds to wait after the `failures`-th failure in a row: doubling up to
    `MAX_BACKOFF_SECONDS`, and at least as long as the service asked (`retry_after`)."""
    wait: float = min(MIN_BACKOFF_SECONDS * 2 ** max(failures - 1, 0), MAX_BACKOFF_SECONDS)
    retry_after = getattr(error, "retry_after", None)
    if isinstance(retry_after, int | float):
        wait = max(wait, float(retry_after))
    return wait


def _session_lost(error: GitHubError) -> bool:
    """The service no longer knows the session (or its token): a new one is opened at once."""
    return isinstance(error, MessageQueueTokenExpiredError) or (
        isinstance(error, ScaleSetHTTPError) and error.status in _LOST_SESSION_STATUSES
    )
