"""The GitHub port for controller tests: the fake GitHub in process, with scripted answers on top
and every call recorded.

Runners, registration tokens, JIT configs and runner groups live in the one fake GitHub state
(`arc_sim.fake_github.FakeGitHub`), and the port calls go through its request pipeline with
`arc_sim.github_port.InProcessGitHub`: the same answers the PyGithub adapter gets from it (see
tests/test_github_port_contract.py). Only the scripts are kept here: answers a test queues
(`remove_answers`, `workflow_runs`, `workflow_jobs`, `visible_groups`), errors it injects
(`list_error`, `token_error`) and the record of calls (`calls`).
"""

from __future__ import annotations

from collections.abc import Iterator, MutableMapping, Sequence
from dataclasses import replace
from datetime import datetime, timedelta

from arc_sim.fake_github import FakeGitHub
from arc_sim.github_port import InProcessGitHub
from hooks.clock import Clock
from hooks.github.port import (
    DEFAULT_RUNNER_GROUP_ID,
    GitHubError,
    GitHubPort,
    GitHubRunner,
    JitConfig,
    RateLimitedError,
    RegistrationToken,
    RemoveResult,
    RunnerGroupInfo,
    Scope,
    WorkflowJob,
    WorkflowRun,
)

# What every organization has, visible to all its repositories.
DEFAULT_GROUP = RunnerGroupInfo(DEFAULT_RUNNER_GROUP_ID, "Default", default=True)

TOKEN = "ghp_" + "InMemory0" * 4
# Its own label on the GitHub call metrics, apart from the real adapter's ("default").
CREDENTIALS = "in-memory"
# No budget a test could use up: rate limits are injected as errors instead.
RATE_LIMIT_PER_HOUR = 1_000_000_000


class RunnersView(MutableMapping[Scope, list[GitHubRunner]]):
    """The fake GitHub's runners per scope, as a dict a test may read and change.

    Setting a scope's list sets its runners' status and busy flag and unregisters those left
    out; other changes, and runners GitHub does not have, are refused.
    """

    def __init__(self, fake: FakeGitHub) -> None:
        self._fake = fake

    def __getitem__(self, scope: Scope) -> list[GitHubRunner]:
        return self._fake.runners(scope)

    def __setitem__(self, scope: Scope, runners: list[GitHubRunner]) -> None:
        fake = self._fake
        with fake.atomic():
            current = {r.id: r for r in fake.runners(scope)}
            for runner in runners:
                known = current.pop(runner.id, None)
                if known is None or replace(runner, status=known.status, busy=known.busy) != known:
                    raise ValueError(
                        f"{runner} is not a runner of {scope} with a new status or busy flag: "
                        "register runners with InMemoryGitHub.register"
                    )
                fake.set_runner_status(scope, runner.id, status=runner.status, busy=runner.busy)
            for runner_id in current:
                _drop(fake, scope, runner_id)

    def __delitem__(self, scope: Scope) -> None:
        if not self[scope]:
            raise KeyError(scope)
        self[scope] = []

    def __iter__(self) -> Iterator[Scope]:
        seen: dict[Scope, None] = {}
        for record in self._fake.runner_records():
            seen.setdefault(record.scope, None)
        return iter(seen)

    def __len__(self) -> int:
        return sum(1 for _ in self)

    def __contains__(self, scope: object) -> bool:
        return isinstance(scope, Scope) and bool(self._fake.runner_records(scope))


def _drop(fake: FakeGitHub, scope: Scope, runner_id: int) -> None:
    """The runner unregisters itself, busy or not (its job is over as far as GitHub knows)."""
    with fake.atomic():
        fake.set_runner_status(scope, runner_id, busy=False)
        fake.unregister_runner(scope, runner_id)


