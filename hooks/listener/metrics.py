"""The listener's metrics, named and labelled as GitHub's listener exports them (`gha_`)."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from hooks.github.scaleset.models import JobStarted, RunnerScaleSetStatistic
from hooks.listener.targets import ListenerTarget
from hooks.redaction import mask_credentials

LISTENER_REGISTRY = CollectorRegistry(auto_describe=True)
_LABELS = ["name", "namespace", "scale_set"]
_DURATION_BUCKETS = (1, 5, 10, 30, 60, 120, 300, 600, 1200, 1800, 3600, 7200, 21600)


def _gauge(name: str, documentation: str) -> Gauge:
    return Gauge(name, documentation, _LABELS, registry=LISTENER_REGISTRY)


ASSIGNED_JOBS = _gauge("gha_assigned_jobs", "Jobs assigned to the scale set.")
RUNNING_JOBS = _gauge("gha_running_jobs", "Jobs running on the scale set's runners.")
REGISTERED_RUNNERS = _gauge("gha_registered_runners", "Runners registered in the scale set.")
BUSY_RUNNERS = _gauge("gha_busy_runners", "Registered runners running a job.")
IDLE_RUNNERS = _gauge("gha_idle_runners", "Registered runners waiting for a job.")
MIN_RUNNERS = _gauge("gha_min_runners", "The autoscaler's minReplicas.")
MAX_RUNNERS = _gauge("gha_max_runners", "The autoscaler's maxReplicas (the poll's capacity).")
DESIRED_RUNNERS = _gauge(
    "gha_desired_runners", "min + assigned jobs, at most max: what the autoscaler will ask for."
)
STARTED_JOBS = Counter(
    "gha_started_jobs", "Jobs started on the scale set.", _LABELS, registry=LISTENER_REGISTRY
)
COMPLETED_JOBS = Counter(
    "gha_completed_jobs",
    "Jobs completed on the scale set, by result.",
    [*_LABELS, "job_result"],
    registry=LISTENER_REGISTRY,
)
JOB_STARTUP_DURATION = Histogram(
    "gha_job_startup_duration_seconds",
    "From the job's assignment to the scale set until a runner took it.",
    _LABELS,
    buckets=_DURATION_BUCKETS,
    registry=LISTENER_REGISTRY,
)
JOB_EXECUTION_DURATION = Histogram(
    "gha_job_execution_duration_seconds",
    "From a runner taking the job until it finished.",
    [*_LABELS, "job_result"],
    buckets=_DURATION_BUCKETS,
    registry=LISTENER_REGISTRY,
)


def _labels(target: ListenerTarget) -> tuple[str, str, str]:
    # A scale set's name is an annotation's text, shown on /metrics without authentication.
    return target.deployment, target.namespace, mask_credentials(target.scale_set_name)


class PrometheusObserver:
    """`ListenerObserver` that records into `LISTENER_REGISTRY`."""

    def statistics(self, target: ListenerTarget, statistics: RunnerScaleSetStatistic) -> None:
        labels = _labels(target)
        ASSIGNED_JOBS.labels(*labels).set(statistics.total_assigned_jobs)
        RUNNING_JOBS.labels(*labels).set(statistics.total_running_jobs)
        REGISTERED_RUNNERS.labels(*labels).set(statistics.total_registered_runners)
        BUSY_RUNNERS.labels(*labels).set(statistics.total_busy_runners)
        IDLE_RUNNERS.labels(*labels).set(statistics.total_idle_runners)
        MIN_RUNNERS.labels(*labels).set(target.min_runners)
        MAX_RUNNERS.labels(*labels).set(target.max_runners)
        desired = min(target.min_runners + statistics.total_assigned_jobs, target.max_runners)
        DESIRED_RUNNERS.labels(*labels).set(desired)

    def job_started(self, target: ListenerTarget, job: JobStarted) -> None:
        labels = _labels(target)
        STARTED_JOBS.labels(*labels).inc()
        if job.runner_assign_time and job.scale_set_assign_time:
            waited = (job.runner_assign_time - job.scale_set_assign_time).total_seconds()
            JOB_STARTUP_DURATION.labels(*labels).observe(max(waited, 0.0))

    def job_completed(self, target: ListenerTarget, result: str, seconds: float | None) -> None:
        labels = _labels(target)
        COMPLETED_JOBS.labels(*labels, result or "unknown").inc()
        if seconds is not None:
            JOB_EXECUTION_DURATION.labels(*labels, result or "unknown").observe(max(seconds, 0.0))
