"""The runner-pod decorator: what `/sync/runnerpod`, `/finalize/runnerpod` and
`/customize/runnerpod` answer.

Every pod labelled `actions-runner` gets Metacontroller's finalizer, so no runner pod object
leaves the cluster before its GitHub registration is gone, whoever deleted it. A finalizer
cannot delay SIGTERM (the kubelet stops the containers at once); it only holds the pod object
until this hook says the registration is gone.

- sync: record the runner's GitHub id on the pod (`actions-runner/id`, as ARC) once GitHub
  lists it, from the cached per-scope runner list. Scale-down is decided by the owners' hooks.
- finalize: a pod whose owner (a Runner, or a RunnerSet's StatefulSet that finished this pod's
  stop) takes care of its registration goes at once. Any other pod is stopped with the shared
  graceful stop, its state kept in the pod's own annotation, and whatever registration a
  stopped runner left behind is removed before the pod may go.
"""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import datetime
from functools import partial
from typing import Any

from pydantic import ValidationError

from hooks.clock import format_time
from hooks.deps import HookDeps
from hooks.github.credentials import credentials_rules, requested_credentials
from hooks.github.port import GitHubError, GitHubPort, RateLimitedError, RemoveOutcome, Scope
from hooks.metacontroller import (
    DecoratorHookRequest,
    DecoratorHookResponse,
    HookKind,
    HookRoute,
    KubeObject,
    object_or_empty,
    observed_time,
)
from hooks.resources.runner import API_VERSION as RUNNER_API_VERSION
from hooks.resources.runner import GracefulStopStatus
from hooks.runner.graceful_stop import (
    GRACEFUL_STOP_ANNOTATION,
    StopSubject,
    begin_stop,
    find_runner,
    tick_graceful_stop,
)
from hooks.runner.pod import API_CREDS_SECRET_ANNOTATION
from hooks.runnerpod.facts import (
    RUNNER_ID_ANNOTATION,
    ControllerRef,
    RunnerPod,
    controller_ref,
    force_deletion_at,
    node_unreachable,
    read_runner_pod,
)

UNREGISTRATION_START_ANNOTATION = "actions-runner/unregistration-start-timestamp"
UNREGISTRATION_COMPLETE_ANNOTATION = "actions-runner/unregistration-complete-timestamp"
STATEFULSET_API_VERSION = "apps/v1"

# Outcomes after which nothing is left on GitHub for this pod.
_CLEAN_OUTCOMES = ("Unregistered", "NotRegistered")
# A 403 ends a stop as in ARC: asking again for a DELETE GitHub just refused would not help.
_FINAL_OUTCOMES = (*_CLEAN_OUTCOMES, "Forbidden")


# ------------------------------------------------------------------------- sync


def sync_runner_pod(request: DecoratorHookRequest, deps: HookDeps) -> DecoratorHookResponse:
    """Record the runner id once GitHub lists the runner; poll until then, for a while."""
    pod = read_runner_pod(request.object)
    if pod.scope is None or pod.runner_id is not None:
        return DecoratorHookResponse()
    if pod.observed.stopped or not pod.runner_running:
        return DecoratorHookResponse()  # a pod status change calls again when it starts
    settings = deps.settings
    running_since = pod.observed.ready_since or pod.runner_running_since
    if running_since is not None:
        running_for = (deps.clock.now() - running_since).total_seconds()
        if running_for >= settings.registration_timeout:
            return DecoratorHookResponse()  # it never registered; its owner replaces it
    try:
        found = find_runner(_github(request, pod, deps), pod.scope, pod.runner_name)
    except RateLimitedError as error:
        return DecoratorHookResponse(resync_after_seconds=error.retry_after)
    except GitHubError:
        return DecoratorHookResponse(resync_after_seconds=settings.registration_check_interval)
    if found is None:
        return DecoratorHookResponse(resync_after_seconds=settings.registration_check_interval)
    return DecoratorHookResponse(annotations={RUNNER_ID_ANNOTATION: str(found.id)})


