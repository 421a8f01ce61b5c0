"""Only Metacontroller may call the hooks: the Bearer check, token files and their rotation,
the safe default, TLS, and the simulated world's Metacontroller sending the credential."""

from __future__ import annotations

import base64
import contextlib
import datetime
import json
import logging
import os
import signal
import socket
import ssl
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID
from hypothesis import given
from hypothesis import strategies as st
from starlette.applications import Starlette
from starlette.testclient import TestClient

from arc_sim.scenario import load_scenario
from arc_sim.store import ObjectStore
from arc_sim.world import World
from hooks.app import create_app
from hooks.clock import ManualClock
from hooks.github.pygithub_adapter import load_private_key
from hooks.hook_auth import HookCredentials, Verdict, check_authorization
from hooks.server import CertificateReloader, tls_options
from hooks.settings import Settings
from tests.hook_app import GITHUB_TOKEN, HOOK_AUTH, HOOK_TOKEN, WithoutParentReads, hook_settings
from tests.hook_driver import HookDriver, new_runner
from tests.in_memory_github import InMemoryGitHub

TOKEN = HOOK_TOKEN.encode()

# Every hook path the server serves, with a request of the right shape that would do GitHub
# work for an organization runner (a new Runner gets a registration token in its Secret).
RUNNER = new_runner({"organization": "acme", "labels": ["linux"]})
COMPOSITE = {"controller": {}, "parent": RUNNER, "children": {}, "related": {}}
POD = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"name": "runner-0", "namespace": "default", "uid": "p1", "labels": {}},
}
HOOK_CALLS: list[tuple[str, dict[str, Any]]] = [
    ("/sync/runner", COMPOSITE),
    ("/finalize/runner", {**COMPOSITE, "finalizing": True}),
    ("/sync/runnerreplicaset", COMPOSITE),
    ("/sync/runnerdeployment", COMPOSITE),
    ("/sync/runnerset", COMPOSITE),
    ("/finalize/runnerset", {**COMPOSITE, "finalizing": True}),
    ("/sync/horizontalrunnerautoscaler", COMPOSITE),
    ("/sync/runnerpod", {"controller": {}, "object": POD, "attachments": {}}),
    ("/finalize/runnerpod", {"controller": {}, "object": POD, "finalizing": True}),
    ("/customize/runnerdeployment", {"controller": {}, "parent": RUNNER}),
    ("/customize/runnerset", {"controller": {}, "parent": RUNNER}),
    ("/customize/horizontalrunnerautoscaler", {"controller": {}, "parent": RUNNER}),
    ("/customize/runnerpod", {"controller": {}, "parent": POD}),
]
HOOK_PATHS = [path for path, _ in HOOK_CALLS]


def app_client(
    env: Mapping[str, object] | None = None, github: InMemoryGitHub | None = None
) -> TestClient:
    clock = ManualClock()
    settings = Settings.model_validate({"GITHUB_TOKEN": GITHUB_TOKEN, **(env or {})})
    return TestClient(create_app(settings, github=github or InMemoryGitHub(clock), clock=clock))


# ------------------------------------------------------------------------ the decision


@pytest.mark.parametrize(
    ("header", "accepted", "verdict"),
    [
        (b"Bearer " + TOKEN, [TOKEN], Verdict.ALLOWED),
        (b"bearer " + TOKEN, [TOKEN], Verdict.ALLOWED),  # the scheme is case-insensitive
        (b"BEARER   " + TOKEN + b"  ", [TOKEN], Verdict.ALLOWED),
        (b"Bearer " + TOKEN, [b"new", TOKEN], Verdict.ALLOWED),  # a rotation's two tokens
        (None, [TOKEN], Verdict.MISSING),
        (b"", [TOKEN], Verdict.MISSING),
        (b"   ", [TOKEN], Verdict.MISSING),
        (b"Basic " + TOKEN, [TOKEN], Verdict.WRONG_SCHEME),
        (TOKEN, [TOKEN], Verdict.WRONG_SCHEME),
        (b"Bearer", [TOKEN], Verdict.WRONG_TOKEN),
        (b"Bearer ", [TOKEN], Verdict.WRONG_TOKEN),
        (b"Bearer " + TOKEN + b"x", [TOKEN], Verdict.WRONG_TOKEN),
        (b"Bearer " + TOKEN[:-1], [TOKEN], Verdict.WRONG_TOKEN),
        (b"Bearer " + TOKEN.upper(), [TOKEN], Verdict.WRONG_TOKEN),  # tokens are exact
        (b"Bearer " + TOKEN, [], Verdict.NOT_CONFIGURED),
        (None, [], Verdict.NOT_CONFIGURED),
    ],
)
def test_check_authorization(header: bytes | None, accepted: list[bytes], verdict: Verdict) -> None:
    assert check_authorization(header, accepted) is verdict


