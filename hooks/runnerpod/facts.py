"""What a runner pod says about itself: which runner it is, who controls it, and whether its
node still reports on it. Read from the pod object alone, as the pod was built (ARC's env
names), so it works for pods of Runners, of RunnerSets, and of ARC itself."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from hooks.clock import parse_optional_time
from hooks.github.port import Scope
from hooks.metacontroller import KubeObject
from hooks.runner.observed_pod import RUNNER_CONTAINER, ObservedPod, observe_pod

RUNNER_ID_ANNOTATION = "actions-runner/id"
"""ARC's record of the runner's GitHub id, written once GitHub lists the runner."""

UNREACHABLE_AFTER_SECONDS = 60.0
"""How long past its grace period a terminating pod may still report a running runner before
its node counts as gone (ARC's force-delete waits the same minute)."""


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
    metadata = _mapping(pod.get("metadata"))
    annotations = {
        str(k): v for k, v in _mapping(metadata.get("annotations")).items() if isinstance(v, str)
    }
    observed = observe_pod(pod)
    running = _runner_state(pod).get("running")
    grace = metadata.get("deletionGracePeriodSeconds")
    return RunnerPod(
        namespace=str(metadata.get("namespace") or ""),
        annotations=annotations,
        runner_name=_literal_env(pod, "RUNNER_NAME") or observed.name,
        scope=_scope(pod),
        runner_id=_runner_id(annotations.get(RUNNER_ID_ANNOTATION)),
        controller=controller_ref(pod),
        observed=observed,
        runner_running=isinstance(running, dict),
        runner_running_since=_time(running.get("startedAt")) if isinstance(running, dict) else None,
        node_lost=_node_lost(_mapping(pod.get("status"))),
        deletion_timestamp=_time(metadata.get("deletionTimestamp")),
        deletion_grace_seconds=float(grace) if isinstance(grace, int | float) else 0.0,
    )


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
        for condition in status.get("conditions") or []
    )


def _termination_overdue(facts: RunnerPod, now: datetime) -> bool:
    """Terminating well past its grace period, yet the runner still shows as running."""
    if facts.deletion_timestamp is None or not facts.runner_running:
        return False
    # The API server sets deletionTimestamp to the end of the grace period, so counting the
    # grace again from it waits at least grace + 60 s after the delete request whichever way
    # the timestamp was written: a kubelet still within the grace period is never overruled.
    overdue_for = (now - facts.deletion_timestamp).total_seconds()
    return overdue_for > facts.deletion_grace_seconds + UNREACHABLE_AFTER_SECONDS


def _mapping(value: object) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _time(value: object) -> datetime | None:
    return parse_optional_time(value) if isinstance(value, str) else None


def _runner_state(pod: KubeObject) -> dict[str, Any]:
    statuses = _mapping(pod.get("status")).get("containerStatuses") or []
    for status in statuses:
        if isinstance(status, dict) and status.get("name") == RUNNER_CONTAINER:
            state = status.get("state")
            return state if isinstance(state, dict) else {}
    return {}


def _literal_env(pod: KubeObject, name: str) -> str:
    """The literal value of an env var of the runner container; "" when unset or indirect."""
    for container in _mapping(pod.get("spec")).get("containers") or []:
        if not isinstance(container, dict) or container.get("name") != RUNNER_CONTAINER:
            continue
        for env in container.get("env") or []:
            if isinstance(env, dict) and env.get("name") == name:
                value = env.get("value")
                return value if isinstance(value, str) else ""
    return ""


def _scope(pod: KubeObject) -> Scope | None:
    scope = Scope(
        enterprise=_literal_env(pod, "RUNNER_ENTERPRISE"),
        organization=_literal_env(pod, "RUNNER_ORG"),
        repository=_literal_env(pod, "RUNNER_REPO"),
    )
    return scope if scope.enterprise or scope.organization or scope.repository else None


def _runner_id(text: str | None) -> int | None:
    if text is None or not text.strip().isdigit():
        return None
    return int(text.strip())


def controller_ref(pod: KubeObject) -> ControllerRef | None:
    """The pod's controlling owner, from its ownerReferences."""
    for ref in _mapping(pod.get("metadata")).get("ownerReferences") or []:
        if isinstance(ref, dict) and ref.get("controller") is True:
            return ControllerRef(
                api_version=str(ref.get("apiVersion") or ""),
                kind=str(ref.get("kind") or ""),
                name=str(ref.get("name") or ""),
                uid=str(ref.get("uid") or ""),
            )
    return None