class InMemoryGitHub(GitHubPort):
    def __init__(
        self,
        clock: Clock,
        runners: dict[Scope, list[GitHubRunner]] | None = None,
        calls: list[tuple[str, str]] | None = None,
        remove_answers: list[RemoveResult] | None = None,
        list_error: GitHubError | None = None,
        token_error: GitHubError | None = None,
        jit_error: GitHubError | None = None,
        next_id: int = 100,
        tokens_issued: int = 0,
        # Set by tests: runs per (repository, status filter), jobs per (repository, run id), and
        # the runner groups per (organization, repository name). Where none is set, the fake
        # GitHub answers: no runs, a 404 for a run it does not have, the Default group.
        workflow_runs: dict[tuple[str, str], list[WorkflowRun]] | None = None,
        workflow_jobs: dict[tuple[str, int], list[WorkflowJob]] | None = None,
        visible_groups: dict[tuple[str, str], list[RunnerGroupInfo]] | None = None,
    ) -> None:
        self.clock = clock
        # The one fake GitHub state, and the port on it.
        self.fake = FakeGitHub(clock, rate_limit_per_hour=RATE_LIMIT_PER_HOUR)
        self.fake.add_personal_access_token(TOKEN)
        self.port = InProcessGitHub(self.fake, TOKEN, clock, credentials=CREDENTIALS)
        self.calls: list[tuple[str, str]] = [] if calls is None else calls
        self.remove_answers: list[RemoveResult] = [] if remove_answers is None else remove_answers
        self.list_error = list_error
        self.token_error = token_error
        self.jit_error = jit_error
        self.tokens_issued = tokens_issued
        self.workflow_runs = {} if workflow_runs is None else workflow_runs
        self.workflow_jobs = {} if workflow_jobs is None else workflow_jobs
        self.visible_groups = {} if visible_groups is None else visible_groups
        self.runners: MutableMapping[Scope, list[GitHubRunner]] = RunnersView(self.fake)
        # Runners given here keep their ids (in increasing order: GitHub never reuses one).
        given = [(runner, scope) for scope, listed in (runners or {}).items() for runner in listed]
        for runner, scope in sorted(given, key=lambda pair: pair[0].id):
            self.next_id = runner.id - 1
            self.register(scope, runner.name, busy=runner.busy, online=runner.online)
        if next_id > self.next_id:
            self.next_id = next_id

    @property
    def next_id(self) -> int:
        """The id of the last runner registered; the next one gets the one after it."""
        return self.fake.next_runner_id - 1

    @next_id.setter
    def next_id(self, value: int) -> None:
        self.fake.skip_runner_ids(value + 1)

    # --- the other side: runners registering, connecting, taking jobs and leaving

    def register(self, scope: Scope, name: str, *, busy: bool = False, online: bool = True) -> int:
        """What `config.sh` does, then the runner connecting (`online`) and taking a job."""
        fake = self.fake
        with fake.atomic():
            token = fake.create_registration_token(scope).value
            runner = fake.register_runner(scope, name, [], token)
            if online:
                fake.set_online(scope, runner.id)
            if busy:
                fake.set_runner_status(scope, runner.id, busy=True)
        return runner.id

    def set_busy(self, scope: Scope, name: str, busy: bool) -> None:
        for runner in self._named(scope, name):
            self.fake.set_runner_status(scope, runner.id, busy=busy)

    def unregister(self, scope: Scope, name: str) -> None:
        for runner in self._named(scope, name):
            _drop(self.fake, scope, runner.id)

    def count(self, method: str) -> int:
        return sum(1 for m, _ in self.calls if m == method)

    def _named(self, scope: Scope, name: str) -> list[GitHubRunner]:
        return [r for r in self.fake.runners(scope) if r.name == name]

    # --- the port

    def list_runners(
        self, scope: Scope, *, not_before: datetime | None = None
    ) -> Sequence[GitHubRunner]:
        self.calls.append(("list_runners", str(scope)))
        if self.list_error is not None:
            raise self.list_error
        return self.port.list_runners(scope)

    def runners_named(
        self, scope: Scope, name: str, *, not_before: datetime | None = None
    ) -> Sequence[GitHubRunner]:
        self.calls.append(("runners_named", str(scope)))
        if self.list_error is not None:
            raise self.list_error
        return self.port.runners_named(scope, name)

    def registration_token(self, scope: Scope) -> RegistrationToken:
        self.calls.append(("registration_token", str(scope)))
        if self.token_error is not None:
            raise self.token_error
        self.tokens_issued += 1
        # Numbered rather than random, so a test can look for every token it was given.
        value = f"AABBCCTOKEN{self.tokens_issued:04d}"
        issued = self.fake.create_registration_token(scope, value=value)
        return RegistrationToken(token=issued.value, expires_at=issued.expires_at)

    def generate_jit_config(
        self,
        scope: Scope,
        name: str,
        labels: Sequence[str],
        runner_group_id: int,
        work_folder: str,
    ) -> JitConfig:
        self.calls.append(("generate_jit_config", str(scope)))
        if self.jit_error is not None:
            raise self.jit_error
        return self.port.generate_jit_config(scope, name, labels, runner_group_id, work_folder)

    def runner_group_id(self, scope: Scope, group_name: str) -> int:
        self.calls.append(("runner_group_id", str(scope)))
        try:
            return self.port.runner_group_id(scope, group_name)
        except GitHubError as error:
            if error.status != 404:
                raise
        # Every group a test names exists: the first lookup creates it.
        return self.fake.add_runner_group(scope, group_name).id

    def remove_runner(
        self, scope: Scope, runner_id: int, *, not_before: datetime | None = None
    ) -> RemoveResult:
        self.calls.append(("remove_runner", str(scope)))
        if self.remove_answers:
            return self.remove_answers.pop(0)
        return self.port.remove_runner(scope, runner_id)

    def list_workflow_runs(self, repository: str, status: str) -> Sequence[WorkflowRun]:
        self.calls.append(("list_workflow_runs", repository))
        scripted = self.workflow_runs.get((repository, status))
        if scripted is not None:
            return list(scripted)
        return self.port.list_workflow_runs(repository, status)

    def list_workflow_jobs(self, repository: str, run_id: int) -> Sequence[WorkflowJob]:
        self.calls.append(("list_workflow_jobs", repository))
        scripted = self.workflow_jobs.get((repository, run_id))
        if scripted is not None:
            return list(scripted)
        return self.port.list_workflow_jobs(repository, run_id)

    def visible_runner_groups(
        self, organization: str, repository_name: str
    ) -> Sequence[RunnerGroupInfo]:
        self.calls.append(("visible_runner_groups", organization))
        scripted = self.visible_groups.get((organization, repository_name))
        if scripted is not None:
            return list(scripted)
        return self.port.visible_runner_groups(organization, repository_name)


def rate_limited(seconds: float) -> RateLimitedError:
    return RateLimitedError("API rate limit exceeded", retry_after=seconds, status=403)


def at(clock: Clock, seconds: float) -> datetime:
    return clock.now() + timedelta(seconds=seconds)
