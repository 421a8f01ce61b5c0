"""Server-side latency of `/sync/runner` and `/finalize/runner` with a warm GitHub cache,
as a ratio to `/healthz` of the same app, measured in the same run.

Run: python -m bench.bench_runner_hooks [--log] [--repeats N]
Target: the sync hook within 5x the trivial endpoint.

The three endpoints are measured in interleaved blocks (`--repeats`), and the median block is
reported with the range over all blocks: on a small VM single blocks vary by tens of percent.
`--log` turns the one-line-per-hook JSON log on (as in production), written to /dev/null.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
from collections.abc import Sequence
from typing import Any

from bench.asgi_call import BENCH_HOOK_TOKEN, BENCH_SETTINGS, expect_no_cluster, median_seconds
from hooks.app import create_app
from hooks.clock import ManualClock, format_time
from hooks.github.cached import CachedGitHub
from hooks.github.port import Scope
from hooks.logs import configure_logging
from hooks.settings import Settings
from tests.hook_driver import HookDriver, new_runner, running_status
from tests.in_memory_github import InMemoryGitHub

ROUNDS = 400
REPEATS = 5
TARGET = 5.0


def runner_hook_requests(
    settings: Settings, github: Any, clock: ManualClock
) -> tuple[bytes, bytes]:
    """A running, registered organization runner: one sync and one finalize request."""
    from starlette.testclient import TestClient

    app = create_app(settings, github=github, clock=clock)
    with TestClient(app, headers={"Authorization": f"Bearer {BENCH_HOOK_TOKEN}"}) as client:
        driver = HookDriver(client, new_runner({"organization": "acme", "labels": ["linux"]}))
        driver.sync()
        driver.sync()
        driver.set_pod_status(running_status(format_time(clock.now())))
        driver.sync()
        # Compact, as Metacontroller's Go encoder writes it.
        sync_body = json.dumps(driver.request(), separators=(",", ":")).encode()
        finalize_body = json.dumps(driver.request(finalizing=True), separators=(",", ":")).encode()
    return sync_body, finalize_body


def _log_to_devnull() -> None:
    configure_logging("INFO")
    handler = logging.getLogger().handlers[0]
    assert isinstance(handler, logging.StreamHandler)
    handler.setStream(open(os.devnull, "w"))  # noqa: SIM115 - lives as long as the process


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.bench_runner_hooks",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--log", action="store_true", help="INFO logging on (to /dev/null)")
    parser.add_argument(
        "--repeats",
        type=int,
        default=REPEATS,
        help="interleaved blocks (default: %(default)s)",
    )
    parser.add_argument(
        "--rounds", type=int, default=ROUNDS, help="calls per block (default: %(default)s)"
    )
    args = parser.parse_args(argv)
    expect_no_cluster()
    if args.log:
        _log_to_devnull()
    else:
        logging.disable(logging.INFO)

    clock = ManualClock()
    backend = InMemoryGitHub(clock)
    backend.register(Scope(organization="acme"), "example-runner", busy=True)
    settings = Settings.model_validate(BENCH_SETTINGS)
    github = CachedGitHub(backend, settings, clock)
    sync_body, finalize_body = runner_hook_requests(settings, github, clock)
    app = create_app(settings, github=github, clock=clock)

    blocks = []
    for _ in range(args.repeats):
        trivial = median_seconds(app, "GET", "/healthz", b"", args.rounds)
        sync = median_seconds(app, "POST", "/sync/runner", sync_body, args.rounds)
        finalize = median_seconds(app, "POST", "/finalize/runner", finalize_body, args.rounds)
        blocks.append((trivial, sync, finalize, sync / trivial, finalize / trivial))

    def median(column: int) -> float:
        values = sorted(block[column] for block in blocks)
        return values[len(values) // 2]

    def spread(column: int) -> str:
        values = [block[column] for block in blocks]
        return f"{min(values):5.2f}-{max(values):5.2f}"

    print(f"INFO logging {'on' if args.log else 'off'}; {args.repeats} blocks of {args.rounds}")
    print(f"/healthz          median {median(0) * 1e6:8.1f} us   (baseline)")
    print(
        f"/sync/runner      median {median(1) * 1e6:8.1f} us   "
        f"ratio {median(3):5.2f}x  (blocks {spread(3)})"
    )
    print(
        f"/finalize/runner  median {median(2) * 1e6:8.1f} us   "
        f"ratio {median(4):5.2f}x  (blocks {spread(4)})"
    )
    verdict = "meets" if median(3) <= TARGET else "MISSES"
    print(f"sync hook {verdict} the target of {TARGET:.0f}x the trivial endpoint")
    return 0


if __name__ == "__main__":
    sys.exit(main())
