"""The simulated runner process: registration, jobs, graceful stop (ARC's entrypoint), SIGKILL."""

from __future__ import annotations

import base64
from dataclasses import dataclass, field

import pytest

from arc_sim.events import EventLoop
from arc_sim.fake_github import FakeGitHub
from arc_sim.runner_agent import (
    KILLED_EXIT_CODE,
    REGISTRATION_DELETED_EXIT_CODE,
    REGISTRATION_FAILED_EXIT_CODE,
    AgentState,
    ContainerConfigError,
    RunnerAgent,
    RunnerConfig,
    container_env,
    image_start,
)
from arc_sim.store import KubeObject, ObjectStore
from hooks.clock import ManualClock
from hooks.github.port import Scope
from tests.job_board import JobBoard

ORG = Scope(organization="acme")


@dataclass
class Setup:
    clock: ManualClock
    loop: EventLoop
    store: ObjectStore
    github: FakeGitHub
    board: JobBoard
    exits: list[int] = field(default_factory=list)

    def token(self) -> str:
        return self.github.create_registration_token(ORG).value

    def agent(self, **settings: object) -> RunnerAgent:
        values: dict[str, object] = {
            "name": "runner-1",
            "scope": ORG,
            "labels": ("big",),
            "token": self.token(),
            **settings,
        }
        config = RunnerConfig(**values)  # type: ignore[arg-type]
        return RunnerAgent(config, github=self.board, loop=self.loop, registration_delay=(3, 3))

    def started(self, **settings: object) -> RunnerAgent:
        agent = self.agent(**settings)
        agent.start(self.exits.append)
        self.loop.run_for(3)
        return agent


@pytest.fixture
def setup() -> Setup:
    clock = ManualClock()
    loop = EventLoop(clock, seed=5)
    store = ObjectStore(clock)
    github = FakeGitHub(clock, token_ttl_seconds=3600)
    return Setup(clock, loop, store, github, JobBoard(github))


def state(agent: RunnerAgent) -> AgentState:
    # Read through a call: mypy would keep the narrowing of an earlier assertion.
    return agent.state


def only_runner(setup: Setup) -> tuple[int, str, bool]:
    [record] = setup.github.runner_records(ORG)
    return record.id, record.status, record.busy


# --- registration


def test_registers_with_its_token_goes_online_and_listens(setup: Setup) -> None:
    agent = setup.agent()
    agent.start(setup.exits.append)
    setup.loop.run_for(2.9)
    assert state(agent) is AgentState.REGISTERING and not setup.github.runner_records(ORG)

    setup.loop.run_for(0.1)

    [record] = setup.github.runner_records(ORG)
    assert (record.name, record.status, record.ephemeral) == ("runner-1", "online", True)
    assert "big" in [label.name for label in record.labels]
    assert state(agent) is AgentState.IDLE and agent.runner_id == record.id
    assert record.id in setup.board.agents and agent.config_files_present


def test_the_registration_delay_is_drawn_from_the_loop_between_two_and_five_seconds(
    setup: Setup,
) -> None:
    config = RunnerConfig(name="r", scope=ORG, token=setup.token())
    agent = RunnerAgent(config, github=setup.board, loop=setup.loop)
    agent.start(setup.exits.append)
    setup.loop.run_for(1.99)
    assert not setup.github.runner_records(ORG)
    setup.loop.run_for(3.01)
    assert state(agent) is AgentState.IDLE


def test_registering_again_under_the_same_name_replaces_the_runner(setup: Setup) -> None:
    first = setup.started()
    first.kill()
    second = setup.started()

    assert second.runner_id == first.runner_id
    assert only_runner(setup)[1] == "online"


def test_an_expired_token_ends_the_container_with_exit_code_1(setup: Setup) -> None:
    token = setup.token()
    setup.clock.advance(3601)
    agent = setup.started(token=token)

    assert setup.exits == [REGISTRATION_FAILED_EXIT_CODE] == [1]
    assert state(agent) is AgentState.EXITED and not setup.github.runner_records(ORG)


@pytest.mark.parametrize(
    "settings",
    [{"token": "not-a-token"}, {"scope": None}, {"group": "missing"}],
    ids=["unknown token", "no scope", "unknown group"],
)
def test_registration_refused_exits_1(setup: Setup, settings: dict[str, object]) -> None:
    setup.started(**settings)
    assert setup.exits == [1]


def test_a_runner_group_is_looked_up_by_name(setup: Setup) -> None:
    group = setup.github.add_runner_group(ORG, "builders")
    setup.started(group="Builders")
    [record] = setup.github.runner_records(ORG)
    assert record.runner_group_id == group.id


def test_jit_config_registers_the_runner_it_names(setup: Setup) -> None:
    repo = Scope(repository="acme/app")
    record, encoded = setup.github.generate_jit_config(repo, "jit-1", ["big"], 1)
    agent = setup.started(token="", jit_config=encoded, scope=None)

    assert agent.scope == repo and agent.runner_id == record.id
    assert setup.github.runner_record(repo, record.id).status == "online"


