"""The scale-set listener (hooks/listener) and the hooks' scale-set service
(hooks/github/scaleset/service.py) against the simulated broker over loopback HTTP.

Jobs are queued on the fake GitHub with `runs-on` naming the scale set, so the broker offers
them; runners are registered with the broker's JIT configs and take jobs through the fake
GitHub, as in the simulated world. The listener runs a step at a time on the virtual clock;
what it writes goes to a recording sink, or to the object store through the Kubernetes sink.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

import httpx
import pytest
from hypothesis import given
from hypothesis import strategies as st
from prometheus_client import generate_latest

from arc_sim.fake_github import FakeGitHub
from arc_sim.kube_port import StoreKube, run_in_place
from arc_sim.loopback import serve_loopback
from arc_sim.scaleset_broker import ScaleSetBroker, build_app
from arc_sim.store import ObjectStore
from hooks.clock import ManualClock, parse_time
from hooks.github.offline import WouldBlock, offline
from hooks.github.port import ConflictError, RateLimitedError, Scope
from hooks.github.scaleset import RetryPolicy, RunnerScaleSetSpec, ScaleSetClient
from hooks.github.scaleset.models import JobStarted
from hooks.github.scaleset.service import ScaleSetService
from hooks.listener.fleet import ListenerFleet
from hooks.listener.metrics import LISTENER_REGISTRY, PrometheusObserver
from hooks.listener.run import ListenerProcess
from hooks.listener.sink import KubeListenerSink
from hooks.listener.targets import ListenerTarget, find_targets
from hooks.listener.worker import (
    DIP_HOLD_SECONDS,
    MIN_BACKOFF_SECONDS,
    STANDBY_SECONDS,
    ScaleSetListener,
)
from hooks.scale_set_mode import (
    ASSIGNED_JOBS_ANNOTATION,
    ASSIGNED_JOBS_TIME_ANNOTATION,
    JOB_STARTED_ANNOTATION,
)

PAT = "ghp_" + "L1stener" * 4
ORG = Scope(organization="acme")
MESSAGES = "GET /_apis/runtime/messagequeues/{sid}/messages"


@dataclass
class RecordingSink:
    assigned: list[int] = field(default_factory=list)
    times: list[str] = field(default_factory=list)
    started: list[str] = field(default_factory=list)

    def write_assigned_jobs(self, target: ListenerTarget, assigned: int, counted_at: str) -> None:
        self.assigned.append(assigned)
        self.times.append(counted_at)

    def mark_job_started(self, target: ListenerTarget, job: JobStarted) -> None:
        self.started.append(job.runner_name)


@dataclass
class Setup:
    clock: ManualClock
    github: FakeGitHub
    broker: ScaleSetBroker
    client: ScaleSetClient
    target: ListenerTarget

    def listener(self, sink: RecordingSink, owner: str = "listener-0") -> ScaleSetListener:
        return ScaleSetListener(self.client, self.target, sink, owner=owner, clock=self.clock)

    def queue(self, count: int) -> list[int]:
        return [self.github.submit_job("acme/app", ["arc"], 120).id for _ in range(count)]

    def runner(self, name: str) -> int:
        """A member that registered and connected: it takes the jobs assigned to the set."""
        config = self.client.generate_jit_runner_config(self.target.scale_set_id, name)
        runner = self.github.register_jit(config.encoded_jit_config.get_secret_value())
        self.github.set_online(ORG, runner.id)
        return runner.id


@pytest.fixture(scope="module")
def server() -> Iterator[tuple[str, dict[str, object]]]:
    apps: dict[str, object] = {}

    async def app(scope: object, receive: object, send: object) -> None:
        await apps["app"](scope, receive, send)  # type: ignore[operator]

    with serve_loopback(app) as url:
        yield url, apps


@pytest.fixture
def setup(server: tuple[str, dict[str, object]]) -> Iterator[Setup]:
    url, apps = server
    clock = ManualClock()
    github = FakeGitHub(clock)
    github.add_personal_access_token(PAT)
    broker = ScaleSetBroker(github, session_timeout=300)
    apps["app"] = build_app(broker)
    with httpx.Client() as http:
        client = ScaleSetClient(
            f"{url}/acme",
            lambda: PAT,
            clock=clock,
            sleep=clock.advance,
            retry=RetryPolicy(retry_max=0),
            http=http,
        )
        scale_set = client.create_runner_scale_set(RunnerScaleSetSpec(name="arc"))
        target = ListenerTarget(
            namespace="default",
            deployment="arc",
            scope=ORG,
            scale_set_id=scale_set.id,
            scale_set_name="arc",
            autoscaler="arc",
            min_runners=0,
            max_runners=10,
        )
        yield Setup(clock, github, broker, client, target)


def run(listener: ScaleSetListener, steps: int = 6) -> None:
    for _ in range(steps):
        listener.step()


def test_a_listener_acquires_the_offered_jobs_and_publishes_how_many_are_assigned(
    setup: Setup,
) -> None:
    sink = RecordingSink()
    listener = setup.listener(sink)
    listener.step()
    assert listener.has_session and sink.assigned == [0]  # the session's statistics, at once
    jobs = setup.queue(3)
    run(listener)
    assert [setup.broker.job(r).status for r in range(1, 4)] == ["assigned"] * 3
    assert sink.assigned[-1] == 3
    assert setup.broker.statistics(setup.target.scale_set_id)["totalAssignedJobs"] == 3
    # Each message was acknowledged: none is delivered again.
    assert setup.broker.scale_set(setup.target.scale_set_id).messages == []
    assert len(jobs) == 3


def test_no_more_jobs_are_offered_than_the_autoscaler_allows(setup: Setup) -> None:
    setup.target = ListenerTarget(**{**setup.target.__dict__, "max_runners": 2})
    sink = RecordingSink()
    listener = setup.listener(sink)
    setup.queue(5)
    run(listener, 10)
    assert setup.broker.statistics(setup.target.scale_set_id)["totalAssignedJobs"] == 2
    assert max(sink.assigned) == 2


def test_the_runner_that_starts_a_job_is_marked_and_completion_lowers_the_count(
    setup: Setup,
) -> None:
    sink = RecordingSink()
    listener = setup.listener(sink)
    runner_id = setup.runner("arc-runner-1")
    (job_id,) = setup.queue(1)
    run(listener)
    assert sink.started == ["arc-runner-1"]
    assert sink.assigned[-1] == 1  # running jobs are assigned jobs
    assert setup.github.job(job_id).runner_id == runner_id
    setup.github.complete_job(job_id)
    run(listener)
    assert sink.assigned[-1] == 1  # a lower count stands a moment before it is published
    setup.clock.advance(DIP_HOLD_SECONDS)
    run(listener)
    assert sink.assigned[-1] == 0


def test_a_moments_dip_in_the_count_is_never_published(setup: Setup) -> None:
    """A job ends and the next is assigned a moment later, in another message: the set must
    not shrink for the dip between them (it would delete an idle runner, then create one)."""
    sink = RecordingSink()
    listener = setup.listener(sink)
    setup.runner("arc-runner-1")
    (first,) = setup.queue(1)
    run(listener)
    assert sink.assigned[-1] == 1
    setup.github.complete_job(first)
    run(listener)  # the completion's message: the count is 0
    setup.clock.advance(DIP_HOLD_SECONDS / 2)
    setup.queue(1)
    run(listener)  # the next job's: 1 again, before the dip stood long enough
    setup.clock.advance(DIP_HOLD_SECONDS * 2)
    run(listener)

    assert sink.assigned[-1] == 1
    first_assigned = sink.assigned.index(1)
    assert 0 not in sink.assigned[first_assigned:]


def test_counts_are_published_with_strictly_increasing_times(setup: Setup) -> None:
    sink = RecordingSink()
    listener = setup.listener(sink)
    for _ in range(4):
        setup.queue(1)
        run(listener, 3)  # no clock movement at all: the times must still increase
    times = [parse_time(text) for text in sink.times]
    assert len(times) >= 4
    assert all(a < b for a, b in itertools.pairwise(times))


def test_a_second_listener_stands_by_without_publishing_and_takes_over_from_githubs_count(
    setup: Setup,
) -> None:
    first_sink, second_sink = RecordingSink(), RecordingSink()
    first = setup.listener(first_sink, "listener-0")
    second = setup.listener(second_sink, "listener-1")
    first.step()
    setup.queue(4)
    run(first)
    assert second.step().after == STANDBY_SECONDS
    assert not second.has_session and second_sink.assigned == []
    first.close()  # a clean stop deletes the session
    second.step()
    # The count comes from GitHub's statistics, not from anything the first one knew.
    assert second.has_session and second_sink.assigned == [4]


def test_a_crashed_listeners_session_blocks_until_it_expires_then_the_count_resumes(
    setup: Setup,
) -> None:
    crashed = setup.listener(RecordingSink(), "listener-0")
    setup.queue(2)
    run(crashed)
    crashed.forget_session()  # no delete: the session stays until the service expires it
    sink = RecordingSink()
    restarted = setup.listener(sink, "listener-0b")
    assert restarted.step().after == STANDBY_SECONDS
    setup.clock.advance(301)
    restarted.step()
    assert restarted.has_session and sink.assigned == [2]


def test_an_unavailable_service_is_retried_with_a_growing_backoff_and_loses_nothing(
    setup: Setup,
) -> None:
    sink = RecordingSink()
    listener = setup.listener(sink)
    listener.step()
    setup.broker.unavailable_for(300)
    setup.queue(3)
    waits = [listener.step().after for _ in range(3)]
    assert waits == [MIN_BACKOFF_SECONDS, 2 * MIN_BACKOFF_SECONDS, 4 * MIN_BACKOFF_SECONDS]
    setup.clock.advance(300)
    run(listener)
    assert sink.assigned[-1] == 3


@pytest.mark.parametrize(("method", "path"), [("POST", "*acquirejobs"), ("DELETE", "*/messages/*")])
def test_jobs_offered_while_an_acquire_or_a_delete_fails_are_taken_in_a_new_session(
    setup: Setup, method: str, path: str
) -> None:
    """Found by a hostile probe: the service offers a job once per session, so jobs offered
    while the acquire (or the message's delete) failed were never offered again, and kept
    counting against the capacity the listener sends: 5 of 80 jobs never ran, 65 of 80 after
    ten failures. GitHub's listener exits there and restarts with a new session."""
    sink = RecordingSink()
    listener = setup.listener(sink)
    listener.step()
    setup.broker.fail_next(503, method=method, path=path)
    setup.queue(3)

    wait = listener.step()

    assert wait.after == MIN_BACKOFF_SECONDS
    assert not listener.has_session  # given up, and deleted: no standby for its expiry
    run(listener)
    assert listener.counts.sessions_opened == 2
    assert [setup.broker.job(r).status for r in range(1, 4)] == ["assigned"] * 3
    assert sink.assigned[-1] == 3


def test_sessions_given_up_in_a_row_back_off_more_each_time(setup: Setup) -> None:
    listener = setup.listener(RecordingSink())
    listener.step()
    waits = []
    for _ in range(3):
        setup.broker.fail_next(503, method="POST", path="*acquirejobs")
        setup.queue(1)
        waits.append(listener.step().after)  # poll, acquire fails: given up
        listener.step()  # a new session
    assert waits == [MIN_BACKOFF_SECONDS, 2 * MIN_BACKOFF_SECONDS, 4 * MIN_BACKOFF_SECONDS]


def test_a_session_given_up_whose_delete_fails_is_deleted_before_the_next_is_opened(
    setup: Setup,
) -> None:
    """Found in review: with the session's DELETE failing too, the service kept the session
    given up, and refused each new one as if another listener held it (a standby of 30 s a
    try) until it expired: nothing was acquired for minutes."""
    sink = RecordingSink()
    listener = setup.listener(sink)
    listener.step()
    setup.broker.fail_next(503, method="POST", path="*acquirejobs")
    setup.broker.fail_next(503, method="DELETE", path="*sessions*")
    setup.queue(3)

    listener.step()  # the acquire fails; so does deleting the session
    setup.clock.advance(MIN_BACKOFF_SECONDS)
    run(listener)

    assert listener.counts.conflicts == 0
    assert listener.counts.sessions_opened == 2
    assert [setup.broker.job(r).status for r in range(1, 4)] == ["assigned"] * 3
    assert sink.assigned[-1] == 3


def test_a_throttled_acquire_gives_the_session_up_for_as_long_as_the_service_asks(
    setup: Setup,
) -> None:
    listener = setup.listener(RecordingSink())
    listener.step()
    setup.broker.fail_next(429, method="POST", path="*acquirejobs", retry_after=90)
    setup.queue(1)

    assert listener.step().after == 90
    assert not listener.has_session


def test_a_session_the_service_no_longer_knows_is_opened_again(setup: Setup) -> None:
    sink = RecordingSink()
    listener = setup.listener(sink)
    listener.step()
    session = setup.broker.scale_set(setup.target.scale_set_id).session
    assert session is not None
    setup.client.delete_message_session(setup.target.scale_set_id, session.id)
    assert listener.step().after == 0.0  # the poll is refused: the session is dropped
    assert not listener.has_session
    setup.queue(1)
    run(listener)
    assert listener.has_session and listener.counts.sessions_opened == 2
    assert sink.assigned[-1] == 1


def test_the_kubernetes_sink_writes_annotations_the_hooks_read(setup: Setup) -> None:
    store = ObjectStore(setup.clock)
    store.create(
        {
            "apiVersion": "actions.summerwind.dev/v1alpha1",
            "kind": "HorizontalRunnerAutoscaler",
            "metadata": {"name": "arc", "namespace": "default"},
            "spec": {"scaleTargetRef": {"name": "arc"}, "minReplicas": 0, "maxReplicas": 10},
        }
    )
    store.create(
        {
            "apiVersion": "actions.summerwind.dev/v1alpha1",
            "kind": "Runner",
            "metadata": {"name": "arc-runner-1", "namespace": "default"},
            "spec": {"organization": "acme"},
        }
    )
    sink = KubeListenerSink(StoreKube(store), run_in_place)
    listener = ScaleSetListener(
        setup.client, setup.target, sink, owner="listener-0", clock=setup.clock
    )
    setup.runner("arc-runner-1")
    setup.queue(2)
    run(listener)
    hra = store.get("HorizontalRunnerAutoscaler", "default", "arc")
    runner = store.get("Runner", "default", "arc-runner-1")
    assert hra is not None and runner is not None
    annotations = hra["metadata"]["annotations"]
    assert annotations[ASSIGNED_JOBS_ANNOTATION] == "2"
    parse_time(annotations[ASSIGNED_JOBS_TIME_ANNOTATION])
    assert runner["metadata"]["annotations"][JOB_STARTED_ANNOTATION] == "1"


def test_a_fleet_follows_the_targets_and_closes_the_sessions_of_those_that_go(
    setup: Setup,
) -> None:
    fleet = ListenerFleet(
        lambda _scope: setup.client, RecordingSink(), owner="listener-0", clock=setup.clock
    )
    started, closed = fleet.reconcile([setup.target])
    assert len(started) == 1 and closed == []
    started[0].step()
    assert setup.broker.scale_set(setup.target.scale_set_id).session is not None
    started, closed = fleet.reconcile([])
    assert started == [] and len(closed) == 1
    assert setup.broker.scale_set(setup.target.scale_set_id).session is None
    setup.clock.advance(timedelta(seconds=1).total_seconds())


# -- targets ----------------------------------------------------------------------------------


def deployment(annotations: dict[str, str], status: Mapping[str, object]) -> dict[str, object]:
    return {
        "apiVersion": "actions.summerwind.dev/v1alpha1",
        "kind": "RunnerDeployment",
        "metadata": {"name": "arc", "namespace": "ci", "annotations": annotations},
        "spec": {"replicas": 2, "template": {"spec": {"organization": "acme"}}},
        "status": status,
    }


HRA = {
    "metadata": {"name": "arc-hra", "namespace": "ci"},
    "spec": {"scaleTargetRef": {"name": "arc"}, "minReplicas": 1, "maxReplicas": 20},
}


def test_targets_are_deployments_with_a_recorded_scale_set_and_their_autoscaler() -> None:
    declared = {"arc-hooks.dev/scale-set": "arc"}
    recorded = {"scaleSet": {"id": 7, "name": "arc"}}
    (target,) = find_targets([deployment(declared, recorded)], [HRA])
    assert target == ListenerTarget("ci", "arc", ORG, 7, "arc", "arc-hra", 1, 20)
    (alone,) = find_targets([deployment(declared, recorded)], [])
    assert (alone.autoscaler, alone.min_runners, alone.max_runners) == (None, 2, 2)
    # Not declared, not recorded yet, or recorded under another name: nothing to listen to.
    assert find_targets([deployment({}, recorded)], [HRA]) == []
    assert find_targets([deployment(declared, {})], [HRA]) == []
    renamed = {"arc-hooks.dev/scale-set": "other"}
    assert find_targets([deployment(renamed, recorded)], [HRA]) == []


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner),
    max_leaves=12,
)


