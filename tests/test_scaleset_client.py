"""The scale-set client (hooks/github/scaleset) against the simulated broker over loopback HTTP.

Every call goes over real HTTP to `arc_sim.scaleset_broker` mounted beside the fake GitHub:
the admin connection (registration token, runner-registration), scale sets, runners, message
sessions and their queue, job acquisition and the statistics the broker keeps. Retries wait
through a recorded sleeper that moves the virtual clock, so nothing ever sleeps. Malformed
answers come from a scripted server and from hypothesis; they must end in typed errors that
never show a token.
"""

from __future__ import annotations

import base64
import json
import socket
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import timedelta
from email.utils import format_datetime
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Send
from starlette.types import Scope as AsgiScope

from arc_sim.fake_github import FakeGitHub
from arc_sim.loopback import serve_loopback
from arc_sim.scaleset_broker import REGISTRATION_PATH, ScaleSetBroker, build_app
from hooks.clock import ManualClock
from hooks.github.port import GitHubError, Scope
from hooks.github.scaleset import (
    JobAssigned,
    JobAvailable,
    JobCompleted,
    JobStarted,
    JobStillRunningError,
    Label,
    MalformedResponseError,
    MessageQueueTokenExpiredError,
    MessageSession,
    RetryPolicy,
    RunnerExistsError,
    RunnerNotFoundError,
    RunnerScaleSet,
    RunnerScaleSetMessage,
    RunnerScaleSetSpec,
    ScaleSetClient,
    ScaleSetConfigError,
    ScaleSetError,
    ScaleSetHTTPError,
    ScaleSetRateLimitedError,
    ScaleSetTransportError,
    SessionConflictError,
)
from hooks.github.scaleset.models import parse_message
from hooks.github.scaleset.rules import parse_config_url, retry_wait, should_retry

PAT = "ghp_" + "Sc4leSetPat" * 3
ORG = Scope(organization="acme")
SESSIONS = "/_apis/runtime/runnerscalesets/{id}/sessions"
MESSAGES = "GET /_apis/runtime/messagequeues/{sid}/messages"
REGISTRATION = f"POST {REGISTRATION_PATH}"


# -- the world: fake GitHub + broker on loopback, a sleeper on the virtual clock ---------------


@dataclass
class Sleeper:
    """Records each wait and moves the virtual clock by it: retries cost virtual time only."""

    clock: ManualClock
    waits: list[float] = field(default_factory=list)

    def __call__(self, seconds: float) -> None:
        self.waits.append(seconds)
        self.clock.advance(seconds)


@dataclass
class Loopback:
    """One server for the whole file, serving whichever app a test puts in `apps["app"]`, and
    one HTTP client (starting a server, or an httpx client, costs far more than a test)."""

    url: str
    apps: dict[str, ASGIApp]
    http: httpx.Client


@pytest.fixture(scope="module")
def loopback() -> Iterator[Loopback]:
    apps: dict[str, ASGIApp] = {}

    async def app(scope: AsgiScope, receive: Receive, send: Send) -> None:
        await apps["app"](scope, receive, send)

    with serve_loopback(app) as url, httpx.Client() as http:
        yield Loopback(url, apps, http)


@dataclass
class World:
    url: str
    http: httpx.Client
    clock: ManualClock
    github: FakeGitHub
    broker: ScaleSetBroker
    sleeper: Sleeper
    token_calls: int = 0

    def token(self) -> str:
        self.token_calls += 1
        return PAT

    def client(self, path: str = "/acme", **kwargs: Any) -> ScaleSetClient:
        kwargs.setdefault("sleep", self.sleeper)
        kwargs.setdefault("clock", self.clock)
        kwargs.setdefault("http", self.http)
        return ScaleSetClient(f"{self.url}{path}", kwargs.pop("token", self.token), **kwargs)


def world_of(
    loopback: Loopback, broker_options: dict[str, Any] | None = None, **github_options: Any
) -> World:
    """A fake GitHub with the PAT, and a broker beside it, served on `loopback`."""
    clock = ManualClock()
    github = FakeGitHub(clock, **github_options)
    github.add_personal_access_token(PAT)
    broker = ScaleSetBroker(github, **(broker_options or {}))
    loopback.apps["app"] = build_app(broker)
    return World(loopback.url, loopback.http, clock, github, broker, Sleeper(clock))


@pytest.fixture
def world(loopback: Loopback) -> World:
    return world_of(loopback)


@pytest.fixture
def client(world: World) -> Iterator[ScaleSetClient]:
    with world.client() as built:
        yield built


def new_scale_set(client: ScaleSetClient, name: str = "arc", group_id: int = 1) -> RunnerScaleSet:
    return client.create_runner_scale_set(RunnerScaleSetSpec(name=name, runner_group_id=group_id))


def poll(session: MessageSession, last: int = 0, capacity: int = 10) -> RunnerScaleSetMessage:
    message = session.get_message(last, capacity)
    assert message is not None
    return message


def stats(message: RunnerScaleSetMessage) -> tuple[int, ...]:
    s = message.statistics
    assert s is not None
    return (
        s.total_available_jobs,
        s.total_acquired_jobs,
        s.total_assigned_jobs,
        s.total_running_jobs,
        s.total_registered_runners,
        s.total_busy_runners,
        s.total_idle_runners,
    )


# -- the admin connection ----------------------------------------------------------------------


def test_a_pat_gets_the_tenants_service_url_and_an_admin_token(
    world: World, client: ScaleSetClient
) -> None:
    assert client.actions_service_url == f"{world.url}/_services/actions/1/"
    assert client.admin_token_expires_at == world.clock.now() + timedelta(hours=1)
    # One registration token from GitHub's REST API (charged to the PAT's user), exchanged once.
    assert (
        world.github.count_requests("POST", "/orgs/{org}/actions/runners/registration-token") == 1
    )
    assert world.github.requests[-1].caller == "user"
    assert world.broker.count_requests(REGISTRATION, 201) == 1


def test_a_github_app_installation_token_works_as_well(world: World) -> None:
    installation_token = world.github.create_installation_token(7).value
    with world.client(token=lambda: installation_token) as client:
        assert client.get_runner_group_by_name("Default").is_default
    assert world.github.requests[-1].caller == "installation"


