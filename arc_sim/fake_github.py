"""A fake GitHub for tests and the simulated world: its state plus GitHub's REST API over it.

    github = FakeGitHub(ManualClock())
    github.add_personal_access_token("ghp_test")
    client = TestClient(github.app, headers={"Authorization": "token ghp_test"})

`app` serves the API at the root (as api.github.com) and under /api/v3 (as GitHub Enterprise
Server); `serve_loopback(github.app)` puts it on real HTTP for clients such as PyGithub, and
`arc_sim.github_port.InProcessGitHub` calls the same pipeline (`api.handle`) with no HTTP at
all. The state methods (`GitHubState`) play the other side: what runners do when they register,
connect, take jobs and remove themselves, and workflows queueing jobs.

It is the one fake GitHub of the tests too: the controller tests' port (tests/in_memory_github.py)
keeps its runners and tokens here and only scripts answers on top.
"""

from __future__ import annotations

from starlette.applications import Starlette

from arc_sim.github_api import GitHubApi, build_app
from arc_sim.github_jobs import JobEvent, JobSummary, JobTaker, SimJob, WorkflowRun
from arc_sim.github_state import (
    DEFAULT_RUNNER_GROUP_ID,
    IMPLICIT_LABELS,
    AuthenticationError,
    Caller,
    FakeGitHubError,
    FaultKnobs,
    GitHubState,
    InvalidJitConfigError,
    InvalidTokenError,
    IssuedToken,
    NameTakenError,
    NotFoundError,
    RateBudget,
    RequestRecord,
    RunnerBusyError,
    RunnerGroup,
    RunnerLabel,
    RunnerRecord,
)
from hooks.clock import Clock

__all__ = [
    "DEFAULT_RUNNER_GROUP_ID",
    "IMPLICIT_LABELS",
    "AuthenticationError",
    "Caller",
    "FakeGitHub",
    "FakeGitHubError",
    "FaultKnobs",
    "InvalidJitConfigError",
    "InvalidTokenError",
    "IssuedToken",
    "JobEvent",
    "JobSummary",
    "JobTaker",
    "NameTakenError",
    "NotFoundError",
    "RateBudget",
    "RequestRecord",
    "RunnerBusyError",
    "RunnerGroup",
    "RunnerLabel",
    "RunnerRecord",
    "SimJob",
    "WorkflowRun",
]


class FakeGitHub(GitHubState):
    """GitHub's runner API, runner groups, tokens, workflow jobs and rate limits, on an
    injected clock."""

    def __init__(
        self,
        clock: Clock,
        *,
        token_ttl_seconds: float = 3600,
        rate_limit_per_hour: int = 5000,
        seed: int = 0,
    ) -> None:
        super().__init__(
            clock,
            token_ttl_seconds=token_ttl_seconds,
            rate_limit_per_hour=rate_limit_per_hour,
            seed=seed,
        )
        # One request pipeline; the ASGI app and the in-process port both go through it.
        self.api = GitHubApi(self)
        self.app: Starlette = build_app(self.api)
