"""The simulated GitHub's `workflow_job` webhooks against GitHub's webhook description.

Payloads are validated strictly (no field the description does not list) against the schema of
their action; GitHub's own example payloads pass the same check, which shows the check is fair.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator, ValidationError

from arc_sim.events import EventLoop
from arc_sim.fake_github import FakeGitHub
from arc_sim.webhooks import (
    Delivery,
    WebhookSender,
    signature_256,
    workflow_job_payload,
)
from hooks.clock import ManualClock
from hooks.github.port import Scope

Json = dict[str, Any]

WEBHOOKS = Path(__file__).parent / "reference" / "github" / "webhooks"
DESCRIPTION = json.loads((WEBHOOKS / "openapi-webhooks-workflow-job.json").read_text())
EXAMPLES = sorted((WEBHOOKS / "examples").glob("workflow_job.*.json"))
START = datetime(2026, 1, 1, tzinfo=UTC)  # the start of the `clock` fixture (tests/conftest.py)
SECRET = "It's a Secret to Everybody"
ORG = Scope(organization="octo-org")
HELLO = "octo-org/hello-world"


def _strict(node: Any) -> Any:
    """The schema with `additionalProperties: false` on every object that lists its properties."""
    if isinstance(node, list):
        return [_strict(item) for item in node]
    if not isinstance(node, dict):
        return node
    strict = {key: _strict(value) for key, value in node.items()}
    types = strict.get("type")
    is_object = types == "object" or (isinstance(types, list) and "object" in types)
    if is_object and isinstance(strict.get("properties"), dict):
        strict.setdefault("additionalProperties", False)
    return strict


STRICT_COMPONENTS = _strict(DESCRIPTION["components"])


def validate(payload: Json) -> None:
    """Against the description's schema for the payload's action, strictly."""
    action = str(payload["action"]).replace("_", "-")
    schema = {
        "$ref": f"#/components/schemas/webhook-workflow-job-{action}",
        "components": STRICT_COMPONENTS,
    }
    Draft202012Validator(schema, format_checker=Draft202012Validator.FORMAT_CHECKER).validate(
        payload
    )


@pytest.mark.parametrize("example", EXAMPLES, ids=[e.stem for e in EXAMPLES])
def test_githubs_examples_pass_the_strict_check(example: Path) -> None:
    payload = json.loads(example.read_text())
    if example.stem == "workflow_job.in_progress.0":
        # An old payload, before run_attempt, workflow_name and head_branch existed.
        with pytest.raises(ValidationError, match="is a required property"):
            validate(payload)
    else:
        validate(payload)


def test_the_strict_check_rejects_an_invented_field() -> None:
    payload = json.loads((WEBHOOKS / "examples" / "workflow_job.queued.5.json").read_text())
    payload["workflow_job"]["runner_group"] = "Default"
    with pytest.raises(ValidationError, match="Additional properties"):
        validate(payload)


def test_signature_matches_githubs_documented_vector() -> None:
    expected = "757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17"
    assert signature_256(SECRET, b"Hello, World!") == f"sha256={expected}"
    assert signature_256(SECRET.encode(), b"Hello, World!") == f"sha256={expected}"


# A world with one organization runner and a webhook


class Receiver:
    """The hook server's end: records what arrives, answers a fixed status."""

    def __init__(self, status: int = 404) -> None:
        self.status = status
        self.received: list[tuple[dict[str, str], bytes]] = []

    def __call__(self, headers: dict[str, str], body: bytes) -> int:
        self.received.append((headers, body))
        return self.status


@pytest.fixture
def loop(clock: ManualClock) -> EventLoop:
    return EventLoop(clock, seed=7)


@pytest.fixture
def github(fake_github: FakeGitHub) -> FakeGitHub:
    """Here `github` is the simulated GitHub, whose jobs send the webhooks."""
    return fake_github


