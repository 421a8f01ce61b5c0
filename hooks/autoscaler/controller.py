"""The HorizontalRunnerAutoscaler hook: size the scale target, keep the capacity reservations.

Children: CapacityReservation objects (created by the webhook receiver, controlled by the HRA).
The hook counts the active ones, records when a waiting one starts (`spec.startTime`; again
when one's lifetime is renewed while busy runners hold its job: `hooks.autoscaler.
reservations`), and deletes expired and long-completed ones by leaving them out.

Related objects (asked for by `customize_horizontal_runner_autoscaler`): the scale target, and
when PercentageRunnersBusy scales a RunnerDeployment, its Runners: one is busy when its
`status.busy` (mirrored from the list its last sync read) or the scope's runner list as it is
now (the cached list the Runners read too) says so. Otherwise the counts come from the
target's status (`registeredReplicas`, `busyReplicas`), as for a RunnerSet: an HRA of a
thousand runners is then not sent, and synced again for, every change of every Runner.

The answer goes to the HRA's own status: `desiredReplicas`, which the target's hook reads. No
hook writes to another object. The hook asks to be called again at the next moment its answer
can change without new input (an override boundary, a reservation expiry, the end of the
scale-down delay), and at least every sync period, when the pull metrics may have moved.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import partial
from typing import Any

from pydantic import ValidationError

from hooks.autoscaler.activity import COMPLETED
from hooks.autoscaler.desired import (
    Decision,
    ScaleTarget,
    desired_replicas,
)
from hooks.autoscaler.errors import AutoscalingError, InvalidSpecError
from hooks.autoscaler.metrics import RunnerScope
from hooks.autoscaler.reservations import Reservation, count_reservations
from hooks.autoscaler.schedule import match_overrides, min_replicas_with
from hooks.autoscaler.validation import MAX_SCHEDULED_OVERRIDES
from hooks.children import (
    ConditionValue,
    describe_validation_error,
    invalid_answer,
    merge_conditions,
    read_once_per_state,
    shared_kept,
)
from hooks.clock import format_time, parse_time
from hooks.deps import HookDeps
from hooks.github.credentials import credentials_rules, requested_credentials, spec_secret_name
from hooks.github.port import (
    GitHubError,
    GitHubPort,
    RateLimitedError,
    RunnerListing,
    Scope,
    WorkflowJob,
    WorkflowRun,
    credible_report_time,
)
from hooks.metacontroller import (
    CompositeHookRequest,
    CompositeHookResponse,
    HookKind,
    HookRoute,
    KubeObject,
    object_or_empty,
    observed_time,
)
from hooks.naming import deployment_name_selector
from hooks.resources.autoscaler import (
    METRIC_PERCENTAGE_RUNNERS_BUSY,
    HorizontalRunnerAutoscaler,
    HorizontalRunnerAutoscalerStatus,
)
from hooks.resources.pod_rules import DNS1123_SUBDOMAIN
from hooks.resources.replicaset import RunnerDeployment
from hooks.resources.reservation import KIND as RESERVATION_KIND
from hooks.resources.runner import API_VERSION, RunnerConfig
from hooks.scale_set_mode import assigned_jobs, assigned_jobs_time, declared_scale_set
from hooks.scale_target import MAX_COUNT

RUNNER_DEPLOYMENT = "RunnerDeployment"
RUNNER_SET = "RunnerSet"
DEFAULT_SYNC_PERIOD = 60.0  # ARC's --sync-period
# A reservation's job is first asked about once it has stood five minutes (a lost completion
# costs an idle runner about as long as the scale-down delay holds one anyway); after a "not
# over", once it has stood as long again, at most ten minutes later: a job of half an hour
# costs four calls, not one per sync.
FINISHED_JOB_RECHECK_MIN = timedelta(minutes=5)
FINISHED_JOB_RECHECK_MAX = timedelta(minutes=10)
IDLE_BEFORE_JOB_CHECKS = 60.0  # seconds runners sit idle beyond what explains them first
# Runs listed in one sync at most: each is a GitHub call the hook's answer waits for, and the
# HRA is synced again within a minute.
FINISHED_JOB_CHECKS_PER_SYNC = 5


SCALING_ACTIVE = "ScalingActive"
COUNT_STALE = timedelta(minutes=3)
"""A listener republishes its count at least every minute (hooks/listener/worker.py)."""
_PLURALS = {RUNNER_DEPLOYMENT: "runnerdeployments", RUNNER_SET: "runnersets"}


@dataclass(frozen=True)
class AutoscalerObservation:
    """What one sync saw and decided, for the gauges ARC exports."""

    hra: HorizontalRunnerAutoscaler
    target_kind: str
    target_name: str
    scope: RunnerScope
    decision: Decision
    runners: int
    registered: int
    busy: int
    observed_at: datetime  # when the hook computed this (the replicas' gauges are compared by it)


def customize_horizontal_runner_autoscaler(request: dict[str, Any]) -> dict[str, Any]:
    """Ask for the scale target and, for a RunnerDeployment that PercentageRunnersBusy
    scales, its Runners."""
    parent = object_or_empty(request.get("parent"))
    namespace = object_or_empty(parent.get("metadata")).get("namespace") or ""
    ref = object_or_empty(object_or_empty(parent.get("spec")).get("scaleTargetRef"))
    kind = ref.get("kind") or RUNNER_DEPLOYMENT
    name = ref.get("name")
    if not (isinstance(name, str) and name and isinstance(kind, str) and kind in _PLURALS):
        return {"relatedResources": []}
    rules: list[dict[str, Any]] = [
        {"apiVersion": API_VERSION, "resource": _PLURALS[kind], "names": [name]}
    ]
    selector = deployment_name_selector(name)
    if kind == RUNNER_DEPLOYMENT and _measures_busy_runners(parent) and selector is not None:
        rules.append({"apiVersion": API_VERSION, "resource": "runners", "labelSelector": selector})
    if namespace:
        for rule in rules:
            rule["namespace"] = namespace
    rules += credentials_rules(str(namespace), spec_secret_name(parent))
    return {"relatedResources": rules}


def _measures_busy_runners(parent: dict[str, Any]) -> bool:
    metrics = object_or_empty(parent.get("spec")).get("metrics")
    return isinstance(metrics, list) and any(
        isinstance(metric, dict) and metric.get("type") == METRIC_PERCENTAGE_RUNNERS_BUSY
        for metric in metrics
    )


def sync_horizontal_runner_autoscaler(
    request: CompositeHookRequest, deps: HookDeps
) -> CompositeHookResponse:
    now = deps.clock.now()
    try:
        hra = HorizontalRunnerAutoscaler.model_validate(request.parent)
    except ValidationError as error:
        return invalid_answer(
            request,
            [describe_validation_error(error, "HorizontalRunnerAutoscaler")],
            now,
            [RESERVATION_KIND],
        )
    return _Sync(request, hra, deps, now).answer()


@dataclass(frozen=True)
class _ObservedReservation:
    """A CapacityReservation child, read without a model: an HRA may hold hundreds, and is
    synced at every change of any of them. Shared through the memo: read-only."""

    kept: KubeObject  # the object as an answer keeps it unchanged
    name: str
    reservation: Reservation | None  # None: unreadable, kept and not counted
    completed: bool
    expiration_time: datetime | None
    job_checked_at: datetime | None = None  # when GitHub last said its job was not over

    @classmethod
    def read(cls, obj: KubeObject) -> _ObservedReservation:
        name = str((obj.get("metadata") or {}).get("name", ""))
        spec = obj.get("spec")
        try:
            if not isinstance(spec, dict):
                raise ValueError("no spec")
            effective = _time(spec.get("effectiveTime"))
            expiration = _time(spec.get("expirationTime"))
            start = spec.get("startTime")
            started_at = _time(start) if start else None
            renew = spec.get("renewTime")
            renewed_at = _time(renew) if renew else None
            job_started = bool(spec.get("jobStartTime"))
            replicas = spec.get("replicas", 1)
            if not isinstance(replicas, int) or isinstance(replicas, bool) or replicas < 0:
                raise ValueError("bad replicas")
            reservation = Reservation(
                name=name,
                effective_time=effective,
                expiration_time=expiration,
                started_at=started_at,
                replicas=replicas,
                # A job's: one without (a hand's) is never renewed (found in review: no job
                # check could ever end it).
                renewable=isinstance(spec.get("job"), dict),
                renewed_at=renewed_at,
                job_started=job_started,
            )
        except (KeyError, TypeError, ValueError):
            return cls(shared_kept(obj), name, None, False, None)
        completed = bool(spec.get("completionTime"))
        try:
            checked = spec.get("jobCheckTime")
            job_checked_at = _time(checked) if checked else None
        except ValueError:
            job_checked_at = None  # unreadable: asked about as if never asked
        return cls(shared_kept(obj), name, reservation, completed, expiration, job_checked_at)


def _observed_reservations(
    objects: list[KubeObject], deps: HookDeps, *, shared: bool
) -> list[_ObservedReservation]:
    """Every reservation read, each state once: a burst syncs the HRA at every change of any
    of its reservations (`read_once_per_state`; `shared`: `members_shared`)."""
    return read_once_per_state(
        objects,
        RESERVATION_KIND,
        _ObservedReservation.read,
        _ObservedReservation,
        deps.observed_children,
        deps.children_by_object if shared else None,
    )


def _job_of(observed: _ObservedReservation) -> tuple[tuple[str, int], object] | None:
    """The reservation's job: its run (repository, run id) and its id; None when not named."""
    job = object_or_empty(object_or_empty(observed.kept.get("spec")).get("job"))
    repository, run_id, job_id = job.get("repository"), job.get("runID"), job.get("id")
    if not (isinstance(repository, str) and isinstance(run_id, int) and job_id):
        return None
    return (repository, run_id), job_id


