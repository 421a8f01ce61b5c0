"""The simulated kubelet: scheduling, container lifecycle, pod phases, deletion with SIGTERM,
preStop and SIGKILL, eviction and node loss, with real runner agents and the fake GitHub."""

from __future__ import annotations

import base64
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

import pytest

from arc_sim.events import EventLoop
from arc_sim.fake_github import FakeGitHub
from arc_sim.kubelet import Kubelet
from arc_sim.runner_agent import RunnerAgent, runner_agent_factory
from arc_sim.store import EventType, KubeObject, ObjectStore
from hooks.clock import ManualClock, format_time
from hooks.github.port import Scope
from hooks.runner.pod import DOCKER_PRESTOP_SCRIPT
from tests.job_board import JobBoard

ORG = Scope(organization="acme")
NS = "ci"


@dataclass
class World:
    clock: ManualClock
    loop: EventLoop
    store: ObjectStore
    github: FakeGitHub
    board: JobBoard
    kubelet: Kubelet
    start: datetime
    # Every pod as last written, and when each pod left the API (seconds from the start).
    last_seen: dict[str, KubeObject] = field(default_factory=dict)
    removed_at: dict[str, float] = field(default_factory=dict)
    writes: dict[str, int] = field(default_factory=dict)

    def elapsed(self) -> float:
        return (self.loop.now - self.start).total_seconds()

    def record(self, event: EventType, obj: KubeObject) -> None:
        if obj.get("kind") != "Pod":
            return
        name = obj["metadata"]["name"]
        self.last_seen[name] = obj
        if event == "MODIFIED":
            self.writes[name] = self.writes.get(name, 0) + 1
        if event == "DELETED":
            self.removed_at[name] = self.elapsed()

    def pod(self, name: str) -> KubeObject:
        pod = self.store.get("Pod", NS, name)
        assert pod is not None, f"pod {name} is gone"
        return pod

    def agent(self, name: str) -> RunnerAgent:
        agent = self.kubelet.agent(NS, name)
        assert agent is not None
        return agent

    def add_runner_pod(self, name: str, **options: Any) -> None:
        token = self.github.create_registration_token(ORG).value
        self.store.create(registration_secret(name, token))
        self.store.create(runner_pod(name, **options))

    def registration(self) -> tuple[str, bool] | None:
        """(status, busy) of the only registration, None if there is none."""
        records = self.github.runner_records(ORG)
        assert len(records) <= 1
        return (records[0].status, records[0].busy) if records else None


def make_world(nodes: tuple[str, ...] = ("node-1", "node-2"), *, agents: bool = True) -> World:
    clock = ManualClock()
    loop = EventLoop(clock, seed=11)
    store = ObjectStore(clock)
    github = FakeGitHub(clock)
    board = JobBoard(github)
    factory = (
        runner_agent_factory(store=store, github=board, loop=loop, registration_delay=(3, 3))
        if agents
        else None
    )
    kubelet = Kubelet(
        store, loop, nodes=nodes, schedule_delay=1.0, start_delay=5.0, agent_factory=factory
    )
    world = World(clock, loop, store, github, board, kubelet, loop.now)
    store.watch(world.record)
    return world


def registration_secret(pod_name: str, token: str) -> KubeObject:
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": f"{pod_name}-registration", "namespace": NS},
        "data": {"token": base64.b64encode(token.encode()).decode()},
    }