@given(header=st.one_of(st.none(), st.binary(max_size=200)))
def test_only_a_bearer_header_carrying_the_token_is_allowed(header: bytes | None) -> None:
    verdict = check_authorization(header, [TOKEN])
    if verdict is Verdict.ALLOWED:
        assert header is not None
        scheme, _, presented = header.strip().partition(b" ")
        assert scheme.lower() == b"bearer" and presented.strip() == TOKEN
    else:
        assert verdict.status == 401


@given(token=st.binary(min_size=1, max_size=64).filter(lambda t: t.strip() == t and b" " not in t))
def test_any_token_is_allowed_only_exactly(token: bytes) -> None:
    assert check_authorization(b"Bearer " + token, [token]) is Verdict.ALLOWED
    assert check_authorization(b"Bearer " + token + b"0", [token]) is Verdict.WRONG_TOKEN
    assert check_authorization(b"Bearer " + token, [token + b"0"]) is Verdict.WRONG_TOKEN


# ------------------------------------------------------------------- over HTTP


@pytest.mark.parametrize(
    ("headers", "reason"),
    [
        ({}, "missing"),
        ({"Authorization": f"Basic {HOOK_TOKEN}"}, "wrong_scheme"),
        ({"Authorization": "Bearer not-the-token"}, "wrong_token"),
        ({"Authorization": HOOK_TOKEN}, "wrong_scheme"),
    ],
    ids=["no-header", "basic-scheme", "wrong-token", "no-scheme"],
)
@pytest.mark.parametrize(("path", "request_body"), HOOK_CALLS, ids=HOOK_PATHS)
def test_a_refused_call_gets_401_and_causes_no_github_call(
    path: str,
    request_body: dict[str, Any],
    headers: dict[str, str],
    reason: str,
    caplog: pytest.LogCaptureFixture,
    github: InMemoryGitHub,
) -> None:
    with app_client({"HOOK_BEARER_TOKEN": HOOK_TOKEN}, github) as client:
        caplog.set_level(logging.WARNING, "arc_hooks.hooks")
        response = client.post(path, json=request_body, headers=headers)
    assert response.status_code == 401
    assert response.headers["www-authenticate"] == 'Bearer realm="arc-hooks"'
    assert "error" in response.json() and "children" not in response.json()
    assert github.calls == []
    assert github.count("registration_token") == 0
    refusal = next(r for r in caplog.records if r.getMessage() == "hook refused")
    assert getattr(refusal, "outcome", None) == reason
    logged = " ".join(str(value) for value in vars(refusal).values())
    assert "not-the-token" not in logged and HOOK_TOKEN not in logged


@pytest.mark.parametrize(("path", "request_body"), HOOK_CALLS, ids=HOOK_PATHS)
def test_the_right_token_reaches_every_hook(path: str, request_body: dict[str, Any]) -> None:
    with app_client({"HOOK_BEARER_TOKEN": HOOK_TOKEN}) as client:
        response = client.post(path, json=request_body, headers=HOOK_AUTH)
    assert response.status_code not in (401, 403, 503), response.text


def test_a_forged_sync_gets_no_registration_token_and_metacontroller_does(
    github: InMemoryGitHub,
) -> None:
    with app_client({"HOOK_BEARER_TOKEN": HOOK_TOKEN}, github) as client:
        forged = client.post("/sync/runner", json=COMPOSITE, headers={"Authorization": "Bearer x"})
        assert forged.status_code == 401 and "data" not in forged.text
        assert github.count("registration_token") == 0
        genuine = client.post("/sync/runner", json=COMPOSITE, headers=HOOK_AUTH)
    assert genuine.status_code == 200
    secret = next(c for c in genuine.json()["children"] if c["kind"] == "Secret")
    assert secret["data"]["token"]
    assert github.count("registration_token") == 1


def test_credentials_are_checked_before_the_body_is_read() -> None:
    with app_client({"HOOK_BEARER_TOKEN": HOOK_TOKEN}) as client:
        unauthenticated = client.post("/sync/runner", content=b"{not json")
        authenticated = client.post("/sync/runner", content=b"{not json", headers=HOOK_AUTH)
    assert unauthenticated.status_code == 401
    assert authenticated.status_code == 400


