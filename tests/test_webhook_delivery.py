"""The webhook logic end to end on the simulated GitHub's deliveries: signed, parsed, decided.

The receiver below is the whole wiring an HTTP endpoint needs around the pure functions.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

import pytest

from arc_sim.events import EventLoop
from arc_sim.fake_github import FakeGitHub
from arc_sim.webhooks import WebhookSender
from hooks.clock import ManualClock
from hooks.github.port import Scope
from hooks.webhook import (
    Action,
    Decision,
    GroupScope,
    RunnerGroup,
    RunnerGroupVisibility,
    ScaleTarget,
    WebhookError,
    decide,
    parse_event,
    payload_from_body,
    verify_signature,
)

START = datetime(2026, 1, 1, tzinfo=UTC)  # the start of the `clock` fixture (tests/conftest.py)
SECRET = "webhook secret"
ORG = Scope(organization="octo-org")
REPOSITORY = "octo-org/hello-world"


@dataclass
class Receiver:
    """Verify, parse, decide; answer 401 for a bad signature and 400 for a bad delivery."""

    clock: ManualClock
    targets: list[ScaleTarget]
    secret: bytes = SECRET.encode()
    visibility: RunnerGroupVisibility | None = None
    decisions: list[Decision] = field(default_factory=list)

    def __call__(self, headers: dict[str, str], body: bytes) -> int:
        if not verify_signature(
            self.secret, body, headers.get("X-Hub-Signature-256"), headers.get("X-Hub-Signature")
        ):
            return 401
        try:
            event = parse_event(
                headers.get("X-GitHub-Event", ""),
                payload_from_body(headers.get("Content-Type"), body),
            )
        except WebhookError:
            return 400
        self.decisions.append(
            decide(
                event, self.targets, now=self.clock.now(), runner_group_visibility=self.visibility
            )
        )
        return 200


def target(name: str, **runner_config: object) -> ScaleTarget:
    return ScaleTarget.from_objects(
        {
            "metadata": {"name": name, "namespace": "runners", "uid": f"uid-{name}"},
            "spec": {
                "scaleTargetRef": {"name": name},
                "scaleUpTriggers": [{"githubEvent": {"workflowJob": {}}, "duration": "30m"}],
            },
        },
        {
            "kind": "RunnerDeployment",
            "metadata": {"name": name, "namespace": "runners"},
            "spec": {"template": {"spec": runner_config}},
        },
    )


@pytest.fixture
def loop(clock: ManualClock) -> EventLoop:
    return EventLoop(clock, seed=11)


@pytest.fixture
def github(fake_github: FakeGitHub) -> FakeGitHub:
    """Here `github` is the simulated GitHub, whose jobs send the webhooks."""
    return fake_github


def run_job(github: FakeGitHub, loop: EventLoop, labels: list[str]) -> int:
    """Queue a job, let a runner take it after 5 s, complete it after 60 s more."""
    job = github.submit_job(REPOSITORY, labels, 60)
    loop.run_for(5)
    token = github.create_registration_token(ORG).value
    runner_id = github.register_runner(ORG, "runner-a", labels, token).id
    github.set_online(ORG, runner_id)
    loop.run_for(60)
    github.complete_job(job.id)
    loop.run_for(5)
    return job.id


def test_a_job_reserves_a_runner_while_queued_and_releases_it_on_completion(
    github: FakeGitHub, loop: EventLoop, clock: ManualClock
) -> None:
    k8s = target("k8s", organization="octo-org", labels=["k8s"])
    receiver = Receiver(clock, [target("gpu", organization="octo-org", labels=["gpu"]), k8s])
    sender = WebhookSender(loop, receiver, secret=SECRET, delay_seconds=1)
    sender.watch(github)
    job_id = run_job(github, loop, ["self-hosted", "k8s"])

    assert [d.status for d in sender.deliveries] == [200, 200, 200]
    queued, in_progress, completed = receiver.decisions
    assert queued == Decision(
        Action.CREATE_RESERVATION,
        "scaled k8s by 1",
        target=k8s,
        reservation_name=f"job-{job_id}",
        effective_time=START + timedelta(seconds=1),
        expiration_time=START + timedelta(minutes=30, seconds=1),
        notes=("runners/gpu: its RunnerDeployment 'gpu' lacks the job's labels k8s",),
    )
    assert (in_progress.action, in_progress.target) == (Action.MARK_JOB_STARTED, k8s)
    assert in_progress.reservation_name == f"job-{job_id}"
    assert (completed.action, completed.message) == (Action.DELETE_RESERVATION, "scaled k8s by -1")
    assert (completed.target, completed.reservation_name) == (k8s, f"job-{job_id}")


def test_a_duplicated_delivery_names_the_same_reservation(
    github: FakeGitHub, loop: EventLoop, clock: ManualClock
) -> None:
    receiver = Receiver(clock, [target("k8s", organization="octo-org", labels=["k8s"])])
    sender = WebhookSender(loop, receiver, secret=SECRET, duplicate_rate=1.0)
    sender.watch(github)
    github.submit_job(REPOSITORY, ["k8s"], 60)
    loop.run_for(2)
    first, second = receiver.decisions
    assert first.action is second.action is Action.CREATE_RESERVATION
    assert first.reservation_name == second.reservation_name


def test_enterprise_runners_and_group_visibility(
    github: FakeGitHub, loop: EventLoop, clock: ManualClock
) -> None:
    github.set_enterprise_of("octo-org", "octo-ent")
    github.add_runner_group(ORG, "gpu", visibility="selected", selected_repositories=["octo-org/x"])

    def visibility(organization: str, repository: str) -> list[RunnerGroup]:
        groups = github.runner_groups(
            Scope(organization=organization), visible_to_repository=f"{organization}/{repository}"
        )
        # The simulated GitHub lists no inherited groups: the enterprise's default group is
        # shared with every organization here.
        return [RunnerGroup(GroupScope.ORGANIZATION, "" if g.default else g.name) for g in groups]

    hidden = target("gpu", organization="octo-org", group="gpu", labels=["k8s"])
    enterprise = target("enterprise", enterprise="octo-ent", labels=["k8s"])
    receiver = Receiver(clock, [hidden, enterprise], visibility=visibility)
    WebhookSender(loop, receiver, secret=SECRET).watch(github)
    github.submit_job(REPOSITORY, ["k8s"], 60)
    loop.run_for(2)
    (decision,) = receiver.decisions
    assert decision.message == "no horizontalrunnerautoscaler to scale for this github event"
    assert decision.notes == (
        "runner groups not visible to octo-org/hello-world: enterprise default group, "
        "organization 'gpu'",
    )

    def with_enterprise(organization: str, repository: str) -> list[RunnerGroup]:
        return [*visibility(organization, repository), RunnerGroup(GroupScope.ENTERPRISE)]

    receiver.visibility = with_enterprise
    github.submit_job(REPOSITORY, ["k8s"], 60)
    loop.run_for(2)
    assert receiver.decisions[-1].target == enterprise


def test_a_delivery_signed_with_another_secret_is_refused(
    github: FakeGitHub, loop: EventLoop, clock: ManualClock
) -> None:
    receiver = Receiver(clock, [], secret=b"the receiver's secret")
    sender = WebhookSender(loop, receiver, secret="another secret")
    sender.watch(github)
    github.submit_job(REPOSITORY, ["k8s"], 60)
    loop.run_for(2)
    assert [d.status for d in sender.deliveries] == [401]
    assert receiver.decisions == []
