"""The RunnerSet controller: what `/sync/runnerset`, `/finalize/runnerset` and
`/customize/runnerset` answer.

Children: one StatefulSet of one replica per runner (InPlace), the Secret with that runner's
registration (a shared token, or a JIT config of its own), and the pool of volume claims (see
`hooks.runnerset.statefulset`). Related: the set's pods, the HorizontalRunnerAutoscalers of its
namespace, and the Secret named by `githubAPICredentialsFrom`.

One StatefulSet per runner lets this hook choose which runner goes, as ARC does. A runner leaves
in two steps, each recorded on its StatefulSet (annotation `arc-hooks.dev/graceful-stop`):

1. the shared graceful stop ticks on the live pod until GitHub has let the registration go (or
   the runner provably stopped and its leftover registration is removed); busy runners are
   waited for, never cut off;
2. the StatefulSet is scaled to 0, so the StatefulSet controller deletes the pod (the runner-pod
   decorator sees the finished stop and lets the pod go at once); once the pod is gone, the
   StatefulSet and its Secret are left out of the answer, and its volumes are free for the next
   runner.

Which runners go: never-registered ones first, then idle ones, busy ones last, newest first
within each rank (as for RunnerReplicaSets). Runners that ended (a completed ephemeral runner, a
failed one), whose pod was deleted by someone else, or that never registered within the
registration timeout are replaced; so is one outdated runner at a time when a new template is
applied, and never while it is busy.

A runner's StatefulSet restarts its container (StatefulSets only allow `restartPolicy: Always`),
so the registration Secret is emptied as soon as the runner has started (a JIT runner's id is
kept): a restarted container cannot register a second runner under the same name; the set
replaces it instead.

Each call reads the request into facts (`hooks.runnerset.member` for each runner), resolves the
pure decision (`hooks.runnerset.decide`) against GitHub, and answers (`hooks.runnerset.report`).
"""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime
from functools import partial
from typing import Any

from hooks.children import (
    ConditionValue,
    as_kept,
    invalid_status,
    label_value,
    merge_conditions,
    problems_message,
)
from hooks.deps import HookDeps
from hooks.github.credentials import (
    CREDENTIALS_CONDITION,
    credentials_condition,
    credentials_rules,
    requested_credentials,
    spec_secret_name,
)
from hooks.github.port import GitHubPort
from hooks.kube.port import RUNNER_SETS
from hooks.lifecycle.steps import resolve
from hooks.metacontroller import (
    CompositeHookRequest,
    CompositeHookResponse,
    HookKind,
    HookRoute,
    KubeObject,
    observed_int,
)
from hooks.resources.common import ScaleSetStatus
from hooks.resources.runner import API_VERSION
from hooks.resources.runnerset import RunnerSet
from hooks.runner.parse import has_scope
from hooks.runner.pod import pod_defaults
from hooks.runner_seal import seal_key
from hooks.runnerset.decide import (
    RELEASE_RESYNC_SECONDS,
    RunnerSetFacts,
    RunnerSetPlan,
    decide_finalize,
    decide_sync,
    next_certain_question,
    scope_of,
)
from hooks.runnerset.member import ObservedMember, read_members
from hooks.runnerset.parse import (
    observed_status,
    parse_runner_set,
    readable_runner_set,
    uses_jit,
)
from hooks.runnerset.report import runner_set_response
from hooks.runnerset.statefulset import RUNNERSET_NAME_LABEL, VOLUME_SLOT_LABEL, recorded_scopes
from hooks.runnerset.trust import is_own, own_pods, with_trusted_id
from hooks.runnerset.volume_pool import pool_size, pooled_claims
from hooks.scale_set_keeper import (
    SCALE_SET_READY,
    ScaleSetProblem,
    delete_scale_set,
    keep_scale_set,
    kept_condition,
    retire_scale_set,
)
from hooks.scale_set_mode import declared_scale_set
from hooks.scale_target import (
    AUTOSCALERS_CONDITION,
    autoscaler_targeting,
    autoscalers_condition,
    later_effective_time,
    target_size,
)

