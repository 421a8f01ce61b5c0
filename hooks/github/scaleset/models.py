"""The runner scale-set protocol's types, parsed strictly from the Actions service's JSON.

Field names and shapes follow `types.go` of GitHub's Go client `actions/scaleset` (MIT
license); the classes are written afresh. Parsing is strict about types (a string is never an
integer, a boolean never a number) and about what the protocol cannot do without: a scale set
without an id, a session without its queue URL or token, statistics missing a count (a missing
`totalAssignedJobs` read as 0 would scale a scale set to zero). It is lenient where the service
is known to be: `null` for a string, number or list reads as its zero value (as Go decodes it),
unknown fields are ignored, .NET's zero time (`0001-01-01T00:00:00`) reads as None, and a job
message of a type this client does not know is skipped (as the Go client does).

A malformed answer raises `MalformedResponseError` naming the fields at fault, never their
values; tokens are `SecretStr`, so no repr shows them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Annotated, Any, Literal, TypeVar
from uuid import UUID

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Discriminator,
    Field,
    SecretStr,
    Tag,
    TypeAdapter,
    ValidationError,
)

from hooks.github.scaleset.errors import MalformedResponseError

JOB_MESSAGES_TYPE = "RunnerScaleSetJobMessages"
"""The one message type the service sends a scale set; its body is a JSON list of job messages."""
SYSTEM_LABEL = "System"
"""The label type the service expects when a label names none."""
MAX_ERRORS_SHOWN = 3


def _zero_when_null(zero: Any) -> Callable[[Any], Any]:
    def convert(value: Any) -> Any:
        return zero if value is None else value

    return convert


def _sequence(value: Any) -> Any:
    """`null` is an empty list. (A before-validator hands on Python values, which strict
    validation takes as a tuple only.)"""
    if value is None:
        return ()
    return tuple(value) if isinstance(value, list) else value


_DATETIME: TypeAdapter[datetime] = TypeAdapter(datetime)


def _timestamp(value: Any) -> datetime | None:
    """An RFC 3339 string (any fraction of a second, .NET writes seven digits) or null. Go's
    and .NET's zero time means "not yet", so it is None; a time without a zone is UTC."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise ValueError("must be a date-time string")
    parsed = _DATETIME.validate_python(value, strict=False)
    if parsed.year == 1:
        return None
    return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=UTC)


Text = Annotated[str, BeforeValidator(_zero_when_null(""))]
Number = Annotated[int, BeforeValidator(_zero_when_null(0))]
Count = Annotated[int, Field(ge=0)]
Texts = Annotated[tuple[str, ...], BeforeValidator(_sequence)]
Timestamp = Annotated[datetime | None, BeforeValidator(_timestamp)]


def _non_empty(value: SecretStr) -> SecretStr:
    if not value.get_secret_value():
        raise ValueError("must not be empty")
    return value


def _absolute_url(value: str) -> str:
    if not value.startswith(("https://", "http://")):
        raise ValueError("must be an absolute http(s) URL")
    return value


Token = Annotated[SecretStr, AfterValidator(_non_empty)]
Url = Annotated[str, AfterValidator(_absolute_url)]


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, strict=True, populate_by_name=True, extra="ignore")


# -- scale sets, runner groups, runners ------------------------------------------------------


class Label(_Model):
    name: str
    type: Text = SYSTEM_LABEL


class RunnerSetting(_Model):
    disable_update: bool = Field(False, alias="disableUpdate")


class RunnerScaleSetStatistic(_Model):
    """What the service counts for a scale set. All seven are required (see the module)."""

    total_available_jobs: Count = Field(alias="totalAvailableJobs")
    total_acquired_jobs: Count = Field(alias="totalAcquiredJobs")
    total_assigned_jobs: Count = Field(alias="totalAssignedJobs")
    total_running_jobs: Count = Field(alias="totalRunningJobs")
    total_registered_runners: Count = Field(alias="totalRegisteredRunners")
    total_busy_runners: Count = Field(alias="totalBusyRunners")
    total_idle_runners: Count = Field(alias="totalIdleRunners")


class RunnerScaleSet(_Model):
    id: int = Field(gt=0)
    name: str = Field(min_length=1)
    runner_group_id: Number = Field(0, alias="runnerGroupId")
    runner_group_name: Text = Field("", alias="runnerGroupName")
    labels: Annotated[tuple[Label, ...], BeforeValidator(_sequence)] = ()
    runner_setting: RunnerSetting = Field(RunnerSetting(), alias="RunnerSetting")
    created_on: Timestamp = Field(None, alias="createdOn")
    runner_jit_config_url: Text = Field("", alias="runnerJitConfigUrl")
    statistics: RunnerScaleSetStatistic | None = None


class RunnerGroup(_Model):
    id: int = Field(gt=0)
    name: str
    size: Number = 0
    is_default: bool = Field(False, alias="isDefaultGroup")