def test_health_metrics_and_the_signed_webhook_need_no_hook_credential() -> None:
    with app_client({"HOOK_BEARER_TOKEN": HOOK_TOKEN}) as client:
        assert client.get("/healthz").status_code == 200
        assert client.get("/readyz").status_code == 200
        assert client.get("/webhook/github").status_code == 200
        # The receiver's own check applies: unsigned deliveries are refused for what they are.
        delivery = client.post("/webhook/github", content=b"{}", headers={"x-github-event": "ping"})
        assert delivery.status_code != 401 or "signature" in delivery.text.lower()
        before = _refusals(client.get("/metrics").text)
        client.post("/sync/runner", json=COMPOSITE)
        after = _refusals(client.get("/metrics").text)
    assert after == before + 1


@pytest.mark.parametrize(
    "env",
    [
        {"HOOKS_ALLOW_UNAUTHENTICATED": "true"},  # the switch for local experiments
        {"HOOK_BEARER_TOKEN": HOOK_TOKEN},
        {},
    ],
)
def test_the_webhook_receiver_serves_no_hook_whatever_its_environment_says(
    env: dict[str, str],
) -> None:
    """`serve --webhook-only`: the receiver's environment comes partly from the ConfigMap the
    hooks share, and it is the one Deployment anyone can reach."""
    clock = ManualClock()
    settings = Settings.model_validate({"GITHUB_TOKEN": GITHUB_TOKEN, **env})
    github = InMemoryGitHub(clock)
    app = create_app(settings, github=github, clock=clock, webhook_only=True)
    with TestClient(app) as client:
        webhook = client.post("/webhook/github", json=COMPOSITE, headers=HOOK_AUTH)
        assert webhook.status_code in (401, 503)
        for path in ("/sync/runner", "/finalize/runner", "/customize/runner", "/sync/runnerpod"):
            answer = client.post(path, json=COMPOSITE, headers=HOOK_AUTH)
            # The webhook's answer, never a hook's.
            assert (answer.status_code, answer.text) == (webhook.status_code, webhook.text), path
        assert github.calls == []
        assert client.get("/healthz").status_code == 200
        assert client.get("/metrics").status_code == 200
        assert client.get("/webhook/github").status_code == 200
        ping = client.post("/webhook/github", content=b"{}", headers={"x-github-event": "ping"})
        assert ping.status_code != 404


@pytest.mark.parametrize(
    ("env", "ready", "says"),
    [
        # No hook token and no GitHub credentials: neither is the receiver's to need.
        ({"GITHUB_WEBHOOK_SECRET_TOKEN": "s3cret"}, True, ""),
        ({"WEBHOOK_ALLOW_UNSIGNED": "true"}, True, ""),
        # Every delivery would be refused.
        ({}, False, "GITHUB_WEBHOOK_SECRET_TOKEN"),
        ({"GITHUB_WEBHOOK_SECRET_TOKEN": ""}, False, "webhook secret"),  # empty: none
        ({"HOOK_BEARER_TOKEN": HOOK_TOKEN, "GITHUB_TOKEN": GITHUB_TOKEN}, False, "webhook secret"),
        # Runner-group lookups configured with an App key that cannot sign.
        (
            {
                "GITHUB_WEBHOOK_SECRET_TOKEN": "s3cret",
                "GITHUB_APP_ID": "1",
                "GITHUB_APP_INSTALLATION_ID": "2",
                "GITHUB_APP_PRIVATE_KEY": "not a key",
            },
            False,
            "GITHUB_APP_PRIVATE_KEY",
        ),
        (
            {
                "GITHUB_WEBHOOK_SECRET_TOKEN": "s3cret",
                "GITHUB_APP_ID": "1",
                "GITHUB_APP_INSTALLATION_ID": "2",
                "GITHUB_APP_PRIVATE_KEY": "not a key",
                "WEBHOOK_RUNNER_GROUP_VISIBILITY": "false",
            },
            True,
            "",
        ),
    ],
)
def test_the_webhook_receivers_readiness_is_its_own(
    env: dict[str, str], ready: bool, says: str
) -> None:
    """`serve --webhook-only` serves no hook: its /readyz does not wait for a hook token (its
    Deployment has none), but says when every delivery would be refused."""
    clock = ManualClock()
    settings = Settings.model_validate(env)
    app = create_app(settings, github=InMemoryGitHub(clock), clock=clock, webhook_only=True)
    with TestClient(app) as client:
        answer = client.get("/readyz")
    assert answer.status_code == (200 if ready else 503), answer.text
    assert says in answer.text
    assert "s3cret" not in answer.text and "not a key" not in answer.text
    # The hook server with the same environment keeps its own rule: no hook token, not ready.
    hooks_app = create_app(settings, github=InMemoryGitHub(clock), clock=clock)
    with TestClient(hooks_app) as client:
        assert client.get("/readyz").status_code == (
            200 if "HOOK_BEARER_TOKEN" in env and "GITHUB_TOKEN" in env else 503
        )