CHILD_KINDS = ["StatefulSet", "Secret", "PersistentVolumeClaim"]


def customize_runner_set(request: dict[str, Any]) -> dict[str, Any]:
    """Ask for the set's pods and for the HorizontalRunnerAutoscalers of its namespace."""
    metadata = (request.get("parent") or {}).get("metadata") or {}
    name = str(metadata.get("name") or "")
    namespace = str(metadata.get("namespace") or "")
    pods: dict[str, Any] = {
        "apiVersion": "v1",
        "resource": "pods",
        "labelSelector": {"matchLabels": {RUNNERSET_NAME_LABEL: label_value(name)}},
    }
    autoscalers: dict[str, Any] = {
        "apiVersion": API_VERSION,
        "resource": "horizontalrunnerautoscalers",
        "labelSelector": {},
    }
    if namespace:
        pods["namespace"] = autoscalers["namespace"] = namespace
    credentials = credentials_rules(namespace, spec_secret_name(request.get("parent")))
    return {"relatedResources": [pods, autoscalers, *credentials]}


def sync_runner_set(request: CompositeHookRequest, deps: HookDeps) -> CompositeHookResponse:
    runner_set, problems = parse_runner_set(request, deps)
    declaration = None
    if runner_set is not None:
        try:
            declaration = declared_scale_set(runner_set.metadata.annotations)
        except ValueError as error:
            problems = [*problems, str(error)]
    if runner_set is None or problems:
        return _invalid(request, problems, deps.clock.now())
    scale_set = None
    if declaration is not None:
        assert runner_set.spec is not None
        recorded = observed_status(request.parent).scale_set
        kept = keep_scale_set(deps, scope_of(runner_set.spec), declaration, recorded)
        if isinstance(kept, ScaleSetProblem):
            # Its runners cannot register without it: everything stays as it is.
            return _kept_as_they_are(request, kept, deps.clock.now())
        scale_set = kept
    facts, github = _facts(request, runner_set, deps, scale_set)
    plan = resolve(
        partial(decide_sync, facts),
        github,
        ahead=partial(next_certain_question, facts),
        scale_sets=deps.scale_sets,
    )
    if scale_set is not None:
        plan.conditions[SCALE_SET_READY] = kept_condition(scale_set)
    elif facts.status.scale_set is not None:
        facts = _leave_scale_set(deps, facts, plan)
    held = {member.observed.slot for member in plan.members} | facts.pod_slots
    held |= {runner.slot for runner in plan.unobserved}
    claims = pooled_claims(
        request.objects("PersistentVolumeClaim"),
        {slot for slot in held if slot is not None},
        facts.pool_size,
    )
    return runner_set_response(facts, plan, claims, request.objects("Secret"))


def _leave_scale_set(deps: HookDeps, facts: RunnerSetFacts, plan: RunnerSetPlan) -> RunnerSetFacts:
    """The annotation is gone: the scale set it kept is deleted once no member is left of the
    template whose runners joined it (deleting it sooner would take their jobs), and then
    forgotten. Left on GitHub, with no listener acquiring, it held every job of its labels
    that it was offered."""
    recorded = facts.status.scale_set
    assert recorded is not None and facts.runner_set.spec is not None
    left = any(member.observed.template_hash != plan.hash for member in plan.members)
    condition, resync, gone = retire_scale_set(
        deps, scope_of(facts.runner_set.spec), recorded, left, "set"
    )
    plan.conditions[SCALE_SET_READY] = condition
    if resync is not None:
        plan.wait(resync)
    if not gone:
        return facts
    return replace(facts, status=facts.status.model_copy(update={"scale_set": None}))


