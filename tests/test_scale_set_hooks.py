"""Scale-set mode in the hooks, over HTTP with Metacontroller-shaped requests: the
RunnerDeployment keeps its scale set and finalizes it, the HorizontalRunnerAutoscaler sizes by
the listener's count, the RunnerReplicaSet creates members only for a newer count, and a
member Runner registers with a JIT config from the scale-set API."""

from __future__ import annotations

import base64
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from starlette.testclient import TestClient

from hooks.app import create_app
from hooks.clock import ManualClock, format_time
from hooks.github.port import GitHubError, GitHubRunner, JitConfig, RateLimitedError, Scope
from hooks.github.scaleset.service import ScaleSetRecord
from hooks.scale_set_mode import (
    ASSIGNED_JOBS_ANNOTATION,
    ASSIGNED_JOBS_TIME_ANNOTATION,
    COUNT_VERSION_ANNOTATION,
    JOB_STARTED_ANNOTATION,
    SCALE_SET_ANNOTATION,
    SCALE_SET_ID_ANNOTATION,
    assigned_jobs,
    declared_scale_set,
    member_of_scale_set,
)
from hooks.scale_target import MAX_NEW_RUNNERS_PER_SYNC
from tests.hook_app import hook_client, hook_settings
from tests.in_memory_github import InMemoryGitHub
from tests.test_runnerset_hooks import RunnerSetWorld, runner_set, runner_terminated

API = "actions.summerwind.dev/v1alpha1"
ORG = Scope(organization="acme")
ORG_SCOPE = ORG


@dataclass
class FakeScaleSets:
    """A ScaleSetPort that records what it is asked and fails when told to."""

    ensured: list[tuple[Scope, str, str | None]] = field(default_factory=list)
    deleted: list[int] = field(default_factory=list)
    deleted_in: list[Scope] = field(default_factory=list)
    generated: list[tuple[int, str]] = field(default_factory=list)
    error: GitHubError | None = None

    def ensure_scale_set(
        self,
        scope: Scope,
        name: str,
        runner_group: str | None,
        known_id: int | None = None,
    ) -> ScaleSetRecord:
        if self.error is not None:
            raise self.error
        self.ensured.append((scope, name, runner_group))
        return ScaleSetRecord(42, name, 1, runner_group or "Default")

    def delete_scale_set(self, scope: Scope, scale_set_id: int) -> None:
        if self.error is not None:
            raise self.error
        self.deleted.append(scale_set_id)
        self.deleted_in.append(scope)

    def generate_jit_config(
        self, scope: Scope, scale_set_id: int, name: str, work_folder: str
    ) -> JitConfig:
        self.generated.append((scale_set_id, name))
        runner = GitHubRunner(id=900 + len(self.generated), name=name, status="offline", busy=False)
        return JitConfig(runner=runner, encoded_jit_config="jit-from-the-scale-set")


@pytest.fixture
def scale_sets() -> FakeScaleSets:
    return FakeScaleSets()


@pytest.fixture
def hooks(clock: ManualClock, scale_sets: FakeScaleSets) -> TestClient:
    app = create_app(
        hook_settings(), github=InMemoryGitHub(clock), clock=clock, scale_sets=scale_sets
    )
    return hook_client(app)


def deployment(annotations: dict[str, str] | None = None, **status: Any) -> dict[str, Any]:
    return {
        "apiVersion": API,
        "kind": "RunnerDeployment",
        "metadata": {
            "name": "web",
            "namespace": "default",
            "uid": "rd-1",
            "generation": 1,
            "annotations": {SCALE_SET_ANNOTATION: "arc-web"}
            if annotations is None
            else annotations,
        },
        "spec": {"replicas": 2, "template": {"spec": {"organization": "acme", "labels": ["gpu"]}}},
        "status": status,
    }


