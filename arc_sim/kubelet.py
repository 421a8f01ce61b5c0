"""The simulated scheduler and kubelets: pods get a node, start, run, stop and report status.

One `Kubelet` object plays the scheduler and the kubelets of all nodes. It watches pods in the
store and, on virtual time:

- binds a new pod to the least-loaded live node after `schedule_delay` (ties go to the node
  listed first), with the PodScheduled condition; without a live node the pod stays Pending,
  Unschedulable, until `add_node`;
- starts its containers `start_delay` later (image pulls and all): running, Ready, phase Running.
  The `runner` container runs the `RunnerAgent` from `agent_factory(pod)`; other containers just
  run until stopped. A runner whose Secret is missing waits in CreateContainerConfigError and is
  retried, as the kubelet does;
- records container exits (`state.terminated`): with restartPolicy Never a container stays
  terminated; the phase is Succeeded when every container ended with 0, Failed when all ended and
  one did not, and Running while any container (a sidecar such as dockerd) still runs;
- stops a pod being deleted: SIGTERM to each container, SIGKILL (exit 137) to what still runs
  when the grace period ends, then `store.pod_terminated`. The runner agent handles its own
  SIGTERM. The dind sidecar's preStop (ARC's, recognised by the `/runner/.runner` it watches)
  waits while that file exists, at most `RUNNER_GRACEFUL_STOP_TIMEOUT` (the docker container's
  own env, default 15 s), and dockerd then exits 0; other containers exit 0 on SIGTERM. Pods
  that never started, or whose containers all ended, are confirmed at once, as unscheduled pods
  are by the API server.

Node loss (`lose_node`): the node stops answering. Its containers are gone at once: runner agents
are killed (a running job is interrupted, registrations stay on GitHub, offline). Nothing more is
written for its pods: they stay in the API exactly as last reported (Running, Ready), and a
deletion leaves them Terminating for good, until someone deletes them with grace period 0. The
node lifecycle controller (Ready=Unknown after 40 s, taint-based eviction after 5 minutes) is not
modelled. A lost node's name can come back through `add_node` as a new, empty node.

Not modelled: init containers (treated as done), probes, resources, node selectors, affinity
and taints. Status writes are kept to one per transition: changes at the same virtual instant
are merged into a single status update.
"""

from __future__ import annotations

import copy
import enum
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from arc_sim.events import EventLoop, Timer
from arc_sim.runner_agent import (
    DEFAULT_GRACEFUL_STOP_TIMEOUT,
    KILLED_EXIT_CODE,
    RUNNER_CONTAINER,
    ContainerConfigError,
    RunnerAgent,
)
from arc_sim.store import EventType, KubeObject, NotFound, ObjectStore
from hooks.clock import format_time

AgentFactory = Callable[[KubeObject], RunnerAgent | None]

DEFAULT_NODES = ("node-1", "node-2", "node-3")
CONFIG_ERROR_RETRY_SECONDS = 10.0
MAX_RESTART_BACKOFF_SECONDS = 300.0
# The file ARC's dind preStop waits on: the runner's registration (see hooks.runner.pod).
RUNNER_CONFIG_FILE = "/runner/.runner"
PRESTOP_POLL_SECONDS = 1.0  # the preStop script's `sleep 1`


class _Phase(enum.Enum):
    WAITING = "waiting"
    RUNNING = "running"
    TERMINATED = "terminated"