def finalize_runner_set(request: CompositeHookRequest, deps: HookDeps) -> CompositeHookResponse:
    runner_set, problems = readable_runner_set(request, deps)
    if runner_set is not None and runner_set.spec is not None:
        runner_set = _with_recorded_scope(runner_set, request.objects("StatefulSet"))
    if runner_set is None or runner_set.spec is None or not has_scope(scope_of(runner_set.spec)):
        return _finalize_unreadable(request, problems, deps.clock.now())
    # A spec with problems still says where its runners are registered: they stop as any
    # runner does, a busy one after its job, and the problems stay reported.
    facts, github = _facts(request, runner_set, deps)
    ahead = partial(next_certain_question, facts)
    plan = resolve(partial(decide_finalize, facts), github, ahead=ahead)
    if problems:
        plan.conditions["Valid"] = ("False", "InvalidSpec", problems_message(problems))
    if plan.finalized:
        # Every member is gone: its scale set, if it kept one, goes last.
        assert runner_set.spec is not None
        problem = delete_scale_set(deps, scope_of(runner_set.spec), facts.status.scale_set)
        if problem is not None:
            plan.finalized = False
            plan.conditions[SCALE_SET_READY] = problem.condition
            plan.wait(problem.retry_after)
    return runner_set_response(
        facts, plan, request.objects("PersistentVolumeClaim"), request.objects("Secret")
    )


def _with_recorded_scope(runner_set: RunnerSet, statefulsets: list[KubeObject]) -> RunnerSet:
    """The set as it stops its runners. Each runner is stopped where its own StatefulSet says it
    registered (`hooks.runnerset.decide`); the set's own scope, for the rest, is where they all
    say, whatever the spec says now (edited since, unreadable, or none), or, for a spec without
    one, where the most of them say."""
    spec = runner_set.spec
    assert spec is not None
    recorded = recorded_scopes(statefulsets)
    if not recorded or (has_scope(scope_of(spec)) and len(recorded) > 1):
        return runner_set
    chosen = recorded[0]
    scope = {
        "enterprise": chosen.enterprise or None,
        "organization": chosen.organization or None,
        "repository": chosen.repository or None,
    }
    return runner_set.model_copy(update={"spec": spec.model_copy(update=scope)})


def _facts(
    request: CompositeHookRequest,
    runner_set: RunnerSet,
    deps: HookDeps,
    scale_set: ScaleSetStatus | None = None,
) -> tuple[RunnerSetFacts, GitHubPort]:
    """The decision's facts, and the GitHub port of the set's credentials."""
    assert runner_set.spec is not None
    name, namespace = runner_set.metadata.name, runner_set.metadata.namespace
    credentials = requested_credentials(request, namespace, spec_secret_name(request.parent))
    conditions: dict[str, ConditionValue] = {}
    condition = credentials_condition(credentials)
    if condition is not None:
        status, reason, message = condition
        conditions[CREDENTIALS_CONDITION] = ("True" if status else "False", reason, message)
    hras = request.objects("HorizontalRunnerAutoscaler", related=True)
    hra = autoscaler_targeting("RunnerSet", name, hras)
    last_status = observed_status(request.parent)
    had_it = any(c.type == AUTOSCALERS_CONDITION for c in last_status.conditions)
    conflict = autoscalers_condition("RunnerSet", name, hras, had_it)
    if conflict is not None:
        conditions[AUTOSCALERS_CONDITION] = conflict
    size = target_size(hra, runner_set.spec.replicas, last_status.autoscaled, deps.clock.now())
    if deps.observe_size is not None:
        deps.observe_size("RunnerSet", namespace, name, size.replicas)
    statefulsets_observed = request.objects("StatefulSet")
    pods = own_pods(request.parent, request.objects("Pod", related=True))
    slots = (
        observed_int((pod["metadata"].get("labels") or {}).get(VOLUME_SLOT_LABEL)) for pod in pods
    )
    members = read_members(request, deps.observed_children)
    set_scope, key = scope_of(runner_set.spec), seal_key(deps.settings)
    own: list[ObservedMember] = []
    foreign: list[KubeObject] = []
    for member in members:  # each judged once: a seal is an HMAC
        if is_own(member, runner_set, set_scope, key):
            own.append(member)
        else:
            foreign.append(member.sts)
    facts = RunnerSetFacts(
        runner_set=runner_set,
        status=last_status,
        members=tuple(with_trusted_id(m, runner_set.metadata.namespace, key) for m in own),
        foreign=tuple(foreign),
        pod_slots=frozenset(slot for slot in slots if slot is not None),
        pods_observed=bool(pods),
        claim_names=frozenset(
            str(claim["metadata"].get("name")) for claim in request.objects("PersistentVolumeClaim")
        ),
        desired=size.replicas,
        autoscaled=size.autoscaled,
        autoscaled_recheck=size.recheck_after,
        pool_size=pool_size(
            autoscaler_targeting("RunnerSet", name, hras, answered=False),
            runner_set.spec.replicas,
            len(statefulsets_observed),
        ),
        effective_time=later_effective_time(hra, runner_set.spec.effective_time),
        jit=uses_jit(runner_set, deps),
        defaults=pod_defaults(deps.settings, credentials),
        now=deps.clock.now(),
        settings=deps.settings,
        timing=deps.timing,
        conditions=conditions,
        scale_set=scale_set,
    )
    return facts, deps.github_for(credentials)