# --------------------------------------------------------------------- finalize


def finalize_runner_pod(request: DecoratorHookRequest, deps: HookDeps) -> DecoratorHookResponse:
    pod = read_runner_pod(request.object)
    answer = _finalize(request, pod, deps)
    if not answer.finalized:
        return answer
    return _force_deleted_if_stuck(answer, pod, deps.clock.now())


def _force_deleted_if_stuck(
    answer: DecoratorHookResponse, pod: RunnerPod, now: datetime
) -> DecoratorHookResponse:
    """Once nothing else holds the pod, one whose node stopped answering is force-deleted a
    minute past its deadline (as ARC does); the finalizer is kept until then, so that this
    hook is called again at the deadline."""
    due = force_deletion_at(pod, now)
    if due is None:
        return answer
    if now < due:
        wait = (due - now).total_seconds()
        return answer.model_copy(update={"finalized": False, "resync_after_seconds": wait})
    return answer.model_copy(update={"force_delete_uid": pod.uid})


def _finalize(
    request: DecoratorHookRequest, pod: RunnerPod, deps: HookDeps
) -> DecoratorHookResponse:
    if _owner_takes_care(request, pod):
        return DecoratorHookResponse(finalized=True)
    if pod.scope is None or pod.observed.pending:
        # Nothing to unregister with, or a runner that never ran (a pod stuck unscheduled, or
        # on a node that went away before it started): nothing to wait for.
        return DecoratorHookResponse(finalized=True)
    if UNREGISTRATION_COMPLETE_ANNOTATION in pod.annotations:
        return DecoratorHookResponse(finalized=True)  # ARC's own record: already done
    return _PodStop(pod, pod.scope, deps, _github(request, pod, deps)).advance()


def _github(request: DecoratorHookRequest, pod: RunnerPod, deps: HookDeps) -> GitHubPort:
    """The GitHub port of the pod's runner: its owner's credentials Secret (named on the pod as
    ARC names it), or the server's."""
    secret_name = pod.annotations.get(API_CREDS_SECRET_ANNOTATION) or None
    return deps.github_for(requested_credentials(request, pod.namespace, secret_name))


