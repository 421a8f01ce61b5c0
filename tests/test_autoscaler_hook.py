"""The HorizontalRunnerAutoscaler hook over HTTP, with Metacontroller v2 requests.

`Cluster` plays Metacontroller for one HRA: it sends the parent, its CapacityReservation
children and the related scale target and Runners as Metacontroller groups them, and applies
the answer (status replaced, children replaced by the desired ones). The decision tables of
`hooks.autoscaler` are tested on their own; these tests are about the hook layer: what goes
into status, which children stay, when the hook asks to be called again, and how failures
surface (a condition, never a 500).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import yaml
from prometheus_client.parser import text_string_to_metric_families
from starlette.testclient import TestClient

from hooks.app import create_app
from hooks.autoscaler.metrics import MAX_WORKFLOW_RUN_REPOSITORIES
from hooks.clock import ManualClock, format_time
from hooks.github.cached import CachedGitHub
from hooks.github.port import GitHubError, RateLimitedError, Scope, WorkflowJob, WorkflowRun
from hooks.settings import Settings
from tests.hook_app import hook_client, hook_settings
from tests.in_memory_github import InMemoryGitHub, rate_limited

API = "actions.summerwind.dev/v1alpha1"
RESERVATION_API = "arc-hooks.dev/v1alpha1"
RESERVATIONS = f"CapacityReservation.{RESERVATION_API}"
DEPLOYMENTS = f"RunnerDeployment.{API}"
RUNNERS = f"Runner.{API}"
SYNC = "/sync/horizontalrunnerautoscaler"
CUSTOMIZE = "/customize/horizontalrunnerautoscaler"

NAMESPACE = "default"
HRA_NAME = "example-runner-deployment-autoscaler"
TARGET = "example-runner-deployment"
HRA_UID = "hra-uid-1"
T0 = datetime(2026, 1, 1, tzinfo=UTC)  # the start of the `clock` fixture (tests/conftest.py)
LIFETIME = timedelta(minutes=30)  # the trigger's `duration: 30m`

GITHUB_TOKEN = "ghp_" + "T0kenNeverShown" * 2 + "abcdef"
WEBHOOK_SECRET = "webhook-secret-never-shown"
SECRETS = (GITHUB_TOKEN, WEBHOOK_SECRET)

CONTROLLER = yaml.safe_load(
    (
        Path(__file__).parent.parent
        / "metacontroller"
        / "horizontalrunnerautoscaler-controller.yaml"
    ).read_text()
)
# ARC's docs: "Example: autoscaling on workflow_job webhook events only".
WEBHOOK_ONLY_SPEC: dict[str, Any] = {
    "minReplicas": 0,
    "maxReplicas": 10,
    "scaleTargetRef": {"kind": "RunnerDeployment", "name": TARGET},
    "scaleUpTriggers": [{"githubEvent": {"workflowJob": {}}, "duration": "30m"}],
}
# ARC's docs: the PercentageRunnersBusy example.
BUSY_METRIC = {
    "type": "PercentageRunnersBusy",
    "scaleUpThreshold": "0.75",
    "scaleDownThreshold": "0.25",
    "scaleUpFactor": "2",
    "scaleDownFactor": "0.5",
}


# ------------------------------------------------------------------ objects


def autoscaler(status: dict[str, Any] | None = None, **spec: Any) -> dict[str, Any]:
    hra: dict[str, Any] = {
        "apiVersion": API,
        "kind": "HorizontalRunnerAutoscaler",
        "metadata": {
            "name": HRA_NAME,
            "namespace": NAMESPACE,
            "uid": HRA_UID,
            "generation": 3,
            "resourceVersion": "41",
        },
        "spec": {**copy.deepcopy(WEBHOOK_ONLY_SPEC), **spec},
    }
    if status is not None:
        hra["status"] = status
    return hra


def deployment(
    name: str = TARGET, namespace: str = NAMESPACE, **runner_spec: Any
) -> dict[str, Any]:
    spec = runner_spec or {"repository": "example/myrepo", "labels": ["linux"]}
    return {
        "apiVersion": API,
        "kind": "RunnerDeployment",
        "metadata": {"name": name, "namespace": namespace, "uid": f"rd-uid-{name}"},
        "spec": {"replicas": 1, "template": {"spec": spec}},
    }


def reporting(*, registered: int, busy: int) -> dict[str, Any]:
    """The deployment with its status's runner counts (what its RunnerReplicaSets report)."""
    target = deployment()
    target["status"] = {
        "replicas": registered,
        "registeredReplicas": registered,
        "busyReplicas": busy,
    }
    return target


def runner(name: str, busy: object) -> dict[str, Any]:
    return {
        "apiVersion": API,
        "kind": "Runner",
        "metadata": {
            "name": name,
            "namespace": NAMESPACE,
            "labels": {"runner-deployment-name": TARGET},
        },
        "spec": {"repository": "example/myrepo"},
        "status": {"phase": "Running", "runnerId": 7, "busy": busy},
    }


def reservation(
    name: str,
    effective: datetime,
    *,
    started: datetime | None = None,
    completed: datetime | None = None,
    lifetime: timedelta = LIFETIME,
    job_started: bool = True,
) -> dict[str, Any]:
    """A CapacityReservation as the webhook receiver writes it (and the HRA hook updates it);
    once started, its job has a runner (`job_started`: the receiver saw `in_progress`)."""
    spec: dict[str, Any] = {
        "effectiveTime": format_time(effective),
        "expirationTime": format_time(effective + lifetime),
        "replicas": 1,
        "job": {
            "id": int(name.removeprefix("job-")),
            "runID": int(name.removeprefix("job-")),
            "repository": "example/myrepo",
        },
    }
    if started is not None:
        spec["startTime"] = format_time(started)
        if job_started:
            spec["jobStartTime"] = format_time(started)
    if completed is not None:
        spec["completionTime"] = format_time(completed)
    return {
        "apiVersion": RESERVATION_API,
        "kind": "CapacityReservation",
        "metadata": {
            "name": name,
            "namespace": NAMESPACE,
            "uid": f"uid-{name}",
            "labels": {"controller-uid": HRA_UID},
            "ownerReferences": [
                {
                    "apiVersion": API,
                    "kind": "HorizontalRunnerAutoscaler",
                    "name": HRA_NAME,
                    "uid": HRA_UID,
                    "controller": True,
                }
            ],
        },
        "spec": spec,
    }


# ------------------------------------------------------------------ Metacontroller's side


def post(client: TestClient, path: str, body: dict[str, Any]) -> dict[str, Any]:
    response = client.post(path, json=body)
    assert response.status_code == 200, response.text
    for secret in SECRETS:
        assert secret not in response.text
    answer: dict[str, Any] = response.json()
    return answer


@dataclass
class Cluster:
    client: TestClient
    clock: ManualClock
    hra: dict[str, Any]
    related: list[dict[str, Any]] = field(default_factory=lambda: [deployment()])
    reservations: dict[str, dict[str, Any]] = field(default_factory=dict)

    def add(self, *objects: dict[str, Any]) -> None:
        for obj in objects:
            self.reservations[obj["metadata"]["name"]] = obj

    def request(self) -> dict[str, Any]:
        related: dict[str, dict[str, Any]] = {DEPLOYMENTS: {}, RUNNERS: {}}
        for obj in self.related:
            group = f"{obj['kind']}.{obj['apiVersion']}"
            key = f"{obj['metadata']['namespace']}/{obj['metadata']['name']}"
            related.setdefault(group, {})[key] = copy.deepcopy(obj)
        children = {f"{NAMESPACE}/{name}": obj for name, obj in self.reservations.items()}
        return {
            "controller": CONTROLLER,
            "parent": copy.deepcopy(self.hra),
            "children": {RESERVATIONS: copy.deepcopy(children)},
            "related": related,
        }

    def sync(self) -> dict[str, Any]:
        answer = post(self.client, SYNC, self.request())
        self.hra["status"] = answer["status"]
        self.reservations = {c["metadata"]["name"]: c for c in answer["children"]}
        return answer

    def complete(self, name: str) -> None:
        """What the receiver does on the job's `completed` delivery."""
        self.reservations[name]["spec"]["completionTime"] = format_time(self.clock.now())

    def start_times(self) -> dict[str, str | None]:
        return {name: r["spec"].get("startTime") for name, r in sorted(self.reservations.items())}


def condition(answer: dict[str, Any], kind: str = "ScalingActive") -> dict[str, Any]:
    found: list[dict[str, Any]] = [
        c for c in answer["status"].get("conditions", []) if c["type"] == kind
    ]
    assert len(found) == 1, answer["status"]
    return found[0]


def failed_condition(answer: dict[str, Any]) -> dict[str, Any]:
    found: list[dict[str, Any]] = [
        c for c in answer["status"].get("conditions", []) if c["status"] == "False"
    ]
    assert len(found) == 1, answer["status"]
    return found[0]


