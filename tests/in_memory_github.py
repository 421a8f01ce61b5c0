"""An in-memory GitHub port for controller tests: scripted answers, every call recorded."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta

from hooks.clock import Clock
from hooks.github.port import (
    DEFAULT_RUNNER_GROUP_ID,
    ConflictError,
    GitHubError,
    GitHubRunner,
    JitConfig,
    RateLimitedError,
    RegistrationToken,
    RemoveOutcome,
    RemoveResult,
    RunnerGroupInfo,
    Scope,
    WorkflowJob,
    WorkflowRun,
)

# What every organization has, visible to all its repositories.
DEFAULT_GROUP = RunnerGroupInfo(DEFAULT_RUNNER_GROUP_ID, "Default", default=True)


@dataclass
class InMemoryGitHub:
    clock: Clock
    runners: dict[Scope, list[GitHubRunner]] = field(default_factory=dict)
    calls: list[tuple[str, str]] = field(default_factory=list)
    remove_answers: list[RemoveResult] = field(default_factory=list)
    list_error: GitHubError | None = None
    token_error: GitHubError | None = None
    next_id: int = 100
    tokens_issued: int = 0
    # Set by tests: runs per (repository, status filter), jobs per (repository, run id), and
    # the runner groups per (organization, repository name); the Default group when unset.
    workflow_runs: dict[tuple[str, str], list[WorkflowRun]] = field(default_factory=dict)
    workflow_jobs: dict[tuple[str, int], list[WorkflowJob]] = field(default_factory=dict)
    visible_groups: dict[tuple[str, str], list[RunnerGroupInfo]] = field(default_factory=dict)

    def register(self, scope: Scope, name: str, *, busy: bool = False, online: bool = True) -> int:
        self.next_id += 1
        runner = GitHubRunner(
            id=self.next_id, name=name, status="online" if online else "offline", busy=busy
        )
        self.runners.setdefault(scope, []).append(runner)
        return runner.id

    def set_busy(self, scope: Scope, name: str, busy: bool) -> None:
        self.runners[scope] = [
            replace(r, busy=busy) if r.name == name else r for r in self.runners.get(scope, [])
        ]

    def unregister(self, scope: Scope, name: str) -> None:
        self.runners[scope] = [r for r in self.runners.get(scope, []) if r.name != name]

    def count(self, method: str) -> int:
        return sum(1 for m, _ in self.calls if m == method)

    # --- the port

    def list_runners(
        self, scope: Scope, *, not_before: datetime | None = None
    ) -> Sequence[GitHubRunner]:
        self.calls.append(("list_runners", str(scope)))
        if self.list_error is not None:
            raise self.list_error
        return list(self.runners.get(scope, []))

    def registration_token(self, scope: Scope) -> RegistrationToken:
        self.calls.append(("registration_token", str(scope)))
        if self.token_error is not None:
            raise self.token_error
        self.tokens_issued += 1
        return RegistrationToken(
            token=f"AABBCCTOKEN{self.tokens_issued:04d}",
            expires_at=self.clock.now() + timedelta(hours=1),
        )

    def generate_jit_config(
        self,
        scope: Scope,
        name: str,
        labels: Sequence[str],
        runner_group_id: int,
        work_folder: str,
    ) -> JitConfig:
        self.calls.append(("generate_jit_config", str(scope)))
        if any(r.name == name for r in self.runners.get(scope, [])):
            raise ConflictError("Already exists", status=409)
        runner_id = self.register(scope, name, online=False)
        runner = next(r for r in self.runners[scope] if r.id == runner_id)
        return JitConfig(runner=runner, encoded_jit_config=f"JITCONFIG-{runner_id}")

    def runner_group_id(self, scope: Scope, group_name: str) -> int:
        self.calls.append(("runner_group_id", str(scope)))
        return 7

    def remove_runner(
        self, scope: Scope, runner_id: int, *, not_before: datetime | None = None
    ) -> RemoveResult:
        self.calls.append(("remove_runner", str(scope)))
        if self.remove_answers:
            return self.remove_answers.pop(0)
        runners = self.runners.get(scope, [])
        found = next((r for r in runners if r.id == runner_id), None)
        if found is None:
            return RemoveResult(RemoveOutcome.NOT_FOUND)
        if found.busy:
            return RemoveResult(
                RemoveOutcome.BUSY,
                message=f'Bad request - Runner "{found.name}" is still running a job',
            )
        self.runners[scope] = [r for r in runners if r.id != runner_id]
        return RemoveResult(RemoveOutcome.REMOVED)

    def list_workflow_runs(self, repository: str, status: str) -> Sequence[WorkflowRun]:
        self.calls.append(("list_workflow_runs", repository))
        return list(self.workflow_runs.get((repository, status), []))

    def list_workflow_jobs(self, repository: str, run_id: int) -> Sequence[WorkflowJob]:
        self.calls.append(("list_workflow_jobs", repository))
        return list(self.workflow_jobs.get((repository, run_id), []))

    def visible_runner_groups(
        self, organization: str, repository_name: str
    ) -> Sequence[RunnerGroupInfo]:
        self.calls.append(("visible_runner_groups", organization))
        return list(self.visible_groups.get((organization, repository_name), [DEFAULT_GROUP]))


def rate_limited(seconds: float) -> RateLimitedError:
    return RateLimitedError("API rate limit exceeded", retry_after=seconds, status=403)


def at(clock: Clock, seconds: float) -> datetime:
    return clock.now() + timedelta(seconds=seconds)
