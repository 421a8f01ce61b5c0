"""The webhook receiver against the in-process Kubernetes API (`StoreKube` over an `ObjectStore`).

The store holds what a user applies: ARC's docs' webhook-driven HorizontalRunnerAutoscaler and
its RunnerDeployment. Deliveries are GitHub's example payloads with the fields that matter set
per test, signed as GitHub signs them. Each test checks both the answer and what was written.
"""

from __future__ import annotations

import asyncio
import copy
import itertools
import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import pytest

from arc_sim.kube_port import StoreKube
from arc_sim.store import ObjectStore
from arc_sim.webhooks import signature_256
from hooks.autoscaler.controller import sync_horizontal_runner_autoscaler
from hooks.clock import ManualClock, format_time
from hooks.deps import HookDeps
from hooks.github.port import GitHubError
from hooks.kube.port import CAPACITY_RESERVATIONS, KubeError, KubeObject, Resource
from hooks.metacontroller import CompositeHookRequest
from hooks.webhook import NO_TARGET_MESSAGE, GroupScope, RunnerGroup
from hooks.webhook.receiver import JobStatusLookup, Reply, WebhookReceiver
from tests.hook_app import hook_settings
from tests.in_memory_github import InMemoryGitHub

EXAMPLES = Path(__file__).parent / "reference" / "github" / "webhooks" / "examples"
QUEUED_EXAMPLE = json.loads((EXAMPLES / "workflow_job.queued.5.json").read_text())
PING_BODY = (EXAMPLES / "ping.event.0.json").read_bytes()

T0 = datetime(2026, 1, 1, tzinfo=UTC)
SECRET = b"It's a Secret to Everybody"  # GitHub's docs' example secret
API = "actions.summerwind.dev/v1alpha1"
NAMESPACE = "default"
HRA_NAME = "example-runners"
OWNER = "octo-org"
REPOSITORY = "octo-repo"
JOB_ID = 289782451
LIFETIME = timedelta(minutes=30)

SCALED, UNCHANGED, IGNORED, REJECTED = "scaled", "unchanged", "ignored", "rejected"


# ------------------------------------------------------------------ what the user applies


def autoscaler(name: str = HRA_NAME, **spec: Any) -> KubeObject:
    """ARC's docs' webhook-driven HRA (`scaleUpTriggers` on `workflowJob`, for 30 minutes)."""
    return {
        "apiVersion": API,
        "kind": "HorizontalRunnerAutoscaler",
        "metadata": {"name": name, "namespace": NAMESPACE},
        "spec": {
            "scaleTargetRef": {"kind": "RunnerDeployment", "name": name},
            "minReplicas": 0,
            "maxReplicas": 10,
            "scaleUpTriggers": [{"githubEvent": {"workflowJob": {}}, "duration": "30m"}],
            **spec,
        },
    }


def deployment(name: str = HRA_NAME, **runner_spec: Any) -> KubeObject:
    spec = runner_spec or {"repository": f"{OWNER}/{REPOSITORY}", "labels": ["linux"]}
    return {
        "apiVersion": API,
        "kind": "RunnerDeployment",
        "metadata": {"name": name, "namespace": NAMESPACE},
        "spec": {"template": {"spec": spec}},
    }


# ------------------------------------------------------------------ what GitHub sends


def job_payload(
    action: str,
    *,
    job_id: int = JOB_ID,
    labels: Iterable[str] = ("self-hosted", "linux"),
    created_at: datetime = T0,
    conclusion: str | None = None,
    runner_id: int | None = None,
) -> dict[str, Any]:
    """GitHub's example `workflow_job` delivery, for a job of `octo-org/octo-repo`."""
    payload: dict[str, Any] = copy.deepcopy(QUEUED_EXAMPLE)
    payload["action"] = action
    payload["workflow_job"].update(
        id=job_id,
        labels=list(labels),
        status="completed" if action == "completed" else action,
        conclusion=conclusion,
        runner_id=runner_id,
        created_at=format_time(created_at),
        started_at=format_time(created_at),
    )
    payload["repository"].update(name=REPOSITORY, full_name=f"{OWNER}/{REPOSITORY}")
    payload["repository"]["owner"].update(login=OWNER, type="Organization")
    payload["organization"] = {"login": OWNER, "id": 9919}
    return payload


