"""The Runner hooks over HTTP with Metacontroller-shaped requests: sync, replacement, finalize."""

from __future__ import annotations

import base64
import contextlib
import copy
import json
import logging
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import kubernetes_validate
import orjson
import pytest
from starlette.testclient import TestClient

from hooks.app import create_app
from hooks.clock import ManualClock, format_time
from hooks.github.cached import CachedGitHub
from hooks.github.list_pacing import RateBudget
from hooks.github.port import GitHubError, RemoveOutcome, RemoveResult, Scope
from hooks.lifecycle.incarnation import failure_backoff
from hooks.runner.decide import NAME_CONFLICT_PATIENCE
from hooks.settings import Settings
from tests.hook_app import hook_client, hook_settings
from tests.hook_driver import HookDriver, new_runner, running_status
from tests.in_memory_github import InMemoryGitHub

ORG = Scope(organization="acme")
ORG_SPEC = {"organization": "acme", "labels": ["linux", "gpu"]}
K8S_VERSION = "1.33.0"


def driver_for(
    client: TestClient, spec: dict[str, object] | None = None, **kwargs: object
) -> HookDriver:
    return HookDriver(client, new_runner(ORG_SPEC if spec is None else spec, **kwargs))  # type: ignore[arg-type]


def start_pod(driver: HookDriver, clock: ManualClock, github: InMemoryGitHub) -> None:
    """The kubelet starts the pod and the runner registers."""
    driver.set_pod_status(running_status(format_time(clock.now())))
    github.register(ORG, driver.parent["metadata"]["name"])


def token_in(driver: HookDriver) -> str:
    secret = driver.secret()
    assert secret is not None
    return base64.b64decode(secret["data"]["token"]).decode()


# ---------------------------------------------------------------- creation


def test_new_runner_gets_a_pod_reading_its_token_from_a_secret(
    client: TestClient, github: InMemoryGitHub
) -> None:
    driver = driver_for(client)

    first = driver.sync()
    second = driver.sync()

    assert first["status"]["phase"] == "Created"
    assert second["children"] == first["children"]
    kinds = sorted(c["kind"] for c in first["children"])
    assert kinds == ["Pod", "Secret"]
    pod = next(c for c in second["children"] if c["kind"] == "Pod")
    runner = next(c for c in pod["spec"]["containers"] if c["name"] == "runner")
    token_env = next(e for e in runner["env"] if e["name"] == "RUNNER_TOKEN")
    assert token_env == {
        "name": "RUNNER_TOKEN",
        "valueFrom": {"secretKeyRef": {"name": "example-runner-registration", "key": "token"}},
    }
    assert token_in(driver).startswith("AABBCCTOKEN")
    assert github.count("registration_token") == 1
    for child in second["children"]:
        kubernetes_validate.validate(child, K8S_VERSION, strict=True)


def test_no_token_in_status_pod_or_logs(
    client: TestClient, caplog: pytest.LogCaptureFixture
) -> None:
    driver = driver_for(client)
    with caplog.at_level(logging.DEBUG):
        driver.sync()
        answer = driver.sync()
    token = token_in(driver)

    pod = next(c for c in answer["children"] if c["kind"] == "Pod")
    assert token not in json.dumps(answer["status"])
    assert token not in json.dumps(pod)
    assert token not in caplog.text
    assert "token" not in answer["status"].get("registration", {})


def test_same_request_gives_the_same_answer(client: TestClient) -> None:
    driver = driver_for(client)
    driver.sync()
    driver.sync()
    request = driver.request()

    first = client.post("/sync/runner", json=request).json()
    second = client.post("/sync/runner", json=request).json()

    assert first == second


def test_hook_version_v1_keys_are_understood(client: TestClient) -> None:
    driver = driver_for(client)
    driver.version = "v1"
    driver.sync()
    answer = driver.sync()

    assert sorted(c["kind"] for c in answer["children"]) == ["Pod", "Secret"]


def test_status_mirrors_pod_and_github(
    client: TestClient, clock: ManualClock, github: InMemoryGitHub
) -> None:
    driver = driver_for(client)
    driver.sync()
    driver.sync()
    start_pod(driver, clock, github)
    github.set_busy(ORG, "example-runner", True)

    status = driver.sync()["status"]

    assert status["phase"] == "Running"
    assert status["ready"] is True
    assert status["online"] is True and status["busy"] is True
    assert isinstance(status["runnerId"], int)
    assert status["registration"] == {
        "organization": "acme",
        "labels": ["linux", "gpu"],
        "expiresAt": format_time(clock.now().replace(hour=1)),
    }
    conditions = {c["type"]: c["status"] for c in status["conditions"]}
    assert conditions["Registered"] == "True"


def test_status_is_stable_across_resyncs(
    client: TestClient, clock: ManualClock, github: InMemoryGitHub
) -> None:
    driver = driver_for(client)
    driver.sync()
    driver.sync()
    start_pod(driver, clock, github)
    before = driver.sync()["status"]
    clock.advance(120)

    after = driver.sync()["status"]

    assert after == before


# ---------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ({}, "spec needs enterprise, organization or repository"),
        ({"organization": "acme", "repository": "acme/app"}, "cannot have many fields"),
        ({"repository": "not-a-repo"}, "spec.repository must be OWNER/NAME"),
        ({"organization": "acme", "containerMode": "kubernetes"}, "workVolumeClaimTemplate"),
        ({"organization": "acme", "labels": "not-a-list"}, "labels"),
    ],
)
def test_invalid_runner_gets_a_condition_and_no_pod(
    client: TestClient, github: InMemoryGitHub, spec: dict[str, object], message: str
) -> None:
    driver = driver_for(client, spec)

    answer = driver.sync()

    assert answer["children"] == []
    valid = next(c for c in answer["status"]["conditions"] if c["type"] == "Valid")
    assert valid["status"] == "False" and valid["reason"] == "InvalidSpec"
    assert message in valid["message"]
    assert github.calls == []


@pytest.mark.parametrize(
    "spec",
    [
        {"image": "summerwind/actions-runner:v2.330.0-ubuntu-22.04"},
        {
            "containers": [
                {"name": "runner", "image": "ghcr.io/actions-runner-controller/actions-runner-dind"}
            ]
        },
    ],
)
def test_a_jit_runner_on_arcs_image_is_refused_rather_than_never_starting(
    client: TestClient, github: InMemoryGitHub, spec: dict[str, object]
) -> None:
    """ARC's image's startup.sh exits without RUNNER_TOKEN: its JIT pod would fail for ever."""
    jit = {"arc-hooks.dev/registration": "jit"}
    driver = driver_for(client, {**ORG_SPEC, **spec}, annotations=jit)

    answer = driver.sync()

    assert answer["children"] == []
    valid = next(c for c in answer["status"]["conditions"] if c["type"] == "Valid")
    assert valid["status"] == "False"
    assert (
        "summerwind/actions-runner, whose startup.sh needs a registration token"
        in (valid["message"])
    )
    assert github.calls == []
    # A command of the spec's own is its own start: taken on trust.
    own_start = [{"name": "runner", "command": ["/runner/run.sh"]}]
    trusted = driver_for(client, {**ORG_SPEC, **spec, "containers": own_start}, annotations=jit)
    assert trusted.sync()["children"]
    # With a token, ARC's image is what it is made for.
    assert driver_for(client, {**ORG_SPEC, **spec}).sync()["children"]


