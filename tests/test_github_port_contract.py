"""The GitHub port's contract, checked against both of its implementations on the fake GitHub.

Each test runs once per implementation, on the one `FakeGitHub` of the test: through the
PyGithub adapter over real HTTP on loopback (`pygithub`), and through the in-process port, which
calls the fake's request pipeline with no HTTP at all (`in_process`). Last, the REST rules both
classify answers with (`hooks.github.rest`), without a server. What only one implementation has
(PyGithub's transport, app authentication and client pool; the in-process port's exact parity
with it, and its speed) is tested in tests/test_github_adapter.py and tests/test_sim_github_port.py.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import ExitStack
from datetime import UTC, datetime, timedelta
from typing import Any, Protocol, cast

import pytest
from github import Auth
from hypothesis import given
from hypothesis import strategies as st
from starlette.types import Receive, Send
from starlette.types import Scope as AsgiScope

from arc_sim.fake_github import FakeGitHub
from arc_sim.github_api import DOTCOM_API
from arc_sim.github_port import InProcessGitHub
from arc_sim.loopback import serve_loopback
from hooks.clock import ManualClock
from hooks.github.port import (
    MAX_RATE_LIMIT_WAIT,
    ConflictError,
    GitHubError,
    GitHubPort,
    RateLimitedError,
    RemoveOutcome,
    RunnerGroupInfo,
    Scope,
    WorkflowJob,
    WorkflowRun,
)
from hooks.github.pygithub_adapter import PyGithubAdapter
from hooks.github.rest import (
    MAX_ERROR_MESSAGE,
    endpoint_template,
    port_error,
    rate_limit_wait,
    removal_outcome,
    stable_message,
)
from hooks.metrics import GITHUB_API_CALLS, REGISTRY

PAT = "ghp_" + "C0ntracT5" * 4
REPO = Scope(repository="acme/app")
ORG = Scope(organization="acme")
ENTERPRISE = Scope(enterprise="acme-corp")
SCOPES = [REPO, ORG, ENTERPRISE]
SCOPE_IDS = ["repository", "organization", "enterprise"]
TEMPLATES = {
    REPO: "/repos/{owner}/{repo}",
    ORG: "/orgs/{org}",
    ENTERPRISE: "/enterprises/{enterprise}",
}
GHES_ORIGIN = "https://ghe.example"
PORTS = ["pygithub", "in_process"]

RUNS = "/repos/{owner}/{repo}/actions/runs"
RUN_JOBS = "/repos/{owner}/{repo}/actions/runs/{run_id}/jobs"
ORG_GROUPS = "/orgs/{org}/actions/runner-groups"
CORE_DEFAULT = {"resource": "core", "credentials": "default"}


class Connect(Protocol):
    def __call__(self, fake: FakeGitHub, *, token: str = PAT, api_path: str = "") -> GitHubPort: ...


def new_fake(clock: ManualClock, **kwargs: int) -> FakeGitHub:
    fake = FakeGitHub(clock, **kwargs)
    fake.add_personal_access_token(PAT)
    return fake


@pytest.fixture
def fake(clock: ManualClock) -> FakeGitHub:
    return new_fake(clock)


class Plug:
    """The app of one loopback server, shared by the module's tests: each plugs its fake in
    (a server takes a fifth of a second to stop, the tests only a few milliseconds)."""

    def __init__(self) -> None:
        self.fake: FakeGitHub | None = None

    async def __call__(self, scope: AsgiScope, receive: Receive, send: Send) -> None:
        assert self.fake is not None, "no fake plugged in"
        await self.fake.app(scope, receive, send)


@pytest.fixture(scope="module")
def loopback() -> Iterator[tuple[Plug, str]]:
    plug = Plug()
    with serve_loopback(plug) as url:
        yield plug, url


@pytest.fixture(params=PORTS)
def connect(request: pytest.FixtureRequest, clock: ManualClock) -> Iterator[Connect]:
    """Opens ports of the implementation under test on a fake: authenticated with `token`, on
    GitHub.com or, with `api_path="/api/v3"`, on GitHub Enterprise Server."""
    kind: str = request.param
    with ExitStack() as stack:
        servers: dict[int, str] = {}

        def serve(fake: FakeGitHub) -> str:
            """The test's first fake on the shared server, any other on a server of its own."""
            if not servers:
                plug, url = request.getfixturevalue("loopback")
                plug.fake = fake
                stack.callback(setattr, plug, "fake", None)
                servers[id(fake)] = url
            if id(fake) not in servers:
                servers[id(fake)] = stack.enter_context(serve_loopback(fake.app))
            return servers[id(fake)]

        def connect(fake: FakeGitHub, *, token: str = PAT, api_path: str = "") -> GitHubPort:
            if kind == "in_process":
                origin = GHES_ORIGIN if api_path else DOTCOM_API
                return InProcessGitHub(fake, token, clock, base_url=origin + api_path)
            adapter = PyGithubAdapter(
                auth=Auth.Token(token),
                clock=clock,
                base_url=serve(fake) + api_path,
                secrets=[token],
            )
            stack.callback(adapter.close)
            return adapter

        yield connect


