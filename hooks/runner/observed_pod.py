"""A typed reading of an observed runner Pod: the facts the lifecycle decisions need."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from hooks.clock import parse_time

RUNNER_CONTAINER = "runner"


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
    metadata = pod.get("metadata") or {}
    status = pod.get("status") or {}
    ready, ready_since = _ready_condition(status)
    statuses = status.get("containerStatuses") or []
    runner_state = next(
        (s for s in statuses if isinstance(s, dict) and s.get("name") == RUNNER_CONTAINER), {}
    )
    state = runner_state.get("state") or {}
    terminated = state.get("terminated")
    if not isinstance(terminated, dict):
        # Pods of a StatefulSet restart their containers (restartPolicy Always): a runner that
        # ended once shows it in lastState while it waits to restart or runs again. Its
        # registration was spent, so it counts as ended.
        terminated = (runner_state.get("lastState") or {}).get("terminated")
    exit_code = terminated.get("exitCode") if isinstance(terminated, dict) else None
    return ObservedPod(
        name=str(metadata.get("name", "")),
        uid=str(metadata.get("uid", "")),
        phase=str(status.get("phase") or "Pending"),
        labels=dict(metadata.get("labels") or {}),
        terminating=bool(metadata.get("deletionTimestamp")),
        ready=ready,
        ready_since=ready_since,
        reason=str(status.get("reason") or ""),
        message=str(status.get("message") or ""),
        has_container_statuses=bool(statuses),
        runner_exit_code=int(exit_code) if isinstance(exit_code, int) else None,
        runner_started=bool(state.get("running") or terminated),
        ephemeral=_runner_env(pod, "RUNNER_EPHEMERAL") != "false",
    )


def _ready_condition(status: dict[str, Any]) -> tuple[bool, datetime | None]:
    for condition in status.get("conditions") or []:
        if isinstance(condition, dict) and condition.get("type") == "Ready":
            ready = condition.get("status") == "True"
            since = condition.get("lastTransitionTime")
            return ready, parse_time(since) if ready and isinstance(since, str) else None
    return False, None


def _runner_env(pod: dict[str, Any], name: str) -> str | None:
    for container in (pod.get("spec") or {}).get("containers") or []:
        if container.get("name") != RUNNER_CONTAINER:
            continue
        for env in container.get("env") or []:
            if env.get("name") == name:
                value = env.get("value")
                return value if isinstance(value, str) else None
    return None