def completed(**kwargs: Any) -> dict[str, Any]:
    """A job that ran on a runner and succeeded, unless told otherwise."""
    return job_payload("completed", **{"conclusion": "success", "runner_id": 5, **kwargs})


def signed(
    body: bytes,
    event: str = "workflow_job",
    *,
    delivery: str = "72d3162e-cc78-11e3-81ab-4c9367dc0958",
    content_type: str = "application/json",
    secret: bytes | None = SECRET,
) -> dict[str, str]:
    headers = {
        "Content-Type": content_type,
        "User-Agent": "GitHub-Hookshot/044aadd",
        "X-GitHub-Event": event,
        "X-GitHub-Delivery": delivery,
    }
    if secret is not None:
        headers["X-Hub-Signature-256"] = signature_256(secret, body)
    return headers


def encode(payload: dict[str, Any]) -> bytes:
    return json.dumps(payload).encode()


# ------------------------------------------------------------------ the receiver and its cluster


@dataclass
class World:
    clock: ManualClock
    store: ObjectStore
    receiver: WebhookReceiver
    visibility_calls: list[tuple[str, str]] = field(default_factory=list)
    delivery_ids: Iterator[int] = field(default_factory=itertools.count)

    def deliver(self, payload: dict[str, Any], *, delivery: str | None = None) -> Reply:
        """A new delivery (its own id) unless `delivery` names one already sent."""
        body = encode(payload)
        headers = signed(body, delivery=delivery or f"delivery-{next(self.delivery_ids)}")
        return self.send(headers, body)

    def send(self, headers: dict[str, str], body: bytes) -> Reply:
        return asyncio.run(self.receiver.handle(headers, body))

    def reservations(self) -> list[KubeObject]:
        return self.store.list_objects(CAPACITY_RESERVATIONS.kind)

    def reservation(self, job_id: int = JOB_ID) -> KubeObject:
        found = self.store.get(CAPACITY_RESERVATIONS.kind, NAMESPACE, f"job-{job_id}")
        assert found is not None, [r["metadata"]["name"] for r in self.reservations()]
        return found

    def hra(self, name: str = HRA_NAME) -> KubeObject:
        found = self.store.get("HorizontalRunnerAutoscaler", NAMESPACE, name)
        assert found is not None
        return found

    def reserved_by_the_hook(self) -> int:
        """What the HRA hook counts from the reservations in the store."""
        request = CompositeHookRequest.model_validate(
            {
                "parent": self.hra(),
                "children": {
                    f"CapacityReservation.{CAPACITY_RESERVATIONS.api_version}": {
                        f"{NAMESPACE}/{r['metadata']['name']}": r for r in self.reservations()
                    }
                },
                "related": {
                    f"RunnerDeployment.{API}": {
                        f"{NAMESPACE}/{HRA_NAME}": self.store.get(
                            "RunnerDeployment", NAMESPACE, HRA_NAME
                        )
                    }
                },
            }
        )
        deps = HookDeps(InMemoryGitHub(self.clock), self.clock, hook_settings())
        status = sync_horizontal_runner_autoscaler(request, deps).status or {}
        reserved: int = status["reservedReplicas"]
        return reserved


def make_world(
    *objects: KubeObject,
    secret: bytes | None = SECRET,
    allow_unsigned: bool = False,
    visible: list[RunnerGroup] | GitHubError | None = None,
    targets_ttl: float = 5.0,
    job_status: JobStatusLookup | None = None,
    common_labels: tuple[str, ...] = (),
) -> World:
    clock = ManualClock(T0)
    store = ObjectStore(clock)
    for obj in objects:
        store.create(obj)
    calls: list[tuple[str, str]] = []

    def visibility(organization: str, repository: str) -> list[RunnerGroup]:
        calls.append((organization, repository))
        if isinstance(visible, GitHubError):
            raise visible
        return list(visible or [])

    receiver = WebhookReceiver(
        StoreKube(store),
        clock,
        secret=secret,
        allow_unsigned=allow_unsigned,
        targets_ttl=targets_ttl,
        runner_group_visibility=visibility if visible is not None else None,
        job_status=job_status,
        common_labels=common_labels,
    )
    return World(clock, store, receiver, calls)


