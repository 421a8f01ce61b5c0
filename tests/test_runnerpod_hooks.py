"""The runner-pod decorator over HTTP, with Metacontroller-shaped v2 requests: the runner id
recorded while the pod lives, and no registration left on GitHub after a runner pod goes,
whoever deleted it."""

from __future__ import annotations

import asyncio
import copy
import json
import logging
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pytest
import yaml
from starlette.applications import Starlette
from starlette.testclient import TestClient

from arc_sim.kube_port import StoreKube
from arc_sim.store import ObjectStore
from hooks.app import create_app
from hooks.clock import ManualClock, format_time
from hooks.github.cached import CachedGitHub
from hooks.github.port import GitHubError, RemoveOutcome, RemoveResult, Scope
from hooks.kube.port import PODS
from hooks.lifecycle.graceful_stop import GRACEFUL_STOP_ANNOTATION
from hooks.resources.runner import API_VERSION
from hooks.runner_seal import ID_SEAL_ANNOTATION, SEAL_ANNOTATION, runner_seal, seal_key
from hooks.runnerpod.facts import read_runner_pod
from hooks.runnerpod.vouch import pod_seal
from hooks.settings import Settings
from tests.hook_app import hook_client, hook_settings
from tests.hook_driver import running_status
from tests.in_memory_github import InMemoryGitHub, rate_limited

ORG = Scope(organization="acme")
NAMESPACE = "default"
GITHUB_TOKEN = "ghp_" + "t0k3n" * 8
RUNNER_TOKEN = "AABBCCRUNNERTOKEN0001"
ID = "actions-runner/id"
START = "actions-runner/unregistration-start-timestamp"
COMPLETE = "actions-runner/unregistration-complete-timestamp"
DECORATOR = yaml.safe_load(
    (
        Path(__file__).resolve().parent.parent / "metacontroller" / "runnerpod-decorator.yaml"
    ).read_text(encoding="utf-8")
)
RUNNER_GROUP = f"Runner.{API_VERSION}"
STATEFULSET_GROUP = "StatefulSet.apps/v1"


@pytest.fixture
def settings() -> Settings:
    """This file's own GitHub token, which no log line or answer may show."""
    return hook_settings({"GITHUB_TOKEN": GITHUB_TOKEN})


@pytest.fixture
def app(settings: Settings, github: InMemoryGitHub, clock: ManualClock) -> Starlette:
    """As the simulated world runs it: GitHub calls inline, forced deletes to an API server."""
    return create_app(
        settings, github=github, clock=clock, github_blocks=False, kube=cluster(clock)
    )


def cluster(clock: ManualClock, *objects: dict[str, Any]) -> StoreKube:
    """The API server the hooks' forced deletes go to."""
    store = ObjectStore(clock)
    for obj in objects:
        store.create(copy.deepcopy(obj))
    return StoreKube(store)


# ------------------------------------------------------------------ pods and calls


def runner_pod(
    name: str = "runner-a",
    *,
    ephemeral: bool = True,
    owner: dict[str, Any] | None = None,
    env: list[dict[str, Any]] | None = None,
    sealed: bool = True,
) -> dict[str, Any]:
    """A runner pod as the Runner hook builds it (ARC's env), not yet scheduled; `sealed`, as
    the decorator seals a pod its owner vouched for."""
    runner_env = env or [
        {"name": "RUNNER_ORG", "value": "acme"},
        {"name": "RUNNER_REPO", "value": ""},
        {"name": "RUNNER_ENTERPRISE", "value": ""},
        {"name": "RUNNER_LABELS", "value": "linux"},
        {"name": "RUNNER_EPHEMERAL", "value": "true" if ephemeral else "false"},
        {"name": "RUNNER_NAME", "value": name},
        {
            "name": "RUNNER_TOKEN",
            "valueFrom": {"secretKeyRef": {"name": f"{name}-registration", "key": "token"}},
        },
    ]
    metadata: dict[str, Any] = {
        "name": name,
        "namespace": NAMESPACE,
        "uid": f"pod-uid-{name}",
        "labels": {"actions-runner": ""},
        "annotations": {},
    }
    if owner is not None:
        metadata["ownerReferences"] = [{**owner, "controller": True, "blockOwnerDeletion": True}]
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": metadata,
        "spec": {
            "restartPolicy": "Never",
            "terminationGracePeriodSeconds": 30,
            "containers": [
                {"name": "runner", "image": "summerwind/actions-runner:latest", "env": runner_env},
                {"name": "docker", "image": "docker:dind"},
            ],
        },
        "status": {"phase": "Pending"},
    }
    if sealed and read_runner_pod(pod).scope is not None:
        return with_seal(pod)
    return pod


def owner_ref(kind: str, name: str, uid: str) -> dict[str, Any]:
    api_version = API_VERSION if kind == "Runner" else "apps/v1"
    return {"apiVersion": api_version, "kind": kind, "name": name, "uid": uid}


