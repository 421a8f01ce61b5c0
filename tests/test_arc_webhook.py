"""Ported from actions/actions-runner-controller (Apache-2.0)

ARC's tests of its GitHub webhook server, row by row, at revision 2ee6b3b8 of
controllers/actions.summerwind.net/:

- horizontal_runner_autoscaler_webhook_test.go: every test and every `t.Run` row;
- integration_test.go: the three scenarios that send webhook events (at this revision ARC's
  webhook handles only `workflow_job` and `ping`: its integration test has no `check_run`,
  `pull_request` or `push` step left, and its test file loads neither check_run fixture).

ARC's tests POST to its handler (`HorizontalRunnerAutoscalerGitHubWebhook.Handle`) behind an
`httptest` server; here every delivery is an HTTP POST to `/webhook/github` of this project's
Starlette app, signed with the webhook secret (ARC's test server has no secret and skips the
check). Each row keeps ARC's inputs and its expected status, reply and replicas; where this
project answers differently on purpose, the row asserts ours under a `Deviation from ARC`
comment.

How ARC's harness maps here:

- `testServerWithInitObjs`'s fake client holding `initObjs` is an `ObjectStore` holding the same
  objects, read by the app through `StoreKube`. ARC's objects have no namespace (the fake client
  allows that); here they are in `default`, as `kubectl apply` would put them.
- ARC's test server has no GitHub client, so every runner group counts as visible; here the
  app's runner-group visibility lookup is turned off to match.
- ARC decodes each fixture (tests/fixtures/arc_webhook/, copied verbatim, see the NOTICE there)
  into go-github's struct and encodes it again before sending; here the fixture is sent as it
  is: the fields the webhook reads are the same.
- integration_test.go runs ARC's controllers on envtest and polls with Gomega's `Eventually`;
  here the simulated world (`arc_sim.world.World`: Metacontroller running the shipped
  manifests against the hook server, a kubelet, runner agents and a fake GitHub) runs on a
  virtual clock, polled every 0.5 s of virtual time up to ARC's timeouts.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from starlette.testclient import TestClient

from arc_sim.kube_port import StoreKube
from arc_sim.scenario import ClusterKnobs, Scenario
from arc_sim.store import ObjectStore
from arc_sim.webhooks import signature_256
from arc_sim.world import WEBHOOK_PATH, WEBHOOK_SECRET, World
from hooks.app import create_app
from hooks.autoscaler.reservations import count_reservations, reservations_from_spec
from hooks.clock import ManualClock, format_time
from hooks.github.port import Scope
from hooks.kube.port import CAPACITY_RESERVATIONS
from hooks.resources.autoscaler import HorizontalRunnerAutoscaler
from hooks.settings import Settings
from tests.in_memory_github import InMemoryGitHub

Json = dict[str, Any]

FIXTURES = Path(__file__).parent / "fixtures" / "arc_webhook"
WORKFLOW_JOB_PAYLOAD = (FIXTURES / "org_webhook_workflow_job_payload.json").read_bytes()
SELF_HOSTED_LABEL_PAYLOAD = (
    FIXTURES / "org_webhook_workflow_job_with_self_hosted_label_payload.json"
).read_bytes()

API = "actions.summerwind.dev/v1alpha1"
T0 = datetime(2026, 1, 1, tzinfo=UTC)
NAMESPACE = "default"
SECRET = "arc-webhook-test-secret"
GITHUB_TOKEN = "ghp_" + "x" * 36
NO_TARGET = "no horizontalrunnerautoscaler to scale for this github event"  # ARC's reply


def signed(event_type: str, body: bytes, secret: str = SECRET) -> dict[str, str]:
    """The headers ARC's `sendWebhook` sets, plus the signature GitHub adds."""
    return {
        "X-GitHub-Event": event_type,
        "Content-Type": "application/json",
        "X-Hub-Signature-256": signature_256(secret, body),
    }


# ============================================================================================
# horizontal_runner_autoscaler_webhook_test.go
# ============================================================================================