def child_names(answer: dict[str, Any]) -> list[str]:
    return sorted(child["metadata"]["name"] for child in answer["children"])


def ago(clock: ManualClock, seconds: float) -> datetime:
    return clock.now() - timedelta(seconds=seconds)


# ------------------------------------------------------------------ fixtures


@pytest.fixture
def settings() -> Settings:
    """This file's own GitHub token and a webhook secret, which no answer may show."""
    return hook_settings(
        {"GITHUB_TOKEN": GITHUB_TOKEN, "GITHUB_WEBHOOK_SECRET_TOKEN": WEBHOOK_SECRET}
    )


@pytest.fixture
def cluster(client: TestClient, clock: ManualClock) -> Cluster:
    return Cluster(client, clock, autoscaler())


# ------------------------------------------------------------------ reservations


def test_webhook_only_hra_counts_its_active_reservations(
    cluster: Cluster, clock: ManualClock, github: InMemoryGitHub
) -> None:
    cluster.add(
        reservation("job-1", ago(clock, 60)),
        reservation("job-2", ago(clock, 30)),
        reservation("job-3", clock.now()),
    )

    answer = cluster.sync()

    status = answer["status"]
    assert status["desiredReplicas"] == 3
    assert status["reservedReplicas"] == 3
    assert status["newestReservationTime"] == format_time(clock.now())
    assert status["lastSuccessfulScaleOutTime"] == format_time(clock.now())
    assert status["observedGeneration"] == 3
    assert condition(answer)["status"] == "True"
    assert child_names(answer) == ["job-1", "job-2", "job-3"]
    # In place from the first sync: their lifetime starts now, recorded once.
    now = format_time(clock.now())
    assert cluster.start_times() == {"job-1": now, "job-2": now, "job-3": now}
    assert answer["resyncAfterSeconds"] == 60
    assert github.calls == []  # webhook-only: no metric, no GitHub call

    clock.advance(120)
    assert cluster.sync()["status"]["desiredReplicas"] == 3
    assert cluster.start_times() == {"job-1": now, "job-2": now, "job-3": now}


def test_no_reservations_gives_min_replicas(cluster: Cluster) -> None:
    answer = cluster.sync()

    assert answer["status"]["desiredReplicas"] == 0
    assert answer["status"]["reservedReplicas"] == 0
    assert answer["children"] == []


@pytest.mark.parametrize(
    ("started_seconds_ago", "kept"),
    [
        (30 * 60 + 60, False),  # expired a minute ago
        (30 * 60, False),  # expires exactly now: no longer counts (ARC's ExpirationTime.After)
        (30 * 60 - 1, True),
    ],
)
def test_expired_reservations_are_left_out_of_the_children(
    cluster: Cluster, clock: ManualClock, started_seconds_ago: int, kept: bool
) -> None:
    started = ago(clock, started_seconds_ago)
    cluster.add(
        reservation("job-1", started, started=started),
        reservation("job-2", clock.now(), started=clock.now()),
    )

    answer = cluster.sync()

    assert child_names(answer) == (["job-1", "job-2"] if kept else ["job-2"])
    assert answer["status"]["desiredReplicas"] == (2 if kept else 1)


def test_completed_reservations_do_not_count_but_stay_until_their_expiry(
    cluster: Cluster, clock: ManualClock
) -> None:
    effective = ago(clock, 20 * 60)
    cluster.add(
        reservation("job-1", effective, started=effective, completed=ago(clock, 60)),
        reservation("job-2", clock.now(), started=clock.now()),
    )

    answer = cluster.sync()

    assert child_names(answer) == ["job-1", "job-2"]
    assert answer["status"]["desiredReplicas"] == 1
    assert answer["status"]["reservedReplicas"] == 1

    clock.advance(10 * 60)  # job-1's expirationTime
    assert child_names(cluster.sync()) == ["job-2"]


def test_completed_reservations_expiring_apart_are_removed_together(
    cluster: Cluster, clock: ManualClock
) -> None:
    """After a burst, completed reservations expire a fraction of a second apart. Their
    removal changes no count, so it asks for no sync of its own: the sync due anyway takes
    every one expired by then, and the answer stays the same meanwhile."""
    first = ago(clock, LIFETIME.total_seconds() - 2)
    cluster.add(
        *(
            reservation(
                f"job-{n}",
                first + timedelta(seconds=n / 10),
                started=first + timedelta(seconds=n / 10),
                completed=ago(clock, 60),
            )
            for n in range(1, 101)
        ),
        reservation("job-1000", clock.now(), started=clock.now()),
    )

    answer = cluster.sync()

    assert answer["resyncAfterSeconds"] == 60  # the sync period, not job-1's expiry in 2 s
    assert answer["status"]["desiredReplicas"] == 1
    assert len(answer["children"]) == 101

    clock.advance(answer["resyncAfterSeconds"])
    after = cluster.sync()

    assert child_names(after) == ["job-1000"]  # all 100 expired by then, gone in one sync
    assert after["status"]["desiredReplicas"] == 1


def test_a_waiting_reservation_starts_only_when_it_gets_room(
    client: TestClient, clock: ManualClock
) -> None:
    cluster = Cluster(client, clock, autoscaler(maxReplicas=2))
    queued_at = clock.now()
    cluster.add(
        reservation("job-1", queued_at),
        reservation("job-2", queued_at + timedelta(seconds=1)),
        reservation("job-3", queued_at + timedelta(seconds=2)),
    )

    first = cluster.sync()
    assert first["status"]["desiredReplicas"] == 2
    assert first["status"]["reservedReplicas"] == 3  # the waiting one is counted, capped
    at_first = format_time(clock.now())
    assert cluster.start_times() == {"job-1": at_first, "job-2": at_first, "job-3": None}

    clock.advance(10 * 60)
    cluster.complete("job-1")
    clock.advance(1)
    after = cluster.sync()

    assert child_names(after) == ["job-1", "job-2", "job-3"]  # job-1 kept, completed
    assert cluster.start_times() == {
        "job-1": at_first,
        "job-2": at_first,
        "job-3": format_time(clock.now()),
    }
    assert after["status"]["desiredReplicas"] == 2
    assert after["status"]["reservedReplicas"] == 2


def test_a_waiting_reservation_outlives_its_expiration_time(
    client: TestClient, clock: ManualClock
) -> None:
    cluster = Cluster(client, clock, autoscaler(maxReplicas=2))
    queued_at = clock.now()
    cluster.add(
        reservation("job-1", queued_at),
        reservation("job-2", queued_at),
        reservation("job-3", queued_at + timedelta(seconds=2)),
    )
    cluster.sync()
    for running in ("job-1", "job-2"):  # their in_progress deliveries
        cluster.reservations[running]["spec"]["jobStartTime"] = format_time(clock.now())

    clock.advance(45 * 60)  # job-3's expirationTime has passed while it waited
    after = cluster.sync()

    assert child_names(after) == ["job-3"]  # job-1 and job-2 expired: job-3 gets room
    assert cluster.start_times() == {"job-3": format_time(clock.now())}
    assert after["status"]["desiredReplicas"] == 1
    job_3 = cluster.reservations["job-3"]["spec"]
    assert job_3["expirationTime"] == format_time(queued_at + timedelta(seconds=2) + LIFETIME)


def test_a_waiting_reservation_gets_no_start_time_while_the_others_hold_the_room(
    client: TestClient, clock: ManualClock
) -> None:
    cluster = Cluster(client, clock, autoscaler(maxReplicas=1))
    cluster.add(reservation("job-1", clock.now()), reservation("job-2", clock.now()))

    for _ in range(3):
        cluster.sync()
        clock.advance(5 * 60)

    assert cluster.start_times()["job-2"] is None
    cluster.complete("job-1")
    cluster.sync()
    assert cluster.start_times()["job-2"] == format_time(clock.now())


