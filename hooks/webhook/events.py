"""GitHub webhook deliveries as typed events: `ping` and `workflow_job`, the two ARC handles.

Only the fields the scaling rules (and the logs) need are kept; the rest of GitHub's payload is
ignored, so new fields never break parsing. Missing or mistyped fields that are needed raise a
`MalformedPayloadError` that names them.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import TypeVar
from urllib.parse import parse_qs

from pydantic import BaseModel, ConfigDict, ValidationError

from hooks.metacontroller import observed_time

PING = "ping"
WORKFLOW_JOB = "workflow_job"
SUPPORTED_EVENTS = (PING, WORKFLOW_JOB)


class WebhookError(ValueError):
    """A delivery this receiver cannot act on. ARC answers every such delivery with a 500."""


class MalformedPayloadError(WebhookError):
    """The body is not a payload of the event it claims to be."""


class UnsupportedEventError(WebhookError):
    """An event other than `ping` and `workflow_job` (the `X-GitHub-Event` header)."""


@dataclass(frozen=True)
class PingEvent:
    """Sent when a webhook is created: the answer is "pong"."""

    zen: str | None = None
    hook_id: int | None = None


@dataclass(frozen=True)
class WorkflowJobEvent:
    """A job changed state: `queued`, `waiting`, `in_progress` or `completed`."""

    action: str
    job_id: int
    run_id: int | None
    labels: tuple[str, ...]
    conclusion: str | None  # null until the job completes
    runner_id: int | None  # null while queued, and for check-run completions
    repository_name: str
    owner_login: str
    owner_type: str  # "Organization" or "User" (or "Bot")
    repository: str  # the full name, "owner/name"
    organization: str | None = None
    enterprise: str | None = None  # the enterprise's slug
    installation_id: int | None = None  # set when a GitHub App's hook delivered it
    job_name: str | None = None
    status: str | None = None
    created_at: datetime | None = None  # when the job was queued
    started_at: datetime | None = None  # when a runner took it (GitHub: the queue time until then)
    completed_at: datetime | None = None
    # Read for the job metrics only: taken when well-typed, left empty otherwise, so they never
    # fail a delivery.
    workflow_name: str | None = None
    head_branch: str | None = None
    step_conclusions: tuple[str | None, ...] = ()  # each step's conclusion, in the payload's order

    @property
    def repository_key(self) -> str:
        """`owner/name` as ARC builds it, from the owner's login and the repository's name."""
        return f"{self.owner_login}/{self.repository_name}"


WebhookEvent = PingEvent | WorkflowJobEvent


def parse_event(event_name: str, body: bytes) -> WebhookEvent:
    """The event of a delivery, from its `X-GitHub-Event` header and its JSON payload.

    Raises `UnsupportedEventError` for other events and `MalformedPayloadError` when the body is
    not JSON or lacks a field the event needs.
    """
    if event_name == PING:
        ping = _validate(_PingPayload, event_name, body)
        return PingEvent(zen=ping.zen, hook_id=ping.hook_id)
    if event_name == WORKFLOW_JOB:
        return _workflow_job_event(_validate(_WorkflowJobPayload, event_name, body))
    raise UnsupportedEventError(unsupported_event(event_name) or "unsupported event")


def unsupported_event(event_name: str) -> str | None:
    """Why a delivery of this `X-GitHub-Event` is not handled; None for one that is."""
    if event_name in SUPPORTED_EVENTS:
        return None
    if not event_name:
        return "no event name: the X-GitHub-Event header is missing"
    return f"unsupported event {event_name!r}: only {' and '.join(SUPPORTED_EVENTS)} are handled"


def payload_from_body(content_type: str | None, body: bytes) -> bytes:
    """The JSON payload of a delivery, whichever content type the webhook is configured with.

    GitHub posts `application/json` as-is, and `application/x-www-form-urlencoded` with the
    JSON in a `payload` field; go-github accepts both. Verify the signature over the raw body,
    not over what this returns.
    """
    media_type = (content_type or "").partition(";")[0].strip().lower()
    if media_type == "application/json":
        return body
    if media_type == "application/x-www-form-urlencoded":
        try:
            form = body.decode("ascii")
        except UnicodeDecodeError as error:
            raise MalformedPayloadError("form-encoded delivery with non-ASCII bytes") from error
        # surrogateescape hands the percent-decoded bytes back exactly, valid UTF-8 or not.
        values = parse_qs(form, keep_blank_values=True, errors="surrogateescape").get("payload")
        if not values:
            raise MalformedPayloadError("form-encoded delivery without a payload field")
        return values[0].encode("utf-8", errors="surrogateescape")
    raise MalformedPayloadError(
        f"unsupported Content-Type {content_type!r}: "
        "expected application/json or application/x-www-form-urlencoded"
    )


# What is read from GitHub's payloads. Strict: a string where a number belongs is malformed,
# not coerced.


class _Payload(BaseModel):
    model_config = ConfigDict(extra="ignore", strict=True, frozen=True)


_PayloadT = TypeVar("_PayloadT", bound=_Payload)


class _PingPayload(_Payload):
    zen: str | None = None
    hook_id: int | None = None


class _Owner(_Payload):
    login: str
    type: str


class _Repository(_Payload):
    name: str
    full_name: str | None = None
    owner: _Owner


class _Organization(_Payload):
    login: str


class _Enterprise(_Payload):
    slug: str | None = None


class _Installation(_Payload):
    id: int


class _WorkflowJob(_Payload):
    id: int
    run_id: int | None = None
    name: str | None = None
    status: str | None = None
    labels: list[str]
    conclusion: str | None = None
    runner_id: int | None = None
    created_at: str | None = None
    started_at: str | None = None
    completed_at: str | None = None
    workflow_name: object = None
    head_branch: object = None
    steps: object = None


class _WorkflowJobPayload(_Payload):
    action: str
    workflow_job: _WorkflowJob
    repository: _Repository
    organization: _Organization | None = None
    enterprise: _Enterprise | None = None
    installation: _Installation | None = None


def _validate(model: type[_PayloadT], event_name: str, body: bytes) -> _PayloadT:
    try:
        return model.model_validate_json(body)
    except ValidationError as error:
        raise MalformedPayloadError(
            f"malformed {event_name} payload: {_describe(error)}"
        ) from error


def _describe(error: ValidationError) -> str:
    problems = []
    for detail in error.errors(include_url=False):
        location = ".".join(str(part) for part in detail["loc"])
        problems.append(f"{location}: {detail['msg']}" if location else detail["msg"])
    return "; ".join(problems)


def _workflow_job_event(payload: _WorkflowJobPayload) -> WorkflowJobEvent:
    job, repository = payload.workflow_job, payload.repository
    problems = []
    if job.id <= 0:
        problems.append(f"workflow_job.id: {job.id} is not a job id")
    if not repository.owner.login:
        problems.append("repository.owner.login: empty")
    if not repository.name or "/" in repository.name:
        problems.append(f"repository.name: {repository.name!r} is not a repository name")
    if problems:
        raise MalformedPayloadError(f"malformed workflow_job payload: {'; '.join(problems)}")
    owner = repository.owner.login
    return WorkflowJobEvent(
        action=payload.action,
        job_id=job.id,
        run_id=job.run_id,
        labels=tuple(job.labels),
        conclusion=job.conclusion,
        runner_id=job.runner_id,
        repository_name=repository.name,
        owner_login=owner,
        owner_type=repository.owner.type,
        repository=repository.full_name or f"{owner}/{repository.name}",
        organization=payload.organization.login if payload.organization else None,
        enterprise=payload.enterprise.slug if payload.enterprise else None,
        installation_id=payload.installation.id if payload.installation else None,
        job_name=job.name,
        status=job.status,
        created_at=observed_time(job.created_at),
        started_at=observed_time(job.started_at),
        completed_at=observed_time(job.completed_at),
        workflow_name=_string_or_none(job.workflow_name),
        head_branch=_string_or_none(job.head_branch),
        step_conclusions=_step_conclusions(job.steps),
    )


def _string_or_none(value: object) -> str | None:
    return value if isinstance(value, str) else None


def _step_conclusions(steps: object) -> tuple[str | None, ...]:
    if not isinstance(steps, list):
        return ()
    return tuple(
        _string_or_none(step.get("conclusion")) if isinstance(step, dict) else None
        for step in steps
    )