def online_runner(github: FakeGitHub, scope: Scope = ORG, name: str = "runner-a") -> int:
    token = github.create_registration_token(scope).value
    runner_id = github.register_runner(scope, name, ["k8s"], token).id
    github.set_online(scope, runner_id)
    return runner_id


def run_one_job(github: FakeGitHub, loop: EventLoop, *, interrupt: bool = False) -> int:
    """A job queued at 0 s, started at 5 s, finished (or interrupted) at 65 s."""
    job = github.submit_job(HELLO, ["self-hosted", "k8s"], 60)
    loop.run_for(5)
    online_runner(github)
    loop.run_for(60)
    if interrupt:
        github.interrupt_job(job.id)
    else:
        github.complete_job(job.id)
    loop.run_for(5)
    return job.id


def test_a_job_sends_queued_in_progress_and_completed(github: FakeGitHub, loop: EventLoop) -> None:
    receiver = Receiver()
    sender = WebhookSender(loop, receiver, secret=SECRET, delay_seconds=2)
    sender.watch(github)
    job_id = run_one_job(github, loop)

    payloads = [json.loads(body) for _, body in receiver.received]
    assert [p["action"] for p in payloads] == ["queued", "in_progress", "completed"]
    for payload in payloads:
        validate(payload)
        assert payload["workflow_job"]["id"] == job_id
        assert payload["repository"]["full_name"] == HELLO
        assert payload["organization"]["login"] == "octo-org"
        assert "enterprise" not in payload and "installation" not in payload
    queued, started, completed = (p["workflow_job"] for p in payloads)
    assert queued["runner_name"] is None and queued["conclusion"] is None
    assert queued["labels"] == ["self-hosted", "k8s"]
    assert (started["runner_name"], started["started_at"]) == ("runner-a", "2026-01-01T00:00:05Z")
    assert (completed["conclusion"], completed["completed_at"]) == (
        "success",
        "2026-01-01T00:01:05Z",
    )
    # Each delivery arrived its delay after the event, and the receiver's answer is recorded.
    assert [d.delivered_at for d in sender.deliveries] == [
        START.replace(second=2),
        START.replace(second=7),
        START.replace(minute=1, second=7),
    ]
    assert [d.status for d in sender.deliveries] == [404, 404, 404]
    assert sender.counts() == {"status 404": 3}


def test_interrupted_job_completes_as_a_failure(github: FakeGitHub, loop: EventLoop) -> None:
    receiver = Receiver(200)
    WebhookSender(loop, receiver, secret=SECRET).watch(github)
    run_one_job(github, loop, interrupt=True)
    completed = json.loads(receiver.received[-1][1])
    validate(completed)
    assert completed["workflow_job"]["conclusion"] == "failure"


def test_delivery_headers(github: FakeGitHub, loop: EventLoop) -> None:
    receiver = Receiver()
    sender = WebhookSender(loop, receiver, secret=SECRET, hook_id=4242, scope=ORG)
    sender.watch(github)
    github.submit_job(HELLO, ["k8s"], 60)
    loop.run_for(1)
    ((headers, body),) = receiver.received
    assert headers["Content-Type"] == "application/json"
    assert headers["User-Agent"].startswith("GitHub-Hookshot/")
    assert headers["X-GitHub-Event"] == "workflow_job"
    assert uuid.UUID(headers["X-GitHub-Delivery"]).version == 4
    assert headers["X-GitHub-Hook-ID"] == "4242"
    assert headers["X-GitHub-Hook-Installation-Target-Type"] == "organization"
    assert headers["X-GitHub-Hook-Installation-Target-ID"] == str(
        json.loads(body)["organization"]["id"]
    )
    # What a receiver checks: HMAC-SHA256 of the raw body, compared in constant time.
    digest = hmac.new(SECRET.encode(), body, hashlib.sha256).hexdigest()
    assert hmac.compare_digest(headers["X-Hub-Signature-256"], f"sha256={digest}")
    assert headers["X-Hub-Signature"].startswith("sha1=")


