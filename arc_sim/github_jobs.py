"""Workflow runs and jobs of the fake GitHub, and GitHub's rule for which runner may take a job.

Plain data and bookkeeping with no HTTP and no runners in it: `GitHubState` owns a `JobBook`
and does the assignment, since that changes runners and jobs together under its lock.
"""

from __future__ import annotations

import hashlib
import statistics
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Literal, Protocol

from hooks.github.port import Scope

JobStatus = Literal["queued", "in_progress", "completed"]
JobConclusion = Literal["success", "failure"]
JobAction = Literal["queued", "in_progress", "completed"]

DEFAULT_WORKFLOW = "CI"
DEFAULT_JOB_NAME = "build"
DEFAULT_BRANCH = "main"


@dataclass(frozen=True)
class SimJob:
    """A workflow job as GitHub stores it. Frozen: each transition stores a new value, so a job
    handed to a runner agent or a webhook is a snapshot of that moment."""

    id: int
    run_id: int
    repository: str  # "owner/name"
    labels: tuple[str, ...]  # runs-on
    duration_seconds: float
    queued_at: datetime  # the job's created_at
    name: str = DEFAULT_JOB_NAME
    workflow_name: str = DEFAULT_WORKFLOW
    head_branch: str = DEFAULT_BRANCH
    head_sha: str = ""
    run_attempt: int = 1
    status: JobStatus = "queued"
    conclusion: JobConclusion | None = None
    runner_id: int | None = None
    runner_name: str | None = None
    runner_group_id: int | None = None
    runner_group_name: str | None = None
    runner_scope: Scope | None = None
    started_at: datetime | None = None
    completed_at: datetime | None = None
    interrupted: bool = False

    @property
    def owner(self) -> str:
        return self.repository.partition("/")[0]

    @property
    def queue_seconds(self) -> float | None:
        if self.started_at is None:
            return None
        return (self.started_at - self.queued_at).total_seconds()


@dataclass(frozen=True)
class WorkflowRun:
    id: int
    repository: str
    workflow_id: int
    workflow_name: str
    run_number: int
    head_branch: str
    head_sha: str
    created_at: datetime
    job_ids: tuple[int, ...] = ()
    event: str = "push"
    run_attempt: int = 1

    @property
    def path(self) -> str:
        slug = "".join(c if c.isalnum() else "-" for c in self.workflow_name.lower()).strip("-")
        return f".github/workflows/{slug or 'workflow'}.yml"


@dataclass(frozen=True)
class JobEvent:
    """A change GitHub announces with a `workflow_job` webhook."""

    action: JobAction
    job: SimJob


class JobTaker(Protocol):
    """What a runner process does when GitHub talks to it.

    The simulated runner agent (`arc_sim.runner_agent`) implements it; it is defined here, next
    to `SimJob`, so the runner agent can import both without an import cycle.
    """

    def assign(self, job: SimJob) -> None:
        """GitHub gave this runner `job`; it is in progress from now on."""
        ...

    def removed(self) -> None:
        """The runner's registration was deleted through the REST API."""
        ...


@dataclass(frozen=True)
class JobSummary:
    """The numbers a simulation reports about jobs and registrations."""

    submitted: int
    completed: int  # successfully
    interrupted: int
    in_progress: int
    waiting: int  # still queued
    queue_seconds_p50: float
    queue_seconds_max: float
    runners_registered_peak: int
    runners_registered_now: int  # registrations left, at the end of a run


# GitHub's rule for who may take a job


def covers(scope: Scope, repository: str, enterprise_of: Callable[[str], str | None]) -> bool:
    """Whether runners registered in `scope` may run jobs of `repository`.

    A repository runner serves its repository, an organization runner every repository of the
    organization, an enterprise runner every repository of the enterprise's organizations.
    Names are case-insensitive on GitHub.
    """
    owner = repository.partition("/")[0].casefold()
    if scope.repository:
        return scope.repository.casefold() == repository.casefold()
    if scope.organization:
        return scope.organization.casefold() == owner
    enterprise = enterprise_of(owner)
    return enterprise is not None and enterprise.casefold() == scope.enterprise.casefold()


def labels_match(runner_labels: Iterable[str], job_labels: Iterable[str]) -> bool:
    """Every label the job asks for is one of the runner's (case-insensitive)."""
    have = {label.casefold() for label in runner_labels}
    return all(label.casefold() in have for label in job_labels)


# Bookkeeping


