"""The webhook receiver: one delivery in, at most one capacity reservation written, one answer.

`WebhookReceiver.handle` runs the pure steps of this package in order (signature, event,
decision) and carries the decision out through the `KubePort`:

- `queued`: create the job's reservation. A redelivery finds it there (AlreadyExists) and
  changes nothing; a delivery so late that the reservation would already have expired is
  ignored.
- `completed`: mark the job's reservation completed, so it stops counting at once and stays
  until its expiry as a tombstone: a `queued` delivery that arrives after it (duplicated, or
  out of order) then finds it and changes nothing. A completion with no reservation leaves a
  tombstone for the same reason.

Every answer says what happened. GitHub records any non-2xx answer as a failed delivery and
never retries, so a 5xx is kept for what really failed (the API server refused a write).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from pydantic import ValidationError

from hooks.children import describe_validation_error, label_value
from hooks.clock import Clock, format_time
from hooks.github.port import GitHubError
from hooks.kube.port import (
    CAPACITY_RESERVATIONS,
    HORIZONTAL_RUNNER_AUTOSCALERS,
    RUNNER_DEPLOYMENTS,
    RUNNER_SETS,
    AlreadyExists,
    KubeError,
    KubeObject,
    KubePort,
    NotFound,
)
from hooks.metacontroller import observed_time
from hooks.naming import CONTROLLER_UID_LABEL
from hooks.resources.reservation import API_VERSION as RESERVATION_API_VERSION
from hooks.resources.reservation import AUTOSCALER_LABEL
from hooks.resources.reservation import KIND as RESERVATION_KIND
from hooks.resources.runner import API_VERSION as ARC_API_VERSION
from hooks.scale_set_mode import declared_scale_set
from hooks.webhook.decision import Action, Decision, decide, may_scale
from hooks.webhook.events import (
    PingEvent,
    UnsupportedEventError,
    WebhookError,
    WebhookEvent,
    WorkflowJobEvent,
    parse_event,
    payload_from_body,
    unsupported_event,
)
from hooks.webhook.signature import verify_signature
from hooks.webhook.targets import RUNNER_DEPLOYMENT, RunnerGroupVisibility, ScaleTarget

log = logging.getLogger("arc_hooks.webhook")

RECENT_DELIVERIES = 10_000
NOTES_SHOWN = 10
"""An answer says why the first this many HRAs considered did not match, and how many more."""

# Outcomes (the `outcome` label of the deliveries metric).
SCALED = "scaled"  # a reservation was created or completed
UNCHANGED = "unchanged"  # the change was already made (a redelivery)
IGNORED = "ignored"  # nothing to do, and the answer says why
REJECTED = "rejected"  # not a delivery we accept (signature, payload)
FAILED = "failed"  # the API server did not take the change

BlockingCall = Callable[[Callable[[], Decision]], Awaitable[Decision]]

JobStatusLookup = Callable[[str, int, int], Awaitable[str | None]]
"""GitHub's status of a job (repository, run id, job id): `queued`, `in_progress`,
`completed`, ...; None when the run does not list it."""

NOT_STARTED = frozenset({"queued", "waiting", "requested", "pending"})
"""Statuses of a job that still needs a runner."""


@dataclass(frozen=True)
class Reply:
    status: int
    message: str
    event: str = ""  # X-GitHub-Event
    action: str = ""  # the workflow_job action
    outcome: str = IGNORED
    autoscaler: str = ""  # namespace/name of the HRA it scaled
    job: WorkflowJobEvent | None = None
    redelivered: bool = False  # this replica already answered this delivery id
    # The delivery passed the signature check (or unsigned ones are allowed): only then are its
    # event and action names, which the sender chooses, used as metric labels.
    trusted: bool = False


async def _inline(call: Callable[[], Decision]) -> Decision:
    return call()


class WebhookReceiver:
    def __init__(
        self,
        kube: KubePort,
        clock: Clock,
        *,
        secret: bytes | None,
        allow_unsigned: bool = False,
        namespace: str | None = None,
        targets_ttl: float = 5.0,
        runner_group_visibility: RunnerGroupVisibility | None = None,
        run_blocking: BlockingCall | None = None,
        job_status: JobStatusLookup | None = None,
        common_labels: Sequence[str] = (),
    ) -> None:
        self.kube = kube
        self.job_status = job_status
        self.clock = clock
        self.secret = secret
        self.allow_unsigned = allow_unsigned
        self.runner_group_visibility = runner_group_visibility
        self.run_blocking = run_blocking or _inline
        self.common_labels = tuple(common_labels)
        self.targets = TargetCache(kube, clock, namespace=namespace, ttl=targets_ttl)
        self._recent: OrderedDict[str, None] = OrderedDict()

    def answer_unread(self, headers: Mapping[str, str]) -> Reply | None:
        """The answer a delivery gets from its headers alone, or None when its body is needed.
        The receiver is public: an upload without a signature, or of an event not handled,
        is answered before it is read, so that it never sits in memory."""
        header = {name.lower(): value for name, value in headers.items()}
        event_name = header.get("x-github-event", "")
        if self.secret is None and not self.allow_unsigned:
            return Reply(
                503,
                "no webhook secret configured: set GITHUB_WEBHOOK_SECRET_TOKEN "
                "(or WEBHOOK_ALLOW_UNSIGNED=true to accept unsigned deliveries)",
                event_name,
                outcome=FAILED,
            )
        signed = header.get("x-hub-signature-256") or header.get("x-hub-signature")
        if self.secret is not None and not signed:
            return Reply(401, "signature mismatch or missing", event_name, outcome=REJECTED)
        unsupported = unsupported_event(event_name)
        if unsupported is not None:  # GitHub's other events, when a hook sends them all
            return Reply(202, f"ignored: {unsupported}", event_name, outcome=IGNORED)
        return None

    async def handle(self, headers: Mapping[str, str], body: bytes) -> Reply:
        unread = self.answer_unread(headers)
        if unread is not None:
            return unread
        header = {name.lower(): value for name, value in headers.items()}
        event_name = header.get("x-github-event", "")
        if self.secret is not None and not verify_signature(
            self.secret,
            body,
            header.get("x-hub-signature-256"),
            header.get("x-hub-signature"),
        ):
            return Reply(401, "signature mismatch or missing", event_name, outcome=REJECTED)
        try:
            event = parse_event(event_name, payload_from_body(header.get("content-type"), body))
        except UnsupportedEventError as error:
            return Reply(202, f"ignored: {error}", event_name, outcome=IGNORED, trusted=True)
        except WebhookError as error:
            return Reply(400, str(error), event_name, outcome=REJECTED, trusted=True)
        redelivered = self._seen(header.get("x-github-delivery", ""))
        reply = await self._act(event)
        return Reply(
            reply.status,
            reply.message,
            event_name,
            action=event.action if isinstance(event, WorkflowJobEvent) else "",
            outcome=reply.outcome,
            autoscaler=reply.autoscaler,
            job=event if isinstance(event, WorkflowJobEvent) else None,
            redelivered=redelivered,
            trusted=True,
        )

    async def _act(self, event: WebhookEvent) -> Reply:
        if isinstance(event, PingEvent):
            return Reply(200, "pong", outcome=IGNORED)
        now = self.clock.now()
        if not may_scale(event):  # in_progress, waiting: answered with the API server away too
            return Reply(200, decide(event, (), now=now).message, outcome=IGNORED)
        try:
            targets = await self.targets.get()
        except KubeError as error:
            if event.action == "in_progress":  # a hint only: answered as before
                return Reply(200, decide(event, (), now=now).message, outcome=IGNORED)
            return Reply(503, f"cannot list HorizontalRunnerAutoscalers: {error}", outcome=FAILED)
        visibility = self.runner_group_visibility
        try:
            decision = await self.run_blocking(
                lambda: decide(
                    event,
                    targets,
                    now=now,
                    runner_group_visibility=visibility,
                    common_labels=self.common_labels,
                )
            )
        except GitHubError as error:
            # As ARC without credentials: every group counts as visible. Scaling for a group
            # beats not scaling at all; the resync and reservation expiry correct a wrong pick.
            log.warning(
                "runner group lookup failed; treating every group as visible",
                extra={"detail": str(error)},
            )
            decision = decide(event, targets, now=now, common_labels=self.common_labels)
        notes = "; ".join(decision.notes[:NOTES_SHOWN])
        if len(decision.notes) > NOTES_SHOWN:
            notes += f"; and {len(decision.notes) - NOTES_SHOWN} more"
        if decision.action is Action.NONE or decision.target is None:
            message = f"{decision.message} ({notes})" if notes else decision.message
            return Reply(200, message, outcome=IGNORED)
        assert isinstance(event, WorkflowJobEvent)  # only jobs change reservations
        if decision.action is Action.MARK_JOB_STARTED:
            return await self._mark_job_started(decision, now)
        try:
            if decision.action is Action.CREATE_RESERVATION:
                return await self._reserve(event, decision, now)
            return await self._complete(event, decision, now)
        except KubeError as error:
            return Reply(
                503,
                f"{decision.target.reference}: reservation {decision.reservation_name} "
                f"not written: {error}",
                outcome=FAILED,
                autoscaler=decision.target.reference,
            )

    async def _mark_job_started(self, decision: Decision, now: datetime) -> Reply:
        """Record on the job's reservation that a runner took its job: until then its lifetime
        is renewed, however it ends (`hooks.autoscaler.reservations`). Only a hint: without a
        reservation, or without the API server, the delivery is answered as before."""
        target, name = _target_of(decision)
        for namespace in decision.namespaces or (target.namespace,):
            try:
                await self.kube.merge_patch(
                    CAPACITY_RESERVATIONS,
                    namespace,
                    name,
                    {"spec": {"jobStartTime": format_time(now)}},
                )
            except NotFound:
                continue  # no reservation of the job here
            except KubeError as error:
                log.warning(
                    "reservation not marked as started",
                    extra={"reservation": f"{namespace}/{name}", "detail": str(error)},
                )
        return Reply(200, decision.message, outcome=IGNORED, autoscaler=target.reference)

    async def _reserve(self, event: WorkflowJobEvent, decision: Decision, now: datetime) -> Reply:
        target, name = _target_of(decision)
        assert decision.effective_time is not None and decision.expiration_time is not None
        # However long ago the job was queued, as ARC: a `queued` delivery sent again by hand
        # after the webhook was down is how a job that never got a runner gets one (found by
        # conformance tests; it had been ignored once its reservation would have expired).
        # A job over meanwhile is kept out by its tombstone, by GitHub's word on a late
        # delivery, or else settled by the HRA's job checks.
        lifetime = decision.expiration_time - decision.effective_time
        if event.created_at is not None and event.created_at + lifetime <= now:
            status = await self._status_on_github(event)
            if status is not None and status not in NOT_STARTED:
                return Reply(
                    200,
                    f"ignored: job {event.job_id} was queued at "
                    f"{format_time(event.created_at)}, longer ago than a reservation lasts, "
                    f"and GitHub says it is {status}",
                    outcome=IGNORED,
                    autoscaler=target.reference,
                )
        reservation = reservation_object(
            target, name, event, decision.effective_time, decision.expiration_time
        )
        try:
            await self.kube.create(CAPACITY_RESERVATIONS, reservation)
        except AlreadyExists:
            return Reply(
                200,
                f"{target.reference}: reservation {name} already exists, nothing changed",
                outcome=UNCHANGED,
                autoscaler=target.reference,
            )
        return Reply(200, decision.message, outcome=SCALED, autoscaler=target.reference)

    async def _status_on_github(self, event: WorkflowJobEvent) -> str | None:
        """Asked only of a late delivery (one sent again by hand, typically), whose job may be
        over: each such would otherwise hold a runner until the HRA's job checks settle it
        (found in review: 60 of them kept a target at its maximum for 41 minutes). Unknown
        (no credentials, no run id, GitHub failing) reserves, as ARC does."""
        if self.job_status is None or event.run_id is None:
            return None
        try:
            return await self.job_status(event.repository, event.run_id, event.job_id)
        except GitHubError as error:
            log.warning("job status lookup failed; reserving", extra={"detail": str(error)})
            return None

    async def _complete(self, event: WorkflowJobEvent, decision: Decision, now: datetime) -> Reply:
        target, name = _target_of(decision)
        lifetime, _ = target.reservation_duration()
        for _ in range(2):  # a create racing with ours is read again once
            try:
                current = await self.kube.get(CAPACITY_RESERVATIONS, target.namespace, name)
            except NotFound:
                return await self._tombstone(event, decision, now)
            spec = current.get("spec") or {}
            if spec.get("completionTime"):
                return Reply(
                    200,
                    f"{target.reference}: reservation {name} already completed, nothing changed",
                    outcome=UNCHANGED,
                    autoscaler=target.reference,
                )
            # Kept, completed, a lifetime from now, as a tombstone is: a `queued` delivery that
            # late (a duplicate, one sent again) would otherwise reserve anew once the HRA
            # deleted it at its first expiry (found in review: a reservation that had waited
            # beyond maxReplicas was past it already).
            expires = observed_time(spec.get("expirationTime"))
            keep_until = max(expires, now + lifetime) if expires is not None else now + lifetime
            completed = {
                "spec": {
                    "completionTime": format_time(now),
                    "expirationTime": format_time(keep_until),
                }
            }
            try:
                await self.kube.merge_patch(
                    CAPACITY_RESERVATIONS, target.namespace, name, completed
                )
            except NotFound:
                continue  # expired and deleted meanwhile: nothing counts it any more
            return Reply(200, decision.message, outcome=SCALED, autoscaler=target.reference)
        return Reply(
            200,
            f"{target.reference}: reservation {name} is gone",
            outcome=UNCHANGED,
            autoscaler=target.reference,
        )

    async def _tombstone(self, event: WorkflowJobEvent, decision: Decision, now: datetime) -> Reply:
        """A completion before (or without) its `queued` delivery: record it, so a late
        `queued` delivery does not reserve a runner for a job that is over."""
        target, name = _target_of(decision)
        lifetime, _ = target.reservation_duration()
        queued_at = min(event.created_at or now, now)
        # Kept a reservation's lifetime from now: a `queued` delivery that late would reserve.
        tombstone = reservation_object(target, name, event, queued_at, now + lifetime)
        tombstone["spec"]["completionTime"] = format_time(now)
        # AlreadyExists: its `queued` delivery won the race; a redelivery will complete it.
        with contextlib.suppress(AlreadyExists):
            await self.kube.create(CAPACITY_RESERVATIONS, tombstone)
        return Reply(
            200,
            f"{target.reference}: job {event.job_id} completed before its queued event; recorded",
            outcome=UNCHANGED,
            autoscaler=target.reference,
        )

    def _seen(self, delivery: str) -> bool:
        """Whether this replica answered this delivery id before (for the metrics only:
        reservations are deduplicated by name)."""
        if not delivery:
            return False
        if delivery in self._recent:
            return True
        self._recent[delivery] = None
        if len(self._recent) > RECENT_DELIVERIES:
            self._recent.popitem(last=False)
        return False


def _target_of(decision: Decision) -> tuple[ScaleTarget, str]:
    assert decision.target is not None and decision.reservation_name is not None
    return decision.target, decision.reservation_name


def reservation_object(
    target: ScaleTarget,
    name: str,
    event: WorkflowJobEvent,
    effective: datetime,
    expiration: datetime,
) -> KubeObject:
    """The CapacityReservation of a job, controlled by the HRA it counts for (with the label
    Metacontroller's generated selector claims it by)."""
    job: dict[str, Any] = {"id": event.job_id, "repository": event.repository}
    if event.run_id is not None:
        job["runID"] = event.run_id
    if event.job_name:
        job["name"] = event.job_name
    if event.labels:
        job["labels"] = list(event.labels)
    return {
        "apiVersion": RESERVATION_API_VERSION,
        "kind": RESERVATION_KIND,
        "metadata": {
            "name": name,
            "namespace": target.namespace,
            "labels": {
                CONTROLLER_UID_LABEL: target.uid,
                AUTOSCALER_LABEL: label_value(target.name),
            },
            "ownerReferences": [
                {
                    "apiVersion": ARC_API_VERSION,
                    "kind": "HorizontalRunnerAutoscaler",
                    "name": target.name,
                    "uid": target.uid,
                    "controller": True,
                }
            ],
        },
        "spec": {
            "effectiveTime": format_time(effective),
            "expirationTime": format_time(expiration),
            "replicas": 1,
            "job": job,
        },
    }


class TargetCache:
    """The HRAs joined with their scale targets, listed again at most every `ttl` seconds.

    Three LIST calls per refresh, shared by every delivery in between (single flight).
    """

    def __init__(self, kube: KubePort, clock: Clock, *, namespace: str | None, ttl: float) -> None:
        self.kube = kube
        self.clock = clock
        self.namespace = namespace or None
        self.ttl = timedelta(seconds=ttl)
        self._targets: list[ScaleTarget] = []
        self._expires: datetime | None = None
        self._lock = asyncio.Lock()

    async def get(self) -> list[ScaleTarget]:
        if self._fresh():
            return self._targets
        async with self._lock:
            if not self._fresh():
                self._targets = await self._load()
                self._expires = self.clock.now() + self.ttl
        return self._targets

    def invalidate(self) -> None:
        self._expires = None

    def _fresh(self) -> bool:
        return self._expires is not None and self.clock.now() < self._expires

    async def _load(self) -> list[ScaleTarget]:
        autoscalers = await self.kube.list(HORIZONTAL_RUNNER_AUTOSCALERS, self.namespace)
        if not autoscalers:
            return []
        deployments = await self.kube.list(RUNNER_DEPLOYMENTS, self.namespace)
        try:
            runner_sets = await self.kube.list(RUNNER_SETS, self.namespace)
        except NotFound:
            runner_sets = []  # the RunnerSet CRD is not installed
        return join_targets(autoscalers, [*deployments, *runner_sets])


def join_targets(
    autoscalers: Sequence[KubeObject], scale_targets: Sequence[KubeObject]
) -> list[ScaleTarget]:
    """Each HRA with the object its `scaleTargetRef` names; HRAs without one are skipped."""
    by_key = {
        (
            obj.get("kind"),
            (obj.get("metadata") or {}).get("namespace"),
            (obj.get("metadata") or {}).get("name"),
        ): obj
        for obj in scale_targets
    }
    joined = []
    for hra in autoscalers:
        metadata = hra.get("metadata") or {}
        ref = (hra.get("spec") or {}).get("scaleTargetRef") or {}
        key = (ref.get("kind") or RUNNER_DEPLOYMENT, metadata.get("namespace"), ref.get("name"))
        target = by_key.get(key)
        if target is None or _in_scale_set_mode(target):
            # A scale set's listener counts its jobs: a reservation would be removed unused,
            # and finding the target could cost a runner-group lookup per delivery.
            continue
        try:
            joined.append(ScaleTarget.from_objects(hra, target))
        except ValueError as error:  # pydantic's ValidationError included
            # Where and what, never the value: pydantic's own text abbreviates a long value
            # (a token pasted into the wrong field) past what the log's mask recognizes.
            detail = (
                describe_validation_error(error, "target")
                if isinstance(error, ValidationError)
                else str(error)
            )
            log.warning(
                "skipping an autoscaler the webhook cannot use",
                extra={
                    "autoscaler": f"{metadata.get('namespace')}/{metadata.get('name')}",
                    "detail": detail[:300],
                },
            )
    return joined


def _in_scale_set_mode(target: KubeObject) -> bool:
    annotations = (target.get("metadata") or {}).get("annotations")
    try:
        return isinstance(annotations, dict) and declared_scale_set(annotations) is not None
    except ValueError:
        return False  # the target reports it, and is sized as without a scale set meanwhile
