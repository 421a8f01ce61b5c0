"""`githubAPICredentialsFrom`: a resource's own GitHub credentials, from a Secret in its
namespace that Metacontroller relates to its hooks.

Reading the Secret (pure), one port per credentials (caches and budgets apart), the hooks over
HTTP against the fake GitHub with per-token reach, and a simulated world of two organizations.
"""

from __future__ import annotations

import base64
import logging
from typing import Any

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa
from hypothesis import given
from hypothesis import strategies as st
from starlette.applications import Starlette
from starlette.testclient import TestClient

from arc_sim.fake_github import FakeGitHub
from arc_sim.github_port import InProcessGitHub
from hooks.app import create_app
from hooks.autoscaler.controller import customize_horizontal_runner_autoscaler
from hooks.clock import ManualClock, format_time
from hooks.github.cached import CachedGitHub
from hooks.github.clients import NOT_SUPPORTED, GitHubClients
from hooks.github.credentials import (
    CREDENTIALS_CONDITION,
    ApiCredentials,
    CredentialsProblem,
    credentials_rule,
    read_credentials,
)
from hooks.github.port import GitHubError, GitHubPort, Scope
from hooks.runner.controller import customize_runner
from hooks.runner.pod import pod_defaults
from hooks.runnerpod.controller import customize_runner_pod
from hooks.runnerset.controller import customize_runner_set
from hooks.settings import Settings
from hooks.unconfigured import UnconfiguredGitHub
from tests import sim_scenarios
from tests.hook_app import hook_settings
from tests.hook_driver import HookDriver, new_runner, running_status

SERVER_PAT = "ghp_" + "s" * 36
ACME_PAT = "ghp_" + "a" * 36
PEM = (
    rsa.generate_private_key(public_exponent=65537, key_size=2048)
    .private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.TraditionalOpenSSL,
        serialization.NoEncryption(),
    )
    .decode()
)
"""A GitHub App's key, as GitHub hands one out (RSA, PEM)."""
UNLOADABLE_PEM = "-----BEGIN RSA PRIVATE KEY-----\nMIIB\n-----END RSA PRIVATE KEY-----\n"


def other_pem(kind: str) -> str:
    """A PEM PyGithub cannot sign an App's token with (RS256)."""
    if kind == "ec":
        private: Any = ec.generate_private_key(ec.SECP256R1())
    elif kind == "ed25519":
        private = ed25519.Ed25519PrivateKey.generate()
    else:
        private = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    if kind == "rsa-public":
        public: bytes = private.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )
        return public.decode()
    encryption: Any = (
        serialization.BestAvailableEncryption(b"pass")
        if kind == "rsa-encrypted"
        else serialization.NoEncryption()
    )
    pem: bytes = private.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, encryption
    )
    return pem.decode()


def secret(name: str = "acme-github", namespace: str = "default", **values: str) -> dict[str, Any]:
    data = {key: base64.b64encode(value.encode()).decode() for key, value in values.items()}
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": name, "namespace": namespace, "uid": f"uid-{name}"},
        "data": data,
    }


# ------------------------------------------------------------------ reading the Secret


def test_a_token_secret_gives_token_credentials() -> None:
    read = read_credentials(secret(github_token=ACME_PAT), "default", "acme-github")
    assert isinstance(read, ApiCredentials)
    assert (read.token, read.app_id, read.source) == (ACME_PAT, None, "default/acme-github")
    assert read.settings_overrides()["github_app_private_key"] is None


def test_a_token_wins_over_an_app_and_urls_override_only_what_they_name() -> None:
    read = read_credentials(
        secret(
            github_token=ACME_PAT,
            github_app_id="1",
            github_app_installation_id="2",
            github_app_private_key=PEM,
            github_enterprise_url="https://ghe.example.com",
        ),
        "default",
        "acme-github",
    )
    assert isinstance(read, ApiCredentials)
    assert read.app_id is None and read.private_key is None
    overrides = read.settings_overrides()
    assert overrides["github_enterprise_url"] == "https://ghe.example.com"
    # A Secret naming a GitHub Enterprise Server takes both other URLs from it, as ARC's
    # client does (not the server's github_url or runner URL: another host).
    assert overrides["github_url"] is None and overrides["github_runner_github_url"] is None


