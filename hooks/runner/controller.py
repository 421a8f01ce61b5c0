"""The Runner controller: what `/sync/runner`, `/finalize/runner` and `/customize/runner`
answer.

Children: the runner Pod (OnDelete: the hook decides when it is replaced), the registration
Secret (InPlace) and, in kubernetes container mode, the Runner's own ServiceAccount, Role and
RoleBinding (InPlace, `hooks.runner.container_mode`). Each call reads the request into facts,
resolves the pure decision (`hooks.runner.decide`) against GitHub, and answers from it
(`hooks.runner.report`).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import Any

from hooks.children import (
    ConditionValue,
    as_kept,
    invalid_status,
    problems_message,
    read_once,
    state_key,
)
from hooks.clock import Clock
from hooks.deps import HookDeps
from hooks.github.credentials import (
    CREDENTIALS_CONDITION,
    credentials_condition,
    credentials_rules,
    requested_credentials,
    spec_secret_name,
)
from hooks.github.port import GitHubPort
from hooks.kube.port import RUNNERS, Resource
from hooks.lifecycle.steps import resolve
from hooks.metacontroller import (
    CompositeHookRequest,
    CompositeHookResponse,
    HookKind,
    HookRoute,
    KubeObject,
    object_or_empty,
)
from hooks.runner.container_mode import SERVICE_ACCOUNT_KINDS, observe_account
from hooks.runner.decide import (
    POD_GONE_RESYNC_SECONDS,
    RunnerFacts,
    decide_finalize,
    decide_sync,
    next_certain_question,
)
from hooks.runner.observed_pod import ObservedPod, observe_pod
from hooks.runner.parse import (
    ParsedRunner,
    credentials_secret,
    observed_status,
    parse_runner,
    readable_runner,
    spec_scope,
)
from hooks.runner.registration import RegistrationMaterial, read_material
from hooks.runner.report import runner_response
from hooks.runner.secret import registration_secret_name


def sync_runner(request: CompositeHookRequest, deps: HookDeps) -> CompositeHookResponse:
    parsed = parse_runner(request, deps)
    if parsed.runner is None or parsed.problems:
        return _invalid(request, list(parsed.problems), deps.clock)
    facts, github = _facts(request, parsed, deps)
    ahead = partial(next_certain_question, facts, finalizing=False)
    plan = resolve(partial(decide_sync, facts), github, ahead=ahead, scale_sets=deps.scale_sets)
    return runner_response(facts, plan)


def finalize_runner(request: CompositeHookRequest, deps: HookDeps) -> CompositeHookResponse:
    parsed = readable_runner(request, deps)
    if parsed.runner is None:
        # Not even its metadata reads: nothing to stop a runner by; let the pods go, then finish.
        pods = request.objects("Pod")
        return CompositeHookResponse(
            status=_invalid_status(request, list(parsed.problems), deps.clock),
            children=_kept(request, ("Secret", *SERVICE_ACCOUNT_KINDS)),
            finalized=not pods,
            resync_after_seconds=POD_GONE_RESYNC_SECONDS if pods else None,
        )
    facts, github = _facts(request, parsed, deps)
    ahead = partial(next_certain_question, facts, finalizing=True)
    plan = resolve(partial(decide_finalize, facts), github, ahead=ahead, scale_sets=deps.scale_sets)
    return runner_response(facts, plan)


def _facts(
    request: CompositeHookRequest, parsed: ParsedRunner, deps: HookDeps
) -> tuple[RunnerFacts, GitHubPort]:
    """The decision's facts, and the GitHub port of the Runner's credentials."""
    runner = parsed.runner
    assert runner is not None
    name, namespace = runner.metadata.name, runner.metadata.namespace
    pod_object = request.object_named("Pod", name)
    secret = request.object_named("Secret", registration_secret_name(name))
    credentials = requested_credentials(request, namespace, credentials_secret(runner))
    condition = credentials_condition(credentials)
    conditions: dict[str, ConditionValue] = {}
    if condition is not None:
        status, reason, message = condition
        conditions[CREDENTIALS_CONDITION] = ("True" if status else "False", reason, message)
    children = read_once(
        state_key("RunnerChildren", pod_object, secret),
        partial(_read_children, pod_object, secret),
        _ChildrenReading,
        deps.observed_children,
    )
    facts = RunnerFacts(
        parsed=parsed,
        scope=spec_scope(runner),
        status=observed_status(request.parent, deps),
        pod_object=pod_object,
        pod=children.pod,
        account=observe_account(request.object_named("ServiceAccount", name), pod_object),
        secret_observed=bool(secret),
        material=children.material,
        now=deps.clock.now(),
        settings=deps.settings,
        timing=deps.timing,
        conditions=conditions,
    )
    return facts, deps.github_for(credentials)


@dataclass(frozen=True, slots=True)
class _ChildrenReading:
    """What a Runner's pod and registration Secret say: read once per state of the two, since
    most syncs (the periodic ones) find both as they were."""

    pod: ObservedPod | None
    material: RegistrationMaterial


def _read_children(pod_object: KubeObject | None, secret: KubeObject | None) -> _ChildrenReading:
    return _ChildrenReading(observe_pod(pod_object) if pod_object else None, read_material(secret))


def _invalid(
    request: CompositeHookRequest, problems: list[str], clock: Clock
) -> CompositeHookResponse:
    """An invalid Runner keeps what it has: its children are returned unchanged, no new pod."""
    return CompositeHookResponse(
        status=_invalid_status(request, problems, clock),
        children=_kept(request, ("Pod", "Secret", *SERVICE_ACCOUNT_KINDS)),
    )


def _invalid_status(
    request: CompositeHookRequest, problems: list[str], clock: Clock
) -> dict[str, Any]:
    status = invalid_status(request.parent, problems, clock.now())
    status["message"] = problems_message(problems)
    return status


def _kept(request: CompositeHookRequest, kinds: tuple[str, ...]) -> list[KubeObject]:
    return [as_kept(obj) for kind in kinds for obj in request.objects(kind)]


def customize_runner(request: dict[str, Any]) -> dict[str, Any]:
    """Ask for the Secret named by `githubAPICredentialsFrom`, if any."""
    parent = object_or_empty(request.get("parent"))
    namespace = object_or_empty(parent.get("metadata")).get("namespace")
    namespace = namespace if isinstance(namespace, str) else ""
    return {"relatedResources": credentials_rules(namespace, spec_secret_name(parent))}


def pod_missing(request: CompositeHookRequest) -> Resource | None:
    """Read the Runner anew when its pod is not among the children: a pod is about to be
    started unless the status says why not (an ephemeral runner that completed, a stop still
    going on), and Metacontroller's cache of Runners may lag its cache of pods. A status from
    before the pod went would start a second incarnation of a runner that is done; a Runner
    deleted since the cache saw it would start a pod nobody stops."""
    name = object_or_empty(request.parent.get("metadata")).get("name")
    if not isinstance(name, str) or request.object_named("Pod", name):
        return None
    return RUNNERS


def routes(deps: HookDeps) -> list[HookRoute]:
    return [
        HookRoute(
            "/sync/runner",
            HookKind.COMPOSITE,
            partial(sync_runner, deps=deps),
            blocking=True,
            fresh_parent=pod_missing,
        ),
        HookRoute(
            "/finalize/runner", HookKind.COMPOSITE, partial(finalize_runner, deps=deps), True
        ),
        HookRoute("/customize/runner", HookKind.CUSTOMIZE, customize_runner),
    ]
