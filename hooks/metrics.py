"""Prometheus metrics. The GitHub API budget is this field's main scaling limit, so every call
is counted by endpoint and outcome."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

REGISTRY = CollectorRegistry(auto_describe=True)

HOOK_LATENCY = Histogram(
    "arc_hooks_hook_duration_seconds",
    "Server-side duration of hook calls.",
    ["path", "outcome"],
    registry=REGISTRY,
    buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10),
)

GITHUB_API_CALLS = Counter(
    "arc_hooks_github_api_calls",
    "GitHub REST calls made, by endpoint template and outcome.",
    ["endpoint", "outcome"],
    registry=REGISTRY,
)

GITHUB_RATE_LIMIT_REMAINING = Gauge(
    "arc_hooks_github_rate_limit_remaining",
    "x-ratelimit-remaining of the latest GitHub response, per rate-limit resource.",
    ["resource"],
    registry=REGISTRY,
)

GITHUB_RATE_LIMIT = Gauge(
    "arc_hooks_github_rate_limit",
    "x-ratelimit-limit of the latest GitHub response, per rate-limit resource.",
    ["resource"],
    registry=REGISTRY,
)