@pytest.mark.parametrize(
    ("server", "data", "api", "runner"),
    [
        # The Secret's GHES, whatever the server's URLs (found by conformance tests: its runners
        # registered at the server's GITHUB_RUNNER_GITHUB_URL).
        (
            {"github_runner_github_url": "https://proxy.example/", "github_url": "https://p/api"},
            {"github_enterprise_url": "https://ghe.example.com"},
            "https://ghe.example.com/api/v3",
            "https://ghe.example.com/",
        ),
        # URLs it leaves out are the server's (documented: ARC would use github.com's).
        (
            {"github_runner_github_url": "https://proxy.example/"},
            {},
            "https://api.github.com",
            "https://proxy.example/",
        ),
        (
            {"github_enterprise_url": "https://ghe.example.com"},
            {"github_runner_url": "https://other.example/"},
            "https://ghe.example.com/api/v3",
            "https://other.example/",
        ),
        # Its own API on a GHES server: github.com's runners (found in review: they were sent
        # to the server's GHES host, where their registration token is no good).
        (
            {"github_enterprise_url": "https://ghe.example.com"},
            {"github_url": "https://api.github.com"},
            "https://api.github.com",
            "https://github.com/",
        ),
    ],
)
def test_the_urls_of_a_resources_credentials(
    server: dict[str, str], data: dict[str, str], api: str, runner: str
) -> None:
    read = read_credentials(secret(github_token=ACME_PAT, **data), "default", "acme-github")
    assert isinstance(read, ApiCredentials)
    settings = hook_settings().model_copy(update=server)
    assert settings.model_copy(update=read.settings_overrides()).api_base_url == api
    assert pod_defaults(settings, read).runner_github_url == runner


def test_app_credentials_and_string_data_are_read() -> None:
    obj = secret(github_app_id="123", github_app_installation_id="456")
    obj["stringData"] = {"github_app_private_key": PEM}
    read = read_credentials(obj, "default", "acme-github")
    assert isinstance(read, ApiCredentials)
    assert (read.app_id, read.installation_id, read.token) == ("123", 456, None)
    settings = hook_settings().model_copy(update=read.settings_overrides())
    assert settings.github_token is None  # the server's own token is not inherited
    assert settings.github_app_installation_id == 456


@pytest.mark.parametrize(
    ("obj", "reason", "names"),
    [
        (None, "SecretNotFound", "not found"),
        (secret(), "SecretInvalid", "github_token"),
        (secret(github_app_id="1", github_app_installation_id="2"), "SecretInvalid", "private"),
        (
            secret(github_app_id="1", github_app_installation_id="x", github_app_private_key=PEM),
            "SecretInvalid",
            "github_app_installation_id",
        ),
        # A path would make the hook server read one of its own files.
        (
            secret(
                github_app_id="1",
                github_app_installation_id="2",
                github_app_private_key="/var/run/secrets/kubernetes.io/serviceaccount/token",
            ),
            "SecretInvalid",
            "not a PEM",
        ),
        ({"kind": "Secret", "data": {"github_token": "%%% not base64"}}, "SecretInvalid", "set"),
        # Digits `str.isdigit` takes and `int` refuses: a condition, not a 500.
        (
            secret(
                github_app_id="1", github_app_installation_id="\u00b2", github_app_private_key=PEM
            ),
            "SecretInvalid",
            "github_app_installation_id",
        ),
        (
            secret(
                github_app_id="\u0661", github_app_installation_id="2", github_app_private_key=PEM
            ),
            "SecretInvalid",
            "github_app_id",
        ),
    ],
)
def test_unusable_secrets_are_problems_that_say_why(
    obj: dict[str, Any] | None, reason: str, names: str
) -> None:
    read = read_credentials(obj, "team-a", "creds")
    assert isinstance(read, CredentialsProblem)
    assert read.reason == reason
    assert names in read.message and "'creds'" in read.message


