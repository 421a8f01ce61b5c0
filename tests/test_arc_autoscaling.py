"""ARC's `TestDetermineDesiredReplicas_RepositoryRunner` and `_OrganizationalRunner`
(controllers/actions.summerwind.net/autoscaling_test.go), row by row.

Ported from actions/actions-runner-controller (Apache-2.0). Each row keeps ARC's inputs and
expected value: the queued and in_progress workflow-run listings and the jobs of each run as the
JSON bodies ARC's fake GitHub serves (ARC's bodies end in a stray `"` that Go's decoder never
reads; it is dropped here), the target's repository or organization and labels, the HRA's
min/max and last answer. ARC's tests also give a body for the unfiltered run listing, which its
client never requests (it lists `queued`, then `in_progress`); it is left out.

ARC calls `getMinReplicas` then `computeReplicasWithCache`; `desired_replicas` does both. A
target's fixed `spec.replicas` (ARC's `fixed`) plays no part in either, as in ARC.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import pytest

from hooks.autoscaler import (
    AutoscalingError,
    RecordedActivity,
    RunnerScope,
    ScaleTarget,
    WorkflowJob,
    WorkflowRun,
    desired_replicas,
)
from hooks.clock import format_time
from hooks.resources.autoscaler import (
    METRIC_QUEUED_AND_IN_PROGRESS_WORKFLOW_RUNS,
    HorizontalRunnerAutoscaler,
    HorizontalRunnerAutoscalerSpec,
    HorizontalRunnerAutoscalerStatus,
    MetricSpec,
    ScaleTargetRef,
)
from hooks.resources.common import ObjectMeta

NOW = datetime(2022, 3, 1, 12, 0, tzinfo=UTC)  # ARC's metav1Now: the sync's now and sTime


@dataclass(frozen=True)
class Row:
    name: str  # ARC's description, or its case comment when it has none
    want: int = 0
    err: str = ""
    repo: str = ""
    org: str = ""
    repos: tuple[str, ...] = ()  # the metric's repositoryNames
    labels: tuple[str, ...] = ()
    fixed: int | None = None
    min: int | None = None
    max: int | None = None
    s_replicas: int | None = None
    s_time_now: bool = False
    queued: str = '{"total_count": 0, "workflow_runs":[]}'
    in_progress: str = '{"total_count": 0, "workflow_runs":[]}'
    jobs: dict[int, str] = field(default_factory=dict)


# Bodies ARC repeats verbatim across rows.
NO_RUNS = '{"total_count": 0, "workflow_runs":[]}'
ONE_QUEUED = '{"total_count": 1, "workflow_runs":[{"status":"queued"}]}'
ONE_IN_PROGRESS = '{"total_count": 1, "workflow_runs":[{"status":"in_progress"}]}'
TWO_IN_PROGRESS = (
    '{"total_count": 2, "workflow_runs":[{"status":"in_progress"}, {"status":"in_progress"}]}'
)
THREE_IN_PROGRESS = (
    '{"total_count": 3, "workflow_runs":[{"status":"in_progress"}, {"status":"in_progress"}, '
    '{"status":"in_progress"}]}'
)
THREE_IN_PROGRESS_COMPACT = (
    '{"total_count": 3, "workflow_runs":[{"status":"in_progress"},{"status":"in_progress"},'
    '{"status":"in_progress"}]}'
)
RUN_1_QUEUED = '{"total_count": 1, "workflow_runs":[{"id": 1, "status":"queued"}]}'
RUNS_2_3_IN_PROGRESS = (
    '{"total_count": 2, "workflow_runs":[{"id": 2, "status":"in_progress"}, '
    '{"id": 3, "status":"in_progress"}]}'
)
# The organizational rows' in_progress listing also returns a completed run without an id.
RUNS_2_3_IN_PROGRESS_AND_COMPLETED = (
    '{"total_count": 2, "workflow_runs":[{"id": 2, "status":"in_progress"}, '
    '{"id": 3, "status":"in_progress"}, {"status":"completed"}]}'
)


def five_jobs(labels: str | None) -> dict[int, str]:
    """ARC's job-level jobs: run 1 has 2 queued, run 2 one running and one completed, run 3
    one running and one queued; `labels` is the JSON of every job's labels, None for none."""

    def jobs(*statuses: str) -> str:
        with_labels = ", " + f'"labels":{labels}' if labels is not None else ""
        return '{"jobs": [' + ", ".join(f'{{"status":"{s}"{with_labels}}}' for s in statuses) + "]}"

    return {
        1: jobs("queued", "queued"),
        2: jobs("in_progress", "completed"),
        3: jobs("in_progress", "queued"),
    }