def _invalid(
    request: CompositeHookRequest, problems: list[str], now: datetime
) -> CompositeHookResponse:
    """An invalid RunnerSet keeps every child as it is and gets nothing new."""
    kept = [as_kept(obj) for kind in CHILD_KINDS for obj in request.objects(kind)]
    return CompositeHookResponse(
        status=invalid_status(request.parent, problems, now), children=kept
    )


def _kept_as_they_are(
    request: CompositeHookRequest, problem: ScaleSetProblem, now: datetime
) -> CompositeHookResponse:
    status = observed_status(request.parent)
    conditions = {SCALE_SET_READY: problem.condition}
    status = status.model_copy(
        update={"conditions": merge_conditions(status.conditions, conditions, now)}
    )
    kept = [as_kept(obj) for kind in CHILD_KINDS for obj in request.objects(kind)]
    return CompositeHookResponse(
        status=status.to_wire(), children=kept, resync_after_seconds=problem.retry_after
    )


def _finalize_unreadable(
    request: CompositeHookRequest, problems: list[str], now: datetime
) -> CompositeHookResponse:
    """Without a readable spec, or one naming no scope, there is nowhere to unregister: the
    StatefulSets go, and the runner-pod decorator removes each pod's registration (the pod's
    env names its scope)."""
    pods = own_pods(request.parent, request.objects("Pod", related=True))
    statefulsets = request.objects("StatefulSet")
    kept = [
        as_kept(obj)
        for kind in ("Secret", "PersistentVolumeClaim")
        for obj in request.objects(kind)
    ]
    done = not pods and not statefulsets
    return CompositeHookResponse(
        status=invalid_status(request.parent, problems, now),
        children=kept,
        finalized=done,
        resync_after_seconds=None if done else RELEASE_RESYNC_SECONDS,
    )


def routes(deps: HookDeps) -> list[HookRoute]:
    return [
        HookRoute(
            "/sync/runnerset",
            HookKind.COMPOSITE,
            partial(sync_runner_set, deps=deps),
            blocking=True,
            # Its status records the runners asked for and not yet seen (hooks.unobserved), and
            # their volume slots: decided on as written, not as a lagging cache has it.
            fresh_parent=lambda _request: RUNNER_SETS,
        ),
        HookRoute(
            "/finalize/runnerset",
            HookKind.COMPOSITE,
            partial(finalize_runner_set, deps=deps),
            True,
        ),
        HookRoute("/customize/runnerset", HookKind.CUSTOMIZE, customize_runner_set),
    ]