@dataclass
class PodDriver:
    """Calls the decorator's hooks for one pod as Metacontroller does, and applies the
    annotations it answers (a None value deletes the key)."""

    client: TestClient
    clock: ManualClock
    pod: dict[str, Any]
    related: dict[str, dict[str, Any]] = field(default_factory=dict)
    grace_seconds: int = 30  # the deletion's grace period
    answers: list[dict[str, Any]] = field(default_factory=list)

    def request(self, finalizing: bool) -> dict[str, Any]:
        return {
            "controller": DECORATOR,
            "object": copy.deepcopy(self.pod),
            "attachments": {},
            "related": copy.deepcopy(self.related),
            "finalizing": finalizing,
        }

    def call(self, path: str, finalizing: bool) -> dict[str, Any]:
        response = self.client.post(path, json=self.request(finalizing))
        assert response.status_code == 200, response.text
        answer: dict[str, Any] = response.json()
        assert answer["attachments"] == [] and answer["status"] is None
        annotations = self.pod["metadata"].setdefault("annotations", {})
        for key, value in answer["annotations"].items():
            if value is None:
                annotations.pop(key, None)
            else:
                annotations[key] = value
        self.answers.append(answer)
        return answer

    def sync(self) -> dict[str, Any]:
        return self.call("/sync/runnerpod", finalizing=False)

    def finalize(self) -> dict[str, Any]:
        metadata = self.pod["metadata"]
        if "deletionTimestamp" not in metadata:
            metadata["deletionTimestamp"] = format_time(self.clock.now())
            metadata["deletionGracePeriodSeconds"] = self.grace_seconds
        return self.call("/finalize/runnerpod", finalizing=True)

    # --- what the kubelet and the node controller report

    def start(self) -> None:
        self.pod["status"] = running_status(format_time(self.clock.now()))

    def runner_exits(self, code: int) -> None:
        self.pod["status"] = running_status(format_time(self.clock.now()), exit_code=code)

    def node_stops_reporting(self) -> None:
        for condition in self.pod["status"]["conditions"]:
            if condition["type"] == "Ready":
                condition["status"] = "Unknown"

    @property
    def annotations(self) -> dict[str, str]:
        annotations: dict[str, str] = self.pod["metadata"].setdefault("annotations", {})
        return annotations

    def stop_state(self) -> dict[str, Any]:
        state: dict[str, Any] = json.loads(self.annotations[GRACEFUL_STOP_ANNOTATION])
        return state


def driver(client: TestClient, clock: ManualClock, pod: dict[str, Any] | None = None) -> PodDriver:
    return PodDriver(client, clock, pod or runner_pod())


def registered_driver(
    client: TestClient,
    clock: ManualClock,
    github: InMemoryGitHub,
    *,
    ephemeral: bool = True,
    busy: bool = False,
) -> PodDriver:
    """A running pod whose runner registered, with its id recorded by the sync hook."""
    pod = driver(client, clock, runner_pod(ephemeral=ephemeral))
    pod.start()
    github.register(ORG, "runner-a", busy=busy)
    pod.sync()
    assert ID in pod.annotations
    github.calls.clear()
    return pod


# ---------------------------------------------------------------------------- sync


def test_sync_records_the_runner_id_once_github_lists_it(
    client: TestClient, clock: ManualClock, github: InMemoryGitHub
) -> None:
    pod = driver(client, clock)
    assert pod.sync() == {"labels": {}, "annotations": {}, "status": None, "attachments": []}
    assert github.calls == []  # the runner does not run yet: nothing to look up
    pod.start()

    waiting = pod.sync()
    runner_id = github.register(ORG, "runner-a")
    clock.advance(60)
    recorded = pod.sync()
    later = pod.sync()

    assert waiting["annotations"] == {} and waiting["resyncAfterSeconds"] == 60
    assert recorded["annotations"].keys() == {ID, ID_SEAL_ANNOTATION}  # the id, sealed
    assert recorded["annotations"][ID] == str(runner_id)
    assert "resyncAfterSeconds" not in recorded
    assert later["annotations"] == {} and "resyncAfterSeconds" not in later
    assert github.count("list_runners") == 2
    assert github.count("remove_runner") == 0


def test_sync_reads_one_cached_list_per_scope_however_many_pods(
    settings: Settings, github: InMemoryGitHub, clock: ManualClock
) -> None:
    cached = CachedGitHub(github, settings, clock)
    app = create_app(settings, github=cached, clock=clock, github_blocks=False, kube=cluster(clock))
    with hook_client(app) as client:
        pods = [driver(client, clock, runner_pod(f"runner-{i}")) for i in range(20)]
        for pod in pods:
            pod.start()
            github.register(ORG, pod.pod["metadata"]["name"])
        for pod in pods:
            pod.sync()

    assert all(ID in pod.annotations for pod in pods)
    assert github.calls == [("list_runners", "/orgs/acme")]


def test_sync_stops_polling_once_the_registration_timeout_is_over(
    client: TestClient, clock: ManualClock, github: InMemoryGitHub, settings: Settings
) -> None:
    pod = driver(client, clock)
    pod.start()
    assert pod.sync()["resyncAfterSeconds"] == settings.registration_check_interval
    clock.advance(settings.registration_timeout)

    answer = pod.sync()

    assert answer["annotations"] == {} and "resyncAfterSeconds" not in answer
    assert github.count("list_runners") == 1


@pytest.mark.parametrize(
    ("error", "resync"),
    [(rate_limited(900), 900), (GitHubError("Bad gateway", 502), 60)],
    ids=["rate-limited", "server-error"],
)
def test_sync_answers_github_errors_with_a_later_resync(
    client: TestClient,
    clock: ManualClock,
    github: InMemoryGitHub,
    error: GitHubError,
    resync: float,
) -> None:
    pod = driver(client, clock)
    pod.start()
    github.register(ORG, "runner-a")
    github.list_error = error

    answer = pod.sync()

    assert answer["annotations"] == {}
    assert answer["resyncAfterSeconds"] == resync


def test_pod_without_a_runner_scope_is_left_alone(
    client: TestClient, clock: ManualClock, github: InMemoryGitHub
) -> None:
    pod = driver(client, clock, runner_pod(env=[{"name": "RUNNER_LABELS", "value": "x"}]))
    pod.start()

    assert pod.sync()["annotations"] == {}
    assert pod.finalize()["finalized"] is True
    assert github.calls == []


# ------------------------------------------------------------ finalize: owners


def test_pod_of_a_related_runner_finalizes_at_once_without_github(
    client: TestClient, clock: ManualClock, github: InMemoryGitHub
) -> None:
    owner = owner_ref("Runner", "runner-a", "runner-uid-1")
    pod = driver(client, clock, runner_pod(owner=owner))
    pod.start()
    github.register(ORG, "runner-a", busy=True)
    metadata = {"name": "runner-a", "namespace": NAMESPACE, "uid": "runner-uid-1"}
    runner = {"apiVersion": API_VERSION, "kind": "Runner", "metadata": metadata}
    pod.related = {RUNNER_GROUP: {f"{NAMESPACE}/runner-a": runner}}

    answer = pod.finalize()

    assert answer["finalized"] is True
    assert answer["annotations"] == {}
    assert github.calls == []


