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
  graceful stop (`hooks.runnerpod.stop`, pure), its state kept in the pod's own annotation, and
  whatever registration a stopped runner left behind is removed before the pod may go.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime
from functools import partial
from typing import Any

from hooks.clock import format_time
from hooks.deps import HookDeps
from hooks.github.credentials import credentials_rules, requested_credentials
from hooks.github.port import GitHubPort
from hooks.lifecycle.graceful_stop import GRACEFUL_STOP_ANNOTATION, read_stop, stop_annotation
from hooks.lifecycle.steps import resolve
from hooks.metacontroller import (
    DecoratorHookRequest,
    DecoratorHookResponse,
    HookKind,
    HookRoute,
    KubeObject,
    object_or_empty,
)
from hooks.naming import RUNNER_ID_ANNOTATION
from hooks.resources.runner import API_VERSION as RUNNER_API_VERSION
from hooks.runner.pod import API_CREDS_SECRET_ANNOTATION
from hooks.runner_seal import ID_SEAL_ANNOTATION, seal_key
from hooks.runnerpod.decide import (
    CLEAN_OUTCOMES,
    PodStop,
    decide_pod_stop,
    decide_runner_id,
)
from hooks.runnerpod.facts import (
    ControllerRef,
    RunnerPod,
    controller_ref,
    force_deletion_at,
    read_runner_pod,
    termination_overdue_at,
)
from hooks.runnerpod.vouch import (
    SEAL_ANNOTATION,
    owner_vouches,
    pod_id_seal,
    pod_id_sealed,
    pod_seal,
    sealed,
)

UNREGISTRATION_START_ANNOTATION = "actions-runner/unregistration-start-timestamp"
UNREGISTRATION_COMPLETE_ANNOTATION = "actions-runner/unregistration-complete-timestamp"
STATEFULSET_API_VERSION = "apps/v1"
RUNNER_POD_LABEL = "actions-runner"
"""The decorator's selector (metacontroller/runnerpod-decorator.yaml): the pods it serves."""
MIN_RESYNC_SECONDS = 1.0
"""The shortest wait asked for: an answer's resyncAfterSeconds is rounded to milliseconds,
and Metacontroller drops a wait of zero."""


# ------------------------------------------------------------------------- sync


def sync_runner_pod(request: DecoratorHookRequest, deps: HookDeps) -> DecoratorHookResponse:
    """Seal a pod its owner vouches for, and record the runner id once GitHub lists the
    runner; poll until then, for a while."""
    key = seal_key(deps.settings)
    pod = _with_trusted_id(read_runner_pod(request.object), key)
    if pod.scope is None:
        return DecoratorHookResponse()  # nothing to look up: no GitHub port needed
    annotations: dict[str, str | None] = {}
    if not _own_credentials(pod):
        if key is not None and owner_vouches(pod, _controller(request, pod), key):
            if not sealed(key, pod):
                annotations[SEAL_ANNOTATION] = pod_seal(key, pod)
        elif not sealed(key, pod):
            return DecoratorHookResponse()  # not vouched for: nothing is looked up for it
    if pod.runner_id is not None:
        return DecoratorHookResponse(annotations=annotations)
    decide = partial(decide_runner_id, pod, deps.clock.now(), deps.settings)
    lookup = resolve(decide, _github(request, pod, deps))
    if lookup.runner_id is None:
        return DecoratorHookResponse(
            annotations=annotations, resync_after_seconds=lookup.retry_after
        )
    annotations[RUNNER_ID_ANNOTATION] = str(lookup.runner_id)
    if key is not None:
        annotations[ID_SEAL_ANNOTATION] = pod_id_seal(key, pod, lookup.runner_id)
    return DecoratorHookResponse(annotations=annotations)


def _with_trusted_id(pod: RunnerPod, key: bytes | None) -> RunnerPod:
    """The pod, its recorded runner id kept only when the decorator recorded it (its seal
    holds): a stop removes the runner by that id, and the annotation is anyone's to write. An
    id not kept is looked up by name, as for a pod with none. A pod acting with its own
    credentials keeps it, as before."""
    if pod.runner_id is None or _own_credentials(pod):
        return pod
    if pod_id_sealed(key, pod, pod.runner_id):
        return pod
    return replace(pod, runner_id=None)


# --------------------------------------------------------------------- finalize


def finalize_runner_pod(request: DecoratorHookRequest, deps: HookDeps) -> DecoratorHookResponse:
    key = seal_key(deps.settings)
    pod = _with_trusted_id(read_runner_pod(request.object), key)
    answer = _finalize(request, pod, deps, key)
    if not answer.finalized:
        return answer
    return _force_deleted_if_stuck(answer, pod, deps.clock.now())