@dataclass
class _Container:
    name: str
    image: str
    waits_for_runner: bool  # ARC's dind preStop
    prestop_timeout: float
    state: _Phase = _Phase.WAITING
    reason: str = "ContainerCreating"
    message: str = ""
    started_at: datetime | None = None
    finished_at: datetime | None = None
    exit_code: int | None = None
    restart_count: int = 0
    last_state: dict[str, Any] | None = None
    agent: RunnerAgent | None = None
    timer: Timer | None = None  # config retry, restart back-off or preStop poll

    def status(self, pod_uid: str) -> dict[str, Any]:
        entry: dict[str, Any] = {
            "name": self.name,
            "image": self.image,
            "imageID": "",
            "ready": self.state is _Phase.RUNNING,
            "restartCount": self.restart_count,
            "started": self.state is _Phase.RUNNING,
            "state": self._state(),
            "lastState": self.last_state or {},
        }
        if self.started_at is not None:
            entry["containerID"] = f"containerd://{pod_uid}-{self.name}-{self.restart_count}"
        return entry

    def _state(self) -> dict[str, Any]:
        if self.state is _Phase.RUNNING:
            return {"running": {"startedAt": _time(self.started_at)}}
        if self.state is _Phase.TERMINATED:
            terminated: dict[str, Any] = {
                "exitCode": self.exit_code,
                "reason": self.reason,
                "finishedAt": _time(self.finished_at),
            }
            if self.started_at is not None:
                terminated["startedAt"] = _time(self.started_at)
            return {"terminated": terminated}
        waiting: dict[str, Any] = {"reason": self.reason}
        if self.message:
            waiting["message"] = self.message
        return {"waiting": waiting}

    def cancel_timer(self) -> None:
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None


@dataclass
class _Pod:
    uid: str
    namespace: str
    name: str
    restart_policy: str
    containers: list[_Container]
    node: str | None = None
    scheduled: bool = False
    started: bool = False
    terminating: bool = False
    lost: bool = False
    gone: bool = False  # confirmed terminated, or removed from the API
    unschedulable: bool = False
    start_time: datetime | None = None
    written_phase: str = "Pending"
    loads: str | None = None  # the node whose load counts this pod (`Kubelet._count_load`)
    # The pod as the API last reported it: the watch hands each watcher a copy of its own.
    latest: KubeObject = field(default_factory=dict)
    conditions: dict[str, tuple[str, str, datetime]] = field(default_factory=dict)
    timers: list[Timer] = field(default_factory=list)
    status_pending: bool = False

    @property
    def runner(self) -> _Container | None:
        return next((c for c in self.containers if c.name == RUNNER_CONTAINER), None)

    def running(self) -> list[_Container]:
        return [c for c in self.containers if c.state is _Phase.RUNNING]

    def phase(self) -> str:
        """The kubelet's getPhase."""
        if not self.started:
            return "Pending"
        pending = sum(
            1 for c in self.containers if c.state is _Phase.WAITING and c.last_state is None
        )
        running = sum(
            1
            for c in self.containers
            if c.state is _Phase.RUNNING or (c.state is _Phase.WAITING and c.last_state)
        )
        stopped = [c for c in self.containers if c.state is _Phase.TERMINATED]
        if pending and not self.terminating:
            return "Pending"
        if running:
            return "Running"
        failed = any(c.exit_code != 0 for c in stopped)
        if self.terminating or self.restart_policy == "Never":
            return "Failed" if failed else "Succeeded"
        if self.restart_policy == "OnFailure" and not failed:
            return "Succeeded"
        return "Running"

    def cancel_timers(self) -> None:
        for timer in self.timers:
            timer.cancel()
        self.timers.clear()
        for container in self.containers:
            container.cancel_timer()