@pytest.fixture
def port(connect: Connect, fake: FakeGitHub) -> GitHubPort:
    return connect(fake)


def register(fake: FakeGitHub, scope: Scope, count: int) -> list[int]:
    token = fake.create_registration_token(scope).value
    return [fake.register_runner(scope, f"runner-{i}", ["k8s"], token).id for i in range(count)]


def calls(endpoint: str, outcome: str) -> float:
    labels = {"endpoint": endpoint, "outcome": outcome, "credentials": "default"}
    return REGISTRY.get_sample_value("arc_hooks_github_api_calls_total", labels) or 0.0


# -- runners -----------------------------------------------------------------------------------


@pytest.mark.parametrize("scope", SCOPES, ids=SCOPE_IDS)
def test_list_runners_follows_every_page(port: GitHubPort, fake: FakeGitHub, scope: Scope) -> None:
    ids = register(fake, scope, 150)
    runners = port.list_runners(scope)
    assert [r.id for r in runners] == ids
    first = runners[0]
    assert first.name == "runner-0"
    assert first.status == "offline"
    assert first.busy is False
    assert first.ephemeral is False
    assert first.runner_group_id == 1
    assert set(first.labels) == {"self-hosted", "Linux", "X64", "k8s"}
    assert fake.count_requests("GET", f"{TEMPLATES[scope]}/actions/runners") == 2
    assert [r.method for r in fake.requests] == ["GET", "GET"]  # two pages of 100


def test_list_runners_reports_state(port: GitHubPort, fake: FakeGitHub) -> None:
    (runner_id,) = register(fake, ORG, 1)
    fake.set_online(ORG, runner_id)
    fake.set_busy(ORG, runner_id, True)
    (runner,) = port.list_runners(ORG)
    assert runner.online and runner.busy


def test_list_runners_of_an_empty_scope(port: GitHubPort) -> None:
    assert list(port.list_runners(REPO)) == []


@pytest.mark.parametrize("scope", SCOPES, ids=SCOPE_IDS)
def test_runners_named_is_one_page_of_one_runner(
    port: GitHubPort, fake: FakeGitHub, scope: Scope
) -> None:
    ids = register(fake, scope, 150)
    (found,) = port.runners_named(scope, "runner-120")
    assert (found.id, found.name) == (ids[120], "runner-120")
    assert list(port.runners_named(scope, "runner-9999")) == []
    # Two requests in all, one page each: not the two pages of the whole list per lookup.
    assert fake.count_requests("GET", f"{TEMPLATES[scope]}/actions/runners") == 2


@pytest.mark.parametrize("scope", SCOPES, ids=SCOPE_IDS)
def test_registration_token(
    port: GitHubPort, fake: FakeGitHub, clock: ManualClock, scope: Scope
) -> None:
    token = port.registration_token(scope)
    assert token.expires_at == clock.now() + timedelta(hours=1)
    assert token.expires_at.timestamp() == clock.now().timestamp() + 3600
    # The token is one GitHub accepts for this scope.
    fake.register_runner(scope, "with-token", [], token.token)
    assert [r.name for r in fake.runners(scope)] == ["with-token"]
    assert token.token not in repr(token)