@pytest.mark.parametrize(
    ("children", "spec", "resync"),
    [
        pytest.param([], {}, 60, id="nothing-pending"),
        pytest.param(
            [reservation("job-1", T0 - timedelta(minutes=29, seconds=30))],
            {},
            60,  # not started before this sync: its lifetime starts now
            id="unstarted-reservation",
        ),
        pytest.param(
            [
                reservation(
                    "job-1",
                    T0 - timedelta(minutes=29, seconds=30),
                    started=T0 - timedelta(minutes=29, seconds=30),
                )
            ],
            {},
            30,
            id="reservation-expiry",
        ),
        pytest.param(
            [
                reservation(
                    "job-1",
                    T0 - timedelta(minutes=29, seconds=15),
                    started=T0 - timedelta(minutes=20),
                    completed=T0 - timedelta(minutes=10),
                )
            ],
            {},
            60,  # it no longer counts: removed by the sync due anyway, not one of its own
            id="completed-reservation-expiry",
        ),
        pytest.param(
            [],
            {
                "scheduledOverrides": [
                    {
                        "startTime": "2026-01-01T00:00:20Z",
                        "endTime": "2026-01-01T01:00:00Z",
                        "minReplicas": 2,
                    }
                ]
            },
            20,
            id="override-start",
        ),
        pytest.param(
            [],
            {
                "scheduledOverrides": [
                    {
                        "startTime": "2025-12-31T23:00:00Z",
                        "endTime": "2026-01-01T00:00:40Z",
                        "minReplicas": 2,
                    }
                ]
            },
            40,
            id="override-end",
        ),
        pytest.param(
            [],
            {
                "scheduledOverrides": [
                    {
                        "startTime": "2026-01-01T00:05:00Z",
                        "endTime": "2026-01-01T01:00:00Z",
                        "minReplicas": 2,
                    }
                ]
            },
            60,
            id="override-beyond-the-sync-period",
        ),
    ],
)
def test_resync_after_the_next_change_or_the_sync_period(
    client: TestClient,
    clock: ManualClock,
    children: list[dict[str, Any]],
    spec: dict[str, Any],
    resync: int,
) -> None:
    cluster = Cluster(client, clock, autoscaler(**spec))
    cluster.add(*children)

    assert cluster.sync()["resyncAfterSeconds"] == resync


def test_the_overrides_summary_is_cleared_once_no_override_is_active_or_upcoming(
    client: TestClient, clock: ManualClock
) -> None:
    # As ARC (horizontalrunnerautoscaler_controller.go, reconcile): an empty summary is set to
    # nil, and its status merge patch removes the field; an old text would name a past time.
    override = {
        "startTime": "2025-12-31T23:00:00Z",
        "endTime": "2026-01-01T00:00:40Z",
        "minReplicas": 2,
    }
    cluster = Cluster(client, clock, autoscaler(minReplicas=1, scheduledOverrides=[override]))

    during = cluster.sync()["status"]
    assert during["scheduledOverridesSummary"] == "min=1 time=2026-01-01 00:00:40 +0000 UTC"
    assert during["desiredReplicas"] == 2
    clock.advance(41)
    after = cluster.sync()["status"]
    assert "scheduledOverridesSummary" not in after


# ------------------------------------------------------------------ failures: never a 500


@pytest.mark.parametrize(
    "related",
    [
        pytest.param([], id="absent"),
        pytest.param([deployment(namespace="elsewhere")], id="other-namespace"),
        pytest.param([deployment(name="another-deployment")], id="other-name"),
    ],
)
def test_scale_target_missing_keeps_the_answer_and_the_children(
    client: TestClient, clock: ManualClock, related: list[dict[str, Any]]
) -> None:
    previous = {"desiredReplicas": 4, "reservedReplicas": 4}
    cluster = Cluster(client, clock, autoscaler(status=previous), related=related)
    long_ago = ago(clock, 3600)
    expired = reservation("job-1", long_ago, started=long_ago)
    unstarted = reservation("job-2", clock.now())
    cluster.add(expired, unstarted)

    answer = cluster.sync()

    assert answer["status"]["desiredReplicas"] == 4
    assert answer["status"]["reservedReplicas"] == 4
    scaling = condition(answer)
    assert (scaling["status"], scaling["reason"]) == ("False", "ScaleTargetNotFound")
    assert scaling["message"] == f"RunnerDeployment {NAMESPACE}/{TARGET} not found"
    assert [child["spec"] for child in answer["children"]] == [
        expired["spec"],
        unstarted["spec"],
    ]
    assert answer["resyncAfterSeconds"] == 60


def test_missing_max_replicas_gives_arcs_error_and_keeps_the_children(
    client: TestClient, clock: ManualClock
) -> None:
    hra = autoscaler(status={"desiredReplicas": 2})
    del hra["spec"]["maxReplicas"]
    cluster = Cluster(client, clock, hra)
    cluster.add(reservation("job-1", clock.now()))

    answer = cluster.sync()

    scaling = condition(answer)
    assert (scaling["status"], scaling["reason"]) == ("False", "RunnerAutoscalingFailure")
    assert scaling["message"] == (
        f"horizontalrunnerautoscaler {NAMESPACE}/{HRA_NAME} is missing maxReplicas"
    )
    assert answer["status"]["desiredReplicas"] == 2
    assert child_names(answer) == ["job-1"]
    assert "startTime" not in answer["children"][0]["spec"]


@pytest.mark.parametrize(
    ("spec", "status", "fragment"),
    [
        ({"minReplicas": "two"}, None, "spec.minReplicas"),
        ({"scaleDownDelaySecondsAfterScaleOut": "10m"}, None, "scaleDownDelaySecondsAfterScaleOut"),
        ({"metrics": {"type": "PercentageRunnersBusy"}}, None, "spec.metrics"),
        (
            {"scaleTargetRef": {"kind": "Deployment", "name": TARGET}},
            None,
            "spec.scaleTargetRef.kind is not supported. valid kinds are RunnerDeployment and "
            "RunnerSet",
        ),
        ({"scaleTargetRef": {}}, None, "spec.scaleTargetRef.name is required"),
        (
            {"metrics": [{**BUSY_METRIC, "scaleUpThreshold": "high"}]},
            None,
            "scaleUpThreshold cannot be parsed into a float64",
        ),
        (
            {"metrics": [{"type": "CPU"}]},
            None,
            "unsupported metric type in spec.metrics[0].type",
        ),
        (
            {
                "scheduledOverrides": [
                    {"startTime": "tomorrow", "endTime": "2026-01-02T00:00:00Z", "minReplicas": 1}
                ]
            },
            None,
            "spec.scheduledOverrides[0].startTime is not an RFC 3339 time",
        ),
        (
            {"capacityReservations": [{"expirationTime": "soon", "replicas": 1}]},
            None,
            "spec.capacityReservations[0].expirationTime",
        ),
        (
            {},
            {"desiredReplicas": 2, "lastSuccessfulScaleOutTime": "yesterday"},
            "status.lastSuccessfulScaleOutTime",
        ),
        ({}, {"desiredReplicas": "many"}, "status.desiredReplicas"),
    ],
)
def test_an_unusable_hra_gets_a_condition_not_a_500(
    client: TestClient,
    clock: ManualClock,
    spec: dict[str, Any],
    status: dict[str, Any] | None,
    fragment: str,
) -> None:
    cluster = Cluster(client, clock, autoscaler(status=status, **spec))
    cluster.add(reservation("job-1", clock.now()))

    answer = cluster.sync()  # asserts a 200

    assert fragment in failed_condition(answer)["message"]
    assert child_names(answer) == ["job-1"]
    assert "startTime" not in answer["children"][0]["spec"]


def _overflowing_reservation() -> dict[str, Any]:
    obj = reservation("job-1", T0)
    obj["spec"]["effectiveTime"] = "0001-01-01T00:00:00Z"
    obj["spec"]["expirationTime"] = "9999-12-31T23:59:59Z"
    return obj


@pytest.mark.parametrize(
    ("spec", "status", "children"),
    [
        pytest.param(
            {"scaleDownDelaySecondsAfterScaleOut": 10**14},  # an int64, as the CRD allows
            None,
            [],
            id="scale-down-delay-beyond-timedelta",
        ),
        pytest.param(
            {"metrics": [{**BUSY_METRIC, "scaleUpThreshold": "0", "scaleUpFactor": "1e308"}]},
            {"desiredReplicas": 2},
            [],
            id="scale-up-factor-overflowing",
        ),
        pytest.param(
            {},
            None,
            [_overflowing_reservation()],
            id="reservation-lifetime-beyond-datetime",
        ),
    ],
)
def test_extreme_but_valid_values_get_an_answer_not_a_500(
    client: TestClient,
    clock: ManualClock,
    spec: dict[str, Any],
    status: dict[str, Any] | None,
    children: list[dict[str, Any]],
) -> None:
    cluster = Cluster(client, clock, autoscaler(status=status, **spec))
    cluster.add(*children)

    response = client.post(SYNC, json=cluster.request())

    assert response.status_code == 200, response.text
    (condition,) = [
        c for c in response.json()["status"]["conditions"] if c["type"] == "ScalingActive"
    ]
    assert (condition["status"], condition["reason"]) == ("False", "RunnerAutoscalingFailure")


def test_a_rate_limited_github_keeps_the_answer_and_retries_after_the_reset(
    client: TestClient, clock: ManualClock, github: InMemoryGitHub
) -> None:
    metric = {"type": "TotalNumberOfQueuedAndInProgressWorkflowRuns"}
    hra = autoscaler(status={"desiredReplicas": 3}, metrics=[metric])
    cluster = Cluster(client, clock, hra)
    cluster.add(reservation("job-1", clock.now()))

    def limited(repository: str, status: str) -> list[WorkflowRun]:
        github.calls.append(("list_workflow_runs", repository))
        raise rate_limited(120)

    github.list_workflow_runs = limited  # type: ignore[method-assign]

    answer = cluster.sync()

    assert github.count("list_workflow_runs") == 1
    scaling = condition(answer)
    assert (scaling["status"], scaling["reason"]) == ("False", "GitHubRateLimited")
    assert "rate limit" in scaling["message"]
    assert answer["resyncAfterSeconds"] == 120
    assert answer["status"]["desiredReplicas"] == 3
    assert child_names(answer) == ["job-1"]


