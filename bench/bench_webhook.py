"""Time for the webhook receiver to answer a signed `workflow_job` `queued` delivery with 200
HorizontalRunnerAutoscalers in the cluster, as a ratio to parsing the payload with the standard
library, measured in the same run. Warm: the HRA list is cached (deliveries within
WEBHOOK_TARGETS_CACHE_TTL of each other); cold: listed again for the delivery.

The Kubernetes API is the simulated world's in-memory store, so this is the receiver's own cost;
a real API server adds its LIST and CREATE round trips. GitHub gives up after 10 seconds.

Run: python -m bench.bench_webhook
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import sys
import time
from collections.abc import Sequence
from typing import Any

from arc_sim.kube_port import StoreKube
from arc_sim.store import ObjectStore
from arc_sim.webhooks import signature_256
from hooks.clock import ManualClock
from hooks.webhook.receiver import SCALED, WebhookReceiver

AUTOSCALERS = 200
ROUNDS = 200
SECRET = b"bench-secret"
ARC = "actions.summerwind.dev/v1alpha1"


def cluster(clock: ManualClock, autoscalers: int = AUTOSCALERS) -> ObjectStore:
    store = ObjectStore(clock)
    for index in range(autoscalers):
        namespace = f"team-{index % 20}"
        name = f"runners-{index}"
        store.create(
            {
                "apiVersion": ARC,
                "kind": "RunnerDeployment",
                "metadata": {"name": name, "namespace": namespace},
                "spec": {
                    "template": {"spec": {"repository": f"acme/repo-{index}", "labels": ["linux"]}}
                },
            }
        )
        store.create(
            {
                "apiVersion": ARC,
                "kind": "HorizontalRunnerAutoscaler",
                "metadata": {"name": name, "namespace": namespace},
                "spec": {
                    "scaleTargetRef": {"kind": "RunnerDeployment", "name": name},
                    "minReplicas": 0,
                    "maxReplicas": 10,
                    "scaleUpTriggers": [{"githubEvent": {"workflowJob": {}}, "duration": "30m"}],
                },
            }
        )
    return store


def delivery(job_id: int, autoscalers: int = AUTOSCALERS) -> tuple[dict[str, str], bytes]:
    repository = f"repo-{job_id % autoscalers}"
    payload: dict[str, Any] = {
        "action": "queued",
        "workflow_job": {
            "id": job_id,
            "run_id": job_id,
            "name": "build",
            "status": "queued",
            "labels": ["self-hosted", "linux"],
            "conclusion": None,
            "runner_id": None,
        },
        "repository": {
            "name": repository,
            "full_name": f"acme/{repository}",
            "owner": {"login": "acme", "type": "Organization"},
        },
        "organization": {"login": "acme"},
    }
    body = json.dumps(payload).encode()
    headers = {
        "X-GitHub-Event": "workflow_job",
        "X-GitHub-Delivery": f"delivery-{job_id}",
        "X-Hub-Signature-256": signature_256(SECRET, body),
        "Content-Type": "application/json",
    }
    return headers, body


def median(values: list[float]) -> float:
    return sorted(values)[len(values) // 2]


async def answer_times(
    ttl: float, first_job: int, autoscalers: int = AUTOSCALERS, rounds: int = ROUNDS
) -> list[float]:
    clock = ManualClock()
    store = cluster(clock, autoscalers)
    receiver = WebhookReceiver(StoreKube(store), clock, secret=SECRET, targets_ttl=ttl)
    times = []
    for job_id in range(first_job, first_job + rounds):
        headers, body = delivery(job_id, autoscalers)
        started = time.perf_counter()
        reply = await receiver.handle(headers, body)
        times.append(time.perf_counter() - started)
        assert reply.outcome == SCALED, reply.message
    return times


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.bench_webhook",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--autoscalers",
        type=int,
        default=AUTOSCALERS,
        help="HorizontalRunnerAutoscalers (each with its RunnerDeployment) in the cluster "
        "(default: %(default)s)",
    )
    parser.add_argument(
        "--rounds",
        type=int,
        default=ROUNDS,
        help="deliveries answered per case, and timed parses; the medians are printed "
        "(default: %(default)s)",
    )
    args = parser.parse_args(argv)
    autoscalers: int = args.autoscalers
    rounds: int = args.rounds
    logging.disable(logging.INFO)
    _, body = delivery(1, autoscalers)
    parse_times = []
    for _ in range(rounds):
        started = time.perf_counter()
        json.loads(body)
        parse_times.append(time.perf_counter() - started)
    parse = median(parse_times)
    warm = median(asyncio.run(answer_times(3600, 1, autoscalers, rounds)))  # cached
    cold = median(asyncio.run(answer_times(0, 1, autoscalers, rounds)))  # read again

    print(f"{autoscalers} HorizontalRunnerAutoscalers, {rounds} queued deliveries")
    print(f"json.loads of the payload     median {parse * 1e6:9.1f} us   (baseline)")
    print(f"answer, HRA list cached       median {warm * 1e6:9.1f} us   ratio {warm / parse:7.1f}x")
    print(f"answer, HRA list read again   median {cold * 1e6:9.1f} us   ratio {cold / parse:7.1f}x")
    print(f"GitHub's limit is 10 s: the cold answer takes {cold / 10:.2e} of it")
    return 0


if __name__ == "__main__":
    sys.exit(main())
