"""What the pull metrics observe, behind a small port: the logic never calls GitHub itself.

The hook implements `ActivitySource` over the GitHub port (and its knowledge of the target's
runners); `RecordedActivity` holds answers fetched beforehand, for tests and replays. Each
method is called only when a configured metric needs it, and only for the runs it needs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from hooks.github.port import WorkflowJob, WorkflowRun

__all__ = [
    "COMPLETED",
    "IN_PROGRESS",
    "QUEUED",
    "ActivitySource",
    "RecordedActivity",
    "WorkflowJob",
    "WorkflowRun",
]

QUEUED = "queued"
IN_PROGRESS = "in_progress"
COMPLETED = "completed"


class ActivitySource(Protocol):
    def busy_runners(self) -> int:
        """Runners of the scale target that are busy: its registered runners GitHub reports
        busy, plus its pods whose unregistration failed (ARC counts those as busy too)."""
        ...

    def workflow_runs(self, repository: str, status: str) -> Sequence[WorkflowRun]:
        """The runs of `owner/name` listed with this status filter (`queued`, `in_progress`).
        A run's own status is what counts: a listing may hold runs that moved on since."""
        ...

    def workflow_jobs(self, repository: str, run_id: int) -> Sequence[WorkflowJob]:
        """Every job of a run (all pages)."""
        ...


@dataclass(frozen=True)
class RecordedActivity:
    busy: int = 0
    runs: Mapping[tuple[str, str], Sequence[WorkflowRun]] = field(default_factory=dict)
    jobs: Mapping[tuple[str, int], Sequence[WorkflowJob]] = field(default_factory=dict)

    def busy_runners(self) -> int:
        return self.busy

    def workflow_runs(self, repository: str, status: str) -> Sequence[WorkflowRun]:
        return self.runs.get((repository, status), ())

    def workflow_jobs(self, repository: str, run_id: int) -> Sequence[WorkflowJob]:
        return self.jobs.get((repository, run_id), ())