def runner_pod(
    name: str,
    *,
    ephemeral: bool = True,
    stop_timeout: int | None = None,
    docker_stop_timeout: int | None = None,
    grace: int | None = None,
    docker: bool = True,
    restart_policy: str = "Never",
) -> KubeObject:
    """A runner pod shaped like ARC's (and hooks.runner.pod's): runner + dind sidecar."""
    env = [
        {"name": "RUNNER_ORG", "value": "acme"},
        {"name": "RUNNER_REPO", "value": ""},
        {"name": "RUNNER_ENTERPRISE", "value": ""},
        {"name": "RUNNER_LABELS", "value": "big"},
        {"name": "RUNNER_EPHEMERAL", "value": "true" if ephemeral else "false"},
        {"name": "RUNNER_NAME", "value": name},
        {
            "name": "RUNNER_TOKEN",
            "valueFrom": {"secretKeyRef": {"name": f"{name}-registration", "key": "token"}},
        },
    ]
    if stop_timeout is not None:
        env.append({"name": "RUNNER_GRACEFUL_STOP_TIMEOUT", "value": str(stop_timeout)})
    containers: list[KubeObject] = [{"name": "runner", "image": "runner-image", "env": env}]
    if docker:
        docker_env = [{"name": "DOCKER_GROUP_GID", "value": "121"}]
        if docker_stop_timeout is not None:
            docker_env.append(
                {"name": "RUNNER_GRACEFUL_STOP_TIMEOUT", "value": str(docker_stop_timeout)}
            )
        containers.append(
            {
                "name": "docker",
                "image": "docker:dind",
                "env": docker_env,
                "lifecycle": {
                    "preStop": {"exec": {"command": ["/bin/sh", "-c", DOCKER_PRESTOP_SCRIPT]}}
                },
            }
        )
    spec: KubeObject = {"containers": containers, "restartPolicy": restart_policy}
    if grace is not None:
        spec["terminationGracePeriodSeconds"] = grace
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": NS, "labels": {"actions-runner": ""}},
        "spec": spec,
    }


def condition(pod: KubeObject, kind: str) -> dict[str, Any]:
    return next(c for c in pod["status"]["conditions"] if c["type"] == kind)


def container_state(pod: KubeObject, name: str) -> dict[str, Any]:
    statuses = pod["status"]["containerStatuses"]
    state: dict[str, Any] = next(s for s in statuses if s["name"] == name)["state"]
    return state


def at(world: World, seconds: float) -> str:
    """The timestamp `seconds` after the world started."""
    return format_time(world.start + timedelta(seconds=seconds))


# --- scheduling and start


def test_a_pod_is_pending_then_bound_then_running_with_one_write_per_step() -> None:
    world = make_world(agents=False)
    world.store.create(runner_pod("p"))
    world.loop.run_for(0)
    assert world.pod("p")["status"] == {"phase": "Pending"}

    world.loop.run_for(1)
    pod = world.pod("p")
    assert pod["spec"]["nodeName"] == "node-1" and pod["status"]["phase"] == "Pending"
    assert condition(pod, "PodScheduled")["status"] == "True"
    assert condition(pod, "Ready")["status"] == "False"
    assert container_state(pod, "runner") == {"waiting": {"reason": "ContainerCreating"}}

    world.loop.run_for(5)
    pod = world.pod("p")
    assert pod["status"]["phase"] == "Running"
    assert condition(pod, "Ready") == {
        "type": "Ready",
        "status": "True",
        "lastProbeTime": None,
        "lastTransitionTime": at(world, 6),
    }
    assert container_state(pod, "runner") == {"running": {"startedAt": at(world, 6)}}
    assert [s["name"] for s in pod["status"]["containerStatuses"]] == ["docker", "runner"]
    # initial phase, binding, scheduled status, started status
    assert world.writes["p"] == 4


def test_pods_go_to_the_least_loaded_node_in_order() -> None:
    world = make_world(("node-1", "node-2"), agents=False)
    for name in ("a", "b", "c"):
        world.store.create(runner_pod(name))
        world.loop.run_for(1)
    assert [world.kubelet.node_of(NS, n) for n in ("a", "b", "c")] == [
        "node-1",
        "node-2",
        "node-1",
    ]


def test_a_deleted_pod_no_longer_loads_its_node() -> None:
    world = make_world(("node-1", "node-2"), agents=False)
    for name in ("a", "b", "c", "d"):
        world.store.create(runner_pod(name))
        world.loop.run_for(1)
    for name in ("a", "c"):  # both on node-1
        world.store.delete("Pod", NS, name)
    world.loop.run_for(60)
    assert world.store.get("Pod", NS, "a") is None and world.store.get("Pod", NS, "c") is None

    for name in ("e", "f"):
        world.store.create(runner_pod(name))
        world.loop.run_for(1)

    assert [world.kubelet.node_of(NS, n) for n in ("b", "d", "e", "f")] == [
        "node-2",
        "node-2",
        "node-1",
        "node-1",
    ]