def test_serve_webhook_only_is_passed_to_the_server(monkeypatch: pytest.MonkeyPatch) -> None:
    import hooks.__main__ as cli
    import hooks.logs
    import hooks.server

    served: dict[str, object] = {}

    def record(*args: object, **kwargs: object) -> None:
        served.update(kwargs, health_port=args[4])
        app = args[0]
        assert isinstance(app, Starlette)
        with TestClient(app) as client:  # the receiver's readiness, or the hooks'
            served["readyz"] = client.get("/readyz").text

    monkeypatch.setattr(hooks.server, "serve", record)
    # The test session's logging stays as it is.
    monkeypatch.setattr(hooks.logs, "configure_logging", lambda *args, **kwargs: None)
    monkeypatch.setenv("GITHUB_TOKEN", GITHUB_TOKEN)

    assert cli.main(["serve", "--webhook-only", "--health-port", "8081"]) == 0
    # The receiver's readiness asks for no hook token, only for what it needs itself.
    assert served.pop("readyz") == (
        "not ready: no webhook secret (set GITHUB_WEBHOOK_SECRET_TOKEN, "
        "or WEBHOOK_ALLOW_UNSIGNED=true to accept unsigned deliveries)"
    )
    assert served == {"health_port": 8081}
    served.clear()
    assert cli.main(["serve"]) == 0
    assert "hook" in str(served["readyz"])


@pytest.mark.parametrize("webhook_only", [True, False])
def test_with_a_health_port_the_main_port_serves_no_metrics_nor_readiness_however_asked(
    webhook_only: bool,
) -> None:
    """The main port is the receiver's public one; a route's pattern matches more than its
    path (Python's `$` before a final newline), so `/metrics%0A` once served the metrics."""
    from hooks.server import PRIVATE_PATHS, without_paths

    clock = ManualClock()
    settings = Settings.model_validate({"GITHUB_TOKEN": GITHUB_TOKEN})
    app = create_app(settings, github=InMemoryGitHub(clock), clock=clock, webhook_only=webhook_only)
    with TestClient(without_paths(app, PRIVATE_PATHS)) as client:
        for path in ("/metrics", "/metrics%0A", "/readyz", "/readyz%0A"):
            answer = client.get(path)
            assert (answer.status_code, answer.text) == (404, "served on the health port only")
        assert client.get("/healthz").status_code == 200


def _refusals(metrics: str) -> float:
    prefix = 'arc_hooks_hook_refusals_total{reason="missing"} '
    line = next((line for line in metrics.splitlines() if line.startswith(prefix)), prefix + "0")
    return float(line.removeprefix(prefix))


# ----------------------------------------------------------------- the safe default


def test_without_a_configured_credential_hooks_answer_503_saying_how_to_set_one(
    github: InMemoryGitHub,
) -> None:
    with app_client({}, github) as client:
        for path, body in HOOK_CALLS:
            response = client.post(path, json=body, headers=HOOK_AUTH)
            assert response.status_code == 503, path
            assert "HOOK_BEARER_TOKEN" in response.json()["error"]
        ready = client.get("/readyz")
        assert client.get("/healthz").status_code == 200
    assert github.calls == []
    assert ready.status_code == 503 and "HOOK_BEARER_TOKEN" in ready.text


def test_allowing_unauthenticated_calls_is_explicit() -> None:
    with app_client({"HOOKS_ALLOW_UNAUTHENTICATED": "true"}) as client:
        assert client.post("/sync/runner", json=COMPOSITE).status_code == 200
        assert client.get("/readyz").status_code == 200


def test_a_configured_token_is_required_even_when_unauthenticated_calls_are_allowed() -> None:
    with app_client({"HOOK_BEARER_TOKEN": HOOK_TOKEN, "HOOKS_ALLOW_UNAUTHENTICATED": "true"}) as c:
        assert c.post("/sync/runner", json=COMPOSITE).status_code == 401
        assert c.post("/sync/runner", json=COMPOSITE, headers=HOOK_AUTH).status_code == 200


