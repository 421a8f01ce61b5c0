"""Prometheus metrics. The GitHub API budget is this field's main scaling limit, so every call
is counted by endpoint and outcome."""

from __future__ import annotations

from typing import Literal, get_args

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

REGISTRY = CollectorRegistry(auto_describe=True)

HOOK_LATENCY = Histogram(
    "arc_hooks_hook_duration_seconds",
    "Server-side duration of hook calls.",
    ["path", "outcome"],
    registry=REGISTRY,
    buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10),
)

FRESH_PARENT_READS = Counter(
    "arc_hooks_fresh_parent_reads_total",
    "Parents read anew from the API server before a decision (outcome: newer than the copy "
    "Metacontroller sent, current, gone, or failed).",
    ["outcome"],
    registry=REGISTRY,
)

HOOK_REFUSALS = Counter(
    "arc_hooks_hook_refusals",
    "Hook calls refused before they were read, by reason (missing, wrong_scheme, wrong_token, "
    "not_configured).",
    ["reason"],
    registry=REGISTRY,
)

GITHUB_API_CALLS = Counter(
    "arc_hooks_github_api_calls",
    "GitHub REST calls made, by endpoint template, outcome and credentials (`default`, or the "
    "`namespace/name` of a githubAPICredentialsFrom Secret).",
    ["endpoint", "outcome", "credentials"],
    registry=REGISTRY,
)

GITHUB_RATE_LIMIT_REMAINING = Gauge(
    "arc_hooks_github_rate_limit_remaining",
    "x-ratelimit-remaining of the latest GitHub response, per rate-limit resource and credentials.",
    ["resource", "credentials"],
    registry=REGISTRY,
)

GITHUB_RATE_LIMIT = Gauge(
    "arc_hooks_github_rate_limit",
    "x-ratelimit-limit of the latest GitHub response, per rate-limit resource and credentials.",
    ["resource", "credentials"],
    registry=REGISTRY,
)

GITHUB_RUNNER_LIST_PERIOD = Gauge(
    "arc_hooks_github_runner_list_period_seconds",
    "How long the scope's latest runner list is served: GITHUB_LIST_RUNNERS_CACHE_TTL, or "
    "longer when the token's budget calls for it.",
    ["scope"],
    registry=REGISTRY,
)

GITHUB_RATE_LIMIT_RESET = Gauge(
    "arc_hooks_github_rate_limit_reset_timestamp_seconds",
    "x-ratelimit-reset of the latest GitHub response (Unix time the window ends), per "
    "rate-limit resource and credentials.",
    ["resource", "credentials"],
    registry=REGISTRY,
)
# The three rate-limit gauges are per replica: each holds what the latest response *this*
# replica received said. Within one window (same reset time) `remaining` only falls, so the
# lowest value among the replicas whose reset is still ahead is the budget left (README,
# Metrics, for the recording rule).

# HorizontalRunnerAutoscaler gauges, named and labelled as ARC exports them. They are per
# replica: whichever replica Metacontroller called for an HRA's latest sync holds the current
# values, the others keep what they computed at their last sync of it. The last-sync gauge says
# which replica is current (README, Metrics, for the recording rules).
_HRA = ["horizontalrunnerautoscaler", "namespace"]
_HRA_TARGET = [*_HRA, "kind", "name", "enterprise", "organization", "repository"]


def _gauge(name: str, documentation: str, labels: list[str]) -> Gauge:
    return Gauge(name, documentation, labels, registry=REGISTRY)


HRA_SPEC_MIN_REPLICAS = _gauge(
    "horizontalrunnerautoscaler_spec_min_replicas", "spec.minReplicas of the HRA.", _HRA
)
HRA_SPEC_MAX_REPLICAS = _gauge(
    "horizontalrunnerautoscaler_spec_max_replicas", "spec.maxReplicas of the HRA.", _HRA
)
HRA_STATUS_DESIRED_REPLICAS = _gauge(
    "horizontalrunnerautoscaler_status_desired_replicas",
    "status.desiredReplicas of the HRA.",
    _HRA,
)
HRA_REPLICAS_DESIRED = _gauge(
    "horizontalrunnerautoscaler_replicas_desired",
    "Replicas PercentageRunnersBusy suggested.",
    _HRA_TARGET,
)
HRA_RUNNERS = _gauge(
    "horizontalrunnerautoscaler_runners", "Runners of the scale target.", _HRA_TARGET
)
HRA_RUNNERS_REGISTERED = _gauge(
    "horizontalrunnerautoscaler_runners_registered",
    "Runners of the scale target registered on GitHub.",
    _HRA_TARGET,
)
HRA_RUNNERS_BUSY = _gauge(
    "horizontalrunnerautoscaler_runners_busy",
    "Runners of the scale target running a job.",
    _HRA_TARGET,
)
HRA_NECESSARY_REPLICAS = _gauge(
    "horizontalrunnerautoscaler_necessary_replicas",
    "Replicas TotalNumberOfQueuedAndInProgressWorkflowRuns asked for.",
    _HRA_TARGET,
)
HRA_WORKFLOW_RUNS_QUEUED = _gauge(
    "horizontalrunnerautoscaler_workflow_runs_queued",
    "Queued jobs the scale target's runners could take.",
    _HRA_TARGET,
)
HRA_WORKFLOW_RUNS_IN_PROGRESS = _gauge(
    "horizontalrunnerautoscaler_workflow_runs_in_progress",
    "Running jobs the scale target's runners could take.",
    _HRA_TARGET,
)
# ARC's set gauges. ARC's read the set's `spec.replicas`, which ARC's HRA writes; here the size
# the set runs at (its HRA's answer, else its spec), per replica as the HRA gauges are.
RUNNER_DEPLOYMENT_SPEC_REPLICAS = _gauge(
    "runnerdeployment_spec_replicas",
    "Replicas the RunnerDeployment runs at: its HRA's answer, else spec.replicas.",
    ["runnerdeployment", "namespace"],
)
RUNNER_SET_SPEC_REPLICAS = _gauge(
    "runnerset_spec_replicas",
    "Replicas the RunnerSet runs at: its HRA's answer, else spec.replicas.",
    ["runnerset", "namespace"],
)
HRA_RESERVED_REPLICAS = _gauge(
    "arc_hooks_horizontalrunnerautoscaler_reserved_replicas",
    "Replicas of the capacity reservations the HRA counts.",
    _HRA,
)
HRA_LAST_SYNC = _gauge(
    "arc_hooks_horizontalrunnerautoscaler_last_sync_timestamp_seconds",
    "Unix time this replica last synced the HRA; the replica with the highest value holds the "
    "HRA's current gauges.",
    _HRA,
)