def test_without_a_live_node_a_pod_waits_unschedulable_until_one_is_added() -> None:
    world = make_world((), agents=False)
    world.store.create(runner_pod("p"))
    world.loop.run_for(60)
    pod = world.pod("p")
    assert "nodeName" not in pod["spec"]
    assert condition(pod, "PodScheduled")["reason"] == "Unschedulable"

    world.kubelet.add_node("node-9")
    world.loop.run_for(5)
    assert world.pod("p")["spec"]["nodeName"] == "node-9"
    assert world.pod("p")["status"]["phase"] == "Running"


def test_a_missing_secret_holds_the_runner_in_create_container_config_error() -> None:
    world = make_world()
    world.store.create(runner_pod("p"))
    world.loop.run_for(6)
    pod = world.pod("p")
    assert container_state(pod, "runner")["waiting"]["reason"] == "CreateContainerConfigError"
    assert container_state(pod, "docker") == {"running": {"startedAt": at(world, 6)}}
    assert pod["status"]["phase"] == "Pending"

    token = world.github.create_registration_token(ORG).value
    world.store.create(registration_secret("p", token))
    world.loop.run_for(10 + 3)
    assert world.pod("p")["status"]["phase"] == "Running"
    assert world.registration() == ("online", False)


def test_a_jit_runner_reads_its_config_from_the_secret() -> None:
    world = make_world()
    record, encoded = world.github.generate_jit_config(ORG, "p", ["big"], 1)
    secret = registration_secret("p", "")
    secret["data"] = {"jitConfig": base64.b64encode(encoded.encode()).decode()}
    world.store.create(secret)
    pod = runner_pod("p")
    env = pod["spec"]["containers"][0]["env"]
    env[-1] = {
        "name": "ACTIONS_RUNNER_INPUT_JITCONFIG",
        "valueFrom": {"secretKeyRef": {"name": "p-registration", "key": "jitConfig"}},
    }
    world.store.create(pod)
    world.loop.run_for(9)

    assert world.agent("p").runner_id == record.id
    assert world.registration() == ("online", False)


# --- container exits and pod phases


def test_a_runner_refused_registration_exits_1_and_the_sidecar_keeps_the_pod_running() -> None:
    world = make_world()
    world.store.create(registration_secret("p", "unknown-token"))
    world.store.create(runner_pod("p"))
    world.loop.run_for(6 + 3)

    pod = world.pod("p")
    runner = container_state(pod, "runner")["terminated"]
    assert (runner["exitCode"], runner["reason"]) == (1, "Error")
    assert "running" in container_state(pod, "docker")
    assert pod["status"]["phase"] == "Running"
    assert condition(pod, "Ready")["status"] == "False"

    world.loop.run_for(3600)  # restartPolicy Never: no restart
    statuses = world.pod("p")["status"]["containerStatuses"]
    assert [s["restartCount"] for s in statuses] == [0, 0]


def test_an_ephemeral_runner_alone_in_its_pod_ends_it_succeeded() -> None:
    world = make_world()
    world.add_runner_pod("p", docker=False)
    world.loop.run_for(9)
    world.board.submit(["big"], duration_seconds=120)
    world.loop.run_for(120)

    pod = world.pod("p")
    assert pod["status"]["phase"] == "Succeeded"
    assert container_state(pod, "runner")["terminated"]["exitCode"] == 0
    assert condition(pod, "Ready")["reason"] == "PodCompleted"
    assert world.registration() is None and world.board.count("completed") == 1


def test_a_failed_runner_alone_in_its_pod_ends_it_failed() -> None:
    world = make_world()
    world.store.create(registration_secret("p", "unknown-token"))
    world.store.create(runner_pod("p", docker=False))
    world.loop.run_for(9)
    assert world.pod("p")["status"]["phase"] == "Failed"