class RunnerReference(_Model):
    id: int = Field(gt=0)
    name: str
    runner_scale_set_id: Number = Field(0, alias="runnerScaleSetId")


class RunnerScaleSetJitRunnerConfig(_Model):
    """A just-in-time runner: its registration and the config its process starts with."""

    runner: RunnerReference
    encoded_jit_config: Token = Field(alias="encodedJITConfig")


@dataclass(frozen=True)
class RunnerScaleSetSpec:
    """What a client asks the service to create or change. Created without labels, a scale set
    gets one named after it; a label without a type is a System label (as `client.go` does)."""

    name: str = ""
    runner_group_id: int = 0
    labels: tuple[str | Label, ...] = ()
    disable_update: bool = False

    def label_models(self) -> list[Label]:
        labels = [lb if isinstance(lb, Label) else Label(name=lb) for lb in self.labels]
        return [lb if lb.type else Label(name=lb.name) for lb in labels]

    def create_body(self) -> dict[str, Any]:
        if not self.name:
            raise ValueError("a runner scale set needs a name")
        labels = self.label_models() or [Label(name=self.name)]
        return self._body(labels)

    def update_body(self) -> dict[str, Any]:
        return self._body(self.label_models())

    def _body(self, labels: list[Label]) -> dict[str, Any]:
        # Go's `omitempty`: what is not set is not sent, so an update changes only what it names.
        body: dict[str, Any] = {}
        if self.name:
            body["name"] = self.name
        if self.runner_group_id:
            body["runnerGroupId"] = self.runner_group_id
        if labels:
            body["labels"] = [{"name": lb.name, "type": lb.type} for lb in labels]
        body["RunnerSetting"] = {"disableUpdate": self.disable_update}
        return body


# -- sessions and messages -------------------------------------------------------------------


class RunnerScaleSetSession(_Model):
    """A listener's session: the message queue it polls and the token the queue takes."""

    session_id: UUID = Field(alias="sessionId")
    owner_name: Text = Field("", alias="ownerName")
    runner_scale_set: RunnerScaleSet | None = Field(None, alias="runnerScaleSet")
    message_queue_url: Url = Field(alias="messageQueueUrl")
    message_queue_access_token: Token = Field(alias="messageQueueAccessToken")
    statistics: RunnerScaleSetStatistic | None = None


class _JobMessageBase(_Model):
    runner_request_id: int = Field(alias="runnerRequestId")
    repository_name: Text = Field("", alias="repositoryName")
    owner_name: Text = Field("", alias="ownerName")
    job_id: Text = Field("", alias="jobId")
    job_workflow_ref: Text = Field("", alias="jobWorkflowRef")
    job_display_name: Text = Field("", alias="jobDisplayName")
    workflow_run_id: Number = Field(0, alias="workflowRunId")
    event_name: Text = Field("", alias="eventName")
    request_labels: Texts = Field((), alias="requestLabels")
    queue_time: Timestamp = Field(None, alias="queueTime")
    scale_set_assign_time: Timestamp = Field(None, alias="scaleSetAssignTime")
    runner_assign_time: Timestamp = Field(None, alias="runnerAssignTime")
    finish_time: Timestamp = Field(None, alias="finishTime")


class JobAvailable(_JobMessageBase):
    """A job the scale set may acquire."""

    message_type: Literal["JobAvailable"] = Field(alias="messageType")
    acquire_job_url: Text = Field("", alias="acquireJobUrl")


class JobAssigned(_JobMessageBase):
    """A job assigned to the scale set: a runner of it should take it."""

    message_type: Literal["JobAssigned"] = Field(alias="messageType")


class JobStarted(_JobMessageBase):
    message_type: Literal["JobStarted"] = Field(alias="messageType")
    runner_id: Number = Field(0, alias="runnerId")
    runner_name: Text = Field("", alias="runnerName")


class JobCompleted(_JobMessageBase):
    message_type: Literal["JobCompleted"] = Field(alias="messageType")
    result: Text = ""
    runner_id: Number = Field(0, alias="runnerId")
    runner_name: Text = Field("", alias="runnerName")


class _OtherJobMessage(_Model):
    """A job message of a type this client does not know: checked to be an object, skipped."""

    message_type: str = Field(alias="messageType")


JobMessage = JobAvailable | JobAssigned | JobStarted | JobCompleted
_KNOWN_JOB_MESSAGES = ("JobAvailable", "JobAssigned", "JobStarted", "JobCompleted")


def _job_message_tag(value: Any) -> str:
    kind = value.get("messageType") if isinstance(value, dict) else None
    return kind if kind in _KNOWN_JOB_MESSAGES else "other"


