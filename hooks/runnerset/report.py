"""A RunnerSet's answer from its decision: its StatefulSets, Secrets and claims, and the
status that counts them."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from hooks.children import as_kept, merge_conditions
from hooks.lifecycle.graceful_stop import GRACEFUL_STOP_ANNOTATION, stop_annotation
from hooks.metacontroller import CompositeHookResponse, KubeObject, object_or_empty
from hooks.resources.runnerset import RunnerSetStatus
from hooks.runner.observed_pod import literal_env
from hooks.runner_seal import SEAL_ANNOTATION, runner_seal, seal_key
from hooks.runnerset.decide import Member, RunnerSetFacts, RunnerSetPlan
from hooks.runnerset.statefulset import registration_secret, secret_name, template_scope


def runner_set_response(
    facts: RunnerSetFacts,
    plan: RunnerSetPlan,
    claims: list[KubeObject],
    secrets: Sequence[KubeObject] = (),
) -> CompositeHookResponse:
    children: list[KubeObject] = []
    key = seal_key(facts.settings)
    namespace = facts.runner_set.metadata.namespace
    for member in plan.members:
        if not member.keep:
            continue
        children.append(_statefulset_child(member, key, namespace))
        observed = member.observed
        if observed.secret is not None or member.new_material is not None:
            material = member.new_material or observed.material
            children.append(registration_secret(facts.runner_set, observed.name, material))
    # Adopted StatefulSets that are not the set's own (`hooks.runnerset.trust`): left as
    # they are, neither counted nor stopped, nor sealed.
    children += [as_kept(sts) for sts in facts.foreign]
    children += [as_kept(claim) for claim in claims]
    # A runner asked for whose StatefulSet is not in view yet may have its Secret in view
    # (children reach the informer one by one): left out, the Secret would be deleted and its
    # pod could never start.
    pending = {secret_name(runner.name) for runner in plan.unobserved}
    pending -= {child["metadata"]["name"] for child in plan.new_children}
    children += [as_kept(s) for s in secrets if s["metadata"].get("name") in pending]
    children += [
        _with_seal(child, key, namespace) if child.get("kind") == "StatefulSet" else child
        for child in plan.new_children
    ]
    return CompositeHookResponse(
        status=_status(facts, plan),
        children=children,
        resync_after_seconds=min(plan.resync) if plan.resync else None,
        finalized=plan.finalized,
    )


def _statefulset_child(member: Member, key: bytes | None, namespace: str) -> KubeObject:
    observed = member.observed
    child = as_kept(observed.sts)
    if observed.terminating:
        return child
    annotations = dict(child["metadata"].get("annotations") or {})
    if member.stop is not None:
        annotations[GRACEFUL_STOP_ANNOTATION] = stop_annotation(member.stop)
    if key is not None and observed.scope is not None:
        annotations[SEAL_ANNOTATION] = runner_seal(
            key, namespace, observed.runner_name, observed.scope, observed.template_runner_name
        )
    child["metadata"] = {**child["metadata"], "annotations": annotations}
    if member.release and not observed.scaled_to_zero:
        child["spec"] = {**(child.get("spec") or {}), "replicas": 0}
    return child


def runner_counts(
    kept: list[Member], active: list[Member], previous: RunnerSetStatus
) -> tuple[int, int]:
    """The registered and busy runners, as `registeredReplicas` and `busyReplicas` report
    them (PercentageRunnersBusy reads them). A runner started after its scope's list was
    asked is not in it: it counts as registered, and the busy count the last status gave holds
    (at most) until a list shows them, rather than reading them all as idle. Found by an
    independent run: an ephemeral set turning over all at once read 1 busy of 8 every third
    minute while all 8 were busy, and its HRA scaled it down into a backlog. Held, never
    grown: an estimate that grew from itself ran an idle set up to 64 runners (found in
    review)."""
    listed = [m for m in active if not m.newer_than_list]
    unlisted = len(active) - len(listed)
    # Runners stopping while busy count too, as registered and busy (as a RunnerReplicaSet's
    # do): their jobs still hold them, and an HRA reading these counts takes registered less
    # busy for its idle runners (found in review: with two idle and two busy ones leaving, it
    # read none idle).
    stopping_busy = sum(1 for m in kept if m.stop is not None and m.busy)
    online = sum(1 for m in listed if m.github_runner is not None and m.github_runner.online)
    registered = online + unlisted + stopping_busy
    busy = sum(1 for m in listed if m.busy) + stopping_busy
    if unlisted:
        busy = max(busy, previous.busy_replicas or 0)
    return registered, min(busy, registered)


def _status(facts: RunnerSetFacts, plan: RunnerSetPlan) -> dict[str, Any]:
    kept = [m for m in plan.members if m.keep and not m.observed.terminating]
    active = [m for m in kept if m.stop is None]
    ready = [m for m in active if m.observed.pod is not None and m.observed.pod.ready]
    registered, busy = runner_counts(kept, active, facts.status)
    status = RunnerSetStatus(
        replicas=len(kept) + len(plan.unobserved),
        ready_replicas=len(ready),
        available_replicas=len(ready),
        updated_replicas=sum(1 for m in active if m.observed.template_hash == plan.hash)
        + plan.created,
        desired_replicas=facts.desired,
        autoscaled=facts.autoscaled,
        registered_replicas=registered,
        busy_replicas=busy,
        next_runner_index=plan.next_index,
        unobserved_runners=plan.unobserved or None,
        conditions=merge_conditions(facts.status.conditions, plan.conditions, facts.now),
        scale_set=facts.scale_set or facts.status.scale_set,
        count_time=plan.count_time or facts.status.count_time,
        scale_up_remaining=plan.scale_up_remaining,
    )
    return status.to_wire()


def _with_seal(statefulset: KubeObject, key: bytes | None, namespace: str) -> KubeObject:
    """A new runner's StatefulSet, sealed for its pod (`hooks.runner_seal`), and its pod
    template too, so that the pod is born sealed: the runner-pod decorator believes the pod's
    env only then, also once the StatefulSet is gone."""
    spec = object_or_empty(statefulset.get("spec"))
    template = object_or_empty(spec.get("template"))
    scope = template_scope(statefulset)
    if key is None or scope is None:
        return statefulset
    pod_name = f"{statefulset['metadata']['name']}-0"
    seal = {
        SEAL_ANNOTATION: runner_seal(
            key, namespace, pod_name, scope, literal_env(template, "RUNNER_NAME") or pod_name
        )
    }
    metadata = statefulset["metadata"]
    template_metadata = object_or_empty(template.get("metadata"))
    sealed_template = {
        **template,
        "metadata": {
            **template_metadata,
            "annotations": {**object_or_empty(template_metadata.get("annotations")), **seal},
        },
    }
    return {
        **statefulset,
        "metadata": {**metadata, "annotations": {**(metadata.get("annotations") or {}), **seal}},
        "spec": {**spec, "template": sealed_template},
    }
