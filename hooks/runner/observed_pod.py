"""A typed reading of an observed runner Pod: the facts the lifecycle decisions need.

The API server serves well-formed pods, but a part of the wrong type must not crash a hook, nor
be read as a reason to let a pod go: an unreadable status reads as phase `Unknown` (Kubernetes'
"the state of the pod could not be obtained"), unreadable container statuses as a runner that
may have started, an unreadable time as unknown.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from hooks.github.port import Scope
from hooks.metacontroller import KubeObject, list_or_empty, object_or_empty, observed_time

RUNNER_CONTAINER = "runner"
UNKNOWN_PHASE = "Unknown"


@dataclass(frozen=True)
class ObservedPod:
    name: str
    uid: str
    phase: str  # Pending | Running | Succeeded | Failed | Unknown
    labels: dict[str, str]
    terminating: bool
    ready: bool
    ready_since: datetime | None
    reason: str
    message: str
    has_container_statuses: bool
    runner_exit_code: int | None  # set once the runner container has terminated
    runner_started: bool
    ephemeral: bool
    scope: Scope | None  # where its runner registers, as its env names it
    # How long the runner container ran before it ended (its terminated state's times).
    runner_ran_seconds: float | None = None

    @property
    def runner_exited(self) -> bool:
        return self.runner_exit_code is not None

    @property
    def stopped(self) -> bool:
        """The runner can no longer run a job here: safe to delete without unregistering."""
        return (
            self.phase in ("Succeeded", "Failed")
            or self.runner_exited
            or (self.terminating and not self.has_container_statuses)
        )

    @property
    def completed(self) -> bool:
        """The runner exited cleanly: an ephemeral runner that finished its job."""
        return self.phase == "Succeeded" or self.runner_exit_code == 0

    @property
    def failed(self) -> bool:
        return self.stopped and not self.completed

    @property
    def pending(self) -> bool:
        """The runner process has not started, so it cannot have registered."""
        return self.phase == "Pending" and not self.runner_started


def observe_pod(pod: dict[str, Any]) -> ObservedPod:
    metadata = object_or_empty(pod.get("metadata"))
    raw_status = pod.get("status")
    status = object_or_empty(raw_status)
    ready, ready_since = _ready_condition(status)
    raw_statuses = status.get("containerStatuses")
    # Statuses that cannot be read may hide a started runner: never read them as "none".
    statuses_readable = raw_statuses is None or isinstance(raw_statuses, list)
    statuses = [s for s in list_or_empty(raw_statuses) if isinstance(s, dict)]
    runner_state = next((s for s in statuses if s.get("name") == RUNNER_CONTAINER), {})
    state = object_or_empty(runner_state.get("state"))
    terminated = state.get("terminated")
    if not isinstance(terminated, dict):
        # Pods of a StatefulSet restart their containers (restartPolicy Always): a runner that
        # ended once shows it in lastState while it waits to restart or runs again. Its
        # registration was spent, so it counts as ended.
        terminated = object_or_empty(runner_state.get("lastState")).get("terminated")
    exit_code = terminated.get("exitCode") if isinstance(terminated, dict) else None
    labels = object_or_empty(metadata.get("labels"))
    return ObservedPod(
        name=_text(metadata.get("name")),
        uid=_text(metadata.get("uid")),
        phase=_phase(raw_status),
        labels={str(k): v for k, v in labels.items() if isinstance(v, str)},
        terminating=bool(metadata.get("deletionTimestamp")),
        ready=ready,
        ready_since=ready_since,
        reason=_text(status.get("reason")),
        message=_text(status.get("message")),
        has_container_statuses=bool(statuses) or not statuses_readable,
        runner_exit_code=exit_code if _is_integer(exit_code) else None,
        runner_started=bool(state.get("running") or terminated) or not statuses_readable,
        ephemeral=literal_env(pod, "RUNNER_EPHEMERAL") != "false",
        scope=env_scope(pod),
        runner_ran_seconds=_ran_seconds(terminated),
    )


def _ran_seconds(terminated: object) -> float | None:
    """How long a terminated container ran; None when its times cannot be read."""
    if not isinstance(terminated, dict):
        return None
    started = observed_time(terminated.get("startedAt"))
    finished = observed_time(terminated.get("finishedAt"))
    if started is None or finished is None or finished < started:
        return None
    return (finished - started).total_seconds()


def _phase(status: object) -> str:
    """The pod's phase: Pending before the API server reported one, Unknown if unreadable."""
    if status is None:
        return "Pending"
    if not isinstance(status, dict):
        return UNKNOWN_PHASE
    phase = status.get("phase")
    if phase is None or phase == "":
        return "Pending"
    return phase if isinstance(phase, str) else UNKNOWN_PHASE


def _ready_condition(status: dict[str, Any]) -> tuple[bool, datetime | None]:
    for condition in list_or_empty(status.get("conditions")):
        if isinstance(condition, dict) and condition.get("type") == "Ready":
            ready = condition.get("status") == "True"
            since = observed_time(condition.get("lastTransitionTime")) if ready else None
            return ready, since
    return False, None


def literal_env(pod: KubeObject, name: str) -> str:
    """The literal value of an env var of the runner container; "" when unset or indirect.
    A name given twice has its last value, as the kubelet sets it (the user's env comes before
    what the pod builder adds)."""
    for container in list_or_empty(object_or_empty(pod.get("spec")).get("containers")):
        if isinstance(container, dict) and container.get("name") == RUNNER_CONTAINER:
            return env_literal(container.get("env"), name)
    return ""


def env_literal(env: object, name: str) -> str:
    """The literal value of `name` in an env list; "" when unset or indirect. A name given
    twice has its last value, as the kubelet sets it."""
    value: object = ""
    for item in list_or_empty(env):
        if isinstance(item, dict) and item.get("name") == name:
            value = item.get("value")
    return value if isinstance(value, str) else ""


def env_scope(pod: KubeObject) -> Scope | None:
    """The scope a runner pod (or a pod template) registers in, as its env names it (ARC's
    names): the record of where its runner went, whatever its owner's spec says now."""
    scope = Scope(
        enterprise=literal_env(pod, "RUNNER_ENTERPRISE"),
        organization=literal_env(pod, "RUNNER_ORG"),
        repository=literal_env(pod, "RUNNER_REPO"),
    )
    return scope if scope.enterprise or scope.organization or scope.repository else None


def _text(value: object) -> str:
    return value if isinstance(value, str) else ""


def _is_integer(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)
