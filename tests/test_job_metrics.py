"""ARC's job metrics (`github_workflow_*`): labelled from the `workflow_job` payload as ARC's
actions-metrics-server labels them, with a bound on the values each label takes; and the
README's list of metrics, checked against the registry."""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from starlette.testclient import TestClient

from arc_sim.kube_port import StoreKube
from arc_sim.store import ObjectStore
from arc_sim.webhooks import signature_256
from hooks import metrics
from hooks.app import create_app
from hooks.clock import ManualClock
from hooks.github.pygithub_adapter import record_rate_limit
from hooks.metrics import REGISTRY
from hooks.settings import Settings
from hooks.telemetry import (
    MAX_LABEL_VALUE_LENGTH,
    OVERFLOW,
    WebhookLabels,
    failed_step,
    record_delivery,
)
from hooks.webhook.events import WorkflowJobEvent, parse_event
from hooks.webhook.receiver import SCALED, Reply
from tests.in_memory_github import InMemoryGitHub

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "tests" / "reference" / "github" / "webhooks" / "examples"
README = (ROOT / "README.md").read_text(encoding="utf-8")
WEBHOOK = "/webhook/github"
SECRET = "job-metrics-webhook-secret"
T0 = datetime(2026, 1, 1, tzinfo=UTC)

COMPLETED = "github_workflow_jobs_completed_total"
QUEUED = "github_workflow_jobs_queued_total"
STARTED = "github_workflow_jobs_started_total"
CONCLUSIONS = "github_workflow_job_conclusions_total"
FAILURES = "github_workflow_job_failures_total"
DELIVERIES = "arc_hooks_webhook_deliveries_total"

_unique = itertools.count()


def unique(prefix: str) -> str:
    """A repository name no other test uses: the registry is process-wide."""
    return f"{prefix}-{next(_unique)}"


def example(name: str, repository: str) -> dict[str, Any]:
    """One of GitHub's example deliveries, moved to a repository of the test's own."""
    payload: dict[str, Any] = json.loads((EXAMPLES / f"workflow_job.{name}.json").read_text())
    payload["repository"]["name"] = repository
    payload["repository"]["full_name"] = f"{payload['repository']['owner']['login']}/{repository}"
    return payload


def app_client(env: dict[str, str] | None = None) -> TestClient:
    clock = ManualClock(T0)
    configured = Settings.model_validate(
        {"GITHUB_WEBHOOK_SECRET_TOKEN": SECRET, "WEBHOOK_RUNNER_GROUP_VISIBILITY": "false"}
        | (env or {})
    )
    app = create_app(
        configured, github=InMemoryGitHub(clock), clock=clock, kube=StoreKube(ObjectStore(clock))
    )
    return TestClient(app)


@pytest.fixture
def client() -> Iterator[TestClient]:
    with app_client() as test_client:
        yield test_client


def deliver(client: TestClient, payload: dict[str, Any], event: str = "workflow_job") -> int:
    body = json.dumps(payload).encode()
    headers = {
        "Content-Type": "application/json",
        "X-GitHub-Event": event,
        "X-GitHub-Delivery": unique("delivery"),
        "X-Hub-Signature-256": signature_256(SECRET, body),
    }
    return client.post(WEBHOOK, content=body, headers=headers).status_code


def samples(name: str, **match: str) -> list[tuple[dict[str, str], float]]:
    """Every sample of `name` whose labels include `match`."""
    return [
        (sample.labels, sample.value)
        for family in REGISTRY.collect()
        for sample in family.samples
        if sample.name == name and match.items() <= sample.labels.items()
    ]


def only(name: str, **match: str) -> tuple[dict[str, str], float]:
    found = samples(name, **match)
    assert len(found) == 1, found
    return found[0]


# ------------------------------------------------------------------ labels from the payload


def test_a_failed_job_from_githubs_example_carries_arcs_labels(client: TestClient) -> None:
    repository = unique("labels-probe")
    payload = example("completed.1", repository)

    assert deliver(client, payload) == 200

    common = {
        "runs_on": "ubuntu-latest",
        "job_name": "linters",
        "organization": "Octocoders",
        "repository": repository,
        "repository_full_name": f"Octocoders/{repository}",
        "owner": "Octocoders",
        "workflow_name": "CodeQL",
        "head_branch": "",  # off by default
    }
    assert only(COMPLETED, repository=repository) == (common, 1.0)
    assert only(CONCLUSIONS, repository=repository) == (common | {"job_conclusion": "failure"}, 1)
    # The eighth step (index 7) failed; without the job's logs ARC's exit code is `na`.
    failure = common | {"failed_step": "7", "exit_code": "na"}
    assert only(FAILURES, repository=repository) == (failure, 1.0)
    run = common | {"job_conclusion": "failure"}
    # 10:34:58 to 10:38:16.
    assert only("github_workflow_job_run_duration_seconds_sum", **run)[1] == 198.0
    assert only("github_workflow_job_run_duration_seconds_count", **run)[1] == 1.0
    assert samples(QUEUED, repository=repository) == []


