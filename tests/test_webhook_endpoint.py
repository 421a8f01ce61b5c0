"""`/webhook/github` through the HTTP app.

The main test wires the app as in production: its Kubernetes access is `Kr8sKube`, the
maintained client, talking real HTTP to the fake API server (`FakeKubeApi` on loopback) over a
kubeconfig with a bearer token. The delivery goes to the app over ASGI (httpx) in the same
event loop as the kr8s client; the reservation must then be in the store behind the server.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families
from starlette.testclient import TestClient
from starlette.types import ASGIApp, Receive, Scope, Send

from arc_sim.kube_api import FakeKubeApi
from arc_sim.kube_port import StoreKube
from arc_sim.loopback import serve_loopback
from arc_sim.store import ObjectStore
from arc_sim.webhooks import signature_256
from hooks.app import create_app
from hooks.clock import ManualClock, format_time
from hooks.github.port import WorkflowJob
from hooks.kube.kr8s_adapter import Kr8sKube
from hooks.kube.port import CAPACITY_RESERVATIONS
from hooks.settings import Settings
from hooks.webhook.endpoint import MAX_WEBHOOK_BYTES
from tests.in_memory_github import InMemoryGitHub

EXAMPLES = Path(__file__).parent / "reference" / "github" / "webhooks" / "examples"
T0 = datetime(2026, 1, 1, tzinfo=UTC)  # the start of the `clock` fixture (tests/conftest.py)
API = "actions.summerwind.dev/v1alpha1"
NAMESPACE = "default"
NAME = "example-runners"
WEBHOOK = "/webhook/github"

WEBHOOK_SECRET = "webhook-secret-that-must-never-show"
GITHUB_TOKEN = "ghp_" + "GitHubTokenNeverShown" + "x" * 15
KUBE_TOKEN = "kube-token-that-must-never-show"
SECRETS = (WEBHOOK_SECRET, GITHUB_TOKEN, KUBE_TOKEN)
DELIVERIES = "arc_hooks_webhook_deliveries_total"


def settings() -> Settings:
    return Settings.model_validate(
        {"GITHUB_TOKEN": GITHUB_TOKEN, "GITHUB_WEBHOOK_SECRET_TOKEN": WEBHOOK_SECRET}
    )


def cluster_store(clock: ManualClock) -> ObjectStore:
    """ARC's docs' webhook-driven HRA and its repository RunnerDeployment, as applied."""
    store = ObjectStore(clock)
    store.create(
        {
            "apiVersion": API,
            "kind": "HorizontalRunnerAutoscaler",
            "metadata": {"name": NAME, "namespace": NAMESPACE},
            "spec": {
                "scaleTargetRef": {"kind": "RunnerDeployment", "name": NAME},
                "minReplicas": 0,
                "maxReplicas": 10,
                "scaleUpTriggers": [{"githubEvent": {"workflowJob": {}}, "duration": "30m"}],
            },
        }
    )
    store.create(
        {
            "apiVersion": API,
            "kind": "RunnerDeployment",
            "metadata": {"name": NAME, "namespace": NAMESPACE},
            "spec": {"template": {"spec": {"repository": "octo-org/octo-repo", "labels": ["k8s"]}}},
        }
    )
    return store


def queued_delivery(job_id: int, delivery: str) -> tuple[dict[str, str], bytes]:
    """GitHub's example `queued` delivery, for a `[self-hosted, k8s]` job of octo-org/octo-repo."""
    payload: dict[str, Any] = json.loads((EXAMPLES / "workflow_job.queued.5.json").read_text())
    payload["workflow_job"].update(
        id=job_id, labels=["self-hosted", "k8s"], runner_id=None, created_at=format_time(T0)
    )
    payload["repository"].update(name="octo-repo", full_name="octo-org/octo-repo")
    payload["repository"]["owner"].update(login="octo-org", type="Organization")
    body = json.dumps(payload).encode()
    return signed(body, "workflow_job", delivery), body


def signed(body: bytes, event: str, delivery: str) -> dict[str, str]:
    return {
        "Content-Type": "application/json",
        "X-GitHub-Event": event,
        "X-GitHub-Delivery": delivery,
        "X-Hub-Signature-256": signature_256(WEBHOOK_SECRET, body),
    }


def sample(metrics_text: str, name: str, labels: dict[str, str]) -> float:
    for family in text_string_to_metric_families(metrics_text):
        for found in family.samples:
            if found.name == name and found.labels == labels:
                return float(found.value)
    return 0.0


def assert_no_secret(text: str) -> None:
    for secret in SECRETS:
        assert secret not in text