@pytest.mark.parametrize(
    ("path", "route"),
    [
        ("/acme/app", "/repos/{owner}/{repo}/actions/runners/registration-token"),
        ("/enterprises/acme-corp", "/enterprises/{enterprise}/actions/runners/registration-token"),
    ],
)
def test_repository_and_enterprise_configuration_urls(world: World, path: str, route: str) -> None:
    with world.client(path) as client, world.client() as org_client:
        scale_set = new_scale_set(client)
        # Each scope is a tenant of its own: the organization does not see the scale set.
        assert org_client.get_runner_scale_set(1, "arc") is None
        assert client.get_runner_scale_set(1, "arc") == scale_set
    assert world.github.count_requests("POST", route) == 1


def test_the_admin_token_is_renewed_a_minute_before_it_expires(
    world: World, client: ScaleSetClient
) -> None:
    new_scale_set(client)
    world.clock.advance(3600 - 61)
    client.get_runner_scale_set_by_id(1)
    assert world.token_calls == 1
    world.clock.advance(2)  # now less than a minute is left
    client.get_runner_scale_set_by_id(1)
    assert world.token_calls == 2
    assert world.broker.count_requests(REGISTRATION, 201) == 2
    assert client.admin_token_expires_at == world.clock.now() + timedelta(hours=1)


def test_an_admin_token_the_service_refuses_is_replaced_on_the_next_call(
    world: World, client: ScaleSetClient
) -> None:
    new_scale_set(client)
    world.broker.fail_next(401, path="/_apis/runtime/runnerscalesets/*")
    with pytest.raises(ScaleSetHTTPError) as refused:
        client.get_runner_scale_set_by_id(1)
    assert refused.value.status == 401
    assert client.get_runner_scale_set_by_id(1).name == "arc"
    assert world.broker.count_requests(REGISTRATION, 201) == 2


def test_runner_registration_is_retried_on_401_as_the_go_client_does(world: World) -> None:
    world.broker.fail_next(401, count=2, path=REGISTRATION_PATH)
    with world.client() as client:
        assert client.get_runner_group_by_name("Default").id == 1
    assert world.sleeper.waits == [1.0, 2.0]
    assert world.broker.count_requests(REGISTRATION) == 3


def test_runner_registration_gives_up_after_the_retries(world: World) -> None:
    world.broker.fail_next(403, count=5, path=REGISTRATION_PATH)
    with world.client() as client, pytest.raises(ScaleSetHTTPError) as failed:
        client.get_runner_group_by_name("Default")
    assert (failed.value.status, failed.value.attempts) == (403, 5)
    assert world.sleeper.waits == [1.0, 2.0, 4.0, 8.0]


def test_a_token_github_refuses_is_not_retried(world: World) -> None:
    with world.client(token=lambda: "ghp_unknown") as client, pytest.raises(GitHubError) as failed:
        client.get_runner_group_by_name("Default")
    assert failed.value.status == 401
    assert "Bad credentials" in str(failed.value)
    assert "ghp_unknown" not in str(failed.value)
    assert world.sleeper.waits == []


def test_an_empty_token_is_a_configuration_error(world: World) -> None:
    with world.client(token=lambda: "") as client, pytest.raises(ScaleSetConfigError):
        client.get_runner_group_by_name("Default")
    assert world.github.requests == []


# -- configuration URLs (config.go) -------------------------------------------------------------

# The host and scope rules of `config.go` and its tests (actions/scaleset, MIT license).
CONFIG_URLS = [
    ("https://github.com/acme", ORG, "https://api.github.com"),
    ("https://www.github.com/acme/app/", Scope(repository="acme/app"), "https://api.github.com"),
    ("https://github.com/enterprises/corp", Scope(enterprise="corp"), "https://api.github.com"),
    ("https://github.com/Enterprises/corp", Scope(enterprise="corp"), "https://api.github.com"),
    ("http://github.localhost/acme", ORG, "http://api.github.localhost"),
    ("https://tenant.ghe.com/acme", ORG, "https://api.tenant.ghe.com"),
    ("https://ghes.example.com/acme", ORG, "https://ghes.example.com/api/v3"),
    (
        "http://localhost:8080/acme/app",
        Scope(repository="acme/app"),
        "http://localhost:8080/api/v3",
    ),
]


@pytest.mark.parametrize(("url", "scope", "api_url"), CONFIG_URLS)
def test_configuration_urls(url: str, scope: Scope, api_url: str) -> None:
    config = parse_config_url(url)
    assert (config.scope, config.api_url) == (scope, api_url)


@pytest.mark.parametrize(
    "url",
    [
        "https://github.com",
        "https://github.com/a/b/c",
        "github.com/acme",
        "ftp://github.com/acme",
        "https://user:pw@github.com/acme",
        "https://github.com/acme?x=1",
        "https://github.com/a//b",
        "https://github.com:port/acme",
    ],
)
def test_configuration_urls_the_protocol_cannot_use(url: str) -> None:
    with pytest.raises(ScaleSetConfigError):
        parse_config_url(url)


@given(st.text(max_size=60) | st.builds(lambda p: f"https://github.com/{p}", st.text(max_size=30)))
def test_any_configuration_url_gives_a_scope_or_a_configuration_error(url: str) -> None:
    try:
        config = parse_config_url(url)
    except ScaleSetConfigError:
        return
    scope = config.scope
    assert sum(bool(part) for part in (scope.enterprise, scope.organization, scope.repository)) == 1
    assert config.api_url.startswith(("http://", "https://"))


# -- runner groups and scale sets ---------------------------------------------------------------


def test_runner_groups_by_name(world: World, client: ScaleSetClient) -> None:
    world.github.add_runner_group(ORG, "GPU")
    assert client.get_runner_group_by_name("gpu").id == 2
    assert client.get_runner_group_by_name("Default").is_default
    with pytest.raises(ScaleSetError, match="no runner groups named 'cpu'"):
        client.get_runner_group_by_name("cpu")