SELF_HOSTED = '["self-hosted"]'
SELF_HOSTED_CUSTOM = '["self-hosted", "custom"]'

REPOSITORY_RUNNER = [
    # case_0: legacy functionality; 0 demanded due to zero runID, min at 2.
    Row(
        "case_0: 0 demanded due to zero runID, min at 2",
        2,
        repo="test/valid",
        min=2,
        max=3,
        queued=ONE_QUEUED,
        in_progress=TWO_IN_PROGRESS,
    ),
    # case_1: the explicit default `self-hosted` label is ignored when matching jobs.
    Row(
        "case_1: 3 demanded, max at 3",
        3,
        repo="test/valid",
        labels=("self-hosted",),
        min=2,
        max=3,
        queued=RUN_1_QUEUED,
        in_progress=RUNS_2_3_IN_PROGRESS,
        jobs={
            1: '{"jobs": [{"status": "queued", "labels":["self-hosted"]}]}',
            2: '{"jobs": [{"status": "in_progress", "labels":["self-hosted"]}]}',
            3: '{"jobs": [{"status": "in_progress", "labels":["self-hosted"]}]}',
        },
    ),
    Row(
        "case_2: 2 demanded, max at 3, currently 3, delay scaling down due to grace period",
        3,
        repo="test/valid",
        min=2,
        max=3,
        s_replicas=3,
        s_time_now=True,
        queued=ONE_QUEUED,
        in_progress=ONE_IN_PROGRESS,
    ),
    Row(
        "case_3: 3 demanded, max at 2",
        2,
        repo="test/valid",
        min=2,
        max=2,
        queued=ONE_QUEUED,
        in_progress=TWO_IN_PROGRESS,
    ),
    Row(
        "case_4: 2 demanded, min at 2",
        2,
        repo="test/valid",
        min=2,
        max=3,
        queued=ONE_QUEUED,
        in_progress=ONE_IN_PROGRESS,
    ),
    Row("case_5: 1 demanded, min at 2", 2, repo="test/valid", min=2, max=3, queued=ONE_QUEUED),
    Row(
        "case_6: 1 demanded, min at 2",
        2,
        repo="test/valid",
        min=2,
        max=3,
        in_progress=ONE_IN_PROGRESS,
    ),
    Row("case_7: 1 demanded, min at 1", 1, repo="test/valid", min=1, max=3, queued=ONE_QUEUED),
    Row(
        "case_8: 1 demanded, min at 1",
        1,
        repo="test/valid",
        min=1,
        max=3,
        in_progress=ONE_IN_PROGRESS,
    ),
    Row(
        "case_9: fixed at 3",
        1,
        repo="test/valid",
        min=1,
        max=3,
        fixed=3,
        in_progress=THREE_IN_PROGRESS,
    ),
    Row(
        "GitHub Actions Jobs Array is empty - no scale up",
        0,
        repo="test/valid",
        min=0,
        max=3,
        queued=ONE_QUEUED,
        jobs={1: '{"jobs": []}'},
    ),
    Row(
        "Hosted GitHub Actions run - no scale up",
        0,
        repo="test/valid",
        min=0,
        max=3,
        queued=RUN_1_QUEUED,
        jobs={1: '{"jobs": [{"status":"queued"}]}'},
    ),
    Row(
        "Job-level autoscaling with no explicit runner label (runners have implicit "
        "self-hosted, requested self-hosted, 5 jobs from 3 workflows)",
        5,
        repo="test/valid",
        min=2,
        max=10,
        queued=RUN_1_QUEUED,
        in_progress=RUNS_2_3_IN_PROGRESS,
        jobs=five_jobs(SELF_HOSTED),
    ),
    Row(
        "Skipped job-level autoscaling with no explicit runner label (runners have implicit "
        "self-hosted, requested self-hosted+custom, 0 jobs from 3 workflows)",
        2,
        repo="test/valid",
        min=2,
        max=10,
        queued=RUN_1_QUEUED,
        in_progress=RUNS_2_3_IN_PROGRESS,
        jobs=five_jobs(SELF_HOSTED_CUSTOM),
    ),
    Row(
        "Skipped job-level autoscaling with no label (runners have implicit self-hosted, "
        "jobs had no labels, 0 jobs from 3 workflows)",
        2,
        repo="test/valid",
        min=2,
        max=10,
        queued=RUN_1_QUEUED,
        in_progress=RUNS_2_3_IN_PROGRESS,
        jobs=five_jobs(None),
    ),
    Row(
        "Skipped job-level autoscaling with default runner label (runners have self-hosted "
        "only, requested self-hosted+custom, 0 jobs from 3 workflows)",
        2,
        repo="test/valid",
        labels=("self-hosted",),
        min=2,
        max=10,
        queued=RUN_1_QUEUED,
        in_progress=RUNS_2_3_IN_PROGRESS,
        jobs=five_jobs(SELF_HOSTED_CUSTOM),
    ),
    Row(
        "Skipped job-level autoscaling with custom runner label (runners have custom2, "
        "requested self-hosted+custom, 0 jobs from 5 workflows",
        2,
        repo="test/valid",
        labels=("custom2",),
        min=2,
        max=10,
        queued=RUN_1_QUEUED,
        in_progress=RUNS_2_3_IN_PROGRESS,
        jobs=five_jobs(SELF_HOSTED_CUSTOM),
    ),
    Row(
        "Skipped job-level autoscaling with default runner label (runners have self-hosted, "
        "requested managed-runner-label, 0 jobs from 3 runs)",
        2,
        repo="test/valid",
        labels=("self-hosted",),
        min=2,
        max=10,
        queued=RUN_1_QUEUED,
        in_progress=RUNS_2_3_IN_PROGRESS,
        jobs=five_jobs('["managed-runner-label"]'),
    ),
    Row(
        "Job-level autoscaling with default + custom runner label (runners have "
        "self-hosted+custom, requested self-hosted+custom, 5 jobs from 3 workflows)",
        5,
        repo="test/valid",
        labels=("self-hosted", "custom"),
        min=2,
        max=10,
        queued=RUN_1_QUEUED,
        in_progress=RUNS_2_3_IN_PROGRESS,
        jobs=five_jobs(SELF_HOSTED_CUSTOM),
    ),
    Row(
        "Job-level autoscaling with custom runner label (runners have custom, requested "
        "self-hosted+custom, 5 jobs from 3 workflows)",
        5,
        repo="test/valid",
        labels=("custom",),
        min=2,
        max=10,
        queued=RUN_1_QUEUED,
        in_progress=RUNS_2_3_IN_PROGRESS,
        jobs=five_jobs(SELF_HOSTED_CUSTOM),
    ),
]