@given(
    st.lists(st.dictionaries(st.sampled_from(["metadata", "spec", "status"]), json_values)),
    st.lists(st.dictionaries(st.sampled_from(["metadata", "spec"]), json_values)),
)
def test_any_objects_give_targets_or_none_never_an_error(
    deployments: list[dict[str, object]], autoscalers: list[dict[str, object]]
) -> None:
    for target in find_targets(deployments, autoscalers):
        assert target.scale_set_id > 0 and 0 <= target.min_runners <= target.max_runners


# -- the hooks' scale-set service over the same loopback --------------------------------------


def service(setup: Setup, **options: Any) -> ScaleSetService:
    return ScaleSetService(lambda _scope: setup.client, setup.clock, **options)


def scale_set_requests(setup: Setup) -> list[str]:
    return [r.route for r in setup.broker.requests if "runnerscalesets" in r.route]


def test_a_scale_set_is_created_once_then_served_from_memory_until_its_time_is_up(
    setup: Setup,
) -> None:
    keeper = service(setup, ttl=timedelta(minutes=10))
    first = keeper.ensure_scale_set(ORG, "linux", None)
    assert first.name == "linux" and first.runner_group_id == 1
    asked = len(scale_set_requests(setup))
    assert keeper.ensure_scale_set(ORG, "linux", None) == first
    assert len(scale_set_requests(setup)) == asked  # no call
    setup.clock.advance(601)
    assert keeper.ensure_scale_set(ORG, "linux", None) == first  # adopted, not made
    assert scale_set_requests(setup).count("POST /_apis/runtime/runnerscalesets") == 2  # arc, linux
    # One label, its name, as GitHub documents scale sets and its own clients make them.
    labels = [n for _, n in setup.broker.scale_set(first.id).labels]
    assert labels == ["linux"]