def test_a_started_job_reports_its_queue_time(client: TestClient) -> None:
    repository = unique("queue-probe")
    payload = example("in_progress.3", repository)
    payload["workflow_job"]["started_at"] = "2021-09-13T02:21:55Z"  # 42 s after created_at

    assert deliver(client, payload) == 200

    labels, value = only(STARTED, repository=repository)
    assert value == 1.0
    assert labels["job_name"] == "Analyze (javascript)"
    assert labels["organization"] == ""  # a delivery without an `organization` object
    assert labels["owner"] == "Octocoders"
    assert only("github_workflow_job_queue_duration_seconds_sum", repository=repository)[1] == 42


ARC_RUNTIME_BUCKETS = (
    *(0.01, 0.05, 0.1, 0.5, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 12, 15, 18, 20, 25, 30, 40, 50),
    *(60, 70, 80, 90, 100, 110, 120, 150, 180, 210, 240, 300, 360, 420, 480, 540, 600, 900),
    *(1200, 1800, 2400, 3000, 3600),
)
"""`runtimeBuckets` of actions/actions-runner-controller `pkg/actionsmetrics/metrics.go`
(Apache-2.0), the buckets of ARC's two job duration histograms."""


def test_a_queue_time_lands_in_arcs_buckets(client: TestClient) -> None:
    """A query or an alert written for ARC that names a bucket (`le="180"`) reads the same."""
    repository = unique("bucket-probe")
    payload = example("in_progress.3", repository)
    payload["workflow_job"]["started_at"] = "2021-09-13T02:23:53Z"  # 160 s after created_at

    assert deliver(client, payload) == 200

    buckets = {
        labels["le"]: value
        for labels, value in samples(
            "github_workflow_job_queue_duration_seconds_bucket", repository=repository
        )
    }
    assert {float(le) for le in buckets} >= set(ARC_RUNTIME_BUCKETS)
    assert (buckets["150.0"], buckets["180.0"]) == (0.0, 1.0)


def test_a_token_in_a_job_name_does_not_reach_metrics(client: TestClient) -> None:
    """Found by a hostile probe: `/metrics` is read without credentials, and a job name may
    quote a command line with a token in it."""
    token = "ghp_Zq9Wm4Xk7Lp2Rt8Vn3Bc6Hj5Df1Gs0Ya7Ue4"
    repository = unique("token-probe")
    payload = example("queued.6", repository)
    payload["workflow_job"]["name"] = f"deploy --token {token}"

    assert deliver(client, payload) == 200

    labels, _ = only(QUEUED, repository=repository)
    assert token not in labels["job_name"] and labels["job_name"].startswith("deploy --token")
    assert token not in client.get("/metrics").text


def test_labels_left_out_of_the_setting_are_exported_empty() -> None:
    repository = unique("setting-probe")
    env = {"JOB_METRICS_LABELS": "repository,head_branch"}
    with app_client(env) as client:
        assert deliver(client, example("queued.6", repository)) == 200

    labels, value = only(QUEUED, repository=repository)
    assert value == 1.0
    assert labels == dict.fromkeys(metrics.JOB_LABELS, "") | {
        "repository": repository,
        "head_branch": "main",
    }


def test_a_job_name_beyond_the_cap_is_reported_as_other() -> None:
    repository = unique("cap-probe")
    with app_client({"JOB_METRICS_MAX_LABEL_VALUES": "2"}) as client:
        for name in ("build (3.11)", "build (3.12)", "build (3.13)", "build (3.11)"):
            payload = example("queued.6", repository)
            payload["workflow_job"]["name"] = name
            assert deliver(client, payload) == 200

    counts = {labels["job_name"]: value for labels, value in samples(QUEUED, repository=repository)}
    assert counts == {"build (3.11)": 2.0, "build (3.12)": 1.0, OVERFLOW: 1.0}