@pytest.fixture
def world() -> World:
    return make_world(autoscaler(), deployment())


# ------------------------------------------------------------------ accepting deliveries


def test_ping_gets_pong(world: World) -> None:
    reply = world.send(signed(PING_BODY, "ping"), PING_BODY)

    assert (reply.status, reply.message) == (200, "pong")
    assert world.reservations() == []


class UnreachableKube(StoreKube):
    async def list(self, resource: Resource, namespace: str | None = None) -> list[KubeObject]:
        raise KubeError("connection refused")


def test_a_delivery_that_never_scales_is_answered_without_the_api_server() -> None:
    """Found by a newcomer following the README: `in_progress` got a 503 (and counted as a
    failed delivery) while the API server was away, though no HRA could change its answer."""
    clock = ManualClock(T0)
    receiver = WebhookReceiver(UnreachableKube(ObjectStore(clock)), clock, secret=SECRET)

    def send(action: str) -> Reply:
        body = encode(job_payload(action))
        return asyncio.run(receiver.handle(signed(body), body))

    in_progress = send("in_progress")
    assert in_progress.status == 200
    assert in_progress.message == "ignored workflow_job action 'in_progress': it does not scale"
    assert in_progress.outcome == "ignored"
    assert send("queued").status == 503  # one that may scale still needs the HRAs


def test_a_target_in_scale_set_mode_is_not_reserved_for_and_costs_no_group_lookup() -> None:
    """Found by a hostile probe: a webhook left configured after switching to scale-set mode
    looked the repository's runner groups up at every job (its reservations are removed
    unused: the listener counts the jobs)."""
    in_mode = deployment(organization=OWNER, labels=["linux"])
    in_mode["metadata"]["annotations"] = {"arc-hooks.dev/scale-set": "octo-runners"}
    world = make_world(autoscaler(), in_mode, visible=[])

    reply = world.deliver(job_payload("queued"))

    assert reply.status == 200 and reply.message.startswith(NO_TARGET_MESSAGE)
    assert world.reservations() == []
    assert world.visibility_calls == []  # no runner-group lookup


def test_without_a_secret_deliveries_are_refused_and_the_answer_says_how_to_fix_it() -> None:
    world = make_world(autoscaler(), deployment(), secret=None)
    body = encode(job_payload("queued"))

    reply = world.send(signed(body, secret=None), body)

    assert reply.status == 503
    assert "GITHUB_WEBHOOK_SECRET_TOKEN" in reply.message
    assert world.reservations() == []


def test_unsigned_deliveries_are_taken_only_when_allowed_explicitly() -> None:
    world = make_world(autoscaler(), deployment(), secret=None, allow_unsigned=True)
    body = encode(job_payload("queued"))

    reply = world.send(signed(body, secret=None), body)

    assert (reply.status, reply.outcome) == (200, SCALED)
    assert world.reservation()["spec"]["replicas"] == 1


def _signed_with(secret: bytes | None) -> tuple[dict[str, str], bytes]:
    body = encode(job_payload("queued"))
    return signed(body, secret=secret), body


def _tampered() -> tuple[dict[str, str], bytes]:
    body = encode(job_payload("queued"))
    return signed(body), body.replace(b'"queued"', b'"queued" ', 1)


def _signature(value: str) -> tuple[dict[str, str], bytes]:
    body = encode(job_payload("queued"))
    return {**signed(body), "X-Hub-Signature-256": value}, body


