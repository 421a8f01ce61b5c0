"""A small stand-in for the fake GitHub's job queue, for the runner agent and kubelet tests.

It offers what a runner agent calls (`arc_sim.runner_agent.RunnerGitHub`): registration calls
go to the real `GitHubState`; jobs are queued here and handed, oldest first, to an attached,
online, idle runner with every label the job asks for (an ephemeral runner takes one job only).
The agent is told of a deleted registration (`removed`), as the fake GitHub does.
"""

from __future__ import annotations

import contextlib
import itertools
from collections.abc import Sequence
from typing import Literal

from arc_sim.github_jobs import JobTaker, SimJob
from arc_sim.github_state import (
    DEFAULT_RUNNER_GROUP_ID,
    GitHubState,
    NotFoundError,
    RunnerGroup,
)
from hooks.github.port import GitHubRunner, Scope

Outcome = Literal["queued", "running", "completed", "interrupted"]


class JobBoard:
    def __init__(self, github: GitHubState) -> None:
        self.github = github
        self.jobs: dict[int, SimJob] = {}
        self.outcomes: dict[int, Outcome] = {}
        self.runner_of: dict[int, tuple[Scope, int]] = {}  # job id -> the runner that took it
        self.agents: dict[int, tuple[Scope, JobTaker]] = {}  # runner id -> its process
        self._served_ephemeral: set[int] = set()
        self._ids = itertools.count(1)

    # --- registration, as the runner process calls it

    def register_runner(
        self,
        scope: Scope,
        name: str,
        labels: Sequence[str],
        token: str,
        *,
        replace: bool = False,
        ephemeral: bool = False,
        runner_group_id: int = DEFAULT_RUNNER_GROUP_ID,
        os: str = "Linux",
    ) -> GitHubRunner:
        return self.github.register_runner(
            scope,
            name,
            labels,
            token,
            replace=replace,
            ephemeral=ephemeral,
            runner_group_id=runner_group_id,
            os=os,
        )

    def register_jit(self, encoded_jit_config: str) -> GitHubRunner:
        return self.github.register_jit(encoded_jit_config)

    def runner_groups(
        self, scope: Scope, *, visible_to_repository: str | None = None
    ) -> list[RunnerGroup]:
        return self.github.runner_groups(scope, visible_to_repository=visible_to_repository)

    def set_online(
        self,
        scope: Scope,
        runner_id: int,
        online: bool = True,
        *,
        os: str | None = None,
        version: str = "2.330.0",
    ) -> GitHubRunner:
        return self.github.set_online(scope, runner_id, online, os=os, version=version)

    def unregister_runner(
        self, scope: Scope, runner_id: int, *, remove_token: str | None = None
    ) -> None:
        self.github.unregister_runner(scope, runner_id, remove_token=remove_token)
        self._tell_removed(runner_id)

    def delete_runner(self, scope: Scope, runner_id: int) -> None:
        """The REST DELETE our hooks send."""
        self.github.delete_runner(scope, runner_id)
        self._tell_removed(runner_id)

    # --- the job queue

    def submit(self, labels: Sequence[str] = (), duration_seconds: float = 60.0) -> SimJob:
        job = SimJob(
            id=next(self._ids),
            run_id=1,
            repository="acme/app",
            labels=tuple(labels),
            duration_seconds=duration_seconds,
            queued_at=self.github.clock.now(),
        )
        self.jobs[job.id] = job
        self.outcomes[job.id] = "queued"
        self._dispatch()
        return job

    def attach_agent(self, scope: Scope, runner_id: int, agent: JobTaker) -> None:
        self.agents[runner_id] = (scope, agent)
        self._dispatch()

    def detach_agent(self, scope: Scope, runner_id: int) -> None:
        self.agents.pop(runner_id, None)

    def complete_job(self, job_id: int) -> None:
        self.outcomes[job_id] = "completed"
        self._release(job_id)
        self._dispatch()

    def interrupt_job(self, job_id: int) -> None:
        self.outcomes[job_id] = "interrupted"
        self._release(job_id)

    def count(self, outcome: Outcome) -> int:
        return sum(1 for value in self.outcomes.values() if value == outcome)

    # --- internals

    def _dispatch(self) -> None:
        for job_id, outcome in list(self.outcomes.items()):
            if outcome != "queued":
                continue
            job = self.jobs[job_id]
            for runner_id, (scope, agent) in sorted(self.agents.items()):
                try:
                    record = self.github.runner_record(scope, runner_id)
                except NotFoundError:
                    continue
                if record.status != "online" or record.busy:
                    continue
                if record.ephemeral and runner_id in self._served_ephemeral:
                    continue
                names = {label.name.casefold() for label in record.labels}
                if not all(label.casefold() in names for label in job.labels):
                    continue
                self.github.set_busy(scope, runner_id, True)
                if record.ephemeral:
                    self._served_ephemeral.add(runner_id)
                self.outcomes[job_id] = "running"
                self.runner_of[job_id] = (scope, runner_id)
                agent.assign(job)
                break

    def _release(self, job_id: int) -> None:
        scope, runner_id = self.runner_of[job_id]
        with contextlib.suppress(NotFoundError):
            self.github.set_busy(scope, runner_id, False)

    def _tell_removed(self, runner_id: int) -> None:
        attached = self.agents.pop(runner_id, None)
        if attached is not None:
            attached[1].removed()