def call(
    client: TestClient,
    path: str,
    parent: dict[str, Any],
    children: dict[str, list[dict[str, Any]]] | None = None,
    related: dict[str, list[dict[str, Any]]] | None = None,
) -> dict[str, Any]:
    def group(objects: dict[str, list[dict[str, Any]]] | None) -> dict[str, Any]:
        return {
            kind: {o["metadata"]["name"]: o for o in items}
            for kind, items in (objects or {}).items()
        }

    request = {
        "controller": {},
        "parent": parent,
        "children": group(children),
        "related": group(related),
        "finalizing": path.startswith("/finalize"),
    }
    response = client.post(path, json=request)
    assert response.status_code == 200, response.text
    answer: dict[str, Any] = response.json()
    return answer


# ------------------------------------------------------------------ the annotations


def test_declarations_and_counts_are_read_strictly() -> None:
    assert declared_scale_set({}) is None
    declared = declared_scale_set({SCALE_SET_ANNOTATION: " arc ", "x": "y"})
    assert declared is not None and (declared.name, declared.runner_group) == ("arc", None)
    for bad in ("", " ", "has space", "-leading", "a" * 101, "ünïcode"):
        with pytest.raises(ValueError, match="scale set name"):
            declared_scale_set({SCALE_SET_ANNOTATION: bad})
    assert member_of_scale_set({SCALE_SET_ID_ANNOTATION: "7"}) == 7
    for bad in ("0", "-1", "x", "²", "1e3", ""):
        assert member_of_scale_set({SCALE_SET_ID_ANNOTATION: bad}) is None
    assert assigned_jobs({ASSIGNED_JOBS_ANNOTATION: "0"}) == 0


@given(st.dictionaries(st.text(max_size=40), st.text(max_size=40)))
def test_any_annotations_read_as_a_value_or_none_or_a_clear_error(
    annotations: dict[str, str],
) -> None:
    try:
        declared_scale_set(annotations)
    except ValueError as error:
        assert SCALE_SET_ANNOTATION in str(error)
    member = member_of_scale_set(annotations)
    assert member is None or member > 0
    count = assigned_jobs(annotations)
    assert count is None or count >= 0


# ------------------------------------------------------------------ RunnerDeployment


def test_a_deployment_keeps_its_scale_set_and_hands_its_id_to_its_runners(
    hooks: TestClient, scale_sets: FakeScaleSets
) -> None:
    answer = call(hooks, "/sync/runnerdeployment", deployment())
    assert scale_sets.ensured == [(ORG, "arc-web", None)]
    assert answer["status"]["scaleSet"] == {"id": 42, "name": "arc-web", "runnerGroup": "Default"}
    (replica_set,) = answer["children"]
    template_annotations = replica_set["spec"]["template"]["metadata"]["annotations"]
    assert template_annotations[SCALE_SET_ID_ANNOTATION] == "42"
    ready = {c["type"]: c["status"] for c in answer["status"]["conditions"]}
    assert ready["ScaleSetReady"] == "True"


def test_a_scale_set_that_cannot_be_kept_keeps_the_sets_as_they_are(
    hooks: TestClient, scale_sets: FakeScaleSets
) -> None:
    existing = call(hooks, "/sync/runnerdeployment", deployment())["children"][0]
    scale_sets.error = RateLimitedError("rate limited", retry_after=120)
    answer = call(
        hooks,
        "/sync/runnerdeployment",
        deployment(),
        children={f"RunnerReplicaSet.{API}": [existing]},
    )
    assert [c["metadata"]["name"] for c in answer["children"]] == [existing["metadata"]["name"]]
    assert answer["resyncAfterSeconds"] == 120
    condition = next(c for c in answer["status"]["conditions"] if c["type"] == "ScaleSetReady")
    assert (condition["status"], condition["reason"]) == ("False", "GitHubRateLimited")


def test_an_unusable_scale_set_name_is_a_condition_and_nothing_is_deleted(
    hooks: TestClient, scale_sets: FakeScaleSets
) -> None:
    existing = call(hooks, "/sync/runnerdeployment", deployment())["children"][0]
    answer = call(
        hooks,
        "/sync/runnerdeployment",
        deployment({SCALE_SET_ANNOTATION: "not a name"}),
        children={f"RunnerReplicaSet.{API}": [existing]},
    )
    assert [c["metadata"]["name"] for c in answer["children"]] == [existing["metadata"]["name"]]
    messages = " ".join(c.get("message", "") for c in answer["status"]["conditions"])
    assert SCALE_SET_ANNOTATION in messages


