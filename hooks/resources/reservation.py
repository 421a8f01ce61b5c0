"""CapacityReservation (`arc-hooks.dev/v1alpha1`): one runner reserved for one queued job.

The webhook receiver creates one per `workflow_job` it scales for, named after the job id and
controlled by the HorizontalRunnerAutoscaler it counts for. A redelivered `queued` event finds
it already there; `completed` marks it completed, so it stops counting at once and a late or
duplicated `queued` delivery of the same job cannot bring it back. The HRA hook deletes a
reservation (by leaving it out of its children) once it has expired.

This replaces ARC's read-modify-write of `spec.capacityReservations`, which webhook replicas
could race on; that field is still accepted and counted.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from hooks.resources.common import DateTime, ObjectMeta, ResourceModel

GROUP = "arc-hooks.dev"
VERSION = "v1alpha1"
API_VERSION = f"{GROUP}/{VERSION}"
KIND: Literal["CapacityReservation"] = "CapacityReservation"
AUTOSCALER_LABEL = "arc-hooks.dev/horizontal-runner-autoscaler"


class ReservedJob(ResourceModel):
    """The job the reservation is for, as GitHub's `workflow_job` event described it."""

    id: int | None = None
    run_id: int | None = Field(default=None, alias="runID")
    name: str | None = None
    repository: str | None = None  # owner/name
    labels: list[str] = []


class CapacityReservationSpec(ResourceModel):
    effective_time: DateTime
    expiration_time: DateTime
    replicas: int = Field(default=1, json_schema_extra={"minimum": 0})
    start_time: DateTime | None = Field(
        default=None,
        description=(
            "When its lifetime began, if later than effectiveTime: a reservation beyond "
            "maxReplicas waits, without expiring, until it has room (set by the HRA)."
        ),
    )
    job_start_time: DateTime | None = Field(
        default=None,
        description=(
            "When a runner took its job (the job's in_progress delivery, set by the webhook "
            "receiver): until then its lifetime is renewed however it ends."
        ),
    )
    renew_time: DateTime | None = Field(
        default=None,
        description=(
            "When its lifetime last began anew: it ended while more runners were busy than "
            "the reservations still counting accounted for, so its job was taken to be "
            "running still (set by the HRA)."
        ),
    )
    completion_time: DateTime | None = Field(
        default=None,
        description=(
            "When its job completed: it no longer counts, and is kept until expirationTime "
            "so that a late delivery of the job's queued event cannot count it again."
        ),
    )
    job_check_time: DateTime | None = Field(
        default=None,
        description=(
            "When GitHub last said its job was not over (set by the HRA, which asks again "
            "once the reservation has stood as long again: after one minute at least, ten at "
            "most)."
        ),
    )
    job: ReservedJob | None = None


class CapacityReservation(ResourceModel):
    api_version: str = API_VERSION
    kind: Literal["CapacityReservation"] = KIND
    metadata: ObjectMeta = ObjectMeta()
    spec: CapacityReservationSpec