def test_a_token_file_gone_keeps_hooks_refused_even_when_unauthenticated_calls_are_allowed(
    tmp_path: Path,
) -> None:
    """`HOOKS_ALLOW_UNAUTHENTICATED` is for a server with no token configured: a configured
    file that empties or goes away (its Secret deleted) must not open the hooks."""
    _write_secret_file(tmp_path, "token", HOOK_TOKEN)
    env = {"HOOK_BEARER_TOKEN_FILE": str(tmp_path / "token"), "HOOKS_ALLOW_UNAUTHENTICATED": "true"}
    with app_client(env) as client:
        assert client.post("/finalize/runner", json=COMPOSITE).status_code == 401
        for gone in ("emptied", "removed"):
            if gone == "emptied":
                _write_secret_file(tmp_path, "token", "")
            else:
                (tmp_path / "token").unlink()
            assert client.post("/finalize/runner", json=COMPOSITE).status_code == 503, gone
            assert client.get("/readyz").status_code == 503, gone


@pytest.mark.parametrize("blank", ["", "   ", "\n"])
def test_a_blank_token_setting_keeps_hooks_refused_even_when_unauthenticated_calls_are_allowed(
    blank: str,
) -> None:
    """Found in review: a HOOK_BEARER_TOKEN whose Secret key was emptied opened the hooks."""
    env = {"HOOK_BEARER_TOKEN": blank, "HOOKS_ALLOW_UNAUTHENTICATED": "true"}
    with app_client(env) as client:
        assert client.post("/finalize/runner", json=COMPOSITE).status_code == 503
        assert client.get("/readyz").status_code == 503


# --------------------------------------------------------------- token files, rotated


def _write_secret_file(directory: Path, name: str, value: str) -> None:
    """As the kubelet updates a mounted Secret: a new file swapped in, never edited in place."""
    staged = directory / f".{name}.new"
    staged.write_text(value)
    os.replace(staged, directory / name)


def test_a_rotated_token_file_takes_effect_without_a_restart(tmp_path: Path) -> None:
    _write_secret_file(tmp_path, "token", "first-token\n")
    env = {
        "HOOK_BEARER_TOKEN_FILE": str(tmp_path / "token"),
        "HOOK_BEARER_TOKEN_PREVIOUS_FILE": str(tmp_path / "previous-token"),
    }
    first = {"Authorization": "Bearer first-token"}
    second = {"Authorization": "Bearer second-token"}
    with app_client(env) as client:
        assert client.post("/sync/runner", json=COMPOSITE, headers=first).status_code == 200
        assert client.post("/sync/runner", json=COMPOSITE, headers=second).status_code == 401

        # Rotation: the new token, with the old one still accepted until Metacontroller has it.
        _write_secret_file(tmp_path, "token", "second-token")
        _write_secret_file(tmp_path, "previous-token", "first-token")
        assert client.post("/sync/runner", json=COMPOSITE, headers=first).status_code == 200
        assert client.post("/sync/runner", json=COMPOSITE, headers=second).status_code == 200

        # The rotation is over: the previous token is removed from the Secret.
        (tmp_path / "previous-token").unlink()
        assert client.post("/sync/runner", json=COMPOSITE, headers=first).status_code == 401
        assert client.post("/sync/runner", json=COMPOSITE, headers=second).status_code == 200


def test_a_missing_or_empty_token_file_refuses_hooks_until_it_is_written(tmp_path: Path) -> None:
    path = tmp_path / "token"
    with app_client({"HOOK_BEARER_TOKEN_FILE": str(path)}) as client:
        refused = client.post("/sync/runner", json=COMPOSITE, headers=HOOK_AUTH)
        assert refused.status_code == 503
        assert str(path) in client.get("/readyz").text
        _write_secret_file(tmp_path, "token", "  \n")
        assert client.post("/sync/runner", json=COMPOSITE, headers=HOOK_AUTH).status_code == 503
        _write_secret_file(tmp_path, "token", HOOK_TOKEN)
        assert client.post("/sync/runner", json=COMPOSITE, headers=HOOK_AUTH).status_code == 200
        assert client.get("/readyz").status_code == 200