class JobBook:
    """Runs and jobs, the queue in submission order, and the numbers for the summary.

    Not thread-safe on its own: `GitHubState` calls it under its lock.
    """

    def __init__(self) -> None:
        self._jobs: dict[int, SimJob] = {}
        self._runs: dict[int, WorkflowRun] = {}
        # Queued job ids, oldest first: virtual time only moves forward, so submission order is
        # queue order (a dict keeps insertion order and removes in O(1)).
        self._queued: dict[int, None] = {}
        self._workflow_ids: dict[tuple[str, str], int] = {}
        self._run_numbers: dict[str, int] = {}
        self._next_job_id = 1
        self._next_run_id = 1

    # Changes

    def submit(
        self,
        repository: str,
        labels: Sequence[str],
        duration_seconds: float,
        now: datetime,
        *,
        name: str,
        workflow_name: str,
        head_branch: str,
        run_id: int | None,
    ) -> SimJob:
        if "/" not in repository.strip("/"):
            raise ValueError(f"repository {repository!r} is not owner/name")
        if duration_seconds < 0:
            raise ValueError("a job cannot last a negative time")
        run = self._run_for(repository, workflow_name, head_branch, now, run_id)
        job = SimJob(
            id=self._next_job_id,
            run_id=run.id,
            repository=run.repository,
            labels=tuple(labels),
            duration_seconds=duration_seconds,
            queued_at=now,
            name=name,
            workflow_name=run.workflow_name,
            head_branch=run.head_branch,
            head_sha=run.head_sha,
            run_attempt=run.run_attempt,
        )
        self._next_job_id += 1
        self._jobs[job.id] = job
        self._runs[run.id] = replace(run, job_ids=(*run.job_ids, job.id))
        self._queued[job.id] = None
        return job

    def store(self, job: SimJob) -> None:
        self._jobs[job.id] = job
        if job.status == "queued":
            self._queued.setdefault(job.id, None)
        else:
            self._queued.pop(job.id, None)

    # Reads

    def job(self, job_id: int) -> SimJob:
        return self._jobs[job_id]

    def jobs(self) -> list[SimJob]:
        return list(self._jobs.values())

    def queued_ids(self) -> Iterator[int]:
        """Queued jobs, oldest first: their ids, not copied while thousands wait (store no job
        while going through them)."""
        return iter(self._queued)

    def has_queued(self) -> bool:
        return bool(self._queued)

    def run(self, run_id: int) -> WorkflowRun:
        return self._runs[run_id]

    def runs(self, repository: str | None = None) -> list[WorkflowRun]:
        if repository is None:
            return list(self._runs.values())
        return [r for r in self._runs.values() if r.repository.casefold() == repository.casefold()]

    def jobs_of(self, run: WorkflowRun) -> list[SimJob]:
        return [self._jobs[job_id] for job_id in run.job_ids]

    def run_state(self, run: WorkflowRun) -> tuple[JobStatus, JobConclusion | None]:
        """A run is queued until a job starts and completed when all are; one failure fails it."""
        jobs = self.jobs_of(run)
        if all(j.status == "completed" for j in jobs):
            failed = any(j.conclusion == "failure" for j in jobs)
            return "completed", "failure" if failed else "success"
        if all(j.status == "queued" for j in jobs):
            return "queued", None
        return "in_progress", None

    def run_updated_at(self, run: WorkflowRun) -> datetime:
        times = [run.created_at]
        for job in self.jobs_of(run):
            times += [t for t in (job.started_at, job.completed_at) if t is not None]
        return max(times)

    def summary(self, now: datetime, registered_peak: int, registered_now: int) -> JobSummary:
        """Queue times count started jobs, and jobs still waiting with their wait so far: a job
        that never starts must show in the numbers rather than vanish from them."""
        jobs = self._jobs.values()
        waits = [
            job.queue_seconds
            if job.queue_seconds is not None
            else (now - job.queued_at).total_seconds()
            for job in jobs
        ]
        return JobSummary(
            submitted=len(self._jobs),
            completed=sum(1 for j in jobs if j.status == "completed" and not j.interrupted),
            interrupted=sum(1 for j in jobs if j.interrupted),
            in_progress=sum(1 for j in jobs if j.status == "in_progress"),
            waiting=len(self._queued),
            queue_seconds_p50=statistics.median(waits) if waits else 0.0,
            queue_seconds_max=max(waits, default=0.0),
            runners_registered_peak=registered_peak,
            runners_registered_now=registered_now,
        )

    # Internals

    def _run_for(
        self,
        repository: str,
        workflow_name: str,
        head_branch: str,
        now: datetime,
        run_id: int | None,
    ) -> WorkflowRun:
        if run_id is not None and run_id in self._runs:
            run = self._runs[run_id]
            if run.repository.casefold() != repository.casefold():
                raise ValueError(f"run {run_id} belongs to {run.repository}, not {repository}")
            return run
        if run_id is None:
            run_id = self._next_run_id
        self._next_run_id = max(self._next_run_id, run_id + 1)
        key = (repository.casefold(), workflow_name)
        workflow_id = self._workflow_ids.setdefault(key, len(self._workflow_ids) + 1)
        run_number = self._run_numbers.get(repository.casefold(), 0) + 1
        self._run_numbers[repository.casefold()] = run_number
        run = WorkflowRun(
            id=run_id,
            repository=repository,
            workflow_id=workflow_id,
            workflow_name=workflow_name,
            run_number=run_number,
            head_branch=head_branch,
            # A commit per run, deterministic.
            head_sha=hashlib.sha1(f"{repository}#{run_id}".encode()).hexdigest(),
            created_at=now,
        )
        self._runs[run.id] = run
        return run
