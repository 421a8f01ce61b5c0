"""Metric updates from what the autoscaler hook decided and what the webhook receiver saw."""

from __future__ import annotations

import threading
from collections.abc import Iterable

from hooks import metrics
from hooks.autoscaler.controller import AutoscalerObservation
from hooks.redaction import mask_credentials
from hooks.resources.autoscaler import (
    METRIC_PERCENTAGE_RUNNERS_BUSY,
    METRIC_QUEUED_AND_IN_PROGRESS_WORKFLOW_RUNS,
)
from hooks.settings import Settings
from hooks.webhook.events import WorkflowJobEvent
from hooks.webhook.receiver import Reply

OVERFLOW = "other"
"""The value a job-metric label reports once it has taken its maximum of distinct values."""

MAX_LABEL_VALUE_LENGTH = 128
"""Characters a job-metric label value keeps; longer values are cut."""


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
        "kind": seen.target_kind.lower(),  # ARC's values: runnerdeployment, runnerset
        "name": seen.target_name,
        # A spec's text, shown on /metrics without authentication: masked as in answers.
        "enterprise": mask_credentials(seen.scope.enterprise),
        "organization": mask_credentials(seen.scope.organization),
        "repository": mask_credentials(seen.scope.repository),
    }
    types = {metric.type for metric in hra.spec.metrics}
    suggestion = seen.decision.suggestion
    if METRIC_PERCENTAGE_RUNNERS_BUSY in types:
        # ARC sets it whenever the metric is asked, also when the fallback metric then decides.
        if suggestion.busy_replicas is not None:
            metrics.HRA_REPLICAS_DESIRED.labels(**target).set(suggestion.busy_replicas)
        metrics.HRA_RUNNERS.labels(**target).set(seen.runners)
        metrics.HRA_RUNNERS_REGISTERED.labels(**target).set(seen.registered)
        metrics.HRA_RUNNERS_BUSY.labels(**target).set(seen.busy)
    if METRIC_QUEUED_AND_IN_PROGRESS_WORKFLOW_RUNS in types and suggestion.jobs is not None:
        metrics.HRA_NECESSARY_REPLICAS.labels(**target).set(suggestion.jobs.total)
        metrics.HRA_WORKFLOW_RUNS_QUEUED.labels(**target).set(suggestion.jobs.queued)
        metrics.HRA_WORKFLOW_RUNS_IN_PROGRESS.labels(**target).set(suggestion.jobs.in_progress)
    # Last, so a scrape never pairs this sync's time with the previous sync's values.
    metrics.HRA_LAST_SYNC.labels(**base).set(seen.observed_at.timestamp())


def record_size(kind: str, namespace: str, name: str, replicas: int) -> None:
    """ARC's `runnerdeployment_spec_replicas` and `runnerset_spec_replicas`."""
    if kind == "RunnerSet":
        metrics.RUNNER_SET_SPEC_REPLICAS.labels(runnerset=name, namespace=namespace).set(replicas)
    else:
        metrics.RUNNER_DEPLOYMENT_SPEC_REPLICAS.labels(
            runnerdeployment=name, namespace=namespace
        ).set(replicas)