def test_a_jit_runner_with_dockerd_inside_needs_an_image_that_has_it(
    client: TestClient, github: InMemoryGitHub
) -> None:
    """GitHub's image, the JIT default, has no dockerd (found in review)."""
    jit = {"arc-hooks.dev/registration": "jit"}
    spec = {**ORG_SPEC, "dockerdWithinRunnerContainer": True}

    answer = driver_for(client, spec, annotations=jit).sync()

    valid = next(c for c in answer["status"]["conditions"] if c["type"] == "Valid")
    assert valid["status"] == "False"
    assert "dockerdWithinRunnerContainer needs a runner image with dockerd" in valid["message"]
    named = {**spec, "image": "example.com/runner-dind-jit:1"}
    assert driver_for(client, named, annotations=jit).sync()["children"]


def test_a_spec_with_thousands_of_problems_gets_a_status_etcd_can_store(
    client: TestClient,
) -> None:
    """Found by the hostile-input fuzzer: 8,000 env entries named `=` made a status of 1.9 MiB,
    past etcd's limit, so the write failed and the problem was never shown."""
    env = [{"name": f"=bad{index}", "value": "x"} for index in range(8000)]
    driver = driver_for(client, {"organization": "acme", "env": env})

    answer = driver.sync()

    valid = next(c for c in answer["status"]["conditions"] if c["type"] == "Valid")
    assert valid["status"] == "False"
    assert "more" in valid["message"]
    assert len(orjson.dumps(answer["status"])) < 16 * 1024


def test_runner_made_invalid_keeps_its_pod(client: TestClient) -> None:
    driver = driver_for(client)
    driver.sync()
    driver.sync()
    pod_uid = driver.pod()["metadata"]["uid"]  # type: ignore[index]
    driver.parent["spec"] = {"organization": "acme", "repository": "acme/app"}

    answer = driver.sync()

    assert sorted(c["kind"] for c in answer["children"]) == ["Pod", "Secret"]
    assert driver.pod()["metadata"]["uid"] == pod_uid  # type: ignore[index]


@pytest.mark.parametrize(
    ("body", "status", "fragment"),
    [
        (b"{not json", 400, "not valid JSON"),
        (b"[1, 2]", 400, "JSON object"),
        (b'{"children": {}}', 422, "parent"),
        (b'{"parent": {"metadata": {}}}', 422, "parent.metadata.name"),
        # No object is served without a name: nothing is asked of GitHub for one.
        (b'{"parent": {"metadata": {"name": ""}}}', 422, "parent.metadata.name must not be"),
        (b'{"parent": {"metadata": {"name": "x"}}, "children": []}', 422, "children"),
        # Only a JSON bool finalizes: a string or number is not read as one.
        (b'{"parent": {"metadata": {"name": "x"}}, "finalizing": "yes"}', 422, "finalizing"),
        (b'{"parent": {"metadata": {"name": "x"}}, "finalizing": 1}', 422, "finalizing"),
        # ObjectMeta's generation is an int64: text or a bool is not one, nor read as one.
        (b'{"parent": {"metadata": {"name": "x", "generation": "2"}}}', 422, "generation"),
        (b'{"parent": {"metadata": {"name": "x", "generation": true}}}', 422, "generation"),
    ],
)
def test_malformed_hook_request_gets_a_4xx(
    client: TestClient, body: bytes, status: int, fragment: str
) -> None:
    for path in ("/sync/runner", "/finalize/runner"):
        response = client.post(path, content=body, headers={"content-type": "application/json"})
        assert response.status_code == status
        assert fragment in response.json()["error"]


def test_a_request_over_the_size_limit_gets_413_naming_the_setting(
    github: InMemoryGitHub, clock: ManualClock
) -> None:
    """Metacontroller sends every child in one request, so a very large set meets the limit:
    the answer says which setting raises it. A request at the limit is read."""
    limit = 1024 * 1024
    settings = hook_settings({"HOOK_MAX_REQUEST_BYTES": limit})
    runner = new_runner({"organization": "acme", "labels": ["linux"]})
    request = {"parent": runner, "children": {}}
    at_limit = json.dumps(request).encode()
    at_limit += b" " * (limit - len(at_limit))  # JSON allows trailing whitespace
    over = at_limit + b" "
    headers = {"content-type": "application/json"}
    with hook_client(create_app(settings, github=github, clock=clock)) as client:
        accepted = client.post("/sync/runner", content=at_limit, headers=headers)
        refused = {
            path: client.post(path, content=over, headers=headers)
            for path in ("/sync/runner", "/finalize/runner", "/customize/runnerset")
        }

    assert accepted.status_code == 200
    for response in refused.values():
        assert response.status_code == 413
        assert "HOOK_MAX_REQUEST_BYTES" in response.json()["error"]
        assert f"{limit + 1} bytes" in response.json()["error"]


# ---------------------------------------------------------------- finalize


def running_driver(
    client: TestClient, clock: ManualClock, github: InMemoryGitHub, **kw: object
) -> HookDriver:
    driver = driver_for(client, **kw)  # type: ignore[arg-type]
    driver.sync()
    driver.sync()
    start_pod(driver, clock, github)
    driver.sync()
    return driver


def test_finalize_busy_static_runner_keeps_pod_and_retries_after_the_delay(
    client: TestClient, clock: ManualClock, github: InMemoryGitHub
) -> None:
    driver = running_driver(client, clock, github, spec={**ORG_SPEC, "ephemeral": False})
    github.set_busy(ORG, "example-runner", True)

    first = driver.finalize()
    clock.advance(10)
    second = driver.finalize()

    for answer in (first, second):
        assert answer["finalized"] is False
        assert "Pod" in [c["kind"] for c in answer["children"]]
        assert answer["resyncAfterSeconds"] > 0
    assert github.count("remove_runner") == 1
    assert second["resyncAfterSeconds"] == pytest.approx(50)
    clock.advance(50)
    driver.finalize()
    assert github.count("remove_runner") == 2


def test_finalize_busy_ephemeral_runner_waits_without_calling_github(
    client: TestClient, clock: ManualClock, github: InMemoryGitHub
) -> None:
    driver = running_driver(client, clock, github)
    github.set_busy(ORG, "example-runner", True)

    for _ in range(20):
        answer = driver.finalize()
        assert answer["finalized"] is False
        clock.advance(60)
    # The job ends: the runner unregisters itself and its container exits 0.
    github.unregister(ORG, "example-runner")
    driver.set_pod_status({"phase": "Succeeded"})
    released = driver.finalize()
    done = driver.finalize()

    assert github.count("remove_runner") == 1
    assert "Pod" not in [c["kind"] for c in released["children"]]
    assert done["finalized"] is True


def waits_for_the_busy_job_then_goes(
    driver: HookDriver, clock: ManualClock, github: InMemoryGitHub
) -> None:
    """Finalize keeps the busy runner's pod for minutes; once its job is over, the runner is
    unregistered, its pod goes and the Runner is finalized."""
    for _ in range(3):
        answer = driver.finalize()
        assert answer["finalized"] is False
        assert "Pod" in [c["kind"] for c in answer["children"]]
        clock.advance(60)

    github.set_busy(ORG, "example-runner", False)
    driver.finalize()
    assert driver.finalize()["finalized"] is True
    assert github.runners[ORG] == []