def test_scale_sets_are_created_read_updated_and_deleted(
    world: World, client: ScaleSetClient
) -> None:
    world.github.add_runner_group(ORG, "gpu")
    created = new_scale_set(client, "arc", group_id=2)
    # Without labels, a scale set gets one named after it, of the System type.
    assert created.labels == (Label(name="arc", type="System"),)
    assert (created.runner_group_id, created.runner_group_name) == (2, "gpu")
    assert created.created_on == world.clock.now()
    assert client.get_runner_scale_set(2, "arc") == created
    assert client.get_runner_scale_set(1, "arc") is None
    assert client.get_runner_scale_set_by_id(created.id) == created

    updated = client.update_runner_scale_set(
        created.id,
        RunnerScaleSetSpec(labels=("linux", Label(name="x64", type="")), disable_update=True),
    )
    # What the update left empty stays; a label without a type becomes a System label.
    assert (updated.name, updated.runner_group_id) == ("arc", 2)
    assert [(lb.name, lb.type) for lb in updated.labels] == [("linux", "System"), ("x64", "System")]
    assert updated.runner_setting.disable_update
    renamed = client.update_runner_scale_set(created.id, RunnerScaleSetSpec(name="arc-2"))
    assert renamed.name == "arc-2" and renamed.labels == updated.labels

    client.delete_runner_scale_set(created.id)
    with pytest.raises(ScaleSetHTTPError) as gone:
        client.get_runner_scale_set_by_id(created.id)
    assert gone.value.status == 404
    assert "RunnerScaleSetNotFoundException" in gone.value.exception_name


def test_scale_set_names_are_unique_within_a_runner_group(
    world: World, client: ScaleSetClient
) -> None:
    world.github.add_runner_group(ORG, "gpu")
    new_scale_set(client, "arc")
    new_scale_set(client, "arc", group_id=2)  # another group: allowed
    with pytest.raises(ScaleSetHTTPError) as taken:
        new_scale_set(client, "arc")
    assert taken.value.status == 409


def test_a_scale_set_needs_a_name_before_anything_is_sent(
    world: World, client: ScaleSetClient
) -> None:
    with pytest.raises(ScaleSetConfigError):
        client.create_runner_scale_set(RunnerScaleSetSpec(labels=("linux",)))
    assert world.broker.requests == []


# -- runners ------------------------------------------------------------------------------------


def test_jit_configs_register_runners_of_the_scale_set(
    world: World, client: ScaleSetClient
) -> None:
    scale_set = new_scale_set(client)
    jit = client.generate_jit_runner_config(scale_set.id, "arc-runner-1", "/work")
    assert (jit.runner.name, jit.runner.runner_scale_set_id) == ("arc-runner-1", scale_set.id)
    encoded = jit.encoded_jit_config.get_secret_value()
    settings_b64 = json.loads(base64.b64decode(encoded))[".runner"]
    assert json.loads(base64.b64decode(settings_b64))["AgentName"] == "arc-runner-1"
    assert encoded not in repr(jit)
    assert client.get_runner(jit.runner.id) == jit.runner
    assert client.get_runner_by_name("arc-runner-1") == jit.runner
    assert client.get_runner_by_name("nobody") is None
    with pytest.raises(RunnerExistsError) as exists:
        client.generate_jit_runner_config(scale_set.id, "arc-runner-1")
    assert exists.value.status == 409


def test_runners_are_removed_unless_busy(world: World, client: ScaleSetClient) -> None:
    scale_set = new_scale_set(client)
    busy_jit = client.generate_jit_runner_config(scale_set.id, "busy")
    busy, idle = busy_jit.runner, client.generate_jit_runner_config(scale_set.id, "idle").runner
    with client.create_message_session(scale_set.id, "listener") as session:
        job = world.broker.submit_job(scale_set.id)
        session.acquire_jobs([job.request_id])
    world.broker.connect_runner(busy_jit.encoded_jit_config.get_secret_value())
    assert world.broker.take_job(busy.id) is not None
    with pytest.raises(JobStillRunningError):
        client.remove_runner(busy.id)
    client.remove_runner(idle.id)
    with pytest.raises(RunnerNotFoundError):
        client.remove_runner(idle.id)
    with pytest.raises(RunnerNotFoundError):
        client.get_runner(idle.id)


# -- sessions -----------------------------------------------------------------------------------


def test_a_second_session_conflicts_until_the_first_is_deleted(
    world: World, client: ScaleSetClient
) -> None:
    scale_set = new_scale_set(client)
    first = client.create_message_session(scale_set.id, "listener-a")
    assert first.session.owner_name == "listener-a"
    with pytest.raises(SessionConflictError) as conflict:
        client.create_message_session(scale_set.id, "listener-b")
    assert conflict.value.status == 409
    assert "SessionConflictException" in conflict.value.exception_name
    assert "listener-a" in conflict.value.exception_message
    assert world.broker.count_requests(f"POST {SESSIONS}", 409) == 1  # not retried
    first.close()
    first.close()  # once only
    with client.create_message_session(scale_set.id, "listener-b") as second:
        assert second.session.session_id != first.session.session_id
    assert world.broker.count_requests(f"DELETE {SESSIONS}/{{sid}}", 204) == 2


def test_a_session_left_without_calls_expires_and_its_listener_learns_it(
    world: World, client: ScaleSetClient
) -> None:
    scale_set = new_scale_set(client)
    stale = client.create_message_session(scale_set.id, "listener-a")
    world.clock.advance(299)
    assert stale.get_message() is None  # a poll keeps it alive
    world.clock.advance(299)
    with pytest.raises(SessionConflictError):
        client.create_message_session(scale_set.id, "listener-b")
    world.clock.advance(1)
    fresh = client.create_message_session(scale_set.id, "listener-b")
    # The old queue token is refused; refreshing the old session finds it gone.
    with pytest.raises(ScaleSetHTTPError) as lost:
        stale.get_message()
    assert lost.value.status == 404
    assert fresh.get_message() is None


def test_an_expired_queue_token_is_refreshed_once_and_the_call_repeated(loopback: Loopback) -> None:
    world = world_of(loopback, {"queue_token_ttl": 60})
    with world.client() as client:
        scale_set = new_scale_set(client)
        session = client.create_message_session(scale_set.id, "listener")
        first_token = session.session.message_queue_access_token
        world.broker.submit_job(scale_set.id)
        world.clock.advance(61)
        message = poll(session)
        assert [type(job) for job in message.jobs] == [JobAvailable]
        assert session.session.message_queue_access_token != first_token
        assert world.broker.count_requests(f"PATCH {SESSIONS}/{{sid}}", 200) == 1
        assert world.broker.count_requests(MESSAGES, 401) == 1