@pytest.mark.parametrize(("generation", "kept"), [(1, True), (2, False)])
def test_a_failed_sync_after_an_edit_drops_the_busy_step_it_cannot_vouch_for(
    client: TestClient, clock: ManualClock, github: InMemoryGitHub, generation: int, kept: bool
) -> None:
    """Found in review: Metacontroller stamps the status it writes with the parent's new
    generation, so a busy step kept by a failed sync after an edit would stand for the new
    spec for the rest of its period."""
    metric = {"type": "TotalNumberOfQueuedAndInProgressWorkflowRuns"}
    step = {"key": "desiredReplicas", "value": 3, "expirationTime": format_time(clock.now())}
    hra = autoscaler(
        status={"desiredReplicas": 3, "observedGeneration": 1, "cacheEntries": [step]},
        metrics=[metric],
    )
    hra["metadata"]["generation"] = generation
    cluster = Cluster(client, clock, hra)

    def limited(repository: str, status: str) -> list[WorkflowRun]:
        raise rate_limited(120)

    github.list_workflow_runs = limited  # type: ignore[method-assign]

    answer = cluster.sync()

    assert condition(answer)["reason"] == "GitHubRateLimited"
    assert bool(answer["status"].get("cacheEntries")) is kept


# ------------------------------------------------------------------ pull metrics


@pytest.mark.parametrize(
    ("busy", "desired"),
    [
        ([True, True, True, False], 8),  # 75% busy: scale up by the factor 2
        ([True, True, False, False], 4),  # between the thresholds: stay
        ([True, False, False, False], 4),  # 25% is not below the scale-down threshold
        ([False, False, False, False], 2),  # scale down by the factor 0.5
        (["true", "yes", 1, None], 2),  # only a JSON true is busy
    ],
)
def test_percentage_runners_busy_reads_the_related_runners_and_the_scopes_list(
    client: TestClient,
    clock: ManualClock,
    github: InMemoryGitHub,
    busy: list[object],
    desired: int,
) -> None:
    hra = autoscaler(status={"desiredReplicas": 4}, minReplicas=1, metrics=[BUSY_METRIC])
    del hra["spec"]["scaleUpTriggers"]
    runners = [runner(f"{TARGET}-{index}", flag) for index, flag in enumerate(busy)]
    cluster = Cluster(client, clock, hra, related=[deployment(), *runners])

    answer = cluster.sync()

    assert answer["status"]["desiredReplicas"] == desired
    # The scope's runner list, as cached for every Runner; no workflow run is read.
    assert github.calls == [("list_runners", "/repos/example/myrepo")]


def test_a_runner_listed_busy_counts_busy_before_its_runner_reports_it(
    client: TestClient, clock: ManualClock, github: InMemoryGitHub
) -> None:
    """A short job on an ephemeral runner may start and end between two syncs of its Runner:
    the list the HRA reads now says it is busy, and that counts (ARC counts the list). A
    runner listed busy that is not the deployment's counts nothing."""
    hra = autoscaler(status={"desiredReplicas": 4}, minReplicas=1, metrics=[BUSY_METRIC])
    del hra["spec"]["scaleUpTriggers"]
    runners = [runner(f"{TARGET}-{index}", False) for index in range(4)]
    scope = Scope(repository="example/myrepo")
    for index in range(3):
        github.register(scope, f"{TARGET}-{index}", busy=True)
    github.register(scope, "someone-elses-runner", busy=True)
    cluster = Cluster(client, clock, hra, related=[deployment(), *runners])

    answer = cluster.sync()

    assert answer["status"]["desiredReplicas"] == 8  # 3 of 4 busy: up by the factor 2


@pytest.mark.parametrize(
    ("reported_ago", "desired"),
    [
        (300, 2),  # status reports an older list: the list says idle, and that counts
        (None, 2),  # a status that does not say when: the list counts
        (-60, 8),  # status reports a newer list (another replica's): status counts, all busy
        (-3600, 2),  # an hour ahead: no replica's clock, not believed (found in review)
    ],
)
def test_a_runner_the_list_shows_idle_counts_idle_unless_its_status_is_newer(
    clock: ManualClock, github: InMemoryGitHub, reported_ago: float | None, desired: int
) -> None:
    """A Runner whose state held a while mirrors a list up to a few minutes old: the list the
    HRA reads now (dated, as the server's cache dates every list), which lists the runner
    idle, says its job is over."""
    hra = autoscaler(status={"desiredReplicas": 4}, minReplicas=1, metrics=[BUSY_METRIC])
    del hra["spec"]["scaleUpTriggers"]
    runners = [runner(f"{TARGET}-{index}", True) for index in range(4)]
    for index, busy_runner in enumerate(runners):
        if reported_ago is not None:
            checked = clock.now() - timedelta(seconds=reported_ago)
            busy_runner["status"]["lastRegistrationCheckTime"] = format_time(checked)
        # Their jobs ended since their status was written.
        github.register(Scope(repository="example/myrepo"), f"{TARGET}-{index}", busy=False)
    settings = hook_settings({})
    app = create_app(settings, github=CachedGitHub(github, settings, clock), clock=clock)
    with hook_client(app) as client:
        answer = Cluster(client, clock, hra, related=[deployment(), *runners]).sync()

    assert answer["status"]["desiredReplicas"] == desired  # none busy: down by the factor 0.5


@pytest.mark.parametrize(
    "error", [GitHubError("boom", 502), RateLimitedError("slow down", retry_after=900, status=429)]
)
def test_without_the_list_the_answer_stands(
    client: TestClient, clock: ManualClock, github: InMemoryGitHub, error: GitHubError
) -> None:
    # Found by an independent run: the Runners' status alone had counted the Runners made
    # since their last list as idle, and an outage while every runner was busy scaled the
    # target down step by step to its minimum (9 -> 8 -> 4 -> 2) as jobs queued up. ARC's
    # reconcile fails on the list's error and changes nothing.
    hra = autoscaler(status={"desiredReplicas": 4}, minReplicas=1, metrics=[BUSY_METRIC])
    del hra["spec"]["scaleUpTriggers"]
    runners = [runner(f"{TARGET}-{index}", False) for index in range(4)]  # none listed busy yet
    github.list_error = error
    cluster = Cluster(client, clock, hra, related=[deployment(), *runners])

    answer = cluster.sync()

    assert answer["status"]["desiredReplicas"] == 4
    active = {c["type"]: c for c in answer["status"]["conditions"]}["ScalingActive"]
    assert active["status"] == "False"
    assert "boom" in active["message"] or "slow down" in active["message"]
    if isinstance(error, RateLimitedError):
        assert answer["resyncAfterSeconds"] == pytest.approx(900)


def test_what_job_checks_learnt_stays_when_the_list_is_refused(
    clock: ManualClock, github: InMemoryGitHub
) -> None:
    # Found by review: the HRA asked GitHub about reserved jobs, then the refused list left
    # its answer as it was, reservations included: every sync of the outage asked again.
    cached = CachedGitHub(github, hook_settings(), clock)
    with hook_client(create_app(hook_settings(), github=cached, clock=clock)) as client:
        hra = autoscaler(
            {"desiredReplicas": 2, "idleBeyondMinSince": format_time(ago(clock, 120))},
            minReplicas=0,
            metrics=[BUSY_METRIC],
        )
        idle = [runner(f"{TARGET}-{i}", False) for i in range(2)]
        cluster = Cluster(client, clock, hra, related=[deployment(), *idle])
        cluster.add(reservation("job-1", ago(clock, 600)), reservation("job-2", ago(clock, 600)))
        github.workflow_jobs[("example/myrepo", 1)] = [WorkflowJob("completed", ("linux",), 1)]
        github.workflow_jobs[("example/myrepo", 2)] = [WorkflowJob("completed", ("linux",), 2)]
        github.list_error = GitHubError("list runners: HTTP 502", 502)
        for _ in range(5):
            answer = cluster.sync()
            clock.advance(60)
    assert answer["status"]["desiredReplicas"] == 2  # the answer stands
    settled = [c["spec"].get("completionTime") for c in answer["children"]]
    assert len(settled) == 2 and all(settled)
    assert github.count("list_workflow_jobs") == 2  # each run asked about once