SPEC_BREAKS = [
    pytest.param(lambda spec: spec.update(organization=1), id="scope-not-text"),
    pytest.param(lambda spec: spec.pop("organization"), id="no-scope"),
    pytest.param(lambda spec: spec.update(labels=[1]), id="labels-not-text"),
    pytest.param(lambda spec: spec.update(group=True), id="group-not-text"),
    pytest.param(lambda spec: spec.update(env="PATH=/bin"), id="env-not-a-list"),
    pytest.param(lambda spec: spec.update(ephemeral="false"), id="ephemeral-as-text"),
    pytest.param(lambda spec: spec.update(dockerMTU="1500"), id="mtu-as-text"),
]


@pytest.mark.parametrize("break_spec", SPEC_BREAKS)
@pytest.mark.parametrize("status_kept", [True, False], ids=["status", "status-lost"])
def test_a_runner_deleted_with_a_spec_that_does_not_read_still_waits_for_its_job(
    client: TestClient,
    clock: ManualClock,
    github: InMemoryGitHub,
    break_spec: Any,
    status_kept: bool,
) -> None:
    """Where the runner registered is still known (its status, its pod's env): a busy runner is
    waited for as with a valid spec, its pod kept; the problem is reported. Then it goes."""
    driver = running_driver(client, clock, github, spec={**ORG_SPEC, "ephemeral": False})
    github.set_busy(ORG, "example-runner", True)
    break_spec(driver.parent["spec"])
    if not status_kept:
        driver.parent["status"] = {"phase": 7}  # edited into something that does not read

    for _ in range(3):
        answer = driver.finalize()
        assert answer["finalized"] is False
        assert "Pod" in [c["kind"] for c in answer["children"]]
        valid = next(c for c in answer["status"]["conditions"] if c["type"] == "Valid")
        assert valid["status"] == "False"
        clock.advance(60)

    github.set_busy(ORG, "example-runner", False)
    released = driver.finalize()
    done = driver.finalize()
    assert "Pod" not in [c["kind"] for c in released["children"]]
    assert github.runners[ORG] == []
    assert done["finalized"] is True


@pytest.mark.parametrize(
    "break_parent",
    [
        pytest.param(
            lambda parent: parent["status"].update(failures="x"), id="a-status-field-unreadable"
        ),
        pytest.param(
            lambda parent: parent["metadata"].update(annotations=None), id="null-annotations"
        ),
        pytest.param(lambda parent: parent["metadata"].update(labels=None), id="null-labels"),
    ],
)
def test_a_runner_deleted_with_a_broken_spec_and_a_pod_without_scope_env_waits_for_its_job(
    client: TestClient, clock: ManualClock, github: InMemoryGitHub, break_parent: Any
) -> None:
    """The pod's env names no scope (a template that sets it another way): status still records
    where the runner registered, one unreadable field of it or a null in metadata
    notwithstanding."""
    driver = running_driver(client, clock, github, spec={**ORG_SPEC, "ephemeral": False})
    github.set_busy(ORG, "example-runner", True)
    pod = driver.pod()
    assert pod is not None
    for container in pod["spec"]["containers"]:
        container["env"] = [e for e in container.get("env", []) if e["name"] != "RUNNER_ORG"]
    driver.parent["spec"]["organization"] = 1
    break_parent(driver.parent)

    waits_for_the_busy_job_then_goes(driver, clock, github)


def test_a_scope_the_users_env_also_sets_is_read_as_the_kubelet_sets_it(
    client: TestClient, clock: ManualClock, github: InMemoryGitHub
) -> None:
    """The spec's env names another organization too: the pod builder's value comes last, and
    wins, so the runner registers where the spec says, and is looked for and waited for there."""
    env = [{"name": "RUNNER_ORG", "value": "legacy-org"}]
    driver = running_driver(
        client, clock, github, spec={**ORG_SPEC, "ephemeral": False, "env": env}
    )
    github.set_busy(ORG, "example-runner", True)

    for _ in range(12):
        answer = driver.sync()
        registered = next(c for c in answer["status"]["conditions"] if c["type"] == "Registered")
        assert registered["reason"] == "RunnerOnline"
        clock.advance(120)
    assert answer["status"]["registration"]["organization"] == ORG.organization
    for _ in range(3):
        answer = driver.finalize()
        assert "Pod" in [c["kind"] for c in answer["children"]]
        clock.advance(60)
    assert ("list_runners", "/orgs/legacy-org") not in github.calls


def test_a_busy_runner_whose_organization_was_changed_finishes_its_job_then_moves(
    client: TestClient, clock: ManualClock, github: InMemoryGitHub
) -> None:
    """The running pod's runner is looked for where its env says it registered: busy there, it
    is replaced only after its job (however long, past the registration timeout), unregistered
    there, and the new pod registers in the new organization with a token issued for it."""
    driver = running_driver(client, clock, github, spec={**ORG_SPEC, "ephemeral": False})
    github.set_busy(ORG, "example-runner", True)
    driver.parent["spec"]["organization"] = "another-org"

    for _ in range(20):
        answer = driver.sync()
        assert "Pod" in [c["kind"] for c in answer["children"]]
        registered = next(c for c in answer["status"]["conditions"] if c["type"] == "Registered")
        assert registered["reason"] == "RunnerOnline"
        clock.advance(120)
    assert github.count("remove_runner") == 0

    github.set_busy(ORG, "example-runner", False)
    for _ in range(3):
        answer = driver.sync()
    assert github.runners[ORG] == []
    assert answer["status"]["registration"]["organization"] == "another-org"
    assert ("registration_token", "/orgs/another-org") in github.calls


def test_a_new_scopes_pod_never_starts_with_the_old_scopes_token(
    client: TestClient, clock: ManualClock, github: InMemoryGitHub
) -> None:
    """The organization changes while GitHub refuses tokens for a while: status keeps the old
    registration until a token of the new one is in hand, and the new pod gets that token."""
    driver = running_driver(client, clock, github, spec={**ORG_SPEC, "ephemeral": False})
    secret = driver.secret()
    assert secret is not None
    old_token = secret["data"]["token"]
    driver.parent["spec"]["organization"] = "another-org"
    github.token_error = GitHubError("unavailable", 503)
    for _ in range(3):
        answer = driver.sync()
        assert "Pod" not in [c["kind"] for c in answer["children"]]
        assert answer["status"]["registration"]["organization"] == ORG.organization
        clock.advance(10)

    github.token_error = None
    answer = driver.sync()

    secret = driver.secret()
    assert secret is not None and secret["data"]["token"] != old_token
    assert "Pod" in [c["kind"] for c in answer["children"]]
    assert answer["status"]["registration"]["organization"] == "another-org"


def test_a_runner_deleted_after_its_organization_was_changed_waits_for_its_job_where_it_is(
    client: TestClient, clock: ManualClock, github: InMemoryGitHub
) -> None:
    """The running pod's runner registered where the pod's env says: waited for there."""
    driver = running_driver(client, clock, github, spec={**ORG_SPEC, "ephemeral": False})
    github.set_busy(ORG, "example-runner", True)
    driver.parent["spec"]["organization"] = "another-org"
    driver.sync()  # the edit is seen before the deletion

    waits_for_the_busy_job_then_goes(driver, clock, github)