ORGANIZATIONAL_RUNNER = [
    Row(
        "case_0: 0 demanded due to zero runID, min at 2",
        2,
        org="test",
        repos=("valid",),
        min=2,
        max=3,
        queued=ONE_QUEUED,
        in_progress=TWO_IN_PROGRESS,
    ),
    Row(
        "case_1: 2 demanded, max at 3, currently 3, delay scaling down due to grace period",
        3,
        org="test",
        repos=("valid",),
        min=2,
        max=3,
        s_replicas=3,
        s_time_now=True,
        queued=ONE_QUEUED,
        in_progress=ONE_IN_PROGRESS,
    ),
    Row(
        "case_2: 3 demanded, max at 2",
        2,
        org="test",
        repos=("valid",),
        min=2,
        max=2,
        queued=ONE_QUEUED,
        in_progress=TWO_IN_PROGRESS,
    ),
    Row(
        "case_3: 2 demanded, min at 2",
        2,
        org="test",
        repos=("valid",),
        min=2,
        max=3,
        queued=ONE_QUEUED,
        in_progress=ONE_IN_PROGRESS,
    ),
    Row(
        "case_4: 1 demanded, min at 2",
        2,
        org="test",
        repos=("valid",),
        min=2,
        max=3,
        queued=ONE_QUEUED,
    ),
    Row(
        "case_5: 1 demanded, min at 2",
        2,
        org="test",
        repos=("valid",),
        min=2,
        max=3,
        in_progress=ONE_IN_PROGRESS,
    ),
    # ARC gives the next two rows no case number.
    Row(
        "1 demanded, min at 1 (queued)",
        1,
        org="test",
        repos=("valid",),
        min=1,
        max=3,
        queued=ONE_QUEUED,
    ),
    Row(
        "1 demanded, min at 1 (in progress)",
        1,
        org="test",
        repos=("valid",),
        min=1,
        max=3,
        in_progress=ONE_IN_PROGRESS,
    ),
    Row(
        "case_6: fixed at 3",
        1,
        org="test",
        repos=("valid",),
        fixed=1,
        min=1,
        max=3,
        in_progress=THREE_IN_PROGRESS_COMPACT,
    ),
    Row(
        "case_7: org runner, fixed at 3",
        1,
        org="test",
        repos=("valid",),
        fixed=1,
        min=1,
        max=3,
        in_progress=THREE_IN_PROGRESS_COMPACT,
    ),
    Row(
        "case_8: org runner, 1 demanded, min at 1, no repos",
        err="validating autoscaling metrics: spec.autoscaling.metrics[].repositoryNames is "
        "required and must have one more more entries for organizational runner deployment",
        org="test",
        min=1,
        max=3,
        in_progress=ONE_IN_PROGRESS,
    ),
    Row(
        "Job-level autoscaling (runners have implicit self-hosted, requested self-hosted, "
        "5 jobs from 3 runs)",
        5,
        org="test",
        repos=("valid",),
        min=2,
        max=10,
        queued=RUN_1_QUEUED,
        in_progress=RUNS_2_3_IN_PROGRESS_AND_COMPLETED,
        jobs=five_jobs(SELF_HOSTED),
    ),
    Row(
        "Job-level autoscaling (runners have explicit self-hosted, requested self-hosted, "
        "5 jobs from 3 runs)",
        5,
        org="test",
        repos=("valid",),
        labels=("self-hosted",),
        min=2,
        max=10,
        queued=RUN_1_QUEUED,
        in_progress=RUNS_2_3_IN_PROGRESS_AND_COMPLETED,
        jobs=five_jobs(SELF_HOSTED),
    ),
    Row(
        "Skipped job-level autoscaling (jobs lack labels, 0 requested from 3 workflows)",
        2,
        org="test",
        repos=("valid",),
        min=2,
        max=10,
        queued=RUN_1_QUEUED,
        in_progress=RUNS_2_3_IN_PROGRESS_AND_COMPLETED,
        jobs=five_jobs(None),
    ),
    Row(
        "Skipped job-level autoscaling (runners have valid and implicit self-hosted, "
        "requested self-hosted+custom, 0 jobs from 3 runs)",
        2,
        org="test",
        repos=("valid",),
        min=2,
        max=10,
        queued=RUN_1_QUEUED,
        in_progress=RUNS_2_3_IN_PROGRESS_AND_COMPLETED,
        jobs=five_jobs(SELF_HOSTED_CUSTOM),
    ),
    Row(
        "Skipped job-level autoscaling (runners have self-hosted, requested "
        "self-hosted+custom, 0 jobs from 3 workflows)",
        2,
        org="test",
        repos=("valid",),
        labels=("self-hosted",),
        min=2,
        max=10,
        queued=RUN_1_QUEUED,
        in_progress=RUNS_2_3_IN_PROGRESS_AND_COMPLETED,
        jobs=five_jobs(SELF_HOSTED_CUSTOM),
    ),
    Row(
        "Job-level autoscaling (runners have custom, requested self-hosted+custom, "
        "5 requested from 3 workflows)",
        5,
        org="test",
        repos=("valid",),
        labels=("custom",),
        min=2,
        max=10,
        queued=RUN_1_QUEUED,
        in_progress=RUNS_2_3_IN_PROGRESS_AND_COMPLETED,
        jobs=five_jobs(SELF_HOSTED_CUSTOM),
    ),
    Row(
        "Job-level autoscaling (runners have custom, requested custom, 5 requested from "
        "3 workflows)",
        5,
        org="test",
        repos=("valid",),
        labels=("custom",),
        min=2,
        max=10,
        queued=RUN_1_QUEUED,
        in_progress=RUNS_2_3_IN_PROGRESS_AND_COMPLETED,
        jobs=five_jobs('["custom"]'),
    ),
    Row(
        "Skipped job-level autoscaling (specified custom2, 0 requested from 3 workflows)",
        2,
        org="test",
        repos=("valid",),
        labels=("custom2",),
        min=2,
        max=10,
        queued=RUN_1_QUEUED,
        in_progress=RUNS_2_3_IN_PROGRESS_AND_COMPLETED,
        jobs=five_jobs(SELF_HOSTED_CUSTOM),
    ),
]