@pytest.mark.parametrize(
    ("path", "call"),
    [
        ("*/messages", lambda s: s.get_message(0, 1)),
        ("*/messages/*", lambda s: s.delete_message(1)),
        ("*/acquirejobs", lambda s: s.acquire_jobs([1])),
    ],
)
def test_a_queue_that_refuses_the_refreshed_token_too_is_a_typed_error(
    world: World, client: ScaleSetClient, path: str, call: Any
) -> None:
    session = client.create_message_session(new_scale_set(client).id, "listener")
    world.broker.fail_next(401, count=2, path=path)
    with pytest.raises(MessageQueueTokenExpiredError):
        call(session)
    assert world.broker.count_requests(f"PATCH {SESSIONS}/{{sid}}", 200) == 1


# -- the message queue --------------------------------------------------------------------------


def test_an_empty_or_dropped_long_poll_is_no_message(world: World, client: ScaleSetClient) -> None:
    scale_set = new_scale_set(client)
    session = client.create_message_session(scale_set.id, "listener")
    assert session.get_message(0, 10) is None  # nothing to say: 202
    job = world.broker.submit_job(scale_set.id)
    world.broker.drop_polls(2)
    assert session.get_message(0, 10) is None
    assert session.get_message(0, 10) is None
    message = poll(session)
    assert [j.runner_request_id for j in message.jobs_available] == [job.request_id]
    assert world.broker.count_requests(MESSAGES, 202) == 3


def test_a_message_is_delivered_until_deleted_unless_skipped(
    world: World, client: ScaleSetClient
) -> None:
    scale_set = new_scale_set(client)
    session = client.create_message_session(scale_set.id, "listener")
    world.broker.submit_job(scale_set.id)
    first = poll(session)
    assert poll(session) == first  # not acknowledged: delivered again
    assert session.get_message(first.message_id, 10) is None  # skipped by lastMessageId
    session.delete_message(first.message_id)
    assert session.get_message(0, 10) is None  # acknowledged: gone for good
    session.delete_message(first.message_id)  # acknowledging again is harmless
    with pytest.raises(ScaleSetHTTPError) as unknown:
        session.delete_message(99)
    assert unknown.value.status == 404
    last_id = [r for r in world.broker.requests if r.route == MESSAGES]
    assert [r.max_capacity for r in last_id] == ["10"] * 4


def test_offers_are_bounded_by_the_polls_max_capacity(world: World, client: ScaleSetClient) -> None:
    scale_set = new_scale_set(client)
    session = client.create_message_session(scale_set.id, "listener")
    jobs = [world.broker.submit_job(scale_set.id).request_id for _ in range(3)]
    assert session.get_message(0, 0) is None  # no room: nothing offered
    first = poll(session, capacity=2)
    assert [j.runner_request_id for j in first.jobs_available] == jobs[:2]
    session.delete_message(first.message_id)
    # Two offered and not yet acquired fill the room of 2.
    assert session.get_message(first.message_id, 2) is None
    assert session.acquire_jobs(jobs[:2]) == tuple(jobs[:2])
    assigned = poll(session, first.message_id, capacity=2)
    assert [j.runner_request_id for j in assigned.jobs_assigned] == jobs[:2]
    assert assigned.jobs_available == ()  # two acquired fill it still
    session.delete_message(assigned.message_id)
    third = poll(session, assigned.message_id, capacity=3)
    assert [j.runner_request_id for j in third.jobs_available] == jobs[2:]
    assert world.broker.requests[-1].max_capacity == "3"


def test_the_client_checks_poll_arguments_before_sending(
    world: World, client: ScaleSetClient
) -> None:
    session = client.create_message_session(new_scale_set(client).id, "listener")
    for last, capacity in [(-1, 1), (0, -1), (0, 2**31)]:
        with pytest.raises(ScaleSetConfigError):
            session.get_message(last, capacity)
    assert world.broker.count_requests(MESSAGES) == 0
    assert session.acquire_jobs([]) == ()


def test_jobs_are_acquired_only_when_available_to_this_scale_set(
    world: World, client: ScaleSetClient
) -> None:
    mine, other = new_scale_set(client, "mine"), new_scale_set(client, "other")
    job = world.broker.submit_job(mine.id).request_id
    foreign = world.broker.submit_job(other.id).request_id
    with client.create_message_session(mine.id, "listener") as session:
        assert session.acquire_jobs([job, foreign, 999]) == (job,)
        # Acquiring again is idempotent for a job this scale set holds.
        assert session.acquire_jobs([job]) == (job,)
    assert world.broker.job(job).status == "assigned"
    assert world.broker.job(foreign).status == "available"


def test_a_job_from_offer_to_completion_with_its_statistics(
    world: World, client: ScaleSetClient
) -> None:
    broker = world.broker
    scale_set = new_scale_set(client)
    session = client.create_message_session(scale_set.id, "listener")
    assert session.session.statistics is not None
    first, second = (broker.submit_job(scale_set.id, display_name=f"job-{i}") for i in (1, 2))
    # available, acquired, assigned, running, registered, busy, idle
    offer = poll(session)
    assert stats(offer) == (2, 0, 0, 0, 0, 0, 0)
    assert [j.job_display_name for j in offer.jobs_available] == ["job-1", "job-2"]
    session.delete_message(offer.message_id)
    session.acquire_jobs([j.runner_request_id for j in offer.jobs_available])
    jits = [client.generate_jit_runner_config(scale_set.id, f"r{i}") for i in (1, 2)]
    runners = [broker.connect_runner(jit.encoded_jit_config.get_secret_value()) for jit in jits]
    started = broker.take_job(runners[0].id)
    assert started is not None and started.request_id == first.request_id

    update = poll(session, offer.message_id)
    assert stats(update) == (0, 2, 2, 1, 2, 1, 1)
    assert [type(j) for j in update.jobs] == [JobAssigned, JobAssigned, JobStarted]
    assert update.jobs_started[0].runner_name == "r1"
    assert update.jobs_started[0].runner_assign_time == world.clock.now()
    session.delete_message(update.message_id)

    world.clock.advance(90)
    broker.complete_job(first.request_id)
    done = poll(session, update.message_id)
    completed = done.jobs_completed[0]
    assert (completed.runner_request_id, completed.result) == (first.request_id, "succeeded")
    assert completed.finish_time == world.clock.now()
    # The ephemeral runner is gone; the second job still waits for the idle runner.
    assert stats(done) == (0, 1, 1, 0, 1, 0, 1)
    assert client.get_runner_by_name("r1") is None
    assert second.status == "assigned"