class Kubelet:
    def __init__(
        self,
        store: ObjectStore,
        loop: EventLoop,
        *,
        nodes: Sequence[str] = DEFAULT_NODES,
        schedule_delay: float = 1.0,
        start_delay: float = 5.0,
        agent_factory: AgentFactory | None = None,
        restart_backoff: float = 10.0,
    ) -> None:
        self.store = store
        self.loop = loop
        self.schedule_delay = schedule_delay
        self.start_delay = start_delay
        self.agent_factory = agent_factory
        self.restart_backoff = restart_backoff
        self._nodes: list[str] = list(dict.fromkeys(nodes))
        self._lost_nodes: set[str] = set()
        self._pods: dict[str, _Pod] = {}  # by uid: a recreated pod of the same name is new
        # Pods on each node that are neither gone nor finished: scheduling picks the least
        # loaded node for each of thousands of pods.
        self._load: Counter[str] = Counter()
        self._uids: dict[tuple[str, str], str] = {}
        self._unscheduled: list[str] = []
        store.watch(self._on_event)
        for pod in store.list_objects("Pod"):
            self._admit(pod)

    # --- inspection

    @property
    def nodes(self) -> list[str]:
        """Live nodes, in the order they were added."""
        return list(self._nodes)

    @property
    def lost_nodes(self) -> set[str]:
        return set(self._lost_nodes)

    def agent(self, namespace: str, name: str) -> RunnerAgent | None:
        """The runner agent of the pod's current runner container, if one was started."""
        pod = self._pod(namespace, name)
        runner = pod.runner if pod is not None else None
        return runner.agent if runner is not None else None

    def node_of(self, namespace: str, name: str) -> str | None:
        pod = self._pod(namespace, name)
        return pod.node if pod is not None else None

    def pods_on(self, node: str) -> list[str]:
        """`namespace/name` of the pods bound to `node` that are still in the API."""
        return sorted(
            f"{pod.namespace}/{pod.name}"
            for pod in self._pods.values()
            if pod.node == node and not pod.gone
        )

    # --- disruptions

    def evict(self, namespace: str, name: str) -> None:
        """The eviction API: a graceful delete with the pod's own grace period (PDBs are not
        modelled). Raises NotFound for a missing pod."""
        self.store.delete("Pod", namespace, name)

    def lose_node(self, node: str) -> list[str]:
        """The node becomes unreachable; returns the pods that were on it (see the module
        docstring)."""
        if node not in self._nodes:
            return []
        self._nodes.remove(node)
        self._lost_nodes.add(node)
        affected = []
        for pod in self._pods.values():
            if pod.node != node or pod.lost:
                continue
            pod.lost = True
            pod.cancel_timers()
            for container in pod.containers:
                if container.agent is not None:
                    container.agent.kill()
            affected.append(f"{pod.namespace}/{pod.name}")
        return sorted(affected)

    def cordon(self, node: str) -> list[str]:
        """`kubectl cordon`: no new pod is bound to the node; the pods on it run on. Returns
        them (`namespace/name`). `add_node` makes it schedulable again."""
        if node in self._nodes:
            self._nodes.remove(node)
        return self.pods_on(node)

    def add_node(self, node: str) -> None:
        if node in self._nodes:
            return
        self._lost_nodes.discard(node)
        self._nodes.append(node)
        waiting, self._unscheduled = self._unscheduled, []
        for uid in waiting:
            pod = self._pods.get(uid)
            if pod is not None and not pod.gone and not pod.terminating:
                self._schedule(pod)

    # --- watching the store

    def _on_event(self, event: EventType, obj: KubeObject) -> None:
        if obj.get("kind") != "Pod":
            return
        metadata = obj["metadata"]
        if event == "ADDED":
            self._admit(obj)
            return
        pod = self._pods.get(metadata["uid"])
        if pod is None:
            return
        pod.latest = obj
        if event == "DELETED":
            self._forget(pod)
        elif metadata.get("deletionTimestamp") and not pod.terminating:
            pod.terminating = True
            grace = float(metadata.get("deletionGracePeriodSeconds") or 0)
            # Not inside the store's notification: the steps below write to the store.
            self.loop.call_soon(lambda: self._terminate(pod, grace), f"kubelet: stop {pod.name}")

    def _admit(self, obj: KubeObject) -> None:
        metadata, spec = obj["metadata"], obj.get("spec") or {}
        pod = _Pod(
            uid=metadata["uid"],
            namespace=metadata.get("namespace") or "",
            name=metadata["name"],
            restart_policy=spec.get("restartPolicy") or "Always",
            containers=[_new_container(c) for c in spec.get("containers") or []],
            latest=obj,
        )
        self._pods[pod.uid] = pod
        self._uids[(pod.namespace, pod.name)] = pod.uid
        if not (obj.get("status") or {}).get("phase"):
            self._status_changed(pod)  # the API server's initial `phase: Pending`
        if metadata.get("deletionTimestamp"):
            pod.terminating = True
            self.loop.call_soon(lambda: self._confirm_stopped(pod))
            return
        node = spec.get("nodeName")
        if node:
            self._bound(pod, node)
        else:
            self._later(pod, self.schedule_delay, lambda: self._schedule(pod), "schedule")

    def _forget(self, pod: _Pod) -> None:
        """The pod left the API. Containers still running (a force deletion) are killed."""
        pod.gone = True
        pod.cancel_timers()
        self._pods.pop(pod.uid, None)
        self._count_load(pod)
        if self._uids.get((pod.namespace, pod.name)) == pod.uid:
            del self._uids[(pod.namespace, pod.name)]
        if pod.lost:
            return
        for container in pod.running():
            if container.agent is not None:
                container.agent.kill()

    # --- scheduling and starting

    def _schedule(self, pod: _Pod) -> None:
        if pod.gone or pod.terminating or pod.scheduled:
            return
        if not self._nodes:
            if pod.uid not in self._unscheduled:
                self._unscheduled.append(pod.uid)
            if not pod.unschedulable:
                pod.unschedulable = True
                self._set_condition(pod, "PodScheduled", "False", "Unschedulable")
                self._status_changed(pod)
            return
        node = self._least_loaded_node()
        binding = copy.deepcopy(pod.latest)
        binding["spec"]["nodeName"] = node
        binding["metadata"].pop("resourceVersion", None)  # a binding has no precondition
        try:
            self.store.update(binding)
        except NotFound:
            return
        self._bound(pod, node)

    def _bound(self, pod: _Pod, node: str) -> None:
        pod.node, pod.scheduled, pod.unschedulable = node, True, False
        self._count_load(pod)
        if node in self._lost_nodes:
            pod.lost = True
            return
        pod.start_time = self.loop.now
        for condition in ("PodScheduled", "Initialized"):
            self._set_condition(pod, condition, "True")
        for condition in ("Ready", "ContainersReady"):
            self._set_condition(pod, condition, "False", "ContainersNotReady")
        self._status_changed(pod)
        self._later(pod, self.start_delay, lambda: self._start(pod), "start")

    def _least_loaded_node(self) -> str:
        load = self._load
        return min(self._nodes, key=lambda node: (load[node], self._nodes.index(node)))

    def _count_load(self, pod: _Pod) -> None:
        """Count the pod on its node while it is known, not gone and not finished; called
        after each change of any of these."""
        counted = (
            pod.node
            if pod.uid in self._pods and not pod.gone and pod.written_phase not in _TERMINAL
            else None
        )
        if counted == pod.loads:
            return
        if pod.loads is not None:
            self._load[pod.loads] -= 1
        if counted is not None:
            self._load[counted] += 1
        pod.loads = counted

    def _start(self, pod: _Pod) -> None:
        if pod.gone or pod.terminating or pod.lost:
            return
        pod.started = True
        self._set_condition(pod, "PodReadyToStartContainers", "True")
        for container in pod.containers:
            self._start_container(pod, container)
        self._update_readiness(pod)
        self._status_changed(pod)

    def _start_container(self, pod: _Pod, container: _Container) -> None:
        container.timer = None
        if pod.gone or pod.terminating or pod.lost:
            return
        agent: RunnerAgent | None = None
        if container.name == RUNNER_CONTAINER and self.agent_factory is not None:
            try:
                agent = self.agent_factory(pod.latest)
            except ContainerConfigError as error:
                changed = container.reason != "CreateContainerConfigError"
                container.reason, container.message = "CreateContainerConfigError", str(error)
                container.timer = self.loop.call_later(
                    CONFIG_ERROR_RETRY_SECONDS,
                    lambda: self._retry_container(pod, container),
                    f"kubelet: create {pod.name}/{container.name}",
                )
                if changed:
                    self._status_changed(pod)
                return
        container.state, container.reason, container.message = _Phase.RUNNING, "", ""
        container.started_at, container.finished_at, container.exit_code = self.loop.now, None, None
        container.agent = agent
        if agent is not None:
            agent.start(lambda code: self._container_exited(pod, container, code))

    def _retry_container(self, pod: _Pod, container: _Container) -> None:
        self._start_container(pod, container)
        if container.state is _Phase.RUNNING:
            self._update_readiness(pod)
            self._status_changed(pod)

    # --- containers ending

    def _container_exited(self, pod: _Pod, container: _Container, code: int) -> None:
        if pod.gone or pod.lost or container.state is not _Phase.RUNNING:
            return
        container.cancel_timer()
        container.state, container.exit_code = _Phase.TERMINATED, code
        container.reason = "Completed" if code == 0 else "Error"
        container.finished_at = self.loop.now
        self._update_readiness(pod)
        self._status_changed(pod)
        if pod.terminating:
            return
        if _restarts(pod.restart_policy, code):
            backoff = min(
                self.restart_backoff * 2**container.restart_count, MAX_RESTART_BACKOFF_SECONDS
            )
            container.timer = self.loop.call_later(
                backoff,
                lambda: self._restart_container(pod, container),
                f"kubelet: restart {pod.name}/{container.name}",
            )

    def _restart_container(self, pod: _Pod, container: _Container) -> None:
        container.timer = None
        if pod.gone or pod.terminating or pod.lost:
            return
        container.last_state = container.status(pod.uid)["state"]
        container.restart_count += 1
        container.agent = None
        self._start_container(pod, container)
        self._update_readiness(pod)
        self._status_changed(pod)

    # --- deletion

    def _terminate(self, pod: _Pod, grace: float) -> None:
        if pod.gone or pod.lost:
            return  # a lost node never confirms: the pod stays Terminating
        for timer in pod.timers:
            timer.cancel()
        pod.timers.clear()
        for container in pod.containers:
            if container.state is not _Phase.RUNNING:
                container.cancel_timer()  # no more retries or restarts
        if not pod.running():
            self._confirm_stopped(pod)
            return
        if grace <= 0:
            self._kill_remaining(pod)
            return
        self._later(pod, grace, lambda: self._kill_remaining(pod), "grace period over")
        for container in pod.running():
            if container.waits_for_runner:
                self._run_runner_prestop(pod, container, self.loop.now)
            else:
                self._sigterm(pod, container)

    def _sigterm(self, pod: _Pod, container: _Container) -> None:
        if container.state is not _Phase.RUNNING:
            return
        if container.agent is not None:
            container.agent.terminate()  # ends through `_container_exited`, now or later
        else:
            self._container_exited(pod, container, 0)

    def _run_runner_prestop(self, pod: _Pod, container: _Container, began: datetime) -> None:
        """ARC's dind preStop: `timeout T sh -c 'while [ -f /runner/.runner ]; do sleep 1;
        done'`, then SIGTERM to dockerd, which exits 0."""
        container.timer = None
        if pod.gone or container.state is not _Phase.RUNNING:
            return
        elapsed = (self.loop.now - began).total_seconds()
        runner = pod.runner
        agent = runner.agent if runner is not None else None
        config_present = agent is not None and agent.config_files_present
        if not config_present or elapsed >= container.prestop_timeout:
            self._sigterm(pod, container)
            return
        wait = min(PRESTOP_POLL_SECONDS, container.prestop_timeout - elapsed)
        container.timer = self.loop.call_later(
            wait,
            lambda: self._run_runner_prestop(pod, container, began),
            f"kubelet: preStop {pod.name}/{container.name}",
        )

    def _kill_remaining(self, pod: _Pod) -> None:
        """SIGKILL at the end of the grace period."""
        if pod.gone:
            return
        for container in pod.running():
            container.cancel_timer()
            if container.agent is not None:
                container.agent.kill()
            container.state, container.exit_code = _Phase.TERMINATED, KILLED_EXIT_CODE
            container.reason, container.finished_at = "Error", self.loop.now
        self._update_readiness(pod)
        self._status_changed(pod)

    def _confirm_stopped(self, pod: _Pod) -> None:
        if pod.gone or pod.lost:
            return
        pod.gone = True
        self._count_load(pod)
        pod.cancel_timers()
        self.store.pod_terminated(pod.namespace, pod.name)

    # --- status

    def _update_readiness(self, pod: _Pod) -> None:
        if not pod.started:
            return
        waiting_or_stopped = [c.name for c in pod.containers if c.state is not _Phase.RUNNING]
        if not waiting_or_stopped:
            ready, reason = "True", ""
        elif pod.phase() in _TERMINAL:
            ready, reason = "False", "PodCompleted"
        else:
            ready, reason = "False", "ContainersNotReady"
        for condition in ("Ready", "ContainersReady"):
            self._set_condition(pod, condition, ready, reason)
        if pod.phase() in _TERMINAL:
            self._set_condition(pod, "PodReadyToStartContainers", "False")

    def _set_condition(self, pod: _Pod, kind: str, status: str, reason: str = "") -> None:
        previous = pod.conditions.get(kind)
        if previous is not None and previous[0] == status:
            if previous[1] != reason:
                pod.conditions[kind] = (status, reason, previous[2])
            return
        pod.conditions[kind] = (status, reason, self.loop.now)

    def _status_changed(self, pod: _Pod) -> None:
        """Write the pod's status once for every change made at this virtual instant."""
        if pod.status_pending:
            return
        pod.status_pending = True
        self.loop.call_soon(lambda: self._write_status(pod), f"kubelet: status {pod.name}")

    def _write_status(self, pod: _Pod) -> None:
        pod.status_pending = False
        if pod.gone or pod.lost:
            return
        pod.written_phase = pod.phase()
        self._count_load(pod)
        status: dict[str, Any] = {"phase": pod.written_phase}
        if pod.conditions:
            status["conditions"] = _conditions(pod)
        if pod.start_time is not None:
            status["startTime"] = _time(pod.start_time)
        if pod.scheduled:
            status["containerStatuses"] = [
                c.status(pod.uid) for c in sorted(pod.containers, key=lambda c: c.name)
            ]
        try:
            self.store.update_status(
                {
                    "kind": "Pod",
                    "metadata": {"namespace": pod.namespace, "name": pod.name},
                    "status": status,
                }
            )
        except NotFound:
            pod.gone = True
            self._count_load(pod)
            return
        if pod.terminating and not pod.running():
            self._confirm_stopped(pod)

    # --- small pieces

    def _later(self, pod: _Pod, seconds: float, action: Callable[[], None], what: str) -> None:
        pod.timers.append(self.loop.call_later(seconds, action, f"kubelet: {what} {pod.name}"))

    def _pod(self, namespace: str, name: str) -> _Pod | None:
        uid = self._uids.get((namespace, name))
        return self._pods.get(uid) if uid is not None else None