def test_finalize_waits_for_the_runners_then_deletes_the_scale_set(
    hooks: TestClient, scale_sets: FakeScaleSets
) -> None:
    parent = deployment(scaleSet={"id": 42, "name": "arc-web"}, replicas=2)
    replica_set = call(hooks, "/sync/runnerdeployment", parent)["children"][0]
    busy = {**replica_set, "status": {"replicas": 2}}
    answer = call(
        hooks, "/finalize/runnerdeployment", parent, children={f"RunnerReplicaSet.{API}": [busy]}
    )
    assert not answer.get("finalized") and scale_sets.deleted == []
    assert answer["children"][0]["spec"]["replicas"] == 0
    assert answer["status"]["scaleSet"]["id"] == 42  # the status is given back, not wiped
    emptied = {**answer["children"][0], "status": {"replicas": 0}}
    answer = call(
        hooks, "/finalize/runnerdeployment", parent, children={f"RunnerReplicaSet.{API}": [emptied]}
    )
    assert answer["finalized"] is True and scale_sets.deleted == [42]


def _wrong_type_replicas(parent: dict[str, Any]) -> None:
    parent["spec"]["replicas"] = "two"


def _wrong_type_labels(parent: dict[str, Any]) -> None:
    parent["spec"]["template"]["spec"]["labels"] = "gpu"


def _unreadable_annotation(parent: dict[str, Any]) -> None:
    parent["metadata"]["annotations"][SCALE_SET_ANNOTATION] = "bad name!"


def _scope_gone_from_the_spec(parent: dict[str, Any]) -> None:
    parent["spec"] = {"replicas": "two"}  # the scope is read from the set's template


@pytest.mark.parametrize(
    "spoil",
    [_wrong_type_replicas, _wrong_type_labels, _unreadable_annotation, _scope_gone_from_the_spec],
)
def test_a_deployment_deleted_unreadable_still_deletes_the_scale_set_it_recorded(
    hooks: TestClient, scale_sets: FakeScaleSets, spoil: Callable[[dict[str, Any]], None]
) -> None:
    """Found by the hostile-input fuzzer: a deployment whose spec or annotation no longer
    read was finalized at once, and its scale set stayed on GitHub."""
    parent = deployment(scaleSet={"id": 42, "name": "arc-web"}, replicas=0)
    replica_set = call(hooks, "/sync/runnerdeployment", parent)["children"][0]
    emptied = {**replica_set, "spec": {**replica_set["spec"], "replicas": 0}, "status": {}}
    spoil(parent)

    answer = call(
        hooks, "/finalize/runnerdeployment", parent, children={f"RunnerReplicaSet.{API}": [emptied]}
    )

    assert answer["finalized"] is True and scale_sets.deleted == [42]
    assert scale_sets.deleted_in == [ORG]


def test_a_deployment_without_a_scale_set_is_finalized_at_once(
    hooks: TestClient, scale_sets: FakeScaleSets
) -> None:
    answer = call(hooks, "/finalize/runnerdeployment", deployment({}))
    assert answer["finalized"] is True and scale_sets.deleted == []


def test_a_failed_deletion_is_retried_and_the_finalizer_stays(
    hooks: TestClient, scale_sets: FakeScaleSets
) -> None:
    scale_sets.error = GitHubError("503 from the service")
    answer = call(hooks, "/finalize/runnerdeployment", deployment(scaleSet={"id": 42, "name": "a"}))
    assert not answer.get("finalized") and answer["resyncAfterSeconds"] > 0