def test_a_job_no_runner_takes_is_assigned_again_three_times_then_fails(
    loopback: Loopback,
) -> None:
    world = world_of(loopback, {"runner_timeout": 100, "session_timeout": 3600})
    with world.client() as client:
        scale_set = new_scale_set(client)
        session = client.create_message_session(scale_set.id, "listener")
        job = world.broker.submit_job(scale_set.id).request_id
        session.acquire_jobs([job])
        world.clock.advance(399)
        assigned = poll(session)
        assert [type(j) for j in assigned.jobs] == [JobAssigned] * 4  # the first and 3 more
        world.clock.advance(1)
        failed = poll(session, assigned.message_id)
        assert [type(j) for j in failed.jobs] == [JobCompleted]
        assert failed.jobs_completed[0].result == "failed"
        assert stats(failed) == (0, 0, 0, 0, 0, 0, 0)


def test_the_service_assigns_acquired_jobs_after_its_delay(loopback: Loopback) -> None:
    world = world_of(loopback, {"assign_delay": 30})
    with world.client() as client:
        scale_set = new_scale_set(client)
        session = client.create_message_session(scale_set.id, "listener")
        job = world.broker.submit_job(scale_set.id).request_id
        session.acquire_jobs([job])
        assert session.get_message(0, 10) is None
        assert world.broker.statistics(scale_set.id)["totalAssignedJobs"] == 0
        world.clock.advance(30)
        message = poll(session)
        assert stats(message)[:3] == (0, 1, 1)
        assert message.jobs_assigned[0].scale_set_assign_time == world.clock.now()


# -- retries ------------------------------------------------------------------------------------


def test_server_errors_are_retried_with_exponential_backoff(
    world: World, client: ScaleSetClient
) -> None:
    new_scale_set(client)
    world.broker.fail_next(503, count=2, method="GET")
    start = world.clock.now()
    assert client.get_runner_scale_set_by_id(1).name == "arc"
    assert world.sleeper.waits == [1.0, 2.0]
    assert world.clock.now() - start == timedelta(seconds=3)


def test_server_errors_give_up_after_four_retries(world: World, client: ScaleSetClient) -> None:
    session = client.create_message_session(new_scale_set(client).id, "listener")
    world.broker.fail_next(500, count=5, path="*/messages")
    with pytest.raises(ScaleSetHTTPError) as failed:
        session.get_message()
    assert (failed.value.status, failed.value.attempts) == (500, 5)
    assert world.sleeper.waits == [1.0, 2.0, 4.0, 8.0]
    assert world.broker.count_requests(MESSAGES, 500) == 5


def test_the_backoff_is_capped_and_the_retry_count_configurable(world: World) -> None:
    policy = RetryPolicy(retry_max=6, wait_min=10, wait_max=30)
    with world.client(retry=policy) as client:
        new_scale_set(client)
        world.broker.fail_next(502, count=6)
        client.get_runner_scale_set_by_id(1)
    assert world.sleeper.waits == [10.0, 20.0, 30.0, 30.0, 30.0, 30.0]


def test_501_is_not_retried(world: World, client: ScaleSetClient) -> None:
    new_scale_set(client)
    world.broker.fail_next(501)
    with pytest.raises(ScaleSetHTTPError) as failed:
        client.get_runner_scale_set_by_id(1)
    assert failed.value.status == 501 and world.sleeper.waits == []


def test_429_waits_what_retry_after_asks(world: World, client: ScaleSetClient) -> None:
    session = client.create_message_session(new_scale_set(client).id, "listener")
    world.broker.fail_next(429, path="*/acquirejobs", retry_after=7)
    assert session.acquire_jobs([1]) == ()
    assert world.sleeper.waits == [7.0]


def test_a_wait_longer_than_the_policy_allows_raises_at_once(
    world: World, client: ScaleSetClient
) -> None:
    new_scale_set(client)
    world.broker.fail_next(429, retry_after=1000)
    with pytest.raises(ScaleSetRateLimitedError) as limited:
        client.get_runner_scale_set_by_id(1)
    assert limited.value.retry_after == 1000
    assert world.sleeper.waits == []


def test_429_without_retry_after_backs_off_then_reports_the_rate_limit(
    world: World, client: ScaleSetClient
) -> None:
    new_scale_set(client)
    world.broker.fail_next(429, count=5)
    with pytest.raises(ScaleSetRateLimitedError) as limited:
        client.get_runner_scale_set_by_id(1)
    assert (limited.value.attempts, limited.value.retry_after) == (5, 16.0)
    assert world.sleeper.waits == [1.0, 2.0, 4.0, 8.0]


def test_githubs_secondary_rate_limit_is_waited_out(world: World) -> None:
    world.github.impose_secondary_rate_limit(5)
    with world.client() as client:
        assert client.get_runner_group_by_name("Default").id == 1
    assert world.sleeper.waits == [5.0]


def test_githubs_primary_rate_limit_waits_for_its_reset_or_reports_it(loopback: Loopback) -> None:
    world = world_of(loopback, {"admin_token_ttl": 120}, rate_limit_per_hour=1)
    with world.client() as client:
        new_scale_set(client)
        world.clock.advance(61)  # the admin token must be renewed: the budget is spent
        with pytest.raises(ScaleSetRateLimitedError) as limited:
            client.get_runner_scale_set_by_id(1)
    assert limited.value.status == 403
    assert limited.value.retry_after == 3600 - 61
    patient = RetryPolicy(max_rate_limit_wait=3600)
    with world.client(retry=patient) as client:
        assert client.get_runner_scale_set_by_id(1).name == "arc"
    assert world.sleeper.waits == [3600 - 61]


def test_no_answer_at_all_is_a_transport_error_after_the_retries(world: World) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    sleeper = world.sleeper
    with (
        ScaleSetClient(
            f"http://127.0.0.1:{port}/acme",
            lambda: PAT,
            clock=world.clock,
            sleep=sleeper,
            http=world.http,
        ) as client,
        pytest.raises(ScaleSetTransportError) as failed,
    ):
        client.get_runner_group_by_name("Default")
    assert "attempts=5" in str(failed.value) and "ConnectError" in str(failed.value)
    assert sleeper.waits == [1.0, 2.0, 4.0, 8.0]
    assert PAT not in str(failed.value)