def workflow_job_hra() -> Json:
    """The HRA of every TestWebhookWorkflowJob* row: `test-name`, one workflowJob trigger."""
    return {
        "apiVersion": API,
        "kind": "HorizontalRunnerAutoscaler",
        "metadata": {"name": "test-name", "namespace": NAMESPACE},
        "spec": {
            "scaleTargetRef": {"name": "test-name"},
            "scaleUpTriggers": [{"githubEvent": {"workflowJob": {}}}],
        },
    }


def runner_deployment(labels: list[str], template_labels: dict[str, str] | None = None) -> Json:
    """The RunnerDeployment `test-name` of MYORG's runners with `labels` (and, in the
    "OldLabels" rows, the pod template's metadata labels)."""
    template: Json = {"spec": {"organization": "MYORG", "labels": labels}}
    if template_labels is not None:
        template = {"metadata": {"labels": template_labels}, **template}
    return {
        "apiVersion": API,
        "kind": "RunnerDeployment",
        "metadata": {"name": "test-name", "namespace": NAMESPACE},
        "spec": {"template": template},
    }


@dataclass(frozen=True)
class Row:
    """ARC's `testServerWithInitObjs(t, eventType, event, wantCode, wantBody, initObjs)`.

    `our_body` is set where this project's reply differs from `want_body` on purpose.
    """

    event_type: str
    event: bytes
    want_code: int
    want_body: str
    init_objs: tuple[Json, ...] = ()
    our_body: str | None = None


# Deviation from ARC: after ARC's sentence, which the reply starts with, it says why each HRA
# that was considered did not match, for the person reading GitHub's delivery log.
WRONG_LABELS_BODY = (
    f"{NO_TARGET} (default/test-name: its RunnerDeployment 'test-name' lacks the job's labels "
    "label1)"
)

ROWS = [
    # TestWebhookPing
    pytest.param(Row("ping", b'{"zen": "zen"}', 200, "pong"), id="TestWebhookPing"),
    # TestWebhookWorkflowJob: "Successful"
    pytest.param(
        Row(
            "workflow_job",
            WORKFLOW_JOB_PAYLOAD,
            200,
            "scaled test-name by 1",
            (workflow_job_hra(), runner_deployment(["label1"])),
        ),
        id="TestWebhookWorkflowJob/Successful",
    ),
    # TestWebhookWorkflowJob: "WrongLabels"
    pytest.param(
        Row(
            "workflow_job",
            WORKFLOW_JOB_PAYLOAD,
            200,
            NO_TARGET,
            (workflow_job_hra(), runner_deployment(["bad-label"])),
            our_body=WRONG_LABELS_BODY,
        ),
        id="TestWebhookWorkflowJob/WrongLabels",
    ),
    # TestWebhookWorkflowJob: "OldLabels" (the pod template's metadata labels are not runner
    # labels)
    pytest.param(
        Row(
            "workflow_job",
            WORKFLOW_JOB_PAYLOAD,
            200,
            NO_TARGET,
            (workflow_job_hra(), runner_deployment(["bad-label"], {"label1": "label1"})),
            our_body=WRONG_LABELS_BODY,
        ),
        id="TestWebhookWorkflowJob/OldLabels",
    ),
    # TestWebhookWorkflowJobWithSelfHostedLabel: "Successful"
    pytest.param(
        Row(
            "workflow_job",
            SELF_HOSTED_LABEL_PAYLOAD,
            200,
            "scaled test-name by 1",
            (workflow_job_hra(), runner_deployment(["label1"])),
        ),
        id="TestWebhookWorkflowJobWithSelfHostedLabel/Successful",
    ),
    # TestWebhookWorkflowJobWithSelfHostedLabel: "WrongLabels"
    pytest.param(
        Row(
            "workflow_job",
            SELF_HOSTED_LABEL_PAYLOAD,
            200,
            NO_TARGET,
            (workflow_job_hra(), runner_deployment(["bad-label"])),
            our_body=WRONG_LABELS_BODY,
        ),
        id="TestWebhookWorkflowJobWithSelfHostedLabel/WrongLabels",
    ),
    # TestWebhookWorkflowJobWithSelfHostedLabel: "OldLabels"
    pytest.param(
        Row(
            "workflow_job",
            SELF_HOSTED_LABEL_PAYLOAD,
            200,
            NO_TARGET,
            (workflow_job_hra(), runner_deployment(["bad-label"], {"label1": "label1"})),
            our_body=WRONG_LABELS_BODY,
        ),
        id="TestWebhookWorkflowJobWithSelfHostedLabel/OldLabels",
    ),
]