SECRET_TEXT = st.text(min_size=4, alphabet=st.characters(min_codepoint=33, max_codepoint=126))


@given(app_id=st.text(max_size=8), installation=st.text(max_size=8))
def test_any_app_and_installation_id_reads_as_credentials_or_a_problem(
    app_id: str, installation: str
) -> None:
    obj = secret(
        github_app_id=app_id, github_app_installation_id=installation, github_app_private_key=PEM
    )
    read = read_credentials(obj, "team-a", "creds")
    if isinstance(read, CredentialsProblem):
        assert read.reason == "SecretInvalid"
    else:
        assert read is not None and read.installation_id == int(installation)


@given(
    token=st.none() | SECRET_TEXT,
    key=st.none() | SECRET_TEXT,
    others=st.dictionaries(
        st.sampled_from(["github_app_id", "github_app_installation_id", "github_url", "x"]),
        SECRET_TEXT,
    ),
)
def test_no_secret_value_reaches_a_message_or_a_repr(
    token: str | None, key: str | None, others: dict[str, str]
) -> None:
    values = dict(others)
    if token is not None:
        values["github_token"] = token = f"TOKEN<{token}>"
    if key is not None:
        values["github_app_private_key"] = key = f"-----BEGIN KEY<{key}>"
    read = read_credentials(secret(**values), "default", "acme-github")
    shown = repr(read) + (read.message if isinstance(read, CredentialsProblem) else "")
    for value in (token, key):
        if value is not None:
            assert value.strip() not in shown


# ------------------------------------------------------------------ one port per credentials


def test_each_credentials_gets_its_own_port_and_a_rotated_secret_a_new_one() -> None:
    built: list[str] = []

    def build(credentials: ApiCredentials) -> GitHubPort:
        built.append(credentials.fingerprint)
        return UnconfiguredGitHub(credentials.source)

    default = UnconfiguredGitHub("server")
    clients = GitHubClients(default, build)
    acme = read_credentials(secret(github_token=ACME_PAT), "default", "acme-github")
    rotated = read_credentials(secret(github_token=SERVER_PAT), "default", "acme-github")
    assert clients.port(None) is default
    assert clients.port(acme) is clients.port(acme)
    assert clients.port(rotated) is not clients.port(acme)
    assert len(built) == 2


def test_unusable_credentials_fail_every_call_with_the_reason_and_never_remove() -> None:
    clients = GitHubClients(UnconfiguredGitHub("server"), lambda _: UnconfiguredGitHub("x"))
    problem = read_credentials(None, "default", "gone")
    port = clients.port(problem)
    with pytest.raises(GitHubError, match="'gone' not found"):
        port.list_runners(Scope(organization="acme"))
    # An unknown answer never lets a pod go as if its runner were unregistered.
    assert port.remove_runner(Scope(organization="acme"), 1).outcome.value == "error"
    with pytest.raises(GitHubError, match=NOT_SUPPORTED):
        GitHubClients(UnconfiguredGitHub("server")).port(
            read_credentials(secret(github_token=ACME_PAT), "default", "c")
        ).registration_token(Scope(organization="acme"))


@pytest.mark.parametrize("kind", ["unloadable", "ec", "ed25519", "rsa-public", "rsa-encrypted"])
def test_an_app_key_pygithub_cannot_sign_with_is_a_problem_that_never_quotes_it(
    kind: str,
) -> None:
    """PyJWT refused such a key only inside the first call (`InvalidKeyError`, not a
    `ValueError`), which escaped the hooks as a 500 and kept a Runner's finalizer."""
    key = UNLOADABLE_PEM if kind == "unloadable" else other_pem(kind)
    values = {"github_app_id": "1", "github_app_installation_id": "2"}
    read = read_credentials(secret(**values, github_app_private_key=key), "default", "creds")
    assert isinstance(read, CredentialsProblem)
    assert read.reason == "SecretInvalid"
    assert "github_app_private_key is not an unencrypted RSA private key" in read.message
    body = key.strip().splitlines()[1]
    assert body not in read.message and body not in repr(read)
    assert isinstance(
        read_credentials(secret(**values, github_app_private_key=PEM), "d", "c"), ApiCredentials
    )