# The retry rules of go-retryablehttp's DefaultRetryPolicy as `client.go` configures them, plus
# GitHub's rate-limit signals.
RETRY_CASES = [
    (500, {}, False, True),
    (502, {}, False, True),
    (501, {}, False, False),
    (429, {}, False, True),
    (404, {}, False, False),
    (409, {}, False, False),
    (401, {}, False, False),
    (401, {}, True, True),
    (403, {}, True, True),
    (403, {}, False, False),
    (403, {"X-RateLimit-Remaining": "0"}, False, True),
    (403, {"Retry-After": "60"}, False, True),
]


@pytest.mark.parametrize(("status", "headers", "retry_auth", "retried"), RETRY_CASES)
def test_which_answers_are_retried(
    status: int, headers: dict[str, str], retry_auth: bool, retried: bool
) -> None:
    assert should_retry(status, headers, retry_auth=retry_auth) is retried


def test_how_long_a_retry_waits(clock: ManualClock) -> None:
    policy, now = RetryPolicy(), clock.now()
    later = format_datetime(now + timedelta(seconds=42), usegmt=True)
    assert retry_wait(policy, 0, 503, {"Retry-After": later}, now) == 42
    assert retry_wait(policy, 3, 503, {"Retry-After": "soon"}, now) == 8  # unreadable: backoff
    assert retry_wait(policy, 0, 500, {"Retry-After": "9"}, now) == 1  # only for 429 and 503
    reset = {"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": str(now.timestamp() + 90)}
    assert retry_wait(policy, 0, 403, reset, now) == 90
    past = {**reset, "X-RateLimit-Reset": str(now.timestamp() - 5)}
    assert retry_wait(policy, 0, 429, past, now) == policy.wait_min
    assert retry_wait(policy, 10, 500, {}, now) == policy.wait_max


# -- no token shows ----------------------------------------------------------------------------


def test_no_repr_shows_a_token(world: World, client: ScaleSetClient) -> None:
    scale_set = new_scale_set(client)
    session = client.create_message_session(scale_set.id, "listener")
    jit = client.generate_jit_runner_config(scale_set.id, "r1")
    secrets = [
        PAT,
        session.session.message_queue_access_token.get_secret_value(),
        jit.encoded_jit_config.get_secret_value(),
    ]
    shown = " ".join(repr(x) for x in (client, session, session.session, jit, client.config))
    assert not [secret for secret in secrets if secret in shown]


# -- malformed answers from a scripted server ---------------------------------------------------

SCRIPTED_PAT = "ghp_ScriptedPersonalToken0001"
REGISTRATION_TOKEN = "AREGISTRATIONTOKEN0123456789"
QUEUE_TOKEN = "queue-token-0123456789abcdef"


def _jwt(claims: dict[str, Any]) -> str:
    def part(value: dict[str, Any]) -> str:
        return base64.urlsafe_b64encode(json.dumps(value).encode()).decode().rstrip("=")

    return f"{part({'alg': 'HS256', 'typ': 'JWT'})}.{part(claims)}.c2lnbmF0dXJl"


ADMIN_TOKEN = _jwt({"exp": 4102444800})  # 2100-01-01
SECRETS = (SCRIPTED_PAT, REGISTRATION_TOKEN, ADMIN_TOKEN, QUEUE_TOKEN)


@dataclass
class Answer:
    status: int
    body: bytes
    content_type: str = "application/json"


@dataclass
class Script:
    """What the scripted server answers: a step of the admin connection, or the service."""

    answers: dict[str, Answer] = field(default_factory=dict)
    base: str = ""

    def default(self, step: str) -> Answer:
        if step == "registration-token":
            body = {"token": REGISTRATION_TOKEN, "expires_at": "2026-01-01T01:00:00Z"}
            return Answer(201, json.dumps(body).encode())
        if step == "runner-registration":
            return Answer(
                201, json.dumps({"url": f"{self.base}/svc/", "token": ADMIN_TOKEN}).encode()
            )
        return Answer(404, b"")


@pytest.fixture(scope="module")
def scripted(loopback: Loopback) -> Iterator[Scripted]:
    """`loopback` serving `Script`'s answers (the file's tests run one after the other)."""
    script = Script(base=loopback.url)

    async def answer(request: Request) -> Response:
        path = request.url.path
        if path.endswith("/registration-token"):
            step = "registration-token"
        elif path.endswith(REGISTRATION_PATH):
            step = "runner-registration"
        else:
            step = "service"
        found = script.answers.get(step) or script.default(step)
        # HTTP allows no body with a 204.
        body = b"" if found.status == 204 else found.body
        return Response(body, found.status, media_type=found.content_type)

    app = Starlette(
        routes=[Route("/{path:path}", answer, methods=["GET", "POST", "PATCH", "DELETE"])]
    )
    yield Scripted(loopback, script, app)


@dataclass
class Scripted:
    loopback: Loopback
    script: Script
    app: ASGIApp

    def answer(self, step: str, answer: Answer) -> None:
        """Serve the script (another test may have served its app), with this answer."""
        self.loopback.apps["app"] = self.app
        self.script.answers = {step: answer}


def scripted_client(loopback: Loopback) -> ScaleSetClient:
    clock = ManualClock()
    return ScaleSetClient(
        f"{loopback.url}/acme",
        lambda: SCRIPTED_PAT,
        clock=clock,
        sleep=Sleeper(clock),
        retry=RetryPolicy(retry_max=0),
        http=loopback.http,
    )


SESSION = {
    "sessionId": "0b2b0b4e-62c7-4f07-9d5e-8f1f0d5e0c11",
    "ownerName": "listener",
    "messageQueueUrl": "http://127.0.0.1:9/svc/queue",
    "messageQueueAccessToken": QUEUE_TOKEN,
    "statistics": None,
}
SCALE_SET = {
    "id": 1,
    "name": "arc",
    "runnerGroupId": 1,
    "labels": [{"type": "System", "name": "arc"}],
}
STATISTICS = {
    "totalAvailableJobs": 1,
    "totalAcquiredJobs": 0,
    "totalAssignedJobs": 0,
    "totalRunningJobs": 0,
    "totalRegisteredRunners": 0,
    "totalBusyRunners": 0,
    "totalIdleRunners": 0,
}
JOB = {"messageType": "JobAvailable", "runnerRequestId": 5, "requestLabels": ["arc"]}