def _next_job_check(since: datetime, checked: datetime | None) -> datetime:
    """When a reservation's job is next asked about (`_Sync._check_jobs`)."""
    if checked is None:
        return since + FINISHED_JOB_RECHECK_MIN
    interval = min(max(checked - since, FINISHED_JOB_RECHECK_MIN), FINISHED_JOB_RECHECK_MAX)
    try:
        return checked + interval
    except OverflowError:  # a record near year 9999, written by hand: asked about now
        return since


def _time(value: object) -> datetime:
    """A reservation's time; any year is taken, as the CRD allows (the sizing reports an
    overflow as a failure condition)."""
    if not isinstance(value, str):
        raise ValueError("not a time")
    return parse_time(value)


class _Sync:
    def __init__(
        self,
        request: CompositeHookRequest,
        hra: HorizontalRunnerAutoscaler,
        deps: HookDeps,
        now: datetime,
    ) -> None:
        self.request = request
        self.hra = hra
        self.deps = deps
        self.now = now
        self.previous = hra.status or HorizontalRunnerAutoscalerStatus()
        self.observed = _observed_reservations(
            request.objects(RESERVATION_KIND), deps, shared=request.members_shared
        )
        self.finished: set[str] = set()  # reservations whose job GitHub says is over
        self.not_over: set[str] = set()  # reservations whose job GitHub says is not over
        self.idle_since: datetime | None = None  # idle runners beyond minReplicas since then
        self.scale_set_mode = False  # the target's runners are a scale set's members
        self.assigned: int | None = None  # the listener's count, in scale-set mode
        self.assigned_time: str | None = None
        # ARC reads an HRA's pull metrics with the HRA's own credentials, if it names some.
        credentials = requested_credentials(
            request, hra.metadata.namespace, spec_secret_name(request.parent)
        )
        self.github = deps.github_for(credentials)

    def answer(self) -> CompositeHookResponse:
        ref = self.hra.spec.scale_target_ref
        kind = (ref.kind if ref else None) or RUNNER_DEPLOYMENT
        name = (ref.name if ref else None) or ""
        if not name:
            return self._unchanged("InvalidSpec", "spec.scaleTargetRef.name is required")
        if kind not in _PLURALS:
            # ARC's log line, without the kind it quotes: the field may hold any text.
            return self._unchanged(
                "InvalidSpec",
                "spec.scaleTargetRef.kind is not supported. valid kinds are "
                f"{RUNNER_DEPLOYMENT} and {RUNNER_SET}",
            )
        if not _is_object_name(name):
            # No object has such a name, and one that is not a name may be anything.
            return self._unchanged(
                "InvalidSpec", "spec.scaleTargetRef.name is not a valid object name"
            )
        target_obj = self.request.object_named(kind, name, related=True)
        if target_obj is None or not _same_namespace(target_obj, self.hra):
            return self._unchanged(
                "ScaleTargetNotFound",
                f"{kind} {self.hra.metadata.namespace}/{name} not found",
            )
        try:
            config = _runner_config(kind, target_obj)
        except ValidationError as error:
            return self._unchanged("InvalidScaleTarget", describe_validation_error(error, kind))
        scope = RunnerScope(
            enterprise=config.enterprise or "",
            organization=config.organization or "",
            repository=config.repository or "",
            labels=tuple(config.labels),
        )
        if not (scope.enterprise or scope.organization or scope.repository):
            # Its own sync says so too; asking GitHub about no scope only spends the budget.
            return self._unchanged(
                "InvalidScaleTarget",
                f"{kind} {self.hra.metadata.namespace}/{name} names no enterprise, "
                "organization or repository",
            )
        runners = self.request.objects("Runner", related=True)
        counts = _runner_counts(kind, target_obj, runners, self.request.parent)
        measured = kind == RUNNER_DEPLOYMENT and _measures_busy_runners(self.request.parent)
        activity = _HookActivity(
            self.github, counts.busy, _busy_listing(scope, runners, self.now) if measured else None
        )
        scale_set = _in_scale_set_mode(target_obj)
        self.scale_set_mode = scale_set
        annotations = self.hra.metadata.annotations
        self.assigned = assigned_jobs(annotations) if scale_set else None
        self.assigned_time = assigned_jobs_time(annotations) if scale_set else None
        counted_at = observed_time(self.assigned_time)
        if counted_at is not None and self.now - counted_at > COUNT_STALE:
            # No listener has counted for a while: the count would keep runners no job waits
            # for (nothing is acquired meanwhile); the deployment falls back to minReplicas.
            self.assigned = None
        target = ScaleTarget(
            scope=scope,
            replicas=self._replicas_in_effect(kind, target_obj),
            scale_set=scale_set,
            assigned_jobs=self.assigned,
        )
        try:
            if not scale_set:
                self._check_jobs(self._idle_for_a_while(counts.idle, counts.busy))
            # In scale-set mode the assigned jobs count every job: reservations would too.
            reservations = [] if scale_set else self._active_reservations()
            decision = desired_replicas(
                self.hra,
                target,
                activity,
                self.now,
                reservations=reservations,
                busy_runners=counts.busy,
                idle_runners=counts.idle,
                default_scale_down_delay=self.deps.default_scale_down_delay,
                sync_period=timedelta(seconds=self.deps.sync_period),
            )
        except RateLimitedError as error:
            return self._unchanged(
                "GitHubRateLimited", str(error), retry_after=max(error.retry_after, 1.0)
            )
        except GitHubError as error:
            return self._unchanged("GitHubError", str(error))
        except InvalidSpecError as error:
            return self._unchanged("InvalidSpec", str(error))
        except AutoscalingError as error:
            return self._unchanged("RunnerAutoscalingFailure", str(error))
        except OverflowError:
            # Values the schema allows but time arithmetic cannot hold (e.g. a delay of 10^14
            # seconds, a factor of 1e308): an answer that cannot be computed, not a crash.
            return self._unchanged(
                "RunnerAutoscalingFailure",
                "a duration, time or scaling factor in the spec is too large to compute with",
            )
        if self.deps.observe_autoscaler is not None:
            self.deps.observe_autoscaler(
                AutoscalerObservation(
                    hra=self.hra,
                    target_kind=kind,
                    target_name=name,
                    scope=scope,
                    decision=decision,
                    runners=counts.runners,
                    registered=counts.registered,
                    busy=activity.counted_busy,
                    observed_at=self.now,
                )
            )
        return CompositeHookResponse(
            status=self._status(decision, reservations),
            children=self._children(decision),
            resync_after_seconds=self._resync(decision.next_change_at),
        )

    # ------------------------------------------------------------------ reservations

    def _active_reservations(self) -> list[Reservation]:
        """The reservation objects that still count toward the answer (not completed)."""
        return [
            observed.reservation
            for observed in self.observed
            if observed.reservation is not None
            and not observed.completed
            and observed.name not in self.finished
        ]

    def _idle_for_a_while(self, idle: int, busy: int) -> int:
        """The idle runners a lost completion may hold, once there have been some for a
        minute: a runner that registered moments before a queued job takes it is idle too,
        and an ephemeral fleet turning over always has a few such."""
        spare = self._idle_a_lost_completion_may_hold(idle, busy)
        if spare <= 0:
            return 0
        since = observed_time(self.previous.idle_beyond_min_since)
        if since is None or since > self.now:  # a record from the future starts anew
            since = self.now
        self.idle_since = since
        if (self.now - since).total_seconds() < IDLE_BEFORE_JOB_CHECKS:
            return 0
        return spare

    def _idle_a_lost_completion_may_hold(self, idle: int, busy: int) -> int:
        """The idle runners beyond `minReplicas` (as the active scheduled override sets it),
        and no more than the reservations beyond the busy runners (a reservation whose job
        runs is matched by a busy runner; idle runners beyond those reservations are kept by
        the scale-down delay or a metric, whatever the reservations); at most one when the
        target would be at `maxReplicas` even without that many reservations."""
        overrides = self.hra.spec.scheduled_overrides
        if len(overrides) > MAX_SCHEDULED_OVERRIDES:
            return 0  # an invalid spec (`desired_replicas` says so), never matched
        minimum = min_replicas_with(
            match_overrides(overrides, self.now), self.hra.spec.min_replicas
        )
        if idle <= minimum:
            return 0  # no runner beyond minReplicas sits idle: no count needed (a burst's case)
        maximum = self.hra.spec.max_replicas
        reserved = count_reservations(self._active_reservations(), maximum, self.now).reserved
        spare = min(idle - minimum, reserved - busy)
        if spare > 0 and maximum is not None and minimum + reserved - spare >= maximum:
            # At the maximum even without that many: in a burst the idle runners are
            # mostly ones queued jobs are about to take. One run per sync still, so that
            # reservations whose jobs are all over are settled in turn.
            return min(spare, 1)
        return spare

    def _check_jobs(self, spare_idle: int) -> None:
        """Ask GitHub whether the jobs of some reservations are over (`self.finished`) or not
        (`self.not_over`, recorded in `spec.jobCheckTime`).

        A lost `completed` delivery keeps its reservation counting: the target then holds a
        runner beyond `minReplicas` that sits idle. So GitHub is asked only while more runners
        sit idle than that explains (`spare_idle`), about at most that many runs per sync (and
        `FINISHED_JOB_CHECKS_PER_SYNC`). The reservations asked about are those due (five
        minutes old; after a "not over", once they have stood as long again, at most ten
        minutes later), never asked about first, then the longest unasked, oldest first: a
        long job still running does not stand in front of a short one that is over, and a job
        of half an hour costs four calls. The record
        lives in the reservation, so every hook replica spaces its calls by it. One listing
        per run answers every reservation of that run; an expired reservation is not asked
        about."""
        if spare_idle <= 0:
            return
        due = []
        for observed in self.observed:
            reservation = observed.reservation
            if (
                reservation is None
                or observed.completed
                or reservation.expires_at(self.now) <= self.now
            ):
                continue
            job = _job_of(observed)
            if job is None:
                continue
            (repository, run_id), job_id = job
            since = reservation.started_at or reservation.effective_time
            checked = observed.job_checked_at
            if checked is not None and checked > self.now:
                checked = None  # a record from the future (a hand's, a clock's): never asked
            if self.now < _next_job_check(since, checked):
                continue
            order = (checked is not None, checked or since, since, observed.name)
            due.append((order, observed.name, (repository, run_id), job_id))
        due.sort(key=lambda entry: entry[0])
        listed: dict[tuple[str, int], Sequence[WorkflowJob]] = {}
        for _, name, run, job_id in due:
            if run not in listed:
                if len(listed) >= min(spare_idle, FINISHED_JOB_CHECKS_PER_SYNC):
                    continue  # a run already listed may still answer a later reservation
                try:
                    listed[run] = self.github.list_workflow_jobs(*run)
                except GitHubError:
                    return  # asked again at the next sync; the reservations still count
            if any(j.id == job_id and j.status == COMPLETED for j in listed[run]):
                self.finished.add(name)
            else:
                self.not_over.add(name)

    def _children(self, decision: Decision) -> list[KubeObject]:
        if self.scale_set_mode:
            return []  # webhook reservations are not used: the assigned jobs count the jobs
        expired = set(decision.reservations.expired)
        started = set(decision.reservations.started)
        renewed = set(decision.reservations.renewed)
        children = []
        for observed in self.observed:
            if observed.completed and observed.expiration_time is not None:
                # Kept until it would have expired, so a late `queued` delivery finds it.
                if observed.expiration_time <= self.now:
                    continue
            elif observed.name in expired and observed.name not in self.finished:
                continue
            children.append(
                self._with_job_checks(
                    observed, started=observed.name in started, renewed=observed.name in renewed
                )
            )
        return children

    def _with_job_checks(
        self, observed: _ObservedReservation, *, started: bool = False, renewed: bool = False
    ) -> KubeObject:
        """The reservation as observed, with what GitHub said of its job in this sync (and
        its start): kept also when the HRA's answer stands, so the calls count."""
        kept: KubeObject = observed.kept
        updates = {}
        if observed.name in self.finished:
            updates["completionTime"] = format_time(self.now)
        if observed.name in self.not_over:
            updates["jobCheckTime"] = format_time(self.now)
        if started:
            updates["startTime"] = format_time(self.now)
        if renewed:
            updates["renewTime"] = format_time(self.now)
        if updates:  # a copy: the memo's stays as observed
            kept = {**kept, "spec": {**object_or_empty(kept.get("spec")), **updates}}
        return kept

    # ------------------------------------------------------------------ status

    def _replicas_in_effect(self, kind: str, target: KubeObject) -> int | None:
        """What PercentageRunnersBusy scales from: this HRA's answer when it has given one
        (ARC reads the target's spec.replicas, which ARC's HRA itself writes)."""
        if self.previous.desired_replicas is not None:
            return self.previous.desired_replicas
        replicas = (target.get("spec") or {}).get("replicas")
        return replicas if isinstance(replicas, int) else None

    def _status(self, decision: Decision, reservations: Sequence[Reservation]) -> dict[str, Any]:
        status = self.previous.model_copy(
            update={
                "desired_replicas": decision.desired_replicas,
                "last_successful_scale_out_time": (
                    format_time(decision.last_scale_out_time)
                    if decision.last_scale_out_time
                    else None
                ),
                "scheduled_overrides_summary": decision.scheduled_overrides_summary,
                "observed_generation": self.hra.metadata.generation or None,
                "cache_entries": (
                    [decision.suggestion.busy_step.cache_entry()]
                    if decision.suggestion.busy_step
                    else []
                ),
                "newest_reservation_time": self._newest_reservation_time(reservations, decision),
                "reserved_replicas": decision.reservations.reserved,
                "idle_beyond_min_since": (
                    format_time(self.idle_since) if self.idle_since is not None else None
                ),
                "assigned_jobs": self.assigned,
                "assigned_jobs_time": self.assigned_time,
                "conditions": merge_conditions(
                    self.previous.conditions,
                    {SCALING_ACTIVE: ("True", decision.reason, decision.message)},
                    self.now,
                ),
            }
        )
        return status.to_wire()

    def _newest_reservation_time(
        self, reservations: Sequence[Reservation], decision: Decision
    ) -> str | None:
        """When capacity was last reserved: the newest effective time, or the newest start of
        a reservation that waited beyond maxReplicas (ARC only looks at effective times, so
        a job that waited got no new ephemeral runner for up to 10 minutes, ARC #1180's
        recreation delay). Moves forward only: a completed job does not make it older."""
        times = [r.effective_time for r in reservations]
        times += [r.started_at for r in reservations if r.started_at is not None]
        if decision.reservations.started:
            times.append(self.now)
        recorded = observed_time(self.previous.newest_reservation_time)
        if recorded is not None:  # an unreadable record is dropped, not a failed sync
            times.append(recorded)
        return format_time(max(times)) if times else None

    def _resync(self, next_change_at: datetime | None) -> float:
        """At the next moment the answer can change, at least every sync period. A completed
        reservation's expiry is not such a moment: it no longer counts, so its removal waits
        for the next sync due anyway. After a burst, thousands of them expire a fraction of a
        second apart; a sync for each would send the HRA with every reservation each time."""
        waits = [self.deps.sync_period]
        if next_change_at is not None and next_change_at > self.now:
            waits.append(max(1.0, math.ceil((next_change_at - self.now).total_seconds())))
        return min(waits)

    def _unchanged(
        self, reason: str, message: str, *, retry_after: float | None = None
    ) -> CompositeHookResponse:
        """The HRA cannot be sized now: its answer and its reservations stay as they are."""
        conditions: dict[str, ConditionValue] = {SCALING_ACTIVE: ("False", reason, message)}
        update: dict[str, Any] = {
            "conditions": merge_conditions(self.previous.conditions, conditions, self.now)
        }
        if self.previous.observed_generation != (self.hra.metadata.generation or None):
            # The spec changed since the busy step was taken: Metacontroller stamps this
            # status with the new generation, which would vouch for the old step (found in
            # review).
            update["cache_entries"] = []
        status = self.previous.model_copy(update=update)
        return CompositeHookResponse(
            status=status.to_wire(),
            # What the job checks of this sync learnt stays (found by review: through a list
            # outage every sync asked GitHub about the same jobs again and settled nothing).
            children=[self._with_job_checks(observed) for observed in self.observed],
            resync_after_seconds=retry_after or self.deps.sync_period,
        )