@pytest.mark.parametrize(
    ("event", "status", "outcome"),
    [
        ("workflow_job", 401, "rejected"),  # read, and its signature does not match
        ("made-up-event", 202, "ignored"),  # not handled: answered unread, so never verified
    ],
)
def test_an_unverified_delivery_names_no_event(
    client: TestClient, event: str, status: int, outcome: str
) -> None:
    event = unique(event) if event != "workflow_job" else event
    unverified = {"event": "-", "action": "-", "outcome": outcome}
    before = sum(value for _, value in samples(DELIVERIES, **unverified))
    named = sum(value for _, value in samples(DELIVERIES, event=event))
    headers = {"X-GitHub-Event": event, "X-Hub-Signature-256": "sha256=" + "0" * 64}

    response = client.post(WEBHOOK, content=b"{}", headers=headers)

    assert response.status_code == status
    assert sum(value for _, value in samples(DELIVERIES, event=event)) == named
    assert sum(value for _, value in samples(DELIVERIES, **unverified)) == before + 1


@pytest.mark.parametrize(
    ("conclusions", "expected"),
    [
        (("success", "failure", "failure"), ("1", "na")),
        (("success", None, "timed_out", "failure"), ("2", "timed_out")),
        (("success", "skipped"), ("null", "na")),
        ((), ("null", "na")),
    ],
)
def test_failed_step_and_exit_code_are_arcs(
    conclusions: tuple[str | None, ...], expected: tuple[str, str]
) -> None:
    assert failed_step(job_event("r", step_conclusions=conclusions)) == expected


# ------------------------------------------------------------------ bounded cardinality


def job_event(repository: str, **fields: Any) -> WorkflowJobEvent:
    base: dict[str, Any] = {
        "action": "queued",
        "job_id": 1,
        "run_id": 1,
        "labels": ("self-hosted", "linux"),
        "conclusion": None,
        "runner_id": None,
        "repository_name": repository,
        "owner_login": "octo-org",
        "owner_type": "Organization",
        "repository": f"octo-org/{repository}",
        "organization": "octo-org",
        "workflow_name": "CI",
    }
    return WorkflowJobEvent(**(base | fields))


@settings(max_examples=40, deadline=None)
@given(
    cap=st.integers(min_value=1, max_value=8),
    names=st.lists(st.text(max_size=300), min_size=1, max_size=60),
)
def test_many_job_names_never_make_more_series_than_the_cap(cap: int, names: list[str]) -> None:
    repository = unique("many-names")
    labels_of = WebhookLabels(max_values=cap)
    for index, name in enumerate(names):
        job = job_event(repository, job_id=index + 1, job_name=name)
        record_delivery(Reply(200, "ok", "workflow_job", "queued", SCALED, job=job), 0.0, labels_of)

    values = {labels["job_name"] for labels, _ in samples(QUEUED, repository=repository)}
    admitted = labels_of.admitted("job_name")
    assert len(admitted) <= cap
    assert values <= admitted | {"", OVERFLOW}
    assert len(values - {"", OVERFLOW}) <= cap
    assert all(len(value) <= MAX_LABEL_VALUE_LENGTH for value in values)
    # Every job is counted, under its own name or `other`.
    assert sum(value for _, value in samples(QUEUED, repository=repository)) == len(names)


@given(
    cap=st.integers(min_value=1, max_value=5),
    raws=st.lists(st.one_of(st.none(), st.text(max_size=200)), max_size=40),
)
def test_a_label_admits_its_first_values_and_keeps_them(cap: int, raws: list[str | None]) -> None:
    labels_of = WebhookLabels(max_values=cap)
    first: list[str] = []
    for raw in raws:
        cut = (raw or "")[:MAX_LABEL_VALUE_LENGTH]
        reported = labels_of.value("job_name", raw)
        if cut and cut != OVERFLOW and cut not in first and len(first) < cap:
            first.append(cut)
        expected = cut if cut in first or not cut or cut == OVERFLOW else OVERFLOW
        assert reported == expected
        # Asking again never changes the answer: a series never moves.
        assert labels_of.value("job_name", raw) == reported
    assert labels_of.admitted("job_name") == frozenset(first)


def test_labels_are_capped_separately() -> None:
    labels_of = WebhookLabels(max_values=1)
    assert labels_of.value("job_name", "a") == "a"
    assert labels_of.value("workflow_name", "b") == "b"
    assert labels_of.value("job_name", "b") == OVERFLOW


# ------------------------------------------------------------------ payload fields for the labels

_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner),
    max_leaves=12,
)


@given(workflow_name=_JSON, head_branch=_JSON, steps=_JSON)
def test_fields_read_only_for_labels_never_fail_a_delivery(
    workflow_name: object, head_branch: object, steps: object
) -> None:
    payload = example("completed.2", "any")
    payload["workflow_job"].update(
        workflow_name=workflow_name, head_branch=head_branch, steps=steps
    )

    event = parse_event("workflow_job", json.dumps(payload).encode())

    assert isinstance(event, WorkflowJobEvent)
    assert event.workflow_name == (workflow_name if isinstance(workflow_name, str) else None)
    assert event.head_branch == (head_branch if isinstance(head_branch, str) else None)
    assert all(c is None or isinstance(c, str) for c in event.step_conclusions)