def decode(body: str) -> Any:
    return json.loads(body)


def runs(body: str) -> tuple[WorkflowRun, ...]:
    return tuple(
        WorkflowRun(id=run.get("id", 0), status=run["status"])
        for run in decode(body)["workflow_runs"]
    )


def jobs(body: str) -> tuple[WorkflowJob, ...]:
    return tuple(
        WorkflowJob(status=job["status"], labels=tuple(job.get("labels", ())))
        for job in decode(body)["jobs"]
    )


def check(row: Row) -> None:
    repository = row.repo or f"{row.org}/valid"
    activity = RecordedActivity(
        runs={
            (repository, "queued"): runs(row.queued),
            (repository, "in_progress"): runs(row.in_progress),
        },
        jobs={(repository, run_id): jobs(body) for run_id, body in row.jobs.items()},
    )
    hra = HorizontalRunnerAutoscaler(
        metadata=ObjectMeta(name="testhra", namespace="default"),
        spec=HorizontalRunnerAutoscalerSpec(
            scale_target_ref=ScaleTargetRef(name="testrd"),
            min_replicas=row.min,
            max_replicas=row.max,
            metrics=[
                MetricSpec(
                    type=METRIC_QUEUED_AND_IN_PROGRESS_WORKFLOW_RUNS,
                    repository_names=list(row.repos),
                )
            ],
        ),
        status=HorizontalRunnerAutoscalerStatus(
            desired_replicas=row.s_replicas,
            last_successful_scale_out_time=format_time(NOW) if row.s_time_now else None,
        ),
    )
    target = ScaleTarget(
        RunnerScope(organization=row.org, repository=row.repo, labels=row.labels),
        replicas=row.fixed,
    )

    if row.err:
        with pytest.raises(AutoscalingError) as raised:
            desired_replicas(hra, target, activity, NOW)
        assert str(raised.value) == row.err
        return
    assert desired_replicas(hra, target, activity, NOW).desired_replicas == row.want


def test_every_row_of_arcs_tables_is_here() -> None:
    assert (len(REPOSITORY_RUNNER), len(ORGANIZATIONAL_RUNNER)) == (20, 19)


@pytest.mark.parametrize("row", REPOSITORY_RUNNER, ids=[r.name for r in REPOSITORY_RUNNER])
def test_determine_desired_replicas_repository_runner(row: Row) -> None:
    """ARC: TestDetermineDesiredReplicas_RepositoryRunner."""
    check(row)


@pytest.mark.parametrize("row", ORGANIZATIONAL_RUNNER, ids=[r.name for r in ORGANIZATIONAL_RUNNER])
def test_determine_desired_replicas_organizational_runner(row: Row) -> None:
    """ARC: TestDetermineDesiredReplicas_OrganizationalRunner."""
    check(row)
