"""Metric updates from what the autoscaler hook decided and what the webhook receiver saw."""

from __future__ import annotations

from hooks import metrics
from hooks.autoscaler.controller import AutoscalerObservation
from hooks.resources.autoscaler import (
    METRIC_PERCENTAGE_RUNNERS_BUSY,
    METRIC_QUEUED_AND_IN_PROGRESS_WORKFLOW_RUNS,
)
from hooks.webhook.receiver import Reply


def record_autoscaler(seen: AutoscalerObservation) -> None:
    hra = seen.hra
    base = {"horizontalrunnerautoscaler": hra.metadata.name, "namespace": hra.metadata.namespace}
    if hra.spec.min_replicas is not None:
        metrics.HRA_SPEC_MIN_REPLICAS.labels(**base).set(hra.spec.min_replicas)
    if hra.spec.max_replicas is not None:
        metrics.HRA_SPEC_MAX_REPLICAS.labels(**base).set(hra.spec.max_replicas)
    metrics.HRA_STATUS_DESIRED_REPLICAS.labels(**base).set(seen.decision.desired_replicas)
    metrics.HRA_RESERVED_REPLICAS.labels(**base).set(seen.decision.reservations.reserved)
    target = {
        **base,
        "kind": seen.target_kind,
        "name": seen.target_name,
        "enterprise": seen.scope.enterprise,
        "organization": seen.scope.organization,
        "repository": seen.scope.repository,
    }
    types = {metric.type for metric in hra.spec.metrics}
    suggestion = seen.decision.suggestion
    if METRIC_PERCENTAGE_RUNNERS_BUSY in types:
        if suggestion.metric == METRIC_PERCENTAGE_RUNNERS_BUSY and suggestion.replicas is not None:
            metrics.HRA_REPLICAS_DESIRED.labels(**target).set(suggestion.replicas)
        metrics.HRA_RUNNERS.labels(**target).set(seen.runners)
        metrics.HRA_RUNNERS_REGISTERED.labels(**target).set(seen.registered)
        metrics.HRA_RUNNERS_BUSY.labels(**target).set(seen.busy)
    if METRIC_QUEUED_AND_IN_PROGRESS_WORKFLOW_RUNS in types and suggestion.jobs is not None:
        metrics.HRA_NECESSARY_REPLICAS.labels(**target).set(suggestion.jobs.total)
        metrics.HRA_WORKFLOW_RUNS_QUEUED.labels(**target).set(suggestion.jobs.queued)
        metrics.HRA_WORKFLOW_RUNS_IN_PROGRESS.labels(**target).set(suggestion.jobs.in_progress)


def record_delivery(reply: Reply, seconds: float) -> None:
    metrics.WEBHOOK_DELIVERIES.labels(
        event=reply.event or "-", action=reply.action or "-", outcome=reply.outcome
    ).inc()
    metrics.WEBHOOK_DURATION.observe(seconds)
    job = reply.job
    if job is None or reply.redelivered or reply.status >= 300:
        return
    repository = job.repository
    if job.action == "queued":
        metrics.WORKFLOW_JOBS_QUEUED.labels(repository).inc()
    elif job.action == "in_progress":
        metrics.WORKFLOW_JOBS_STARTED.labels(repository).inc()
        if job.created_at and job.started_at and job.started_at >= job.created_at:
            queued_for = (job.started_at - job.created_at).total_seconds()
            metrics.WORKFLOW_JOB_QUEUE_DURATION.labels(repository).observe(queued_for)
    elif job.action == "completed":
        metrics.WORKFLOW_JOBS_COMPLETED.labels(repository).inc()
        conclusion = job.conclusion or "unknown"
        metrics.WORKFLOW_JOB_CONCLUSIONS.labels(repository, conclusion).inc()
        if conclusion == "failure":
            metrics.WORKFLOW_JOB_FAILURES.labels(repository).inc()
        if job.started_at and job.completed_at and job.completed_at >= job.started_at:
            ran_for = (job.completed_at - job.started_at).total_seconds()
            metrics.WORKFLOW_JOB_RUN_DURATION.labels(repository).observe(ran_for)