def test_a_new_group_and_a_new_name_change_the_same_scale_set(setup: Setup) -> None:
    setup.github.add_runner_group(ORG, "ci")
    keeper = service(setup)
    first = keeper.ensure_scale_set(ORG, "linux", None)
    moved = keeper.ensure_scale_set(ORG, "linux", "ci", known_id=first.id)
    renamed = keeper.ensure_scale_set(ORG, "linux-x64", "ci", known_id=first.id)
    assert first.id == moved.id == renamed.id
    kept = setup.broker.scale_set(first.id)
    assert (kept.name, kept.runner_group_name) == ("linux-x64", "ci")
    assert [n for _, n in kept.labels] == ["linux-x64"]


def test_a_scale_set_made_with_more_labels_is_left_with_its_name_alone(setup: Setup) -> None:
    """Earlier builds added a target's runner labels; a scale set has one label."""
    keeper = service(setup)
    spec = RunnerScaleSetSpec(name="linux", runner_group_id=1, labels=("linux", "gpu"))
    made = keeper.client(ORG).create_runner_scale_set(spec)

    kept = keeper.ensure_scale_set(ORG, "linux", None)

    assert kept.id == made.id
    assert [n for _, n in setup.broker.scale_set(made.id).labels] == ["linux"]


def test_deleting_a_scale_set_that_is_gone_is_no_error(setup: Setup) -> None:
    keeper = service(setup)
    record = keeper.ensure_scale_set(ORG, "linux", None)
    keeper.delete_scale_set(ORG, record.id)
    keeper.delete_scale_set(ORG, record.id)
    assert record.id not in setup.broker._scale_sets


