"""Where the time of one warm `/sync/runner` call goes, stage by stage, each timed alone.

Run: python -m bench.bench_breakdown

Stages timed in a tight loop run faster than inside a whole request (caches stay warm), so
these figures explain the ratio of `bench_runner_hooks` rather than add up to it exactly.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import sys
import time
from collections.abc import Awaitable, Callable, Sequence

import orjson
from starlette.concurrency import run_in_threadpool

from bench.asgi_call import BENCH_SETTINGS, expect_no_cluster
from bench.bench_runner_hooks import runner_hook_requests
from hooks.clock import ManualClock
from hooks.deps import HookDeps
from hooks.github.cached import CachedGitHub
from hooks.github.port import Scope
from hooks.metacontroller import CompositeHookRequest
from hooks.resources.runner import Runner
from hooks.runner.controller import finalize_runner, sync_runner
from hooks.runner.pod import build_runner_pod
from hooks.settings import Settings
from hooks.workers import WorkerThreads
from tests.in_memory_github import InMemoryGitHub

CALLS = 3000


def _median_us(calls: int, call: Callable[[], object]) -> float:
    times = []
    for _ in range(calls):
        started = time.perf_counter()
        call()
        times.append(time.perf_counter() - started)
    return sorted(times)[calls // 2] * 1e6


def _median_async_us(calls: int, call: Callable[[], Awaitable[object]]) -> float:
    async def run() -> list[float]:
        times = []
        for _ in range(calls):
            started = time.perf_counter()
            await call()
            times.append(time.perf_counter() - started)
        return times

    return sorted(asyncio.run(run()))[calls // 2] * 1e6


def _nothing() -> None:
    return None


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.bench_breakdown",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--calls",
        type=int,
        default=CALLS,
        help="timed calls per stage; the median is printed (default: %(default)s)",
    )
    args = parser.parse_args(argv)
    calls: int = args.calls
    logging.disable(logging.INFO)
    expect_no_cluster()
    clock = ManualClock()
    backend = InMemoryGitHub(clock)
    backend.register(Scope(organization="acme"), "example-runner", busy=True)
    settings = Settings.model_validate(BENCH_SETTINGS)
    github = CachedGitHub(backend, settings, clock)
    sync_body, finalize_body = runner_hook_requests(settings, github, clock)
    deps = HookDeps(github, clock, settings)
    document = orjson.loads(sync_body)
    request = CompositeHookRequest.model_validate(document)
    finalize_request = CompositeHookRequest.model_validate(orjson.loads(finalize_body))
    runner = Runner.model_validate(request.parent)
    wire = sync_runner(request, deps).to_wire()
    workers = WorkerThreads()

    rows = [
        ("request body, bytes", float(len(sync_body))),
        ("decode, json.loads", _median_us(calls, lambda: json.loads(sync_body))),
        ("decode, orjson.loads", _median_us(calls, lambda: orjson.loads(sync_body))),
        ("request model", _median_us(calls, lambda: CompositeHookRequest.model_validate(document))),
        (
            "Runner model (memo miss)",
            _median_us(calls, lambda: Runner.model_validate(request.parent)),
        ),
        (
            "runner pod (memo miss)",
            _median_us(
                calls, lambda: build_runner_pod(runner, settings, secret_name="s", jit=False)
            ),
        ),
        ("sync controller, memo warm", _median_us(calls, lambda: sync_runner(request, deps))),
        (
            "finalize controller, memo warm",
            _median_us(calls, lambda: finalize_runner(finalize_request, deps)),
        ),
        ("encode, json.dumps", _median_us(calls, lambda: json.dumps(wire, separators=(",", ":")))),
        ("encode, orjson.dumps", _median_us(calls, lambda: orjson.dumps(wire))),
        (
            "thread hop, run_in_threadpool",
            _median_async_us(calls, lambda: run_in_threadpool(_nothing)),
        ),
        ("thread hop, WorkerThreads", _median_async_us(calls, lambda: workers.run(_nothing))),
    ]
    for label, value in rows:
        unit = "" if label.endswith("bytes") else " us"
        print(f"{label:34s} {value:8.1f}{unit}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