@pytest.mark.parametrize("scope", SCOPES, ids=SCOPE_IDS)
def test_jit_config(port: GitHubPort, fake: FakeGitHub, scope: Scope) -> None:
    jit = port.generate_jit_config(scope, "jit-1", ["k8s", "gpu"], 1, "_work")
    assert jit.runner.name == "jit-1"
    assert set(jit.runner.labels) == {"k8s", "gpu"}
    assert [r.id for r in fake.runners(scope)] == [jit.runner.id]
    assert fake.register_jit(jit.encoded_jit_config).id == jit.runner.id

    with pytest.raises(ConflictError) as raised:
        port.generate_jit_config(scope, "jit-1", ["k8s"], 1, "_work")
    assert raised.value.status == 409
    assert "jit-1" in str(raised.value)


def test_jit_config_refused_for_bad_labels(port: GitHubPort) -> None:
    with pytest.raises(GitHubError) as raised:
        port.generate_jit_config(ORG, "jit-1", [], 1, "_work")
    assert raised.value.status == 422
    assert not isinstance(raised.value, ConflictError)


# -- runner groups -----------------------------------------------------------------------------


@pytest.mark.parametrize("scope", [ORG, ENTERPRISE], ids=SCOPE_IDS[1:])
def test_runner_group_id(port: GitHubPort, fake: FakeGitHub, scope: Scope) -> None:
    for i in range(120):  # more than a page
        fake.add_runner_group(scope, f"group-{i}")
    gpu = fake.add_runner_group(scope, "GPU")
    assert port.runner_group_id(scope, "GPU") == gpu.id
    assert port.runner_group_id(scope, "gpu") == gpu.id
    assert port.runner_group_id(scope, "") == 1
    assert port.runner_group_id(scope, "Default") == 1
    with pytest.raises(GitHubError) as raised:
        port.runner_group_id(scope, "missing")
    assert raised.value.status == 404
    assert "missing" in str(raised.value)


def test_repository_has_only_the_default_group(port: GitHubPort, fake: FakeGitHub) -> None:
    assert port.runner_group_id(REPO, "") == 1
    assert fake.requests == []  # known without asking
    with pytest.raises(GitHubError):
        port.runner_group_id(REPO, "gpu")


def test_visible_runner_groups_include_the_enterprises(port: GitHubPort, fake: FakeGitHub) -> None:
    fake.set_enterprise_of("acme", "acme-corp")
    for i in range(110):  # more than a page
        fake.add_runner_group(ORG, f"group-{i}")
    deploy = fake.add_runner_group(
        ORG, "deploy", visibility="selected", selected_repositories=["acme/deploy"]
    )
    shared = fake.add_runner_group(ENTERPRISE, "shared")

    groups = port.visible_runner_groups("acme", "app")
    assert len(groups) == 1 + 110 + 2
    assert groups[0] == RunnerGroupInfo(1, "Default", default=True)
    assert groups[-2:] == [
        RunnerGroupInfo(1, "Default", default=True, inherited=True),
        RunnerGroupInfo(shared.id, "shared", inherited=True),
    ]
    assert deploy.id not in [g.id for g in groups if not g.inherited]
    assert fake.count_requests("GET", ORG_GROUPS) == 2

    visible_to_deploy = port.visible_runner_groups("acme", "deploy")
    assert RunnerGroupInfo(deploy.id, "deploy") in visible_to_deploy


def test_visible_runner_groups_before_and_after_joining_an_enterprise(
    port: GitHubPort, fake: FakeGitHub
) -> None:
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


# -- workflow runs and jobs --------------------------------------------------------------------


