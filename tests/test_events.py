"""Kubernetes Events on runner lifecycle transitions: what is recorded, how often, and that the
objects are Events the API server accepts."""

from __future__ import annotations

import json
import re

import kubernetes_validate
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from starlette.applications import Starlette
from starlette.testclient import TestClient

from arc_sim.store import ObjectStore
from hooks.app import create_app
from hooks.clock import ManualClock, format_time
from hooks.events import (
    EVENTS_PER_MINUTE,
    REPEAT_SECONDS,
    EventLimiter,
    LifecycleEvent,
    event_object,
)
from hooks.github.port import GitHubError, RemoveOutcome, RemoveResult, Scope
from tests.hook_app import WithoutParentReads, hook_settings
from tests.hook_driver import HookDriver, new_runner, running_status
from tests.in_memory_github import InMemoryGitHub

ORG = Scope(organization="acme")
K8S_VERSION = "1.33.0"


# ------------------------------------------------------------------ the limiter


def test_one_event_per_object_and_reason_per_repeat_interval() -> None:
    clock = ManualClock()
    limiter = EventLimiter(clock)
    assert limiter.admit("uid-1", "PodCreated")
    assert not limiter.admit("uid-1", "PodCreated")
    assert limiter.admit("uid-1", "PodDeleted")
    assert limiter.admit("uid-2", "PodCreated")
    clock.advance(REPEAT_SECONDS - 1)
    assert not limiter.admit("uid-1", "PodCreated")
    clock.advance(1)
    assert limiter.admit("uid-1", "PodCreated")


@settings(max_examples=50)
@given(
    st.lists(
        st.tuples(st.integers(0, 300), st.sampled_from(["A", "B", "C"]), st.floats(0, 30)),
        max_size=400,
    )
)
def test_never_more_than_the_cap_in_a_minute_nor_a_repeat(
    calls: list[tuple[int, str, float]],
) -> None:
    clock = ManualClock()
    limiter = EventLimiter(clock, per_minute=20)
    admitted: list[tuple[float, int, str]] = []
    elapsed = 0.0
    for uid, reason, step in calls:
        clock.advance(step)
        elapsed += step
        if limiter.admit(str(uid), reason):
            admitted.append((elapsed, uid, reason))
    for i, (at, uid, reason) in enumerate(admitted):
        window = [a for a in admitted[i:] if a[0] - at < 60]
        assert len(window) <= 20
        repeats = [a for a in admitted[i + 1 :] if (a[1], a[2]) == (uid, reason)]
        assert all(a[0] - at >= REPEAT_SECONDS for a in repeats)
    assert EVENTS_PER_MINUTE > 20  # the default leaves room for a busy cluster


def test_an_event_object_is_a_valid_core_v1_event() -> None:
    runner = new_runner({"organization": "acme"})
    event = event_object(
        runner, LifecycleEvent("PodCreated", "Created pod 'x'" * 200), ManualClock().now()
    )
    kubernetes_validate.validate(event, K8S_VERSION, strict=True)
    assert event["involvedObject"]["uid"] == runner["metadata"]["uid"]
    assert len(event["message"]) == 1024
    assert event["type"] == "Normal"


DNS_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
DNS_LABEL = r"[a-z0-9]([-a-z0-9]{0,30}[a-z0-9])?"


@given(
    name=st.one_of(
        # '-' or '.' where the name is cut short, and anywhere else
        st.sampled_from(["-", "."]).map(lambda sep: "a" * 199 + sep + "b" * 40),
        st.lists(st.from_regex(DNS_LABEL, fullmatch=True), min_size=1, max_size=12)
        .map(".".join)
        .filter(lambda name: len(name) <= 253),
    )
)
def test_an_event_of_any_valid_name_has_a_name_the_api_server_takes(name: str) -> None:
    # Found by a hostile probe: a name whose 200th character is '-' or '.' gave an Event
    # name that is no DNS subdomain, and the Event was refused.
    runner = new_runner({"organization": "acme"})
    runner["metadata"]["name"] = name
    event = event_object(runner, LifecycleEvent("PodCreated", "x"), ManualClock().now())
    event_name = event["metadata"]["name"]
    assert len(event_name) <= 253
    assert DNS_SUBDOMAIN.fullmatch(event_name), event_name


# ------------------------------------------------------------------ over HTTP


@pytest.fixture
def app(github: InMemoryGitHub, clock: ManualClock, store: ObjectStore) -> Starlette:
    """The hook server, writing its Events to `store`."""
    return create_app(hook_settings(), github=github, clock=clock, kube=WithoutParentReads(store))


def events(store: ObjectStore) -> list[tuple[str, str, str]]:
    return [
        (e["involvedObject"]["name"], e["reason"], e["type"]) for e in store.list_objects("Event")
    ]


def test_a_runner_records_its_lifecycle_once_per_transition(
    client: TestClient, github: InMemoryGitHub, clock: ManualClock, store: ObjectStore
) -> None:
    driver = HookDriver(client, new_runner({"organization": "acme", "labels": ["linux"]}))
    driver.sync()
    driver.sync()  # the same facts again: nothing new to say
    assert sorted(events(store)) == [
        ("example-runner", "PodCreated", "Normal"),
        ("example-runner", "RegistrationTokenUpdated", "Normal"),
    ]

    driver.set_pod_status(running_status(format_time(clock.now())))
    github.register(ORG, "example-runner", busy=True)
    github.remove_answers = [RemoveResult(RemoveOutcome.BUSY, message="busy")]
    driver.finalize()
    clock.advance(60)
    driver.finalize()  # still waiting: said once
    assert [r for _, r, _ in events(store)].count("UnregistrationWaiting") == 1

    driver.set_pod_status(running_status(format_time(clock.now()), exit_code=0))
    github.unregister(ORG, "example-runner")  # an ephemeral runner leaves after its job
    driver.finalize()
    assert ("example-runner", "PodDeleted", "Normal") in events(store)
    for event in store.list_objects("Event"):
        kubernetes_validate.validate(event, K8S_VERSION, strict=True)


def test_a_failed_registration_is_a_warning_without_secrets(
    client: TestClient, github: InMemoryGitHub, store: ObjectStore
) -> None:
    github.token_error = GitHubError("403 Resource not accessible by integration", 403)
    driver = HookDriver(client, new_runner({"organization": "acme"}))
    driver.sync()
    warnings = [e for e in store.list_objects("Event") if e["type"] == "Warning"]
    assert [e["reason"] for e in warnings] == ["FailedUpdateRegistrationToken"]
    assert "not accessible" in warnings[0]["message"]
    github.token_error = None
    driver.sync()
    assert "AABBCCTOKEN" not in json.dumps(store.list_objects("Event"))
