"""Server-side time of a `/sync/runnerreplicaset` request with 1,000 Runner children, as a ratio
to parsing the same request JSON with the standard library, measured in the same run.

Run: python -m bench.bench_replicaset    Target: within 3x.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time
from collections.abc import Sequence
from typing import Any

from bench.asgi_call import BENCH_SETTINGS, expect_no_cluster, median_seconds
from hooks.app import create_app
from hooks.clock import ManualClock, format_time
from hooks.settings import Settings

RUNNERS = 1000
ROUNDS = 30
TARGET = 3.0


def request(clock: ManualClock, runners: int = RUNNERS) -> dict[str, Any]:
    spec = {"organization": "acme", "labels": ["linux", "x64"], "image": "example/runner:2"}
    template = {"metadata": {"labels": {"team": "ci"}}, "spec": spec}
    now = format_time(clock.now())
    children = {}
    for index in range(runners):
        name = f"example-8f2k1-abcd{index:x}"
        children[f"default/{name}"] = {
            "apiVersion": "actions.summerwind.dev/v1alpha1",
            "kind": "Runner",
            "metadata": {
                "name": name,
                "namespace": "default",
                "uid": f"runner-uid-{index}",
                "resourceVersion": str(1000 + index),  # every served object has one
                "creationTimestamp": now,
                "labels": {
                    "team": "ci",
                    "runner-template-hash": "0123456789",
                    "controller-uid": "rrs-uid",
                },
                "annotations": {"actions-runner/sync-time": now},
            },
            "spec": spec,
            "status": {
                "phase": "Running",
                "ready": True,
                "online": True,
                "busy": index % 3 == 0,
                "runnerId": 1000 + index,
            },
        }
    parent = {
        "apiVersion": "actions.summerwind.dev/v1alpha1",
        "kind": "RunnerReplicaSet",
        "metadata": {
            "name": "example-8f2k1",
            "namespace": "default",
            "uid": "rrs-uid",
            "generation": 3,
            "labels": {"runner-template-hash": "0123456789"},
        },
        "spec": {"replicas": 900, "template": template},
        "status": {"replicas": runners, "nextRunnerIndex": runners},
    }
    return {
        "controller": {},
        "parent": parent,
        "children": {"Runner.actions.summerwind.dev/v1alpha1": children},
        "related": {},
        "finalizing": False,
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.bench_replicaset",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--runners",
        type=int,
        default=RUNNERS,
        help="Runner children in the request (default: %(default)s)",
    )
    parser.add_argument(
        "--rounds",
        type=int,
        default=ROUNDS,
        help="timed requests, and timed parses; the medians are printed (default: %(default)s)",
    )
    args = parser.parse_args(argv)
    runners: int = args.runners
    rounds: int = args.rounds
    logging.disable(logging.INFO)
    expect_no_cluster()
    clock = ManualClock()
    # Compact, as Metacontroller's Go encoder writes it.
    body = json.dumps(request(clock, runners), separators=(",", ":")).encode()
    app = create_app(Settings.model_validate(BENCH_SETTINGS), clock=clock)

    parse_times = []
    for _ in range(rounds):
        started = time.perf_counter()
        json.loads(body)
        parse_times.append(time.perf_counter() - started)
    parse = sorted(parse_times)[rounds // 2]
    sync = median_seconds(app, "POST", "/sync/runnerreplicaset", body, rounds)

    print(f"request: {runners} Runner children, {len(body) / 1e6:.1f} MB")
    print(f"json.loads (stdlib)        median {parse * 1e3:7.2f} ms   (baseline)")
    print(f"/sync/runnerreplicaset     median {sync * 1e3:7.2f} ms   ratio {sync / parse:5.2f}x")
    verdict = "meets" if sync / parse <= TARGET else "MISSES"
    print(f"the replica set hook {verdict} the target of {TARGET:.0f}x parsing its request")
    return 0


if __name__ == "__main__":
    sys.exit(main())