def test_workflow_runs_are_every_page_of_the_status(port: GitHubPort, fake: FakeGitHub) -> None:
    (runner_id,) = register(fake, ORG, 1)
    fake.set_online(ORG, runner_id)
    running = fake.submit_job(REPO.repository, ["k8s"], 60)  # the runner takes it
    queued = [fake.submit_job(REPO.repository, ["gpu"], 60).run_id for _ in range(120)]

    runs = port.list_workflow_runs(REPO.repository, "queued")
    # Pages of 100, newest first, every one of them, as ARC reads them (github.go,
    # listRepositoryWorkflowRuns): with only the first, 120 queued runs would count as 100.
    assert [r.id for r in runs] == queued[::-1]
    assert {r.status for r in runs} == {"queued"}
    assert fake.count_requests("GET", RUNS) == 2
    assert fake.request_counts() == {f"GET {RUNS}": 2}
    assert port.list_workflow_runs(REPO.repository, "completed") == []
    assert port.list_workflow_runs(REPO.repository, "in_progress") == [
        WorkflowRun(id=running.run_id, status="in_progress")
    ]
    fake.complete_job(running.id)
    assert port.list_workflow_runs(REPO.repository, "in_progress") == []
    assert [r.id for r in port.list_workflow_runs(REPO.repository, "completed")] == [running.run_id]
    assert port.list_workflow_runs("acme/other", "queued") == []


def test_workflow_jobs_follow_every_page_of_50(port: GitHubPort, fake: FakeGitHub) -> None:
    run_id = 4711
    jobs = [
        fake.submit_job(REPO.repository, ["self-hosted", f"pool-{i}"], 60, run_id=run_id)
        for i in range(120)
    ]
    listed = port.list_workflow_jobs(REPO.repository, run_id)
    assert listed == [
        WorkflowJob(status="queued", labels=("self-hosted", f"pool-{i}"), id=job.id)
        for i, job in enumerate(jobs)
    ]
    assert fake.count_requests("GET", RUN_JOBS) == 3  # 50 + 50 + 20

    with pytest.raises(GitHubError) as missing:
        port.list_workflow_jobs(REPO.repository, 999)
    assert missing.value.status == 404
    assert "workflow run 999" in str(missing.value)


def test_workflow_reads_fail_as_port_errors(
    port: GitHubPort, fake: FakeGitHub, clock: ManualClock
) -> None:
    fake.impose_secondary_rate_limit(90)
    with pytest.raises(RateLimitedError) as limited:
        port.list_workflow_runs(REPO.repository, "queued")
    assert limited.value.retry_after == 90
    assert "list queued workflow runs in /repos/acme/app" in str(limited.value)
    clock.advance(90)
    fake.fail_next(status=502, method="GET")
    with pytest.raises(GitHubError) as failed:
        port.visible_runner_groups("acme", "app")
    assert failed.value.status == 502
    assert not isinstance(failed.value, RateLimitedError)


def test_an_error_says_the_same_whichever_request_met_it(
    port: GitHubPort, fake: FakeGitHub
) -> None:
    """GitHub's secondary rate limit quotes each response's request ID. Errors go into status
    conditions: a text that changed with every call rewrote the object at every sync, and
    each write synced it again (found by a hostile probe, between two hook replicas)."""
    fake.impose_secondary_rate_limit(90)
    messages = set()
    for _ in range(3):
        with pytest.raises(RateLimitedError) as limited:
            port.list_runners(ORG)
        messages.add(str(limited.value))

    (message,) = messages
    assert "secondary rate limit" in message
    assert "request ID" not in message


# -- removal -----------------------------------------------------------------------------------


@pytest.mark.parametrize("scope", SCOPES, ids=SCOPE_IDS)
def test_remove_then_not_found(port: GitHubPort, fake: FakeGitHub, scope: Scope) -> None:
    (runner_id,) = register(fake, scope, 1)
    assert port.remove_runner(scope, runner_id).outcome is RemoveOutcome.REMOVED
    assert fake.runners(scope) == []
    gone = port.remove_runner(scope, runner_id)
    assert gone.outcome is RemoveOutcome.NOT_FOUND
    assert "404" in gone.message
    assert gone.message == f"remove runner {runner_id} in {scope}: HTTP 404: Not Found"


