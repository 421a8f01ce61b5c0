"""Scale-set mode: a RunnerDeployment (or RunnerSet) whose runners are members of a GitHub
runner scale set, sized by the jobs GitHub assigned to it (counted by `arc-hooks listen`), with
no webhook.

The opt-in is one annotation on the RunnerDeployment (or RunnerSet), so ARC manifests stay
valid as they are:

    metadata:
      annotations:
        arc-hooks.dev/scale-set: linux-x64          # the scale set's name: `runs-on: linux-x64`
        arc-hooks.dev/scale-set-runner-group: ci    # optional; the default group otherwise

What each party writes, so that no hook writes to another object:

- the RunnerDeployment (or RunnerSet) hook keeps the scale set (created, or adopted by name,
  labels kept in sync, deleted by its finalize hook) and records it in `status.scaleSet`; a
  RunnerDeployment passes its id to its Runners through their template
  (`SCALE_SET_ID_ANNOTATION`), a RunnerSet registers its runners itself;
- a Runner with that annotation registers as a member, with a JIT config the scale-set API
  generates;
- the listener writes the scale set's assigned jobs on the HorizontalRunnerAutoscaler
  (`ASSIGNED_JOBS_ANNOTATION`), which its hook turns into `desiredReplicas`, with the time it
  counted them (`ASSIGNED_JOBS_TIME_ANNOTATION`, microseconds, strictly increasing), which
  reaches the RunnerReplicaSet as its `effectiveTime`;
- the RunnerReplicaSet records on each member it creates the count it created it for
  (`COUNT_VERSION_ANNOTATION`), and creates members only for a newer count: a member whose
  job is over is not replaced until the listener has counted again (GitHub's listener and
  ARC's EphemeralRunnerSet do the same with a patch id), so a finished job never leaves a
  useless new runner behind;
- the listener marks the Runner that started a job (`JOB_STARTED_ANNOTATION`), so a scale-down
  leaves it alone even before GitHub's runner list says it is busy.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta

from hooks.clock import parse_time

SCALE_SET_ANNOTATION = "arc-hooks.dev/scale-set"
RUNNER_GROUP_ANNOTATION = "arc-hooks.dev/scale-set-runner-group"
SCALE_SET_ID_ANNOTATION = "arc-hooks.dev/scale-set-id"
ASSIGNED_JOBS_ANNOTATION = "arc-hooks.dev/assigned-jobs"
ASSIGNED_JOBS_TIME_ANNOTATION = "arc-hooks.dev/assigned-jobs-time"
COUNT_VERSION_ANNOTATION = "arc-hooks.dev/count-time"
JOB_STARTED_ANNOTATION = "arc-hooks.dev/job-started"

COUNT_WAIT = timedelta(minutes=5)
"""How long scale-set members wait for a newer count before a set creates them anyway."""

MAX_NAME_LENGTH = 100
_COUNT = re.compile(r"[0-9]{1,10}")
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")


@dataclass(frozen=True)
class ScaleSetDeclaration:
    """What a RunnerDeployment's annotations ask for."""

    name: str
    runner_group: str | None


def count_wait_left(last_creation: datetime | None, now: datetime) -> float | None:
    """Seconds until a set that created members for the count it acted on creates more without
    a newer count (`COUNT_WAIT` after its newest creation); None when that moment has passed
    or nothing was created."""
    if last_creation is None:
        return None
    remaining = (last_creation + COUNT_WAIT - now).total_seconds()
    return remaining if remaining > 0 else None


def declared_scale_set(annotations: Mapping[str, str]) -> ScaleSetDeclaration | None:
    """The scale set a target declares, or None when it declares none. Raises ValueError with
    a message for the user when the declaration cannot be used."""
    name = annotations.get(SCALE_SET_ANNOTATION)
    if name is None:
        return None
    name = name.strip()
    if not name or len(name) > MAX_NAME_LENGTH or not _NAME.match(name):
        raise ValueError(
            f"annotation {SCALE_SET_ANNOTATION} must be a scale set name: letters, digits, "
            f"'.', '_' and '-', at most {MAX_NAME_LENGTH} characters, starting with a letter "
            "or digit"
        )
    group = (annotations.get(RUNNER_GROUP_ANNOTATION) or "").strip() or None
    return ScaleSetDeclaration(name, group)


def member_of_scale_set(annotations: Mapping[str, str]) -> int | None:
    """The scale set a Runner is a member of (its id), when its template says so."""
    return _positive(annotations.get(SCALE_SET_ID_ANNOTATION))


def assigned_jobs(annotations: Mapping[str, str]) -> int | None:
    """The jobs the listener last counted as assigned to the target's scale set."""
    return _count(annotations.get(ASSIGNED_JOBS_ANNOTATION))


def assigned_jobs_time(annotations: Mapping[str, str]) -> str | None:
    """When the listener counted them (RFC 3339, as written), if readable."""
    value = annotations.get(ASSIGNED_JOBS_TIME_ANNOTATION)
    if value is None:
        return None
    try:
        parse_time(value)
    except ValueError:
        return None
    return value


def _positive(value: str | None) -> int | None:
    number = _count(value)
    return number if number else None


def _count(value: str | None) -> int | None:
    if value is None or not _COUNT.fullmatch(value.strip()):
        return None
    return int(value.strip())