@pytest.mark.parametrize("related", ["absent", "namesake"])
def test_pod_of_a_runner_not_related_is_stopped_here(
    client: TestClient, clock: ManualClock, github: InMemoryGitHub, related: str
) -> None:
    pod = driver(client, clock, runner_pod(owner=owner_ref("Runner", "runner-a", "uid-1")))
    pod.start()
    github.register(ORG, "runner-a")
    if related == "namesake":  # recreated since under the same name: not this pod's owner
        namesake = {"metadata": {"name": "runner-a", "namespace": NAMESPACE, "uid": "uid-2"}}
        pod.related = {RUNNER_GROUP: {f"{NAMESPACE}/runner-a": namesake}}

    answer = pod.finalize()

    assert answer["finalized"] is True
    assert github.count("remove_runner") == 1
    assert github.runners[ORG] == []


def set_pod() -> dict[str, Any]:
    """The pod of a RunnerSet runner: its StatefulSet's only replica."""
    return runner_pod("set-abc-0", owner=owner_ref("StatefulSet", "set-abc", "sts-uid"))


def statefulset(pod_uid: str, outcome: str | None) -> dict[str, Any]:
    stop: dict[str, Any] = {"reason": "ScaleDown", "startedAt": "2026-01-01T00:00:00Z"}
    stop["podUid"] = pod_uid
    if outcome:
        stop["outcome"] = outcome
        stop["completedAt"] = "2026-01-01T00:00:00Z"
    return {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {
            "name": "set-abc",
            "namespace": NAMESPACE,
            "uid": "sts-uid",
            "annotations": {GRACEFUL_STOP_ANNOTATION: json.dumps(stop)},
        },
    }


@pytest.mark.parametrize("outcome", ["Unregistered", "NotRegistered"])
def test_pod_of_a_statefulset_that_stopped_it_finalizes_at_once(
    client: TestClient, clock: ManualClock, github: InMemoryGitHub, outcome: str
) -> None:
    pod = driver(client, clock, set_pod())
    pod.start()
    stopped = statefulset(pod.pod["metadata"]["uid"], outcome)
    pod.related = {STATEFULSET_GROUP: {f"{NAMESPACE}/set-abc": stopped}}

    answer = pod.finalize()

    assert answer["finalized"] is True
    assert github.calls == []


@pytest.mark.parametrize(
    ("pod_uid", "outcome"),
    [
        ("pod-uid-set-abc-0", "PodStopped"),
        ("pod-uid-set-abc-0", None),
        ("other-pod", "Unregistered"),
    ],
)
def test_pod_of_a_statefulset_without_a_finished_stop_of_it_is_stopped_here(
    client: TestClient,
    clock: ManualClock,
    github: InMemoryGitHub,
    pod_uid: str,
    outcome: str | None,
) -> None:
    pod = driver(client, clock, set_pod())
    pod.start()
    github.register(ORG, "set-abc-0")
    pod.related = {STATEFULSET_GROUP: {"set-abc": statefulset(pod_uid, outcome)}}  # v1 keys

    answer = pod.finalize()

    assert answer["finalized"] is True
    assert github.count("remove_runner") == 1
    assert github.runners[ORG] == []


# ------------------------------------------------------- who the decorator acts for


def victim_pod(owner: dict[str, Any] | None = None) -> dict[str, Any]:
    """A pod anyone allowed to create pods could write: labelled as a runner's, its env naming
    a runner of an organization the server's credentials reach."""
    pod = runner_pod(owner=owner, sealed=False)
    pod["metadata"]["namespace"] = "tenant-b"
    return pod


def runner_set_statefulset(sealed_for: str | None = "acme") -> dict[str, Any]:
    """The StatefulSet of a RunnerSet runner as the RunnerSet hook builds it, sealed for the
    runner `runner-a` of the organization `sealed_for` (`hooks.runner_seal`), or not at all."""
    env = [
        {"name": "RUNNER_ORG", "value": ORG.organization},
        {"name": "RUNNER_NAME", "value": "runner-a"},
    ]
    key = seal_key(hook_settings({"GITHUB_TOKEN": GITHUB_TOKEN}))
    assert key is not None
    seal = runner_seal(key, NAMESPACE, "runner-a", Scope(organization=sealed_for or ""), "runner-a")
    metadata: dict[str, Any] = {
        "name": "set-abc",
        "namespace": NAMESPACE,
        "uid": "sts-uid",
        # Anyone may write an ownerReference: it vouches for nothing.
        "ownerReferences": [
            {"apiVersion": API_VERSION, "kind": "RunnerSet", "name": "set", "uid": "set-uid"}
        ],
        "annotations": {SEAL_ANNOTATION: seal} if sealed_for else {},
    }
    template = {"spec": {"containers": [{"name": "runner", "env": env}]}}
    return {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": metadata,
        "spec": {"template": template},
    }


@pytest.mark.parametrize(
    "owner",
    [None, {"apiVersion": "batch/v1", "kind": "Job", "name": "j", "uid": "u"}],
    ids=["bare", "other-owner"],
)
def test_a_pod_nobody_vouches_for_is_not_acted_on_with_the_servers_credentials(
    client: TestClient, clock: ManualClock, github: InMemoryGitHub, owner: dict[str, Any] | None
) -> None:
    """Its env was trusted: a tenant's own pod had another organization's runner id recorded
    on it (a name lookup) and, deleted, had that runner unregistered."""
    github.register(ORG, "runner-a")
    pod = driver(client, clock, victim_pod(owner))
    pod.start()

    synced = pod.sync()
    finalized = pod.finalize()

    assert synced["annotations"] == {} and "resyncAfterSeconds" not in synced
    assert finalized["finalized"] is True
    assert github.calls == []
    assert len(github.runners[ORG]) == 1