# The webhook receiver.
WEBHOOK_DELIVERIES = Counter(
    "arc_hooks_webhook_deliveries",
    "GitHub webhook deliveries, by event, workflow_job action and outcome.",
    ["event", "action", "outcome"],
    registry=REGISTRY,
)
WEBHOOK_DURATION = Histogram(
    "arc_hooks_webhook_duration_seconds",
    "Time to answer a webhook delivery (GitHub gives up after 10 s).",
    registry=REGISTRY,
    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10),
)

# ARC's actions metrics (its optional actions-metrics-server), from workflow_job deliveries.
# Names and labels are ARC's, from actions-runner-controller `pkg/actionsmetrics/metrics.go` and
# `event_reader.go` (Apache-2.0), so dashboards written for ARC read them unchanged. Which of
# the common labels carry a value is the JOB_METRICS_LABELS setting; the others are exported
# empty, which Prometheus treats as absent. Every value is capped (see hooks/telemetry.py).
JobMetricLabel = Literal[
    "runs_on",
    "job_name",
    "organization",
    "repository",
    "repository_full_name",
    "owner",
    "workflow_name",
    "head_branch",
]
JOB_LABELS: tuple[JobMetricLabel, ...] = get_args(JobMetricLabel)
"""ARC's common labels, on every job metric, in ARC's order."""
DEFAULT_JOB_LABELS: tuple[JobMetricLabel, ...] = tuple(
    label for label in JOB_LABELS if label != "head_branch"
)
"""All but `head_branch`, which takes a new value for every pull request's branch."""
JOB_CONCLUSION = "job_conclusion"
FAILED_STEP = "failed_step"
EXIT_CODE = "exit_code"

_JOB = list(JOB_LABELS)
_JOB_DURATION_BUCKETS = (
    *(0.01, 0.05, 0.1, 0.5, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 12, 15, 18, 20, 25, 30, 40, 50),
    *(60, 70, 80, 90, 100, 110, 120, 150, 180, 210, 240, 300, 360, 420, 480, 540, 600, 900),
    *(1200, 1800, 2400, 3000, 3600, 7200, 21600),
)
"""ARC's `runtimeBuckets` (`pkg/actionsmetrics/metrics.go`), so that queries and alerts naming a
bucket (`le="180"`) read the same here, and two more for jobs of hours."""
WORKFLOW_JOBS_QUEUED = Counter(
    "github_workflow_jobs_queued", "workflow_job queued events.", _JOB, registry=REGISTRY
)
WORKFLOW_JOBS_STARTED = Counter(
    "github_workflow_jobs_started", "workflow_job in_progress events.", _JOB, registry=REGISTRY
)
WORKFLOW_JOBS_COMPLETED = Counter(
    "github_workflow_jobs_completed", "workflow_job completed events.", _JOB, registry=REGISTRY
)
WORKFLOW_JOB_CONCLUSIONS = Counter(
    "github_workflow_job_conclusions",
    "Completed jobs by conclusion.",
    [*_JOB, JOB_CONCLUSION],
    registry=REGISTRY,
)
WORKFLOW_JOB_FAILURES = Counter(
    "github_workflow_job_failures",
    "Jobs that concluded failure, by the index of the first failed step and the exit code "
    "(`na`, or `timed_out` when that step timed out).",
    [*_JOB, FAILED_STEP, EXIT_CODE],
    registry=REGISTRY,
)
WORKFLOW_JOB_QUEUE_DURATION = Histogram(
    "github_workflow_job_queue_duration_seconds",
    "From queued to started, reported when a job starts.",
    _JOB,
    registry=REGISTRY,
    buckets=_JOB_DURATION_BUCKETS,
)
WORKFLOW_JOB_RUN_DURATION = Histogram(
    "github_workflow_job_run_duration_seconds",
    "From started to completed, reported when a job completes.",
    [*_JOB, JOB_CONCLUSION],
    registry=REGISTRY,
    buckets=_JOB_DURATION_BUCKETS,
)