def webhook_app(clock: ManualClock, store: ObjectStore, **env: str) -> TestClient:
    """The app with a webhook secret and, as ARC's test server, no runner-group lookup."""
    settings = Settings.model_validate(
        {
            "GITHUB_TOKEN": GITHUB_TOKEN,
            "GITHUB_WEBHOOK_SECRET_TOKEN": SECRET,
            "WEBHOOK_RUNNER_GROUP_VISIBILITY": "false",
            **env,
        }
    )
    app = create_app(settings, github=InMemoryGitHub(clock), clock=clock, kube=StoreKube(store))
    return TestClient(app)


def store_with(clock: ManualClock, objects: tuple[Json, ...]) -> ObjectStore:
    store = ObjectStore(clock)
    for obj in objects:
        store.create(obj)
    return store


@pytest.mark.parametrize("row", ROWS)
def test_webhook_server(row: Row) -> None:
    clock = ManualClock(T0)
    store = store_with(clock, row.init_objs)
    with webhook_app(clock, store) as client:
        response = client.post(
            WEBHOOK_PATH, content=row.event, headers=signed(row.event_type, row.event)
        )

    assert response.status_code == row.want_code
    # The reply starts with ARC's whole reply, so a reader of ARC's replies reads ours.
    assert response.text.startswith(row.want_body)
    assert response.text == (row.our_body or row.want_body)
    # Deviation from ARC: the reservation is a CapacityReservation object named after the job,
    # not an entry appended to the HRA's spec.capacityReservations.
    reservations = store.list_objects(CAPACITY_RESERVATIONS.kind)
    scaled = row.want_body.startswith("scaled")
    assert [r["metadata"]["name"] for r in reservations] == (["job-1234567890"] if scaled else [])
    if scaled:
        assert reservations[0]["spec"]["replicas"] == 1
        assert reservations[0]["spec"]["effectiveTime"] == format_time(T0)
        # ARC's default duration for a trigger without one: 10 minutes.
        expiration = T0 + timedelta(minutes=10)
        assert reservations[0]["spec"]["expirationTime"] == format_time(expiration)


# TestGetRequest
def test_get_request() -> None:
    clock = ManualClock(T0)
    with webhook_app(clock, ObjectStore(clock)) as client:
        response = client.get(WEBHOOK_PATH)

    assert response.status_code == 200
    # ARC's `fmt.Fprintln` ends this line with "\n"; ARC's test checks only the status.
    assert response.text == "webhook server is running"


# TestGetValidCapacityReservations
def test_get_valid_capacity_reservations() -> None:
    # Deviation from ARC: "now" is the virtual clock's, not time.Now().
    now = T0
    effective_time = now - timedelta(minutes=10)  # time.ParseDuration("10m")
    second = timedelta(seconds=1)
    hra = HorizontalRunnerAutoscaler.model_validate(
        {
            "metadata": {"name": "test-name", "namespace": NAMESPACE},
            "spec": {
                "capacityReservations": [
                    {
                        "effectiveTime": format_time(effective_time - second),
                        "expirationTime": format_time(now - second),
                        "replicas": 1,
                    },
                    {
                        "effectiveTime": format_time(effective_time),
                        "expirationTime": format_time(now),
                        "replicas": 2,
                    },
                    {
                        "effectiveTime": format_time(effective_time + second),
                        "expirationTime": format_time(now + second),
                        "replicas": 3,
                    },
                ]
            },
        }
    )

    # ARC's getValidCapacityReservations keeps those with ExpirationTime.After(now); the HRA
    # controller here counts the same ones (no maxReplicas: ARC's function knows none).
    counted = count_reservations(reservations_from_spec(hra.spec.capacity_reservations), None, now)

    want = 3
    assert counted.reserved == want
    assert counted.expired == ("spec.capacityReservations[0]", "spec.capacityReservations[1]")


# ============================================================================================
# The answers of ARC's Handle, case by case (horizontal_runner_autoscaler_webhook.go)
#
# Not rows of ARC's test file: the status code and reply of each branch of the handler its
# tests call, next to this project's, so that every difference is stated.
# ============================================================================================