@pytest.mark.parametrize("scope", SCOPES, ids=SCOPE_IDS)
def test_remove_busy(port: GitHubPort, fake: FakeGitHub, scope: Scope) -> None:
    (runner_id,) = register(fake, scope, 1)
    fake.set_online(scope, runner_id)
    fake.set_busy(scope, runner_id, True)
    busy = port.remove_runner(scope, runner_id)
    assert busy.outcome is RemoveOutcome.BUSY
    assert "is still running a job" in busy.message
    assert busy.retry_after is None
    assert [r.id for r in fake.runners(scope)] == [runner_id]


def test_remove_forbidden(port: GitHubPort, fake: FakeGitHub) -> None:
    (runner_id,) = register(fake, REPO, 1)
    fake.fail_next(status=403, method="DELETE")
    result = port.remove_runner(REPO, runner_id)
    assert result.outcome is RemoveOutcome.FORBIDDEN
    assert result.retry_after is None
    # The runner is still there; the next attempt goes through.
    assert port.remove_runner(REPO, runner_id).outcome is RemoveOutcome.REMOVED


def test_remove_server_error(port: GitHubPort, fake: FakeGitHub) -> None:
    (runner_id,) = register(fake, ENTERPRISE, 1)
    fake.fail_next(status=500, method="DELETE")
    result = port.remove_runner(ENTERPRISE, runner_id)
    assert result.outcome is RemoveOutcome.ERROR
    assert "GitHub server error (HTTP 5xx)" in result.message
    # The runner is still there; the next attempt goes through.
    assert port.remove_runner(ENTERPRISE, runner_id).outcome is RemoveOutcome.REMOVED


def test_remove_primary_rate_limited_waits_for_the_reset(
    connect: Connect, clock: ManualClock
) -> None:
    limited = new_fake(clock, rate_limit_per_hour=2)
    (runner_id,) = register(limited, ORG, 1)
    port = connect(limited)
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


def test_the_port_keeps_the_budget_its_latest_answer_reported(
    connect: Connect, clock: ManualClock
) -> None:
    """What the cache paces runner lists by (`hooks.github.list_pacing`)."""
    budgeted = new_fake(clock, rate_limit_per_hour=50)
    register(budgeted, ORG, 250)
    port = connect(budgeted)
    budget = cast(Any, port).rate_budget
    assert budget() is None  # nothing asked yet
    port.list_runners(ORG)  # three pages
    first = budget()
    assert first is not None and (first.limit, first.remaining) == (50, 47)
    assert first.resets_at == clock.now().replace(microsecond=0) + timedelta(hours=1)
    port.registration_token(ORG)
    assert budget().remaining == 46


@pytest.mark.parametrize("status", [403, 429])
def test_remove_secondary_rate_limited_uses_retry_after(
    port: GitHubPort, fake: FakeGitHub, status: int
) -> None:
    (runner_id,) = register(fake, ORG, 1)
    fake.impose_secondary_rate_limit(120, status=status)
    result = port.remove_runner(ORG, runner_id)
    assert result.outcome is RemoveOutcome.RATE_LIMITED
    assert result.retry_after == 120
    with pytest.raises(RateLimitedError) as raised:
        port.registration_token(ORG)
    assert raised.value.retry_after == 120


# -- errors ------------------------------------------------------------------------------------


def test_server_error_on_reads(port: GitHubPort, fake: FakeGitHub) -> None:
    fake.fail_next(status=502, method="GET")
    with pytest.raises(GitHubError) as raised:
        port.list_runners(ORG)
    assert raised.value.status == 502
    assert not isinstance(raised.value, RateLimitedError)


def test_bad_credentials_and_no_token_in_messages(connect: Connect, fake: FakeGitHub) -> None:
    wrong = connect(fake, token="ghp_wrong")
    with pytest.raises(GitHubError) as raised:
        wrong.list_runners(ORG)
    assert raised.value.status == 401
    result = wrong.remove_runner(ORG, 1)
    assert result.outcome is RemoveOutcome.ERROR
    assert "ghp_wrong" not in str(raised.value) + result.message


