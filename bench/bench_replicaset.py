"""Server-side time of a `/sync/runnerreplicaset` request with 1,000 Runner children, as a ratio
to parsing the same request JSON with the standard library, measured in the same run.

Run: python -m bench.bench_replicaset    Target: within 3x.
"""

from __future__ import annotations

import json
import logging
import sys
import time
from typing import Any

from bench.asgi_call import BENCH_SETTINGS, median_seconds
from hooks.app import create_app
from hooks.clock import ManualClock, format_time
from hooks.settings import Settings

RUNNERS = 1000
ROUNDS = 30
TARGET = 3.0


def request(clock: ManualClock) -> dict[str, Any]:
    spec = {"organization": "acme", "labels": ["linux", "x64"], "image": "example/runner:2"}
    template = {"metadata": {"labels": {"team": "ci"}}, "spec": spec}
    now = format_time(clock.now())
    children = {}
    for index in range(RUNNERS):
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
        "status": {"replicas": RUNNERS, "nextRunnerIndex": RUNNERS},
    }
    return {
        "controller": {},
        "parent": parent,
        "children": {"Runner.actions.summerwind.dev/v1alpha1": children},
        "related": {},
        "finalizing": False,
    }


def main() -> int:
    logging.disable(logging.INFO)
    clock = ManualClock()
    body = json.dumps(request(clock), separators=(",", ":")).encode()  # compact, as Go writes it
    app = create_app(Settings.model_validate(BENCH_SETTINGS), clock=clock)

    parse_times = []
    for _ in range(ROUNDS):
        started = time.perf_counter()
        json.loads(body)
        parse_times.append(time.perf_counter() - started)
    parse = sorted(parse_times)[ROUNDS // 2]
    sync = median_seconds(app, "POST", "/sync/runnerreplicaset", body, ROUNDS)

    print(f"request: {RUNNERS} Runner children, {len(body) / 1e6:.1f} MB")
    print(f"json.loads (stdlib)        median {parse * 1e3:7.2f} ms   (baseline)")
    print(f"/sync/runnerreplicaset     median {sync * 1e3:7.2f} ms   ratio {sync / parse:5.2f}x")
    verdict = "meets" if sync / parse <= TARGET else "MISSES"
    print(f"the replica set hook {verdict} the target of {TARGET:.0f}x parsing its request")
    return 0


if __name__ == "__main__":
    sys.exit(main())