_TERMINAL = ("Succeeded", "Failed")
_CONDITION_ORDER = ("PodReadyToStartContainers", "Initialized", "Ready", "ContainersReady")


def _conditions(pod: _Pod) -> list[dict[str, Any]]:
    order = [*_CONDITION_ORDER, "PodScheduled"]
    conditions = []
    for kind in sorted(pod.conditions, key=order.index):
        status, reason, since = pod.conditions[kind]
        condition: dict[str, Any] = {
            "type": kind,
            "status": status,
            "lastProbeTime": None,
            "lastTransitionTime": _time(since),
        }
        if reason:
            condition["reason"] = reason
        if reason == "Unschedulable":
            condition["message"] = "no nodes available to schedule pods"
        conditions.append(condition)
    return conditions


def _restarts(restart_policy: str, exit_code: int) -> bool:
    return restart_policy == "Always" or (restart_policy == "OnFailure" and exit_code != 0)


def _new_container(spec: KubeObject) -> _Container:
    prestop = ((spec.get("lifecycle") or {}).get("preStop") or {}).get("exec") or {}
    command = " ".join(str(part) for part in prestop.get("command") or [])
    env = {item.get("name"): item.get("value") for item in spec.get("env") or []}
    return _Container(
        name=str(spec.get("name", "")),
        image=str(spec.get("image", "")),
        waits_for_runner=RUNNER_CONFIG_FILE in command,
        prestop_timeout=_seconds(env.get("RUNNER_GRACEFUL_STOP_TIMEOUT")),
    )


def _seconds(value: object) -> float:
    if value is None or value == "":
        return DEFAULT_GRACEFUL_STOP_TIMEOUT
    try:
        return max(float(str(value)), 0.0)
    except ValueError:
        return 0.0  # `timeout` refuses a non-number and the preStop ends at once


def _time(when: datetime | None) -> str | None:
    return format_time(when) if when is not None else None