def test_finalize_idle_runner_unregisters_then_releases_pod_then_finishes(
    client: TestClient, clock: ManualClock, github: InMemoryGitHub
) -> None:
    driver = running_driver(client, clock, github)

    released = driver.finalize()
    finished = driver.finalize()

    assert released["finalized"] is False
    assert [c["kind"] for c in released["children"]] == ["Secret"]
    assert released["status"]["gracefulStop"]["outcome"] == "Unregistered"
    assert finished["finalized"] is True
    assert github.runners[ORG] == []
    assert github.count("remove_runner") == 1


def test_finalize_before_registration_waits_for_the_grace_period(
    client: TestClient, clock: ManualClock, github: InMemoryGitHub
) -> None:
    driver = driver_for(client)
    driver.sync()
    driver.sync()
    driver.set_pod_status(running_status(format_time(clock.now())))  # not registered yet

    waiting = driver.finalize()
    clock.advance(600)
    released = driver.finalize()

    assert waiting["finalized"] is False and waiting["resyncAfterSeconds"] == 60
    assert "Pod" in [c["kind"] for c in waiting["children"]]
    assert "Pod" not in [c["kind"] for c in released["children"]]


def test_finalize_with_pod_gone_removes_a_leftover_registration(
    client: TestClient, clock: ManualClock, github: InMemoryGitHub
) -> None:
    driver = running_driver(client, clock, github)
    driver.delete_pod_now()  # killed out of band; its registration stays offline on GitHub

    answer = driver.finalize()

    assert answer["finalized"] is True
    assert github.runners[ORG] == []


def test_finalize_rate_limited_retries_after_the_reset(
    client: TestClient, clock: ManualClock, github: InMemoryGitHub
) -> None:
    from hooks.github.port import RemoveOutcome, RemoveResult

    driver = running_driver(client, clock, github)
    github.remove_answers.append(RemoveResult(RemoveOutcome.RATE_LIMITED, retry_after=900))

    answer = driver.finalize()

    assert answer["finalized"] is False
    assert answer["resyncAfterSeconds"] == 900


# ---------------------------------------------------------------- replacement


def _fail_pod(driver: HookDriver, clock: ManualClock, *, ran_seconds: float = 0) -> None:
    """The runner container ends with 1 after running `ran_seconds`; the stop releases the pod."""
    now = clock.now()
    status = running_status(format_time(now), exit_code=1)
    started = format_time(now - timedelta(seconds=ran_seconds))
    status["containerStatuses"][0]["state"]["terminated"]["startedAt"] = started
    driver.set_pod_status(status)
    driver.sync()  # stop: the runner is not running -> pod released
    assert driver.pod() is None


def _condition(driver: HookDriver, kind: str) -> dict[str, Any]:
    return next(c for c in driver.last["status"]["conditions"] if c["type"] == kind)


def test_failed_pod_is_replaced_after_backoff_and_reports_failed_after_the_limit(
    client: TestClient, clock: ManualClock, github: InMemoryGitHub, settings: Settings
) -> None:
    driver = driver_for(client)
    driver.sync()
    driver.sync()
    for failure in range(1, settings.pod_max_failures + 1):
        assert driver.pod() is not None
        _fail_pod(driver, clock)
        answer = driver.sync()
        assert answer["status"]["failures"] == failure
        if failure < settings.pod_max_failures:
            clock.advance(failure_backoff(failure, settings))
            driver.sync()
            driver.sync()

    # Failed, waiting the longest backoff before the next pod: not given up for good.
    assert driver.pod() is None
    assert driver.last["status"]["phase"] == "Failed"
    assert _condition(driver, "Failed")["status"] == "True"
    assert driver.last["resyncAfterSeconds"] == pytest.approx(settings.pod_failure_backoff_max)


def test_a_failed_runner_keeps_trying_and_recovers_once_its_pods_run(
    client: TestClient, clock: ManualClock, github: InMemoryGitHub, settings: Settings
) -> None:
    """Found by an ARC conformance check: a Runner that had failed `RUNNER_POD_MAX_FAILURES`
    times kept no pod for good, and its RunnerReplicaSet never replaced it (ARC replaces a
    failed runner without limit), so a pool stayed short after an outage until someone deleted
    its Runners by hand."""
    driver = driver_for(client)
    driver.sync()
    driver.sync()
    for failure in range(1, settings.pod_max_failures + 3):
        _fail_pod(driver, clock)
        driver.sync()
        clock.advance(failure_backoff(failure, settings) - 1)
        driver.sync()
        assert driver.pod() is None, "a new pod before the backoff ended"
        clock.advance(1)
        driver.sync()
        driver.sync()
        assert driver.pod() is not None, f"no new pod after failure {failure}"
    assert driver.last["status"]["failures"] == settings.pod_max_failures + 2

    # The cause is fixed: the next pod runs and registers.
    driver.set_pod_status(running_status(format_time(clock.now())))
    github.register(ORG, "example-runner")
    clock.advance(60)
    driver.sync()
    assert driver.pod() is not None
    assert driver.last["status"]["phase"] == "Running"
    assert _condition(driver, "Failed")["status"] == "False"


def test_a_failed_runner_waits_longer_between_pods_up_to_half_an_hour(
    settings: Settings,
) -> None:
    """Found in review: at a fixed 5 minutes, a hundred JIT runners failing on a bad image
    cost thousands of GitHub calls an hour (a JIT config, a removal, a list per pod)."""
    limit = settings.pod_max_failures
    waits = [failure_backoff(failures, settings) for failures in range(limit - 1, limit + 6)]

    assert waits == [80, 300, 600, 1200, 1800, 1800, 1800]


def test_a_runner_that_ran_a_while_before_failing_starts_a_new_row_of_failures(
    client: TestClient, clock: ManualClock, settings: Settings
) -> None:
    driver = driver_for(client)
    driver.parent["status"] = {
        "failures": settings.pod_max_failures - 1,
        "lastFailureTime": format_time(clock.now() - timedelta(hours=2)),
    }
    driver.sync()
    driver.sync()

    _fail_pod(driver, clock, ran_seconds=600)
    answer = driver.sync()

    assert answer["status"]["failures"] == 1
    assert answer["status"]["phase"] == "Pending"
    assert answer["resyncAfterSeconds"] == pytest.approx(settings.pod_failure_backoff)


def _failed_for_good(driver: HookDriver, clock: ManualClock, settings: Settings) -> None:
    driver.sync()
    driver.sync()
    for failure in range(1, settings.pod_max_failures + 1):
        _fail_pod(driver, clock)
        driver.sync()
        if failure < settings.pod_max_failures:
            clock.advance(failure_backoff(failure, settings))
            driver.sync()
            driver.sync()
    assert driver.last["status"]["phase"] == "Failed" and driver.pod() is None


def test_a_failed_runner_whose_spec_is_fixed_starts_a_pod_at_once(
    client: TestClient, clock: ManualClock, settings: Settings
) -> None:
    """A fixed image should not wait out a backoff of up to half an hour earned by the old one
    (ARC tries again at once, whatever changed)."""
    driver = driver_for(client)
    _failed_for_good(driver, clock, settings)

    driver.parent["spec"] = {**ORG_SPEC, "image": "example/runner:fixed"}
    driver.parent["metadata"]["generation"] += 1
    driver.sync()
    driver.sync()

    pod = driver.pod()
    assert pod is not None
    assert pod["spec"]["containers"][0]["image"] == "example/runner:fixed"
    assert "failures" not in driver.last["status"]  # a new row
    assert driver.last["status"]["phase"] != "Failed"