def test_a_secret_that_fails_to_build_a_client_says_so_without_its_content() -> None:
    def build(credentials: ApiCredentials) -> GitHubPort:
        raise ValueError(f"could not load {credentials.private_key}")

    clients = GitHubClients(UnconfiguredGitHub("server"), build)
    creds = read_credentials(
        secret(github_app_id="1", github_app_installation_id="2", github_app_private_key=PEM),
        "default",
        "app",
    )
    with pytest.raises(GitHubError) as raised:
        clients.port(creds).list_runners(Scope(organization="acme"))
    assert "unusable (ValueError)" in str(raised.value) and "MIIB" not in str(raised.value)


# ------------------------------------------------------------------ customize hooks


def test_every_customize_hook_asks_for_the_named_secret() -> None:
    creds = {"githubAPICredentialsFrom": {"secretRef": {"name": "acme-github"}}}
    rule = credentials_rule("team-a", "acme-github")
    runner = {"metadata": {"name": "r", "namespace": "team-a"}, "spec": creds}
    assert customize_runner({"parent": runner}) == {"relatedResources": [rule]}
    assert rule in customize_runner_set({"parent": runner})["relatedResources"]
    hra = {
        "metadata": {"name": "h", "namespace": "team-a"},
        "spec": {"scaleTargetRef": {"name": "rd"}, **creds},
    }
    assert rule in customize_horizontal_runner_autoscaler({"parent": hra})["relatedResources"]
    pod = {
        "metadata": {
            "name": "p",
            "namespace": "team-a",
            "labels": {"actions-runner": ""},
            "annotations": {"actions-runner/github-api-creds-secret": "acme-github"},
        }
    }
    assert customize_runner_pod({"object": pod}) == {"relatedResources": [rule]}
    assert customize_runner({"parent": {"metadata": {"namespace": "x"}, "spec": {}}}) == {
        "relatedResources": []
    }


# ------------------------------------------------------------------ hooks over HTTP


@pytest.fixture
def fake(fake_github: FakeGitHub) -> FakeGitHub:
    fake_github.add_personal_access_token(SERVER_PAT, organizations=["other-org"])
    fake_github.add_personal_access_token(ACME_PAT, organizations=["acme"])
    return fake_github


@pytest.fixture
def app(settings: Settings, fake: FakeGitHub, clock: ManualClock) -> Starlette:
    """The server's own PAT reaches other-org only; acme's Secret brings its own (conftest's
    `client` calls this app)."""

    def build(credentials: ApiCredentials) -> GitHubPort:
        assert credentials.token is not None
        port = InProcessGitHub(fake, credentials.token, clock, credentials=credentials.source)
        return CachedGitHub(port, settings, clock)

    server = CachedGitHub(InProcessGitHub(fake, SERVER_PAT, clock), settings, clock)
    return create_app(settings, github=server, clock=clock, build_credentials_port=build)


def acme_runner(client: TestClient) -> HookDriver:
    spec = {
        "organization": "acme",
        "labels": ["linux"],
        "githubAPICredentialsFrom": {"secretRef": {"name": "acme-github"}},
    }
    return HookDriver(client, new_runner(spec))


def relate(driver: HookDriver, obj: dict[str, Any]) -> None:
    name = obj["metadata"]["name"]
    driver.related = {"Secret.v1": {f"default/{name}": obj}}


def callers(fake: FakeGitHub) -> set[str]:
    return {r.caller_id for r in fake.requests if r.route and "/orgs/" in r.route}


def condition(answer: dict[str, Any], kind: str) -> dict[str, Any]:
    return next(c for c in answer["status"]["conditions"] if c["type"] == kind)


