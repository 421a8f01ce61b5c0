"""A Runner's answer from its decision: the children and the status that reports them.

Status is observation: timestamps change at transitions only (conditions merge with the ones
recorded), so a resync with nothing new writes nothing.
"""

from __future__ import annotations

from hooks.children import label_value, merge_conditions
from hooks.clock import format_time
from hooks.metacontroller import CompositeHookResponse, KubeObject
from hooks.resources.runner import RunnerStatus, RunnerStatusRegistration
from hooks.runner.container_mode import service_account_children
from hooks.runner.decide import RunnerFacts, RunnerPlan
from hooks.runner.parse import has_scope
from hooks.runner.registration import RegistrationMaterial, secret_fields
from hooks.runner.secret import registration_secret_name


def runner_response(facts: RunnerFacts, plan: RunnerPlan) -> CompositeHookResponse:
    children = [plan.pod] if plan.pod is not None else []
    if plan.secret is not None:
        children.append(registration_secret(facts, plan.secret))
    children += service_account_children(facts.runner, facts.account)
    return CompositeHookResponse(
        status=runner_status(facts, plan).to_wire(),
        children=children,
        resync_after_seconds=min(plan.resync) if plan.resync else None,
        finalized=plan.finalized,
        events=plan.events,
    )


def registration_secret(facts: RunnerFacts, material: RegistrationMaterial) -> KubeObject:
    metadata = facts.runner.metadata
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {
            "name": registration_secret_name(metadata.name),
            "namespace": metadata.namespace,
            "labels": {"actions-runner": "", "runner-name": label_value(metadata.name)},
        },
        "type": "Opaque",
        **secret_fields(material),
    }


def runner_status(facts: RunnerFacts, plan: RunnerPlan) -> RunnerStatus:
    previous, pod, found, scope = facts.status, facts.pod, plan.github_runner, plan.scope
    expires_at = facts.material.expires_at
    written = plan.secret
    if written is not None and written is not facts.material and written.expires_at:
        expires_at = written.expires_at
    registration = RunnerStatusRegistration(
        enterprise=scope.enterprise or None,
        organization=scope.organization or None,
        repository=scope.repository or None,
        labels=list(facts.runner.spec.labels),
        expires_at=format_time(expires_at) if expires_at else None,
    )
    conditions = dict(plan.conditions)
    conditions.setdefault("Stopping", ("False", "NotStopping", ""))
    online = found.online if found else previous.online
    # No pod, no job: a Runner whose pod is gone (one being deleted may wait a while for its
    # scope's next list) is not reported busy from an earlier list.
    busy = False if pod is None else (found.busy if found else previous.busy)
    return RunnerStatus(
        ready=pod.ready if pod is not None and plan.pod is not None else False,
        phase=plan.phase or (pod.phase if pod is not None else previous.phase),
        reason=pod.reason if pod is not None else None,
        message=pod.message if pod is not None else None,
        registration=registration if has_scope(scope) else previous.registration,
        workflow=previous.workflow,
        last_registration_check_time=_check_time(facts, plan, (plan.runner_id, online, busy)),
        runner_id=plan.runner_id,
        jit_config_time=plan.jit_config_time if plan.runner_id is not None else None,
        online=online,
        busy=busy,
        conditions=merge_conditions(previous.conditions, conditions, facts.now),
        graceful_stop=plan.stop,
        failures=plan.failures or None,
        last_failure_time=plan.last_failure_time,
    )


def _check_time(facts: RunnerFacts, plan: RunnerPlan, view: tuple[object, ...]) -> str | None:
    """When GitHub listed what status reports of the runner: moved on when a list changes the
    report, so that a resync that only re-reads the same view writes nothing. A list older
    than this is not reported (`hooks.runner.decide`)."""
    previous = facts.status
    if plan.github_listed_at is None:
        return previous.last_registration_check_time
    registered = next((c for c in previous.conditions if c.type == "Registered"), None)
    before = (
        previous.runner_id,
        previous.online,
        previous.busy,
        (registered.status, registered.reason, registered.message) if registered else None,
    )
    if (*view, plan.conditions.get("Registered")) == before:
        return previous.last_registration_check_time
    return format_time(plan.github_listed_at)