@pytest.mark.parametrize(
    ("kind", "ready"),
    [
        ("rsa", True),
        ("ec", False),
        ("missing-file", False),
        # The PEM base64-encoded once more (`--from-literal=...=$(base64 -w0 app.pem)`, a Helm
        # value written into `data:`), or quoted: read as the PEM.
        ("base64", True),
        ("quoted", True),
        ("base64-of-garbage", False),
    ],
)
def test_readyz_says_when_the_github_app_key_cannot_sign(
    tmp_path: Path, kind: str, ready: bool
) -> None:
    """The server's own App key is checked once, as PyGithub will sign with it (RS256): one
    that cannot would fail every call, so the replica reports not ready and why."""
    private: Any = (
        _key() if kind == "ec" else rsa.generate_private_key(public_exponent=65537, key_size=2048)
    )
    pem = private.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    ).decode()
    key = {
        "missing-file": str(tmp_path / "absent.pem"),
        "base64": base64.b64encode(pem.encode()).decode(),
        "quoted": f'"{pem}"',
        "base64-of-garbage": base64.b64encode(pem.encode()[::-1]).decode(),
    }.get(kind, pem)
    clock = ManualClock()
    settings = Settings.model_validate(
        {
            "GITHUB_APP_ID": "1",
            "GITHUB_APP_INSTALLATION_ID": 2,
            "GITHUB_APP_PRIVATE_KEY": key,
            "HOOK_BEARER_TOKEN": HOOK_TOKEN,
        }
    )
    with TestClient(create_app(settings, github=InMemoryGitHub(clock), clock=clock)) as client:
        answer = client.get("/readyz")

    assert (answer.status_code == 200) == ready
    if not ready:
        assert "GITHUB_APP_PRIVATE_KEY is not an unencrypted RSA private key" in answer.text
    assert pem.splitlines()[1] not in answer.text
    assert key[:64] not in answer.text


def test_an_unreadable_app_key_is_never_quoted_at_start_or_in_calls(
    capfd: pytest.CaptureFixture[str],
) -> None:
    """A value that is neither a PEM nor a file was opened as a file name; the OSError, which
    quotes the whole value, escaped `create_app` and Python printed it to the pod's log (one
    `base64 -d` from the key, on every restart). The server now starts, reports not ready,
    and fails each GitHub call with a reason that does not quote the value."""
    key = base64.b64encode(b"-----BEGIN NOT A KEY-----" * 400).decode()[::-1]
    settings = Settings.model_validate(
        {
            "GITHUB_APP_ID": "1",
            "GITHUB_APP_INSTALLATION_ID": 2,
            "GITHUB_APP_PRIVATE_KEY": key,
            "HOOK_BEARER_TOKEN": HOOK_TOKEN,
        }
    )
    clock = ManualClock()
    kube = WithoutParentReads(ObjectStore(clock))
    with TestClient(create_app(settings, clock=clock, kube=kube), headers=HOOK_AUTH) as client:
        ready = client.get("/readyz")
        driver = HookDriver(client, new_runner({"organization": "acme"}))
        answer = driver.sync()

    assert ready.status_code == 503
    assert "neither a PEM" in json.dumps(answer["status"])
    seen = ready.text + json.dumps(answer) + "".join(capfd.readouterr())
    assert key[:64] not in seen
    with pytest.raises(ValueError, match="not shown") as raised:
        load_private_key(key)
    assert key[:64] not in str(raised.value)


def test_credentials_read_a_file_once_until_it_changes(tmp_path: Path) -> None:
    path = tmp_path / "token"
    _write_secret_file(tmp_path, "token", "a")
    credentials = HookCredentials(files=[path])
    reads = 0
    original = Path.read_bytes

    def counting_read(self: Path) -> bytes:
        nonlocal reads
        reads += 1
        return original(self)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(Path, "read_bytes", counting_read)
        for _ in range(5):
            assert credentials.accepted() == [b"a"]
        _write_secret_file(tmp_path, "token", "bb")
        assert credentials.accepted() == [b"bb"]
    assert reads == 2


# ------------------------------------------------------- Metacontroller in the simulated world

TINY_SCENARIO = """
name: hook-token
seed: 3
duration: 10m
objects:
  - apiVersion: actions.summerwind.dev/v1alpha1
    kind: Runner
    metadata: {name: one}
    spec: {organization: acme, labels: [linux], ephemeral: false}
jobs:
  - {repository: acme/app, labels: [self-hosted, linux], count: 1, start: 2m, duration: 1m}
"""


def test_the_simulated_metacontroller_authenticates_as_the_manifests_say(tmp_path: Path) -> None:
    path = tmp_path / "scenario.yaml"
    path.write_text(TINY_SCENARIO)
    summary = World(load_scenario(path)).run()
    assert summary.invariants.hold(), summary.table()
    assert summary.jobs.completed == 1


def test_a_server_with_another_token_refuses_the_simulated_metacontroller(tmp_path: Path) -> None:
    path = tmp_path / "scenario.yaml"
    path.write_text(TINY_SCENARIO + "settings: {HOOK_BEARER_TOKEN: another-token}\n")
    world = World(load_scenario(path))
    world.begin()
    world.run_to(300)
    # The Runner's first hook (customize, before any sync) is refused, and so on each retry.
    assert world.emulator.hook_calls["/customize/runner"] > 0
    assert world.emulator.errors["non_200"] > 0
    assert world.store.get("Pod", "default", "one") is None  # nothing was done for the Runner