@pytest.mark.parametrize(
    "delivery",
    [
        pytest.param(_signed_with(b"another secret"), id="wrong-secret"),
        pytest.param(_signed_with(None), id="missing"),
        pytest.param(_tampered(), id="body-changed-after-signing"),
        pytest.param(_signature("sha256=zz"), id="not-hex"),
        pytest.param(_signature("sha1=" + "0" * 40), id="wrong-algorithm"),
    ],
)
def test_a_bad_or_missing_signature_is_401_and_writes_nothing(
    world: World, delivery: tuple[dict[str, str], bytes]
) -> None:
    headers, body = delivery

    reply = world.send(headers, body)

    assert (reply.status, reply.outcome) == (401, REJECTED)
    assert world.reservations() == []


@pytest.mark.parametrize(
    ("event", "why"),
    [
        ("push", "unsupported event 'push'"),
        ("check_run", "unsupported event 'check_run'"),
        ("", "the X-GitHub-Event header is missing"),
    ],
)
def test_an_unsupported_event_is_accepted_with_the_reason(
    world: World, event: str, why: str
) -> None:
    body = b'{"ref": "refs/heads/main"}'

    reply = world.send(signed(body, event), body)

    assert 200 <= reply.status < 300
    assert why in reply.message
    assert world.reservations() == []


@pytest.mark.parametrize(
    ("body", "content_type", "why"),
    [
        (b"not json", "application/json", "malformed workflow_job payload"),
        (b'{"action": "queued"}', "application/json", "workflow_job: Field required"),
        (
            encode({**job_payload("queued"), "workflow_job": {"id": "1", "labels": []}}),
            "application/json",
            "workflow_job.id",
        ),
        (encode(job_payload("queued")), "text/plain", "unsupported Content-Type"),
        (b"other=1", "application/x-www-form-urlencoded", "without a payload field"),
    ],
)
def test_a_malformed_payload_is_400_and_says_what_is_wrong(
    world: World, body: bytes, content_type: str, why: str
) -> None:
    reply = world.send(signed(body, content_type=content_type), body)

    assert (reply.status, reply.outcome) == (400, REJECTED)
    assert why in reply.message
    assert world.reservations() == []


# ------------------------------------------------------------------ queued


def test_queued_creates_the_jobs_reservation_controlled_by_the_hra(world: World) -> None:
    world.clock.advance(10)  # delivered 10 s after the job was queued

    reply = world.deliver(job_payload("queued"))

    assert (reply.status, reply.outcome) == (200, SCALED)
    assert reply.message == f"scaled {HRA_NAME} by 1"
    assert (reply.event, reply.action, reply.autoscaler) == (
        "workflow_job",
        "queued",
        f"{NAMESPACE}/{HRA_NAME}",
    )
    hra_uid = world.hra()["metadata"]["uid"]
    reservation = world.reservation()
    metadata = reservation["metadata"]
    assert (metadata["name"], metadata["namespace"]) == (f"job-{JOB_ID}", NAMESPACE)
    assert metadata["labels"]["controller-uid"] == hra_uid
    assert metadata["ownerReferences"] == [
        {
            "apiVersion": API,
            "kind": "HorizontalRunnerAutoscaler",
            "name": HRA_NAME,
            "uid": hra_uid,
            "controller": True,
        }
    ]
    delivered_at = T0 + timedelta(seconds=10)
    assert reservation["spec"] == {
        "effectiveTime": format_time(delivered_at),
        "expirationTime": format_time(delivered_at + LIFETIME),
        "replicas": 1,
        "job": {
            "id": JOB_ID,
            "runID": QUEUED_EXAMPLE["workflow_job"]["run_id"],
            "name": QUEUED_EXAMPLE["workflow_job"]["name"],
            "repository": f"{OWNER}/{REPOSITORY}",
            "labels": ["self-hosted", "linux"],
        },
    }
    assert world.reserved_by_the_hook() == 1