class _PodStop:
    """One finalize call's step of a pod's stop: the graceful stop, then leftovers."""

    def __init__(self, pod: RunnerPod, scope: Scope, deps: HookDeps, github: GitHubPort) -> None:
        self.pod = pod
        self.scope = scope
        self.deps = deps
        self.github = github
        self.timing = deps.timing
        self.now = deps.clock.now()
        self.unreachable = node_unreachable(pod, self.now)

    def advance(self) -> DecoratorHookResponse:
        subject = self._subject()
        state = self._recorded_state()
        if state is None:
            state = begin_stop(self._reason(), subject, self.deps.clock)
        if self.unreachable and state.waiting_for_completion:
            # Its exit would never be reported: ask GitHub again instead of waiting for it.
            state = state.model_copy(update={"waiting_for_completion": False})
        tick = tick_graceful_stop(subject, state, self.github, self.deps.clock, self.timing)
        state = tick.state
        if not tick.done:
            return self._answer(state, finalized=False, retry_after=tick.retry_after)
        if state.outcome not in _FINAL_OUTCOMES:
            state, retry_after = self._remove_leftover(state)
            if retry_after is not None:
                return self._answer(state, finalized=False, retry_after=retry_after)
        return self._answer(state, finalized=True)

    def _subject(self) -> StopSubject:
        pod = self.pod
        observed = pod.observed
        if self.unreachable and observed.ready_since is None:
            # Not Ready any more, so the registration grace period counts from the runner's
            # start (or the deletion): a runner that never registered does not hold the pod.
            since = pod.runner_running_since or pod.deletion_timestamp or self.now
            observed = replace(observed, ready_since=since)
        return StopSubject(
            scope=self.scope,
            runner_name=pod.runner_name,
            runner_id=pod.runner_id,
            pod=observed,
            # Waiting for an ephemeral runner's completion needs a node that reports it.
            ephemeral=observed.ephemeral and not self.unreachable,
        )

    def _reason(self) -> str:
        return "PodDeleted" if self.pod.observed.terminating else "PodUnselected"

    def _recorded_state(self) -> GracefulStopStatus | None:
        """This pod's stop as recorded; an unreadable record, or another pod's, starts anew."""
        text = self.pod.annotations.get(GRACEFUL_STOP_ANNOTATION)
        if not text:
            return None
        try:
            state = GracefulStopStatus.model_validate_json(text)
        except ValidationError:
            return None
        if state.pod_uid != self.pod.uid or not _times_readable(state):
            return None
        return state

    def _remove_leftover(
        self, state: GracefulStopStatus
    ) -> tuple[GracefulStopStatus, float | None]:
        """The runner stopped without unregistering (killed mid-job, out of grace time, or a
        static runner): remove its registration. (new state, retry after; None when done)."""
        wait = self._leftover_pause(state)
        if wait > 0:
            return state, wait
        github, timing = self.github, self.timing
        # Answers remembered from before the runner stopped (a "busy" while its job ran) say
        # nothing about it now.
        stopped_at = observed_time(state.completed_at)
        runner_id = state.runner_id
        if runner_id is None:
            try:
                found = find_runner(github, self.scope, self.pod.runner_name, not_before=stopped_at)
            except RateLimitedError as error:
                return state.model_copy(update={"message": str(error)}), error.retry_after
            except GitHubError as error:
                return state.model_copy(update={"message": str(error)}), timing.retry_delay
            if found is None:
                return state.model_copy(update={"message": "no registration left"}), None
            runner_id = found.id
            state = state.model_copy(update={"runner_id": runner_id})
        result = github.remove_runner(self.scope, runner_id, not_before=stopped_at)
        match result.outcome:
            case RemoveOutcome.REMOVED | RemoveOutcome.NOT_FOUND | RemoveOutcome.FORBIDDEN:
                message = "leftover registration removed"
                if result.outcome is RemoveOutcome.FORBIDDEN:
                    message = result.message or "forbidden"
                return state.model_copy(update={"message": message}), None
            case RemoveOutcome.RATE_LIMITED:
                delay = result.retry_after or timing.rate_limit_retry_delay
                message = result.message or "GitHub rate limit"
                return state.model_copy(update={"message": message}), delay
            case RemoveOutcome.BUSY:
                # GitHub still holds the job the runner was killed in; it lets the runner go
                # once it gives the job up.
                attempted = self._attempted(state, "runner still assigned a job on GitHub")
                return attempted, timing.retry_delay
            case _:
                return self._attempted(state, result.message or "GitHub error"), timing.retry_delay

    def _leftover_pause(self, state: GracefulStopStatus) -> float:
        """Seconds to wait before the next leftover DELETE: one per retry delay."""
        last = observed_time(state.last_attempt_at)
        completed = observed_time(state.completed_at)
        if last is None or completed is None:
            return 0.0
        if last < completed:
            return 0.0  # that attempt was the graceful stop's, before the runner stopped
        return self.timing.retry_delay - (self.now - last).total_seconds()

    def _attempted(self, state: GracefulStopStatus, message: str) -> GracefulStopStatus:
        return state.model_copy(
            update={"last_attempt_at": format_time(self.now), "message": message}
        )

    def _answer(
        self, state: GracefulStopStatus, *, finalized: bool, retry_after: float | None = None
    ) -> DecoratorHookResponse:
        annotations: dict[str, str | None] = {
            GRACEFUL_STOP_ANNOTATION: json.dumps(
                state.to_wire(), sort_keys=True, separators=(",", ":")
            )
        }
        if UNREGISTRATION_START_ANNOTATION not in self.pod.annotations:
            annotations[UNREGISTRATION_START_ANNOTATION] = state.started_at
        if finalized:
            annotations[UNREGISTRATION_COMPLETE_ANNOTATION] = format_time(self.now)
        return DecoratorHookResponse(
            annotations=annotations,
            finalized=finalized,
            resync_after_seconds=retry_after,
        )


