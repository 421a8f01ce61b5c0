"""The in-process GitHub port: the PyGithub adapter's answers, without HTTP.

The parity test runs one script against the PyGithub adapter over loopback and against the
in-process port, each on a fresh fake with the same seed, and requires the same results, errors,
messages and request log. The port's contract, case by case, is checked for both implementations
in tests/test_github_port_contract.py; here only what is the in-process port's own: the parity,
its use under `CachedGitHub`, and its speed.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import partial
from typing import Any

import pytest
from github import Auth

from arc_sim.fake_github import FakeGitHub
from arc_sim.github_port import InProcessGitHub
from arc_sim.loopback import serve_loopback
from hooks.clock import ManualClock
from hooks.github.cached import CachedGitHub
from hooks.github.port import (
    GitHubError,
    GitHubPort,
    RateLimitedError,
    RemoveOutcome,
    RemoveResult,
    Scope,
)
from hooks.github.pygithub_adapter import PyGithubAdapter
from hooks.settings import Settings

PAT = "ghp_" + "InPr0cess" * 4
REPO = Scope(repository="acme/app")
ORG = Scope(organization="acme")
ENTERPRISE = Scope(enterprise="acme-corp")
SCOPES = [REPO, ORG, ENTERPRISE]


def new_fake(clock: ManualClock, **kwargs: Any) -> FakeGitHub:
    fake = FakeGitHub(clock, **kwargs)
    fake.add_personal_access_token(PAT)
    return fake


@pytest.fixture
def fake(clock: ManualClock) -> FakeGitHub:
    return new_fake(clock)


def register(fake: FakeGitHub, scope: Scope, count: int) -> list[int]:
    token = fake.create_registration_token(scope).value
    return [fake.register_runner(scope, f"runner-{i}", ["k8s"], token).id for i in range(count)]


# The same script, two ports


def outcome(call: Callable[[], object]) -> object:
    """What a port call gave, in a form two ports' answers can be compared in."""
    try:
        return ("ok", call())
    except RateLimitedError as exc:
        return (type(exc).__name__, exc.status, str(exc), exc.retry_after)
    except GitHubError as exc:
        return (type(exc).__name__, exc.status, str(exc))


def script(port: GitHubPort, fake: FakeGitHub, clock: ManualClock) -> list[object]:
    results: list[object] = []
    for scope in SCOPES:
        ids = register(fake, scope, 120)
        results.append(outcome(partial(port.list_runners, scope)))
        results.append(outcome(partial(port.registration_token, scope)))
        jit = partial(port.generate_jit_config, scope, "jit-a", ["k8s"], 1, "_w")
        results += [outcome(jit), outcome(jit)]  # the second is a conflict
        results.append(outcome(partial(port.generate_jit_config, scope, "b", [], 1, "_w")))
        fake.set_online(scope, ids[1])
        fake.set_busy(scope, ids[1], True)
        for runner_id in (ids[0], ids[0], ids[1]):
            results.append(port.remove_runner(scope, runner_id))
        fake.fail_next(status=500, method="DELETE")
        results.append(port.remove_runner(scope, ids[2]))
        fake.fail_next(status=403, method="DELETE")
        results.append(port.remove_runner(scope, ids[2]))
        fake.fail_next(status=502, method="GET")
        results.append(outcome(partial(port.list_runners, scope)))
    for i in range(110):
        fake.add_runner_group(ORG, f"group-{i}")
    for name in ("group-105", "GROUP-7", "", "Default", "missing"):
        results.append(outcome(partial(port.runner_group_id, ORG, name)))
    results.append(outcome(partial(port.runner_group_id, REPO, "gpu")))
    results += workflow_script(port, fake)
    fake.impose_secondary_rate_limit(120, status=429)
    results.append(port.remove_runner(ORG, 999))
    results.append(outcome(partial(port.registration_token, ORG)))
    clock.advance(120)
    results.append(port.remove_runner(ORG, 999))
    return results