def test_in_progress_records_that_a_runner_took_the_jobs_reservation(world: World) -> None:
    """The HRA renews a reservation whose job no runner has taken however its lifetime ends
    (found by a failure scenario: one started for a runner turning over ran out with its job
    queued, for good). ARC's answer is kept."""
    world.deliver(job_payload("queued"))
    world.clock.advance(30)

    reply = world.deliver(job_payload("in_progress"))

    assert (reply.status, reply.outcome) == (200, "ignored")
    assert reply.message == "ignored workflow_job action 'in_progress': it does not scale"
    assert world.reservation()["spec"]["jobStartTime"] == format_time(T0 + timedelta(seconds=30))


def test_in_progress_without_a_reservation_creates_nothing(world: World) -> None:
    reply = world.deliver(job_payload("in_progress"))

    assert reply.status == 200
    assert world.reservations() == []


def test_a_redelivered_queued_event_changes_nothing(world: World) -> None:
    first = world.deliver(job_payload("queued"), delivery="d-1")
    before = world.reservation()
    world.clock.advance(30)

    again = world.deliver(job_payload("queued"), delivery="d-1")

    assert first.outcome == SCALED and not first.redelivered
    assert (again.status, again.outcome, again.redelivered) == (200, UNCHANGED, True)
    assert "already exists" in again.message
    after = world.reservation()
    assert after["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]
    assert after == before
    assert len(world.reservations()) == 1


@pytest.mark.parametrize("queued_seconds_ago", [30 * 60 - 1, 30 * 60, 3 * 3600])
def test_a_queued_event_however_late_reserves_from_now_as_in_arc(
    world: World, queued_seconds_ago: int
) -> None:
    # Found by conformance tests: a `queued` delivery sent again by hand after the webhook was
    # down (how a job that never got a runner gets one) was ignored once the reservation,
    # counted from the job's creation, would have expired. ARC reserves from now.
    world.clock.advance(queued_seconds_ago)

    reply = world.deliver(job_payload("queued", created_at=T0))

    assert (reply.status, reply.outcome) == (200, SCALED)
    reservation = world.reservation()
    assert reservation["spec"]["effectiveTime"] == format_time(world.clock.now())
    assert reservation["spec"]["expirationTime"] == format_time(world.clock.now() + LIFETIME)
    assert world.reserved_by_the_hook() == 1


def test_a_late_queued_event_of_a_job_completed_a_while_ago_changes_nothing(
    world: World,
) -> None:
    """Its tombstone lasts a reservation's lifetime from the completion, however long ago the
    job was queued."""
    world.clock.advance(3 * 3600)
    world.deliver(completed(created_at=T0))
    world.clock.advance(LIFETIME.total_seconds() - 1)
    late = world.deliver(job_payload("queued", created_at=T0))
    assert late.outcome == UNCHANGED
    assert world.reserved_by_the_hook() == 0


# ------------------------------------------------------------------ completed


def test_completed_marks_the_reservation_once(world: World) -> None:
    world.deliver(job_payload("queued"))
    world.clock.advance(120)

    done = world.deliver(completed())
    marked = world.reservation()
    world.clock.advance(5)
    again = world.deliver(completed())

    assert (done.status, done.outcome, done.message) == (200, SCALED, f"scaled {HRA_NAME} by -1")
    assert marked["spec"]["completionTime"] == format_time(T0 + timedelta(seconds=120))
    assert (again.status, again.outcome) == (200, UNCHANGED)
    assert "already completed" in again.message
    unchanged = world.reservation()
    assert unchanged["metadata"]["resourceVersion"] == marked["metadata"]["resourceVersion"]
    assert world.reserved_by_the_hook() == 0


def test_completed_before_queued_leaves_a_tombstone_that_the_queued_event_cannot_revive(
    world: World,
) -> None:
    world.clock.advance(60)

    done = world.deliver(completed(created_at=T0))
    tombstone = world.reservation()
    world.clock.advance(1)
    late = world.deliver(job_payload("queued", created_at=T0))

    assert (done.status, done.outcome) == (200, UNCHANGED)
    assert tombstone["spec"]["completionTime"] == format_time(T0 + timedelta(seconds=60))
    assert tombstone["spec"]["effectiveTime"] == format_time(T0)
    # A lifetime from the completion: a `queued` delivery that late would reserve anew.
    assert tombstone["spec"]["expirationTime"] == format_time(T0 + timedelta(seconds=60) + LIFETIME)
    assert (late.status, late.outcome) == (200, UNCHANGED)
    assert world.reservation() == tombstone
    assert world.reserved_by_the_hook() == 0


@pytest.mark.parametrize(
    ("conclusion", "runner_id", "why"),
    [
        ("skipped", None, "skipped job"),
        ("skipped", 5, "skipped job"),
        ("success", None, "it had no runner"),  # a check run's completion
    ],
)
def test_completions_of_jobs_that_never_had_a_runner_are_ignored(
    world: World, conclusion: str, runner_id: int | None, why: str
) -> None:
    world.deliver(job_payload("queued", job_id=1))

    reply = world.deliver(completed(job_id=1, conclusion=conclusion, runner_id=runner_id))

    assert (reply.status, reply.outcome) == (200, IGNORED)
    assert why in reply.message
    assert "completionTime" not in world.reservation(1)["spec"]


def test_a_cancelled_job_releases_its_reservation(world: World) -> None:
    world.deliver(job_payload("queued"))

    reply = world.deliver(completed(conclusion="cancelled", runner_id=None))

    assert reply.outcome == SCALED
    assert "completionTime" in world.reservation()["spec"]


# ------------------------------------------------------------------ finding the HRA


def test_a_job_no_hra_serves_gets_arcs_message(world: World) -> None:
    reply = world.deliver(job_payload("queued", labels=["self-hosted", "gpu"]))

    assert (reply.status, reply.outcome) == (200, IGNORED)
    assert reply.message.startswith(NO_TARGET_MESSAGE)
    assert "lacks the job's labels gpu" in reply.message
    assert world.reservations() == []


def test_the_reasons_a_job_went_unserved_stay_short_however_many_labels_and_hras() -> None:
    """Each HRA considered gets a note in the answer (and its log line): with thousands of
    labels and hundreds of HRAs they once made answers of hundreds of megabytes. Each note
    names five labels at most, and the answer the first ten HRAs' notes."""
    objects = []
    for n in range(30):
        objects += [autoscaler(f"hra-{n}"), deployment(f"hra-{n}")]
    world = make_world(*objects)
    labels = ["self-hosted", *(f"label-{n}-" + "x" * 200 for n in range(5_000))]

    reply = world.deliver(job_payload("queued", labels=labels))

    assert (reply.status, reply.outcome) == (200, IGNORED)
    assert reply.message.startswith(NO_TARGET_MESSAGE)
    assert reply.message.count("lacks the job's labels label-0-") == 10
    assert reply.message.endswith("; and 20 more)")
    assert "label-5-" not in reply.message and ", and more" in reply.message
    assert len(reply.message) < 20_000
    assert world.reservations() == []


ORG_GROUP_TARGET = (
    autoscaler("org-runners"),
    deployment("org-runners", organization=OWNER, group="ci", labels=["linux"]),
)


@pytest.mark.parametrize(
    ("visible", "outcome"),
    [
        pytest.param([RunnerGroup(GroupScope.ORGANIZATION, "ci")], SCALED, id="visible"),
        pytest.param([RunnerGroup(GroupScope.ORGANIZATION, "")], IGNORED, id="not-visible"),
        pytest.param(GitHubError("Bad credentials", 401), SCALED, id="lookup-fails"),
    ],
)
def test_runner_group_visibility_and_its_fallback_when_github_fails(
    visible: list[RunnerGroup] | GitHubError, outcome: str
) -> None:
    world = make_world(*ORG_GROUP_TARGET, visible=visible)

    reply = world.deliver(job_payload("queued"))

    assert world.visibility_calls == [(OWNER, REPOSITORY)]
    assert (reply.status, reply.outcome) == (200, outcome)
    if outcome == SCALED:
        assert reply.autoscaler == f"{NAMESPACE}/org-runners"
        assert world.reservation()["metadata"]["ownerReferences"][0]["name"] == "org-runners"
    else:
        assert reply.message.startswith(NO_TARGET_MESSAGE)
        assert world.reservations() == []


def test_a_new_hra_is_seen_once_the_target_cache_expires() -> None:
    world = make_world(targets_ttl=5)
    assert world.deliver(job_payload("queued", job_id=1)).message == NO_TARGET_MESSAGE

    world.store.create(autoscaler())
    world.store.create(deployment())
    world.clock.advance(4)
    cached = world.deliver(job_payload("queued", job_id=2))
    world.clock.advance(1)
    refreshed = world.deliver(job_payload("queued", job_id=3))

    assert (cached.outcome, cached.message) == (IGNORED, NO_TARGET_MESSAGE)
    assert refreshed.outcome == SCALED
    assert [r["metadata"]["name"] for r in world.reservations()] == ["job-3"]


# ------------------------------------------------------------------ content types


def test_form_encoded_deliveries_are_read_from_their_payload_field(world: World) -> None:
    body = urlencode({"payload": json.dumps(job_payload("queued"))}).encode()
    headers = signed(body, content_type="application/x-www-form-urlencoded")

    reply = world.send(headers, body)

    assert (reply.status, reply.outcome) == (200, SCALED)
    assert world.reservation()["spec"]["job"]["id"] == JOB_ID


@pytest.mark.parametrize(
    "value",
    [
        "GITHUB_TOKEN=ghp_" + "Ab3dEf6hIj9lMn2pQr5tUv8xYz1bCd4fGh7j",
        "github_pat_11ABCDEFG0" + "Q7w8E9r0T1" * 7 + "Zz",
    ],
)
def test_a_target_the_webhook_cannot_use_is_logged_without_its_values(
    value: str, caplog: pytest.LogCaptureFixture
) -> None:
    # Found by a hostile probe: the log quoted pydantic's text, which abbreviates a long
    # value ('ghp_Ab3dEf6...n2pQr5t...') past what the token mask recognizes: 30 of a
    # classic token's 36 secret characters reached the log.
    world = make_world(autoscaler(), deployment(repository=f"{OWNER}/{REPOSITORY}", labels=value))
    with caplog.at_level("WARNING"):
        world.deliver(job_payload("queued"))
    records = [r for r in caplog.records if "cannot use" in r.getMessage()]
    assert records
    logged = " ".join(f"{r.getMessage()} {vars(r)}" for r in records)
    assert "labels" in logged  # what is wrong, where
    secret = value.split("_", 2)[-1] if value.startswith("github_pat") else value[-36:]
    assert not any(secret[i : i + 6] in logged for i in range(len(secret) - 5))


def test_a_completed_reservation_keeps_a_late_queued_delivery_out_for_a_lifetime(
    world: World,
) -> None:
    # Found in review: a completion only marked the reservation, which the HRA deletes at its
    # first expiry; a `queued` delivery after that (a duplicate, one sent again) reserved anew.
    world.deliver(job_payload("queued", created_at=T0))
    world.clock.advance(LIFETIME.total_seconds() - 60)
    world.deliver(completed(created_at=T0))
    kept = world.reservation()
    now = world.clock.now()
    assert kept["spec"]["expirationTime"] == format_time(now + LIFETIME)
    world.clock.advance(120)  # past the reservation's first expiry
    late = world.deliver(job_payload("queued", created_at=T0))
    assert late.outcome == UNCHANGED
    assert world.reserved_by_the_hook() == 0


@pytest.mark.parametrize(
    ("on_github", "outcome"),
    [
        ("completed", IGNORED),
        ("in_progress", IGNORED),
        ("queued", SCALED),
        ("waiting", SCALED),
        (None, SCALED),  # the run does not list it
        (GitHubError("boom", 502), SCALED),  # unknown: reserved, as ARC does
    ],
)
def test_a_late_queued_delivery_reserves_only_for_a_job_github_says_still_waits(
    on_github: str | GitHubError | None, outcome: str
) -> None:
    # Found in review: resent deliveries of jobs over meanwhile each held a runner until the
    # HRA's job checks settled them (60 of them kept a target at its maximum for 41 minutes).
    asked: list[tuple[str, int, int]] = []

    async def status(repository: str, run_id: int, job_id: int) -> str | None:
        asked.append((repository, run_id, job_id))
        if isinstance(on_github, GitHubError):
            raise on_github
        return on_github

    world = make_world(autoscaler(), deployment(), job_status=status)
    world.clock.advance(3 * 3600)
    reply = world.deliver(job_payload("queued", created_at=T0))
    assert reply.outcome == outcome
    assert len(asked) == 1
    assert len(world.reservations()) == (1 if outcome == SCALED else 0)
    if outcome == IGNORED:
        assert f"GitHub says it is {on_github}" in reply.message


def test_a_timely_queued_delivery_asks_github_nothing() -> None:
    asked = []

    async def status(repository: str, run_id: int, job_id: int) -> str | None:
        asked.append(job_id)
        return "completed"

    world = make_world(autoscaler(), deployment(), job_status=status)
    world.clock.advance(60)
    assert world.deliver(job_payload("queued", created_at=T0)).outcome == SCALED
    assert asked == []


@pytest.mark.parametrize("offset", [0, 60, 80, 95])
def test_a_label_named_in_the_no_target_reply_shows_no_part_of_a_token(offset: int) -> None:
    """Found by a hostile probe: a label was cut to 100 characters and then masked, so a token
    near the cut left a tail too short for the mask. GitHub shows the reply in its delivery
    log."""
    token = "ghp_Zq9Wm4Xk7Lp2Rt8Vn3Bc6Hj5Df1Gs0Ya7Ue4"
    world = make_world(autoscaler(), deployment(organization=OWNER, labels=["linux"]), visible=[])

    reply = world.deliver(job_payload("queued", labels=["self-hosted", "x" * offset + "-" + token]))

    assert reply.message.startswith(NO_TARGET_MESSAGE)
    assert not any(token[i : i + 12] in reply.message for i in range(len(token) - 11))


@pytest.mark.parametrize("common", [(), ("fleet",), ("FLEET",)])
def test_a_job_asking_for_a_common_runner_label_reserves_a_runner(
    common: tuple[str, ...],
) -> None:
    """Found by an independent run: the runners carry COMMON_RUNNER_LABELS, but the receiver
    matched jobs against the template's labels alone, so webhook-only scaling from zero never
    served a job asking for one (ARC's webhook server is not given the flag at all)."""
    world = make_world(
        autoscaler(), deployment(organization=OWNER, labels=["linux"]), common_labels=common
    )

    reply = world.deliver(job_payload("queued", labels=["self-hosted", "fleet"]))

    if common:
        assert reply.message == f"scaled {HRA_NAME} by 1"
        assert len(world.reservations()) == 1
    else:
        assert reply.message.startswith(NO_TARGET_MESSAGE)
        assert world.reservations() == []


def test_a_pool_whose_own_labels_fit_the_job_is_chosen_over_common_labels() -> None:
    """Found in review: with COMMON_RUNNER_LABELS=linux every pool matched a plain linux job,
    and the first by name (a GPU pool) took it, where ARC sends it to the linux pool."""
    world = make_world(
        autoscaler("a-gpu"),
        deployment("a-gpu", organization=OWNER, labels=["gpu"]),
        autoscaler("b-linux"),
        deployment("b-linux", organization=OWNER, labels=["linux"]),
        common_labels=("linux",),
    )

    linux = world.deliver(job_payload("queued", labels=["self-hosted", "linux"]))
    gpu = world.deliver(job_payload("queued", job_id=JOB_ID + 1, labels=["self-hosted", "gpu"]))

    assert linux.message == "scaled b-linux by 1"
    assert gpu.message == "scaled a-gpu by 1"