def _owner_takes_care(request: DecoratorHookRequest, pod: RunnerPod) -> bool:
    """The pod's controller removes (or already removed) its registration itself."""
    owner = pod.controller
    if owner is None:
        return False
    if owner.kind == "Runner" and owner.api_version == RUNNER_API_VERSION:
        # The Runner's own stop and replacement unregister before a new pod or its own end.
        return _related(request, owner, pod.namespace) is not None
    if owner.kind == "StatefulSet" and owner.api_version == STATEFULSET_API_VERSION:
        statefulset = _related(request, owner, pod.namespace)
        return statefulset is not None and _stopped_this_pod(statefulset, pod.uid)
    return False


def _related(
    request: DecoratorHookRequest, owner: ControllerRef, namespace: str
) -> KubeObject | None:
    for obj in request.objects(owner.kind, related=True):
        metadata = obj["metadata"]  # an observed object: identified by the request model
        if metadata.get("name") != owner.name:
            continue
        if owner.uid and metadata.get("uid") != owner.uid:
            continue  # a namesake created since: not this pod's owner
        if namespace and metadata.get("namespace", namespace) != namespace:
            continue
        return obj
    return None


def _times_readable(state: GracefulStopStatus) -> bool:
    """Every time the record holds reads as a time (the annotation may have been edited)."""
    recorded = (state.started_at, state.last_attempt_at, state.completed_at)
    return all(text is None or observed_time(text) is not None for text in recorded)


def _stopped_this_pod(statefulset: KubeObject, pod_uid: str) -> bool:
    """The RunnerSet hook recorded a finished stop of this very pod, nothing left on GitHub."""
    annotations = object_or_empty(object_or_empty(statefulset.get("metadata")).get("annotations"))
    text = annotations.get(GRACEFUL_STOP_ANNOTATION)
    if not isinstance(text, str) or not text:
        return False
    try:
        stop = GracefulStopStatus.model_validate_json(text)
    except ValidationError:
        return False
    return stop.pod_uid == pod_uid and stop.outcome in _CLEAN_OUTCOMES


# -------------------------------------------------------------------- customize


def customize_runner_pod(request: dict[str, Any]) -> dict[str, Any]:
    """Relate the pod's controller, for finalize to see whether it takes care of the pod, and
    the credentials Secret its runner uses, if any."""
    pod = request.get("object") or request.get("parent")
    if not isinstance(pod, dict):
        return {"relatedResources": []}
    metadata = object_or_empty(pod.get("metadata"))
    namespace = metadata.get("namespace")
    namespace = namespace if isinstance(namespace, str) else ""
    rules: list[dict[str, Any]] = []
    owner = controller_ref(pod)
    resource = _RELATED_RESOURCES.get((owner.api_version, owner.kind)) if owner else None
    if owner is not None and resource is not None and owner.name:
        rule: dict[str, Any] = {"apiVersion": owner.api_version, "resource": resource}
        if namespace:
            rule["namespace"] = namespace
        rule["names"] = [owner.name]
        rules.append(rule)
    secret_name = object_or_empty(metadata.get("annotations")).get(API_CREDS_SECRET_ANNOTATION)
    rules += credentials_rules(namespace, secret_name if isinstance(secret_name, str) else None)
    return {"relatedResources": rules}


_RELATED_RESOURCES = {
    (RUNNER_API_VERSION, "Runner"): "runners",
    (STATEFULSET_API_VERSION, "StatefulSet"): "statefulsets",
}


def routes(deps: HookDeps) -> list[HookRoute]:
    return [
        HookRoute("/sync/runnerpod", HookKind.DECORATOR, partial(sync_runner_pod, deps=deps), True),
        HookRoute(
            "/finalize/runnerpod",
            HookKind.DECORATOR,
            partial(finalize_runner_pod, deps=deps),
            True,
        ),
        HookRoute("/customize/runnerpod", HookKind.CUSTOMIZE_DECORATOR, customize_runner_pod),
    ]
