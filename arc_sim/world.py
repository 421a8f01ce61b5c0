"""The simulated world: every piece wired together and driven by one virtual-time loop.

Kubernetes API (`store`), Metacontroller (`emulator`, loading the manifests we ship), the hook
server replicas (in process, each with its own caches), the kubelet with its runner agents, a
StatefulSet controller, and GitHub with jobs and webhooks. A scenario adds the workload and the
timeline; `run()` returns the summary.
"""

from __future__ import annotations

import asyncio
import base64
import dataclasses
import random
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx

from arc_sim.admission import Admission, crds_under
from arc_sim.collector import collecting_rarely
from arc_sim.events import EventLoop
from arc_sim.fake_github import FakeGitHub
from arc_sim.github_port import InProcessGitHub
from arc_sim.github_state import FaultKnobs
from arc_sim.kube_port import StoreKube, run_in_place
from arc_sim.kubelet import Kubelet
from arc_sim.listeners import ListenerTiming, SimulatedListener
from arc_sim.metacontroller.emulator import MetacontrollerEmulator
from arc_sim.metacontroller.realism import Rngs
from arc_sim.metacontroller.transport import AsgiTransport, ReplicaFault
from arc_sim.runner_agent import runner_agent_factory
from arc_sim.scaleset_broker import ScaleSetBroker, in_process_transport
from arc_sim.scenario import PodSelection, Scenario, TimelineEntry
from arc_sim.server_side import github_side, kube_side
from arc_sim.statefulset import StatefulSetController
from arc_sim.store import KubeObject, NotFound, ObjectStore, StoreError, selector_matches
from arc_sim.summary import (
    ApiFigures,
    GitHubFigures,
    HookFigures,
    Invariants,
    JobFigures,
    RunnerFigures,
    RunnerTarget,
    Summary,
    runner_target,
)
from arc_sim.summary import unservable as summary_unservable
from arc_sim.webhooks import WebhookSender
from hooks.app import create_app
from hooks.clock import ManualClock
from hooks.github.cached import CachedGitHub
from hooks.github.credentials import ApiCredentials
from hooks.github.port import GitHubPort, Scope
from hooks.github.scaleset.client import ScaleSetClient
from hooks.github.scaleset.service import HOOK_RETRY, ScaleSetService, config_url
from hooks.github.shared_lists import RunnerListBoard
from hooks.kube.config_maps import KubeConfigMaps
from hooks.listener.sink import KubeListenerSink
from hooks.settings import Settings

START = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)  # a Monday morning
SIMULATED_PAT = "ghp_" + "s1mulat3d" * 4
WEBHOOK_SECRET = "simulated-webhook-secret"
WEBHOOK_PATH = "/webhook/github"
SETTLE_STEP_SECONDS = 30.0
ARC_GROUP = "actions.summerwind.dev"


HOOK_TOKEN_NAMESPACE = "arc-hooks"
HOOK_TOKEN_SECRET = "arc-hooks-hook-token"
"""The Secret the shipped controllers' endpointConfigs name (see metacontroller/hooks.yaml)."""


def hook_token_secret(token: str) -> KubeObject:
    """The Secret Metacontroller reads the hooks' Bearer token from, as users create it."""
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": HOOK_TOKEN_SECRET, "namespace": HOOK_TOKEN_NAMESPACE},
        "type": "Opaque",
        "data": {"token": base64.b64encode(token.encode()).decode()},
    }


def default_manifests() -> Path:
    """The manifests users install (`metacontroller/`, shipped with this package): the
    simulation runs what users install."""
    return Path(__file__).resolve().parent / "manifests"