def test_a_runner_id_written_on_a_sealed_pod_by_anyone_else_is_not_removed(
    client: TestClient, clock: ManualClock, github: InMemoryGitHub
) -> None:
    """A stop removes the runner by the id recorded on its pod: another team's runner id
    written there (the pod of a shared organization's set, annotated by whoever may edit pods
    in that namespace) had that runner unregistered, and left the pod's own behind. An id the
    decorator did not record and seal is looked up by the pod's runner name instead."""
    others = github.register(ORG, "someone-elses-runner")
    pod = registered_driver(client, clock, github, ephemeral=False)
    pod.pod["metadata"]["annotations"][ID] = str(others)  # rewritten, its seal left as it was

    answer = pod.finalize()

    assert answer["finalized"] is True
    assert [runner.name for runner in github.runners[ORG]] == ["someone-elses-runner"]


def test_a_runner_id_written_into_a_stops_record_by_anyone_else_is_not_removed(
    client: TestClient, clock: ManualClock, github: InMemoryGitHub
) -> None:
    """The stop's own record on the pod (`arc-hooks.dev/graceful-stop`) carries the runner id
    it removes: rewritten with another team's id while a busy runner's stop waited, the next
    attempt unregistered that runner. A record's id counts only when it is the pod's own,
    which the decorator records and seals with every id it learns."""
    others = github.register(ORG, "someone-elses-runner")
    pod = registered_driver(client, clock, github, ephemeral=False, busy=True)
    assert pod.finalize()["finalized"] is False  # busy: the stop waits for its job
    record = pod.stop_state()
    assert record["runnerId"] != others
    pod.annotations[GRACEFUL_STOP_ANNOTATION] = json.dumps({**record, "runnerId": others})
    clock.advance(120)

    waiting = pod.finalize()

    assert waiting["finalized"] is False
    assert sorted(runner.name for runner in github.runners[ORG]) == [
        "runner-a",
        "someone-elses-runner",
    ]


def test_an_id_a_stop_learns_is_recorded_sealed_on_the_pod(
    client: TestClient, clock: ManualClock, github: InMemoryGitHub
) -> None:
    """A pod without a recorded id (its sync had not seen the runner listed yet) learns it from
    the stop's lookup by name: recorded as the pod's id, sealed, so the next attempts use it."""
    pod = driver(client, clock)
    pod.start()
    github.register(ORG, "runner-a", busy=True)

    assert pod.finalize()["finalized"] is False
    assert pod.annotations[ID] == str(pod.stop_state()["runnerId"])
    github.calls.clear()
    clock.advance(120)
    pod.finalize()

    assert github.count("runners_named") == 0 and github.count("list_runners") == 0
    assert github.count("remove_runner") == 1


def test_a_forged_or_copied_seal_vouches_for_nothing(
    client: TestClient, clock: ManualClock, github: InMemoryGitHub
) -> None:
    github.register(ORG, "runner-a")
    sealed_elsewhere = runner_pod()  # sealed for its own uid
    forged = victim_pod()
    forged["metadata"]["uid"] = "pod-uid-of-the-copy"
    forged["metadata"]["annotations"][SEAL_ANNOTATION] = sealed_elsewhere["metadata"][
        "annotations"
    ][SEAL_ANNOTATION]
    pod = driver(client, clock, forged)
    pod.start()

    assert pod.finalize()["finalized"] is True
    assert github.calls == []


@pytest.mark.parametrize(
    ("statefulset", "vouched"),
    [
        (runner_set_statefulset(), True),
        (runner_set_statefulset(None), False),  # anyone's, a RunnerSet named as its owner
        (runner_set_statefulset("other-org"), False),  # sealed for a runner elsewhere
    ],
    ids=["sealed-by-the-runner-set-hook", "unsealed", "sealed-for-another-scope"],
)
def test_a_runner_set_pod_is_sealed_while_its_statefulset_vouches_and_stopped_once_it_is_gone(
    client: TestClient,
    clock: ManualClock,
    github: InMemoryGitHub,
    statefulset: dict[str, Any],
    vouched: bool,
) -> None:
    github.register(ORG, "runner-a")
    pod = driver(
        client,
        clock,
        runner_pod(owner=owner_ref("StatefulSet", "set-abc", "sts-uid"), sealed=False),
    )
    pod.start()
    pod.related = {STATEFULSET_GROUP: {f"{NAMESPACE}/set-abc": statefulset}}

    synced = pod.sync()
    pod.related = {}  # the StatefulSet deleted out of band; the pod follows it
    finalized = pod.finalize()

    assert (SEAL_ANNOTATION in synced["annotations"]) == vouched
    assert (ID in synced["annotations"]) == vouched
    assert finalized["finalized"] is True
    assert github.count("remove_runner") == (1 if vouched else 0)


@pytest.mark.parametrize(
    ("spec_org", "registered_org", "pod_runner", "runner_env", "vouched"),
    [
        ("acme", None, "runner-a", None, True),
        ("victim-org", None, "runner-a", None, False),
        ("other", "acme", "runner-a", None, True),
        ("acme", None, "someone-elses-runner", None, False),  # the pod names another runner
        ("acme", None, "custom-name", "custom-name", True),  # as the Runner's env names it
        ("acme", None, "in-container", "container:in-container", True),  # its container's env
    ],
    ids=[
        "spec",
        "other-scope",
        "status-registration",
        "other-runner",
        "runner-name-env",
        "runner-container-env",
    ],
)
def test_a_runners_pod_is_vouched_for_by_the_runner_and_scope_its_runner_names(
    client: TestClient,
    clock: ManualClock,
    github: InMemoryGitHub,
    spec_org: str,
    registered_org: str | None,
    pod_runner: str,
    runner_env: str | None,
    vouched: bool,
) -> None:
    github.register(ORG, pod_runner)
    owner = owner_ref("Runner", "runner-a", "r-uid")
    pod = driver(client, clock, runner_pod(pod_runner, owner=owner, sealed=False))
    pod.start()
    spec: dict[str, Any] = {"organization": spec_org}
    if runner_env is not None and runner_env.startswith("container:"):
        # The pod is built with its runner container's own env when it has one.
        env = [{"name": "RUNNER_NAME", "value": runner_env.removeprefix("container:")}]
        spec["containers"] = [{"name": "runner", "env": env}]
        spec["env"] = [{"name": "RUNNER_NAME", "value": "unused"}]
    elif runner_env is not None:
        spec["env"] = [{"name": "RUNNER_NAME", "value": runner_env}]
    runner: dict[str, Any] = {
        "apiVersion": API_VERSION,
        "kind": "Runner",
        "metadata": {"name": "runner-a", "namespace": NAMESPACE, "uid": "r-uid"},
        "spec": spec,
    }
    if registered_org:
        runner["status"] = {"registration": {"organization": registered_org}}
    pod.related = {RUNNER_GROUP: {f"{NAMESPACE}/runner-a": runner}}

    synced = pod.sync()

    assert (SEAL_ANNOTATION in synced["annotations"]) == vouched
    assert github.count("list_runners") == (1 if vouched else 0)


