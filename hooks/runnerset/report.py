"""A RunnerSet's answer from its decision: its StatefulSets, Secrets and claims, and the
status that counts them."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from hooks.children import as_kept, merge_conditions
from hooks.lifecycle.graceful_stop import GRACEFUL_STOP_ANNOTATION, stop_annotation
from hooks.metacontroller import CompositeHookResponse, KubeObject
from hooks.resources.runnerset import RunnerSetStatus
from hooks.runnerset.decide import Member, RunnerSetFacts, RunnerSetPlan
from hooks.runnerset.statefulset import registration_secret, secret_name


def runner_set_response(
    facts: RunnerSetFacts,
    plan: RunnerSetPlan,
    claims: list[KubeObject],
    secrets: Sequence[KubeObject] = (),
) -> CompositeHookResponse:
    children: list[KubeObject] = []
    for member in plan.members:
        if not member.keep:
            continue
        children.append(_statefulset_child(member))
        observed = member.observed
        if observed.secret is not None or member.new_material is not None:
            material = member.new_material or observed.material
            children.append(registration_secret(facts.runner_set, observed.name, material))
    children += [as_kept(claim) for claim in claims]
    # A runner asked for whose StatefulSet is not in view yet may have its Secret in view
    # (children reach the informer one by one): left out, the Secret would be deleted and its
    # pod could never start.
    pending = {secret_name(runner.name) for runner in plan.unobserved}
    pending -= {child["metadata"]["name"] for child in plan.new_children}
    children += [as_kept(s) for s in secrets if s["metadata"].get("name") in pending]
    children += plan.new_children
    return CompositeHookResponse(
        status=_status(facts, plan),
        children=children,
        resync_after_seconds=min(plan.resync) if plan.resync else None,
        finalized=plan.finalized,
    )


def _statefulset_child(member: Member) -> KubeObject:
    observed = member.observed
    child = as_kept(observed.sts)
    if observed.terminating:
        return child
    annotations = dict(child["metadata"].get("annotations") or {})
    if member.stop is not None:
        annotations[GRACEFUL_STOP_ANNOTATION] = stop_annotation(member.stop)
    child["metadata"] = {**child["metadata"], "annotations": annotations}
    if member.release and not observed.scaled_to_zero:
        child["spec"] = {**(child.get("spec") or {}), "replicas": 0}
    return child


def _status(facts: RunnerSetFacts, plan: RunnerSetPlan) -> dict[str, Any]:
    kept = [m for m in plan.members if m.keep and not m.observed.terminating]
    active = [m for m in kept if m.stop is None]
    ready = [m for m in active if m.observed.pod is not None and m.observed.pod.ready]
    status = RunnerSetStatus(
        replicas=len(kept) + len(plan.unobserved),
        ready_replicas=len(ready),
        available_replicas=len(ready),
        updated_replicas=sum(1 for m in active if m.observed.template_hash == plan.hash)
        + plan.created,
        desired_replicas=facts.desired,
        registered_replicas=sum(
            1 for m in active if m.github_runner is not None and m.github_runner.online
        ),
        # Runners stopping while busy count too: their jobs still hold them.
        busy_replicas=sum(1 for m in kept if m.busy),
        next_runner_index=plan.next_index,
        unobserved_runners=plan.unobserved or None,
        conditions=merge_conditions(facts.status.conditions, plan.conditions, facts.now),
        scale_set=facts.scale_set or facts.status.scale_set,
        count_time=plan.count_time or facts.status.count_time,
    )
    return status.to_wire()