def test_a_deployment_leaving_scale_set_mode_deletes_its_scale_set_once_its_runners_are_gone(
    hooks: TestClient, scale_sets: FakeScaleSets
) -> None:
    in_mode = call(hooks, "/sync/runnerdeployment", deployment())
    members = {**in_mode["children"][0], "status": {"replicas": 2}}
    left = deployment({}, **in_mode["status"])

    retiring = call(
        hooks, "/sync/runnerdeployment", left, children={f"RunnerReplicaSet.{API}": [members]}
    )
    assert scale_sets.deleted == []  # its runners still run their jobs in it
    assert retiring["status"]["scaleSet"]["id"] == 42  # a deletion meanwhile deletes it too
    ready = next(c for c in retiring["status"]["conditions"] if c["type"] == "ScaleSetReady")
    assert (ready["status"], ready["reason"]) == ("False", "Retiring")
    (plain,) = [
        c for c in retiring["children"] if c["metadata"]["name"] != members["metadata"]["name"]
    ]
    assert SCALE_SET_ID_ANNOTATION not in plain["spec"]["template"]["metadata"].get(
        "annotations", {}
    )

    scale_sets.error = GitHubError("503 from the service")
    failed = call(
        hooks, "/sync/runnerdeployment", left, children={f"RunnerReplicaSet.{API}": [plain]}
    )
    assert failed["status"]["scaleSet"]["id"] == 42 and failed["resyncAfterSeconds"] > 0
    scale_sets.error = None
    done = call(
        hooks, "/sync/runnerdeployment", left, children={f"RunnerReplicaSet.{API}": [plain]}
    )
    assert scale_sets.deleted == [42]
    assert "scaleSet" not in done["status"]


# ------------------------------------------------------------------ HorizontalRunnerAutoscaler


def autoscaler(annotations: dict[str, str], status: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "apiVersion": API,
        "kind": "HorizontalRunnerAutoscaler",
        "metadata": {"name": "web", "namespace": "default", "annotations": annotations},
        "spec": {
            "scaleTargetRef": {"kind": "RunnerDeployment", "name": "web"},
            "minReplicas": 1,
            "maxReplicas": 5,
            "scaleDownDelaySecondsAfterScaleOut": 600,
        },
        "status": status or {},
    }


def size(
    hooks: TestClient, annotations: dict[str, str], status: dict[str, Any] | None = None
) -> dict[str, Any]:
    answer = call(
        hooks,
        "/sync/horizontalrunnerautoscaler",
        autoscaler(annotations, status),
        related={f"RunnerDeployment.{API}": [deployment()]},
    )
    result: dict[str, Any] = answer["status"]
    return result


def test_the_autoscaler_asks_for_min_plus_the_assigned_jobs_at_most_max(
    hooks: TestClient,
) -> None:
    counted = "2026-01-01T00:00:10.000001Z"
    status = size(hooks, {ASSIGNED_JOBS_ANNOTATION: "3", ASSIGNED_JOBS_TIME_ANNOTATION: counted})
    assert (status["desiredReplicas"], status["assignedJobs"]) == (4, 3)
    assert status["assignedJobsTime"] == counted
    assert size(hooks, {ASSIGNED_JOBS_ANNOTATION: "40"})["desiredReplicas"] == 5
    assert size(hooks, {})["desiredReplicas"] == 1  # no count yet: min


def test_the_count_goes_down_at_once_with_no_scale_down_delay(hooks: TestClient) -> None:
    before = size(hooks, {ASSIGNED_JOBS_ANNOTATION: "4"})
    after = size(hooks, {ASSIGNED_JOBS_ANNOTATION: "0"}, before)
    assert (before["desiredReplicas"], after["desiredReplicas"]) == (5, 1)


# ------------------------------------------------------------------ RunnerReplicaSet


def member_set(effective: str, replicas: int) -> dict[str, Any]:
    return {
        "apiVersion": API,
        "kind": "RunnerReplicaSet",
        "metadata": {"name": "web-1", "namespace": "default", "uid": "rrs-1", "generation": 1},
        "spec": {
            "replicas": replicas,
            "effectiveTime": effective,
            "template": {
                "metadata": {"annotations": {SCALE_SET_ID_ANNOTATION: "42"}},
                "spec": {"organization": "acme", "ephemeral": True},
            },
        },
        "status": {},
    }