# --------------------------------------------------------------------------- TLS


def _key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


def _certificate(
    subject: str,
    key: ec.EllipticCurvePrivateKey,
    issuer: tuple[x509.Certificate, ec.EllipticCurvePrivateKey] | None,
    *,
    ca: bool = False,
    usage: x509.ObjectIdentifier | None = None,
) -> x509.Certificate:
    now = datetime.datetime.now(datetime.UTC)
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, subject)])
    builder = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(issuer[0].subject if issuer else name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
    )
    if usage is not None:
        builder = builder.add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
    if usage == ExtendedKeyUsageOID.SERVER_AUTH:
        builder = builder.add_extension(
            x509.SubjectAlternativeName([x509.DNSName("localhost")]), critical=False
        )
    return builder.sign(issuer[1] if issuer else key, hashes.SHA256())


def _write_pem(path: Path, cert: x509.Certificate, key: ec.EllipticCurvePrivateKey) -> None:
    path.with_suffix(".crt").write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    path.with_suffix(".key").write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )


@pytest.fixture
def pki(tmp_path: Path) -> Path:
    """A CA (as cert-manager's issuer), the server's certificate and Metacontroller's."""
    ca_key = _key()
    ca = _certificate("arc-hooks-ca", ca_key, None, ca=True)
    _write_pem(tmp_path / "ca", ca, ca_key)
    for name, usage in (
        ("server", ExtendedKeyUsageOID.SERVER_AUTH),
        ("client", ExtendedKeyUsageOID.CLIENT_AUTH),
    ):
        key = _key()
        _write_pem(tmp_path / name, _certificate(name, key, (ca, ca_key), usage=usage), key)
    stranger_key = _key()
    stranger = _certificate("stranger", stranger_key, None, usage=ExtendedKeyUsageOID.CLIENT_AUTH)
    _write_pem(tmp_path / "stranger", stranger, stranger_key)
    return tmp_path


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass(frozen=True)
class TlsServer:
    url: str
    health_url: str


@pytest.fixture
def tls_server(pki: Path) -> Iterator[TlsServer]:
    port, health_port = _free_port(), _free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "HOOK"))}
    env |= {"GITHUB_TOKEN": GITHUB_TOKEN, "HOOK_BEARER_TOKEN": HOOK_TOKEN}
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "hooks",
            "serve",
            "--port",
            str(port),
            "--tls-cert",
            str(pki / "server.crt"),
            "--tls-key",
            str(pki / "server.key"),
            "--tls-client-ca",
            str(pki / "ca.crt"),
            "--health-port",
            str(health_port),
        ],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    try:
        _wait_for_port(port, server)
        _wait_for_port(health_port, server)
        yield TlsServer(f"https://localhost:{port}", f"http://127.0.0.1:{health_port}")
    finally:
        server.send_signal(signal.SIGTERM)
        try:
            server.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()