def test_githubs_examples_give_the_label_fields() -> None:
    event = parse_event("workflow_job", (EXAMPLES / "workflow_job.completed.1.json").read_bytes())
    assert isinstance(event, WorkflowJobEvent)
    assert (event.workflow_name, event.head_branch) == ("CodeQL", "main")
    assert event.step_conclusions[7] == "failure"
    old = parse_event("workflow_job", (EXAMPLES / "workflow_job.in_progress.0.json").read_bytes())
    assert isinstance(old, WorkflowJobEvent)
    assert (old.workflow_name, old.head_branch) == (None, None)


# ------------------------------------------------------------------ settings


def test_the_settings_default_to_every_label_but_head_branch() -> None:
    configured = Settings.model_validate({})
    assert configured.job_metrics_labels == [
        "runs_on",
        "job_name",
        "organization",
        "repository",
        "repository_full_name",
        "owner",
        "workflow_name",
    ]
    assert configured.job_metrics_max_label_values == 100


def test_the_settings_are_read_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JOB_METRICS_LABELS", " repository_full_name, job_name,,runs_on ")
    monkeypatch.setenv("JOB_METRICS_MAX_LABEL_VALUES", "25")
    configured = Settings()
    assert configured.job_metrics_labels == ["repository_full_name", "job_name", "runs_on"]
    assert configured.job_metrics_max_label_values == 25
    labels_of = WebhookLabels.from_settings(configured)
    assert labels_of.emit == {"repository_full_name", "job_name", "runs_on"}
    assert labels_of.max_values == 25


def test_no_label_at_all_is_a_valid_choice() -> None:
    assert Settings.model_validate({"JOB_METRICS_LABELS": ""}).job_metrics_labels == []


@pytest.mark.parametrize(
    "env",
    [
        {"JOB_METRICS_LABELS": "job_name,job_id"},
        {"JOB_METRICS_LABELS": "Job_Name"},
        {"JOB_METRICS_MAX_LABEL_VALUES": "0"},
        {"JOB_METRICS_MAX_LABEL_VALUES": "many"},
    ],
)
def test_bad_settings_are_refused(env: dict[str, str]) -> None:
    with pytest.raises(ValueError, match="JOB_METRICS_"):
        Settings.model_validate(env)


# ------------------------------------------------------------------ gauges for several replicas


def test_the_rate_limit_reset_is_recorded_beside_the_remaining_budget() -> None:
    credentials = unique("probe/credentials")
    record_rate_limit(
        {
            "x-ratelimit-resource": "core",
            "x-ratelimit-remaining": "4321",
            "x-ratelimit-limit": "5000",
            "x-ratelimit-reset": "1767229200",
        },
        credentials,
    )
    labels = {"resource": "core", "credentials": credentials}
    assert REGISTRY.get_sample_value("arc_hooks_github_rate_limit_remaining", labels) == 4321
    reset = "arc_hooks_github_rate_limit_reset_timestamp_seconds"
    assert REGISTRY.get_sample_value(reset, labels) == 1767229200


# ------------------------------------------------------------------ the README


def exported_names() -> set[str]:
    names = set()
    for family in REGISTRY.collect():
        names.add(f"{family.name}_total" if family.type == "counter" else family.name)
    return names


def metrics_section() -> str:
    return README.split("\n## Metrics\n", 1)[1].split("\n## ", 1)[0]


def test_the_readme_lists_every_metric() -> None:
    listed = set(re.findall(r"`([a-z_:]+)`", metrics_section()))
    names = exported_names()
    assert len(names) >= 25
    assert names <= listed, sorted(names - listed)


def test_the_readme_names_every_job_label_and_setting() -> None:
    section = metrics_section()
    job_section = section.split("### Job metrics", 1)[1].split("\n### ", 1)[0]
    extra = (metrics.JOB_CONCLUSION, metrics.FAILED_STEP, metrics.EXIT_CODE)
    for label in (*metrics.JOB_LABELS, *extra):
        assert f"| `{label}`" in job_section or f"`{label}` |" in job_section, label
    for name in ("JOB_METRICS_LABELS", "JOB_METRICS_MAX_LABEL_VALUES"):
        assert f"`{name}" in section, name
    assert f"cut to {MAX_LABEL_VALUE_LENGTH} characters" in section
    assert f"`{OVERFLOW}`" in section