class World:
    def __init__(self, scenario: Scenario, *, manifests: Path | None = None) -> None:
        self.scenario = scenario
        self.clock = ManualClock(START)
        self.loop = EventLoop(self.clock, scenario.seed)
        # The API server serves the built-in kinds and the CRDs of the manifests (added below).
        self.store = ObjectStore(self.clock, admission=Admission(serve_unknown_kinds=False))
        self.github = self._github(scenario)
        knobs = scenario.listeners
        # The Actions service's scale-set side, beside GitHub (it claims the jobs of scale sets).
        self.broker = ScaleSetBroker(
            self.github,
            session_timeout=knobs.session_timeout,
            assign_delay=knobs.assign_delay,
            seed=scenario.seed,
        )
        # Metacontroller calls the hooks with the token users put in a Secret, as on a cluster.
        self.hook_token = f"{random.Random(scenario.seed).getrandbits(128):032x}"
        self.store.create(hook_token_secret(self.hook_token))
        self.settings = Settings.model_validate(
            {
                "GITHUB_TOKEN": SIMULATED_PAT,
                "GITHUB_WEBHOOK_SECRET_TOKEN": WEBHOOK_SECRET,
                "HOOK_BEARER_TOKEN": self.hook_token,
                # As the manifests deploy it: the replicas share the runner lists.
                "SHARED_RUNNER_LISTS_NAMESPACE": HOOK_TOKEN_NAMESPACE,
                **{name: str(value) for name, value in scenario.settings.items()},
            }
        )
        self.realism = scenario.metacontroller.realism(scenario.seed, scenario.github.latency)
        # Hook calls overlapping in threads reach the world one at a time (arc_sim/server_side).
        self.world_lock = threading.RLock()
        self.apps = [self._hook_replica() for _ in range(scenario.hook_replicas)]
        listener_kube = KubeListenerSink(
            kube_side(StoreKube(self.store), self.world_lock), run_in_place
        )
        timing = ListenerTiming(knobs.poll_seconds, knobs.refresh_seconds)
        self.listeners = [
            SimulatedListener(
                index, self.loop, self.clock, self._scale_set_client, listener_kube, timing
            )
            for index in range(knobs.replicas)
        ]
        self.transport = AsgiTransport(
            self.apps,
            random.Random(scenario.seed * 7919 + 1),
            clock=self.clock,
            restart=lambda _index: self._hook_replica(),
            restart_rate=self.realism.replica_restart_rate,
            restart_rng=Rngs(scenario.seed).restarts,
            threads=self.realism.concurrency == "threads",
        )
        self.emulator = MetacontrollerEmulator(
            self.store, self.loop, self.transport, realism=self.realism
        )
        directory = manifests or default_manifests()
        if not directory.is_dir():
            raise FileNotFoundError(f"{directory} not found: no manifests to load")
        self.emulator.load_directory(directory)
        for crd in crds_under(directory):
            self.store.admission.add_crd(crd)
        cluster = scenario.cluster
        delay = cluster.registration_delay
        self.kubelet = Kubelet(
            self.store,
            self.loop,
            nodes=tuple(f"node-{i + 1}" for i in range(cluster.nodes)),
            schedule_delay=cluster.schedule_delay,
            start_delay=cluster.start_delay,
            agent_factory=runner_agent_factory(
                store=self.store,
                github=self.github,
                loop=self.loop,
                registration_delay=(delay * 0.5, delay * 1.5),
            ),
        )
        self.statefulsets = StatefulSetController(self.store, self.loop)
        self.webhooks = WebhookSender(
            self.loop,
            self._deliver_webhook,
            secret=WEBHOOK_SECRET,
            loss_rate=scenario.webhooks.loss_rate,
            duplicate_rate=scenario.webhooks.duplicate_rate,
            delay_seconds=scenario.webhooks.delay,
        )
        self.webhooks.watch(self.github)
        self._webhook_loop = asyncio.new_event_loop()
        self.notes: list[str] = []
        """Timeline actions that could not be carried out, and why."""
        self._applied: list[tuple[str, str, str]] = []
        self.failed_applies: list[str] = []
        """Objects of the scenario (at t=0 or on the timeline) the API server refused."""
        self.applies = 0
        self.runner_targets: list[RunnerTarget] = []
        """What every Runner, RunnerDeployment, RunnerReplicaSet and RunnerSet applied asked
        for (scope and labels), to tell the jobs no runner could ever take."""
        self._runner_pods: set[str] = set()
        self.runner_pods_created = 0
        self.runner_pods_peak = 0
        self.store.watch(self._count_runner_pods)

    # ------------------------------------------------------------------ setup

    def _github(self, scenario: Scenario) -> FakeGitHub:
        knobs = scenario.github
        github = FakeGitHub(
            self.clock,
            token_ttl_seconds=knobs.token_ttl,
            rate_limit_per_hour=knobs.rate_limit_per_hour,
            seed=scenario.seed,
        )
        github.add_personal_access_token(SIMULATED_PAT)
        for token, organizations in knobs.tokens.items():
            github.add_personal_access_token(token, organizations or None)
        github.configure_faults(
            FaultKnobs(error_rate=knobs.error_rate, latency_seconds=knobs.latency)
        )
        for organization, enterprise in scenario.organizations.items():
            github.set_enterprise_of(organization, enterprise)
        return github

    def _hook_replica(self) -> Any:
        lock = self.world_lock
        github = InProcessGitHub(self.github, SIMULATED_PAT, self.clock)
        port = github_side(github, lock)
        kube = kube_side(StoreKube(self.store), lock)
        board = None
        if self.settings.shared_runner_lists_namespace:
            config_maps = KubeConfigMaps(kube, run_in_place)
            namespace = self.settings.shared_runner_lists_namespace
            board = RunnerListBoard(config_maps, namespace, self.clock)
        cached = CachedGitHub(
            port, self.settings, self.clock, board=board, rate_budget=github.rate_budget
        )
        return create_app(
            self.settings,
            github=cached,
            clock=self.clock,
            github_blocks=False,  # overlapping calls run on threads of their own (transport)
            kube=kube,
            build_credentials_port=self._credentials_port,
            scale_sets=ScaleSetService(self._scale_set_client, self.clock),
        )

    def _scale_set_client(self, scope: Scope) -> ScaleSetClient:
        """The scale-set API of a scope, over the real client, in process (no socket)."""
        transport = in_process_transport(self.broker, lambda: self.world_lock)
        return ScaleSetClient(
            config_url(self.settings, scope),
            lambda: SIMULATED_PAT,
            clock=self.clock,
            sleep=lambda _seconds: None,  # virtual time: a retry does not wait
            retry=HOOK_RETRY,
            http=httpx.Client(transport=transport),
        )

    def _credentials_port(self, credentials: ApiCredentials) -> GitHubPort:
        """A resource's own credentials Secret: its token on the same fake GitHub."""
        if not credentials.token:
            raise ValueError("the simulated world takes github_token credentials only")
        port = InProcessGitHub(
            self.github, credentials.token, self.clock, credentials=credentials.source
        )
        return CachedGitHub(
            github_side(port, self.world_lock),
            self.settings,
            self.clock,
            rate_budget=port.rate_budget,
        )

    def _deliver_webhook(self, headers: dict[str, str], body: bytes) -> int:
        """GitHub posts to the webhook receiver of one hook replica."""
        app = self.apps[self.loop.rng.randrange(len(self.apps))]
        return self._webhook_loop.run_until_complete(_post(app, WEBHOOK_PATH, headers, body))

    def _count_runner_pods(self, event: str, obj: KubeObject) -> None:
        if obj.get("kind") != "Pod" or "actions-runner" not in (
            obj["metadata"].get("labels") or {}
        ):
            return
        uid = obj["metadata"]["uid"]
        if event == "ADDED":
            self.runner_pods_created += 1
            self._runner_pods.add(uid)
            self.runner_pods_peak = max(self.runner_pods_peak, len(self._runner_pods))
        elif event == "DELETED":
            self._runner_pods.discard(uid)

    # ------------------------------------------------------------------ running

    def run(self, progress: Callable[[World], None] | None = None) -> Summary:
        """The whole scenario: start, run for its duration, tear down, summarize."""
        started = time.perf_counter()
        self.begin()
        self._run_until(self._at(self.scenario.duration), progress)
        summary = self.finish(progress)
        summary.wall_seconds = round(time.perf_counter() - started, 2)
        return summary

    def begin(self) -> None:
        """Start Metacontroller, apply the objects, schedule the timeline and the jobs."""
        scenario = self.scenario
        self.emulator.start()
        for listener in self.listeners:
            self.loop.call_soon(listener.start, "listener start")
        for index, obj in enumerate(scenario.objects):
            self._apply_from_scenario(obj, f"objects[{index}]")
        for entry in scenario.timeline:
            self.loop.call_at(self._at(entry.at), self._action(entry), f"timeline {entry.action}")
        for stream in scenario.jobs:
            for index in range(stream.count):
                when = self._at(stream.start + index * stream.every)
                self.loop.call_at(
                    when, self._submitter(stream.repository, stream.labels, stream.duration), "job"
                )

    def run_to(self, seconds: float) -> None:
        """Advance virtual time to `seconds` after the start (for tests that look inside)."""
        self._run_until(self._at(seconds), None)

    def finish(self, progress: Callable[[World], None] | None = None) -> Summary:
        """Tear down (when the scenario says so) and summarize."""
        problems = self.reported_problems()
        if self.scenario.teardown:
            converged = self.teardown(progress)
        else:
            errors_before = sum(self.emulator.errors.values())
            self._run_until(self.clock.now() + timedelta(minutes=5), progress)
            converged = sum(self.emulator.errors.values()) == errors_before
        summary = self.summary(converged)
        summary.problems = problems
        return summary

    def reported_problems(self) -> list[str]:
        """The conditions by which the scenario's own ARC objects say something is wrong
        (`PROBLEM_CONDITIONS`), one line each:
        `Kind namespace/name: Type=Status Reason: message`."""
        problems = []
        for key in self._applied:
            obj = self.store.get(*key)
            if obj is None or not _is_arc(obj):
                continue
            status = obj.get("status")
            conditions = status.get("conditions") if isinstance(status, dict) else None
            for condition in conditions if isinstance(conditions, list) else []:
                if not isinstance(condition, dict):
                    continue
                kind, state = condition.get("type"), condition.get("status")
                if (kind, state) not in PROBLEM_CONDITIONS:
                    continue
                metadata = obj["metadata"]
                where = f"{obj.get('kind')} {metadata.get('namespace')}/{metadata.get('name')}"
                parts = (condition.get("reason"), condition.get("message"))
                said = ": ".join(str(part) for part in parts if part)
                problems.append(f"{where}: {kind}={state}" + (f" {said}" if said else ""))
        return problems

    def _run_until(self, end: datetime, progress: Callable[[World], None] | None) -> None:
        step = timedelta(minutes=1)
        with collecting_rarely():
            while self.clock.now() < end:
                self.loop.run_until(min(self.clock.now() + step, end))
                if progress is not None:
                    progress(self)

    def teardown(self, progress: Callable[[World], None] | None = None) -> bool:
        """Uninstall as the README says: delete the runner resources the scenario applied, wait
        until they are gone, then delete the rest (the Secrets they may use to unregister)."""
        arc = [key for key in reversed(self._applied) if _is_arc(self.store.get(*key) or {})]
        self._delete(arc)
        deadline = self.clock.now() + timedelta(seconds=self.scenario.quiet_period)
        settled = self._settled()
        while not settled and self.clock.now() < deadline:
            self._run_until(self.clock.now() + timedelta(seconds=SETTLE_STEP_SECONDS), progress)
            settled = self._settled()
        self._delete([key for key in reversed(self._applied) if key not in arc])
        return settled

    def _delete(self, keys: list[tuple[str, str, str]]) -> None:
        for kind, namespace, name in keys:
            try:
                self.store.delete(kind, namespace, name)
            except NotFound:
                continue

    def _settled(self) -> bool:
        return not self.store.any_object(lambda obj: _is_arc(obj) or _is_runner_pod(obj))

    # ------------------------------------------------------------------ actions

    def apply(self, obj: KubeObject) -> None:
        """`kubectl apply`: create, or replace the spec of what exists. Like kubectl, it asks
        for strict field validation: an unknown field is refused, not dropped. Raises the
        store's error when the API server refuses the object."""
        schema = self.store.admission.schema(str(obj.get("apiVersion")), str(obj.get("kind")))
        namespace = {"namespace": "default"} if schema is None or schema.namespaced else {}
        manifest = {**obj, "metadata": {**namespace, **obj.get("metadata", {})}}
        metadata = manifest["metadata"]
        key = (manifest["kind"], metadata.get("namespace") or "", metadata["name"])
        current = self.store.get(*key)
        if current is None:
            self.store.create(manifest, field_validation="Strict")
            self._applied.append(key)
            self._applied_ok(manifest)
            return
        merged = {
            **current,
            **{k: v for k, v in manifest.items() if k not in ("metadata", "status")},
        }
        merged["metadata"] = {
            **current["metadata"],
            "labels": metadata.get("labels", current["metadata"].get("labels", {})),
            "annotations": metadata.get("annotations", current["metadata"].get("annotations", {})),
        }
        merged["metadata"].pop("resourceVersion", None)
        self.store.update(merged, field_validation="Strict")
        self._applied_ok(manifest)

    def _applied_ok(self, manifest: KubeObject) -> None:
        self.applies += 1
        target = runner_target(manifest)
        if target is not None:
            if manifest.get("kind") in ("RunnerDeployment", "RunnerSet"):
                # Their runners also carry the server's COMMON_RUNNER_LABELS.
                common = tuple(self.settings.common_runner_labels)
                target = dataclasses.replace(target, labels=(*target.labels, *common))
            self.runner_targets.append(target)

    def _apply_from_scenario(self, obj: KubeObject, where: str) -> None:
        """An apply of the scenario: a refusal is a failed apply, reported in the summary."""
        try:
            self.apply(obj)
        except StoreError as error:
            self.failed_applies.append(f"{where} {_describe(obj)}: {error}")

    def _action(self, entry: TimelineEntry) -> Callable[[], None]:
        def act() -> None:
            if entry.apply is not None:
                self._apply_from_scenario(entry.apply, f"timeline apply at {entry.at:g}s")
                return
            try:
                self._perform(entry)
            except StoreError as error:  # e.g. deleting what is already gone
                self.notes.append(f"{entry.action} at {entry.at:g}s: {error}")

        return act

    def _perform(self, entry: TimelineEntry) -> None:
        if entry.apply is not None:
            self.apply(entry.apply)
        elif entry.delete is not None:
            ref = entry.delete
            self.store.delete(ref.kind, ref.namespace, ref.name)
        elif entry.evict_pods is not None:
            for pod in self._pick_pods(entry.evict_pods):
                self.kubelet.evict(pod["metadata"]["namespace"], pod["metadata"]["name"])
        elif entry.delete_pods is not None:
            for pod in self._pick_pods(entry.delete_pods):
                self.store.delete("Pod", pod["metadata"]["namespace"], pod["metadata"]["name"])
        elif entry.lose_node is not None:
            self.kubelet.lose_node(entry.lose_node)
        elif entry.drain_node is not None:
            # `kubectl drain`: cordon, then evict every pod on the node.
            for key in self.kubelet.cordon(entry.drain_node):
                namespace, name = key.split("/", 1)
                running = self.store.get("Pod", namespace, name)
                if running is not None and not running["metadata"].get("deletionTimestamp"):
                    self.kubelet.evict(namespace, name)
        elif entry.add_node is not None:
            self.kubelet.add_node(entry.add_node)
        elif entry.hook_outage is not None:
            outage = entry.hook_outage
            error: Any = "timeout" if outage.mode == "timeout" else 503
            until = self.clock.now() + timedelta(seconds=outage.duration)
            self.transport.break_replica(
                outage.replica % len(self.apps), ReplicaFault(error=error, until=until)
            )
        elif entry.github_outage is not None:
            self._github_outage(entry.github_outage.duration, entry.github_outage.mode)
        elif entry.restart_listener is not None:
            restart = entry.restart_listener
            if not self.listeners:
                self.notes.append(f"restart_listener at {entry.at:g}s: no listener replicas")
                return
            replica = self.listeners[restart.replica % len(self.listeners)]
            replica.stop(crash=restart.crash)
            self.loop.call_later(restart.down, replica.start, "listener start")
        elif entry.broker_outage is not None:
            self.broker.unavailable_for(entry.broker_outage.duration)

    def _github_outage(self, seconds: float, mode: str) -> None:
        if mode == "rateLimit":
            self.github.impose_secondary_rate_limit(seconds)
            return
        knobs = self.scenario.github
        self.github.configure_faults(FaultKnobs(error_rate=1.0, latency_seconds=knobs.latency))
        restore = FaultKnobs(error_rate=knobs.error_rate, latency_seconds=knobs.latency)
        self.loop.call_later(seconds, lambda: self.github.configure_faults(restore))

    def _pick_pods(self, selection: PodSelection) -> list[KubeObject]:
        pods = [
            pod
            for pod in self.store.list_objects("Pod", selection.namespace)
            if not pod["metadata"].get("deletionTimestamp")
            and selector_matches(selection.label_selector, pod["metadata"].get("labels") or {})
        ]
        return pods[: selection.count]

    def _submitter(self, repository: str, labels: list[str], duration: float) -> Callable[[], None]:
        return lambda: self._submit(repository, labels, duration)

    def _submit(self, repository: str, labels: list[str], duration: float) -> None:
        self.github.submit_job(repository, labels, duration)

    def _at(self, seconds: float) -> datetime:
        return START + timedelta(seconds=seconds)

    # ------------------------------------------------------------------ summary

    def summary(self, converged: bool) -> Summary:
        jobs = self.github.job_summary()
        leaked = self.leaked_registrations()
        counts = self.github.request_counts()
        rate_limited = sum(1 for r in self.github.requests if r.status in (403, 429))
        hook_calls = self.emulator.hook_calls
        all_jobs = self.github.jobs()
        unfinished = [job for job in all_jobs if job.status != "completed"]
        unservable = {
            job.id
            for job in summary_unservable(
                unfinished, self.runner_targets, self.github.enterprise_of
            )
        }
        stranded = [
            job for job in all_jobs if job.status != "completed" and job.id not in unservable
        ]
        return Summary(
            scenario=self.scenario.name,
            seed=self.scenario.seed,
            virtual_seconds=(self.clock.now() - START).total_seconds(),
            jobs=JobFigures(
                submitted=jobs.submitted,
                completed=jobs.completed,
                interrupted=jobs.interrupted,
                waiting=jobs.waiting + jobs.in_progress,
                unservable=len(unservable),
                p50_queue_seconds=round(jobs.queue_seconds_p50, 1),
                max_queue_seconds=round(jobs.queue_seconds_max, 1),
            ),
            runners=RunnerFigures(
                created=self.runner_pods_created,
                peak=self.runner_pods_peak,
                registered_at_end=jobs.runners_registered_now,
                leaked_registrations=len(leaked),
            ),
            github=GitHubFigures(
                api_calls=sum(counts.values()),
                rate_limited=rate_limited,
                peak_budget_percent=round(100 * self.github.peak_budget_use(), 1),
                by_endpoint=dict(sorted(counts.items())),
            ),
            hooks=HookFigures(
                calls=sum(hook_calls.values()),
                errors=sum(self.emulator.errors.values()),
                by_path=dict(sorted(hook_calls.items())),
                **self._metacontroller_figures(),
            ),
            api=ApiFigures(
                applied=self.applies,
                failed_applies=len(self.failed_applies),
                failures=list(self.failed_applies),
                refused_writes=self.store.refused,
                pruned_fields=self.store.pruned_fields,
            ),
            invariants=Invariants(
                no_interrupted_jobs=jobs.interrupted == 0,
                no_leaked_registrations=not leaked,
                converged=converged,
                no_hook_timeouts=self.emulator.stats.timeouts_exceeded == 0,
                no_failed_applies=not self.failed_applies,
                servable_jobs_completed=not stranded,
            ),
        )

    def _metacontroller_figures(self) -> dict[str, Any]:
        stats = self.emulator.stats
        return {
            "timeouts_exceeded": stats.timeouts_exceeded,
            "injected_timeouts": stats.injected_timeouts,
            "max_latency_seconds": round(stats.max_hook_latency, 3),
            "conflicts": stats.conflicts,
            "max_informer_lag_seconds": round(stats.max_informer_lag, 3),
            "client_rate_limit_waits": stats.client_waits,
            "client_rate_limit_wait_seconds": round(stats.client_wait_seconds, 3),
        }

    @property
    def scenario_start(self) -> datetime:
        return START

    def live_runner_pods(self) -> int:
        return len(self._runner_pods)

    def leaked_registrations(self) -> list[str]:
        """Registrations on GitHub that no live runner pod owns."""
        live = {
            pod["metadata"]["name"]
            for pod in self.store.list_objects("Pod")
            if _is_runner_pod(pod) and not pod["metadata"].get("deletionTimestamp")
        }
        return sorted(
            record.name for record in self.github.runner_records() if record.name not in live
        )


