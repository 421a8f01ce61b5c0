"""Server-side latency of `/sync/runner` and `/finalize/runner` with a warm GitHub cache,
as a ratio to `/healthz` of the same app, measured in the same run.

Run: python -m bench.bench_runner_hooks    Target: the sync hook within 5x the trivial endpoint.
"""

from __future__ import annotations

import json
import logging
import sys
from typing import Any

from bench.asgi_call import median_seconds
from hooks.app import create_app
from hooks.clock import ManualClock, format_time
from hooks.github.cached import CachedGitHub
from hooks.github.port import Scope
from hooks.settings import Settings
from tests.hook_driver import HookDriver, new_runner, running_status
from tests.in_memory_github import InMemoryGitHub

ROUNDS = 400
TARGET = 5.0


def _requests(settings: Settings, github: Any, clock: ManualClock) -> tuple[bytes, bytes]:
    """A running, registered organization runner: one sync and one finalize request."""
    from starlette.testclient import TestClient

    with TestClient(create_app(settings, github=github, clock=clock)) as client:
        driver = HookDriver(client, new_runner({"organization": "acme", "labels": ["linux"]}))
        driver.sync()
        driver.sync()
        driver.set_pod_status(running_status(format_time(clock.now())))
        driver.sync()
        sync_body = json.dumps(driver.request()).encode()
        finalize_body = json.dumps(driver.request(finalizing=True)).encode()
    return sync_body, finalize_body


def main() -> int:
    logging.disable(logging.INFO)
    clock = ManualClock()
    backend = InMemoryGitHub(clock)
    backend.register(Scope(organization="acme"), "example-runner", busy=True)
    settings = Settings.model_validate({"GITHUB_TOKEN": "bench"})
    github = CachedGitHub(backend, settings, clock)
    sync_body, finalize_body = _requests(settings, github, clock)
    app = create_app(settings, github=github, clock=clock)

    trivial = median_seconds(app, "GET", "/healthz", b"", ROUNDS)
    sync = median_seconds(app, "POST", "/sync/runner", sync_body, ROUNDS)
    finalize = median_seconds(app, "POST", "/finalize/runner", finalize_body, ROUNDS)

    print(f"/healthz          median {trivial * 1e6:8.1f} us   (baseline)")
    print(f"/sync/runner      median {sync * 1e6:8.1f} us   ratio {sync / trivial:5.2f}x")
    print(f"/finalize/runner  median {finalize * 1e6:8.1f} us   ratio {finalize / trivial:5.2f}x")
    verdict = "meets" if sync / trivial <= TARGET else "MISSES"
    print(f"sync hook {verdict} the target of {TARGET:.0f}x the trivial endpoint")
    return 0


if __name__ == "__main__":
    sys.exit(main())