def test_queued_and_in_progress_runs_are_read_from_github_for_org_runners(
    client: TestClient, clock: ManualClock, github: InMemoryGitHub
) -> None:
    metric = {
        "type": "TotalNumberOfQueuedAndInProgressWorkflowRuns",
        "repositoryNames": ["app", "lib"],
    }
    hra = autoscaler(metrics=[metric])
    target = deployment(organization="acme", labels=["linux"])
    github.workflow_runs[("acme/app", "queued")] = [WorkflowRun(11, "queued")]
    github.workflow_runs[("acme/lib", "in_progress")] = [WorkflowRun(12, "in_progress")]
    github.workflow_jobs[("acme/app", 11)] = [
        WorkflowJob("queued", ("self-hosted", "linux"), 1),
        WorkflowJob("queued", ("self-hosted", "gpu"), 2),  # not for these runners
    ]
    github.workflow_jobs[("acme/lib", 12)] = [WorkflowJob("in_progress", ("linux",), 3)]
    cluster = Cluster(client, clock, hra, related=[target])
    cluster.add(reservation("job-1", clock.now()))

    answer = cluster.sync()

    assert answer["status"]["desiredReplicas"] == 3  # 1 queued + 1 in progress + 1 reserved
    assert sorted(github.calls) == sorted(
        [
            ("list_workflow_runs", "acme/app"),
            ("list_workflow_runs", "acme/app"),
            ("list_workflow_runs", "acme/lib"),
            ("list_workflow_runs", "acme/lib"),
            ("list_workflow_jobs", "acme/app"),
            ("list_workflow_jobs", "acme/lib"),
        ]
    )


def test_org_runners_without_repository_names_get_arcs_error_and_no_github_call(
    client: TestClient, clock: ManualClock, github: InMemoryGitHub
) -> None:
    hra = autoscaler(metrics=[{"type": "TotalNumberOfQueuedAndInProgressWorkflowRuns"}])
    cluster = Cluster(client, clock, hra, related=[deployment(organization="acme")])

    answer = cluster.sync()

    assert "repositoryNames is required" in failed_condition(answer)["message"]
    assert github.calls == []


@pytest.mark.parametrize("names", [MAX_WORKFLOW_RUN_REPOSITORIES + 1, 3000])
def test_more_repository_names_than_a_sync_reads_get_a_condition_and_no_github_call(
    client: TestClient, clock: ManualClock, github: InMemoryGitHub, names: int
) -> None:
    repositories = [f"repo{i}" for i in range(names)]
    metric: dict[str, Any] = {
        "type": "TotalNumberOfQueuedAndInProgressWorkflowRuns",
        "repositoryNames": repositories,
    }
    hra = autoscaler(metrics=[metric], minReplicas=1, maxReplicas=5)
    cluster = Cluster(client, clock, hra, related=[deployment(organization="acme")])

    answer = cluster.sync()

    message = failed_condition(answer)["message"]
    assert f"spec.metrics[].repositoryNames has {names} repositories" in message
    assert github.calls == []
    # The same name twice is one repository: read once, through the cache.
    metric["repositoryNames"] = repositories[:MAX_WORKFLOW_RUN_REPOSITORIES] * 2
    assert condition(cluster.sync())["status"] == "True"


# ------------------------------------------------------------------ scale-down delay


def test_the_scale_down_delay_holds_the_answer_and_only_scale_out_is_recorded(
    client: TestClient, clock: ManualClock
) -> None:
    cluster = Cluster(client, clock, autoscaler(scaleDownDelaySecondsAfterScaleOut=90))
    scaled_out_at = format_time(clock.now())
    cluster.add(*(reservation(f"job-{n}", clock.now()) for n in (1, 2, 3)))
    assert cluster.sync()["status"]["lastSuccessfulScaleOutTime"] == scaled_out_at

    clock.advance(60)
    cluster.complete("job-1")
    cluster.complete("job-2")
    held = cluster.sync()

    assert held["status"]["desiredReplicas"] == 3
    assert held["status"]["reservedReplicas"] == 1
    assert held["status"]["lastSuccessfulScaleOutTime"] == scaled_out_at
    assert condition(held)["reason"] == "ScaleDownDelay"
    assert held["resyncAfterSeconds"] == 30  # when the delay ends

    clock.advance(30)
    released = cluster.sync()
    assert released["status"]["desiredReplicas"] == 1
    assert released["status"]["lastSuccessfulScaleOutTime"] == scaled_out_at

    clock.advance(10)
    cluster.add(reservation("job-4", clock.now()))
    scaled_out = cluster.sync()
    assert scaled_out["status"]["desiredReplicas"] == 2
    assert scaled_out["status"]["lastSuccessfulScaleOutTime"] == format_time(clock.now())