def test_enterprise_installation_and_user_owners(github: FakeGitHub, loop: EventLoop) -> None:
    github.set_enterprise_of("octo-org", "octo-ent")
    github.set_owner_type("monalisa", "User")
    receiver = Receiver()
    WebhookSender(loop, receiver, secret=SECRET, installation_id=99).watch(github)
    github.submit_job(HELLO, ["k8s"], 60)
    github.submit_job("monalisa/dotfiles", ["k8s"], 60)
    loop.run_for(1)
    org_payload, user_payload = (json.loads(body) for _, body in receiver.received)
    for payload in (org_payload, user_payload):
        validate(payload)
        assert payload["installation"]["id"] == 99
    assert org_payload["enterprise"]["slug"] == "octo-ent"
    assert "organization" not in user_payload and "enterprise" not in user_payload
    assert user_payload["repository"]["owner"]["type"] == "User"


def test_a_scoped_hook_sees_only_its_jobs(github: FakeGitHub, loop: EventLoop) -> None:
    receiver = Receiver()
    hook = WebhookSender(loop, receiver, secret=SECRET, scope=Scope(repository=HELLO))
    hook.watch(github)
    github.submit_job("octo-org/other", ["k8s"], 60)
    github.submit_job(HELLO.upper(), ["k8s"], 60)
    loop.run_for(1)
    assert [json.loads(b)["repository"]["full_name"] for _, b in receiver.received] == [
        HELLO.upper()
    ]
    assert receiver.received[0][0]["X-GitHub-Hook-Installation-Target-Type"] == "repository"


def test_losses_and_duplicates_from_the_seeded_generator(clock: ManualClock) -> None:
    def deliveries(seed: int) -> list[Delivery]:
        loop = EventLoop(ManualClock(START), seed=seed)
        github = FakeGitHub(loop.clock)
        receiver = Receiver(200)
        sender = WebhookSender(loop, receiver, secret=SECRET, loss_rate=0.3, duplicate_rate=0.3)
        sender.watch(github)
        for _ in range(100):
            github.submit_job(HELLO, ["k8s"], 60)
        loop.run_for(10)
        # A lost delivery never reaches the receiver; a duplicate reaches it twice.
        sent = [d for d in sender.deliveries if not d.lost]
        assert [h["X-GitHub-Delivery"] for h, _ in receiver.received] == [
            d.delivery_id for d in sent
        ]
        return sender.deliveries

    first = deliveries(seed=1)
    assert [(d.delivery_id, d.lost, d.copy) for d in first] == [
        (d.delivery_id, d.lost, d.copy) for d in deliveries(seed=1)
    ]
    assert [d.delivery_id for d in first] != [d.delivery_id for d in deliveries(seed=2)]

    lost = [d for d in first if d.lost]
    duplicates = [d for d in first if d.copy == 2]
    assert 15 <= len(lost) <= 45 and 10 <= len(duplicates) <= 40
    assert all(d.status is None and d.delivered_at is None for d in lost)
    originals = {d.delivery_id: d for d in first if d.copy == 1}
    for duplicate in duplicates:
        original = originals[duplicate.delivery_id]
        assert (duplicate.body, duplicate.headers) == (original.body, original.headers)
        assert duplicate.status == original.status == 200


def test_rates_are_checked(loop: EventLoop) -> None:
    with pytest.raises(ValueError, match="loss_rate"):
        WebhookSender(loop, Receiver(), secret=SECRET, loss_rate=1.5)
    with pytest.raises(RuntimeError, match="watch"):
        WebhookSender(loop, Receiver(), secret=SECRET).on_job_event(None)  # type: ignore[arg-type]


def test_payload_for_an_event_without_a_sender(github: FakeGitHub) -> None:
    events: list[Json] = []
    github.add_job_listener(lambda event: events.append(workflow_job_payload(github, event)))
    online_runner(github)
    job = github.submit_job(HELLO, ["k8s"], 60)
    github.complete_job(job.id)
    assert [p["action"] for p in events] == ["queued", "in_progress", "completed"]
    for payload in events:
        validate(payload)
