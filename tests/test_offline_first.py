"""A blocking hook is answered on the event loop when GitHub's cached answers suffice, and from
the start again in a worker thread when it must call GitHub (`hooks.github.offline`)."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from github import Auth

from hooks.app import create_app
from hooks.clock import ManualClock, format_time
from hooks.github.cached import CachedGitHub
from hooks.github.offline import WouldBlock, offline, refuse_if_offline
from hooks.github.port import Scope
from hooks.github.pygithub_adapter import PyGithubAdapter
from hooks.settings import Settings
from tests.hook_app import hook_client
from tests.hook_driver import HookDriver, new_runner, running_status
from tests.in_memory_github import InMemoryGitHub

ORG = Scope(organization="acme")


class ThreadRecordingGitHub:
    """The in-memory port, noting the thread each call ran on."""

    def __init__(self, inner: InMemoryGitHub) -> None:
        self.inner = inner
        self.threads: list[tuple[str, str]] = []

    def __getattr__(self, method: str) -> Any:
        call = getattr(self.inner, method)

        def recorded(*args: Any, **kwargs: Any) -> Any:
            self.threads.append((method, threading.current_thread().name))
            return call(*args, **kwargs)

        return recorded


def test_refusal_holds_only_inside_the_block() -> None:
    refuse_if_offline("a call")
    with offline(), pytest.raises(WouldBlock):
        refuse_if_offline("a call")
    refuse_if_offline("a call")


def test_the_cache_answers_offline_from_memory_and_refuses_anything_else(
    settings: Settings, clock: ManualClock, github: InMemoryGitHub
) -> None:
    github.register(ORG, "r1")
    cache = CachedGitHub(github, settings, clock)
    with offline(), pytest.raises(WouldBlock):
        cache.list_runners(ORG)
    assert github.count("list_runners") == 0
    assert [r.name for r in cache.list_runners(ORG)] == ["r1"]  # no flight was left behind
    with offline():
        assert [r.name for r in cache.list_runners(ORG)] == ["r1"]
        with pytest.raises(WouldBlock):
            cache.generate_jit_config(ORG, "r2", ["linux"], 1, "_work")
        with pytest.raises(WouldBlock):
            cache.remove_runner(ORG, 1)
    assert github.count("list_runners") == 1
    assert github.count("generate_jit_config") == github.count("remove_runner") == 0
    with offline():  # the refused JIT config did not drop the cached list
        assert [r.name for r in cache.list_runners(ORG)] == ["r1"]


def test_the_adapter_refuses_offline_before_any_request(clock: ManualClock) -> None:
    # Nothing listens on this port: a request would fail with a transport error.
    adapter = PyGithubAdapter(auth=Auth.Token("t0ken"), clock=clock, base_url="http://127.0.0.1:9")
    with offline(), pytest.raises(WouldBlock):
        adapter.list_runners(ORG)


def test_a_warm_sync_is_answered_on_the_loop_and_a_cold_one_calls_github_from_a_worker(
    settings: Settings, clock: ManualClock, github: InMemoryGitHub
) -> None:
    recording = ThreadRecordingGitHub(github)
    cache = CachedGitHub(recording, settings, clock)
    app = create_app(settings, github=cache, clock=clock)
    with hook_client(app) as client:
        runner = HookDriver(client, new_runner({"organization": "acme"}))
        runner.sync()  # a registration token: GitHub is called
        runner.set_pod_status(running_status(format_time(clock.now())))
        github.register(ORG, "example-runner")
        clock.advance(61)  # the token's answer is kept; the runner list is not yet read
        cold = runner.sync()
        called = list(recording.threads)
        warm = runner.sync()

    assert [method for method, _ in called] == ["registration_token", "list_runners"]
    assert all(thread.startswith("hook-worker") for _, thread in called)
    assert recording.threads == called  # the warm sync called nothing
    assert warm["status"]["registration"] == cold["status"]["registration"]
    assert warm["children"] == cold["children"]
    assert cold["status"]["phase"] == warm["status"]["phase"] == "Running"