# ------------------------------------------------------- finalize: out-of-band deletions


def test_idle_registered_runner_deleted_out_of_band_is_unregistered_then_finalized(
    client: TestClient, clock: ManualClock, github: InMemoryGitHub
) -> None:
    pod = registered_driver(client, clock, github)

    answer = pod.finalize()

    assert answer["finalized"] is True
    assert github.calls == [("remove_runner", "/orgs/acme")]  # by id: no list
    assert github.runners[ORG] == []
    assert pod.annotations[START] == pod.annotations[COMPLETE] == format_time(clock.now())
    state = pod.stop_state()
    assert state["outcome"] == "Unregistered"
    assert state["podUid"] == pod.pod["metadata"]["uid"]
    assert state["runnerId"] == int(pod.annotations[ID])


def test_busy_static_runner_is_retried_after_the_delay_then_finalized_when_idle(
    client: TestClient, clock: ManualClock, github: InMemoryGitHub
) -> None:
    pod = registered_driver(client, clock, github, ephemeral=False, busy=True)
    started = format_time(clock.now())

    first = pod.finalize()
    clock.advance(10)
    early = pod.finalize()  # a pod update brings a call before the delay is over
    github.set_busy(ORG, "runner-a", False)
    clock.advance(50)
    done = pod.finalize()

    assert first["finalized"] is False and first["resyncAfterSeconds"] == 60
    assert early["finalized"] is False and early["resyncAfterSeconds"] == 50
    assert done["finalized"] is True
    assert github.count("remove_runner") == 2
    assert pod.annotations[START] == started
    assert pod.annotations[COMPLETE] == format_time(clock.now())
    assert pod.stop_state()["outcome"] == "Unregistered"


def test_busy_ephemeral_runner_is_waited_for_then_its_leftover_checked(
    client: TestClient, clock: ManualClock, github: InMemoryGitHub
) -> None:
    pod = registered_driver(client, clock, github, busy=True)
    pod.grace_seconds = 3600  # long enough for the job (RUNNER_GRACEFUL_STOP_TIMEOUT)

    first = pod.finalize()
    for _ in range(5):
        clock.advance(60)
        assert pod.finalize()["finalized"] is False
    assert pod.stop_state()["waitingForCompletion"] is True
    assert github.count("remove_runner") == 1  # waiting costs no API call
    # The job ends: the runner unregisters itself and exits.
    github.unregister(ORG, "runner-a")
    pod.runner_exits(0)
    done = pod.finalize()

    assert first["finalized"] is False and first["resyncAfterSeconds"] == 60
    assert done["finalized"] is True
    assert github.count("remove_runner") == 2  # the leftover check: 404
    assert pod.stop_state()["outcome"] == "PodStopped"


def test_runner_killed_mid_job_has_its_offline_registration_removed(
    client: TestClient, clock: ManualClock, github: InMemoryGitHub
) -> None:
    pod = registered_driver(client, clock, github, ephemeral=False)
    pod.pod["metadata"]["deletionTimestamp"] = format_time(clock.now())
    pod.pod["metadata"]["deletionGracePeriodSeconds"] = 30
    # SIGTERM ran out of grace time mid-job: SIGKILL. GitHub still holds the job a while.
    github.runners[ORG] = [replace(r, status="offline", busy=True) for r in github.runners[ORG]]
    clock.advance(30)
    pod.runner_exits(137)

    held = pod.finalize()
    clock.advance(20)
    soon = pod.finalize()  # no second DELETE within the retry delay
    github.set_busy(ORG, "runner-a", False)  # GitHub gave the job up
    clock.advance(40)
    done = pod.finalize()

    assert held["finalized"] is False and held["resyncAfterSeconds"] == 60
    assert soon["finalized"] is False and soon["resyncAfterSeconds"] == 40
    assert done["finalized"] is True
    assert github.count("remove_runner") == 2
    assert github.runners[ORG] == []
    assert pod.stop_state()["outcome"] == "PodStopped"


def test_leftover_of_a_runner_with_no_recorded_id_is_found_by_name(
    client: TestClient, clock: ManualClock, github: InMemoryGitHub
) -> None:
    pod = driver(client, clock, runner_pod(ephemeral=False))
    pod.start()
    runner_id = github.register(ORG, "runner-a", online=False)
    pod.runner_exits(143)  # before any sync recorded its id

    answer = pod.finalize()

    assert answer["finalized"] is True
    assert [method for method, _ in github.calls] == ["runners_named", "remove_runner"]
    assert pod.stop_state()["runnerId"] == runner_id
    assert github.runners[ORG] == []


def test_pending_pod_is_finalized_without_any_api_call(
    client: TestClient, clock: ManualClock, github: InMemoryGitHub
) -> None:
    pod = driver(client, clock)  # never scheduled

    answer = pod.finalize()

    assert answer["finalized"] is True
    assert github.calls == []


def node_lost(pod: PodDriver) -> None:
    pod.pod["status"]["reason"] = "NodeLost"


def phase_unknown(pod: PodDriver) -> None:
    pod.pod["status"]["phase"] = "Unknown"


def termination_overdue(pod: PodDriver) -> None:
    # Still "running" well past the grace period: the kubelet would have reported the kill.
    pod.clock.advance(30 + 30 + 61)