def _force_deleted_if_stuck(
    answer: DecoratorHookResponse, pod: RunnerPod, now: datetime
) -> DecoratorHookResponse:
    """Once nothing else holds the pod, one whose node stopped answering is force-deleted a
    minute past its deadline (as ARC does); the finalizer is kept until then, so that this
    hook is called again at the deadline.

    A pod whose runner still shows as running may yet lose its node. It goes now, but asks
    to be looked at again when it would be overdue: Metacontroller calls this hook for a pod
    being deleted with or without the finalizer, so one left Terminating on a lost node is
    force-deleted then, not at some later periodic resync."""
    due = force_deletion_at(pod, now)
    if due is None:
        overdue_at = termination_overdue_at(pod)
        if overdue_at is None:
            return answer
        wait = max((overdue_at - now).total_seconds(), MIN_RESYNC_SECONDS)
        return answer.model_copy(update={"resync_after_seconds": wait})
    if now < due:
        wait = (due - now).total_seconds()
        return answer.model_copy(update={"finalized": False, "resync_after_seconds": wait})
    return answer.model_copy(update={"force_delete_uid": pod.uid})


def _finalize(
    request: DecoratorHookRequest, pod: RunnerPod, deps: HookDeps, key: bytes | None
) -> DecoratorHookResponse:
    if _owner_takes_care(request, pod):
        return DecoratorHookResponse(finalized=True)
    if pod.scope is None or pod.observed.pending:
        # Nothing to unregister with, or a runner that never ran (a pod stuck unscheduled, or
        # on a node that went away before it started): nothing to wait for.
        return DecoratorHookResponse(finalized=True)
    if UNREGISTRATION_COMPLETE_ANNOTATION in pod.annotations:
        return DecoratorHookResponse(finalized=True)  # ARC's own record: already done
    if not _own_credentials(pod) and not _vouched(request, pod, key):
        # Not a runner of this server's (`hooks.runnerpod.vouch`): its env is not acted on.
        return DecoratorHookResponse(finalized=True)
    now = deps.clock.now()
    decide = partial(decide_pod_stop, pod, now, deps.timing)
    return _recorded(pod, resolve(decide, _github(request, pod, deps)), now, key)


def _own_credentials(pod: RunnerPod) -> bool:
    """The pod's runner uses its owner's credentials Secret, not the server's."""
    return bool(pod.annotations.get(API_CREDS_SECRET_ANNOTATION))


def _vouched(request: DecoratorHookRequest, pod: RunnerPod, key: bytes | None) -> bool:
    return owner_vouches(pod, _controller(request, pod), key) or sealed(key, pod)


def _controller(request: DecoratorHookRequest, pod: RunnerPod) -> KubeObject | None:
    return _related(request, pod.controller, pod.namespace) if pod.controller else None


def _github(request: DecoratorHookRequest, pod: RunnerPod, deps: HookDeps) -> GitHubPort:
    """The GitHub port of the pod's runner: its owner's credentials Secret (named on the pod as
    ARC names it), or the server's."""
    secret_name = pod.annotations.get(API_CREDS_SECRET_ANNOTATION) or None
    return deps.github_for(requested_credentials(request, pod.namespace, secret_name))


def _recorded(
    pod: RunnerPod, stop: PodStop, now: datetime, key: bytes | None
) -> DecoratorHookResponse:
    """The stop's step, recorded on the pod (ARC's timestamps too); a runner id it learned is
    recorded as the pod's, sealed (`recorded_stop` keeps only that one)."""
    annotations: dict[str, str | None] = {GRACEFUL_STOP_ANNOTATION: stop_annotation(stop.state)}
    learned = stop.state.runner_id
    if learned is not None and learned != pod.runner_id:
        annotations[RUNNER_ID_ANNOTATION] = str(learned)
        if key is not None and not _own_credentials(pod):
            annotations[ID_SEAL_ANNOTATION] = pod_id_seal(key, pod, learned)
    if UNREGISTRATION_START_ANNOTATION not in pod.annotations:
        annotations[UNREGISTRATION_START_ANNOTATION] = stop.state.started_at
    if stop.finalized:
        annotations[UNREGISTRATION_COMPLETE_ANNOTATION] = format_time(now)
    return DecoratorHookResponse(
        annotations=annotations, finalized=stop.finalized, resync_after_seconds=stop.retry_after
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


def _stopped_this_pod(statefulset: KubeObject, pod_uid: str) -> bool:
    """The RunnerSet hook recorded a finished stop of this very pod, nothing left on GitHub."""
    annotations = object_or_empty(object_or_empty(statefulset.get("metadata")).get("annotations"))
    stop = read_stop(annotations.get(GRACEFUL_STOP_ANNOTATION))
    return stop is not None and stop.pod_uid == pod_uid and stop.outcome in CLEAN_OUTCOMES


# -------------------------------------------------------------------- customize


def customize_runner_pod(request: dict[str, Any]) -> dict[str, Any]:
    """Relate the pod's controller, for finalize to see whether it takes care of the pod, and
    the credentials Secret its runner uses, if any."""
    pod = request.get("object") or request.get("parent")
    if not isinstance(pod, dict):
        return {"relatedResources": []}
    metadata = object_or_empty(pod.get("metadata"))
    if RUNNER_POD_LABEL not in object_or_empty(metadata.get("labels")):
        # Metacontroller asks for every pod its informer holds, the decorator's selector
        # notwithstanding, whenever a related object changes: a pod that is not a runner's
        # relates nothing (its StatefulSet would be watched for nothing).
        return {"relatedResources": []}
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
