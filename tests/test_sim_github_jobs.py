"""Workflow jobs in the fake GitHub: GitHub's assignment rule, runner agents, the summary."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from arc_sim.fake_github import FakeGitHub, FakeGitHubError, RunnerBusyError, SimJob
from arc_sim.github_jobs import JobEvent, covers, labels_match
from arc_sim.github_port import InProcessGitHub
from hooks.clock import ManualClock
from hooks.github.port import Scope

START = datetime(2026, 1, 1, tzinfo=UTC)  # the start of the `clock` fixture (tests/conftest.py)
PAT = "ghp_jobs"
REPO = Scope(repository="octo-org/hello-world")
ORG = Scope(organization="octo-org")
ENTERPRISE = Scope(enterprise="octo-ent")
HELLO = "octo-org/hello-world"


@dataclass
class Agent:
    """A runner process that records what GitHub tells it."""

    assigned: list[SimJob] = field(default_factory=list)
    removals: int = 0

    def assign(self, job: SimJob) -> None:
        self.assigned.append(job)

    def removed(self) -> None:
        self.removals += 1


@pytest.fixture
def github(fake_github: FakeGitHub) -> FakeGitHub:
    """Here `github` is the simulated GitHub, with a PAT for the REST calls."""
    fake_github.add_personal_access_token(PAT)
    return fake_github


def runner(
    github: FakeGitHub,
    scope: Scope,
    name: str,
    labels: tuple[str, ...] = ("k8s",),
    *,
    online: bool = True,
    ephemeral: bool = False,
    group: int = 1,
) -> int:
    token = github.create_registration_token(scope).value
    runner_id = github.register_runner(
        scope, name, list(labels), token, ephemeral=ephemeral, runner_group_id=group
    ).id
    if online:
        github.set_online(scope, runner_id)
    return runner_id


# The rule


def test_scope_covers_repository_organization_and_enterprise() -> None:
    def enterprise_of(org: str) -> str | None:
        return {"octo-org": "octo-ent"}.get(org)

    assert covers(REPO, HELLO, enterprise_of)
    assert covers(Scope(repository="Octo-Org/Hello-World"), HELLO, enterprise_of)
    assert not covers(REPO, "octo-org/other", enterprise_of)
    assert covers(ORG, "octo-org/other", enterprise_of)
    assert covers(Scope(organization="OCTO-ORG"), HELLO, enterprise_of)
    assert not covers(ORG, "other-org/hello-world", enterprise_of)
    assert covers(ENTERPRISE, HELLO, enterprise_of)
    assert not covers(ENTERPRISE, "other-org/x", enterprise_of)
    assert not covers(Scope(enterprise="other-ent"), HELLO, enterprise_of)


def test_labels_all_present_case_insensitively() -> None:
    have = ("self-hosted", "Linux", "X64", "k8s")
    assert labels_match(have, ["self-hosted", "linux", "K8S"])
    assert labels_match(have, [])
    assert not labels_match(have, ["self-hosted", "gpu"])


def test_job_waits_until_a_runner_that_may_take_it_comes_online(
    github: FakeGitHub, clock: ManualClock
) -> None:
    job = github.submit_job(HELLO, ["self-hosted", "linux", "k8s"], 60)
    assert (job.status, job.runner_id, job.started_at, job.queued_at) == (
        "queued",
        None,
        None,
        START,
    )
    runner(github, Scope(repository="octo-org/other"), "elsewhere")
    runner(github, ORG, "wrong-labels", ("gpu",))
    offline = runner(github, ORG, "offline", online=False)
    assert github.job(job.id).status == "queued"

    clock.advance(30)
    github.set_online(ORG, offline)
    started = github.job(job.id)
    assert started.status == "in_progress"
    assert (started.runner_id, started.runner_name) == (offline, "offline")
    assert (started.runner_group_id, started.runner_group_name) == (1, "Default")
    assert started.queue_seconds == 30
    assert github.runner(ORG, offline).busy


def test_implicit_labels_only_for_token_registrations(github: FakeGitHub) -> None:
    jit, _ = github.generate_jit_config(ORG, "jit", ["k8s"], 1)
    github.set_online(ORG, jit.id)
    job = github.submit_job(HELLO, ["self-hosted", "k8s"], 60)
    assert github.job(job.id).status == "queued"  # the JIT runner has exactly ["k8s"]
    token_runner = runner(github, ORG, "token-runner")
    assert github.job(job.id).runner_id == token_runner


def test_enterprise_runners_serve_their_organizations(github: FakeGitHub) -> None:
    enterprise_runner = runner(github, ENTERPRISE, "ent-runner")
    job = github.submit_job(HELLO, ["k8s"], 60)
    assert github.job(job.id).status == "queued"
    github.set_enterprise_of("octo-org", "octo-ent")
    assert github.job(job.id).runner_id == enterprise_runner
    assert github.enterprise_of("OCTO-ORG") == "octo-ent"


def test_oldest_job_first_and_lowest_runner_id(github: FakeGitHub) -> None:
    first = github.submit_job(HELLO, ["k8s"], 60)
    second = github.submit_job(HELLO, ["k8s"], 60)
    third = github.submit_job(HELLO, ["k8s"], 60)
    a = runner(github, ORG, "a", online=False)
    b = runner(github, ORG, "b", online=False)
    github.set_online(ORG, b)
    assert github.job(first.id).runner_id == b
    github.set_online(ORG, a)
    assert github.job(second.id).runner_id == a
    assert github.job(third.id).status == "queued"

    # Both idle at once: the lower id takes the job.
    github.complete_job(first.id)
    assert github.job(third.id).runner_id == b
    github.complete_job(second.id)
    github.complete_job(third.id)
    fourth = github.submit_job(HELLO, ["k8s"], 60)
    assert github.job(fourth.id).runner_id == a


def test_runner_group_restricted_to_selected_repositories(github: FakeGitHub) -> None:
    group = github.add_runner_group(
        ORG, "deploy", visibility="selected", selected_repositories=["octo-org/deploy"]
    )
    deploy_runner = runner(github, ORG, "deploy-runner", group=group.id)
    hello = github.submit_job(HELLO, ["k8s"], 60)
    deploy = github.submit_job("octo-org/deploy", ["k8s"], 60)
    assert github.job(hello.id).status == "queued"
    assert github.job(deploy.id).runner_id == deploy_runner
    assert github.job(deploy.id).runner_group_name == "deploy"


# Runner agents


def test_agent_is_told_of_its_job_and_completes_it(github: FakeGitHub, clock: ManualClock) -> None:
    runner_id = runner(github, ORG, "runner-a")
    agent = Agent()
    github.attach_agent(ORG, runner_id, agent)
    job = github.submit_job(HELLO, ["k8s"], 120)
    (given,) = agent.assigned
    assert (given.id, given.status, given.duration_seconds) == (job.id, "in_progress", 120)

    clock.advance(120)
    done = github.complete_job(job.id)
    assert (done.status, done.conclusion, done.interrupted) == ("completed", "success", False)
    assert done.completed_at == START.replace(minute=2)
    assert not github.runner(ORG, runner_id).busy
    with pytest.raises(FakeGitHubError, match="not in progress"):
        github.complete_job(job.id)

    # Idle again: the next job comes to it.
    github.submit_job(HELLO, ["k8s"], 60)
    assert len(agent.assigned) == 2


def test_a_job_assigned_before_the_agent_attached_is_handed_over(github: FakeGitHub) -> None:
    runner_id = runner(github, ORG, "runner-a")
    job = github.submit_job(HELLO, ["k8s"], 60)
    agent = Agent()
    github.attach_agent(ORG, runner_id, agent)
    assert [j.id for j in agent.assigned] == [job.id]
    github.detach_agent(ORG, runner_id)
    github.complete_job(job.id)
    github.submit_job(HELLO, ["k8s"], 60)
    assert len(agent.assigned) == 1
    github.set_busy(ORG, runner_id, False)
    github.delete_runner(ORG, runner_id)
    github.detach_agent(ORG, runner_id)  # after the registration is gone: nothing to do
    assert agent.removals == 0


def test_ephemeral_runner_takes_one_job(github: FakeGitHub) -> None:
    runner_id = runner(github, ORG, "ephemeral", ephemeral=True)
    first = github.submit_job(HELLO, ["k8s"], 60)
    second = github.submit_job(HELLO, ["k8s"], 60)
    github.complete_job(first.id)
    assert github.job(second.id).status == "queued"
    github.unregister_runner(ORG, runner_id)  # what the runner does when its job is done
    assert github.runner_records() == []


def test_interrupted_job_fails_and_the_runner_goes_offline(
    github: FakeGitHub, clock: ManualClock
) -> None:
    runner_id = runner(github, ORG, "runner-a")
    job = github.submit_job(HELLO, ["k8s"], 600)
    github.submit_job(HELLO, ["k8s"], 600)
    clock.advance(42)
    failed = github.interrupt_job(job.id)
    assert (failed.status, failed.conclusion, failed.interrupted) == (
        "completed",
        "failure",
        True,
    )
    record = github.runner_record(ORG, runner_id)
    assert (record.status, record.busy) == ("offline", False)
    assert github.job_summary().waiting == 1  # the dead runner takes nothing more


def test_rest_deletion_tells_the_agent_but_self_removal_does_not(github: FakeGitHub) -> None:
    deleted, unregistered, busy = (runner(github, ORG, n) for n in ("deleted", "self", "busy"))
    agents = {runner_id: Agent() for runner_id in (deleted, unregistered, busy)}
    for runner_id, agent in agents.items():
        github.attach_agent(ORG, runner_id, agent)
    github.set_busy(ORG, busy, True)

    port = InProcessGitHub(github, PAT, github.clock)
    assert port.remove_runner(ORG, deleted).outcome.value == "removed"
    assert agents[deleted].removals == 1
    assert port.remove_runner(ORG, busy).outcome.value == "busy"
    assert agents[busy].removals == 0
    github.unregister_runner(ORG, unregistered)
    assert agents[unregistered].removals == 0
    with pytest.raises(RunnerBusyError):
        github.delete_runner(ORG, busy)


def test_callbacks_run_after_the_step_and_may_call_back(github: FakeGitHub) -> None:
    """An agent that finishes its job the moment it gets it (a zero-length job)."""
    runner_id = runner(github, ORG, "quick")
    finished: list[int] = []

    class Quick:
        def assign(self, job: SimJob) -> None:
            assert github.job(job.id).status == "in_progress"
            finished.append(github.complete_job(job.id).id)

        def removed(self) -> None:
            raise AssertionError("not removed")

    github.attach_agent(ORG, runner_id, Quick())
    jobs = [github.submit_job(HELLO, ["k8s"], 0) for _ in range(3)]
    assert finished == [j.id for j in jobs]
    assert github.job_summary().completed == 3


def test_job_listeners_hear_every_change_in_order(github: FakeGitHub) -> None:
    events: list[JobEvent] = []
    github.add_job_listener(events.append)
    runner_id = runner(github, ORG, "runner-a")
    job = github.submit_job(HELLO, ["k8s"], 60)
    github.complete_job(job.id)
    assert [(e.action, e.job.status) for e in events] == [
        ("queued", "queued"),
        ("in_progress", "in_progress"),
        ("completed", "completed"),
    ]
    assert events[1].job.runner_id == runner_id


# Runs


def test_jobs_of_one_run_and_the_runs_state(github: FakeGitHub) -> None:
    first = github.submit_job(HELLO, ["k8s"], 60, run_id=500, workflow_name="Release")
    second = github.submit_job(HELLO, ["gpu"], 60, run_id=500)
    own = github.submit_job(HELLO, ["k8s"], 60)
    assert first.run_id == second.run_id == 500
    assert own.run_id == 501  # ids keep clear of the ones given
    run = github.workflow_run(HELLO, 500)
    assert run.job_ids == (first.id, second.id)
    assert run.workflow_name == "Release"
    assert github.job_book.run_state(run) == ("queued", None)

    runner_id = runner(github, ORG, "runner-a")
    assert github.job(first.id).runner_id == runner_id
    assert github.job_book.run_state(run) == ("in_progress", None)
    github.interrupt_job(first.id)
    assert github.job_book.run_state(run) == ("in_progress", None)
    gpu = runner(github, ORG, "gpu", ("gpu",))
    assert github.job(second.id).runner_id == gpu
    github.complete_job(second.id)
    assert github.job_book.run_state(run) == ("completed", "failure")

    with pytest.raises(ValueError, match="belongs to"):
        github.submit_job("octo-org/other", ["k8s"], 60, run_id=500)
    with pytest.raises(ValueError):
        github.submit_job("not-a-repository", ["k8s"], 60)


# The summary


def test_summary_counts(github: FakeGitHub, clock: ManualClock) -> None:
    runners = [runner(github, ORG, f"r{i}", online=False) for i in range(3)]
    github.unregister_runner(ORG, runners.pop())
    jobs = [github.submit_job(HELLO, ["k8s"], 60) for _ in range(4)]
    clock.advance(10)
    github.set_online(ORG, runners[0])
    clock.advance(20)
    github.set_online(ORG, runners[1])
    github.complete_job(jobs[0].id)  # at 30 s: job 2 starts on the idle runner 0
    github.interrupt_job(jobs[1].id)
    clock.advance(50)

    summary = github.job_summary()
    assert (summary.submitted, summary.completed, summary.interrupted) == (4, 1, 1)
    assert (summary.in_progress, summary.waiting) == (1, 1)
    # Queue times 10, 30, 30 for the started jobs; the waiting one has waited 80 s so far.
    assert summary.queue_seconds_p50 == 30
    assert summary.queue_seconds_max == 80
    assert (summary.runners_registered_peak, summary.runners_registered_now) == (3, 2)


_OPERATIONS = st.lists(
    st.tuples(
        st.sampled_from(["register", "online", "offline", "submit", "complete", "delete"]),
        st.integers(0, 5),  # which runner or job
        st.booleans(),  # ephemeral, or which labels
    ),
    max_size=40,
)


@settings(max_examples=60, deadline=None)
@given(_OPERATIONS)
def test_no_job_waits_while_a_runner_that_may_take_it_is_idle(
    operations: list[tuple[str, int, bool]],
) -> None:
    """Whatever runners and jobs did before, a queued job never waits beside an online idle
    runner that may take it (and has not had its one job)."""
    github = FakeGitHub(ManualClock(START))
    github.add_personal_access_token(PAT)
    names = 0
    for action, index, flag in operations:
        runners = github.runner_records()
        running = [j for j in github.jobs() if j.status == "in_progress"]
        if action == "register":
            names += 1
            runner(github, ORG, f"r{names}", ("k8s", "gpu") if flag else ("k8s",), ephemeral=flag)
        elif action in ("online", "offline") and runners:
            record = runners[index % len(runners)]
            if not record.busy:
                github.set_online(ORG, record.id, action == "online")
        elif action == "submit":
            github.submit_job(HELLO, ["k8s", "gpu"] if flag else ["k8s"], 60)
        elif action == "complete" and running:
            github.complete_job(running[index % len(running)].id)
        elif action == "delete" and runners:
            record = runners[index % len(runners)]
            if not record.busy:
                github.delete_runner(ORG, record.id)
        busy_ids = {j.runner_id for j in github.jobs() if j.status == "in_progress"}
        done_ids = {j.runner_id for j in github.jobs() if j.status == "completed"}
        for job in (j for j in github.jobs() if j.status == "queued"):
            takers = [
                r
                for r in github.runner_records()
                if r.status == "online"
                and r.id not in busy_ids
                and not (r.ephemeral and r.id in done_ids)
                and labels_match((label.name for label in r.labels), job.labels)
            ]
            assert not takers, f"job {job.id} waits beside idle runner {takers[0].name}"