def json_values() -> st.SearchStrategy[Any]:
    scalars = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text()
    return st.recursive(
        scalars,
        lambda inner: (
            st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
        ),
        max_leaves=12,
    )


def mutated(valid: dict[str, Any]) -> st.SearchStrategy[dict[str, Any]]:
    """A valid answer with some fields dropped or given other JSON values."""
    return st.fixed_dictionaries(
        {
            key: st.sampled_from([value, None]) | json_values() | st.sampled_from(SECRETS)
            for key, value in valid.items()
        }
    ).flatmap(
        lambda d: st.lists(st.sampled_from(sorted(d)), unique=True).map(
            lambda drop: {k: v for k, v in d.items() if k not in drop}
        )
    )


def bodies(valid: dict[str, Any]) -> st.SearchStrategy[bytes]:
    return st.one_of(
        mutated(valid).map(lambda d: json.dumps(d).encode()),
        json_values().map(lambda v: json.dumps(v).encode()),
        st.binary(max_size=40),
        st.sampled_from(SECRETS).map(lambda s: f"bad token {s}".encode()),
    )


def message_bodies() -> st.SearchStrategy[bytes]:
    job_lists = st.lists(mutated(JOB) | json_values(), max_size=3).map(json.dumps)
    envelope = {
        "messageId": 1,
        "messageType": "RunnerScaleSetJobMessages",
        "body": json.dumps([JOB]),
        "statistics": STATISTICS,
    }
    return st.one_of(
        bodies(envelope),
        job_lists.map(lambda b: json.dumps({**envelope, "body": b}).encode()),
        mutated(STATISTICS).map(lambda s: json.dumps({**envelope, "statistics": s}).encode()),
    )


# The tokens a client holds when the answer of each step comes (a server may write any other
# text in an error, and the client cannot tell a token in it).
KNOWN_BEFORE = {
    "registration-token": (SCRIPTED_PAT,),
    "runner-registration": (SCRIPTED_PAT, REGISTRATION_TOKEN),
    "service": (SCRIPTED_PAT, REGISTRATION_TOKEN, ADMIN_TOKEN),
}
CALLS = {
    "registration-token": (
        lambda c: c.get_runner_scale_set_by_id(1),
        bodies({"token": "t", "expires_at": "2026-01-01T01:00:00Z"}),
    ),
    "runner-registration": (
        lambda c: c.get_runner_scale_set_by_id(1),
        bodies({"url": "http://x/svc/", "token": ADMIN_TOKEN}),
    ),
    "service-scale-set": (lambda c: c.get_runner_scale_set_by_id(1), bodies(SCALE_SET)),
    "service-list": (
        lambda c: c.get_runner_scale_set(1, "arc"),
        bodies({"count": 1, "value": [SCALE_SET]}),
    ),
    "service-session": (lambda c: c.create_message_session(1, "listener"), bodies(SESSION)),
    "service-jit": (
        lambda c: c.generate_jit_runner_config(1, "r1"),
        bodies(
            {"runner": {"id": 3, "name": "r1", "runnerScaleSetId": 1}, "encodedJITConfig": "e30="}
        ),
    ),
}


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.sampled_from(sorted(CALLS)).flatmap(lambda name: st.tuples(st.just(name), CALLS[name][1])),
    st.sampled_from([200, 201, 204, 400, 401, 404, 409, 422]),
    st.sampled_from(["application/json", "text/plain"]),
)
def test_malformed_answers_are_typed_errors_that_show_no_token(
    scripted: Scripted, case: tuple[str, bytes], status: int, content_type: str
) -> None:
    name, body = case
    step = "service" if name.startswith("service") else name
    scripted.answer(step, Answer(status, body, content_type))
    with scripted_client(scripted.loopback) as client:
        try:
            CALLS[name][0](client)
        except ScaleSetError as exc:
            shown = f"{exc} {exc!r}"
            # The tokens the client holds or was sent never show; nor does any token of an
            # answer with a 2xx status (its body may be a credential the client refused).
            hidden = SECRETS if 200 <= status < 300 else KNOWN_BEFORE[step]
            assert not [secret for secret in hidden if secret in shown], shown
        # Anything else (KeyError, ValidationError, JSONDecodeError...) fails the test.


@settings(max_examples=150, deadline=None)
@given(message_bodies(), st.sampled_from([200, 202, 400, 404, 500]))
def test_malformed_messages_are_typed_errors(scripted: Scripted, body: bytes, status: int) -> None:
    queue = {**SESSION, "messageQueueUrl": f"{scripted.loopback.url}/svc/queue"}
    scripted.answer("service", Answer(200, json.dumps(queue).encode()))
    with scripted_client(scripted.loopback) as client:
        session = client.create_message_session(1, "listener")
        scripted.answer("service", Answer(status, body))
        try:
            message = session.get_message(0, 1)
        except ScaleSetError as exc:
            # By now the client holds every token of the script.
            shown = f"{exc} {exc!r}"
            assert not [secret for secret in SECRETS if secret in shown], shown
            return
    assert status in (200, 202)
    assert (message is None) == (status == 202 or not body.removeprefix(b"\xef\xbb\xbf").strip())


def test_an_admin_token_that_is_not_a_jwt_is_a_malformed_answer(scripted: Scripted) -> None:
    secret = "not-a-jwt-but-secret-0123456789"
    body = {"url": f"{scripted.loopback.url}/svc/", "token": secret}
    scripted.answer("runner-registration", Answer(201, json.dumps(body).encode()))
    with scripted_client(scripted.loopback) as client, pytest.raises(MalformedResponseError) as bad:
        client.get_runner_scale_set_by_id(1)
    assert "not a JWT" in str(bad.value) and secret not in str(bad.value)


@pytest.mark.parametrize(("status", "body"), [(202, b""), (204, b""), (200, b""), (200, b" \n")])
def test_a_poll_answered_with_no_body_is_no_message(
    scripted: Scripted, status: int, body: bytes
) -> None:
    queue = {**SESSION, "messageQueueUrl": f"{scripted.loopback.url}/svc/queue"}
    scripted.answer("service", Answer(200, json.dumps(queue).encode()))
    with scripted_client(scripted.loopback) as client:
        session = client.create_message_session(1, "listener")
        scripted.answer("service", Answer(status, body))
        assert session.get_message(3, 1) is None