def _wait_for_port(port: int, server: subprocess.Popen[bytes]) -> None:
    """Bounded wait for the server to listen (a startup wait, not a timing assertion)."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if server.poll() is not None:
            output = server.stdout.read() if server.stdout else b""
            raise AssertionError(f"server exited with {server.returncode}: {output!r}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return
        except OSError:
            time.sleep(0.05)
    raise AssertionError("server did not listen within 30 s")


def test_serve_speaks_https_and_requires_metacontrollers_client_certificate(
    tls_server: TlsServer, pki: Path
) -> None:
    body = json.dumps({"controller": {}, "parent": RUNNER}).encode()
    with httpx.Client(verify=_client_context(pki, "client")) as client:
        assert client.get(f"{tls_server.url}/healthz").status_code == 200
        # With a health port, readiness and metrics are served there alone.
        assert client.get(f"{tls_server.url}/readyz").status_code == 404
        assert client.get(f"{tls_server.url}/metrics").status_code == 404
        hook = f"{tls_server.url}/customize/runnerdeployment"
        assert client.post(hook, content=body, headers=HOOK_AUTH).status_code == 200
        # mTLS does not replace the token: both are checked.
        assert client.post(hook, content=body).status_code == 401

    for identity in (None, "stranger"):
        with (
            pytest.raises((httpx.ConnectError, httpx.ReadError, httpx.RemoteProtocolError)),
            httpx.Client(verify=_client_context(pki, identity)) as stranger,
        ):
            stranger.get(f"{tls_server.url}/readyz")

    # The kubelet's probes and Prometheus have no client certificate: the health port.
    assert httpx.get(f"{tls_server.health_url}/healthz").status_code == 200
    assert httpx.get(f"{tls_server.health_url}/readyz").status_code == 200
    assert "arc_hooks_hook_duration_seconds" in httpx.get(f"{tls_server.health_url}/metrics").text
    refused = httpx.post(f"{tls_server.health_url}/sync/runner", content=b"{}", headers=HOOK_AUTH)
    assert refused.status_code == 404  # no hook is served without TLS


def _client_context(pki: Path, identity: str | None) -> ssl.SSLContext:
    """Trusts the CA (Metacontroller's caBundle) and presents `identity`'s certificate."""
    context = ssl.create_default_context(cafile=str(pki / "ca.crt"))
    if identity is not None:
        context.load_cert_chain(str(pki / f"{identity}.crt"), str(pki / f"{identity}.key"))
    return context


def test_serve_refuses_incomplete_tls_settings(pki: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "HOOK"))}
    for flags, message in (
        (["--tls-cert", str(pki / "server.crt")], "both a certificate and its private key"),
        (["--tls-client-ca", str(pki / "ca.crt")], "a client CA needs TLS"),
        (
            ["--tls-cert", str(pki / "server.crt"), "--tls-key", str(pki / "client.key")],
            "cannot be used together",
        ),
        (["--tls-cert", str(pki / "nope.crt"), "--tls-key", str(pki / "server.key")], "nope.crt"),
    ):
        result = subprocess.run(
            [sys.executable, "-m", "hooks", "serve", "--port", "1", *flags],
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert result.returncode == 2, result
        assert message in result.stderr


def test_hook_settings_helper_configures_the_token() -> None:
    settings = hook_settings()
    assert settings.hook_bearer_token is not None
    assert settings.hook_bearer_token.get_secret_value() == HOOK_TOKEN


def _served_certificate(server: ssl.SSLContext, pki: Path) -> bytes:
    """The certificate a TLS handshake with `server` presents (in memory, no socket)."""
    client = _client_context(pki, "client")
    client.check_hostname = False
    pipes = [ssl.MemoryBIO() for _ in range(4)]
    client_side = client.wrap_bio(pipes[0], pipes[1])
    server_side = server.wrap_bio(pipes[2], pipes[3], server_side=True)
    for _ in range(10):
        for side in (client_side, server_side):
            with contextlib.suppress(ssl.SSLWantReadError):
                side.do_handshake()
        pipes[2].write(pipes[1].read())
        pipes[0].write(pipes[3].read())
    certificate = client_side.getpeercert(binary_form=True)
    assert certificate is not None
    return certificate


def test_renewed_certificates_are_loaded_into_the_running_server(pki: Path) -> None:
    options = tls_options(str(pki / "server.crt"), str(pki / "server.key"), str(pki / "ca.crt"))
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(options["ssl_certfile"], options["ssl_keyfile"])
    context.load_verify_locations(cafile=options["ssl_ca_certs"])
    context.verify_mode = ssl.CERT_REQUIRED
    reloader = CertificateReloader(
        context, options["ssl_certfile"], options["ssl_keyfile"], options["ssl_ca_certs"]
    )
    first = _served_certificate(context, pki)
    assert reloader.check() is False  # nothing changed

    # cert-manager renews: a new key and certificate from the same CA, swapped in.
    ca = x509.load_pem_x509_certificate((pki / "ca.crt").read_bytes())
    ca_key = serialization.load_pem_private_key((pki / "ca.key").read_bytes(), None)
    assert isinstance(ca_key, ec.EllipticCurvePrivateKey)
    key = _key()
    renewed = _certificate("server", key, (ca, ca_key), usage=ExtendedKeyUsageOID.SERVER_AUTH)
    _write_pem(pki / "renewed", renewed, key)
    os.replace(pki / "renewed.key", pki / "server.key")
    os.replace(pki / "renewed.crt", pki / "server.crt")

    assert reloader.check() is True
    served = _served_certificate(context, pki)
    assert served != first
    assert served == renewed.public_bytes(serialization.Encoding.DER)


def test_half_written_certificates_keep_the_old_ones(pki: Path) -> None:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(str(pki / "server.crt"), str(pki / "server.key"))
    reloader = CertificateReloader(context, str(pki / "server.crt"), str(pki / "server.key"), None)
    first = _served_certificate(context, pki)
    (pki / "server.key").write_bytes(b"-----BEGIN PRIVATE KEY-----\ntruncated")
    assert reloader.check() is False
    assert _served_certificate(context, pki) == first
