"""A Runner deleted while its runner works, the finalize served by a replica whose cached runner
list predates the runner's current registration under the same name.

Token-mode runners register under their Runner's name: a standalone ephemeral Runner's next pod,
or a static runner's pod replaced after a failure, registers again as a new id. Another replica
(the shipped Deployment runs two) may still hold a list naming the earlier id, well within
GITHUB_LIST_RUNNERS_CACHE_TTL. Its DELETE of that id answers 404; taking that for "not
registered" let the pod go with its job. Found by an independent hostile probe; the sequence
below is its reproduction.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from starlette.testclient import TestClient

from arc_sim.fake_github import FakeGitHub
from arc_sim.github_port import InProcessGitHub
from arc_sim.store import ObjectStore
from hooks.app import create_app
from hooks.clock import ManualClock, format_time
from hooks.github.cached import CachedGitHub
from hooks.github.port import Scope
from tests.hook_app import GITHUB_TOKEN, HOOK_AUTH, WithoutParentReads, hook_settings
from tests.hook_driver import HookDriver, new_runner, running_status

SCOPE = Scope(organization="acme")


class TwoReplicas:
    """Two hook servers, each with its own cache, in front of one GitHub."""

    def __init__(self) -> None:
        self.clock = ManualClock()
        self.github = FakeGitHub(self.clock)
        self.github.add_personal_access_token(GITHUB_TOKEN)
        self.settings = hook_settings()

    def replica(self) -> TestClient:
        port = CachedGitHub(
            InProcessGitHub(self.github, GITHUB_TOKEN, self.clock), self.settings, self.clock
        )
        app = create_app(
            self.settings,
            github=port,
            clock=self.clock,
            github_blocks=False,
            kube=WithoutParentReads(ObjectStore(self.clock)),
        )
        return TestClient(app, headers=HOOK_AUTH)

    def register(self, name: str, *, ephemeral: bool) -> int:
        token = self.github.create_registration_token(SCOPE).value
        runner = self.github.register_runner(
            SCOPE, name, ["linux"], token, replace=True, ephemeral=ephemeral
        )
        self.github.set_online(SCOPE, runner.id)
        return runner.id


@pytest.fixture
def world() -> Iterator[tuple[TwoReplicas, TestClient, TestClient]]:
    replicas = TwoReplicas()
    with replicas.replica() as a, replicas.replica() as b:
        yield replicas, a, b


@pytest.mark.parametrize("ephemeral", [True, False], ids=["ephemeral", "static-pod-failed"])
def test_a_replica_with_an_older_list_does_not_let_a_busy_runners_pod_go(
    world: tuple[TwoReplicas, TestClient, TestClient], ephemeral: bool
) -> None:
    replicas, a, b = world
    clock, github = replicas.clock, replicas.github
    owner = None if ephemeral else "RunnerReplicaSet"
    spec = {"organization": "acme", "labels": ["linux"], "ephemeral": ephemeral}
    driver = HookDriver(a, new_runner(spec, name="r1", owner_kind=owner))

    def on(client: TestClient) -> HookDriver:
        driver.client = client
        return driver

    on(a).sync()
    first = driver.pod()
    assert first is not None
    first_pod = first["metadata"]["uid"]
    driver.set_pod_status(running_status(format_time(clock.now())))
    first_id = replicas.register("r1", ephemeral=ephemeral)
    clock.advance(5)
    on(b).sync()  # replica B lists the scope now: r1 is the first registration
    on(a).sync()
    clock.advance(5)
    if ephemeral:  # the job ends, the runner removes its own registration and exits
        github.unregister_runner(SCOPE, first_id)
        exited = running_status(format_time(clock.now()), exit_code=0)
        driver.set_pod_status({**exited, "phase": "Succeeded"})
    else:  # the runner crashes: its registration stays, offline
        github.set_online(SCOPE, first_id, False)
        exited = running_status(format_time(clock.now()), exit_code=1)
        driver.set_pod_status({**exited, "phase": "Failed"})
    for _ in range(8):  # replica A lets the first pod go and starts the next
        on(a).sync()
        clock.advance(2)
    second_pod = driver.pod()
    assert second_pod is not None and second_pod["metadata"]["uid"] != first_pod
    driver.set_pod_status(running_status(format_time(clock.now())))
    second_id = replicas.register("r1", ephemeral=ephemeral)
    github.set_busy(SCOPE, second_id, True)  # and takes a job
    clock.advance(10)

    answer = on(b).finalize()  # the Runner is deleted; replica B answers

    stop = answer["status"]["gracefulStop"]
    assert [c["kind"] for c in answer["children"]].count("Pod") == 1, stop
    assert stop["runnerId"] == second_id
    assert "outcome" not in stop
    assert not answer.get("finalized")
    assert [r.id for r in github.runners(SCOPE)] == [second_id]  # still there, at work