def job_payload(action: str, **job: Any) -> bytes:
    payload = json.loads(WORKFLOW_JOB_PAYLOAD)
    payload["action"] = action
    payload["workflow_job"].update(job)
    return json.dumps(payload).encode()


@dataclass(frozen=True)
class Case:
    event_type: str
    body: bytes
    arc: tuple[int, str]  # what ARC's Handle answers
    ours: tuple[int, str] | None = None  # set where this project answers otherwise
    labels: tuple[str, ...] = ("label1",)  # of the RunnerDeployment
    bad_signature: bool = False


CASES = [
    pytest.param(
        Case(
            "workflow_job",
            WORKFLOW_JOB_PAYLOAD,
            (500, "payload signature check failed"),
            # Deviation from ARC: a forged or unsigned delivery is the sender's fault (401).
            (401, "signature mismatch or missing"),
            bad_signature=True,
        ),
        id="bad signature",
    ),
    pytest.param(
        Case(
            "workflow_job",
            b"not json",
            (500, "invalid character 'o' in literal null (expecting 'u')"),
            # Deviation from ARC: a payload that cannot be read is a bad request (400), and
            # the reply names the problem in this project's words.
            (
                400,
                "malformed workflow_job payload: Invalid JSON: expected ident at line 1 column 2",
            ),
        ),
        id="malformed payload",
    ),
    pytest.param(
        Case(
            "check_run",
            b'{"action": "created"}',
            (500, ""),  # "unknown event type": ARC writes no body
            # Deviation from ARC: GitHub sends every event a hook subscribes to; one this
            # receiver does not act on is accepted (202) with the reason, not failed.
            (202, "ignored: unsupported event 'check_run': only ping and workflow_job are handled"),
        ),
        id="check_run event",
    ),
    pytest.param(
        Case(
            "workflow_job",
            job_payload("in_progress", status="in_progress", runner_id=7),
            (200, ""),
            # Deviation from ARC: the reply says why nothing changed.
            (200, "ignored workflow_job action 'in_progress': it does not scale"),
        ),
        id="in_progress",
    ),
    pytest.param(
        Case(
            "workflow_job",
            job_payload("completed", status="completed", conclusion="skipped"),
            (200, ""),
            # Deviation from ARC: the reply says why nothing changed.
            (200, "ignored the completion of a skipped job"),
        ),
        id="completed skipped, an HRA matches",
    ),
    pytest.param(
        Case(
            "workflow_job",
            job_payload("completed", status="completed", conclusion="skipped"),
            (200, NO_TARGET),
            (200, WRONG_LABELS_BODY),  # ARC's sentence first, then why
            labels=("bad-label",),
        ),
        id="completed skipped, no HRA matches",
    ),
    pytest.param(
        Case(
            "workflow_job",
            job_payload("completed", status="completed", conclusion="success", runner_id=None),
            (200, ""),
            # Deviation from ARC: the reply says why nothing changed.
            (200, "ignored a check run's completion: it had no runner"),
        ),
        id="completed by a check run, an HRA matches",
    ),
    pytest.param(
        Case(
            "workflow_job",
            job_payload("completed", status="completed", conclusion="success", runner_id=None),
            (200, NO_TARGET),
            (200, WRONG_LABELS_BODY),  # ARC's sentence first, then why
            labels=("bad-label",),
        ),
        id="completed by a check run, no HRA matches",
    ),
    pytest.param(
        Case(
            "workflow_job",
            job_payload("completed", status="completed", conclusion="failure", runner_id=7),
            (200, "scaled test-name by -1"),
            # Deviation from ARC: there was no reservation for this job (no queued delivery),
            # so none is removed; a tombstone keeps a late queued delivery from adding one.
            (
                200,
                "default/test-name: job 1234567890 completed before its queued event; recorded",
            ),
        ),
        id="completed without a reservation",
    ),
]