def test_an_hra_reads_again_only_the_reservations_whose_state_changed(
    clock: ManualClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    from hooks.autoscaler import controller

    read: list[str] = []
    read_reservation = controller._ObservedReservation.read.__func__  # type: ignore[attr-defined]

    def counting(cls: type[Any], obj: dict[str, Any]) -> Any:
        read.append(obj["metadata"]["name"])
        return read_reservation(cls, obj)

    monkeypatch.setattr(controller._ObservedReservation, "read", classmethod(counting))

    def versioned(obj: dict[str, Any], version: str) -> dict[str, Any]:
        return {**obj, "metadata": {**obj["metadata"], "resourceVersion": version}}

    hra = autoscaler(maxReplicas=2)
    waiting = {
        name: versioned(reservation(name, ago(clock, 60 - index), started=None), "1")
        for index, name in enumerate(("job-1", "job-2", "job-3"))
    }
    started = ago(clock, 60)
    rounds = [
        [versioned(reservation("job-1", started, started=started), "2"), waiting["job-2"]],
        [versioned(reservation("job-1", started, started=started), "2"), waiting["job-2"]],
        # job 1 completed (a new resourceVersion), job 3 queued: job 3 waits beyond two.
        [
            versioned(reservation("job-1", started, started=started, completed=clock.now()), "3"),
            waiting["job-2"],
            waiting["job-3"],
        ],
    ]

    def answers(client: TestClient) -> list[dict[str, Any]]:
        results = []
        for children in rounds:
            cluster = Cluster(client, clock, copy.deepcopy(hra))
            cluster.add(*copy.deepcopy(children))
            results.append(cluster.sync())
        return results

    warm = answers(make_client(clock))
    assert read == ["job-1", "job-2", "job-1", "job-3"]
    assert warm == answers(make_client(clock))  # the same answers as without the memo
    assert warm[2]["status"]["reservedReplicas"] == 2


def make_client(clock: ManualClock) -> TestClient:
    return hook_client(create_app(hook_settings({}), github=InMemoryGitHub(clock), clock=clock))


# ------------------------------------------------------------------ customize


RUNNERS_RULE = {
    "apiVersion": API,
    "resource": "runners",
    "labelSelector": {"matchLabels": {"runner-deployment-name": TARGET}},
    "namespace": NAMESPACE,
}


@pytest.mark.parametrize(
    ("ref", "rules"),
    [
        (
            {"kind": "RunnerDeployment", "name": TARGET},
            [
                {
                    "apiVersion": API,
                    "resource": "runnerdeployments",
                    "names": [TARGET],
                    "namespace": NAMESPACE,
                },
                RUNNERS_RULE,
            ],
        ),
        (
            {"name": TARGET},  # no kind: a RunnerDeployment
            [
                {
                    "apiVersion": API,
                    "resource": "runnerdeployments",
                    "names": [TARGET],
                    "namespace": NAMESPACE,
                },
                RUNNERS_RULE,
            ],
        ),
        (
            {"kind": "RunnerSet", "name": "example-runnerset"},
            [
                {
                    "apiVersion": API,
                    "resource": "runnersets",
                    "names": ["example-runnerset"],
                    "namespace": NAMESPACE,
                }
            ],
        ),
        ({"kind": "RunnerDeployment"}, []),
        ({"kind": "RunnerDeployment", "name": ""}, []),
        # Found by a hostile probe: a name no label may hold made a selector Metacontroller
        # refuses, failing every sync, so the HRA never got the condition saying why.
        *(
            (
                {"kind": "RunnerDeployment", "name": name},
                [
                    {
                        "apiVersion": API,
                        "resource": "runnerdeployments",
                        "names": [name],
                        "namespace": NAMESPACE,
                    }
                ],
            )
            for name in ("my app", "x" * 64, "-lead")
        ),
        ({"kind": "Deployment", "name": TARGET}, []),
        (None, []),
    ],
)
def test_customize_asks_for_the_scale_target_and_its_runners(
    client: TestClient, ref: dict[str, Any] | None, rules: list[dict[str, Any]]
) -> None:
    hra = autoscaler(scaleTargetRef=ref, metrics=[BUSY_METRIC])
    if ref is None:
        del hra["spec"]["scaleTargetRef"]

    answer = post(client, CUSTOMIZE, {"controller": CONTROLLER, "parent": hra})

    assert answer == {"relatedResources": rules}


@pytest.mark.parametrize(
    "metrics",
    [
        [],
        [{"type": "TotalNumberOfQueuedAndInProgressWorkflowRuns", "repositoryNames": ["app"]}],
        ["PercentageRunnersBusy", {"type": "percentagerunnersbusy"}],  # not the metric itself
    ],
)
def test_an_hra_that_does_not_measure_busy_runners_is_not_sent_them(
    client: TestClient, metrics: list[Any]
) -> None:
    # A thousand Runners would otherwise make every sync of the HRA large, and each of their
    # status changes one more sync.
    hra = autoscaler(metrics=metrics)

    answer = post(client, CUSTOMIZE, {"controller": CONTROLLER, "parent": hra})

    assert answer["relatedResources"] == [
        {
            "apiVersion": API,
            "resource": "runnerdeployments",
            "names": [TARGET],
            "namespace": NAMESPACE,
        }
    ]


# ------------------------------------------------------------------ metrics


def test_metrics_show_the_desired_replicas_after_a_sync(
    client: TestClient, clock: ManualClock
) -> None:
    hra = autoscaler()
    hra["metadata"]["name"] = "metrics-probe"  # the registry is process-wide: a name of its own
    cluster = Cluster(client, clock, hra)
    cluster.add(reservation("job-1", clock.now()), reservation("job-2", clock.now()))

    cluster.sync()
    metrics = client.get("/metrics")

    assert metrics.status_code == 200
    labels = f'{{horizontalrunnerautoscaler="metrics-probe",namespace="{NAMESPACE}"}}'
    assert f"horizontalrunnerautoscaler_status_desired_replicas{labels} 2.0" in metrics.text
    assert f"horizontalrunnerautoscaler_spec_max_replicas{labels} 10.0" in metrics.text
    assert f"arc_hooks_horizontalrunnerautoscaler_reserved_replicas{labels} 2.0" in metrics.text
    # Which replica synced the HRA last, for the rules that combine several replicas' gauges.
    last_sync = [
        sample.value
        for family in text_string_to_metric_families(metrics.text)
        for sample in family.samples
        if sample.name == "arc_hooks_horizontalrunnerautoscaler_last_sync_timestamp_seconds"
        and sample.labels == {"horizontalrunnerautoscaler": "metrics-probe", "namespace": NAMESPACE}
    ]
    assert last_sync == [clock.now().timestamp()]
    for secret in SECRETS:
        assert secret not in metrics.text


@pytest.mark.parametrize(
    "metric", [BUSY_METRIC, {"type": "TotalNumberOfQueuedAndInProgressWorkflowRuns"}]
)
def test_a_target_with_no_scope_is_reported_without_asking_github(
    client: TestClient, clock: ManualClock, github: InMemoryGitHub, metric: dict[str, Any]
) -> None:
    """Found by the hostile fuzzer: the HRA listed `/enterprises/` every minute, spending the
    budget on a 404 and reporting it as a GitHub failure."""
    hra = autoscaler(metrics=[metric], minReplicas=1, maxReplicas=10)
    answer = Cluster(client, clock, hra, related=[deployment(labels=["linux"])]).sync()

    scaling = condition(answer)
    assert (scaling["status"], scaling["reason"]) == ("False", "InvalidScaleTarget")
    assert "names no enterprise, organization or repository" in scaling["message"]
    assert github.calls == []


def _hra_samples(text: str, name: str, hra: str) -> list[tuple[dict[str, str], float]]:
    return [
        (sample.labels, sample.value)
        for family in text_string_to_metric_families(text)
        for sample in family.samples
        if sample.name == name and sample.labels.get("horizontalrunnerautoscaler") == hra
    ]


def test_the_scale_target_series_carry_arcs_lowercase_kind(
    client: TestClient, clock: ManualClock
) -> None:
    # ARC's scaleTarget.kind: "runnerdeployment" or "runnerset"
    # (horizontalrunnerautoscaler_controller.go, scaleTargetFromRD and Reconcile).
    hra = autoscaler(metrics=[BUSY_METRIC], minReplicas=1, maxReplicas=10)
    hra["metadata"]["name"] = "kind-probe"
    Cluster(client, clock, hra, related=[reporting(registered=2, busy=1)]).sync()

    series = _hra_samples(
        client.get("/metrics").text, "horizontalrunnerautoscaler_runners", "kind-probe"
    )

    assert [labels["kind"] for labels, _ in series] == ["runnerdeployment"]


def test_replicas_desired_is_percentage_runners_busys_own_even_when_the_fallback_decides(
    client: TestClient, clock: ManualClock
) -> None:
    # ARC (autoscaling.go, suggestReplicasByPercentageRunnersBusy) sets replicas_desired each
    # time the metric is asked; its 0 then makes suggestDesiredReplicas ask the fallback.
    total = {"type": "TotalNumberOfQueuedAndInProgressWorkflowRuns"}
    hra = autoscaler(metrics=[BUSY_METRIC, total], minReplicas=0, maxReplicas=10)
    hra["metadata"]["name"] = "fallback-probe"
    # 1 replica, none busy: below the scale-down threshold, int(1 * 0.5) = 0 is suggested.
    Cluster(client, clock, hra, related=[reporting(registered=1, busy=0)]).sync()

    text = client.get("/metrics").text
    for name in (
        "horizontalrunnerautoscaler_replicas_desired",
        "horizontalrunnerautoscaler_necessary_replicas",
    ):
        assert [value for _, value in _hra_samples(text, name, "fallback-probe")] == [0.0]


def test_a_token_shaped_repository_is_masked_on_metrics(
    client: TestClient, clock: ManualClock
) -> None:
    """/metrics is read without authentication; a token pasted into a spec's scope shows
    there no more than in the hook's answer."""
    token = "ghp_" + "A1b2C3d4E5" * 3 + "Zz9Yy8"
    target = deployment(repository=f"acme/{token}", labels=["linux"])
    target["status"] = {"replicas": 1, "registeredReplicas": 1, "busyReplicas": 1}
    hra = autoscaler(metrics=[BUSY_METRIC], minReplicas=1, maxReplicas=10)
    hra["metadata"]["name"] = "masked-probe"
    Cluster(client, clock, hra, related=[target]).sync()

    text = client.get("/metrics").text
    assert _hra_samples(text, "horizontalrunnerautoscaler_runners", "masked-probe")
    assert token not in text


# ------------------------------------------------------------------ lost `completed` deliveries


def test_a_reservation_whose_job_is_over_is_settled_once_runners_sit_idle(
    client: TestClient, clock: ManualClock, github: InMemoryGitHub
) -> None:
    webhook_only = autoscaler(
        {"idleBeyondMinSince": format_time(ago(clock, 60))},
        minReplicas=0,
        scaleUpTriggers=[{"githubEvent": {"workflowJob": {}}, "duration": "30m"}],
    )
    cluster = Cluster(client, clock, webhook_only, related=[reporting(registered=2, busy=1)])
    cluster.add(reservation("job-1", ago(clock, 300)), reservation("job-2", ago(clock, 300)))
    # GitHub: job 1 is over (its `completed` delivery was lost), job 2 still runs.
    github.workflow_jobs[("example/myrepo", 1)] = [WorkflowJob("completed", ("linux",), 1)]
    github.workflow_jobs[("example/myrepo", 2)] = [WorkflowJob("in_progress", ("linux",), 2)]

    answer = cluster.sync()

    assert answer["status"]["reservedReplicas"] == 1
    completed = {c["metadata"]["name"]: c["spec"].get("completionTime") for c in answer["children"]}
    # One idle runner: one reservation asked about, the oldest; it is kept, marked completed.
    assert completed == {"job-1": format_time(clock.now()), "job-2": None}
    assert github.calls == [("list_workflow_jobs", "example/myrepo")]


def test_no_github_call_while_every_runner_is_busy(
    client: TestClient, clock: ManualClock, github: InMemoryGitHub
) -> None:
    webhook_only = autoscaler(
        minReplicas=0, scaleUpTriggers=[{"githubEvent": {"workflowJob": {}}, "duration": "30m"}]
    )
    cluster = Cluster(client, clock, webhook_only, related=[reporting(registered=2, busy=2)])
    cluster.add(reservation("job-1", ago(clock, 300)), reservation("job-2", ago(clock, 300)))

    answer = cluster.sync()

    assert answer["status"]["reservedReplicas"] == 2
    assert github.calls == []


def webhook_only_cluster(
    client: TestClient,
    clock: ManualClock,
    *,
    registered: int,
    busy: int,
    idle_for: float = 120,
    **spec: Any,
) -> Cluster:
    """Its runners as the target's status counts them; those beyond minReplicas have sat idle
    for `idle_for` seconds already (the HRA asks GitHub about reserved jobs after a minute)."""
    status = {"idleBeyondMinSince": format_time(ago(clock, idle_for))} if idle_for else None
    hra = autoscaler(
        status,
        **{
            "minReplicas": 0,
            "scaleUpTriggers": [{"githubEvent": {"workflowJob": {}}, "duration": "30m"}],
            **spec,
        },
    )
    return Cluster(client, clock, hra, related=[reporting(registered=registered, busy=busy)])


def in_place(name: str, effective: datetime) -> dict[str, Any]:
    """A reservation the receiver made with room for it (its lifetime runs from the start)."""
    return reservation(name, effective, started=effective)


def job_check_times(answer: dict[str, Any]) -> dict[str, str | None]:
    return {c["metadata"]["name"]: c["spec"].get("jobCheckTime") for c in answer["children"]}


def test_a_long_job_still_running_does_not_keep_a_finished_one_from_being_asked_about(
    client: TestClient, clock: ManualClock, github: InMemoryGitHub
) -> None:
    """Found by a hostile probe: with one runner idle, the oldest reservation (a long job
    still running) was asked about at every sync, and the short job behind it, whose
    `completed` delivery was lost, held its runner until the long job ended."""
    cluster = webhook_only_cluster(client, clock, registered=2, busy=1)
    cluster.add(in_place("job-1", ago(clock, 600)), in_place("job-2", ago(clock, 310)))
    github.workflow_jobs[("example/myrepo", 1)] = [WorkflowJob("in_progress", ("linux",), 1)]
    github.workflow_jobs[("example/myrepo", 2)] = [WorkflowJob("completed", ("linux",), 2)]

    first = cluster.sync()

    # One idle runner: one run asked about, the oldest; GitHub's "not over" is recorded.
    assert github.calls == [("list_workflow_jobs", "example/myrepo")]
    assert job_check_times(first) == {"job-1": format_time(clock.now()), "job-2": None}
    assert first["status"]["reservedReplicas"] == 2

    clock.advance(60)
    second = cluster.sync()

    # The next sync asks about the one never asked about, and settles it.
    assert len(github.calls) == 2
    assert second["status"]["reservedReplicas"] == 1
    completed = {c["metadata"]["name"]: c["spec"].get("completionTime") for c in second["children"]}
    assert completed["job-2"] == format_time(clock.now())
    assert completed["job-1"] is None


def test_a_job_not_over_is_asked_about_again_after_as_long_again_whichever_replica_syncs(
    clock: ManualClock, github: InMemoryGitHub, settings: Settings
) -> None:
    """The record lives in the reservation, not in a replica's cache: two hook replicas
    syncing the HRA in turn space their calls by it."""
    github.workflow_jobs[("example/myrepo", 1)] = [WorkflowJob("in_progress", ("linux",), 1)]
    with (
        hook_client(create_app(settings, github=github, clock=clock)) as first_replica,
        hook_client(create_app(settings, github=github, clock=clock)) as second_replica,
    ):
        replicas = [first_replica, second_replica]
        cluster = webhook_only_cluster(first_replica, clock, registered=1, busy=0)
        cluster.add(in_place("job-1", ago(clock, 480)))
        asked_at = []
        for second in range(0, 20 * 60, 15):
            cluster.client = replicas[(second // 15) % 2]
            before = len(github.calls)
            cluster.sync()
            if len(github.calls) > before:
                asked_at.append(second)
            clock.advance(15)

    # Stood 8 minutes when first asked: again 8 minutes later, then 10 (the most).
    assert asked_at == [0, 480, 1080]


def test_idle_runners_that_min_replicas_keeps_do_not_ask_github(
    client: TestClient, clock: ManualClock, github: InMemoryGitHub
) -> None:
    """Found by a hostile probe: warm runners (minReplicas 20) sat idle beside running jobs'
    reservations, and every sync asked GitHub about the jobs: 94% of an hour's budget for
    300 jobs."""
    cluster = webhook_only_cluster(
        client, clock, registered=25, busy=5, minReplicas=20, maxReplicas=30
    )
    for job in range(1, 6):
        cluster.add(in_place(f"job-{job}", ago(clock, 300)))

    answer = cluster.sync()

    assert github.calls == []
    assert answer["status"]["reservedReplicas"] == 5

    # One runner more idle than minReplicas explains, for a minute: one run asked about.
    cluster.related = [reporting(registered=25, busy=4)]
    cluster.sync()
    clock.advance(60)
    cluster.sync()

    assert github.calls == [("list_workflow_jobs", "example/myrepo")]


def test_one_run_per_sync_is_asked_about_while_jobs_wait_beyond_max_replicas(
    client: TestClient, clock: ManualClock, github: InMemoryGitHub
) -> None:
    """A burst beyond maxReplicas: an idle runner is mostly one a queued job is about to
    take, and settling a reservation would leave the target at maxReplicas anyway. One run
    per sync is still asked about, so that reservations whose jobs are all over (their
    `completed` deliveries lost) are settled in turn (a review found them never asked about,
    holding ten idle runners)."""
    cluster = webhook_only_cluster(client, clock, registered=3, busy=1, maxReplicas=3)
    for job in range(1, 6):
        cluster.add(in_place(f"job-{job}", ago(clock, 600 - job)))

    answer = cluster.sync()

    assert github.calls == [("list_workflow_jobs", "example/myrepo")]  # two idle, one run
    assert answer["status"]["desiredReplicas"] == 3


def test_reservations_beyond_max_replicas_whose_jobs_are_over_are_all_settled(
    client: TestClient, clock: ManualClock, github: InMemoryGitHub
) -> None:
    cluster = webhook_only_cluster(client, clock, registered=3, busy=0, maxReplicas=3)
    for job in range(1, 7):
        cluster.add(reservation(f"job-{job}", ago(clock, 600 - job)))  # three of them waiting
        github.workflow_jobs[("example/myrepo", job)] = [WorkflowJob("completed", ("linux",), job)]

    reserved = []
    for _ in range(8):
        reserved.append(cluster.sync()["status"]["reservedReplicas"])
        clock.advance(60)

    assert reserved[-1] == 0
    assert len(github.calls) == 6


def test_github_is_asked_only_once_runners_have_sat_idle_for_a_minute(
    client: TestClient, clock: ManualClock, github: InMemoryGitHub
) -> None:
    """A runner that registered moments before a queued job takes it is idle too: an
    ephemeral fleet turning over always has a few, and asking about reserved jobs for each of
    them cost more calls than the lost completions they could find."""
    cluster = webhook_only_cluster(client, clock, registered=1, busy=0, idle_for=0)
    cluster.add(in_place("job-1", ago(clock, 300)))
    github.workflow_jobs[("example/myrepo", 1)] = [WorkflowJob("completed", ("linux",), 1)]

    first = cluster.sync()
    clock.advance(30)
    cluster.sync()
    assert github.calls == []
    assert first["status"]["idleBeyondMinSince"] == format_time(ago(clock, 30))

    clock.advance(30)
    settled = cluster.sync()
    assert github.calls == [("list_workflow_jobs", "example/myrepo")]
    assert settled["status"]["reservedReplicas"] == 0

    cluster.related = [reporting(registered=0, busy=0)]  # no runner idle any more
    assert cluster.sync()["status"].get("idleBeyondMinSince") is None


def test_reservations_of_one_run_are_answered_by_one_listing(
    client: TestClient, clock: ManualClock, github: InMemoryGitHub
) -> None:
    cluster = webhook_only_cluster(client, clock, registered=1, busy=0)
    for job in (1, 2, 3):
        obj = in_place(f"job-{job}", ago(clock, 300))
        obj["spec"]["job"]["runID"] = 77
        cluster.add(obj)
    github.workflow_jobs[("example/myrepo", 77)] = [
        WorkflowJob("completed", ("linux",), 1),
        WorkflowJob("in_progress", ("linux",), 2),
        WorkflowJob("completed", ("linux",), 3),
    ]

    answer = cluster.sync()

    assert github.calls == [("list_workflow_jobs", "example/myrepo")]
    assert answer["status"]["reservedReplicas"] == 1
    assert job_check_times(answer)["job-2"] == format_time(clock.now())


def test_an_unreadable_job_check_time_is_asked_about_as_never_asked(
    client: TestClient, clock: ManualClock, github: InMemoryGitHub
) -> None:
    cluster = webhook_only_cluster(client, clock, registered=1, busy=0)
    obj = in_place("job-1", ago(clock, 300))
    obj["spec"]["jobCheckTime"] = "yesterday"
    cluster.add(obj)
    github.workflow_jobs[("example/myrepo", 1)] = [WorkflowJob("completed", ("linux",), 1)]

    answer = cluster.sync()

    assert answer["status"]["reservedReplicas"] == 0


def test_records_from_the_future_do_not_put_off_asking_about_a_lost_completion(
    client: TestClient, clock: ManualClock, github: InMemoryGitHub
) -> None:
    """Found by the hostile-input fuzzer: an `idleBeyondMinSince` or a `jobCheckTime` later
    than now (a hand's edit, a replica's clock) was kept and written back at every sync, and
    the reservation of a lost completion held its idle runner until it expired."""
    cluster = webhook_only_cluster(client, clock, registered=1, busy=0, idle_for=0)
    cluster.hra["status"] = {"idleBeyondMinSince": "2100-01-01T00:00:00Z"}
    obj = in_place("job-1", ago(clock, 600))
    obj["spec"]["jobCheckTime"] = "2100-01-01T00:00:00Z"
    cluster.add(obj)
    github.workflow_jobs[("example/myrepo", 1)] = [WorkflowJob("completed", ("linux",), 1)]

    first = cluster.sync()
    assert first["status"]["idleBeyondMinSince"] == format_time(clock.now())
    assert first["status"]["reservedReplicas"] == 1
    clock.advance(60)
    settled = cluster.sync()

    assert github.calls == [("list_workflow_jobs", "example/myrepo")]
    assert settled["status"]["reservedReplicas"] == 0


@pytest.mark.parametrize("field", ["effectiveTime", "expirationTime", "startTime"])
def test_a_reservation_time_utc_cannot_write_is_kept_and_not_counted(
    client: TestClient, clock: ManualClock, field: str
) -> None:
    """Found by the hostile-input fuzzer: valid RFC 3339 past year 9999 in UTC (the CRD's
    `date-time` format takes it) made every sync of the HRA a 500."""
    cluster = Cluster(client, clock, autoscaler())
    obj = in_place("job-1", clock.now())
    obj["spec"][field] = "9999-12-31T23:00:00-14:00"
    cluster.add(obj, reservation("job-2", clock.now()))

    answer = cluster.sync()  # asserts a 200

    assert answer["status"]["reservedReplicas"] == 1
    assert sorted(c["metadata"]["name"] for c in answer["children"]) == ["job-1", "job-2"]


def test_a_last_scale_out_time_utc_cannot_write_is_a_condition_not_a_500(
    client: TestClient, clock: ManualClock
) -> None:
    hra = autoscaler(
        status={"desiredReplicas": 0, "lastSuccessfulScaleOutTime": "0001-01-01T00:00:00+14:00"}
    )

    answer = Cluster(client, clock, hra).sync()  # asserts a 200

    (condition,) = answer["status"]["conditions"]
    assert (condition["status"], condition["reason"]) == ("False", "RunnerAutoscalingFailure")
    assert "lastSuccessfulScaleOutTime" in condition["message"]


def test_an_unreadable_recorded_reservation_time_is_dropped_not_a_500(
    client: TestClient, clock: ManualClock
) -> None:
    """Found by the hostile-input fuzzer: a status whose newestReservationTime is not a time."""
    cluster = Cluster(client, clock, autoscaler(status={"newestReservationTime": "0"}))
    cluster.add(reservation("job-1", clock.now()))

    answer = cluster.sync()  # asserts a 200

    assert answer["status"]["newestReservationTime"] == format_time(clock.now())


# ------------------------------------------------------------------ a job outliving its reservation


def expiring_now(clock: ManualClock, name: str = "job-1") -> dict[str, Any]:
    """A reservation that waited ten minutes for a runner and started a lifetime ago: it
    expires at this sync."""
    return reservation(name, ago(clock, 2400), started=clock.now() - LIFETIME)


def renew_times(answer: dict[str, Any]) -> dict[str, str | None]:
    return {c["metadata"]["name"]: c["spec"].get("renewTime") for c in answer["children"]}


def test_a_reservation_lasts_while_a_busy_runner_holds_its_job(
    client: TestClient, clock: ManualClock, github: InMemoryGitHub
) -> None:
    """Found by a failure scenario (ten 20-minute jobs, ARC's default 10-minute reservations,
    maxReplicas 5): reservations that expired while their jobs ran left busy runners that
    counted against the size the newer reservations asked for, those expired in turn with
    their jobs still queued, and four jobs never got a runner."""
    cluster = webhook_only_cluster(client, clock, registered=1, busy=1, idle_for=0)
    cluster.add(expiring_now(clock))

    answer = cluster.sync()

    assert github.calls == []
    assert renew_times(answer) == {"job-1": format_time(clock.now())}
    assert answer["status"]["reservedReplicas"] == 1
    assert answer["status"]["desiredReplicas"] == 1
    assert answer["resyncAfterSeconds"] <= LIFETIME.total_seconds()


def test_a_reservation_no_busy_runner_accounts_for_expires_as_in_arc(
    client: TestClient, clock: ManualClock
) -> None:
    """One busy runner, and a reservation still counting that accounts for it: the one ending
    now has no job running, as far as the counts tell."""
    cluster = webhook_only_cluster(client, clock, registered=2, busy=1, idle_for=0)
    cluster.add(expiring_now(clock), in_place("job-2", ago(clock, 60)))

    answer = cluster.sync()

    assert [c["metadata"]["name"] for c in answer["children"]] == ["job-2"]
    assert answer["status"]["reservedReplicas"] == 1


def test_as_many_reservations_are_renewed_as_busy_runners_are_unaccounted_for(
    client: TestClient, clock: ManualClock, github: InMemoryGitHub
) -> None:
    """Found in review: of 20 reservations of running jobs expiring in the same sync, the 15
    the first fix could not ask GitHub about expired. The counts decide now, with no call."""
    cluster = webhook_only_cluster(client, clock, registered=20, busy=20, idle_for=0)
    for index in range(1, 21):
        cluster.add(expiring_now(clock, f"job-{index}"))
    cluster.add(in_place("job-21", ago(clock, 60)))

    answer = cluster.sync()

    assert github.calls == []
    renewed = [name for name, when in renew_times(answer).items() if when is not None]
    assert len(renewed) == 19  # job-21 accounts for one busy runner
    assert answer["status"]["reservedReplicas"] == 20


def test_a_renewed_reservation_is_no_new_capacity_for_the_recreation_delay(
    client: TestClient, clock: ManualClock
) -> None:
    """Found in review: a new lifetime recorded as a start moved `newestReservationTime`, and
    finished ephemeral runners were replaced at once with no job waiting (ARC #1180)."""
    cluster = webhook_only_cluster(client, clock, registered=1, busy=1, idle_for=0)
    cluster.add(expiring_now(clock))
    started = cluster.reservations["job-1"]["spec"]["startTime"]

    first = cluster.sync()
    clock.advance(60)
    second = cluster.sync()  # reads the renewed reservation

    assert renew_times(first) == {"job-1": format_time(clock.now() - timedelta(seconds=60))}
    assert first["status"]["newestReservationTime"] == started
    assert second["status"]["newestReservationTime"] == started


def test_a_warm_runner_busy_with_a_long_job_renews_no_reservation(
    client: TestClient, clock: ManualClock
) -> None:
    """Found in review: warm runners (`minReplicas`) busy with long jobs kept as many
    reservations, and runners, beyond them for as long as the jobs ran."""
    cluster = webhook_only_cluster(client, clock, registered=1, busy=1, idle_for=0, minReplicas=1)
    cluster.add(expiring_now(clock))

    answer = cluster.sync()

    assert answer["children"] == []
    assert answer["status"]["desiredReplicas"] == 1


def test_thousands_of_trigger_notes_make_a_message_etcd_can_store(
    client: TestClient, clock: ManualClock
) -> None:
    """Found in review: 20,000 triggers with `duration: x` made a 2.6 MB condition message."""
    triggers = [{"githubEvent": {"workflowJob": {}}, "duration": "x"}] * 2000
    cluster = webhook_only_cluster(client, clock, registered=0, busy=0, scaleUpTriggers=triggers)

    answer = cluster.sync()

    assert len(condition(answer)["message"]) < 10_000


def test_a_reservation_whose_job_no_runner_took_is_renewed_whatever_the_counts(
    client: TestClient, clock: ManualClock
) -> None:
    """Found by a failure scenario: a reservation started for a runner that was turning over
    ran out with its job still queued, and with webhook-only scaling the job never ran."""
    cluster = webhook_only_cluster(client, clock, registered=0, busy=0, idle_for=0)
    queued = reservation("job-1", ago(clock, 2400), started=clock.now() - LIFETIME)
    queued["spec"].pop("jobStartTime")
    cluster.add(queued)

    answer = cluster.sync()

    assert renew_times(answer) == {"job-1": format_time(clock.now())}
    assert answer["status"]["desiredReplicas"] == 1


def test_a_reservation_without_a_job_is_never_renewed(
    client: TestClient, clock: ManualClock
) -> None:
    """Found in review: one written by hand, with no `spec.job`, could never be asked about, and
    was renewed for good."""
    cluster = webhook_only_cluster(client, clock, registered=0, busy=0, idle_for=0)
    jobless = reservation("job-1", ago(clock, 2400), started=clock.now() - LIFETIME)
    del jobless["spec"]["job"]
    jobless["spec"].pop("jobStartTime")
    cluster.add(jobless)

    assert cluster.sync()["children"] == []
