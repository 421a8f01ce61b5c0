"""What an HRA's spec may not say, beyond what its CRD checks.

The CRD types these fields as plain integers and strings, so the API server admits values ARC
then silently misuses: a negative `maxReplicas` becomes the deployment's replica count, a
`minReplicas` above `maxReplicas` wins or loses depending on the suggestion, a negative delay
or reservation quietly shrinks the answer. Such a spec is a problem: nothing is sized from it.

A trigger's `duration` the webhook receiver cannot use is only a note: the receiver reserves
for ten minutes instead (as ARC does for a duration of 0 or less), so scaling goes on.

Messages name fields and what they allow, never the values: a spec field may hold anything,
including a token pasted into the wrong place, and status is readable by many.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta

from hooks.autoscaler.schedule import spec_min_replicas_or_default
from hooks.resources.autoscaler import HorizontalRunnerAutoscalerSpec, ScaleUpTrigger
from hooks.webhook.duration import parse_go_duration
from hooks.webhook.targets import DEFAULT_RESERVATION_DURATION

_FALLBACK = f"reservations last {int(DEFAULT_RESERVATION_DURATION.total_seconds()) // 60}m instead"


MAX_SCHEDULED_OVERRIDES = 100
"""Each override is a recurrence rule matched at every sync: found by a hostile probe, 11,000
of them (1.4 MB, which etcd takes) made a sync take 18 s, past Metacontroller's timeout, so the
HRA never got a status saying why."""


def spec_problems(spec: HorizontalRunnerAutoscalerSpec) -> list[str]:
    """Every reason the spec cannot be sized as written; empty when it can."""
    problems: list[str] = []
    maximum = spec.max_replicas
    if maximum is not None and maximum < 0:
        problems.append("spec.maxReplicas must be 0 or more")
        maximum = None  # compared with nothing else: one problem is enough
    if (
        maximum is not None
        and spec.min_replicas is not None
        and spec_min_replicas_or_default(spec.min_replicas) > maximum
    ):
        # ARC reads a negative minReplicas as 1, which is then what exceeds maxReplicas.
        negative = " (a negative minReplicas counts as 1)" if spec.min_replicas < 0 else ""
        problems.append(f"spec.minReplicas must not be greater than spec.maxReplicas{negative}")
    delay = spec.scale_down_delay_seconds_after_scale_out
    if delay is not None and delay < 0:
        problems.append("spec.scaleDownDelaySecondsAfterScaleOut must be 0 or more")
    for index, reservation in enumerate(spec.capacity_reservations):
        if reservation.replicas is not None and reservation.replicas < 0:
            problems.append(f"spec.capacityReservations[{index}].replicas must be 0 or more")
    if len(spec.scheduled_overrides) > MAX_SCHEDULED_OVERRIDES:
        problems.append(f"spec.scheduledOverrides: at most {MAX_SCHEDULED_OVERRIDES}")
        return problems
    # An override's minReplicas may exceed maxReplicas: ARC then sizes to it (it raises the
    # answer to the minimum before capping it), which its "prepare for spikes" example relies
    # on. Only a negative one is meaningless.
    for index, override in enumerate(spec.scheduled_overrides):
        if override.min_replicas is not None and override.min_replicas < 0:
            problems.append(f"spec.scheduledOverrides[{index}].minReplicas must be 0 or more")
    return problems


def trigger_duration_notes(triggers: Sequence[ScaleUpTrigger]) -> list[str]:
    """Trigger durations the receiver replaces with ten minutes, each said once.

    Absent and zero are not noted: zero is how Kubernetes writes ARC's unset duration (`0s`)."""
    notes: list[str] = []
    for index, trigger in enumerate(triggers):
        field = f"spec.scaleUpTriggers[{index}].duration"
        if not trigger.duration:
            continue
        try:
            duration = parse_go_duration(trigger.duration)
        except ValueError:
            notes.append(
                f"{field} is not a Go duration (such as 30m or 1h30m, at most 2562047h): "
                + _FALLBACK
            )
            continue
        if duration < timedelta(0):
            notes.append(f"{field} is negative: {_FALLBACK}")
    return notes