@pytest.mark.parametrize(
    "lose_node",
    [PodDriver.node_stops_reporting, node_lost, phase_unknown, termination_overdue],
    ids=["ready-unknown", "node-lost", "phase-unknown", "termination-overdue"],
)
def test_pod_on_an_unreachable_node_keeps_asking_github_instead_of_waiting(
    client: TestClient, clock: ManualClock, github: InMemoryGitHub, lose_node: Any
) -> None:
    pod = registered_driver(client, clock, github, busy=True)  # ephemeral, mid-job
    pod.pod["metadata"]["deletionTimestamp"] = format_time(clock.now())
    pod.pod["metadata"]["deletionGracePeriodSeconds"] = 30
    lose_node(pod)

    answers = []
    for _ in range(3):
        answers.append(pod.finalize())
        clock.advance(60)
    github.set_busy(ORG, "runner-a", False)  # GitHub declared the runner offline, job failed
    done = pod.finalize()

    for answer in answers:
        assert answer["finalized"] is False and answer["resyncAfterSeconds"] == 60
    assert pod.stop_state().get("waitingForCompletion") is not True
    assert done["finalized"] is True
    assert github.count("remove_runner") == 4
    assert github.runners[ORG] == []


def test_pod_already_waiting_for_completion_resumes_deletes_when_its_node_goes(
    client: TestClient, clock: ManualClock, github: InMemoryGitHub
) -> None:
    pod = registered_driver(client, clock, github, busy=True)
    pod.finalize()
    clock.advance(60)
    pod.finalize()
    assert github.count("remove_runner") == 1
    pod.node_stops_reporting()

    pod.finalize()

    assert github.count("remove_runner") == 2


def test_never_registered_runner_on_an_unreachable_node_does_not_hold_its_pod(
    client: TestClient, clock: ManualClock, github: InMemoryGitHub, settings: Settings
) -> None:
    pod = driver(client, clock)
    pod.start()
    pod.node_stops_reporting()

    waiting = pod.finalize()
    clock.advance(settings.registration_timeout)
    done = pod.finalize()

    assert waiting["finalized"] is False
    assert done["finalized"] is True
    assert pod.stop_state()["outcome"] == "NotRegistered"


def test_rate_limited_unregistration_is_retried_after_the_reset(
    client: TestClient, clock: ManualClock, github: InMemoryGitHub
) -> None:
    pod = registered_driver(client, clock, github)
    github.remove_answers.append(RemoveResult(RemoveOutcome.RATE_LIMITED, retry_after=900))

    limited = pod.finalize()
    clock.advance(900)
    done = pod.finalize()

    assert limited["finalized"] is False and limited["resyncAfterSeconds"] == 900
    assert done["finalized"] is True


def test_rate_limited_leftover_lookup_is_retried_after_the_reset(
    client: TestClient, clock: ManualClock, github: InMemoryGitHub
) -> None:
    pod = driver(client, clock)
    pod.start()
    github.register(ORG, "runner-a", online=False)
    pod.runner_exits(137)
    github.list_error = rate_limited(1200)

    limited = pod.finalize()
    github.list_error = None
    clock.advance(1200)
    done = pod.finalize()

    assert limited["finalized"] is False and limited["resyncAfterSeconds"] == 1200
    assert done["finalized"] is True
    assert github.runners[ORG] == []


def test_forbidden_unregistration_lets_the_pod_go(
    client: TestClient, clock: ManualClock, github: InMemoryGitHub
) -> None:
    pod = registered_driver(client, clock, github)
    github.remove_answers.append(RemoveResult(RemoveOutcome.FORBIDDEN, message="Forbidden"))

    answer = pod.finalize()

    assert answer["finalized"] is True
    assert github.count("remove_runner") == 1
    assert pod.stop_state()["outcome"] == "Forbidden"


FOREIGN_RECORD = {
    "reason": "PodDeleted",
    "startedAt": "2026-01-01T00:00:00Z",
    "podUid": "an-older-pod",
    "outcome": "Unregistered",
}


@pytest.mark.parametrize("record", ["{not json", '{"reason": 3}', json.dumps(FOREIGN_RECORD)])
def test_an_unreadable_or_foreign_stop_record_starts_anew(
    client: TestClient, clock: ManualClock, github: InMemoryGitHub, record: str
) -> None:
    pod = registered_driver(client, clock, github)
    pod.annotations[GRACEFUL_STOP_ANNOTATION] = record

    answer = pod.finalize()

    assert answer["finalized"] is True
    assert github.count("remove_runner") == 1
    assert pod.stop_state()["podUid"] == pod.pod["metadata"]["uid"]


def test_the_same_request_gets_the_same_answer(
    client: TestClient, clock: ManualClock, github: InMemoryGitHub
) -> None:
    pod = registered_driver(client, clock, github, busy=True)
    pod.finalize()
    clock.advance(30)
    request = pod.request(finalizing=True)

    first = client.post("/finalize/runnerpod", json=request).json()
    second = client.post("/finalize/runnerpod", json=request).json()

    assert first == second
    assert github.count("remove_runner") == 1


# ---------------------------------------------------------------------- customize


@pytest.mark.parametrize("field_name", ["parent", "object"])
@pytest.mark.parametrize(
    ("owner", "rule"),
    [
        (
            owner_ref("Runner", "runner-a", "u1"),
            {"apiVersion": API_VERSION, "resource": "runners", "names": ["runner-a"]},
        ),
        (
            owner_ref("StatefulSet", "set-abc", "u2"),
            {"apiVersion": "apps/v1", "resource": "statefulsets", "names": ["set-abc"]},
        ),
        (None, None),
        ({"apiVersion": "batch/v1", "kind": "Job", "name": "j", "uid": "u3"}, None),
    ],
    ids=["runner", "statefulset", "no-owner", "other-owner"],
)
def test_customize_relates_the_pods_controller(
    client: TestClient,
    owner: dict[str, Any] | None,
    rule: dict[str, Any] | None,
    field_name: str,
) -> None:
    body = {"controller": DECORATOR, field_name: runner_pod(owner=owner)}

    response = client.post("/customize/runnerpod", json=body)

    assert response.status_code == 200
    expected = [{**rule, "namespace": NAMESPACE}] if rule else []
    assert response.json() == {"relatedResources": expected}