def test_restart_policy_always_restarts_the_container_with_back_off() -> None:
    world = make_world()
    world.store.create(registration_secret("p", "unknown-token"))
    world.store.create(runner_pod("p", docker=False, restart_policy="Always"))
    world.loop.run_for(9 + 10)
    status = world.pod("p")["status"]["containerStatuses"][0]
    assert status["restartCount"] == 1 and status["lastState"]["terminated"]["exitCode"] == 1
    assert world.pod("p")["status"]["phase"] == "Running"


# --- deletion: SIGTERM, preStop, grace period, SIGKILL


def test_deleting_an_idle_runner_pod_unregisters_it_and_removes_the_pod_at_once() -> None:
    world = make_world()
    world.add_runner_pod("p")
    world.loop.run_for(9)
    assert world.registration() == ("online", False)

    deleted_at = world.elapsed()
    world.store.delete("Pod", NS, "p")
    world.loop.run_for(1)

    assert world.removed_at["p"] == deleted_at
    assert world.registration() is None
    final = world.last_seen["p"]
    assert container_state(final, "runner")["terminated"]["exitCode"] == 0
    assert container_state(final, "docker")["terminated"]["exitCode"] == 0


def test_deleting_a_busy_runner_pod_cancels_its_job_after_the_default_15s() -> None:
    world = make_world()
    world.add_runner_pod("p")
    world.loop.run_for(9)
    job = world.board.submit(["big"], duration_seconds=600)
    world.store.delete("Pod", NS, "p")  # default grace period: 30 s
    world.loop.run_for(14)
    assert "p" not in world.removed_at and world.board.outcomes[job.id] == "running"
    world.loop.run_for(30)

    assert world.board.outcomes[job.id] == "interrupted"
    # The registration stays behind, offline; dockerd's preStop waited on it for its 15 s.
    assert world.registration() == ("offline", False)
    assert world.removed_at["p"] == pytest.approx(9 + 15)


def test_a_graceful_stop_timeout_within_the_grace_period_lets_the_job_finish() -> None:
    world = make_world()
    world.add_runner_pod("p", stop_timeout=90, docker_stop_timeout=90, grace=110)
    world.loop.run_for(9)
    job = world.board.submit(["big"], duration_seconds=100)
    world.loop.run_for(40)
    world.store.delete("Pod", NS, "p")
    world.loop.run_for(110)

    assert world.board.outcomes[job.id] == "completed"
    assert world.registration() is None
    assert world.removed_at["p"] == pytest.approx(9 + 100)


def test_the_grace_period_ends_with_sigkill_and_an_interrupted_job() -> None:
    world = make_world()
    world.add_runner_pod("p", stop_timeout=90, docker_stop_timeout=90, grace=30)
    world.loop.run_for(9)
    job = world.board.submit(["big"], duration_seconds=600)
    world.store.delete("Pod", NS, "p")
    world.loop.run_for(29)
    assert world.board.outcomes[job.id] == "running"
    world.loop.run_for(1)

    assert world.removed_at["p"] == pytest.approx(9 + 30)
    final = world.last_seen["p"]
    assert container_state(final, "runner")["terminated"]["exitCode"] == 137
    assert container_state(final, "docker")["terminated"]["exitCode"] == 137
    assert final["status"]["phase"] == "Failed"
    assert world.board.outcomes[job.id] == "interrupted"
    assert world.registration() == ("offline", False)


def test_a_negative_grace_period_is_one_second_as_the_api_server_treats_it() -> None:
    world = make_world()
    world.add_runner_pod("p", grace=-1)
    world.loop.run_for(9)
    job = world.board.submit(["big"], duration_seconds=600)
    world.store.delete("Pod", NS, "p")

    assert world.pod("p")["metadata"]["deletionGracePeriodSeconds"] == 1
    world.loop.run_for(1)
    assert world.removed_at["p"] == pytest.approx(9 + 1)
    assert world.board.outcomes[job.id] == "interrupted"