def test_a_failed_runner_whose_spec_stays_waits_out_its_backoff(
    client: TestClient, clock: ManualClock, settings: Settings
) -> None:
    driver = driver_for(client)
    _failed_for_good(driver, clock, settings)

    clock.advance(settings.pod_failure_backoff_max - 1)
    driver.sync()  # the same generation: the status says it was synced already

    assert driver.pod() is None
    assert driver.last["status"]["failures"] == settings.pod_max_failures


def test_a_failed_runner_whose_status_lacks_the_observed_generation_keeps_its_backoff(
    client: TestClient, clock: ManualClock, settings: Settings
) -> None:
    """A status that does not say which generation it saw proves no edit: were it read as
    one, every sync would start a pod, a hot loop of pods and GitHub calls."""
    driver = driver_for(client)
    _failed_for_good(driver, clock, settings)
    del driver.parent["status"]["observedGeneration"]

    driver.sync()

    assert driver.pod() is None
    assert driver.last["status"]["failures"] == settings.pod_max_failures


def test_deleting_a_failed_runner_keeps_its_row_of_failures(
    client: TestClient, clock: ManualClock, settings: Settings
) -> None:
    """Found in review: the API server moves the generation when it marks the deletion, which
    read as an edit emptied the status' failures while it still said Failed."""
    driver = driver_for(client)
    _failed_for_good(driver, clock, settings)

    answer = driver.finalize()

    assert answer["status"]["failures"] == settings.pod_max_failures


@pytest.mark.parametrize(
    "recorded", ["yesterday", "0001-01-01T00:00:00+14:00", "2100-01-01T00:00:00Z"]
)
def test_a_failure_time_unreadable_or_ahead_of_now_holds_no_pod_back(
    client: TestClient, recorded: str
) -> None:
    """Found by a hostile-input probe: status.lastFailureTime edited by hand made every sync a
    500; dated ahead of now, it held the pod back until then."""
    driver = driver_for(client)
    driver.parent["status"] = {"failures": 2, "lastFailureTime": recorded}

    driver.sync()  # asserts a 200

    assert driver.pod() is not None


def test_completed_ephemeral_runner_gets_a_new_pod_when_standalone(
    client: TestClient, clock: ManualClock, github: InMemoryGitHub
) -> None:
    driver = running_driver(client, clock, github)
    old_uid = driver.pod()["metadata"]["uid"]  # type: ignore[index]
    github.unregister(ORG, "example-runner")
    driver.set_pod_status({"phase": "Succeeded"})

    driver.sync()  # released
    driver.sync()  # new pod
    assert driver.pod() is not None
    assert driver.pod()["metadata"]["uid"] != old_uid  # type: ignore[index]


def test_deleting_a_replaced_runner_never_trusts_the_old_registration_id(
    client: TestClient, clock: ManualClock, github: InMemoryGitHub
) -> None:
    driver = running_driver(client, clock, github)
    old_id = driver.last["status"]["runnerId"]
    driver.parent["spec"] = {**ORG_SPEC, "image": "example/runner:v2"}
    driver.sync()  # idle: unregistered by id, pod released
    driver.sync()  # the replacement pod
    start_pod(driver, clock, github)  # registers under a new id and takes a job at once
    github.set_busy(ORG, "example-runner", True)
    assert driver.parent["status"]["gracefulStop"]["runnerId"] == old_id

    answer = driver.finalize()

    assert "Pod" in [c["kind"] for c in answer["children"]]
    assert answer["finalized"] is False
    assert answer["status"]["gracefulStop"]["runnerId"] != old_id


def test_completed_ephemeral_runner_of_a_replica_set_reports_completed(
    client: TestClient, clock: ManualClock, github: InMemoryGitHub
) -> None:
    driver = running_driver(client, clock, github, owner_kind="RunnerReplicaSet")
    github.unregister(ORG, "example-runner")
    driver.set_pod_status({"phase": "Succeeded"})

    driver.sync()
    answer = driver.sync()
    again = driver.sync()

    assert answer["status"]["phase"] == "Completed"
    assert "Pod" not in [c["kind"] for c in again["children"]]


def test_template_change_replaces_an_idle_runner_but_not_a_busy_one(
    client: TestClient, clock: ManualClock, github: InMemoryGitHub
) -> None:
    driver = running_driver(client, clock, github)
    github.set_busy(ORG, "example-runner", True)
    driver.parent["spec"] = {**ORG_SPEC, "image": "example/runner:v2"}

    busy = driver.sync()
    assert "Pod" in [c["kind"] for c in busy["children"]]
    assert github.count("remove_runner") == 0

    github.set_busy(ORG, "example-runner", False)
    released = driver.sync()
    assert "Pod" not in [c["kind"] for c in released["children"]]
    assert github.count("remove_runner") == 1
    driver.sync()
    pod = driver.pod()
    assert pod is not None
    assert pod["spec"]["containers"][0]["image"] == "example/runner:v2"


def test_runner_that_never_registers_is_replaced_after_the_timeout(
    client: TestClient, clock: ManualClock, github: InMemoryGitHub
) -> None:
    driver = driver_for(client)
    driver.sync()
    driver.sync()
    driver.set_pod_status(running_status(format_time(clock.now())))
    waiting = driver.sync()
    assert waiting["resyncAfterSeconds"] <= 60

    clock.advance(601)
    driver.sync()
    assert driver.pod() is None
    driver.sync()
    assert driver.pod() is not None


@contextlib.contextmanager
def paced_runner(clock: ManualClock, github: InMemoryGitHub) -> Iterator[HookDriver]:
    """A ready Runner whose scope's lists are paced 649 s apart: the token also lists 450
    repositories of one page each (`hooks.github.list_pacing`)."""
    budget = RateBudget(5000, 5000, clock.now() + timedelta(hours=1))
    cached = CachedGitHub(github, hook_settings(), clock, rate_budget=lambda: budget)
    for index in range(450):
        cached.list_runners(Scope(repository=f"acme/repo-{index}"))
    with hook_client(create_app(hook_settings(), github=cached, clock=clock)) as client:
        driver = HookDriver(client, new_runner(ORG_SPEC))
        driver.sync()
        driver.sync()
        driver.set_pod_status(running_status(format_time(clock.now())))
        driver.sync()  # reads the scope's list: not registered yet
        listing = cached.list_runners(ORG)
        assert listing.fresh_until is not None and listing.asked_at is not None
        assert (listing.fresh_until - listing.asked_at).total_seconds() > 600
        yield driver


def test_a_runner_online_since_a_list_paced_past_the_timeout_is_not_taken_for_unregistered(
    clock: ManualClock, github: InMemoryGitHub
) -> None:
    # Found by review: with lists paced longer than the registration timeout, the list read
    # at the timeout predated the runner's registration, and a runner online since 15 s after
    # its pod was ready was stopped and unregistered as never registered.
    with paced_runner(clock, github) as driver:
        clock.advance(15)
        github.register(ORG, "example-runner")
        for _ in range(24):  # 720 s
            clock.advance(30)
            driver.sync()
        assert github.count("remove_runner") == 0
        assert driver.pod() is not None
    assert [r.name for r in github.runners[ORG]] == ["example-runner"]