@dataclass(frozen=True)
class _BusyListing:
    """A RunnerDeployment's Runners, to count busy in the scope's runner list itself."""

    scope: Scope
    names: frozenset[str]
    busy_in_status: frozenset[str]
    # When GitHub listed what each Runner's status reports (None: not known).
    reported_at: Mapping[str, datetime | None]


def _busy_listing(scope: RunnerScope, runners: Sequence[KubeObject], now: datetime) -> _BusyListing:
    names = frozenset(_name(runner) for runner in runners)
    busy = frozenset(_name(runner) for runner in runners if _status(runner).get("busy") is True)
    reported_at = {
        _name(runner): credible_report_time(
            observed_time(_status(runner).get("lastRegistrationCheckTime")), now
        )
        for runner in runners
    }
    github_scope = Scope(scope.enterprise, scope.organization, scope.repository)
    return _BusyListing(github_scope, names - {""}, busy - {""}, reported_at)


def _name(obj: KubeObject) -> str:
    name = object_or_empty(obj.get("metadata")).get("name")
    return name if isinstance(name, str) else ""


class _HookActivity:
    """The pull metrics' observations: busy runners from the related Runners' status, and for
    a RunnerDeployment also from the scope's runner list as it is now (cached, shared with the
    Runners' hooks); runs and jobs from GitHub (through the port's short-lived cache)."""

    def __init__(self, github: GitHubPort, busy: int, listing: _BusyListing | None) -> None:
        self.github = github
        self.busy = busy
        self.listing = listing
        self.counted_busy = busy  # as the Runners' status says, until a list is read

    def busy_runners(self) -> int:
        """A Runner mirrors a list it synced with, up to a few minutes old once its state has
        held a while (`hooks.lifecycle.incarnation.steady_watch_wait`); the list the HRA
        reads now is usually newer, and counts for each Runner it lists (ARC reads the list).
        A Runner it does not list (an ephemeral runner whose short job ended, gone before
        its Runner's next sync) counts as its status says, as does one whose status reports
        a list newer than this one (another replica's).

        A list GitHub refuses raises, and the HRA's answer stands (ARC's reconcile fails):
        the Runners' status alone counts every Runner made since their last list as idle, so
        an outage while all of them were busy had scaled the target down to its minimum
        (found by an independent run)."""
        self.counted_busy = self.busy
        listing = self.listing
        if listing is not None and listing.names:
            listed = RunnerListing.of(self.github.list_runners(listing.scope))
            self.counted_busy = sum(
                listed.busy_now(name, name in listing.busy_in_status, listing.reported_at.get(name))
                for name in listing.names
            )
        return self.counted_busy

    def workflow_runs(self, repository: str, status: str) -> Sequence[WorkflowRun]:
        return self.github.list_workflow_runs(repository, status)

    def workflow_jobs(self, repository: str, run_id: int) -> Sequence[WorkflowJob]:
        return self.github.list_workflow_jobs(repository, run_id)