@pytest.mark.parametrize("case", CASES)
def test_arcs_handle_case_by_case(case: Case) -> None:
    clock = ManualClock(T0)
    store = store_with(clock, (workflow_job_hra(), runner_deployment(list(case.labels))))
    headers = signed(case.event_type, case.body, "not-the-secret" if case.bad_signature else SECRET)
    with webhook_app(clock, store) as client:
        response = client.post(WEBHOOK_PATH, content=case.body, headers=headers)

    assert (response.status_code, response.text) == (case.ours or case.arc)
    if case.arc[1] == NO_TARGET:
        assert response.text.startswith(NO_TARGET)


def test_a_queued_job_and_its_completion_scale_by_one_and_back() -> None:
    clock = ManualClock(T0)
    store = store_with(clock, (workflow_job_hra(), runner_deployment(["label1"])))
    completed = job_payload("completed", status="completed", conclusion="success", runner_id=7)
    with webhook_app(clock, store) as client:
        queued = client.post(
            WEBHOOK_PATH,
            content=WORKFLOW_JOB_PAYLOAD,
            headers=signed("workflow_job", WORKFLOW_JOB_PAYLOAD),
        )
        again = client.post(
            WEBHOOK_PATH,
            content=WORKFLOW_JOB_PAYLOAD,
            headers=signed("workflow_job", WORKFLOW_JOB_PAYLOAD),
        )
        clock.advance(60)
        done = client.post(
            WEBHOOK_PATH, content=completed, headers=signed("workflow_job", completed)
        )

    assert (queued.status_code, queued.text) == (200, "scaled test-name by 1")
    # Deviation from ARC: ARC adds a second reservation for the redelivered event ("scaled
    # test-name by 1" again); here the job's one reservation already exists.
    assert (again.status_code, again.text) == (
        200,
        "default/test-name: reservation job-1234567890 already exists, nothing changed",
    )
    assert (done.status_code, done.text) == (200, "scaled test-name by -1")
    (reservation,) = store.list_objects(CAPACITY_RESERVATIONS.kind)
    # Deviation from ARC: ARC drops the oldest reservation of the HRA; here the job's own is
    # marked completed, and stays as a tombstone until it expires.
    assert reservation["spec"]["completionTime"] == format_time(T0 + timedelta(seconds=60))


# ============================================================================================
# integration_test.go: "INTEGRATION: Inside of a new namespace" / "when no existing resources
# exist", the webhook steps of its three scenarios
# ============================================================================================

TEST_NAMESPACE = "testns-arcwh"  # ARC: "testns-" + randStringRunes(5)
RUNNER_DEPLOYMENT_NAME = "example-runnerdeploy"
POLL_SECONDS = 0.5  # Gomega's polling interval in ARC's Expect* helpers
REPLICAS_TIMEOUT = 5.0  # ExpectRunnerSetsManagedReplicasCountEventuallyEquals
RUNNER_SETS_TIMEOUT = 10.0  # ExpectRunnerSetsCountEventuallyEquals
REGISTERED_TIMEOUT = 10.0  # ExpectRegisteredNumberCountEventuallyEquals


def integration_runner_deployment(labels: list[str] | None = None) -> Json:
    config: Json = {
        "repository": "test/valid",
        "image": "bar",
        "group": "baz",
        "env": [{"name": "FOO", "value": "FOOVALUE"}],
    }
    if labels is not None:
        config["labels"] = labels
    return {
        "apiVersion": API,
        "kind": "RunnerDeployment",
        "metadata": {"name": RUNNER_DEPLOYMENT_NAME, "namespace": TEST_NAMESPACE},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"foo": "bar"}},
            "template": {"metadata": {"labels": {"foo": "bar"}}, "spec": config},
        },
    }


def integration_hra() -> Json:
    return {
        "apiVersion": API,
        "kind": "HorizontalRunnerAutoscaler",
        "metadata": {"name": RUNNER_DEPLOYMENT_NAME, "namespace": TEST_NAMESPACE},
        "spec": {
            "scaleTargetRef": {"name": RUNNER_DEPLOYMENT_NAME},
            "minReplicas": 1,
            "maxReplicas": 5,
            # ARC's field ScaleDownDelaySecondsAfterScaleUp, serialized under this name.
            "scaleDownDelaySecondsAfterScaleOut": 1,
            "scaleUpTriggers": [
                {
                    "githubEvent": {"workflowJob": {}},
                    "amount": 1,
                    "duration": "1m0s",  # metav1.Duration{Duration: time.Minute}
                }
            ],
        },
    }