# -- GitHub Enterprise Server ------------------------------------------------------------------


def test_ghes_base_path(connect: Connect, fake: FakeGitHub) -> None:
    ids = register(fake, ORG, 130)
    port = connect(fake, api_path="/api/v3")
    assert [r.id for r in port.list_runners(ORG)] == ids
    assert port.remove_runner(ORG, ids[0]).outcome is RemoveOutcome.REMOVED
    assert fake.request_counts() == {
        "GET /orgs/{org}/actions/runners": 2,
        "DELETE /orgs/{org}/actions/runners/{runner_id}": 1,
    }


# -- metrics -----------------------------------------------------------------------------------


def test_every_call_is_counted_by_endpoint_template(port: GitHubPort, fake: FakeGitHub) -> None:
    list_org = "GET /orgs/{org}/actions/runners"
    delete_org = "DELETE /orgs/{org}/actions/runners/{runner_id}"
    token_repo = "POST /repos/{owner}/{repo}/actions/runners/registration-token"
    jit_ent = "POST /enterprises/{enterprise}/actions/runners/generate-jitconfig"
    before = {
        key: calls(*key)
        for key in [
            (list_org, "2xx"),
            (delete_org, "removed"),
            (delete_org, "busy"),
            (delete_org, "not_found"),
            (delete_org, "rate_limited"),
            (token_repo, "2xx"),
            (jit_ent, "4xx"),
        ]
    }
    ids = register(fake, ORG, 101)
    fake.set_online(ORG, ids[1])
    fake.set_busy(ORG, ids[1], True)
    port.list_runners(ORG)  # two pages
    port.remove_runner(ORG, ids[0])
    port.remove_runner(ORG, ids[0])
    port.remove_runner(ORG, ids[1])
    port.registration_token(REPO)
    port.generate_jit_config(ENTERPRISE, "dup", ["k8s"], 1, "_work")
    with pytest.raises(ConflictError):
        port.generate_jit_config(ENTERPRISE, "dup", ["k8s"], 1, "_work")
    fake.impose_secondary_rate_limit(30)
    port.remove_runner(ORG, ids[2])

    def moved(endpoint: str, outcome: str) -> float:
        return calls(endpoint, outcome) - before[(endpoint, outcome)]

    assert moved(list_org, "2xx") == 2
    assert moved(delete_org, "removed") == 1
    assert moved(delete_org, "not_found") == 1
    assert moved(delete_org, "busy") == 1
    assert moved(delete_org, "rate_limited") == 1
    assert moved(token_repo, "2xx") == 1
    assert moved(jit_ent, "4xx") == 1

    labels = [
        sample.labels["endpoint"]
        for metric in GITHUB_API_CALLS.collect()
        for sample in metric.samples
    ]
    assert all("acme" not in label for label in labels)
    assert all(not any(str(i) in label.split("/") for i in ids) for label in labels)

    caller = fake.caller_for_token(PAT)
    assert caller is not None
    remaining = fake.rate_budget(caller).remaining
    assert REGISTRY.get_sample_value("arc_hooks_github_rate_limit", CORE_DEFAULT) == 5000
    gauge = "arc_hooks_github_rate_limit_remaining"
    assert REGISTRY.get_sample_value(gauge, CORE_DEFAULT) == remaining


def test_repository_calls_are_counted_by_outcome(port: GitHubPort) -> None:
    delete = "DELETE /repos/{owner}/{repo}/actions/runners/{runner_id}"
    listing = "GET /repos/{owner}/{repo}/actions/runners"
    before = (calls(delete, "not_found"), calls(listing, "2xx"))
    port.remove_runner(REPO, 12345)
    port.list_runners(REPO)
    assert (calls(delete, "not_found"), calls(listing, "2xx")) == (before[0] + 1, before[1] + 1)


