"""Parsing webhook deliveries: GitHub's example payloads, the simulated GitHub's, malformed ones."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import pytest

from hooks.webhook import (
    MalformedPayloadError,
    PingEvent,
    UnsupportedEventError,
    WebhookError,
    WorkflowJobEvent,
    parse_event,
    payload_from_body,
)

EXAMPLES = sorted((Path(__file__).parent / "reference/github/webhooks/examples").glob("*.json"))
Json = dict[str, Any]


def event_name(example: Path) -> str:
    return example.name.partition(".")[0]


def test_every_kind_of_example_is_there() -> None:
    assert {event_name(e) for e in EXAMPLES} == {"ping", "workflow_job"}
    assert len(EXAMPLES) == 12


@pytest.mark.parametrize("example", EXAMPLES, ids=[e.stem for e in EXAMPLES])
def test_githubs_example_payloads_parse(example: Path) -> None:
    body = example.read_bytes()
    payload: Json = json.loads(body)
    event = parse_event(event_name(example), body)
    if event_name(example) == "ping":
        assert event == PingEvent(zen=payload["zen"], hook_id=payload["hook_id"])
        return
    assert isinstance(event, WorkflowJobEvent)
    job, repository = payload["workflow_job"], payload["repository"]
    assert event.action == payload["action"] == example.name.split(".")[1]
    assert event.job_id == job["id"]
    assert event.run_id == job["run_id"]
    assert event.labels == tuple(job["labels"])
    assert event.conclusion == job["conclusion"]
    assert event.runner_id == job["runner_id"]
    assert event.status == job["status"]
    assert event.job_name == job["name"]
    assert event.repository == repository["full_name"]
    assert event.repository_name == repository["name"]
    assert event.owner_login == repository["owner"]["login"]
    assert event.owner_type == repository["owner"]["type"]
    assert event.organization == (payload.get("organization") or {}).get("login")
    assert event.enterprise == (payload.get("enterprise") or {}).get("slug")
    assert event.installation_id == (payload.get("installation") or {}).get("id")
    assert (event.created_at is None) == (job.get("created_at") is None)
    assert event.workflow_name == job.get("workflow_name")
    assert event.head_branch == job.get("head_branch")
    assert event.step_conclusions == tuple(step["conclusion"] for step in job["steps"])


def test_a_queued_job_waiting_for_a_self_hosted_runner() -> None:
    body = next(e for e in EXAMPLES if e.name == "workflow_job.queued.6.json").read_bytes()
    assert parse_event("workflow_job", body) == WorkflowJobEvent(
        action="queued",
        job_id=12877621891,
        run_id=4747967848,
        labels=("self-hosted", "k8s"),
        conclusion=None,
        runner_id=None,
        repository_name="elastic-machines-testing",
        owner_login="lineville",
        owner_type="User",
        repository="lineville/elastic-machines-testing",
        installation_id=23154469,
        job_name="test",
        status="waiting",
        created_at=datetime(2023, 4, 19, 21, 12, 12, tzinfo=UTC),
        started_at=datetime(2023, 4, 19, 21, 12, 12, tzinfo=UTC),
        workflow_name="Env Test",
        head_branch="main",
    )


def test_the_repository_key_is_built_as_arc_builds_it() -> None:
    # In this example the full name's owner differs from the owner's login; ARC keys on the
    # login and the name.
    body = next(e for e in EXAMPLES if e.name == "workflow_job.completed.1.json").read_bytes()
    event = parse_event("workflow_job", body)
    assert isinstance(event, WorkflowJobEvent)
    assert event.repository == "Codertocat/Hello-World"
    assert event.repository_key == "Octocoders/Hello-World"


def job_payload() -> Json:
    return {
        "action": "queued",
        "workflow_job": {"id": 7, "run_id": 3, "labels": ["gpu"], "conclusion": None},
        "repository": {
            "name": "app",
            "full_name": "acme/app",
            "owner": {"login": "acme", "type": "Organization"},
        },
        "organization": {"login": "acme"},
        "enterprise": {"slug": "megacorp", "id": 1},
        "installation": {"id": 99},
    }


def test_enterprise_and_installation_are_read() -> None:
    event = parse_event("workflow_job", json.dumps(job_payload()).encode())
    assert isinstance(event, WorkflowJobEvent)
    assert (event.organization, event.enterprise, event.installation_id) == ("acme", "megacorp", 99)


def test_optional_fields_may_be_absent() -> None:
    payload = job_payload()
    for key in ("organization", "enterprise", "installation"):
        del payload[key]
    del payload["repository"]["full_name"]
    payload["workflow_job"] = {"id": 7, "labels": []}
    event = parse_event("workflow_job", json.dumps(payload).encode())
    assert isinstance(event, WorkflowJobEvent)
    assert event.repository == "acme/app"
    assert (event.run_id, event.conclusion, event.runner_id, event.labels) == (None, None, None, ())
    assert (event.organization, event.enterprise, event.installation_id) == (None, None, None)


def test_a_minimal_ping_parses() -> None:
    assert parse_event("ping", b"{}") == PingEvent()


def broken(change: str) -> Json:
    payload = job_payload()
    job, repository = payload["workflow_job"], payload["repository"]
    if change == "no job id":
        del job["id"]
    elif change == "job id as text":
        job["id"] = "7"
    elif change == "job id zero":
        job["id"] = 0
    elif change == "labels not a list":
        job["labels"] = "gpu"
    elif change == "label not text":
        job["labels"] = ["gpu", 3]
    elif change == "no labels":
        del job["labels"]
    elif change == "runner id as text":
        job["runner_id"] = "5"
    elif change == "no owner":
        del repository["owner"]
    elif change == "owner type missing":
        del repository["owner"]["type"]
    elif change == "empty owner":
        repository["owner"]["login"] = ""
    elif change == "name with a slash":
        repository["name"] = "acme/app"
    elif change == "no action":
        del payload["action"]
    elif change == "no workflow_job":
        del payload["workflow_job"]
    elif change == "organization without login":
        payload["organization"] = {}
    return payload


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ("no job id", "workflow_job.id"),
        ("job id as text", "workflow_job.id"),
        ("job id zero", "workflow_job.id"),
        ("labels not a list", "workflow_job.labels"),
        ("label not text", "workflow_job.labels.1"),
        ("no labels", "workflow_job.labels"),
        ("runner id as text", "workflow_job.runner_id"),
        ("no owner", "repository.owner"),
        ("owner type missing", "repository.owner.type"),
        ("empty owner", "repository.owner.login"),
        ("name with a slash", "repository.name"),
        ("no action", "action"),
        ("no workflow_job", "workflow_job"),
        ("organization without login", "organization.login"),
    ],
)
def test_malformed_workflow_job_payloads_name_the_field(change: str, field: str) -> None:
    with pytest.raises(MalformedPayloadError, match=r"malformed workflow_job payload: .*") as info:
        parse_event("workflow_job", json.dumps(broken(change)).encode())
    assert f"{field}:" in str(info.value)


@pytest.mark.parametrize("body", [b"", b"not json", b"[]", b'"text"', b"{", b"\xff"])
@pytest.mark.parametrize("event", ["ping", "workflow_job"])
def test_a_body_that_is_not_a_json_object_is_malformed(event: str, body: bytes) -> None:
    with pytest.raises(MalformedPayloadError, match=f"malformed {event} payload"):
        parse_event(event, body)


def test_a_ping_with_mistyped_fields_is_malformed() -> None:
    with pytest.raises(MalformedPayloadError, match="hook_id"):
        parse_event("ping", b'{"hook_id": "one"}')


@pytest.mark.parametrize(
    ("event", "message"),
    [
        ("push", "unsupported event 'push': only ping and workflow_job are handled"),
        ("check_run", "unsupported event 'check_run'"),
        ("", "the X-GitHub-Event header is missing"),
    ],
)
def test_other_events_are_unsupported(event: str, message: str) -> None:
    with pytest.raises(UnsupportedEventError, match=message):
        parse_event(event, b"{}")


def test_every_parse_error_is_a_webhook_error() -> None:
    assert issubclass(MalformedPayloadError, WebhookError)
    assert issubclass(UnsupportedEventError, WebhookError)
    assert issubclass(WebhookError, ValueError)


# Content types


def test_a_json_body_is_the_payload() -> None:
    body = json.dumps(job_payload()).encode()
    assert payload_from_body("application/json", body) is body
    assert payload_from_body("Application/JSON; charset=utf-8", body) is body


def test_a_form_encoded_body_carries_the_payload_in_a_field() -> None:
    payload = json.dumps(job_payload(), ensure_ascii=False).replace("gpu", "gpü").encode()
    body = urlencode({"payload": payload}).encode()
    assert payload_from_body("application/x-www-form-urlencoded", body) == payload
    event = parse_event(
        "workflow_job", payload_from_body("application/x-www-form-urlencoded", body)
    )
    assert isinstance(event, WorkflowJobEvent)
    assert event.labels == ("gpü",)


def test_a_form_keeps_the_payload_bytes_exactly() -> None:
    assert payload_from_body("application/x-www-form-urlencoded", b"payload=%FF%7B") == b"\xff{"


@pytest.mark.parametrize(
    ("body", "message"),
    [(b"other=1", "without a payload field"), (b"payload=\xff", "non-ASCII")],
)
def test_a_malformed_form_is_refused(body: bytes, message: str) -> None:
    with pytest.raises(MalformedPayloadError, match=message):
        payload_from_body("application/x-www-form-urlencoded", body)


@pytest.mark.parametrize("content_type", [None, "", "text/plain", "multipart/form-data"])
def test_other_content_types_are_refused(content_type: str | None) -> None:
    with pytest.raises(MalformedPayloadError, match="unsupported Content-Type"):
        payload_from_body(content_type, b"{}")
