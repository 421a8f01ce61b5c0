"""What one webhook delivery changes: ARC's webhook rules, as a pure function of the event.

A `queued` job reserves one runner of the HRA that would serve it; its `completed` event
removes that reservation. A reservation is an object named after the job id, so a redelivered
`queued` event names the same object (creating it twice is a no-op) and `completed` removes
exactly the job's own reservation, never another job's.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime

from hooks.webhook.events import PingEvent, WebhookEvent, WorkflowJobEvent
from hooks.webhook.targets import (
    RunnerGroup,
    RunnerGroupVisibility,
    ScaleTarget,
    in_precedence_order,
)

PONG = "pong"
NO_TARGET_MESSAGE = "no horizontalrunnerautoscaler to scale for this github event"
RESERVATION_PREFIX = "job-"
USER_OWNER_TYPE = "User"


class Action(enum.Enum):
    NONE = "none"
    CREATE_RESERVATION = "create-reservation"
    DELETE_RESERVATION = "delete-reservation"
    MARK_JOB_STARTED = "mark-job-started"


@dataclass(frozen=True)
class Decision:
    """The outcome of one delivery; `message` is the response body ARC would send.

    For a reservation change, `target` is the HRA (the reservation's namespace and controller
    owner) and `reservation_name` the object; a new reservation lasts from `effective_time`
    to `expiration_time`. `notes` say why HRAs that were considered did not match.
    """

    action: Action
    message: str
    target: ScaleTarget | None = None
    reservation_name: str | None = None
    effective_time: datetime | None = None
    expiration_time: datetime | None = None
    notes: tuple[str, ...] = field(default=())
    # `in_progress`: every namespace whose HRAs could have reserved for the job.
    namespaces: tuple[str, ...] = ()

    @property
    def amount(self) -> int:
        """The change in reserved runners, as ARC reports it ("scaled <hra> by <amount>")."""
        return {Action.CREATE_RESERVATION: 1, Action.DELETE_RESERVATION: -1}.get(self.action, 0)


@dataclass(frozen=True)
class Lookup:
    """The HRA a job would scale (None when there is none), and why others were passed over."""

    target: ScaleTarget | None
    notes: tuple[str, ...] = ()


def reservation_name(job_id: int) -> str:
    """The capacity reservation object of a job: a valid DNS-1123 name, one per job."""
    return f"{RESERVATION_PREFIX}{job_id}"


def may_scale(event: WebhookEvent) -> bool:
    """Whether `decide` can answer anything but "nothing" for this event, whatever the HRAs:
    the others are answered without reading them."""
    return isinstance(event, WorkflowJobEvent) and event.action in (
        "queued",
        "completed",
        "in_progress",
    )


def decide(
    event: WebhookEvent,
    targets: Sequence[ScaleTarget],
    *,
    now: datetime,
    runner_group_visibility: RunnerGroupVisibility | None = None,
    common_labels: Sequence[str] = (),
) -> Decision:
    """What a delivery changes, under ARC's rules.

    `common_labels` (COMMON_RUNNER_LABELS), which every target's runners carry too, are
    looked at only when no target takes the job without them: a job asking for one of them
    is then served (ARC's webhook server is not given them), and one that some target's own
    labels fit goes where ARC would send it, not to the first target of all.

    - `ping`: nothing; the answer is "pong".
    - `workflow_job` `queued`: reserve one runner of the matching HRA.
    - `workflow_job` `completed`: remove the job's reservation, except for skipped jobs and
      check-run completions (success without a runner: ARC #2118, #2119, #2520), which never
      had one; cancelled jobs do remove theirs.
    - `workflow_job` `in_progress`: nothing to ARC; here the job's reservation, if there is
      one, is marked as having its runner (`hooks.autoscaler.reservations`), in every
      namespace whose HRAs fit the job's labels (no runner-group call).
    - other actions (`waiting`): nothing.

    For `queued` and `completed` the HRA is looked up first, as ARC does, so a job no HRA
    serves always gets ARC's answer (`NO_TARGET_MESSAGE`), ignored completions included.

    `runner_group_visibility` is only called for organization repositories whose job no
    repository HRA takes, and only when some HRA uses the organization's or enterprise's
    runners; errors it raises propagate (ARC answers 500).
    """
    if isinstance(event, PingEvent):
        return Decision(Action.NONE, PONG)
    if not common_labels or not may_scale(event):
        return _decide(event, targets, now=now, runner_group_visibility=runner_group_visibility)
    with_common = [target.with_labels(common_labels) for target in targets]
    if event.action == "in_progress":
        # Marked wherever `queued` may have reserved, through the common labels too (found in
        # review: the reservation made through them was never marked).
        return _decide(event, with_common, now=now, runner_group_visibility=None)
    decision = _decide(event, targets, now=now, runner_group_visibility=runner_group_visibility)
    if decision.target is not None:
        return decision
    # Its notes say why with the labels the runners do carry (found in review: "lacks the
    # job's labels x" for a job only a hidden runner group's runners, which carry x, fit).
    return _decide(event, with_common, now=now, runner_group_visibility=runner_group_visibility)


def _decide(
    event: WorkflowJobEvent,
    targets: Sequence[ScaleTarget],
    *,
    now: datetime,
    runner_group_visibility: RunnerGroupVisibility | None,
) -> Decision:
    ignored = f"ignored workflow_job action {event.action!r}: it does not scale"
    if not may_scale(event):
        return Decision(Action.NONE, ignored)
    if event.action == "in_progress":
        started = find_scale_target(event, targets).target
        if started is None:
            return Decision(Action.NONE, ignored)
        # Runner groups are not asked about (GitHub would be called at every job): the job's
        # reservation is looked for wherever an HRA fits its labels, a name being one job's
        # (found in review: the first fit, in a group the repository cannot use, was another
        # namespace than the one `queued` reserved in).
        fitting = {t.namespace for t in targets if t.unfit_reason(event.labels) is None}
        return Decision(
            Action.MARK_JOB_STARTED,
            ignored,
            target=started,
            reservation_name=reservation_name(event.job_id),
            namespaces=tuple(sorted(fitting)),
        )

    lookup = find_scale_target(event, targets, runner_group_visibility=runner_group_visibility)
    target = lookup.target
    if target is None:
        return Decision(Action.NONE, NO_TARGET_MESSAGE, notes=lookup.notes)
    name = reservation_name(event.job_id)
    if event.action == "completed":
        if event.conclusion == "skipped":
            return Decision(Action.NONE, "ignored the completion of a skipped job")
        if event.conclusion == "success" and event.runner_id is None:
            return Decision(Action.NONE, "ignored a check run's completion: it had no runner")
        return Decision(
            Action.DELETE_RESERVATION,
            f"scaled {target.name} by -1",
            target=target,
            reservation_name=name,
            notes=lookup.notes,
        )
    duration, duration_note = target.reservation_duration()
    notes = (*lookup.notes, duration_note) if duration_note else lookup.notes
    return Decision(
        Action.CREATE_RESERVATION,
        f"scaled {target.name} by 1",
        target=target,
        reservation_name=name,
        effective_time=now,
        expiration_time=now + duration,
        notes=notes,
    )


def find_scale_target(
    event: WorkflowJobEvent,
    targets: Sequence[ScaleTarget],
    *,
    runner_group_visibility: RunnerGroupVisibility | None = None,
) -> Lookup:
    """The HRA that scales for a job, looked up in ARC's order.

    1. HRAs of repository runners for the job's repository.
    2. Nothing more for a repository owned by a user: only organizations have shared runners.
    3. The runner groups some HRA uses in the repository's organization or its enterprise,
       kept to those visible to the repository when `runner_group_visibility` is given
       (otherwise every group counts as visible, as in ARC without GitHub credentials), then
       tried default groups first, organization before enterprise.

    Under each key the first fit wins, by namespace and name. A fit is an HRA that is not
    being deleted, has exactly one scale-up trigger, a `workflowJob` one, and whose runners
    carry every job label but `self-hosted`. A job without labels (`runs-on` naming only a
    runner group) fits any, as in ARC's webhook (getJobScaleTarget): the first HRA under the
    repository's key, else under the first visible runner group's in the order above.
    """
    notes: list[str] = [] if event.labels else ["the job has no labels: any runner fits"]
    ordered = sorted(targets, key=lambda target: (target.namespace, target.name))
    keyed = [(target.runners.keys(), target) for target in ordered]

    def first_fit(key: str) -> ScaleTarget | None:
        wanted = key.casefold()
        for keys, target in keyed:
            if wanted not in keys:
                continue
            reason = target.unfit_reason(event.labels)
            if reason is None:
                return target
            notes.append(f"{target.reference}: {reason}")
        return None

    found = first_fit(event.repository_key)
    if found is not None:
        return Lookup(found, tuple(notes))
    if event.owner_type == USER_OWNER_TYPE:
        notes.append(f"{event.owner_login} is a user: only repository runners serve its jobs")
        return Lookup(None, tuple(notes))

    # Only groups a target could be chosen under are worth a call (found by a failure
    # scenario: an organization webhook kept for the job metrics, with HRAs scaling by pull
    # metrics only, asked GitHub for the groups at every delivery, 93% of the token's budget).
    groups = in_precedence_order(_managed_groups(event, ordered))
    fitting = [target for target in ordered if target.unfit_reason(event.labels) is None]
    if groups and runner_group_visibility is not None and _managed_groups(event, fitting):
        visible = {
            group.identity()
            for group in runner_group_visibility(event.owner_login, event.repository_name)
        }
        hidden = [group for group in groups if group.identity() not in visible]
        if hidden:
            notes.append(
                f"runner groups not visible to {event.repository_key}: "
                + ", ".join(_describe_group(group) for group in hidden)
            )
        groups = [group for group in groups if group.identity() in visible]
    for group in groups:
        key = group.key(event.owner_login, event.enterprise)
        if key is None:
            continue
        found = first_fit(key)
        if found is not None:
            return Lookup(found, tuple(notes))
    return Lookup(None, tuple(notes))


def _managed_groups(event: WorkflowJobEvent, targets: Sequence[ScaleTarget]) -> list[RunnerGroup]:
    """The runner groups HRAs use in the event's organization or enterprise: the only ones
    worth asking GitHub about."""
    owner = event.owner_login.casefold()
    enterprise = (event.enterprise or "").casefold()
    groups = []
    for target in targets:
        runners = target.runners
        group = runners.runner_group()
        if group is None:
            continue
        if runners.organization.casefold() == owner or (
            enterprise and runners.enterprise.casefold() == enterprise
        ):
            groups.append(group)
    return groups


def _describe_group(group: RunnerGroup) -> str:
    scope = group.scope.name.lower()
    return f"{scope} {group.name!r}" if group.name else f"{scope} default group"