def write_kubeconfig(path: Path, url: str, token: str) -> str:
    """Given explicitly, so nothing is read from the machine running the tests."""
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "fake", "cluster": {"server": url}}],
        "users": [{"name": "hooks", "user": {"token": token}}],
        "contexts": [{"name": "fake", "context": {"cluster": "fake", "user": "hooks"}}],
        "current-context": "fake",
    }
    path.write_text(json.dumps(config))  # JSON is YAML
    return str(path)


@dataclass
class Recording:
    """The fake API server, noting each request it serves and whether it carried the token."""

    app: ASGIApp
    requests: list[tuple[str, str, bool]] = field(default_factory=list)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            authorization = dict(scope["headers"]).get(b"authorization", b"")
            bearer = authorization == f"Bearer {KUBE_TOKEN}".encode()
            self.requests.append((scope["method"], scope["path"], bearer))
        await self.app(scope, receive, send)


@pytest.fixture
def client(github: InMemoryGitHub, clock: ManualClock) -> Iterator[TestClient]:
    """The webhook endpoint needs no hook token: a client without one."""
    app = create_app(settings(), github=github, clock=clock, kube=StoreKube(cluster_store(clock)))
    with TestClient(app) as test_client:
        yield test_client


# ------------------------------------------------------------------ the endpoint


def test_get_says_the_webhook_server_is_running(client: TestClient) -> None:
    response = client.get(WEBHOOK)

    assert (response.status_code, response.text) == (200, "webhook server is running")


def test_ping_over_http_gets_pong_and_a_bad_signature_gets_401(client: TestClient) -> None:
    ping = (EXAMPLES / "ping.event.0.json").read_bytes()
    headers = signed(ping, "ping", "ping-1")

    pong = client.post(WEBHOOK, content=ping, headers=headers)
    forged = client.post(WEBHOOK, content=ping + b" ", headers=headers)

    assert (pong.status_code, pong.text) == (200, "pong")
    assert forged.status_code == 401
    assert_no_secret(pong.text + forged.text)


@pytest.mark.parametrize(
    "path",
    [
        # ARC's docs' payload URL, routed unrewritten by an Ingress (automatically-scaling-
        # runners.md), and its kustomize example's "/": ARC's server handles every path.
        "/actions-runner-controller-github-webhook-server",
        "/",
        "/sync/runner",  # a hook's path, on the receiver: a delivery like any other
    ],
)
def test_the_receiver_takes_deliveries_at_the_paths_arc_users_configured(
    github: InMemoryGitHub, clock: ManualClock, path: str
) -> None:
    """Found by an ARC conformance check: the receiver answered 404 but at `/webhook/github`,
    so a webhook pointed at ARC's server silently stopped scaling."""
    store = cluster_store(clock)
    app = create_app(
        settings(), github=github, clock=clock, kube=StoreKube(store), webhook_only=True
    )
    ping = (EXAMPLES / "ping.event.0.json").read_bytes()
    headers, queued = queued_delivery(4343, "delivery-path-1")

    with TestClient(app) as client:
        running = client.get(path)
        probed = client.head(path)
        pong = client.post(path, content=ping, headers=signed(ping, "ping", "ping-path"))
        scaled = client.post(path, content=queued, headers=headers)
        forged = client.post(path, content=ping + b" ", headers=signed(ping, "ping", "ping-2"))
        health = client.get("/healthz")

    assert (running.status_code, running.text) == (200, "webhook server is running")
    assert probed.status_code == 200  # found in review: a HEAD probe was read as a delivery
    assert (pong.status_code, pong.text) == (200, "pong")
    assert (scaled.status_code, scaled.text) == (200, f"scaled {NAME} by 1")
    assert store.get(CAPACITY_RESERVATIONS.kind, NAMESPACE, "job-4343") is not None
    assert forged.status_code == 401
    assert (health.status_code, health.text) == (200, "ok")


def test_the_hook_server_takes_deliveries_at_webhook_github_only(client: TestClient) -> None:
    ping = (EXAMPLES / "ping.event.0.json").read_bytes()

    answer = client.post("/", content=ping, headers=signed(ping, "ping", "ping-root"))

    assert answer.status_code == 404


def test_the_answer_masks_a_token_quoted_from_the_delivery(client: TestClient) -> None:
    """GitHub shows the answer in the hook's delivery log (found by a hostile-input probe: an
    event name shaped like a token came back as it was)."""
    token = "ghp_" + "A1b2C3d4E5" * 4
    body = b"{}"

    response = client.post(WEBHOOK, content=body, headers=signed(body, token, "odd-1"))

    assert response.status_code == 202
    assert "unsupported event" in response.text
    assert token not in response.text