@pytest.mark.parametrize(
    ("image", "command", "with_jit", "starts"),
    [
        # ARC's images run startup.sh: a token, or exit 1 ('RUNNER_TOKEN must be set').
        ("summerwind/actions-runner:latest", None, False, True),
        ("summerwind/actions-runner:latest", None, True, False),
        ("ghcr.io/actions-runner-controller/actions-runner-dind:v2", None, True, False),
        ("summerwind/actions-runner:latest", ["/runner/run.sh"], True, True),
        # GitHub's image starts nothing by itself; `run.sh` reads a JIT config only.
        ("ghcr.io/actions/actions-runner:2.330.0", None, True, False),
        ("ghcr.io/actions/actions-runner:2.330.0", ["/home/runner/run.sh"], True, True),
        ("ghcr.io/actions/actions-runner:2.330.0", ["/home/runner/run.sh"], False, False),
        ("example.com/own:1", None, True, True),
    ],
)
def test_an_image_registers_only_as_its_start_can(
    setup: Setup, image: str, command: list[str] | None, with_jit: bool, starts: bool
) -> None:
    credentials: dict[str, object] = {"token": setup.token()}
    if with_jit:
        _, encoded = setup.github.generate_jit_config(ORG, "runner-1", ["big"], 1)
        credentials = {"token": "", "jit_config": encoded}
    agent = setup.started(start=image_start(image, command), **credentials)

    assert (state(agent) is AgentState.IDLE) == starts
    assert setup.exits == ([] if starts else [REGISTRATION_FAILED_EXIT_CODE])


def test_a_used_jit_config_exits_1(setup: Setup) -> None:
    _, encoded = setup.github.generate_jit_config(ORG, "jit-1", ["big"], 1)
    setup.github.register_jit(encoded)
    setup.started(token="", jit_config=encoded)
    assert setup.exits == [1]


# --- jobs


def test_an_ephemeral_runner_takes_one_job_then_removes_itself_and_exits_0(setup: Setup) -> None:
    agent = setup.started()
    job = setup.board.submit(["big"], duration_seconds=60)
    second = setup.board.submit(["big"], duration_seconds=60)

    assert state(agent) is AgentState.BUSY and agent.job == job
    assert only_runner(setup)[2] is True
    setup.loop.run_for(59)
    assert setup.board.outcomes[job.id] == "running"
    setup.loop.run_for(1)

    assert setup.board.outcomes == {job.id: "completed", second.id: "queued"}
    assert setup.exits == [0] and not setup.github.runner_records(ORG)
    assert not agent.config_files_present


def test_a_static_runner_goes_idle_and_takes_the_next_job(setup: Setup) -> None:
    agent = setup.started(ephemeral=False)
    first = setup.board.submit(["big"], duration_seconds=30)
    second = setup.board.submit(["big"], duration_seconds=30)

    setup.loop.run_for(30)
    assert setup.board.outcomes[first.id] == "completed" and agent.job == second
    setup.loop.run_for(30)

    assert setup.board.count("completed") == 2 and state(agent) is AgentState.IDLE
    assert only_runner(setup)[1:] == ("online", False) and not setup.exits


def test_jobs_wait_for_a_runner_with_their_labels(setup: Setup) -> None:
    agent = setup.started()
    job = setup.board.submit(["gpu"])
    assert state(agent) is AgentState.IDLE and setup.board.outcomes[job.id] == "queued"


# --- SIGTERM (ARC's graceful-stop.sh) and SIGKILL


def test_sigterm_when_idle_removes_the_registration_and_exits_0(setup: Setup) -> None:
    agent = setup.started()
    agent.terminate()
    assert setup.exits == [0] and not setup.github.runner_records(ORG)
    assert agent.runner_id not in setup.board.agents


def test_sigterm_while_busy_waits_for_an_ephemeral_job_within_the_timeout(setup: Setup) -> None:
    agent = setup.started(graceful_stop_timeout=90.0)
    job = setup.board.submit(["big"], duration_seconds=60)
    setup.loop.run_for(10)

    agent.terminate()
    assert only_runner(setup)[2] is True  # config.sh remove was refused: busy
    setup.loop.run_for(49)
    assert not setup.exits
    setup.loop.run_for(1)

    assert setup.board.outcomes[job.id] == "completed"
    assert setup.exits == [0] and not setup.github.runner_records(ORG)


def test_sigterm_while_busy_cancels_the_job_at_the_default_15s(setup: Setup) -> None:
    agent = setup.started()
    job = setup.board.submit(["big"], duration_seconds=600)

    agent.terminate()
    setup.loop.run_for(14.9)
    assert setup.board.outcomes[job.id] == "running"
    setup.loop.run_for(0.1)

    assert setup.board.outcomes[job.id] == "interrupted" and setup.exits == [0]
    assert only_runner(setup)[1:] == ("offline", False)  # left behind for the controller
    assert agent.config_files_present


