"""GitHub basic auth (ARC's GITHUB_BASICAUTH_USERNAME and GITHUB_BASICAUTH_PASSWORD, for a proxy
in front of GitHub's API): PyGithub against the fake GitHub over loopback HTTP, which takes a
username with a PAT as its password, as GitHub does."""

from __future__ import annotations

import base64
import logging
from collections.abc import Iterator
from typing import Any

import pytest

from arc_sim.fake_github import FakeGitHub
from arc_sim.loopback import serve_loopback
from hooks.clock import ManualClock
from hooks.github.credentials import ApiCredentials
from hooks.github.port import GitHubError, Scope
from hooks.github.pygithub_adapter import PyGithubAdapter, github_for_credentials
from hooks.health import health_routes
from hooks.hook_auth import HookCredentials
from hooks.logs import configure_logging
from hooks.runner_seal import seal_key
from hooks.settings import Settings
from tests.test_github_adapter import Recorder, register

PAT = "ghp_" + "BasicPass9" * 4
OTHER_PAT = "ghp_" + "ResourceTk" * 4
ORG = Scope(organization="acme")
BASIC = base64.b64encode(f"octo:{PAT}".encode()).decode()


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture
def fake(clock: ManualClock) -> FakeGitHub:
    github = FakeGitHub(clock)
    github.add_personal_access_token(PAT)
    github.add_personal_access_token(OTHER_PAT)
    return github


@pytest.fixture
def recorder(fake: FakeGitHub) -> Recorder:
    return Recorder(fake.app)


@pytest.fixture
def base_url(recorder: Recorder) -> Iterator[str]:
    with serve_loopback(recorder) as url:
        yield url


def settings(**values: Any) -> Settings:
    return Settings.model_validate(values)  # the machine's environment is not read


def basic(base_url: str, password: str = PAT, **more: Any) -> Settings:
    return settings(
        GITHUB_URL=base_url,
        GITHUB_BASICAUTH_USERNAME="octo",
        GITHUB_BASICAUTH_PASSWORD=password,
        **more,
    )


def test_basic_auth_reaches_github_and_goes_before_a_token(
    fake: FakeGitHub, recorder: Recorder, clock: ManualClock, base_url: str
) -> None:
    register(fake, ORG, 1)
    # A token beside it is not used, as in ARC (basic auth is tried first).
    adapter = PyGithubAdapter.from_settings(
        basic(base_url, GITHUB_TOKEN="ghp_" + "NotValid00" * 4), clock
    )
    try:
        assert [r.name for r in adapter.list_runners(ORG)] == ["runner-0"]
        assert adapter.registration_token(ORG).token
    finally:
        adapter.close()
    assert {headers["authorization"] for _, headers in recorder.requests} == {f"Basic {BASIC}"}


def test_a_wrong_password_fails_as_a_github_error_that_never_shows_it(
    clock: ManualClock, base_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    wrong = "ghp_" + "WrongPass0" * 4
    caplog.set_level(logging.DEBUG)
    caplog.set_level(logging.DEBUG, logger="github")
    adapter = PyGithubAdapter.from_settings(basic(base_url, password=wrong), clock)
    try:
        with pytest.raises(GitHubError) as raised:
            adapter.list_runners(ORG)
    finally:
        adapter.close()
    assert raised.value.status == 401
    encoded = base64.b64encode(f"octo:{wrong}".encode()).decode()
    for text in (str(raised.value), caplog.text):
        assert wrong not in text and encoded not in text


@pytest.mark.parametrize(
    "values",
    [
        {"GITHUB_BASICAUTH_USERNAME": "octo"},
        {"GITHUB_BASICAUTH_PASSWORD": PAT},
        {"GITHUB_BASICAUTH_USERNAME": "octo", "GITHUB_BASICAUTH_PASSWORD": ""},
    ],
)
def test_half_of_basic_auth_is_no_credentials(values: dict[str, str]) -> None:
    configured = settings(**values)

    assert not configured.uses_basic_auth
    assert not configured.has_github_credentials


def test_basic_auth_counts_as_credentials_but_not_for_scale_sets(base_url: str) -> None:
    configured = basic(base_url)

    assert configured.has_github_credentials
    assert not configured.has_scale_set_credentials
    assert settings(GITHUB_TOKEN=PAT).has_scale_set_credentials


def test_a_resources_own_secret_replaces_the_servers_basic_auth(
    fake: FakeGitHub, recorder: Recorder, clock: ManualClock, base_url: str
) -> None:
    register(fake, ORG, 1)
    own = ApiCredentials(source="ns/creds", fingerprint="f", token=OTHER_PAT)
    port = github_for_credentials(basic(base_url), clock, own)

    assert [r.name for r in port.list_runners(ORG)] == ["runner-0"]
    assert {headers["authorization"] for _, headers in recorder.requests} == {f"token {OTHER_PAT}"}


def test_the_password_is_masked_in_logs_as_itself_and_as_its_header(
    base_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    configured = basic(base_url)
    assert PAT in configured.github_secrets and BASIC in configured.github_secrets

    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    try:
        configure_logging("INFO", configured.github_secrets)
        logging.getLogger("arc_hooks.test").info("sent %s and Basic %s", PAT, BASIC)
    finally:
        root.handlers[:] = handlers
        root.setLevel(level)
    written = capsys.readouterr()
    assert "sent" in written.out + written.err
    assert PAT not in written.out + written.err and BASIC not in written.out + written.err


def test_the_runner_seal_key_comes_from_basic_auth(base_url: str) -> None:
    key = seal_key(basic(base_url))

    assert key is not None
    assert key != seal_key(basic(base_url, password=OTHER_PAT))
    assert key != seal_key(settings(GITHUB_TOKEN=PAT))


def test_a_server_with_basic_auth_alone_is_ready(base_url: str) -> None:
    from starlette.applications import Starlette
    from starlette.testclient import TestClient

    configured = basic(base_url, HOOK_BEARER_TOKEN="t")
    app = Starlette(routes=health_routes(configured, HookCredentials.from_settings(configured)))
    with TestClient(app) as client:
        answer = client.get("/readyz")

    assert answer.status_code == 200, answer.text


def test_scale_sets_use_the_token_beside_basic_auth_never_the_basic_pair(
    clock: ManualClock, base_url: str
) -> None:
    """Found in review: with both set, the scale-set client sent base64(user:password) as its
    bearer token, and the token was never used."""
    from github import Auth

    from hooks.github.pygithub_adapter import auth_from_settings, scale_set_auth_from_settings

    both = basic(base_url, GITHUB_TOKEN=OTHER_PAT)

    assert isinstance(auth_from_settings(both, clock), Auth.Login)  # the API: as in ARC
    scale_sets = scale_set_auth_from_settings(both, clock)
    assert isinstance(scale_sets, Auth.Token) and scale_sets.token == OTHER_PAT
