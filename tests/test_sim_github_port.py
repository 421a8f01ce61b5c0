"""The in-process GitHub port: the PyGithub adapter's answers, without HTTP.

The parity test runs one script against the PyGithub adapter over loopback and against the
in-process port, each on a fresh fake with the same seed, and requires the same results, errors,
messages and request log. The other tests pin the classification the port shares with the
adapter (see tests/test_github_adapter.py for the same cases over HTTP).
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
    ConflictError,
    GitHubError,
    GitHubPort,
    RateLimitedError,
    RemoveOutcome,
    RemoveResult,
    RunnerGroupInfo,
    Scope,
)
from hooks.github.pygithub_adapter import PyGithubAdapter
from hooks.metrics import REGISTRY
from hooks.settings import Settings

PAT = "ghp_" + "InPr0cess" * 4
REPO = Scope(repository="acme/app")
ORG = Scope(organization="acme")
ENTERPRISE = Scope(enterprise="acme-corp")
SCOPES = [REPO, ORG, ENTERPRISE]
SCOPE_IDS = ["repository", "organization", "enterprise"]


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


def new_fake(clock: ManualClock, **kwargs: Any) -> FakeGitHub:
    fake = FakeGitHub(clock, **kwargs)
    fake.add_personal_access_token(PAT)
    return fake


@pytest.fixture
def fake(clock: ManualClock) -> FakeGitHub:
    return new_fake(clock)


@pytest.fixture
def port(fake: FakeGitHub, clock: ManualClock) -> InProcessGitHub:
    return InProcessGitHub(fake, PAT, clock)


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


# The classification, case by case


@pytest.mark.parametrize("scope", SCOPES, ids=SCOPE_IDS)
def test_list_follows_every_page(port: InProcessGitHub, fake: FakeGitHub, scope: Scope) -> None:
    ids = register(fake, scope, 150)
    runners = port.list_runners(scope)
    assert [r.id for r in runners] == ids
    assert set(runners[0].labels) == {"self-hosted", "Linux", "X64", "k8s"}
    assert runners[0].ephemeral is False
    assert [r.method for r in fake.requests] == ["GET", "GET"]  # two pages of 100


def test_token_jit_and_conflict(
    port: InProcessGitHub, fake: FakeGitHub, clock: ManualClock
) -> None:
    token = port.registration_token(REPO)
    assert token.expires_at.timestamp() == clock.now().timestamp() + 3600
    fake.register_runner(REPO, "with-token", [], token.token)

    jit = port.generate_jit_config(ORG, "jit-1", ["k8s", "gpu"], 1, "_work")
    assert fake.register_jit(jit.encoded_jit_config).id == jit.runner.id
    with pytest.raises(ConflictError) as conflict:
        port.generate_jit_config(ORG, "jit-1", ["k8s"], 1, "_work")
    assert conflict.value.status == 409
    assert "jit-1" in str(conflict.value)
    with pytest.raises(GitHubError) as invalid:
        port.generate_jit_config(ORG, "jit-2", [], 1, "_work")
    assert invalid.value.status == 422
    assert not isinstance(invalid.value, ConflictError)


def test_remove_outcomes(port: InProcessGitHub, fake: FakeGitHub) -> None:
    busy, idle, failing = register(fake, ORG, 3)
    fake.set_online(ORG, busy)
    fake.set_busy(ORG, busy, True)
    assert port.remove_runner(ORG, idle).outcome is RemoveOutcome.REMOVED
    gone = port.remove_runner(ORG, idle)
    assert gone.outcome is RemoveOutcome.NOT_FOUND
    assert gone.message == f"remove runner {idle} in /orgs/acme: HTTP 404: Not Found"
    refused = port.remove_runner(ORG, busy)
    assert refused.outcome is RemoveOutcome.BUSY
    assert "is still running a job" in refused.message
    fake.fail_next(status=500, method="DELETE")
    assert port.remove_runner(ORG, failing).outcome is RemoveOutcome.ERROR
    fake.fail_next(status=403, method="DELETE")
    assert port.remove_runner(ORG, failing).outcome is RemoveOutcome.FORBIDDEN
    assert port.remove_runner(ORG, failing).outcome is RemoveOutcome.REMOVED


def test_primary_rate_limit_waits_for_the_reset(clock: ManualClock) -> None:
    fake = new_fake(clock, rate_limit_per_hour=2)
    (runner_id,) = register(fake, ORG, 1)
    port = InProcessGitHub(fake, PAT, clock)
    port.list_runners(ORG)  # the budget's hour starts now
    clock.advance(600)
    port.list_runners(ORG)
    clock.advance(900.5)
    result = port.remove_runner(ORG, runner_id)
    assert result.outcome is RemoveOutcome.RATE_LIMITED
    assert result.retry_after == pytest.approx(3600 - 1500.5)
    with pytest.raises(RateLimitedError) as raised:
        port.list_runners(ORG)
    assert raised.value.retry_after == pytest.approx(3600 - 1500.5)
    assert raised.value.status == 403


@pytest.mark.parametrize("status", [403, 429])
def test_secondary_rate_limit_uses_retry_after(
    port: InProcessGitHub, fake: FakeGitHub, status: int
) -> None:
    fake.impose_secondary_rate_limit(120, status=status)
    result = port.remove_runner(ORG, 1)
    assert (result.outcome, result.retry_after) == (RemoveOutcome.RATE_LIMITED, 120)
    with pytest.raises(RateLimitedError) as raised:
        port.registration_token(ORG)
    assert raised.value.retry_after == 120


def test_bad_credentials_and_no_token_in_messages(fake: FakeGitHub, clock: ManualClock) -> None:
    wrong = InProcessGitHub(fake, "ghp_wrong", clock)
    with pytest.raises(GitHubError) as raised:
        wrong.list_runners(ORG)
    assert raised.value.status == 401
    result = wrong.remove_runner(ORG, 1)
    assert result.outcome is RemoveOutcome.ERROR
    assert "ghp_wrong" not in str(raised.value) + result.message


def test_runner_groups(port: InProcessGitHub, fake: FakeGitHub) -> None:
    for i in range(120):
        fake.add_runner_group(ENTERPRISE, f"group-{i}")
    gpu = fake.add_runner_group(ENTERPRISE, "GPU")
    assert port.runner_group_id(ENTERPRISE, "gpu") == gpu.id
    assert port.runner_group_id(ENTERPRISE, "") == 1
    with pytest.raises(GitHubError) as missing:
        port.runner_group_id(ENTERPRISE, "missing")
    assert missing.value.status == 404
    requests = len(fake.requests)
    assert port.runner_group_id(REPO, "") == 1
    assert len(fake.requests) == requests  # known without asking


def test_workflow_runs_and_jobs(port: InProcessGitHub, fake: FakeGitHub) -> None:
    run_id = 4711
    jobs = [fake.submit_job("acme/app", [f"pool-{i}"], 60, run_id=run_id) for i in range(120)]
    newer = [fake.submit_job("acme/app", ["gpu"], 60).run_id for _ in range(110)]

    runs = port.list_workflow_runs("acme/app", "queued")
    assert [r.id for r in runs] == newer[::-1][:100]  # the first page only
    assert fake.request_counts() == {"GET /repos/{owner}/{repo}/actions/runs": 1}
    assert port.list_workflow_runs("acme/app", "completed") == []

    listed = port.list_workflow_jobs("acme/app", run_id)
    assert [(j.id, j.status, j.labels) for j in listed] == [
        (job.id, "queued", (f"pool-{i}",)) for i, job in enumerate(jobs)
    ]
    assert fake.count_requests("GET", "/repos/{owner}/{repo}/actions/runs/{run_id}/jobs") == 3
    with pytest.raises(GitHubError) as missing:
        port.list_workflow_jobs("acme/app", 999)
    assert missing.value.status == 404


def test_visible_runner_groups(port: InProcessGitHub, fake: FakeGitHub) -> None:
    deploy = fake.add_runner_group(
        ORG, "deploy", visibility="selected", selected_repositories=["acme/deploy"]
    )
    assert port.visible_runner_groups("acme", "app") == [RunnerGroupInfo(1, "Default", True)]
    fake.set_enterprise_of("acme", "acme-corp")
    shared = fake.add_runner_group(ENTERPRISE, "shared")
    assert port.visible_runner_groups("acme", "deploy") == [
        RunnerGroupInfo(1, "Default", default=True),
        RunnerGroupInfo(deploy.id, "deploy"),
        RunnerGroupInfo(1, "Default", default=True, inherited=True),
        RunnerGroupInfo(shared.id, "shared", inherited=True),
    ]


def test_ghes_base_url(fake: FakeGitHub, clock: ManualClock) -> None:
    ids = register(fake, ORG, 130)
    port = InProcessGitHub(fake, PAT, clock, base_url="https://ghe.example/api/v3")
    assert [r.id for r in port.list_runners(ORG)] == ids
    assert port.remove_runner(ORG, ids[0]).outcome is RemoveOutcome.REMOVED
    assert fake.request_counts() == {
        "GET /orgs/{org}/actions/runners": 2,
        "DELETE /orgs/{org}/actions/runners/{runner_id}": 1,
    }


def test_calls_are_counted_like_the_adapters(port: InProcessGitHub, fake: FakeGitHub) -> None:
    def calls(endpoint: str, outcome: str) -> float:
        labels = {"endpoint": endpoint, "outcome": outcome, "credentials": "default"}
        return REGISTRY.get_sample_value("arc_hooks_github_api_calls_total", labels) or 0.0

    delete = "DELETE /repos/{owner}/{repo}/actions/runners/{runner_id}"
    listing = "GET /repos/{owner}/{repo}/actions/runners"
    before = (calls(delete, "not_found"), calls(listing, "2xx"))
    port.remove_runner(REPO, 12345)
    port.list_runners(REPO)
    assert (calls(delete, "not_found"), calls(listing, "2xx")) == (before[0] + 1, before[1] + 1)


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