def _describe(obj: KubeObject) -> str:
    metadata = obj.get("metadata") or {}
    namespace = metadata.get("namespace") or "default"
    return f"{obj.get('kind')} {namespace}/{metadata.get('name')}"


PROBLEM_CONDITIONS = frozenset({("Valid", "False"), ("ScalingActive", "False"), ("Failed", "True")})
"""Conditions by which an object says something is wrong with it."""


def _is_arc(obj: KubeObject) -> bool:
    return str(obj.get("apiVersion", "")).startswith(ARC_GROUP + "/")


def _is_runner_pod(obj: KubeObject) -> bool:
    return obj.get("kind") == "Pod" and "actions-runner" in (obj["metadata"].get("labels") or {})


async def _post(app: Any, path: str, headers: dict[str, str], body: bytes) -> int:
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "root_path": "",
        "headers": [(k.lower().encode(), v.encode()) for k, v in headers.items()],
        "client": ("140.82.112.1", 443),
        "server": ("arc-hooks", 80),
    }
    status = 0
    sent = False

    async def receive() -> dict[str, Any]:
        nonlocal sent
        if sent:
            return {"type": "http.disconnect"}
        sent = True
        return {"type": "http.request", "body": body, "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        nonlocal status
        if message["type"] == "http.response.start":
            status = int(message["status"])

    await app(scope, receive, send)
    return status
