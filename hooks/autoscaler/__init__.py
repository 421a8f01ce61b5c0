"""HorizontalRunnerAutoscaler decisions: pure functions of the HRA, observations and `now`."""

from hooks.autoscaler.activity import (
    ActivitySource,
    RecordedActivity,
    WorkflowJob,
    WorkflowRun,
)
from hooks.autoscaler.desired import (
    DEFAULT_SCALE_DOWN_DELAY,
    Decision,
    ScaleTarget,
    Suggestion,
    desired_replicas,
)
from hooks.autoscaler.errors import AutoscalingError
from hooks.autoscaler.metrics import RunnerScope
from hooks.autoscaler.reservations import Reservation, ReservationCount, count_reservations
from hooks.autoscaler.schedule import (
    active_override,
    next_boundary,
    scheduled_overrides_summary,
)

__all__ = [
    "DEFAULT_SCALE_DOWN_DELAY",
    "ActivitySource",
    "AutoscalingError",
    "Decision",
    "RecordedActivity",
    "Reservation",
    "ReservationCount",
    "RunnerScope",
    "ScaleTarget",
    "Suggestion",
    "WorkflowJob",
    "WorkflowRun",
    "active_override",
    "count_reservations",
    "desired_replicas",
    "next_boundary",
    "scheduled_overrides_summary",
]