class TestEnvironment:
    """ARC's `testEnvironment`: the controllers and the webhook server of one namespace."""

    __test__ = False  # not a test class, despite ARC's name

    def __init__(self) -> None:
        scenario = Scenario(
            name="arc-integration-test",
            teardown=False,
            # ARC's webhook server watches the test's namespace only.
            settings={"WATCH_NAMESPACE": TEST_NAMESPACE},
            # ARC's envtest has no kubelet: its fake GitHub lists a runner as soon as the
            # Runner object exists. Pods here are scheduled, started and registered, quickly.
            cluster=ClusterKnobs(schedule_delay=0.5, start_delay=1.0, registration_delay=1.0),
        )
        self.world = World(scenario)
        self.world.begin()
        self._loop = asyncio.new_event_loop()

    def close(self) -> None:
        self._loop.close()

    @property
    def elapsed(self) -> float:
        return (self.world.clock.now() - self.world.scenario_start).total_seconds()

    # ExpectCreate
    def create(self, obj: Json) -> None:
        self.world.apply(obj)

    # SendWorkflowJobEvent
    def send_workflow_job_event(
        self,
        org: str,
        repo: str,
        status_and_action: str,
        labels: list[str],
        run_id: int,
        job_id: int,
    ) -> httpx.Response:
        # The fields ARC's helper sets on go-github's WorkflowJobEvent, as JSON.
        event = {
            "workflow_job": {
                "id": job_id,
                "run_id": run_id,
                "status": status_and_action,
                "labels": labels,
            },
            "action": status_and_action,
            "organization": {"login": org},
            "repository": {"owner": {"login": org, "type": "Organization"}, "name": repo},
        }
        body = json.dumps(event).encode()
        headers = signed("workflow_job", body, WEBHOOK_SECRET)

        async def post() -> httpx.Response:
            transport = httpx.ASGITransport(app=self.world.apps[0])
            async with httpx.AsyncClient(transport=transport, base_url="http://hooks") as http:
                return await http.post(WEBHOOK_PATH, content=body, headers=headers)

        response = self._loop.run_until_complete(post())
        assert response.status_code == 200
        return response

    # Gomega's Eventually(...).Should(Equal(want)), on the virtual clock.
    def eventually(self, actual: Callable[[], int], want: int, timeout: float, what: str) -> None:
        deadline = self.elapsed + timeout
        while actual() != want:
            assert self.elapsed < deadline, f"{what}: {actual()} after {timeout}s, want {want}"
            self.world.run_to(self.elapsed + POLL_SECONDS)

    # Stricter than ARC's Eventually for a "does not scale" step: the value holds throughout.
    def consistently(self, actual: Callable[[], int], want: int, timeout: float, what: str) -> None:
        deadline = self.elapsed + timeout
        while True:
            assert actual() == want, f"{what}: {actual()} at {self.elapsed}s, want {want}"
            if self.elapsed >= deadline:
                return
            self.world.run_to(self.elapsed + POLL_SECONDS)

    def runner_sets_count(self) -> int:
        return len(self.world.store.list_objects("RunnerReplicaSet", TEST_NAMESPACE))

    def runner_sets_managed_replicas(self) -> int:
        """As ARC's helper: the one RunnerReplicaSet's spec.replicas, -1 for none or several."""
        runner_sets = self.world.store.list_objects("RunnerReplicaSet", TEST_NAMESPACE)
        if len(runner_sets) != 1:
            return -1
        return int(runner_sets[0]["spec"]["replicas"])

    def registered_number(self) -> int:
        """The runners GitHub lists for test/valid."""
        return len(self.world.github.runner_records(Scope(repository="test/valid")))

    def expect_runner_sets_count(self, want: int, what: str = "runner sets") -> None:
        self.eventually(self.runner_sets_count, want, RUNNER_SETS_TIMEOUT, what)

    def expect_managed_replicas(self, want: int, what: str = "managed replicas") -> None:
        self.eventually(self.runner_sets_managed_replicas, want, REPLICAS_TIMEOUT, what)

    def expect_registered(self, want: int, what: str = "count of fake list runners") -> None:
        self.eventually(self.registered_number, want, REGISTERED_TIMEOUT, what)