def member(name: str, version: str, *, busy: bool = False, started: bool = False) -> dict[str, Any]:
    annotations = {
        SCALE_SET_ID_ANNOTATION: "42",
        COUNT_VERSION_ANNOTATION: version,
        "actions-runner/sync-time": "2026-01-01T00:00:00Z",
    }
    if started:
        annotations[JOB_STARTED_ANNOTATION] = "7"
    return {
        "apiVersion": API,
        "kind": "Runner",
        "metadata": {
            "name": name,
            "namespace": "default",
            "uid": f"uid-{name}",
            "resourceVersion": "1",
            "creationTimestamp": "2026-01-01T00:00:00Z",
            "annotations": annotations,
        },
        "spec": {"organization": "acme", "ephemeral": True},
        "status": {"phase": "Running", "online": True, "busy": busy},
    }


def sync_set(
    hooks: TestClient, replica_set: dict[str, Any], runners: list[dict[str, Any]]
) -> dict[str, Any]:
    return call(hooks, "/sync/runnerreplicaset", replica_set, children={f"Runner.{API}": runners})


def test_members_are_created_for_a_newer_count_only(hooks: TestClient) -> None:
    first = "2026-01-01T00:00:00.000001Z"
    answer = sync_set(hooks, member_set(first, 2), [])
    created = answer["children"]
    assert len(created) == 2
    assert {c["metadata"]["annotations"][COUNT_VERSION_ANNOTATION] for c in created} == {first}
    # One member finished its job and left; the count it was created for still stands: the
    # set waits for the listener's next count instead of creating a useless runner.
    one_left = [member("web-1-a", first)]
    answer = sync_set(hooks, member_set(first, 2), one_left)
    assert len(answer["children"]) == 1
    # A newer count that still asks for two: now a member is created.
    newer = "2026-01-01T00:00:05.000002Z"
    answer = sync_set(hooks, member_set(newer, 2), one_left)
    assert len(answer["children"]) == 2


def test_a_member_that_started_a_job_is_kept_on_scale_down(hooks: TestClient) -> None:
    version = "2026-01-01T00:00:00.000001Z"
    runners = [member("web-1-a", version), member("web-1-b", version, started=True)]
    answer = sync_set(hooks, member_set(version, 1), runners)
    assert [c["metadata"]["name"] for c in answer["children"]] == ["web-1-b"]


# ------------------------------------------------------------------ Runner


def test_a_member_registers_with_a_jit_config_from_its_scale_set(
    hooks: TestClient, scale_sets: FakeScaleSets
) -> None:
    runner = {
        "apiVersion": API,
        "kind": "Runner",
        "metadata": {
            "name": "web-1-a",
            "namespace": "default",
            "uid": "r-1",
            "annotations": {SCALE_SET_ID_ANNOTATION: "42"},
        },
        "spec": {"organization": "acme", "ephemeral": True},
    }
    answer = call(hooks, "/sync/runner", runner)
    assert scale_sets.generated == [(42, "web-1-a")]
    secret = next(c for c in answer["children"] if c["kind"] == "Secret")
    decoded = {k: base64.b64decode(v).decode() for k, v in secret["data"].items()}
    assert "jit-from-the-scale-set" in decoded.values()
    pod = next(c for c in answer["children"] if c["kind"] == "Pod")
    env = {e["name"] for c in pod["spec"]["containers"] for e in c.get("env", [])}
    assert "ACTIONS_RUNNER_INPUT_JITCONFIG" in env
    assert "jit-from-the-scale-set" not in str(answer["status"])


def test_a_count_no_listener_has_renewed_for_3_minutes_counts_for_nothing(
    hooks: TestClient, clock: ManualClock
) -> None:
    counted = "2026-01-01T00:00:00.000001Z"
    annotations = {ASSIGNED_JOBS_ANNOTATION: "3", ASSIGNED_JOBS_TIME_ANNOTATION: counted}
    assert size(hooks, annotations)["desiredReplicas"] == 4
    clock.advance(179)
    assert size(hooks, annotations)["desiredReplicas"] == 4
    clock.advance(2)
    assert size(hooks, annotations)["desiredReplicas"] == 1  # min: the listener is gone


