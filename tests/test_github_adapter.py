"""The PyGithub adapter against the fake GitHub, over real HTTP on loopback: what only it has.

The port's contract (runners, tokens, JIT configs, removal outcomes, runner groups, workflow
runs and jobs, rate limits, errors, metrics) is checked for the adapter and the in-process port
alike in tests/test_github_port_contract.py. Here: answers the fake never gives, transport
errors, app authentication, GHES settings, the factory, the client pool and secrets in logs.
"""

from __future__ import annotations

import logging
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
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
    GitHubError,
    GitHubPort,
    RateLimitedError,
    RemoveOutcome,
    Scope,
    WorkflowRun,
)
from hooks.github.pygithub_adapter import PyGithubAdapter, github_from_settings
from hooks.metrics import REGISTRY
from hooks.settings import Settings

PAT = "ghp_" + "Zq7sEcReT" * 4
REPO = Scope(repository="acme/app")
ORG = Scope(organization="acme")
ENTERPRISE = Scope(enterprise="acme-corp")
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


# -- answers the fake never gives, and no answer at all -----------------------------------------


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


def test_transport_errors(clock: ManualClock) -> None:
    with pat_adapter(clock, f"http://127.0.0.1:{free_port()}") as adapter:
        result = adapter.remove_runner(ORG, 1)
        assert result.outcome is RemoveOutcome.ERROR
        assert "ConnectionError" in result.message
        messages = []
        for _ in range(2):
            with pytest.raises(GitHubError) as raised:
                adapter.list_runners(ORG)
            assert raised.value.status is None
            messages.append(str(raised.value))
        # The same text each time: requests' own names object addresses, which differ.
        assert messages[0] == messages[1] and "0x" not in messages[0]


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


def test_an_app_key_that_cannot_sign_fails_each_call_as_a_github_error(
    fake: FakeGitHub, clock: ManualClock, base_url: str
) -> None:
    """PyJWT's `InvalidKeyError` (an EC key here: GitHub Apps sign with RS256) is no
    `ValueError`: it escaped the port, and every hook calling GitHub answered 500. Now each
    call fails as the port's errors do, naming the key without quoting it, and a removal is an
    error to retry; the server's /readyz says why (tests/test_hook_auth.py)."""
    key = (
        ec.generate_private_key(ec.SECP256R1())
        .private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
        .decode()
    )
    adapter = PyGithubAdapter.from_settings(app_settings(base_url, key), clock)
    try:
        for call in (lambda: adapter.list_runners(ORG), lambda: adapter.registration_token(REPO)):
            with pytest.raises(GitHubError, match="private key is not an unencrypted RSA") as err:
                call()
            assert key.splitlines()[1] not in str(err.value)
        removal = adapter.remove_runner(ORG, 1)
        assert removal.outcome is RemoveOutcome.ERROR
        assert "private key is not an unencrypted RSA" in removal.message
    finally:
        adapter.close()


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


# -- secrets -----------------------------------------------------------------------------------


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
