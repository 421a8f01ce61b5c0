"""What a runner pod says about itself: which runner it is, who controls it, and whether its
node still reports on it. Read from the pod object alone, as the pod was built (ARC's env
names), so it works for pods of Runners, of RunnerSets, and of ARC itself."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from hooks.github.port import Scope
from hooks.metacontroller import KubeObject, list_or_empty, object_or_empty, observed_time
from hooks.naming import RUNNER_ID_ANNOTATION
from hooks.runner.observed_pod import (
    RUNNER_CONTAINER,
    ObservedPod,
    literal_env,
    observe_pod,
)

UNREACHABLE_AFTER_SECONDS = 60.0
"""How long past its grace period a terminating pod may still report a running runner before
its node counts as gone (ARC's force-delete waits the same minute)."""
MAX_GRACE_SECONDS = 100 * 365 * 86_400.0
"""A deletion grace period read as at most a century: the field is an int64, and a wait that
long is never in practice, while adding more to a time would overflow."""

RUNNER_ID = re.compile(r"[0-9]{1,18}")
"""A GitHub runner id as the annotation records it (an int64, in ASCII digits)."""


@dataclass(frozen=True)
class ControllerRef:
    api_version: str
    kind: str
    name: str
    uid: str


@dataclass(frozen=True)
class RunnerPod:
    namespace: str
    annotations: dict[str, str]
    runner_name: str
    scope: Scope | None  # None: not a runner this project can unregister
    runner_id: int | None
    controller: ControllerRef | None
    observed: ObservedPod
    runner_running: bool  # the runner container's state is `running`, as last reported
    runner_running_since: datetime | None
    node_lost: bool  # the node controller marked the pod: its node stopped reporting
    deletion_timestamp: datetime | None
    deletion_grace_seconds: float

    @property
    def uid(self) -> str:
        return self.observed.uid


def read_runner_pod(pod: KubeObject) -> RunnerPod:
    metadata = object_or_empty(pod.get("metadata"))
    annotations = {
        str(k): v
        for k, v in object_or_empty(metadata.get("annotations")).items()
        if isinstance(v, str)
    }
    observed = observe_pod(pod)
    running = _runner_state(pod).get("running")
    grace = metadata.get("deletionGracePeriodSeconds")
    return RunnerPod(
        namespace=_text(metadata.get("namespace")),
        annotations=annotations,
        runner_name=literal_env(pod, "RUNNER_NAME") or observed.name,
        scope=observed.scope,
        runner_id=_runner_id(annotations.get(RUNNER_ID_ANNOTATION)),
        controller=controller_ref(pod),
        observed=observed,
        runner_running=isinstance(running, dict),
        runner_running_since=(
            observed_time(running.get("startedAt")) if isinstance(running, dict) else None
        ),
        node_lost=_node_lost(object_or_empty(pod.get("status"))),
        deletion_timestamp=observed_time(metadata.get("deletionTimestamp")),
        deletion_grace_seconds=_grace_seconds(grace),
    )


def _grace_seconds(value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return 0.0
    if value >= MAX_GRACE_SECONDS:  # compared first: an int may be too large for a float
        return MAX_GRACE_SECONDS
    return max(float(value), 0.0)


FORCE_DELETE_AFTER = timedelta(minutes=1)
"""ARC's `deletionTimeout`: how long past its deletionTimestamp a pod that its node no longer
reports on waits before it is force-deleted."""


def force_deletion_at(facts: RunnerPod, now: datetime) -> datetime | None:
    """When this terminating pod is force-deleted: a minute past its deletionTimestamp, if its
    node no longer reports on it (otherwise None: the kubelet ends it). Without a forced delete
    it would stay Terminating until Kubernetes removes it, holding its name (a standalone
    Runner gets no new pod) and its place in a RunnerReplicaSet."""
    if facts.deletion_timestamp is None or not node_unreachable(facts, now):
        return None
    return facts.deletion_timestamp + FORCE_DELETE_AFTER


def node_unreachable(facts: RunnerPod, now: datetime) -> bool:
    """The node no longer reports on this pod: a container exit would never be seen."""
    return facts.node_lost or _termination_overdue(facts, now)


def _node_lost(status: dict[str, Any]) -> bool:
    if status.get("phase") == "Unknown" or status.get("reason") == "NodeLost":
        return True
    return any(
        isinstance(condition, dict)
        and condition.get("type") == "Ready"
        and condition.get("status") == "Unknown"
        for condition in list_or_empty(status.get("conditions"))
    )


def termination_overdue_at(facts: RunnerPod) -> datetime | None:
    """When a terminating pod becomes overdue: its node has not reported the pod's end well
    past the grace period. None when the pod is not terminating. A runner already ended does
    not make it any less so: a sidecar (docker) still running holds the pod, and a node lost
    meanwhile would leave it Terminating for good.

    The API server sets deletionTimestamp to the end of the grace period, so counting the
    grace again from it waits at least grace + 60 s after the delete request whichever way
    the timestamp was written: a kubelet still within the grace period is never overruled."""
    if facts.deletion_timestamp is None:
        return None
    wait = timedelta(seconds=facts.deletion_grace_seconds + UNREACHABLE_AFTER_SECONDS)
    return facts.deletion_timestamp + wait


def _termination_overdue(facts: RunnerPod, now: datetime) -> bool:
    overdue_at = termination_overdue_at(facts)
    return overdue_at is not None and now >= overdue_at


def _runner_state(pod: KubeObject) -> dict[str, Any]:
    statuses = object_or_empty(pod.get("status")).get("containerStatuses")
    for status in list_or_empty(statuses):
        if isinstance(status, dict) and status.get("name") == RUNNER_CONTAINER:
            state = status.get("state")
            return state if isinstance(state, dict) else {}
    return {}


def _runner_id(text: str | None) -> int | None:
    if text is None or not RUNNER_ID.fullmatch(text.strip()):
        return None
    return int(text.strip())


def controller_ref(pod: KubeObject) -> ControllerRef | None:
    """The pod's controlling owner, from its ownerReferences."""
    for ref in list_or_empty(object_or_empty(pod.get("metadata")).get("ownerReferences")):
        if isinstance(ref, dict) and ref.get("controller") is True:
            return ControllerRef(
                api_version=_text(ref.get("apiVersion")),
                kind=_text(ref.get("kind")),
                name=_text(ref.get("name")),
                uid=_text(ref.get("uid")),
            )
    return None


def _text(value: object) -> str:
    return value if isinstance(value, str) else ""