def test_a_static_runner_that_finished_its_job_during_the_wait_stays_registered(
    setup: Setup,
) -> None:
    agent = setup.started(ephemeral=False, graceful_stop_timeout=30.0)
    job = setup.board.submit(["big"], duration_seconds=10)
    agent.terminate()
    setup.loop.run_for(30)

    assert setup.board.outcomes[job.id] == "completed" and setup.exits == [0]
    assert only_runner(setup)[1:] == ("offline", False)


def test_sigterm_during_registration_waits_for_it_then_removes_it(setup: Setup) -> None:
    agent = setup.agent()
    agent.start(setup.exits.append)
    setup.loop.run_for(1)
    agent.terminate()
    assert not setup.exits
    setup.loop.run_for(2)

    assert setup.exits == [0] and not setup.github.runner_records(ORG)


def test_sigkill_while_busy_interrupts_the_job_and_leaves_the_registration(setup: Setup) -> None:
    agent = setup.started()
    job = setup.board.submit(["big"], duration_seconds=60)
    agent.kill()
    setup.loop.run_for(120)

    assert setup.board.outcomes[job.id] == "interrupted"
    assert only_runner(setup)[1:] == ("offline", False)
    assert agent.exit_code == KILLED_EXIT_CODE and not setup.exits  # the kubelet records it
    assert agent.runner_id not in setup.board.agents


def test_a_registration_deleted_through_the_api_ends_the_runner(setup: Setup) -> None:
    agent = setup.started(ephemeral=False)
    assert agent.runner_id is not None
    setup.board.delete_runner(ORG, agent.runner_id)
    assert state(agent) is AgentState.LEAVING
    setup.loop.run_for(1)

    assert setup.exits == [REGISTRATION_DELETED_EXIT_CODE]
    assert setup.board.submit(["big"]) and setup.board.count("queued") == 1


# --- the container environment


def secret(name: str, **data: str) -> KubeObject:
    encoded = {key: base64.b64encode(value.encode()).decode() for key, value in data.items()}
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": name, "namespace": "ci"},
        "data": encoded,
    }


def runner_pod(env: list[KubeObject]) -> KubeObject:
    return {
        "kind": "Pod",
        "metadata": {"name": "pod-1", "namespace": "ci", "uid": "u-1"},
        "spec": {"containers": [{"name": "runner", "env": env}], "nodeName": "node-1"},
    }


def test_the_environment_resolves_values_secrets_and_fields(setup: Setup) -> None:
    setup.store.create(secret("reg", token="T0KEN"))
    pod = runner_pod(
        [
            {"name": "RUNNER_ORG", "value": "acme"},
            {
                "name": "RUNNER_TOKEN",
                "valueFrom": {"secretKeyRef": {"name": "reg", "key": "token"}},
            },
            {"name": "POD", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
            {
                "name": "MAYBE",
                "valueFrom": {"secretKeyRef": {"name": "none", "key": "x", "optional": True}},
            },
        ]
    )
    env = container_env(setup.store, pod, pod["spec"]["containers"][0])
    assert env == {"RUNNER_ORG": "acme", "RUNNER_TOKEN": "T0KEN", "POD": "pod-1"}


@pytest.mark.parametrize(
    ("secrets", "message"),
    [([], 'secret "reg" not found'), ([secret("reg", other="x")], "couldn't find key token")],
)
def test_a_missing_secret_or_key_is_a_container_config_error(
    setup: Setup, secrets: list[KubeObject], message: str
) -> None:
    for item in secrets:
        setup.store.create(item)
    pod = runner_pod(
        [{"name": "RUNNER_TOKEN", "valueFrom": {"secretKeyRef": {"name": "reg", "key": "token"}}}]
    )
    with pytest.raises(ContainerConfigError, match=message):
        RunnerAgent.for_pod(pod, store=setup.store, github=setup.board, loop=setup.loop)


@pytest.mark.parametrize(
    ("env", "ephemeral", "timeout"),
    [
        ({}, True, 15.0),
        ({"RUNNER_EPHEMERAL": "false", "RUNNER_GRACEFUL_STOP_TIMEOUT": "90"}, False, 90.0),
        ({"RUNNER_EPHEMERAL": "False", "RUNNER_GRACEFUL_STOP_TIMEOUT": "soon"}, True, 0.0),
    ],
)
def test_config_from_env_follows_arc_entrypoint(
    env: dict[str, str], ephemeral: bool, timeout: float
) -> None:
    config = RunnerConfig.from_env(
        {"RUNNER_REPO": "acme/app", "RUNNER_LABELS": "a, b,,", **env}, default_name="pod-1"
    )
    assert (config.ephemeral, config.graceful_stop_timeout) == (ephemeral, timeout)
    assert config.name == "pod-1" and config.labels == ("a", "b")
    assert config.scope == Scope(repository="acme/app")
    assert "T0KEN" not in repr(RunnerConfig.from_env({"RUNNER_TOKEN": "T0KEN"}, default_name="x"))