@dataclass(frozen=True)
class _RunnerCounts:
    runners: int
    registered: int
    busy: int  # runners stopping while busy count too (ARC's terminating_busy)
    idle: int  # registered, not busy, not leaving


def _runner_counts(
    kind: str, target: KubeObject, runners: Sequence[KubeObject], hra: KubeObject
) -> _RunnerCounts:
    """A RunnerDeployment's Runners report what GitHub says of each (status.busy), read when
    PercentageRunnersBusy measures them; otherwise the target's status has the counts, as a
    RunnerSet's always does."""
    if kind == RUNNER_SET or not _measures_busy_runners(hra):
        status = _status(target)
        registered = _count(status.get("registeredReplicas"))
        busy = _count(status.get("busyReplicas"))
        return _RunnerCounts(
            runners=_count(status.get("replicas")),
            registered=registered,
            busy=busy,
            idle=max(registered - busy, 0),
        )
    idle = sum(
        1
        for runner in runners
        if _status(runner).get("runnerId")
        and _status(runner).get("busy") is not True
        and not (runner.get("metadata") or {}).get("deletionTimestamp")
    )
    return _RunnerCounts(
        runners=len(runners),
        registered=sum(1 for r in runners if _status(r).get("runnerId")),
        busy=sum(1 for runner in runners if _status(runner).get("busy") is True),
        idle=idle,
    )