_JOB_MESSAGES: TypeAdapter[list[JobMessage | _OtherJobMessage]] = TypeAdapter(
    list[
        Annotated[
            Annotated[JobAvailable, Tag("JobAvailable")]
            | Annotated[JobAssigned, Tag("JobAssigned")]
            | Annotated[JobStarted, Tag("JobStarted")]
            | Annotated[JobCompleted, Tag("JobCompleted")]
            | Annotated[_OtherJobMessage, Tag("other")],
            Discriminator(_job_message_tag),
        ]
    ]
)


class _MessageEnvelope(_Model):
    message_id: int = Field(alias="messageId", ge=0)
    message_type: str = Field(alias="messageType")
    body: Text = ""
    statistics: RunnerScaleSetStatistic | None = None


@dataclass(frozen=True)
class RunnerScaleSetMessage:
    """One message of the queue: the statistics when it was written and its job messages, in
    the order the service wrote them."""

    message_id: int
    statistics: RunnerScaleSetStatistic | None
    jobs: tuple[JobMessage, ...] = ()

    @property
    def jobs_available(self) -> tuple[JobAvailable, ...]:
        return tuple(j for j in self.jobs if isinstance(j, JobAvailable))

    @property
    def jobs_assigned(self) -> tuple[JobAssigned, ...]:
        return tuple(j for j in self.jobs if isinstance(j, JobAssigned))

    @property
    def jobs_started(self) -> tuple[JobStarted, ...]:
        return tuple(j for j in self.jobs if isinstance(j, JobStarted))

    @property
    def jobs_completed(self) -> tuple[JobCompleted, ...]:
        return tuple(j for j in self.jobs if isinstance(j, JobCompleted))


# -- admin connection ------------------------------------------------------------------------


class RegistrationToken(_Model):
    token: Token
    expires_at: Timestamp = None


class AdminConnection(_Model):
    """What `POST /actions/runner-registration` answers: the tenant's Actions service URL and
    an admin token (a JWT) for it."""

    url: Url
    token: Token


# -- lists -----------------------------------------------------------------------------------

_T = TypeVar("_T")


class _ListAnswer(_Model):
    count: Count

    def check_count(self, length: int) -> None:
        if self.count != length:
            raise ValueError(f"count is {self.count} but value has {length} item(s)")


class RunnerScaleSetList(_ListAnswer):
    value: tuple[RunnerScaleSet, ...] = ()


class RunnerGroupList(_ListAnswer):
    value: tuple[RunnerGroup, ...] = ()


class RunnerReferenceList(_ListAnswer):
    value: tuple[RunnerReference, ...] = ()


class AcquiredJobs(_ListAnswer):
    value: tuple[int, ...] = ()


# -- parsing ---------------------------------------------------------------------------------

_BOM = b"\xef\xbb\xbf"
_M = TypeVar("_M", bound=BaseModel)


def describe_validation_error(error: ValidationError) -> str:
    """Where and what, never the values: an answer may carry a token in a field."""
    problems = error.errors(include_input=False, include_url=False, include_context=False)
    shown = [
        f"{'.'.join(str(part) for part in problem['loc']) or '(answer)'}: {problem['msg']}"
        for problem in problems[:MAX_ERRORS_SHOWN]
    ]
    more = len(problems) - len(shown)
    return "; ".join(shown) + (f" (and {more} more)" if more > 0 else "")


def parse_answer(model: type[_M], content: bytes, what: str) -> _M:
    """`content` as a `model`, or MalformedResponseError saying which fields are wrong."""
    try:
        parsed = model.model_validate_json(content.removeprefix(_BOM))
        if isinstance(parsed, _ListAnswer):
            parsed.check_count(len(getattr(parsed, "value", ())))
    except ValidationError as exc:
        raise MalformedResponseError(f"{what}: {describe_validation_error(exc)}") from None
    except ValueError as exc:
        raise MalformedResponseError(f"{what}: {exc}") from None
    return parsed


def parse_message(content: bytes) -> RunnerScaleSetMessage:
    """A message of the queue (`parseRunnerScaleSetMessageResponse` in `client.go`)."""
    envelope = parse_answer(_MessageEnvelope, content, "runner scale set message")
    if envelope.message_type != JOB_MESSAGES_TYPE:
        # The value is not echoed: an answer's text may carry what a proxy put there (tokens).
        raise MalformedResponseError(
            f"runner scale set message: unsupported type (not {JOB_MESSAGES_TYPE})"
        )
    jobs: list[JobMessage] = []
    if envelope.body:
        try:
            parsed = _JOB_MESSAGES.validate_json(envelope.body)
        except ValidationError as exc:
            problem = describe_validation_error(exc)
            raise MalformedResponseError(f"runner scale set message body: {problem}") from None
        jobs = [job for job in parsed if not isinstance(job, _OtherJobMessage)]
    return RunnerScaleSetMessage(envelope.message_id, envelope.statistics, tuple(jobs))