def test_without_the_timeout_in_its_env_dockerd_stops_after_15s_under_a_running_job() -> None:
    world = make_world()
    world.add_runner_pod("p", stop_timeout=90, grace=110)  # forgot dockerEnv
    world.loop.run_for(9)
    world.board.submit(["big"], duration_seconds=60)
    world.store.delete("Pod", NS, "p")
    world.loop.run_for(15)

    pod = world.pod("p")
    assert container_state(pod, "docker")["terminated"]["exitCode"] == 0
    assert "running" in container_state(pod, "runner")


def test_a_pod_deleted_before_it_started_goes_at_once() -> None:
    world = make_world()
    world.add_runner_pod("p")
    world.loop.run_for(3)
    world.store.delete("Pod", NS, "p")
    world.loop.run_for(0)
    assert world.removed_at["p"] == 3 and world.kubelet.agent(NS, "p") is None


def test_a_finalizer_keeps_the_stopped_pod_with_its_final_status() -> None:
    world = make_world()
    world.add_runner_pod("p")
    world.store.patch_metadata("Pod", NS, "p", finalizers=["example.com/hold"])
    world.loop.run_for(9)
    world.store.delete("Pod", NS, "p")
    world.loop.run_for(1)

    pod = world.pod("p")
    assert pod["metadata"]["deletionTimestamp"]
    assert container_state(pod, "runner")["terminated"]["exitCode"] == 0
    world.store.remove_finalizer("Pod", NS, "p", "example.com/hold")
    assert world.store.get("Pod", NS, "p") is None


def test_force_deleting_a_running_pod_kills_its_runner() -> None:
    world = make_world()
    world.add_runner_pod("p")
    world.loop.run_for(9)
    job = world.board.submit(["big"], duration_seconds=600)
    world.store.delete("Pod", NS, "p", grace_period_seconds=0)

    assert world.board.outcomes[job.id] == "interrupted"
    assert world.registration() == ("offline", False)


def test_eviction_is_a_graceful_delete_with_the_pods_grace_period() -> None:
    world = make_world()
    world.add_runner_pod("p", grace=45)
    world.loop.run_for(9)
    world.kubelet.evict(NS, "p")

    assert world.last_seen["p"]["metadata"]["deletionGracePeriodSeconds"] == 45
    world.loop.run_for(1)
    assert "p" in world.removed_at and world.registration() is None


# --- node loss


def test_a_lost_node_kills_its_runners_and_leaves_its_pods_as_they_were() -> None:
    world = make_world(("node-1", "node-2"))
    world.add_runner_pod("a", ephemeral=False)
    world.loop.run_for(1)
    world.add_runner_pod("b", ephemeral=False)
    world.loop.run_for(9)
    assert world.kubelet.node_of(NS, "a") == "node-1"
    job = world.board.submit(["big"], duration_seconds=600)
    busy_pod = "a" if world.agent("a").job is not None else "b"
    lost_node = world.kubelet.node_of(NS, busy_pod)
    assert lost_node is not None
    before = world.pod(busy_pod)

    assert world.kubelet.lose_node(lost_node) == [f"{NS}/{busy_pod}"]
    world.loop.run_for(600)

    assert world.pod(busy_pod) == before  # nobody reports for the node
    assert world.board.outcomes[job.id] == "interrupted"
    statuses = {r.name: r.status for r in world.github.runner_records(ORG)}
    assert statuses == {busy_pod: "offline", ({"a", "b"} - {busy_pod}).pop(): "online"}

    world.store.delete("Pod", NS, busy_pod)
    world.loop.run_for(3600)
    assert world.pod(busy_pod)["metadata"]["deletionTimestamp"]  # Terminating for good
    world.store.delete("Pod", NS, busy_pod, grace_period_seconds=0)
    assert world.store.get("Pod", NS, busy_pod) is None

    world.add_runner_pod("c")
    world.loop.run_for(1)
    assert world.kubelet.node_of(NS, "c") != lost_node
    assert world.kubelet.lost_nodes == {lost_node}