def test_customize_relates_nothing_for_a_pod_that_is_not_a_runners(client: TestClient) -> None:
    """Metacontroller calls it for every pod its informer holds when a related object
    changes, whatever the decorator's selector: a database's StatefulSet pod included."""
    pod = runner_pod(owner=owner_ref("StatefulSet", "db", "u9"))
    del pod["metadata"]["labels"]["actions-runner"]

    response = client.post("/customize/runnerpod", json={"controller": DECORATOR, "object": pod})

    assert response.status_code == 200
    assert response.json() == {"relatedResources": []}


# ---------------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    ("path", "body", "status", "fragment"),
    [
        ("/sync/runnerpod", b"{not json", 400, "not valid JSON"),
        ("/finalize/runnerpod", b"[1, 2]", 400, "JSON object"),
        ("/sync/runnerpod", b'{"parent": {"metadata": {"name": "x"}}}', 422, "object"),
        ("/finalize/runnerpod", b'{"object": {"metadata": {}}}', 422, "object.metadata.name"),
        ("/sync/runnerpod", b'{"object": "pod"}', 422, "object"),
        (
            "/finalize/runnerpod",
            b'{"object": {"metadata": {"name": "x"}}, "attachments": []}',
            422,
            "attachments",
        ),
        (
            "/sync/runnerpod",
            b'{"object": {"metadata": {"name": "x"}}, "related": {"Runner.v1": []}}',
            422,
            "related",
        ),
        (
            "/sync/runnerpod",
            b'{"object": {"metadata": {"name": "x", "ownerReferences": ["not-an-object"]}}}',
            422,
            "object.metadata.ownerReferences must be a list of references",
        ),
        (
            "/sync/runnerpod",
            b'{"object": {"metadata": {"name": "x", "labels": {"a": 1}}}}',
            422,
            "object.metadata.labels must map strings to strings",
        ),
        (
            "/sync/runnerpod",
            b'{"object": {"metadata": {"name": ""}}}',
            422,
            "object.metadata.name must not be empty",
        ),
        ("/customize/runnerpod", b'{"controller": {}}', 422, "parent"),
        ("/customize/runnerpod", b"null", 400, "JSON object"),
    ],
)
def test_malformed_requests_get_a_4xx_with_a_message(
    client: TestClient, path: str, body: bytes, status: int, fragment: str
) -> None:
    response = client.post(path, content=body, headers={"content-type": "application/json"})

    assert response.status_code == status
    assert fragment in response.json()["error"]


def test_odd_but_valid_pods_never_get_a_500(client: TestClient) -> None:
    odd = {
        "metadata": {
            "name": "odd",
            "annotations": {ID: "not-a-number", GRACEFUL_STOP_ANNOTATION: "[]"},
            "ownerReferences": [{"apiVersion": "x/v1", "kind": "Odd", "name": "o", "uid": "u"}],
            "deletionTimestamp": "2026-01-01T00:00:00Z",
            "deletionGracePeriodSeconds": "thirty",
        },
        "spec": {"containers": [{"name": "runner", "env": [{"name": "RUNNER_ORG", "value": 7}]}]},
        "status": {
            "phase": "Running",
            "conditions": "none",
            "containerStatuses": [{"name": "runner", "state": {"running": {}}}],
        },
    }
    for path in ("/sync/runnerpod", "/finalize/runnerpod", "/customize/runnerpod"):
        response = client.post(path, json={"object": odd, "parent": odd})
        assert response.status_code == 200, (path, response.text)


@pytest.mark.parametrize("grace", [2**53 + 1, 1e300, -5, True])
def test_a_deletion_grace_period_of_any_size_is_read_without_a_500(
    client: TestClient, grace: object
) -> None:
    """The field is an int64: one worth centuries reads as a century (adding it to a time would
    overflow), a negative one as none."""
    pod = runner_pod(ephemeral=False)
    pod["metadata"] |= {"deletionTimestamp": "2026-01-01T00:00:00Z"}
    pod["metadata"]["deletionGracePeriodSeconds"] = grace
    pod["status"] = {
        "phase": "Running",
        "containerStatuses": [{"name": "runner", "state": {"running": {}}}],
    }
    for path in ("/sync/runnerpod", "/finalize/runnerpod"):
        response = client.post(path, json={"object": pod})
        assert response.status_code == 200, (path, response.text)


# ------------------------------------------------------------------------ secrets


def test_no_token_in_answers_or_logs(
    client: TestClient,
    clock: ManualClock,
    github: InMemoryGitHub,
    caplog: pytest.LogCaptureFixture,
) -> None:
    pod = driver(client, clock, runner_pod(ephemeral=False))
    for env in pod.pod["spec"]["containers"][0]["env"]:
        if env["name"] == "RUNNER_TOKEN":  # ARC accepts a literal token in the pod's env
            env.pop("valueFrom")
            env["value"] = RUNNER_TOKEN
    pod.start()
    github.register(ORG, "runner-a", busy=True)

    with caplog.at_level(logging.DEBUG):
        pod.sync()
        pod.finalize()
        clock.advance(60)
        github.set_busy(ORG, "runner-a", False)
        pod.finalize()

    assert pod.answers[-1]["finalized"] is True
    text = json.dumps(pod.answers) + caplog.text
    assert RUNNER_TOKEN not in text
    assert GITHUB_TOKEN not in text


def test_a_busy_answer_remembered_before_the_runner_stopped_does_not_hold_its_pod(
    settings: Settings, github: InMemoryGitHub, clock: ManualClock
) -> None:
    """The pod's DELETE answered "busy" while its job ran and the cache remembers that; the
    runner is then killed and GitHub lets the job go. The leftover removal asks afresh and
    the pod goes at once, instead of waiting out a retry delay on the remembered answer."""
    cached = CachedGitHub(github, settings, clock)
    app = create_app(settings, github=cached, clock=clock, github_blocks=False, kube=cluster(clock))
    with hook_client(app) as client:
        pod = registered_driver(client, clock, github, ephemeral=False, busy=True)
        held = pod.finalize()  # DELETE answers 422
        clock.advance(20)
        github.runners[ORG] = [
            replace(r, status="offline", busy=False) for r in github.runners[ORG]
        ]
        pod.runner_exits(137)
        done = pod.finalize()

    assert held["finalized"] is False
    assert done["finalized"] is True, pod.stop_state()
    assert github.runners[ORG] == []
    assert github.count("remove_runner") == 2