def test_a_runner_that_never_registers_is_replaced_on_the_first_list_after_the_timeout(
    clock: ManualClock, github: InMemoryGitHub
) -> None:
    with paced_runner(clock, github) as driver:
        clock.advance(601)
        driver.sync()  # the list is from before the timeout ran out: it does not decide
        assert driver.pod() is not None
        clock.advance(60)  # the list paced 649 s apart is replaced
        driver.sync()
        assert driver.pod() is None  # stopped: not registered in a list asked after the timeout


def test_a_busy_runner_is_not_let_go_when_github_forbids_its_removal(
    client: TestClient, clock: ManualClock, github: InMemoryGitHub
) -> None:
    """Found by a hostile probe: credentials that may not remove runners (403) let a busy
    runner's pod go, as ARC does, cutting its job off. Its job is waited for; an idle one
    still goes as in ARC."""
    driver = running_driver(client, clock, github, spec={**ORG_SPEC, "ephemeral": False})
    github.set_busy(ORG, "example-runner", True)
    clock.advance(91)
    assert driver.sync()["status"]["busy"] is True
    forbidden = RemoveResult(RemoveOutcome.FORBIDDEN, message="Resource not accessible")
    github.remove_answers.extend([forbidden, forbidden])

    held = driver.finalize()
    clock.advance(60)
    still = driver.finalize()

    for answer in (held, still):
        assert "Pod" in [c["kind"] for c in answer["children"]]
        assert "the runner is busy" in answer["status"]["gracefulStop"]["message"]
    assert github.count("remove_runner") == 2

    clock.advance(60)  # the credentials work again, the job is over
    github.set_busy(ORG, "example-runner", False)
    released = driver.finalize()
    assert "Pod" not in [c["kind"] for c in released["children"]]
    assert github.runners[ORG] == []


def test_a_runner_with_an_unbuildable_spec_and_no_pod_is_finalized_without_a_500(
    client: TestClient, clock: ManualClock, github: InMemoryGitHub
) -> None:
    """Found by a review: the name its runner registers under was read from a pod built from
    a spec that builds none (a container's env that is not a list)."""
    driver = running_driver(client, clock, github)
    driver.parent["spec"] = {**ORG_SPEC, "containers": [{"name": "runner", "env": "x"}]}
    driver.delete_pod_now()
    github.unregister(ORG, "example-runner")

    answers = [driver.finalize() for _ in range(3)]  # each asserts a 200

    assert answers[-1]["finalized"] is True


def test_finalize_never_removes_a_namesake_of_the_runner_object_when_its_env_names_another(
    client: TestClient, clock: ManualClock, github: InMemoryGitHub
) -> None:
    """Found by a review: the finalize's first DELETE, prepared ahead of the decision, looked
    the Runner's own name up, not the RUNNER_NAME its runner registered under."""
    spec = {**ORG_SPEC, "ephemeral": False, "env": [{"name": "RUNNER_NAME", "value": "box-a"}]}
    driver = driver_for(client, spec)
    driver.sync()
    driver.sync()
    driver.set_pod_status(running_status(format_time(clock.now())))
    github.register(ORG, "box-a")
    unrelated = github.register(ORG, "example-runner")  # another runner, by chance so named
    clock.advance(91)
    driver.sync()

    driver.finalize()
    driver.finalize()

    assert [r.id for r in github.runners[ORG]] == [unrelated]


def test_a_runner_registered_under_the_name_its_env_sets_is_found_and_stopped_by_it(
    client: TestClient, clock: ManualClock, github: InMemoryGitHub
) -> None:
    """Found by a hostile probe: a token-mode runner whose spec sets RUNNER_NAME registers
    under that name (the pod builder keeps it, as ARC does), but was looked for under the
    Runner's: NotRegistered, then replaced mid-job at the registration timeout."""
    spec = {
        **ORG_SPEC,
        "ephemeral": False,
        "env": [{"name": "RUNNER_NAME", "value": "build-box-1"}],
    }
    driver = driver_for(client, spec)
    driver.sync()
    driver.sync()
    pod = driver.pod()
    assert pod is not None
    env = [e for e in pod["spec"]["containers"][0]["env"] if e["name"] == "RUNNER_NAME"]
    assert env == [{"name": "RUNNER_NAME", "value": "build-box-1"}]
    driver.set_pod_status(running_status(format_time(clock.now())))
    runner_id = github.register(ORG, "build-box-1", busy=True)

    registered = driver.sync()
    assert registered["status"]["runnerId"] == runner_id
    clock.advance(3600)  # far past the registration timeout
    driver.sync()
    assert driver.pod() is not None

    held = driver.finalize()  # busy: its pod stays
    assert "Pod" in [c["kind"] for c in held["children"]]
    github.set_busy(ORG, "build-box-1", False)
    clock.advance(60)
    released = driver.finalize()

    assert "Pod" not in [c["kind"] for c in released["children"]]
    assert github.runners_named(ORG, "build-box-1") == []


# ---------------------------------------------------------------- JIT


def test_jit_runner_registers_once_and_its_deletion_is_exact(
    client: TestClient, clock: ManualClock, github: InMemoryGitHub
) -> None:
    driver = driver_for(client, annotations={"arc-hooks.dev/registration": "jit"})

    first = driver.sync()
    second = driver.sync()
    third = driver.sync()

    assert github.count("generate_jit_config") == 1
    runner_id = first["status"]["runnerId"]
    assert isinstance(runner_id, int)
    secret = driver.secret()
    assert secret is not None and "jitConfig" in secret["data"]
    pod = next(c for c in second["children"] if c["kind"] == "Pod")
    env = {e["name"]: e for e in pod["spec"]["containers"][0]["env"]}
    assert "RUNNER_TOKEN" not in env
    assert env["ACTIONS_RUNNER_INPUT_JITCONFIG"]["valueFrom"]["secretKeyRef"]["key"] == "jitConfig"
    assert third["status"]["runnerId"] == runner_id

    lists_before = github.count("list_runners")
    released = driver.finalize()  # pod never started: the registration goes by its id
    assert github.count("remove_runner") == 1
    assert github.count("list_runners") == lists_before
    assert "Pod" not in [c["kind"] for c in released["children"]]
    assert driver.finalize()["finalized"] is True


@pytest.mark.parametrize(
    ("extra", "folder"),
    [
        ({}, "/runner/_work"),
        ({"workDir": "/work/here"}, "/work/here"),
        # No volume there: the runner's own default, under its directory (an image's user
        # may not create /runner itself).
        ({"dockerEnabled": False, "volumeSizeLimit": "0"}, "_work"),
    ],
)
def test_a_jit_configs_work_folder_is_where_the_pod_mounts_its_work_volume(
    client: TestClient, extra: dict[str, object], folder: str
) -> None:
    """Relative, the work folder lies under the image's runner directory (`/home/runner` in
    ghcr.io/actions/actions-runner), off the work volume the docker sidecar shares."""
    spec: dict[str, object] = {**ORG_SPEC, **extra}
    driver = driver_for(client, spec, annotations={"arc-hooks.dev/registration": "jit"})
    driver.sync()
    answer = driver.sync()

    secret = driver.secret()
    assert secret is not None
    files = json.loads(base64.b64decode(base64.b64decode(secret["data"]["jitConfig"])))
    settings = json.loads(base64.b64decode(files[".runner"]))
    assert settings["WorkFolder"] == folder
    if folder.startswith("/"):
        pod = next(c for c in answer["children"] if c["kind"] == "Pod")
        runner = pod["spec"]["containers"][0]
        mounts = [m["mountPath"] for m in runner["volumeMounts"]]
        assert any(folder == path or folder.startswith(path + "/") for path in mounts)