@given(st.binary(max_size=200) | message_bodies())
@example(json.dumps({"messageId": 1, "messageType": QUEUE_TOKEN, "body": ""}).encode())
def test_parsing_a_message_gives_a_message_or_a_malformed_response_error(body: bytes) -> None:
    try:
        message = parse_message(body)
    except MalformedResponseError as exc:
        assert QUEUE_TOKEN not in str(exc)
        return
    envelope = json.loads(body.removeprefix(b"\xef\xbb\xbf"))
    assert message.message_id == envelope["messageId"]
    known = ("JobAvailable", "JobAssigned", "JobStarted", "JobCompleted")
    raw_jobs = json.loads(envelope["body"]) if envelope.get("body") else []
    assert [j.message_type for j in message.jobs] == [
        j["messageType"] for j in raw_jobs if j["messageType"] in known
    ]


def test_a_message_of_another_type_or_with_a_bad_body_is_refused() -> None:
    good = {"messageId": 2, "messageType": "RunnerScaleSetJobMessages", "statistics": STATISTICS}
    with pytest.raises(MalformedResponseError, match="unsupported type"):
        parse_message(json.dumps({**good, "messageType": "Other"}).encode())
    with pytest.raises(MalformedResponseError, match=r"body: 0\.JobStarted\.runnerRequestId"):
        parse_message(
            json.dumps({**good, "body": json.dumps([{"messageType": "JobStarted"}])}).encode()
        )
    with pytest.raises(MalformedResponseError, match=r"statistics\.totalAssignedJobs"):
        missing = {k: v for k, v in STATISTICS.items() if k != "totalAssignedJobs"}
        parse_message(json.dumps({**good, "statistics": missing}).encode())
    # Unknown job message types are skipped; .NET's zero time and nulls read as nothing.
    jobs = [
        {"messageType": "JobSomethingNew"},
        {**JOB, "queueTime": "0001-01-01T00:00:00", "requestLabels": None, "jobId": None},
        {
            "messageType": "JobCompleted",
            "runnerRequestId": 5,
            "finishTime": "2026-01-01T00:00:01.1234567Z",
        },
    ]
    message = parse_message(
        b"\xef\xbb\xbf" + json.dumps({**good, "body": json.dumps(jobs)}).encode()
    )
    available, completed = message.jobs
    assert isinstance(available, JobAvailable) and isinstance(completed, JobCompleted)
    assert (available.queue_time, available.request_labels, available.job_id) == (None, (), "")
    assert completed.finish_time is not None and completed.finish_time.microsecond == 123456


# -- statistics stay consistent with the jobs (a model of the broker, over HTTP) ----------------


OPERATIONS = st.lists(
    st.sampled_from(["submit", "poll", "runner", "take", "complete", "advance"]), max_size=25
)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(OPERATIONS, st.integers(min_value=0, max_value=4))
def test_message_statistics_match_the_jobs_as_a_listener_sees_them(
    loopback: Loopback, operations: list[str], capacity: int
) -> None:
    world = world_of(loopback, {"runner_timeout": 10**6, "session_timeout": 10**6})
    broker, clock = world.broker, world.clock
    # The model: each job's status as this test drove it, and the runners it started.
    status: dict[int, str] = {}
    runners: dict[int, int | None] = {}  # runner id -> request id it runs
    last = 0
    with world.client() as client:
        scale_set = new_scale_set(client)
        session = client.create_message_session(scale_set.id, "listener")
        for step, operation in enumerate(operations):
            if operation == "submit":
                status[broker.submit_job(scale_set.id).request_id] = "available"
            elif operation == "runner":
                jit = client.generate_jit_runner_config(scale_set.id, f"r{step}")
                broker.connect_runner(jit.encoded_jit_config.get_secret_value())
                runners[jit.runner.id] = None
            elif operation == "take":
                idle = [r for r, job in runners.items() if job is None]
                waiting = sorted(j for j, s in status.items() if s == "assigned")
                if idle and waiting:
                    taken = broker.take_job(idle[0])
                    assert taken is not None and taken.request_id == waiting[0]
                    runners[idle[0]], status[waiting[0]] = waiting[0], "running"
            elif operation == "complete":
                busy = [(r, job) for r, job in runners.items() if job is not None]
                if busy:
                    runner_id, job_id = busy[0]
                    broker.complete_job(job_id)
                    del runners[runner_id]
                    status[job_id] = "completed"
            elif operation == "advance":
                clock.advance(60)
            else:
                message = session.get_message(last, capacity)
                if message is None:
                    continue
                expected = (
                    sum(s == "available" for s in status.values()),
                    sum(s in ("assigned", "running") for s in status.values()),
                    sum(s in ("assigned", "running") for s in status.values()),
                    sum(s == "running" for s in status.values()),
                    len(runners),
                    sum(job is not None for job in runners.values()),
                    sum(job is None for job in runners.values()),
                )
                assert stats(message) == expected
                offered = [j.runner_request_id for j in message.jobs_available]
                assert all(status[j] == "available" for j in offered)
                assert len(offered) <= capacity
                session.delete_message(message.message_id)
                last = message.message_id
                for job_id in session.acquire_jobs(offered):
                    status[job_id] = "assigned"
        session.close()


def test_the_hooks_show_one_text_for_one_failure_however_often_it_recurs() -> None:
    """Found in review: the activity id (one per call) and the attempts reached the
    ScaleSetReady condition, so every failed call through an outage rewrote the status, and
    each write synced the deployment again."""
    from hooks.github.scaleset.errors import ScaleSetTransportError, error_for_answer, stable_text

    def answer(status: int, activity: str, attempts: int) -> str:
        headers = {"ActivityId": activity, "X-GitHub-Request-Id": activity.upper()}
        body = b'{"typeName": "Boom", "message": "page ' + activity.encode() + b'"}'
        error = error_for_answer("GET /runnerscalesets", status, headers, body, attempts=attempts)
        return stable_text(error)

    assert (
        answer(502, "a1", 1)
        == answer(503, "b2", 3)
        == ("GET /runnerscalesets failed: scale-set service error (HTTP 5xx)")
    )
    refused = answer(404, "c3", 2)
    assert refused == answer(404, "d4", 1).replace("page d4", "page c3")
    assert "c3" not in refused.replace("page c3", "") and "attempts" not in refused
    gone = ScaleSetTransportError("GET /x failed (attempts=5): ConnectError: <0x7f>")
    assert stable_text(gone) == "GET /x failed: no answer from the scale-set service"
