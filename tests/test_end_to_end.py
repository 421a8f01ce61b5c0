"""The acceptance path over real HTTP: the hook server (PyGithub adapter, cache) on loopback,
talking to the fake GitHub on loopback, driven with Metacontroller v2 requests."""

from __future__ import annotations

import base64
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from arc_sim.fake_github import FakeGitHub
from arc_sim.kube_port import StoreKube
from arc_sim.loopback import serve_loopback
from arc_sim.server_side import kube_side
from arc_sim.store import ObjectStore
from hooks.app import create_app
from hooks.clock import ManualClock, format_time
from hooks.github.port import Scope
from hooks.kube.port import CONFIG_MAPS, KubeError, Resource
from hooks.settings import Settings
from tests.hook_app import HOOK_AUTH, HOOK_TOKEN, hook_settings
from tests.hook_driver import HookDriver, new_runner, running_status

PAT = "ghp_" + "e2e0" * 9
ORG = Scope(organization="acme")
DELETE_RUNNER = "DELETE /orgs/{org}/actions/runners/{runner_id}"


@dataclass
class World:
    clock: ManualClock
    github: FakeGitHub
    hooks: httpx.Client
    settings: Settings

    def runner_agent_registers(self, driver: HookDriver) -> int:
        """What the runner container does with the token the hook put in its Secret."""
        secret = driver.secret()
        assert secret is not None
        token = base64.b64decode(secret["data"]["token"]).decode()
        name = driver.parent["metadata"]["name"]
        runner = self.github.register_runner(ORG, name, ["linux"], token)
        self.github.set_online(ORG, runner.id)
        driver.set_pod_status(running_status(format_time(self.clock.now())))
        return runner.id

    def deletes(self) -> int:
        return self.github.request_counts()[DELETE_RUNNER]


@pytest.fixture
def world(clock: ManualClock, fake_github: FakeGitHub) -> Iterator[World]:
    fake_github.add_personal_access_token(PAT)
    with serve_loopback(fake_github.app) as github_url:
        settings = hook_settings({"GITHUB_URL": github_url, "GITHUB_TOKEN": PAT})
        with (
            serve_loopback(create_app(settings, clock=clock)) as hooks_url,
            httpx.Client(base_url=hooks_url, timeout=10, headers=HOOK_AUTH) as hooks,
        ):
            yield World(clock, fake_github, hooks, settings)


def test_new_organization_runner_gets_a_pod_and_a_secret(world: World) -> None:
    driver = HookDriver(world.hooks, new_runner({"organization": "acme", "labels": ["linux"]}))

    answer = driver.sync()

    kinds = sorted(child["kind"] for child in answer["children"])
    assert kinds == ["Pod", "Secret"]
    pod = next(child for child in answer["children"] if child["kind"] == "Pod")
    secret = next(child for child in answer["children"] if child["kind"] == "Secret")
    env = {e["name"]: e for e in pod["spec"]["containers"][0]["env"]}
    assert env["RUNNER_TOKEN"]["valueFrom"]["secretKeyRef"] == {
        "name": secret["metadata"]["name"],
        "key": "token",
    }
    assert env["GITHUB_URL"]["value"] == "https://github.com/"
    token = base64.b64decode(secret["data"]["token"]).decode()
    assert token not in str(answer["status"]) and token not in str(pod)
    assert world.github.request_counts()["POST /orgs/{org}/actions/runners/registration-token"] == 1


def test_finalize_walks_the_decision_table_over_http(world: World) -> None:
    static = {"organization": "acme", "labels": ["linux"], "ephemeral": False}
    driver = HookDriver(world.hooks, new_runner(static))
    driver.sync()
    runner_id = world.runner_agent_registers(driver)
    driver.sync()
    world.github.set_busy(ORG, runner_id, True)

    busy = [driver.finalize() for _ in range(5)]  # Metacontroller may call as often as it likes

    for answer in busy:
        assert answer["finalized"] is False
        assert "Pod" in [child["kind"] for child in answer["children"]]
        assert answer["resyncAfterSeconds"] > 0
    assert world.deletes() == 1

    world.clock.advance(world.settings.unregistration_retry_delay)
    world.github.set_busy(ORG, runner_id, False)
    released = driver.finalize()
    finished = driver.finalize()

    assert "Pod" not in [child["kind"] for child in released["children"]]
    assert released["finalized"] is False
    assert finished["finalized"] is True
    assert world.deletes() == 2
    assert world.github.runners(ORG) == []


def test_busy_ephemeral_runner_is_not_asked_again_while_it_works(world: World) -> None:
    driver = HookDriver(world.hooks, new_runner({"organization": "acme"}))
    driver.sync()
    runner_id = world.runner_agent_registers(driver)
    world.github.set_busy(ORG, runner_id, True)

    for _ in range(10):
        assert driver.finalize()["finalized"] is False
        world.clock.advance(300)

    assert world.deletes() == 1