def test_a_jit_runner_whose_secret_and_status_disagree_is_looked_for_by_name(
    settings: Settings, github: InMemoryGitHub, clock: ManualClock
) -> None:
    """Found by a hostile probe under informer lag: a sync that saw neither the pod nor the
    Secret met its own registration as a name conflict, removed it and generated a second
    config; another replica wrote the first Secret back. The Runner's deletion trusted the
    Secret's id, which the cache remembered removed, and left the second registration."""
    cached = CachedGitHub(github, settings, clock)
    with hook_client(create_app(settings, github=cached, clock=clock)) as client:
        driver = driver_for(client, annotations={"arc-hooks.dev/registration": "jit"})
        driver.sync()
        secret = driver.secret()
        assert secret is not None
        stale = copy.deepcopy(secret)
        name = secret["metadata"]["name"]
        # Neither in view for longer than the name conflict's patience: the conflict, the
        # removal, then a second config.
        current = None
        for _ in range(int(NAME_CONFLICT_PATIENCE // 5) + 3):
            driver.children.pop(("Secret", name), None)
            driver.delete_pod_now()
            driver.sync()
            clock.advance(5)
            current = driver.secret()
            if current is not None and current["data"]["runnerId"] != stale["data"]["runnerId"]:
                break
        assert current is not None and current["data"]["runnerId"] != stale["data"]["runnerId"]
        assert len(github.runners[ORG]) == 1
        driver.children[("Secret", name)] = stale  # written back by another replica
        driver.set_pod_status(running_status(format_time(clock.now())))

        finished = [driver.finalize()["finalized"] for _ in range(4)]

    assert finished[-1] is True
    assert github.runners[ORG] == []


def test_a_jit_config_whose_secret_is_not_in_view_yet_is_left_to_arrive(
    settings: Settings, github: InMemoryGitHub, clock: ManualClock
) -> None:
    """Found by a hostile probe (scale-set mode) and then in plain JIT mode: a sync that did not
    see yet the Secret and pod its previous sync made met that config's registration as a name
    conflict, and removed it; the pod then started with a config GitHub no longer knew, and
    failed. A RunnerDeployment of 20 ephemeral JIT runners completed 103 of 150 jobs in
    half an hour, its Runners giving up one after the other (RUNNER_POD_MAX_FAILURES). Such a
    sync now asks GitHub nothing: status records the config's runner id, generated moments ago
    (asking had cost a 409 for most new runners: 287 configs for 170 runners in
    `scenarios/ephemeral-churn-jit.yaml`)."""
    with hook_client(create_app(settings, github=github, clock=clock)) as client:
        driver = driver_for(client, annotations={"arc-hooks.dev/registration": "jit"})
        driver.sync()
        made = (driver.secret(), driver.pod())
        assert made[0] is not None and made[1] is not None
        first_id = made[0]["data"]["runnerId"]
        for key in [("Secret", made[0]["metadata"]["name"]), ("Pod", made[1]["metadata"]["name"])]:
            driver.children.pop(key)  # Metacontroller's caches have not seen them yet

        lagging = driver.sync()
        assert github.count("remove_runner") == 0
        assert github.count("generate_jit_config") == 1
        ready = next(c for c in lagging["status"]["conditions"] if c["type"] == "RegistrationReady")
        assert ready["reason"] == "JitConfigGenerated"
        assert lagging["resyncAfterSeconds"] <= 5
        clock.advance(2)
        driver.children[("Secret", made[0]["metadata"]["name"])] = made[0]  # they arrive
        driver.children[("Pod", made[1]["metadata"]["name"])] = made[1]
        driver.sync()

    assert github.count("remove_runner") == 0
    assert [r.id for r in github.runners[ORG]] == [int(base64.b64decode(first_id))]


def test_a_jit_config_whose_secret_never_arrives_is_removed_and_generated_again(
    settings: Settings, github: InMemoryGitHub, clock: ManualClock
) -> None:
    """Its answer was lost (or the Secret deleted): once the config has stood
    `NAME_CONFLICT_PATIENCE` unseen, the conflict it meets has stood as long."""
    with hook_client(create_app(settings, github=github, clock=clock)) as client:
        driver = driver_for(client, annotations={"arc-hooks.dev/registration": "jit"})
        driver.sync()
        made = (driver.secret(), driver.pod())
        assert made[0] is not None and made[1] is not None
        driver.children.pop(("Secret", made[0]["metadata"]["name"]))
        driver.delete_pod_now()
        clock.advance(NAME_CONFLICT_PATIENCE)
        driver.sync()
        assert github.count("generate_jit_config") == 2  # met as the conflict it is
        assert github.count("remove_runner") == 1
        clock.advance(5)
        driver.sync()

    secret = driver.secret()
    assert secret is not None and secret["data"]["runnerId"] != made[0]["data"]["runnerId"]
    assert github.count("generate_jit_config") == 3
    assert len(github.runners[ORG]) == 1


def _runner_id(secret: dict[str, Any] | None) -> int:
    assert secret is not None
    return int(base64.b64decode(secret["data"]["runnerId"]))


def _through_one_job_to_the_next_config(
    client: TestClient, github: InMemoryGitHub, clock: ManualClock
) -> tuple[HookDriver, int]:
    """A standalone ephemeral JIT Runner whose first pod ran its job and completed, and the
    config generated for its next pod: the driver, and the first runner's id."""
    driver = driver_for(client, annotations={"arc-hooks.dev/registration": "jit"})
    driver.sync()
    first = _runner_id(driver.secret())
    driver.set_pod_status(running_status(format_time(clock.now())))
    github.fake.set_online(ORG, first)
    clock.advance(60)
    driver.sync()
    github.fake.delete_runner(ORG, first)  # the ephemeral runner did its job and left
    driver.set_pod_status(running_status(format_time(clock.now()), exit_code=0))
    for _ in range(10):
        clock.advance(1)
        answer = driver.sync()
        if not any(child["kind"] == "Pod" for child in answer["children"]):
            driver.delete_pod_now()
        if _runner_id(driver.secret()) != first and driver.pod() is not None:
            break
    return driver, first


def test_a_standalone_ephemeral_runners_next_config_is_not_taken_for_a_leftover(
    settings: Settings, github: InMemoryGitHub, clock: ManualClock
) -> None:
    """Found in review: once a standalone ephemeral JIT Runner's pod completed, a sync that
    did not see the next pod yet checked again for a registration the stopped runner left,
    by name, found the next pod's config (JIT registers at generation, under the same name)
    and removed it: that pod failed, and the Runner ended Failed after a few jobs."""
    with hook_client(create_app(settings, github=github, clock=clock)) as client:
        driver, first = _through_one_job_to_the_next_config(client, github, clock)
        following = _runner_id(driver.secret())
        assert following != first
        pod = driver.pod()
        assert pod is not None
        driver.children.pop(("Pod", pod["metadata"]["name"]))  # not in the next sync's view
        clock.advance(1)
        driver.sync()

    assert [runner.id for runner in github.runners[ORG]] == [following]


def test_a_runner_deleted_before_its_next_pod_is_seen_removes_that_pods_config(
    settings: Settings, github: InMemoryGitHub, clock: ManualClock
) -> None:
    """The completed pod's stop is done; the config generated for the next pod is registered
    under the same name. Deleting the Runner then must remove that registration too."""
    with hook_client(create_app(settings, github=github, clock=clock)) as client:
        driver, _ = _through_one_job_to_the_next_config(client, github, clock)
        assert len(github.runners[ORG]) == 1  # the next pod's config
        driver.delete_pod_now()  # the Runner is deleted before that pod ever ran
        finished = False
        for _ in range(6):
            clock.advance(30)
            finished = driver.finalize()["finalized"]
            if finished:
                break

    assert finished is True
    assert github.runners[ORG] == []


def test_a_config_generated_after_an_earlier_one_is_waited_for_as_long(
    settings: Settings, github: InMemoryGitHub, clock: ManualClock
) -> None:
    """Found in review: when the config was generated is recorded in status
    (`jitConfigTime`); the `RegistrationReady` condition, true already, kept the first
    config's time, so a later config looked long unseen to the next sync that did not see
    its Secret, and was removed at once."""
    with hook_client(create_app(settings, github=github, clock=clock)) as client:
        driver = driver_for(client, annotations={"arc-hooks.dev/registration": "jit"})
        driver.sync()
        first = driver.secret()
        assert first is not None
        driver.set_pod_status(running_status(format_time(clock.now())))
        clock.advance(600)
        driver.sync()
        driver.children.pop(("Secret", first["metadata"]["name"]))  # deleted by someone
        driver.delete_pod_now()
        for _ in range(20):
            clock.advance(5)
            driver.sync()
            if driver.secret() is not None and _runner_id(driver.secret()) != _runner_id(first):
                break
        following = _runner_id(driver.secret())
        assert driver.parent["status"]["jitConfigTime"] == format_time(clock.now())
        removed = github.count("remove_runner")
        made = dict(driver.children)
        driver.children.clear()  # Metacontroller's caches have not seen them yet
        clock.advance(1)
        driver.sync()
        driver.children.update(made)  # they arrive
        clock.advance(1)
        driver.sync()

    assert github.count("remove_runner") == removed
    assert following in [runner.id for runner in github.runners[ORG]]


def test_a_name_conflict_that_stays_is_removed_and_a_config_generated_again(
    settings: Settings, github: InMemoryGitHub, clock: ManualClock
) -> None:
    """A config whose answer was lost (or a leftover of the name) never arrives: once the
    conflict has stood `NAME_CONFLICT_PATIENCE`, the idle registration is removed."""
    github.register(ORG, "example-runner")  # a leftover of the name
    with hook_client(create_app(settings, github=github, clock=clock)) as client:
        driver = driver_for(client, annotations={"arc-hooks.dev/registration": "jit"})
        driver.sync()
        assert github.count("remove_runner") == 0 and driver.secret() is None
        clock.advance(NAME_CONFLICT_PATIENCE)
        driver.sync()
        assert github.count("remove_runner") == 1
        clock.advance(5)
        driver.sync()

    assert driver.secret() is not None and driver.pod() is not None


# ---------------------------------------------------------------- server


def test_health_readiness_and_metrics(client: TestClient) -> None:
    driver_for(client).sync()

    assert client.get("/healthz").status_code == 200
    assert client.get("/readyz").status_code == 200
    metrics = client.get("/metrics").text
    assert 'arc_hooks_hook_duration_seconds_count{outcome="ok",path="/sync/runner"}' in metrics


def test_not_ready_without_credentials(github: InMemoryGitHub, clock: ManualClock) -> None:
    with TestClient(create_app(Settings(), github=github, clock=clock)) as bare:
        response = bare.get("/readyz")
    assert response.status_code == 503
    assert "GITHUB_TOKEN" in response.text


def finish_on_the_next_list(
    driver: HookDriver, clock: ManualClock, settings: Settings
) -> dict[str, Any]:
    """The pod is gone: the Runner waits for a list of its scope newer than the runner's
    stop, due within the list's period, then finishes on it."""
    waiting = driver.finalize()
    assert waiting["finalized"] is False
    assert 0 < waiting["resyncAfterSeconds"] <= settings.list_runners_cache_ttl + 1
    # No pod, no job: not counted busy while it waits (PercentageRunnersBusy reads it).
    assert waiting["status"]["busy"] is False
    clock.advance(waiting["resyncAfterSeconds"])
    return driver.finalize()


@pytest.mark.parametrize("exit_reported_as", ["container-exit-0", "pod-succeeded"])
def test_a_completed_ephemeral_runner_being_deleted_finishes_without_stale_cached_answers(
    settings: Settings, github: InMemoryGitHub, clock: ManualClock, exit_reported_as: str
) -> None:
    """The Runner is deleted while its ephemeral runner works; the job then ends. Answers the
    cache remembered while the job ran (busy) must not hold the Runner up once the container
    exited: the pod is released at once, then the Runner finishes on the scope's next runner
    list (no call of its own: the runner removed itself), with nothing leaked."""
    cached = CachedGitHub(github, settings, clock)
    with hook_client(create_app(settings, github=cached, clock=clock)) as client:
        driver = running_driver(client, clock, github)
        # The cached runner list is refreshed: it lists the runner now.
        clock.advance(settings.list_runners_cache_ttl + 1)
        driver.sync()
        github.set_busy(ORG, "example-runner", True)
        waiting = driver.finalize()  # DELETE answers 422: the cache remembers "busy"
        assert waiting["finalized"] is False
        assert waiting["status"]["gracefulStop"]["waitingForCompletion"] is True
        clock.advance(20)

        # The job ends: the runner removes its own registration and its container exits 0.
        github.unregister(ORG, "example-runner")
        if exit_reported_as == "pod-succeeded":
            driver.set_pod_status({"phase": "Succeeded"})
        else:
            driver.set_pod_status(running_status(format_time(clock.now()), exit_code=0))
        released = driver.finalize()
        assert "Pod" not in [c["kind"] for c in released["children"]]
        assert released["finalized"] is False

        finished = finish_on_the_next_list(driver, clock, settings)

    assert finished["finalized"] is True, finished["status"]
    assert github.runners[ORG] == []
    assert github.count("remove_runner") == 1  # the one that answered "busy"
    assert github.count("runners_named") == 0


def test_a_runner_still_listed_after_its_container_exited_is_removed(
    settings: Settings, github: InMemoryGitHub, clock: ManualClock
) -> None:
    """No registration may leak on the way: the exit is no proof the runner removed itself."""
    cached = CachedGitHub(github, settings, clock)
    with hook_client(create_app(settings, github=cached, clock=clock)) as client:
        driver = running_driver(client, clock, github)
        clock.advance(settings.list_runners_cache_ttl + 1)
        driver.sync()
        github.set_busy(ORG, "example-runner", True)
        driver.finalize()
        clock.advance(20)
        github.set_busy(ORG, "example-runner", False)  # idle, but still registered
        driver.set_pod_status(running_status(format_time(clock.now()), exit_code=0))
        driver.finalize()
        finished = finish_on_the_next_list(driver, clock, settings)

    assert finished["finalized"] is True, finished["status"]
    assert github.runners[ORG] == []
    assert github.count("remove_runner") == 2