class WebhookLabels:
    """The label values of the metrics a webhook delivery updates, with a bound on how many
    each label takes: the payload's sender chooses them (job and workflow names, matrix values,
    branches), and every value would otherwise be a new series forever.

    ARC's job labels not in `emit` are exported empty (Prometheus treats an empty label as
    absent). A value is cut to `MAX_LABEL_VALUE_LENGTH` characters, then each label admits its
    first `max_values` distinct non-empty values and reports any later new one as `OVERFLOW`: a
    label never has more than `max_values` values besides `""` and `OVERFLOW`. An admitted value
    stays admitted, so a job's series never moves to another label set while it runs. The bound
    holds per instance; the app builds one.
    """

    def __init__(
        self, emit: Iterable[str] = metrics.DEFAULT_JOB_LABELS, max_values: int = 100
    ) -> None:
        if max_values < 1:
            raise ValueError(f"max_values must be at least 1, not {max_values}")
        self.emit = frozenset(emit)
        unknown = self.emit - set(metrics.JOB_LABELS)
        if unknown:
            raise ValueError(f"not job-metric labels: {sorted(unknown)}")
        self.max_values = max_values
        self._admitted: dict[str, set[str]] = {}
        self._lock = threading.Lock()

    @classmethod
    def from_settings(cls, settings: Settings) -> WebhookLabels:
        return cls(settings.job_metrics_labels, settings.job_metrics_max_label_values)

    def value(self, label: str, raw: str | None) -> str:
        """What `label` reports for `raw`: masked (`/metrics` is read without credentials, and a
        job name may hold a token pasted into a command line), cut, and `OVERFLOW` once the
        label is full."""
        value = mask_credentials(raw or "")[:MAX_LABEL_VALUE_LENGTH]
        if not value or value == OVERFLOW:
            return value
        with self._lock:
            admitted = self._admitted.setdefault(label, set())
            if value in admitted:
                return value
            if len(admitted) >= self.max_values:
                return OVERFLOW
            admitted.add(value)
            return value

    def admitted(self, label: str) -> frozenset[str]:
        """The values `label` has admitted so far."""
        with self._lock:
            return frozenset(self._admitted.get(label, ()))

    def job(self, job: WorkflowJobEvent) -> dict[str, str]:
        """ARC's common labels (`event_reader.go`), each empty unless it is in `emit`."""
        raw = {
            "runs_on": ",".join(job.labels),
            "job_name": job.job_name,
            # ARC reads `organization.name`, which webhook payloads do not carry, so its label
            # is empty in practice; the login is what the label was meant to hold.
            "organization": job.organization,
            "repository": job.repository_name,
            "repository_full_name": job.repository,
            "owner": job.owner_login,
            "workflow_name": job.workflow_name,
            "head_branch": job.head_branch,
        }
        return {
            label: self.value(label, raw[label]) if label in self.emit else ""
            for label in metrics.JOB_LABELS
        }


def failed_step(job: WorkflowJobEvent) -> tuple[str, str]:
    """ARC's `failed_step` and `exit_code` of a failed job, as ARC sets them without reading the
    job's logs: the index of the first step that failed or timed out (`null` if none did), and
    `timed_out` when that step timed out (`na` otherwise). Ported from actions-runner-controller
    `pkg/actionsmetrics/event_reader.go` (Apache-2.0)."""
    for index, conclusion in enumerate(job.step_conclusions):
        if conclusion == "failure":
            return str(index), "na"
        if conclusion == "timed_out":
            return str(index), "timed_out"
    return "null", "na"


def record_delivery(reply: Reply, seconds: float, labels_of: WebhookLabels) -> None:
    # An unverified request's event name is whatever its sender wrote: not a label value.
    event = labels_of.value("event", reply.event) if reply.trusted else ""
    action = labels_of.value("action", reply.action) if reply.trusted else ""
    metrics.WEBHOOK_DELIVERIES.labels(
        event=event or "-", action=action or "-", outcome=reply.outcome
    ).inc()
    metrics.WEBHOOK_DURATION.observe(seconds)
    job = reply.job
    if job is None or reply.redelivered or reply.status >= 300:
        return
    labels = labels_of.job(job)
    if job.action == "queued":
        metrics.WORKFLOW_JOBS_QUEUED.labels(**labels).inc()
    elif job.action == "in_progress":
        metrics.WORKFLOW_JOBS_STARTED.labels(**labels).inc()
        if job.created_at and job.started_at and job.started_at >= job.created_at:
            queued_for = (job.started_at - job.created_at).total_seconds()
            metrics.WORKFLOW_JOB_QUEUE_DURATION.labels(**labels).observe(queued_for)
    elif job.action == "completed":
        metrics.WORKFLOW_JOBS_COMPLETED.labels(**labels).inc()
        conclusion = labels_of.value(metrics.JOB_CONCLUSION, job.conclusion or "unknown")
        concluded = {**labels, metrics.JOB_CONCLUSION: conclusion}
        metrics.WORKFLOW_JOB_CONCLUSIONS.labels(**concluded).inc()
        if job.conclusion == "failure":
            step, exit_code = failed_step(job)
            metrics.WORKFLOW_JOB_FAILURES.labels(
                **labels,
                **{
                    metrics.FAILED_STEP: labels_of.value(metrics.FAILED_STEP, step),
                    metrics.EXIT_CODE: labels_of.value(metrics.EXIT_CODE, exit_code),
                },
            ).inc()
        if job.started_at and job.completed_at and job.completed_at >= job.started_at:
            ran_for = (job.completed_at - job.started_at).total_seconds()
            metrics.WORKFLOW_JOB_RUN_DURATION.labels(**concluded).observe(ran_for)