def _in_scale_set_mode(target: KubeObject) -> bool:
    annotations = object_or_empty(object_or_empty(target.get("metadata")).get("annotations"))
    try:
        return declared_scale_set(annotations) is not None
    except ValueError:
        return False  # the deployment reports it; sized as without a scale set meanwhile


def _count(value: object) -> int:
    return value if isinstance(value, int) and 0 < value <= MAX_COUNT else 0


def _runner_config(kind: str, target: KubeObject) -> RunnerConfig:
    if kind == RUNNER_DEPLOYMENT:
        return RunnerDeployment.model_validate(target).spec.template.spec
    return RunnerConfig.model_validate(target.get("spec") or {})  # a RunnerSet: inline


def _is_object_name(name: str) -> bool:
    """Kubernetes' rule for the names of these objects: a DNS-1123 subdomain."""
    return len(name) <= 253 and DNS1123_SUBDOMAIN.fullmatch(name) is not None


def _same_namespace(obj: KubeObject, hra: HorizontalRunnerAutoscaler) -> bool:
    return bool((obj.get("metadata") or {}).get("namespace", "") == hra.metadata.namespace)


def _status(obj: KubeObject) -> dict[str, Any]:
    status = obj.get("status")
    return status if isinstance(status, dict) else {}


def routes(deps: HookDeps) -> list[HookRoute]:
    return [
        HookRoute(
            "/sync/horizontalrunnerautoscaler",
            HookKind.COMPOSITE,
            partial(sync_horizontal_runner_autoscaler, deps=deps),
            True,
        ),
        HookRoute(
            "/customize/horizontalrunnerautoscaler",
            HookKind.CUSTOMIZE,
            customize_horizontal_runner_autoscaler,
        ),
    ]
