"""Fixtures shared by the test files: a clock, the GitHub doubles and the hook server on them.

They build on each other (`github` and `store` run on `clock`; `app` is the hook server of
`settings` on `github` and `clock`; `client` calls `app`), so a file overrides only what differs
for it, with a fixture of the same name: its own `settings`, an `app` with a Kubernetes API, a
`github` that is the simulated GitHub. Scenario helpers (worlds from scenarios/*.yaml, the
invariants of a clean run) are plain functions, in tests/sim_scenarios.py.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from starlette.applications import Starlette
from starlette.testclient import TestClient

from arc_sim.fake_github import FakeGitHub
from arc_sim.store import ObjectStore
from hooks.app import create_app
from hooks.clock import ManualClock
from hooks.settings import Settings
from tests.hook_app import hook_client, hook_settings
from tests.in_memory_github import InMemoryGitHub


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The longest simulated runs first: started last, one would keep a worker busy alone."""
    items.sort(key=lambda item: item.get_closest_marker("long_run") is None)


@pytest.fixture
def clock() -> ManualClock:
    """Virtual time at 2026-01-01T00:00Z (ManualClock's start; files' START and T0 name it)."""
    return ManualClock()


@pytest.fixture
def github(clock: ManualClock) -> InMemoryGitHub:
    """The in-memory GitHub port on `clock`: scripted answers, every call recorded. Files whose
    `github` is the simulated GitHub override it with `fake_github`."""
    return InMemoryGitHub(clock)


@pytest.fixture
def fake_github(clock: ManualClock) -> FakeGitHub:
    """The simulated GitHub (REST API, jobs, runners) on `clock`, with no token yet."""
    return FakeGitHub(clock)


@pytest.fixture
def store(clock: ManualClock) -> ObjectStore:
    """An empty simulated API server on `clock`."""
    return ObjectStore(clock)


@pytest.fixture
def settings() -> Settings:
    """GitHub credentials and the hook token (`tests.hook_app.hook_settings`)."""
    return hook_settings()


@pytest.fixture
def app(settings: Settings, github: InMemoryGitHub, clock: ManualClock) -> Starlette:
    """The hook server on `github` and `clock`."""
    return create_app(settings, github=github, clock=clock)


@pytest.fixture
def client(app: Starlette) -> Iterator[TestClient]:
    """`app`, started, called with the Bearer token Metacontroller sends."""
    with hook_client(app) as test_client:
        yield test_client