def test_a_member_name_registered_twice_is_a_conflict(setup: Setup) -> None:
    keeper = service(setup)
    config = keeper.generate_jit_config(ORG, setup.target.scale_set_id, "member-1", "_work")
    assert config.runner.id > 0 and config.encoded_jit_config
    assert "member-1" in repr(config) and config.encoded_jit_config not in repr(config)
    with pytest.raises(ConflictError):
        keeper.generate_jit_config(ORG, setup.target.scale_set_id, "member-1", "_work")


def test_a_throttled_call_tells_the_hook_when_to_come_back(setup: Setup) -> None:
    keeper = service(setup)
    setup.client.retry = RetryPolicy(retry_max=2, max_rate_limit_wait=0)
    setup.broker.fail_next(429, count=5, retry_after=90)
    with pytest.raises(RateLimitedError) as raised:
        keeper.ensure_scale_set(ORG, "linux", None)
    assert raised.value.retry_after == 90


def test_no_call_is_made_from_the_event_loop(setup: Setup) -> None:
    keeper = service(setup)
    with offline(), pytest.raises(WouldBlock):
        keeper.ensure_scale_set(ORG, "linux", None)


# -- the process ---------------------------------------------------------------------------------


def test_the_process_finds_its_targets_writes_the_count_and_deletes_its_session_on_stop(
    setup: Setup,
) -> None:
    store = ObjectStore(setup.clock)
    store.create(deployment_object(setup.target.scale_set_id))
    store.create(
        {
            "apiVersion": "actions.summerwind.dev/v1alpha1",
            "kind": "HorizontalRunnerAutoscaler",
            "metadata": {"name": "arc", "namespace": "default"},
            "spec": {"scaleTargetRef": {"name": "arc"}, "minReplicas": 0, "maxReplicas": 10},
        }
    )
    setup.queue(2)
    process = ListenerProcess(
        lambda _scope: setup.client, StoreKube(store), owner="pod-0", clock=setup.clock
    )
    written = threading.Event()
    sink = process.sink
    original = sink.write_assigned_jobs

    def write(target: ListenerTarget, assigned: int, counted_at: str) -> None:
        original(target, assigned, counted_at)
        if assigned == 2:
            written.set()
            process.stop_requested.set()

    sink.write_assigned_jobs = write  # type: ignore[method-assign]
    runner = threading.Thread(target=process.run)
    runner.start()
    assert written.wait(30), "the count was never written"
    runner.join(30)
    assert not runner.is_alive()
    hra = store.get("HorizontalRunnerAutoscaler", "default", "arc")
    assert hra is not None and hra["metadata"]["annotations"][ASSIGNED_JOBS_ANNOTATION] == "2"
    assert setup.broker.scale_set(setup.target.scale_set_id).session is None  # deleted on stop