def workflow_script(port: GitHubPort, fake: FakeGitHub) -> list[object]:
    """Runs, jobs and visible runner groups: more than a page of each, and a 404."""
    repository = REPO.repository
    run_id = fake.submit_job(repository, ["gpu"], 60).run_id
    for i in range(60):
        fake.submit_job(repository, ["gpu"], 60, run_id=run_id, job_name=f"job-{i}")
    for _ in range(110):
        fake.submit_job(repository, ["gpu"], 60)
    token = fake.create_registration_token(REPO).value
    gpu = fake.register_runner(REPO, "gpu-runner", ["gpu"], token)
    fake.set_online(REPO, gpu.id)  # takes the oldest job: its run is in progress
    fake.set_enterprise_of("acme", "acme-corp")
    fake.add_runner_group(ORG, "deploy", visibility="selected", selected_repositories=["acme/x"])
    fake.add_runner_group(ENTERPRISE, "shared")
    calls: list[Callable[[], object]] = [
        partial(port.list_workflow_runs, repository, "queued"),
        partial(port.list_workflow_runs, repository, "in_progress"),
        partial(port.list_workflow_jobs, repository, run_id),
        partial(port.list_workflow_jobs, repository, 999),
        partial(port.visible_runner_groups, "acme", "app"),
        partial(port.visible_runner_groups, "acme", "x"),
    ]
    return [outcome(call) for call in calls]


def request_log(fake: FakeGitHub) -> list[tuple[str, str | None, str, int, str]]:
    return [(r.method, r.route, r.path, r.status, r.caller) for r in fake.requests]


def test_same_answers_as_the_pygithub_adapter_over_http() -> None:
    http_clock, local_clock = ManualClock(), ManualClock()
    http_fake, local_fake = new_fake(http_clock), new_fake(local_clock)
    with serve_loopback(http_fake.app) as url:
        adapter = PyGithubAdapter(auth=Auth.Token(PAT), clock=http_clock, base_url=url)
        try:
            over_http = script(adapter, http_fake, http_clock)
        finally:
            adapter.close()
    in_process = script(InProcessGitHub(local_fake, PAT, local_clock), local_fake, local_clock)

    assert in_process == over_http
    assert request_log(local_fake) == request_log(http_fake)
    # The script did reach every outcome it means to compare.
    outcomes = {r.outcome for r in in_process if isinstance(r, RemoveResult)}
    assert outcomes == set(RemoveOutcome)
    kinds = {r[0] for r in in_process if isinstance(r, tuple)}
    assert kinds == {"ok", "ConflictError", "GitHubError", "RateLimitedError"}


# Under the cache


def test_cached_like_the_real_adapter(fake: FakeGitHub, clock: ManualClock) -> None:
    settings = Settings.model_validate({"GITHUB_TOKEN": PAT})
    github = CachedGitHub(InProcessGitHub(fake, PAT, clock), settings, clock)
    register(fake, ORG, 3)
    assert len(github.list_runners(ORG)) == len(github.list_runners(ORG)) == 3
    assert fake.count_requests("GET", "/orgs/{org}/actions/runners") == 1
    run_id = fake.submit_job("acme/app", ["gpu"], 60).run_id
    for _ in range(2):
        assert len(github.list_workflow_runs("acme/app", "queued")) == 1
        assert len(github.list_workflow_jobs("acme/app", run_id)) == 1
        assert len(github.visible_runner_groups("acme", "app")) == 1
    assert fake.request_counts() == {
        "GET /orgs/{org}/actions/runners": 1,
        "GET /repos/{owner}/{repo}/actions/runs": 1,
        "GET /repos/{owner}/{repo}/actions/runs/{run_id}/jobs": 1,
        "GET /orgs/{org}/actions/runner-groups": 1,
    }


# Speed


@contextmanager
def stopwatch() -> Iterator[list[float]]:
    elapsed: list[float] = []
    start = time.perf_counter()
    yield elapsed
    elapsed.append(time.perf_counter() - start)


def test_in_process_calls_are_much_cheaper_than_http(fake: FakeGitHub, clock: ManualClock) -> None:
    """Not a timed assertion: both sides are measured here, on the same machine and moment."""
    register(fake, ORG, 20)
    port = InProcessGitHub(fake, PAT, clock)
    in_process_calls, http_calls = 1000, 50
    with stopwatch() as local:
        for _ in range(in_process_calls):
            port.list_runners(ORG)
    with serve_loopback(fake.app) as url:
        adapter = PyGithubAdapter(auth=Auth.Token(PAT), clock=clock, base_url=url)
        adapter.list_runners(ORG)  # connect once
        with stopwatch() as http:
            for _ in range(http_calls):
                adapter.list_runners(ORG)
        adapter.close()
    per_local = local[0] / in_process_calls
    per_http = http[0] / http_calls
    print(
        f"\nlist_runners: in-process {per_local * 1e6:.0f} us/call, "
        f"PyGithub over loopback {per_http * 1e6:.0f} us/call ({per_http / per_local:.0f}x)"
    )
    assert per_local < per_http
