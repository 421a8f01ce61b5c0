"""The PyGithub adapter against the fake GitHub, over real HTTP on loopback."""

from __future__ import annotations

import logging
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from github import Auth
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Send
from starlette.types import Scope as AsgiScope

from arc_sim.fake_github import FakeGitHub
from arc_sim.loopback import serve_loopback
from hooks.clock import ManualClock
from hooks.github.cached import CachedGitHub
from hooks.github.port import (
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
from hooks.github.pygithub_adapter import PyGithubAdapter, github_from_settings
from hooks.github.rest import endpoint_template, rate_limit_wait, removal_outcome
from hooks.metrics import GITHUB_API_CALLS, REGISTRY
from hooks.settings import Settings

PAT = "ghp_" + "Zq7sEcReT" * 4
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
INSTALLATION_TOKEN_ROUTE = "/app/installations/{installation_id}/access_tokens"


class Recorder:
    """ASGI middleware that keeps the raw path and headers of each request the fake serves."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self.requests: list[tuple[str, dict[str, str]]] = []

    async def __call__(self, scope: AsgiScope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            headers = {k.decode().lower(): v.decode() for k, v in scope["headers"]}
            self.requests.append((scope["path"], headers))
        await self.app(scope, receive, send)


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture
def fake(clock: ManualClock) -> FakeGitHub:
    github = FakeGitHub(clock)
    github.add_personal_access_token(PAT)
    return github


@pytest.fixture
def recorder(fake: FakeGitHub) -> Recorder:
    return Recorder(fake.app)


@pytest.fixture
def base_url(recorder: Recorder) -> Iterator[str]:
    with serve_loopback(recorder) as url:
        yield url


@contextmanager
def pat_adapter(clock: ManualClock, base_url: str) -> Iterator[PyGithubAdapter]:
    adapter = PyGithubAdapter(auth=Auth.Token(PAT), clock=clock, base_url=base_url, secrets=[PAT])
    try:
        yield adapter
    finally:
        adapter.close()


@pytest.fixture
def adapter(clock: ManualClock, base_url: str) -> Iterator[PyGithubAdapter]:
    with pat_adapter(clock, base_url) as github:
        yield github


def register(fake: FakeGitHub, scope: Scope, count: int) -> list[int]:
    token = fake.create_registration_token(scope).value
    return [fake.register_runner(scope, f"runner-{i}", ["k8s"], token).id for i in range(count)]


CORE_DEFAULT = {"resource": "core", "credentials": "default"}


def calls(endpoint: str, outcome: str) -> float:
    labels = {"endpoint": endpoint, "outcome": outcome, "credentials": "default"}
    return REGISTRY.get_sample_value("arc_hooks_github_api_calls_total", labels) or 0.0


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


def rsa_key() -> tuple[str, str]:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    private = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    ).decode()
    public = (
        key.public_key()
        .public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
        .decode()
    )
    return private, public


def settings(**values: Any) -> Settings:
    # model_validate ignores the environment, so a GITHUB_TOKEN of the machine cannot leak in.
    return Settings.model_validate(values)


# -- reads -------------------------------------------------------------------------------------


@pytest.mark.parametrize("scope", SCOPES, ids=SCOPE_IDS)
def test_list_runners_follows_every_page(
    adapter: PyGithubAdapter, fake: FakeGitHub, scope: Scope
) -> None:
    ids = register(fake, scope, 150)
    runners = adapter.list_runners(scope)
    assert [r.id for r in runners] == ids
    first = runners[0]
    assert first.name == "runner-0"
    assert first.status == "offline"
    assert first.busy is False
    assert first.ephemeral is False
    assert first.runner_group_id == 1
    assert set(first.labels) == {"self-hosted", "Linux", "X64", "k8s"}
    assert fake.count_requests("GET", f"{TEMPLATES[scope]}/actions/runners") == 2


def test_list_runners_reports_state(adapter: PyGithubAdapter, fake: FakeGitHub) -> None:
    (runner_id,) = register(fake, ORG, 1)
    fake.set_online(ORG, runner_id)
    fake.set_busy(ORG, runner_id, True)
    (runner,) = adapter.list_runners(ORG)
    assert runner.online and runner.busy


def test_list_runners_of_an_empty_scope(adapter: PyGithubAdapter) -> None:
    assert list(adapter.list_runners(REPO)) == []


@pytest.mark.parametrize("scope", SCOPES, ids=SCOPE_IDS)
def test_registration_token(
    adapter: PyGithubAdapter, fake: FakeGitHub, clock: ManualClock, scope: Scope
) -> None:
    token = adapter.registration_token(scope)
    assert token.expires_at == clock.now() + timedelta(hours=1)
    # The token is one GitHub accepts for this scope.
    fake.register_runner(scope, "with-token", [], token.token)
    assert [r.name for r in fake.runners(scope)] == ["with-token"]
    assert token.token not in repr(token)


@pytest.mark.parametrize("scope", SCOPES, ids=SCOPE_IDS)
def test_jit_config(adapter: PyGithubAdapter, fake: FakeGitHub, scope: Scope) -> None:
    jit = adapter.generate_jit_config(scope, "jit-1", ["k8s", "gpu"], 1, "_work")
    assert jit.runner.name == "jit-1"
    assert set(jit.runner.labels) == {"k8s", "gpu"}
    assert [r.id for r in fake.runners(scope)] == [jit.runner.id]
    assert fake.register_jit(jit.encoded_jit_config).id == jit.runner.id

    with pytest.raises(ConflictError) as raised:
        adapter.generate_jit_config(scope, "jit-1", ["k8s"], 1, "_work")
    assert raised.value.status == 409
    assert "jit-1" in str(raised.value)


def test_jit_config_refused_for_bad_labels(adapter: PyGithubAdapter) -> None:
    with pytest.raises(GitHubError) as raised:
        adapter.generate_jit_config(ORG, "jit-1", [], 1, "_work")
    assert raised.value.status == 422
    assert not isinstance(raised.value, ConflictError)


@pytest.mark.parametrize("scope", [ORG, ENTERPRISE], ids=SCOPE_IDS[1:])
def test_runner_group_id(adapter: PyGithubAdapter, fake: FakeGitHub, scope: Scope) -> None:
    for i in range(120):  # more than a page
        fake.add_runner_group(scope, f"group-{i}")
    gpu = fake.add_runner_group(scope, "GPU")
    assert adapter.runner_group_id(scope, "GPU") == gpu.id
    assert adapter.runner_group_id(scope, "gpu") == gpu.id
    assert adapter.runner_group_id(scope, "") == 1
    assert adapter.runner_group_id(scope, "Default") == 1
    with pytest.raises(GitHubError) as raised:
        adapter.runner_group_id(scope, "missing")
    assert raised.value.status == 404
    assert "missing" in str(raised.value)


def test_repository_has_only_the_default_group(adapter: PyGithubAdapter, fake: FakeGitHub) -> None:
    assert adapter.runner_group_id(REPO, "") == 1
    assert fake.requests == []  # known without asking
    with pytest.raises(GitHubError):
        adapter.runner_group_id(REPO, "gpu")


# -- workflow runs, jobs and visible runner groups ----------------------------------------------

RUNS = "/repos/{owner}/{repo}/actions/runs"
RUN_JOBS = "/repos/{owner}/{repo}/actions/runs/{run_id}/jobs"
ORG_GROUPS = "/orgs/{org}/actions/runner-groups"


def test_workflow_runs_are_the_first_page_of_the_status(
    adapter: PyGithubAdapter, fake: FakeGitHub
) -> None:
    (runner_id,) = register(fake, ORG, 1)
    fake.set_online(ORG, runner_id)
    running = fake.submit_job(REPO.repository, ["k8s"], 60)  # the runner takes it
    queued = [fake.submit_job(REPO.repository, ["gpu"], 60).run_id for _ in range(120)]

    runs = adapter.list_workflow_runs(REPO.repository, "queued")
    # One request of 100, newest first, as ARC reads them.
    assert [r.id for r in runs] == queued[::-1][:100]
    assert {r.status for r in runs} == {"queued"}
    assert fake.count_requests("GET", RUNS) == 1
    assert adapter.list_workflow_runs(REPO.repository, "in_progress") == [
        WorkflowRun(id=running.run_id, status="in_progress")
    ]
    fake.complete_job(running.id)
    assert adapter.list_workflow_runs(REPO.repository, "in_progress") == []
    assert [r.id for r in adapter.list_workflow_runs(REPO.repository, "completed")] == [
        running.run_id
    ]
    assert adapter.list_workflow_runs("acme/other", "queued") == []


def test_workflow_jobs_follow_every_page_of_50(adapter: PyGithubAdapter, fake: FakeGitHub) -> None:
    run_id = 4711
    jobs = [
        fake.submit_job(REPO.repository, ["self-hosted", f"pool-{i}"], 60, run_id=run_id)
        for i in range(120)
    ]
    listed = adapter.list_workflow_jobs(REPO.repository, run_id)
    assert listed == [
        WorkflowJob(status="queued", labels=("self-hosted", f"pool-{i}"), id=job.id)
        for i, job in enumerate(jobs)
    ]
    assert fake.count_requests("GET", RUN_JOBS) == 3  # 50 + 50 + 20

    with pytest.raises(GitHubError) as missing:
        adapter.list_workflow_jobs(REPO.repository, 999)
    assert missing.value.status == 404
    assert "workflow run 999" in str(missing.value)


def test_visible_runner_groups_include_the_enterprises(
    adapter: PyGithubAdapter, fake: FakeGitHub
) -> None:
    fake.set_enterprise_of("acme", "acme-corp")
    for i in range(110):  # more than a page
        fake.add_runner_group(ORG, f"group-{i}")
    deploy = fake.add_runner_group(
        ORG, "deploy", visibility="selected", selected_repositories=["acme/deploy"]
    )
    shared = fake.add_runner_group(ENTERPRISE, "shared")

    groups = adapter.visible_runner_groups("acme", "app")
    assert len(groups) == 1 + 110 + 2
    assert groups[0] == RunnerGroupInfo(1, "Default", default=True)
    assert groups[-2:] == [
        RunnerGroupInfo(1, "Default", default=True, inherited=True),
        RunnerGroupInfo(shared.id, "shared", inherited=True),
    ]
    assert deploy.id not in [g.id for g in groups if not g.inherited]
    assert fake.count_requests("GET", ORG_GROUPS) == 2

    visible_to_deploy = adapter.visible_runner_groups("acme", "deploy")
    assert RunnerGroupInfo(deploy.id, "deploy") in visible_to_deploy


def test_a_run_without_an_id_reads_as_0_with_no_extra_request(clock: ManualClock) -> None:
    served: list[str] = []

    async def runs(request: Request) -> JSONResponse:
        served.append(request.url.path)
        listing = {"total_count": 2, "workflow_runs": [{"status": "queued"}, {"id": 7}]}
        return JSONResponse(listing)

    app = Starlette(routes=[Route("/repos/acme/app/actions/runs", runs)])
    with serve_loopback(app) as url, pat_adapter(clock, url) as adapter:
        assert adapter.list_workflow_runs("acme/app", "queued") == [
            WorkflowRun(id=0, status="queued"),
            WorkflowRun(id=7, status=""),
        ]
    assert served == ["/repos/acme/app/actions/runs"]


def test_workflow_reads_fail_as_port_errors(
    adapter: PyGithubAdapter, fake: FakeGitHub, clock: ManualClock
) -> None:
    fake.impose_secondary_rate_limit(90)
    with pytest.raises(RateLimitedError) as limited:
        adapter.list_workflow_runs(REPO.repository, "queued")
    assert limited.value.retry_after == 90
    assert "list queued workflow runs in /repos/acme/app" in str(limited.value)
    clock.advance(90)
    fake.fail_next(status=502, method="GET")
    with pytest.raises(GitHubError) as failed:
        adapter.visible_runner_groups("acme", "app")
    assert failed.value.status == 502
    assert not isinstance(failed.value, RateLimitedError)


def test_workflow_reads_are_counted_by_endpoint_template(
    adapter: PyGithubAdapter, fake: FakeGitHub
) -> None:
    counted = [f"GET {RUNS}", f"GET {RUN_JOBS}", f"GET {ORG_GROUPS}"]
    before = [calls(endpoint, "2xx") for endpoint in counted]
    job = fake.submit_job(REPO.repository, ["gpu"], 60)
    adapter.list_workflow_runs(REPO.repository, "queued")
    adapter.list_workflow_jobs(REPO.repository, job.run_id)
    adapter.visible_runner_groups("acme", "app")
    assert [calls(endpoint, "2xx") for endpoint in counted] == [n + 1 for n in before]
    not_found = calls(f"GET {RUN_JOBS}", "4xx")
    with pytest.raises(GitHubError):
        adapter.list_workflow_jobs(REPO.repository, 999)
    assert calls(f"GET {RUN_JOBS}", "4xx") == not_found + 1


# -- removal -----------------------------------------------------------------------------------


@pytest.mark.parametrize("scope", SCOPES, ids=SCOPE_IDS)
def test_remove_then_not_found(adapter: PyGithubAdapter, fake: FakeGitHub, scope: Scope) -> None:
    (runner_id,) = register(fake, scope, 1)
    assert adapter.remove_runner(scope, runner_id).outcome is RemoveOutcome.REMOVED
    assert fake.runners(scope) == []
    gone = adapter.remove_runner(scope, runner_id)
    assert gone.outcome is RemoveOutcome.NOT_FOUND
    assert "404" in gone.message


@pytest.mark.parametrize("scope", SCOPES, ids=SCOPE_IDS)
def test_remove_busy(adapter: PyGithubAdapter, fake: FakeGitHub, scope: Scope) -> None:
    (runner_id,) = register(fake, scope, 1)
    fake.set_online(scope, runner_id)
    fake.set_busy(scope, runner_id, True)
    busy = adapter.remove_runner(scope, runner_id)
    assert busy.outcome is RemoveOutcome.BUSY
    assert "is still running a job" in busy.message
    assert busy.retry_after is None
    assert [r.id for r in fake.runners(scope)] == [runner_id]


def test_remove_primary_rate_limited_waits_for_the_reset(clock: ManualClock) -> None:
    limited = FakeGitHub(clock, rate_limit_per_hour=2)
    limited.add_personal_access_token(PAT)
    (runner_id,) = register(limited, ORG, 1)
    with serve_loopback(limited.app) as url, pat_adapter(clock, url) as adapter:
        adapter.list_runners(ORG)  # the budget's hour starts now
        clock.advance(600)
        adapter.list_runners(ORG)
        clock.advance(900.5)
        result = adapter.remove_runner(ORG, runner_id)
        assert result.outcome is RemoveOutcome.RATE_LIMITED
        assert result.retry_after == pytest.approx(3600 - 1500.5)
        with pytest.raises(RateLimitedError) as raised:
            adapter.list_runners(ORG)
        assert raised.value.retry_after == pytest.approx(3600 - 1500.5)
        assert raised.value.status == 403


@pytest.mark.parametrize("status", [403, 429])
def test_remove_secondary_rate_limited_uses_retry_after(
    adapter: PyGithubAdapter, fake: FakeGitHub, status: int
) -> None:
    (runner_id,) = register(fake, ORG, 1)
    fake.impose_secondary_rate_limit(120, status=status)
    result = adapter.remove_runner(ORG, runner_id)
    assert result.outcome is RemoveOutcome.RATE_LIMITED
    assert result.retry_after == 120
    with pytest.raises(RateLimitedError) as raised:
        adapter.registration_token(ORG)
    assert raised.value.retry_after == 120


def test_remove_forbidden(adapter: PyGithubAdapter, fake: FakeGitHub) -> None:
    (runner_id,) = register(fake, REPO, 1)
    fake.fail_next(status=403, method="DELETE")
    result = adapter.remove_runner(REPO, runner_id)
    assert result.outcome is RemoveOutcome.FORBIDDEN
    assert result.retry_after is None


def test_remove_server_error(adapter: PyGithubAdapter, fake: FakeGitHub) -> None:
    (runner_id,) = register(fake, ENTERPRISE, 1)
    fake.fail_next(status=500, method="DELETE")
    result = adapter.remove_runner(ENTERPRISE, runner_id)
    assert result.outcome is RemoveOutcome.ERROR
    assert "500" in result.message
    # The runner is still there; the next attempt goes through.
    assert adapter.remove_runner(ENTERPRISE, runner_id).outcome is RemoveOutcome.REMOVED


def test_transport_errors(clock: ManualClock) -> None:
    with pat_adapter(clock, f"http://127.0.0.1:{free_port()}") as adapter:
        result = adapter.remove_runner(ORG, 1)
        assert result.outcome is RemoveOutcome.ERROR
        assert "ConnectionError" in result.message
        with pytest.raises(GitHubError) as raised:
            adapter.list_runners(ORG)
        assert raised.value.status is None


def test_server_error_on_reads(adapter: PyGithubAdapter, fake: FakeGitHub) -> None:
    fake.fail_next(status=502, method="GET")
    with pytest.raises(GitHubError) as raised:
        adapter.list_runners(ORG)
    assert raised.value.status == 502
    assert not isinstance(raised.value, RateLimitedError)


def test_bad_credentials(clock: ManualClock, base_url: str) -> None:
    adapter = PyGithubAdapter(auth=Auth.Token("ghp_wrong"), clock=clock, base_url=base_url)
    with pytest.raises(GitHubError) as raised:
        adapter.list_runners(ORG)
    assert raised.value.status == 401
    assert adapter.remove_runner(ORG, 1).outcome is RemoveOutcome.ERROR
    adapter.close()


# -- classification without a server ---------------------------------------------------------


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
    assert removal_outcome(422, {}, "Validation Failed") is RemoveOutcome.ERROR
    assert removal_outcome(401, {}, "Bad credentials") is RemoveOutcome.ERROR


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


# -- authentication, GHES, factory -------------------------------------------------------------


@pytest.fixture
def app_key(fake: FakeGitHub) -> str:
    private, public = rsa_key()
    fake.configure_app(public, app_id=123, installation_ids=[42], check_jwt_expiry=True)
    return private


def app_settings(base_url: str, key: str, installation_id: int = 42) -> Settings:
    return settings(
        GITHUB_URL=base_url,
        GITHUB_APP_ID="123",
        GITHUB_APP_INSTALLATION_ID=installation_id,
        GITHUB_APP_PRIVATE_KEY=key,
    )


def test_github_app_auth(
    app_key: str, fake: FakeGitHub, clock: ManualClock, base_url: str, tmp_path: Path
) -> None:
    key_file = tmp_path / "key.pem"
    key_file.write_text(app_key)
    register(fake, ORG, 1)
    for key in (app_key, str(key_file)):
        adapter = PyGithubAdapter.from_settings(app_settings(base_url, key), clock)
        assert len(adapter.list_runners(ORG)) == 1
        adapter.registration_token(REPO)
        adapter.close()
    # One installation token per adapter, reused across calls.
    assert fake.count_requests("POST", INSTALLATION_TOKEN_ROUTE, 201) == 2


def test_installation_token_is_refreshed_before_it_expires(
    app_key: str, fake: FakeGitHub, clock: ManualClock, base_url: str
) -> None:
    counted = "POST /app/installations/{installation_id}/access_tokens"
    before = calls(counted, "2xx")
    adapter = PyGithubAdapter.from_settings(app_settings(base_url, app_key), clock)
    adapter.list_runners(ORG)
    clock.advance(50 * 60)
    adapter.list_runners(ORG)
    assert fake.count_requests("POST", INSTALLATION_TOKEN_ROUTE) == 1
    clock.advance(6 * 60)  # under five minutes of validity left
    adapter.list_runners(ORG)
    assert fake.count_requests("POST", INSTALLATION_TOKEN_ROUTE) == 2
    clock.advance(2 * 3600)  # the JWT is signed on the virtual clock too
    adapter.list_runners(ORG)
    assert fake.count_requests("POST", INSTALLATION_TOKEN_ROUTE) == 3
    assert calls(counted, "2xx") - before == 3
    adapter.close()


def test_installation_failure_is_not_a_missing_runner(
    app_key: str, fake: FakeGitHub, clock: ManualClock, base_url: str
) -> None:
    adapter = PyGithubAdapter.from_settings(app_settings(base_url, app_key, 43), clock)
    (runner_id,) = register(fake, ORG, 1)
    # GitHub answers 404 for the installation; that must not read as "runner already gone".
    result = adapter.remove_runner(ORG, runner_id)
    assert result.outcome is RemoveOutcome.ERROR
    assert "installation token" in result.message
    with pytest.raises(GitHubError) as raised:
        adapter.list_runners(ORG)
    assert raised.value.status == 404
    assert "installation token" in str(raised.value)
    adapter.close()


def test_ghes_base_url_and_user_agent(
    fake: FakeGitHub, clock: ManualClock, base_url: str, recorder: Recorder
) -> None:
    ghes = settings(GITHUB_ENTERPRISE_URL=base_url, GITHUB_TOKEN=PAT)
    assert ghes.api_base_url == f"{base_url}/api/v3"
    adapter = PyGithubAdapter.from_settings(ghes, clock)
    ids = register(fake, ORG, 130)
    assert [r.id for r in adapter.list_runners(ORG)] == ids
    assert adapter.registration_token(ENTERPRISE).token
    (runner_id,) = register(fake, ENTERPRISE, 1)
    assert adapter.remove_runner(ENTERPRISE, runner_id).outcome is RemoveOutcome.REMOVED
    paths = [path for path, _ in recorder.requests]
    assert len(paths) == 4
    assert all(path.startswith("/api/v3/") for path in paths)
    for _, headers in recorder.requests:
        assert headers["user-agent"].startswith("arc-hooks/")
        assert headers["authorization"] == f"token {PAT}"
    adapter.close()


def test_factory_caches(fake: FakeGitHub, clock: ManualClock, base_url: str) -> None:
    github: GitHubPort = github_from_settings(
        settings(GITHUB_URL=base_url, GITHUB_TOKEN=PAT), clock
    )
    assert isinstance(github, CachedGitHub)
    register(fake, ORG, 3)
    assert len(github.list_runners(ORG)) == 3
    assert len(github.list_runners(ORG)) == 3
    assert fake.count_requests("GET", "/orgs/{org}/actions/runners") == 1
    inner = github.inner
    assert isinstance(inner, PyGithubAdapter)
    inner.close()


def test_factory_needs_credentials(clock: ManualClock) -> None:
    with pytest.raises(ValueError, match="GITHUB_TOKEN"):
        github_from_settings(settings(), clock)


def test_concurrent_calls_from_many_threads(adapter: PyGithubAdapter, fake: FakeGitHub) -> None:
    ids = register(fake, ORG, 120)
    threads = 8
    barrier = threading.Barrier(threads)
    answers: list[list[int]] = []
    lock = threading.Lock()

    def work() -> None:
        barrier.wait(timeout=10)
        runners = adapter.list_runners(ORG)
        with lock:
            answers.append([r.id for r in runners])

    workers = [threading.Thread(target=work) for _ in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=30)
    assert answers == [ids] * threads
    assert 1 <= len(adapter._idle) <= threads  # clients went back to the pool


def test_clients_are_reused_across_threads(adapter: PyGithubAdapter, fake: FakeGitHub) -> None:
    register(fake, ORG, 1)
    for _ in range(10):  # worker threads come and go
        worker = threading.Thread(target=adapter.list_runners, args=(ORG,))
        worker.start()
        worker.join(timeout=10)
    assert len(adapter._idle) == 1
    assert fake.count_requests("GET", "/orgs/{org}/actions/runners") == 10


# -- metrics and secrets -----------------------------------------------------------------------


def test_every_call_is_counted_by_endpoint_template(
    adapter: PyGithubAdapter, fake: FakeGitHub
) -> None:
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
    adapter.list_runners(ORG)  # two pages
    adapter.remove_runner(ORG, ids[0])
    adapter.remove_runner(ORG, ids[0])
    adapter.remove_runner(ORG, ids[1])
    adapter.registration_token(REPO)
    adapter.generate_jit_config(ENTERPRISE, "dup", ["k8s"], 1, "_work")
    with pytest.raises(ConflictError):
        adapter.generate_jit_config(ENTERPRISE, "dup", ["k8s"], 1, "_work")
    fake.impose_secondary_rate_limit(30)
    adapter.remove_runner(ORG, ids[2])

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


def test_no_secret_in_logs_or_errors(
    app_key: str,
    fake: FakeGitHub,
    clock: ManualClock,
    base_url: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    caplog.set_level(logging.DEBUG, logger="github")  # PyGithub pins its logger to INFO
    secrets: list[str] = [PAT]
    errors: list[str] = []
    with pat_adapter(clock, base_url) as adapter:
        secrets.append(adapter.registration_token(ORG).token)
        secrets.append(adapter.registration_token(REPO).token)
        secrets.append(
            adapter.generate_jit_config(ORG, "a", ["k8s"], 1, "_work").encoded_jit_config
        )
        secrets.append(
            adapter.generate_jit_config(REPO, "b", ["k8s"], 1, "_work").encoded_jit_config
        )
        for call in (
            lambda: adapter.generate_jit_config(ORG, "a", ["k8s"], 1, "_work"),
            lambda: adapter.runner_group_id(ORG, "missing"),
        ):
            with pytest.raises(GitHubError) as raised:
                call()
            errors.append(str(raised.value))
        fake.fail_next(status=500)
        errors.append(adapter.remove_runner(ORG, 1).message)

    app = PyGithubAdapter.from_settings(app_settings(base_url, app_key), clock)
    app.list_runners(ORG)
    app.registration_token(ENTERPRISE)
    fake.impose_secondary_rate_limit(60)
    with pytest.raises(RateLimitedError) as limited:
        app.list_runners(ORG)
    errors.append(str(limited.value))
    app.close()
    clock.advance(60)
    bad = PyGithubAdapter.from_settings(app_settings(base_url, app_key, 99), clock)
    with pytest.raises(GitHubError) as unknown:
        bad.list_runners(ORG)
    errors.append(str(unknown.value))
    bad.close()

    key_body = app_key.splitlines()[1]
    text = caplog.text + "\n".join(errors)
    assert "github.Requester" in {r.name for r in caplog.records}  # PyGithub did log requests
    assert "ghs_" not in text  # the fake's installation tokens
    for secret in [*secrets, key_body]:
        assert secret not in text