def test_workflow_reads_are_counted_by_endpoint_template(
    port: GitHubPort, fake: FakeGitHub
) -> None:
    counted = [f"GET {RUNS}", f"GET {RUN_JOBS}", f"GET {ORG_GROUPS}"]
    before = [calls(endpoint, "2xx") for endpoint in counted]
    job = fake.submit_job(REPO.repository, ["gpu"], 60)
    port.list_workflow_runs(REPO.repository, "queued")
    port.list_workflow_jobs(REPO.repository, job.run_id)
    port.visible_runner_groups("acme", "app")
    assert [calls(endpoint, "2xx") for endpoint in counted] == [n + 1 for n in before]
    not_found = calls(f"GET {RUN_JOBS}", "4xx")
    with pytest.raises(GitHubError):
        port.list_workflow_jobs(REPO.repository, 999)
    assert calls(f"GET {RUN_JOBS}", "4xx") == not_found + 1


# -- the rules both classify with (hooks.github.rest), without a server -----------------------


def test_rate_limit_rules(clock: ManualClock) -> None:
    now = clock.now()
    reset = str(int(now.timestamp()) + 300)
    assert (
        rate_limit_wait(403, {"x-ratelimit-remaining": "0", "x-ratelimit-reset": reset}, "", now)
        == 300
    )
    assert rate_limit_wait(403, {"retry-after": "42"}, "", now) == 42
    secondary = "You have exceeded a secondary rate limit."
    assert rate_limit_wait(403, {"x-ratelimit-remaining": "17"}, secondary, now) == 60
    assert rate_limit_wait(429, {}, "", now) == 60
    assert rate_limit_wait(403, {"x-ratelimit-remaining": "17"}, "Forbidden", now) is None
    assert rate_limit_wait(500, {"retry-after": "5"}, "", now) is None
    # A reset already past (clock skew) still waits a little rather than retrying at once.
    past = str(int(now.timestamp()) - 10)
    assert (
        rate_limit_wait(403, {"x-ratelimit-remaining": "0", "x-ratelimit-reset": past}, "", now)
        == 1
    )
    # Numbers no GitHub sends (a proxy's, a stand-in's) give a wait that can be scheduled: an
    # infinite or enormous one had overflowed the cache's backoff, inside the call every other
    # caller of that endpoint waited on.
    assert rate_limit_wait(429, {"retry-after": "inf"}, "", now) == 60
    assert rate_limit_wait(429, {"retry-after": "nan"}, "", now) == 60
    assert rate_limit_wait(429, {"retry-after": "1e300"}, "", now) == MAX_RATE_LIMIT_WAIT
    huge_reset = {"x-ratelimit-remaining": "0", "x-ratelimit-reset": "1e300"}
    assert rate_limit_wait(403, huge_reset, "", now) == MAX_RATE_LIMIT_WAIT
    nan_reset = {"x-ratelimit-remaining": "0", "x-ratelimit-reset": "nan"}
    assert rate_limit_wait(403, nan_reset, "", now) == 60
    far_date = {"retry-after": "Fri, 31 Dec 9999 23:59:59 GMT"}
    assert rate_limit_wait(429, far_date, "", now) == MAX_RATE_LIMIT_WAIT
    assert removal_outcome(422, {}, "Validation Failed") is RemoveOutcome.ERROR
    assert removal_outcome(401, {}, "Bad credentials") is RemoveOutcome.ERROR
    assert removal_outcome(204, {}, "") is RemoveOutcome.REMOVED
    # Any other success is not GitHub's answer to a removal (ARC's client refuses it too).
    assert removal_outcome(200, {}, "") is RemoveOutcome.ERROR
    assert removal_outcome(202, {}, "") is RemoveOutcome.ERROR


_HEADER_TEXT = st.one_of(
    st.text(max_size=30),
    st.floats().map(repr),
    st.integers(min_value=-(10**30), max_value=10**30).map(str),
)