@pytest.fixture
def env() -> Iterator[TestEnvironment]:
    environment = TestEnvironment()
    yield environment
    environment.close()


SCALED = f"scaled {RUNNER_DEPLOYMENT_NAME} by 1"


# It("should create and scale organization's repository runners on workflow_job event")
def test_integration_scale_repository_runners_on_workflow_job_event(
    env: TestEnvironment,
) -> None:
    env.create(integration_runner_deployment())
    env.expect_runner_sets_count(1)
    env.expect_managed_replicas(1)
    env.expect_registered(1)

    # Scale-up to 1 replica via ScaleUpTriggers.GitHubEvent.WorkflowJob based scaling
    env.create(integration_hra())
    env.expect_runner_sets_count(1)
    env.expect_managed_replicas(1)
    env.expect_registered(1)

    # Scale-up to 2 replicas on first workflow_job.queued webhook event
    first = env.send_workflow_job_event("test", "valid", "queued", ["self-hosted"], 1234, 4321)
    assert first.text == SCALED
    env.expect_managed_replicas(2, "runners after first webhook event")
    env.expect_registered(2)

    # Scale-up to 3 replicas on second workflow_job.queued webhook event
    second = env.send_workflow_job_event("test", "valid", "queued", ["self-hosted"], 1234, 4321)
    # Deviation from ARC: ARC's second event repeats the first one's job id (4321), so it is
    # the same job delivered again; its reservation exists already and nothing scales. ARC
    # reserves a second runner for it (3 replicas).
    assert second.text == (
        f"{TEST_NAMESPACE}/{RUNNER_DEPLOYMENT_NAME}: reservation job-4321 already exists, "
        "nothing changed"
    )
    env.consistently(env.runner_sets_managed_replicas, 2, REPLICAS_TIMEOUT, "after a redelivery")
    env.expect_registered(2)
    # The step's intent, with a job of its own (id 4322): a second queued job scales to 3.
    other_job = env.send_workflow_job_event("test", "valid", "queued", ["self-hosted"], 1234, 4322)
    assert other_job.text == SCALED
    env.expect_managed_replicas(3, "runners after second webhook event")
    env.expect_registered(3)

    # Do not scale-up on third workflow_job.queued webhook event
    # repo "example" doesn't match our Spec
    third = env.send_workflow_job_event("test", "example", "queued", ["self-hosted"], 1234, 4321)
    assert third.text.startswith(NO_TARGET)
    env.consistently(
        env.runner_sets_managed_replicas, 3, REPLICAS_TIMEOUT, "runners after third webhook event"
    )
    env.expect_registered(3)


# It("should be able to scale visible organization runner group with default labels")
def test_integration_scale_visible_runner_group_with_default_labels(
    env: TestEnvironment,
) -> None:
    env.create(integration_runner_deployment())
    env.create(integration_hra())
    env.expect_runner_sets_count(1)
    env.expect_managed_replicas(1)
    env.expect_registered(1)

    # Scale-up to 2 replicas on first workflow_job webhook event
    event = env.send_workflow_job_event("test", "valid", "queued", ["self-hosted"], 1234, 4321)
    assert event.text == SCALED
    env.expect_runner_sets_count(1, "runner sets after webhook")
    env.expect_managed_replicas(2, "runners after first webhook event")
    env.expect_registered(2)


# It("should be able to scale visible organization runner group with custom labels")
def test_integration_scale_visible_runner_group_with_custom_labels(
    env: TestEnvironment,
) -> None:
    env.create(integration_runner_deployment(labels=["custom-label"]))
    env.create(integration_hra())
    env.expect_runner_sets_count(1)
    env.expect_managed_replicas(1)
    env.expect_registered(1)

    # Scale-up to 2 replicas on first workflow_job webhook event
    event = env.send_workflow_job_event("test", "valid", "queued", ["custom-label"], 1234, 4321)
    assert event.text == SCALED
    env.expect_runner_sets_count(1, "runner sets after webhook")
    env.expect_managed_replicas(2, "runners after first webhook event")
    env.expect_registered(2)
