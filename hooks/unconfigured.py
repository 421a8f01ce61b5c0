"""A GitHub port with no usable credentials: every call explains what is missing.

Used for a server started without credentials (`/readyz` then reports not ready) and for a
resource whose `githubAPICredentialsFrom` Secret is missing or unusable. Hooks still answer:
invalid Runners get their conditions, pods are kept, and a removal is retried, never assumed.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import NoReturn

from hooks.github.port import (
    GitHubError,
    GitHubRunner,
    JitConfig,
    RegistrationToken,
    RemoveOutcome,
    RemoveResult,
    RunnerGroupInfo,
    Scope,
    WorkflowJob,
    WorkflowRun,
)

MESSAGE = "no GitHub credentials configured (GITHUB_TOKEN, a GitHub App, or basic auth)"


class UnconfiguredGitHub:
    def __init__(self, message: str = MESSAGE) -> None:
        self.message = message

    def list_runners(
        self, scope: Scope, *, not_before: datetime | None = None
    ) -> Sequence[GitHubRunner]:
        self._fail()

    def runners_named(
        self, scope: Scope, name: str, *, not_before: datetime | None = None
    ) -> Sequence[GitHubRunner]:
        self._fail()

    def registration_token(self, scope: Scope) -> RegistrationToken:
        self._fail()

    def generate_jit_config(
        self,
        scope: Scope,
        name: str,
        labels: Sequence[str],
        runner_group_id: int,
        work_folder: str,
    ) -> JitConfig:
        self._fail()

    def runner_group_id(self, scope: Scope, group_name: str) -> int:
        self._fail()

    def remove_runner(
        self, scope: Scope, runner_id: int, *, not_before: datetime | None = None
    ) -> RemoveResult:
        return RemoveResult(RemoveOutcome.ERROR, message=self.message)

    def list_workflow_runs(self, repository: str, status: str) -> Sequence[WorkflowRun]:
        self._fail()

    def list_workflow_jobs(self, repository: str, run_id: int) -> Sequence[WorkflowJob]:
        self._fail()

    def visible_runner_groups(
        self, organization: str, repository_name: str
    ) -> Sequence[RunnerGroupInfo]:
        self._fail()

    def _fail(self) -> NoReturn:
        raise GitHubError(self.message)