def test_a_runner_registers_with_its_own_credentials(
    client: TestClient, fake: FakeGitHub, caplog: pytest.LogCaptureFixture
) -> None:
    driver = acme_runner(client)
    relate(driver, secret(github_token=ACME_PAT))
    with caplog.at_level(logging.DEBUG):
        answer = driver.sync()

    assert answer["status"]["phase"] == "Created"
    assert condition(answer, CREDENTIALS_CONDITION)["status"] == "True"
    acme_caller = fake.caller_for_token(ACME_PAT)
    assert acme_caller is not None and callers(fake) == {acme_caller.id}
    pod = driver.pod()
    assert pod is not None
    assert pod["metadata"]["annotations"]["actions-runner/github-api-creds-secret"] == (
        "acme-github"
    )
    assert ACME_PAT not in str(answer) and ACME_PAT not in caplog.text


def test_the_server_credentials_do_not_reach_the_organization(
    client: TestClient, fake: FakeGitHub
) -> None:
    """The control: without its Secret's token, the same Runner cannot register."""
    spec = {"organization": "acme", "labels": ["linux"]}
    answer = HookDriver(client, new_runner(spec)).sync()
    registration = condition(answer, "RegistrationReady")
    assert registration["status"] == "False"
    assert "not accessible" in registration["message"]


def test_a_missing_secret_is_a_condition_and_nothing_is_deleted(
    client: TestClient, fake: FakeGitHub, clock: ManualClock
) -> None:
    driver = acme_runner(client)
    relate(driver, secret(github_token=ACME_PAT))
    driver.sync()
    driver.set_pod_status(running_status(format_time(clock.now())))
    driver.sync()
    requests_before = len(fake.requests)

    driver.related = {}  # the Secret was deleted
    answer = driver.sync()
    assert condition(answer, CREDENTIALS_CONDITION) | {"lastTransitionTime": ""} == {
        "type": CREDENTIALS_CONDITION,
        "status": "False",
        "reason": "SecretNotFound",
        "message": "githubAPICredentialsFrom: Secret 'acme-github' not found in namespace "
        "'default'",
        "lastTransitionTime": "",
    }
    assert {c["kind"] for c in answer["children"]} == {"Pod", "Secret"}
    finalized = driver.finalize()
    assert finalized["finalized"] is False  # the registration cannot be removed yet
    assert "'acme-github' not found" in finalized["status"]["gracefulStop"]["message"]
    assert driver.pod() is not None
    assert len(fake.requests) == requests_before  # no call with anyone else's credentials

    relate(driver, secret(github_token=ACME_PAT))  # restored: the stop goes on
    resumed = driver.finalize()
    assert condition(resumed, CREDENTIALS_CONDITION)["status"] == "True"
    assert "not found" not in resumed["status"]["gracefulStop"].get("message", "")


def test_scenario_two_organizations_with_their_own_credentials() -> None:
    """scenarios/credentials-per-organization.yaml: every job runs, nothing leaks, and each
    organization's calls (beta's pull metric included) go to its own token's budget."""
    world = sim_scenarios.world("credentials-per-organization")
    summary = world.run()

    assert summary.invariants.hold(), summary.table()
    assert summary.jobs.completed == summary.jobs.submitted == 12
    assert summary.runners.registered_at_end == 0
    by_account: dict[str, set[str]] = {}
    routes: dict[str, set[str]] = {}
    for record in world.github.requests:
        if record.route and record.route.startswith(("/orgs/{org}", "/repos/{owner}")):
            account = record.path.split("/")[2]
            by_account.setdefault(account, set()).add(record.caller_id)
            routes.setdefault(account, set()).add(record.route)
    alpha, beta = (world.github.caller_for_token(t) for t in ("ghp_alpha", "ghp_beta"))
    assert alpha is not None and beta is not None
    assert by_account == {"alpha": {alpha.id}, "beta": {beta.id}}
    assert "/repos/{owner}/{repo}/actions/runs" in routes["beta"]  # the HRA's own reads
    for caller in (alpha, beta):
        budget = world.github.rate_budget(caller)
        charged = sum(1 for r in world.github.requests if r.caller_id == caller.id)
        assert 0 < budget.used <= charged  # one budget per token, its own calls only