# ------------------------------------------------------------------ RunnerSet


def scale_set_runner_set(clock: ManualClock, scale_sets: FakeScaleSets) -> RunnerSetWorld:
    """A RunnerSet declaring the scale set `arc-builds`, no member yet."""
    github = InMemoryGitHub(clock)
    app = create_app(hook_settings(), github=github, clock=clock, scale_sets=scale_sets)
    parent = runner_set(replicas=0)
    parent["metadata"]["annotations"] = {SCALE_SET_ANNOTATION: "arc-builds"}
    return RunnerSetWorld(hook_client(app), github, clock, parent)


def test_a_runner_set_keeps_its_scale_set_registers_members_and_deletes_it_last(
    clock: ManualClock, scale_sets: FakeScaleSets
) -> None:
    world = scale_set_runner_set(clock, scale_sets)
    github = world.github
    world.scale(2)
    answer = world.sync()
    assert scale_sets.ensured == [(ORG_SCOPE, "arc-builds", None)]
    assert [scale_set_id for scale_set_id, _ in scale_sets.generated] == [42, 42]
    assert github.count("generate_jit_config") == github.count("registration_token") == 0
    assert answer["status"]["scaleSet"]["id"] == 42
    assert "countTime" not in answer["status"]  # no listener count: none acted on
    answer = world.finalize()
    assert not answer.get("finalized") and scale_sets.deleted == []  # members still there
    for _ in range(8):
        answer = world.finalize()
        if answer.get("finalized"):
            break
    assert answer["finalized"] is True and scale_sets.deleted == [42]
    assert world.statefulsets() == {}


# ------------------------------------------------------------------ counts made in batches
# Found in review: a member that finished its job between two batches of one count was
# replaced at once in a RunnerSet, a runner more than the count asked for; it waits for the
# listener's next count, as any finished member does.


def test_a_runner_set_member_finished_between_batches_waits_for_the_next_count(
    clock: ManualClock, scale_sets: FakeScaleSets
) -> None:
    world = scale_set_runner_set(clock, scale_sets)
    world.change_spec(effectiveTime=format_time(clock.now()))  # the listener counted 40 jobs
    world.scale(40)
    clock.advance(1)
    world.sync()
    assert len(scale_sets.generated) == 16
    assert world.parent["status"]["scaleUpRemaining"] == 24
    first = sorted(world.statefulsets())[0]
    world.start(first, register=False)
    clock.advance(1)
    world.set_runner(first, runner_terminated(0, format_time(clock.now())))
    for _ in range(6):
        world.sync()
        clock.advance(1)

    assert len(scale_sets.generated) == 40
    assert len(world.statefulsets()) == 39
    assert "scaleUpRemaining" not in world.parent["status"]


def test_a_replica_set_member_finished_between_batches_waits_for_the_next_count(
    clock: ManualClock, scale_sets: FakeScaleSets
) -> None:
    app = create_app(
        hook_settings(), github=InMemoryGitHub(clock), clock=clock, scale_sets=scale_sets
    )
    client = hook_client(app)
    counted = "2026-01-01T00:00:00.000001Z"
    parent = member_set(counted, MAX_NEW_RUNNERS_PER_SYNC + 10)
    answer = call(client, "/sync/runnerreplicaset", parent, children={})
    assert len(answer["children"]) == MAX_NEW_RUNNERS_PER_SYNC
    assert answer["status"]["scaleUpRemaining"] == 10
    runners = [member(c["metadata"]["name"], counted) for c in answer["children"]]
    runners[0]["status"]["phase"] = "Completed"
    parent["status"] = answer["status"]

    again = call(client, "/sync/runnerreplicaset", parent, children={f"Runner.{API}": runners})

    assert len(again["children"]) == MAX_NEW_RUNNERS_PER_SYNC - 1 + 10