@given(
    status=st.sampled_from([403, 429]),
    retry_after=st.none() | _HEADER_TEXT,
    remaining=st.none() | _HEADER_TEXT,
    reset=st.none() | _HEADER_TEXT,
)
def test_a_rate_limit_wait_is_always_one_that_can_be_scheduled(
    status: int, retry_after: str | None, remaining: str | None, reset: str | None
) -> None:
    now = ManualClock().now()
    headers = {
        name: value
        for name, value in (
            ("retry-after", retry_after),
            ("x-ratelimit-remaining", remaining),
            ("x-ratelimit-reset", reset),
        )
        if value is not None
    }
    wait = rate_limit_wait(status, headers, "You have exceeded a secondary rate limit.", now)
    assert wait is not None
    assert 1.0 <= wait <= MAX_RATE_LIMIT_WAIT
    now + timedelta(seconds=wait)  # what the cache's backoff does with it


def test_an_errors_text_drops_the_request_id_sentences_and_stays_short() -> None:
    secondary = (
        "You have exceeded a secondary rate limit. Please wait a few minutes before you try "
        "again; in some cases this may take up to an hour. If you reach out to GitHub Support "
        "for help, please include the request ID 0F8C:3B2A:1D4E.  Thanks."
    )
    assert stable_message(secondary) == (
        "You have exceeded a secondary rate limit. Please wait a few minutes before you try "
        "again; in some cases this may take up to an hour.  Thanks."
    )
    assert stable_message("Request ID abc") == ""
    assert stable_message("Not Found") == "Not Found"
    long = stable_message("x" * 10_000)
    assert len(long) == MAX_ERROR_MESSAGE
    assert long.endswith("…")


@given(st.sampled_from([500, 502, 503, 504]), st.text(max_size=200))
def test_every_server_error_of_a_call_reads_the_same(status: int, message: str) -> None:
    """Found by an independent failure run: through an outage GitHub answers 500, 502 and 503
    in turn, each with its own text; each new text rewrote a status condition, whose write
    synced the object again, which called GitHub again (1,836 failed token requests where 362
    sufficed)."""
    now = datetime(2026, 1, 1, tzinfo=UTC)
    error = port_error("list runners", status, {}, message, now)

    assert str(error) == "list runners: GitHub server error (HTTP 5xx)"
    assert error.status == status  # the code itself is kept for the caller


def test_an_errors_text_is_read_in_one_pass_however_long() -> None:
    """A text of a million characters with no period (no GitHub answer, but any server's) once
    took a pattern retried from every position: hours for this one."""
    text = "request ID " + "a " * 500_000
    assert stable_message(text) == ""
    assert stable_message("a " * 500_000 + "request ID") == ""


@given(st.lists(st.sampled_from(["a", " ", ".", "request ID", "REQUEST id", "x."]), max_size=12))
def test_the_request_id_sentences_go_and_every_other_sentence_stays(parts: list[str]) -> None:
    text = "".join(parts)
    kept = stable_message(text)
    quotes_an_id = re.compile(r"\brequest id\b", re.IGNORECASE)
    assert not quotes_an_id.search(kept)
    for sentence in text.split(".")[:-1]:
        if not quotes_an_id.search(sentence) and sentence.strip():
            assert sentence.lstrip() + "." in kept


def test_endpoint_templates() -> None:
    assert (
        endpoint_template("DELETE", "http://h/api/v3/orgs/acme/actions/runners/12?x=1", "/api/v3")
        == "DELETE /orgs/{org}/actions/runners/{runner_id}"
    )
    assert (
        endpoint_template("POST", "/repos/acme/app/actions/runners/registration-token")
        == "POST /repos/{owner}/{repo}/actions/runners/registration-token"
    )
    assert (
        endpoint_template("POST", "/app/installations/42/access_tokens")
        == "POST /app/installations/{installation_id}/access_tokens"
    )
    assert (
        endpoint_template("GET", "/repos/acme/app/actions/runs/42/jobs?page=2")
        == "GET /repos/{owner}/{repo}/actions/runs/{run_id}/jobs"
    )
    assert (
        endpoint_template("GET", "/repos/acme/app/actions/runs?status=queued")
        == "GET /repos/{owner}/{repo}/actions/runs"
    )
    assert endpoint_template("GET", "/user/secret-stuff/12") == "GET other"