# ----------------------------------------------------------- pods on unreachable nodes


def stored_pod(kube: StoreKube) -> dict[str, Any]:
    """The pod as the API server holds it (with the uid it gave)."""
    stored = kube.store.get("Pod", NAMESPACE, "runner-a")
    assert stored is not None
    return with_seal(copy.deepcopy(stored))


def with_seal(pod: dict[str, Any]) -> dict[str, Any]:
    """The pod sealed by the decorator (`hooks.runnerpod.vouch`), as it is once its owner
    vouched for it."""
    key = seal_key(hook_settings({"GITHUB_TOKEN": GITHUB_TOKEN}))
    assert key is not None
    pod["metadata"].setdefault("annotations", {})[SEAL_ANNOTATION] = pod_seal(
        key, read_runner_pod(pod)
    )
    return pod


@contextmanager
def running_stored_pod(
    settings: Settings, github: InMemoryGitHub, clock: ManualClock
) -> Iterator[tuple[PodDriver, StoreKube]]:
    """A registered runner's pod as the API server holds it, served by a hook server that
    force-deletes through that API server."""
    kube = cluster(clock, runner_pod(ephemeral=False))
    app = create_app(settings, github=github, clock=clock, github_blocks=False, kube=kube)
    with hook_client(app) as client:
        pod = PodDriver(client, clock, stored_pod(kube))
        pod.start()
        github.register(ORG, "runner-a")
        pod.sync()
        yield pod, kube


def test_a_pod_on_a_lost_node_is_force_deleted_a_minute_past_its_deadline(
    settings: Settings, github: InMemoryGitHub, clock: ManualClock
) -> None:
    """ARC's deletionTimeout: the kubelet will never confirm the pod's end, so once its
    registration is gone it is force-deleted (grace period 0) a minute past its
    deletionTimestamp; until then the finalizer stays, so that the hook is called again."""
    with running_stored_pod(settings, github, clock) as (pod, kube):
        asyncio.run(kube.delete(PODS, NAMESPACE, "runner-a"))  # the node controller evicts
        pod.node_stops_reporting()

        early = pod.finalize()  # unregistered at once; the deadline is a minute away
        clock.advance(45)
        still = pod.finalize()
        clock.advance(15)
        due = pod.finalize()

    assert github.runners[ORG] == []
    assert early["finalized"] is False and early["resyncAfterSeconds"] == 60
    assert still["finalized"] is False and still["resyncAfterSeconds"] == 15
    assert due["finalized"] is True
    assert kube.store.get("Pod", NAMESPACE, "runner-a") is None


def test_a_namesake_of_a_force_deleted_pod_is_left_alone(
    settings: Settings, github: InMemoryGitHub, clock: ManualClock
) -> None:
    """The delete is conditional on the pod's uid: a new pod with the same name (a Runner's
    next incarnation) is never the one removed."""
    kube = cluster(clock, runner_pod(ephemeral=False))  # the namesake, with its own uid
    app = create_app(settings, github=github, clock=clock, github_blocks=False, kube=kube)
    with hook_client(app) as client:
        pod = PodDriver(client, clock, runner_pod(ephemeral=False))
        assert stored_pod(kube)["metadata"]["uid"] != pod.pod["metadata"]["uid"]
        pod.start()
        github.register(ORG, "runner-a")
        pod.sync()
        pod.node_stops_reporting()
        pod.finalize()
        clock.advance(61)
        done = pod.finalize()

    assert done["finalized"] is True
    assert kube.store.get("Pod", NAMESPACE, "runner-a") is not None


@pytest.mark.parametrize("runner_ended", [False, True], ids=["runner-running", "runner-ended"])
def test_a_pod_let_go_is_force_deleted_when_its_node_never_reports_its_end(
    settings: Settings, github: InMemoryGitHub, clock: ManualClock, runner_ended: bool
) -> None:
    """Its finalizer goes once the registration is gone, but its node may be lost before the
    kubelet reports the runner's end: the answer asks for a call when the pod would be
    overdue (grace period + a minute past deletionTimestamp), which Metacontroller makes for
    a pod being deleted with or without the finalizer. Then it is force-deleted. Also when
    the runner container ended and a sidecar kept the pod running: the pod had stayed
    Terminating for good (an eviction storm with a lost node never converged)."""
    with running_stored_pod(settings, github, clock) as (pod, kube):
        if runner_ended:
            pod.runner_exits(0)
        let_go = pod.finalize()  # the node is lost after this: the status stays as it was
        clock.advance(pod.grace_seconds + 60)
        overdue = pod.finalize()

    assert let_go["finalized"] is True
    assert let_go["resyncAfterSeconds"] == pod.grace_seconds + 60
    assert overdue["finalized"] is True
    assert kube.store.get("Pod", NAMESPACE, "runner-a") is None


def test_a_pod_whose_runner_stopped_is_looked_at_again_only_if_it_outstays_its_grace(
    client: TestClient, clock: ManualClock, github: InMemoryGitHub
) -> None:
    """A sidecar (docker) still running holds the pod after its runner ended; a node lost
    meanwhile would leave it Terminating for good (found in an eviction storm with a lost
    node). Metacontroller calls the hook only while the pod still exists."""
    pod = registered_driver(client, clock, github, ephemeral=False)
    pod.runner_exits(0)

    done = pod.finalize()

    assert done["finalized"] is True
    grace = pod.pod["metadata"]["deletionGracePeriodSeconds"]
    assert done["resyncAfterSeconds"] == pytest.approx(grace + 60)


def test_a_pod_whose_node_still_reports_is_never_force_deleted(
    settings: Settings, github: InMemoryGitHub, clock: ManualClock
) -> None:
    with running_stored_pod(settings, github, clock) as (pod, kube):
        done = pod.finalize()

    assert done["finalized"] is True
    assert kube.store.get("Pod", NAMESPACE, "runner-a") is not None