def test_a_signed_queued_delivery_is_written_through_kr8s(
    clock: ManualClock, tmp_path: Path
) -> None:
    store = cluster_store(clock)
    server = Recording(FakeKubeApi(store, token=KUBE_TOKEN))
    queued = {"event": "workflow_job", "action": "queued", "outcome": "scaled"}
    headers, body = queued_delivery(4242, "delivery-kr8s-1")

    async def deliver(kubeconfig: str) -> tuple[httpx.Response, str, str]:
        kube = await Kr8sKube.connect(kubeconfig=kubeconfig)
        try:
            app = create_app(settings(), github=InMemoryGitHub(clock), clock=clock, kube=kube)
            transport = httpx.ASGITransport(app=app)
            async with httpx.AsyncClient(transport=transport, base_url="http://hooks") as http:
                before = (await http.get("/metrics")).text
                response = await http.post(WEBHOOK, content=body, headers=headers)
                after = (await http.get("/metrics")).text
        finally:
            await kube.aclose()
        return response, before, after

    with serve_loopback(server) as url:
        kubeconfig = write_kubeconfig(tmp_path / "kubeconfig", url, KUBE_TOKEN)
        response, before, after = asyncio.run(deliver(kubeconfig))

    assert (response.status_code, response.text) == (200, f"scaled {NAME} by 1")
    assert_no_secret(response.text)
    reservation = store.get(CAPACITY_RESERVATIONS.kind, NAMESPACE, "job-4242")
    assert reservation is not None
    hra = store.get("HorizontalRunnerAutoscaler", NAMESPACE, NAME)
    assert hra is not None
    assert reservation["metadata"]["ownerReferences"][0]["uid"] == hra["metadata"]["uid"]
    assert reservation["spec"]["effectiveTime"] == format_time(T0)
    create = (
        "POST",
        f"/apis/arc-hooks.dev/v1alpha1/namespaces/{NAMESPACE}/capacityreservations",
        True,
    )
    assert create in server.requests
    assert all(bearer for method, path, bearer in server.requests if path != "/version")
    assert sample(after, DELIVERIES, queued) == sample(before, DELIVERIES, queued) + 1
    assert_no_secret(after)


def test_an_api_server_refusing_the_credential_is_a_503_without_the_token(
    clock: ManualClock, tmp_path: Path
) -> None:
    store = cluster_store(clock)
    headers, body = queued_delivery(4243, "delivery-kr8s-2")

    async def deliver(kubeconfig: str) -> httpx.Response:
        kube = await Kr8sKube.connect(kubeconfig=kubeconfig)
        try:
            app = create_app(settings(), github=InMemoryGitHub(clock), clock=clock, kube=kube)
            transport = httpx.ASGITransport(app=app)
            async with httpx.AsyncClient(transport=transport, base_url="http://hooks") as http:
                return await http.post(WEBHOOK, content=body, headers=headers)
        finally:
            await kube.aclose()

    with serve_loopback(FakeKubeApi(store, token="the-right-token")) as url:
        kubeconfig = write_kubeconfig(tmp_path / "kubeconfig", url, KUBE_TOKEN)
        response = asyncio.run(deliver(kubeconfig))

    assert response.status_code == 503
    assert "cannot list HorizontalRunnerAutoscalers" in response.text
    assert_no_secret(response.text)
    assert store.list_objects(CAPACITY_RESERVATIONS.kind) == []


def test_an_oversized_body_is_413_and_not_read_as_a_delivery(client: TestClient) -> None:
    rejected = {"event": "-", "action": "-", "outcome": "rejected"}
    before = sample(client.get("/metrics").text, DELIVERIES, rejected)
    body = b" " * (MAX_WEBHOOK_BYTES + 1)

    response = client.post(WEBHOOK, content=body, headers=signed(body, "workflow_job", "big-1"))

    assert response.status_code == 413
    assert_no_secret(response.text)
    assert sample(client.get("/metrics").text, DELIVERIES, rejected) == before + 1


def test_a_late_queued_delivery_of_a_job_github_says_is_over_reserves_nothing(
    github: InMemoryGitHub, clock: ManualClock
) -> None:
    """The server's own GitHub answers the receiver's question about a late delivery (the
    cached, paced workflow-job read the HRA's job checks use)."""
    store = cluster_store(clock)
    app = create_app(settings(), github=github, clock=clock, kube=StoreKube(store))
    headers, body = queued_delivery(7, "late-1")
    run_id = json.loads(body)["workflow_job"]["run_id"]
    github.workflow_jobs[("octo-org/octo-repo", run_id)] = [WorkflowJob("completed", ("k8s",), 7)]
    clock.advance(3 * 3600)
    with TestClient(app) as test_client:
        response = test_client.post(WEBHOOK, content=body, headers=headers)
    assert response.status_code == 200, response.text
    assert "GitHub says it is completed" in response.text
    assert store.list_objects(CAPACITY_RESERVATIONS.kind) == []
