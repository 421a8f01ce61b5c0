"""The listener's Kubernetes side: the targets it finds, and what it writes (annotations only,
on objects whose hooks read them; `hooks.scale_set_mode`)."""

from __future__ import annotations

import contextlib

from hooks.github.scaleset.models import JobStarted
from hooks.kube.config_maps import CoroutineRunner
from hooks.kube.port import (
    HORIZONTAL_RUNNER_AUTOSCALERS,
    RUNNER_DEPLOYMENTS,
    RUNNER_SETS,
    RUNNERS,
    KubePort,
    NotFound,
)
from hooks.listener.targets import RUNNER_DEPLOYMENT, ListenerTarget, find_targets
from hooks.scale_set_mode import (
    ASSIGNED_JOBS_ANNOTATION,
    ASSIGNED_JOBS_TIME_ANNOTATION,
    JOB_STARTED_ANNOTATION,
)


class KubeListenerSink:
    """`ListenerSink` over a KubePort; `run` carries out one of its coroutines from the
    calling thread (the process's event loop, or in place in the simulated world)."""

    def __init__(self, kube: KubePort, run: CoroutineRunner, namespace: str | None = None) -> None:
        self.kube = kube
        self.run = run
        self.namespace = namespace  # None: every namespace

    def targets(self) -> list[ListenerTarget]:
        deployments = self.run(self.kube.list(RUNNER_DEPLOYMENTS, self.namespace))
        autoscalers = self.run(self.kube.list(HORIZONTAL_RUNNER_AUTOSCALERS, self.namespace))
        runner_sets = self.run(self.kube.list(RUNNER_SETS, self.namespace))
        return find_targets(deployments, autoscalers, runner_sets)

    def write_assigned_jobs(self, target: ListenerTarget, assigned: int, counted_at: str) -> None:
        if target.autoscaler is None:
            return
        annotations = {
            ASSIGNED_JOBS_ANNOTATION: str(assigned),
            ASSIGNED_JOBS_TIME_ANNOTATION: counted_at,
        }
        patch = {"metadata": {"annotations": annotations}}
        self.run(
            self.kube.merge_patch(
                HORIZONTAL_RUNNER_AUTOSCALERS, target.namespace, target.autoscaler, patch
            )
        )

    def mark_job_started(self, target: ListenerTarget, job: JobStarted) -> None:
        """The Runner named as the runner that took the job (a member's name is its Runner's).
        A RunnerSet's members are pods of StatefulSets, with no Runner to mark."""
        if not job.runner_name or target.kind != RUNNER_DEPLOYMENT:
            return
        value = str(job.runner_request_id)
        patch = {"metadata": {"annotations": {JOB_STARTED_ANNOTATION: value}}}
        with contextlib.suppress(NotFound):  # gone already: its job is over
            self.run(self.kube.merge_patch(RUNNERS, target.namespace, job.runner_name, patch))