def deployment_object(scale_set_id: int) -> dict[str, object]:
    return {
        "apiVersion": "actions.summerwind.dev/v1alpha1",
        "kind": "RunnerDeployment",
        "metadata": {
            "name": "arc",
            "namespace": "default",
            "annotations": {"arc-hooks.dev/scale-set": "arc"},
        },
        "spec": {"template": {"spec": {"organization": "acme"}}},
        "status": {"scaleSet": {"id": scale_set_id, "name": "arc"}},
    }


def test_a_token_shaped_scale_set_name_is_masked_on_the_listeners_metrics() -> None:
    """Found in review: the annotation takes `_`, so a token pasted there reached the
    listener's /metrics (port 8080, read without authentication) in clear."""
    token = "ghp_" + "A1b2" * 9
    target = ListenerTarget("ns", "rd", ORG, 1, token, None, 0, 1)

    PrometheusObserver().job_completed(target, "succeeded", 1.0)

    assert token not in generate_latest(LISTENER_REGISTRY).decode()


def test_the_metrics_are_named_and_counted_as_githubs_listener_does(setup: Setup) -> None:
    labels = {"name": "arc", "namespace": "default", "scale_set": "arc"}

    def value(name: str, **extra: str) -> float:
        return LISTENER_REGISTRY.get_sample_value(name, {**labels, **extra}) or 0.0

    counters = ("gha_started_jobs_total", "gha_job_startup_duration_seconds_count")
    before = {name: value(name) for name in counters}
    completed_before = value("gha_completed_jobs_total", job_result="succeeded")
    listener = ScaleSetListener(
        setup.client,
        setup.target,
        RecordingSink(),
        owner="o",
        clock=setup.clock,
        observer=PrometheusObserver(),
    )
    setup.runner("arc-runner-1")
    (job_id,) = setup.queue(1)
    run(listener)
    setup.github.complete_job(job_id)
    run(listener)
    assert {name: value(name) - before[name] for name in counters} == dict.fromkeys(counters, 1)
    assert value("gha_completed_jobs_total", job_result="succeeded") - completed_before == 1
    assert value("gha_assigned_jobs") == 0 and value("gha_max_runners") == 10