def test_malformed_body_gets_a_4xx_over_http(world: World) -> None:
    response = world.hooks.post("/sync/runner", content=b"{", headers={"content-type": "json"})
    assert response.status_code == 400


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "Ctrl-C"])
def test_serve_command_starts_answers_and_stops_on_a_signal(
    tmp_path: Path, stop: signal.Signals
) -> None:
    port = _free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "HOOK"))}
    env["GITHUB_TOKEN"] = PAT
    token_file = tmp_path / "token"
    token_file.write_text(HOOK_TOKEN + "\n")
    env["HOOK_BEARER_TOKEN_FILE"] = str(token_file)
    server = subprocess.Popen(
        [sys.executable, "-m", "hooks", "serve", "--port", str(port)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    try:
        ready = _poll(f"http://127.0.0.1:{port}/readyz", server)
        assert ready == 200
        hook = f"http://127.0.0.1:{port}/customize/runnerdeployment"
        request = {"controller": {}, "parent": {"metadata": {"name": "d", "namespace": "ci"}}}
        assert httpx.post(hook, json=request, headers=HOOK_AUTH).status_code == 200
        assert httpx.post(hook, json=request).status_code == 401
        server.send_signal(stop)
        output, _ = server.communicate(timeout=30)
    finally:
        if server.poll() is None:
            server.kill()
    # uvicorn shuts down gracefully, then re-raises the signal so the exit status tells why;
    # Ctrl-C ends there without a traceback (it had printed one after the clean shutdown).
    assert server.returncode in (0, -stop)
    assert b"Finished server process" in output
    assert b"Traceback" not in output
    assert PAT.encode() not in output
    assert HOOK_TOKEN.encode() not in output


def _poll(url: str, server: subprocess.Popen[bytes]) -> int:
    """Bounded wait for the server to come up (a startup wait, not a timing assertion)."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise AssertionError(f"server exited with {server.returncode}")
        try:
            return httpx.get(url, timeout=1).status_code
        except httpx.TransportError:
            time.sleep(0.05)
    raise AssertionError("server did not start within 30 s")


class ConfigMapsOnly:
    """An API server that answers the ConfigMap calls only (the Runners these tests drive are
    not in it: a fresh read of one fails, and the hook decides on what it was sent)."""

    def __init__(self, kube: Any) -> None:
        self._kube = kube

    def __getattr__(self, name: str) -> Any:
        call = getattr(self._kube, name)

        async def only_config_maps(resource: Resource, *args: Any, **kwargs: Any) -> Any:
            if resource != CONFIG_MAPS:
                raise KubeError(f"{resource.plural} is forbidden", 403)
            return await call(resource, *args, **kwargs)

        return only_config_maps


def test_two_replicas_share_one_runner_list_through_the_api_server(
    clock: ManualClock, fake_github: FakeGitHub
) -> None:
    """As deployed: each server reaches the ConfigMaps through its own event loop (bound when
    uvicorn starts it) from the worker thread that lists; the second replica lists nothing."""
    fake_github.add_personal_access_token(PAT)
    store = ObjectStore(clock)
    kube = ConfigMapsOnly(kube_side(StoreKube(store), threading.RLock()))  # shared by 2 loops
    with serve_loopback(fake_github.app) as github_url:
        settings = hook_settings(
            {
                "GITHUB_URL": github_url,
                "GITHUB_TOKEN": PAT,
                "SHARED_RUNNER_LISTS_NAMESPACE": "arc-hooks",
            }
        )
        with (
            serve_loopback(create_app(settings, clock=clock, kube=kube)) as first_url,
            serve_loopback(create_app(settings, clock=clock, kube=kube)) as second_url,
            httpx.Client(base_url=first_url, timeout=10, headers=HOOK_AUTH) as first,
            httpx.Client(base_url=second_url, timeout=10, headers=HOOK_AUTH) as second,
        ):
            world = World(clock, fake_github, first, settings)
            static = {"organization": "acme", "labels": ["linux"], "ephemeral": False}
            driver = HookDriver(first, new_runner(static))
            driver.sync()
            world.runner_agent_registers(driver)
            listed = driver.sync()
            driver.client = second
            also_listed = driver.sync()

    lists = fake_github.request_counts()["GET /orgs/{org}/actions/runners"]
    assert lists == 1
    assert listed["status"]["online"] is True and also_listed["status"]["online"] is True
    (shared,) = store.list_objects("ConfigMap")
    assert shared["metadata"]["namespace"] == "arc-hooks"
    assert PAT not in str(shared)
