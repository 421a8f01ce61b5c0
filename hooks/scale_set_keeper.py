"""Keeping a target's runner scale set, for the RunnerDeployment and RunnerSet hooks: looked
up (or created, or updated) through the scale-set port, and deleted when the target goes.
Failures become a `ScaleSetReady` condition and a time to try again, never an exception."""

from __future__ import annotations

from dataclasses import dataclass

from hooks.children import ConditionValue
from hooks.deps import HookDeps
from hooks.github.port import GitHubError, RateLimitedError, Scope
from hooks.resources.common import ScaleSetStatus
from hooks.scale_set_mode import ScaleSetDeclaration

SCALE_SET_READY = "ScaleSetReady"
SCALE_SET_RETRY_SECONDS = 30.0


@dataclass(frozen=True)
class ScaleSetProblem:
    reason: str
    message: str
    retry_after: float

    @property
    def condition(self) -> ConditionValue:
        return ("False", self.reason, self.message)


def kept_condition(kept: ScaleSetStatus) -> ConditionValue:
    return ("True", "ScaleSetKept", f"runner scale set {kept.name} (id {kept.id})")


def keep_scale_set(
    deps: HookDeps,
    scope: Scope,
    declaration: ScaleSetDeclaration,
    recorded: ScaleSetStatus | None,
) -> ScaleSetStatus | ScaleSetProblem:
    """The scale set as declared; `recorded` (the target's status) is renamed or moved rather
    than a new one made."""
    if deps.scale_sets is None:
        return ScaleSetProblem(
            "ScaleSetsUnavailable",
            "this server has no GitHub token or App to reach runner scale sets with",
            deps.sync_period,
        )
    try:
        record = deps.scale_sets.ensure_scale_set(
            scope,
            declaration.name,
            declaration.runner_group,
            known_id=recorded.id if recorded is not None else None,
        )
    except GitHubError as error:
        return _problem(error)
    return ScaleSetStatus(
        id=record.id, name=record.name, runner_group=record.runner_group_name or None
    )


def delete_scale_set(
    deps: HookDeps, scope: Scope, recorded: ScaleSetStatus | None
) -> ScaleSetProblem | None:
    """Delete the recorded scale set (nothing recorded: nothing to do)."""
    if recorded is None or deps.scale_sets is None:
        return None
    try:
        deps.scale_sets.delete_scale_set(scope, recorded.id)
    except GitHubError as error:
        return _problem(error)
    return None


def retire_scale_set(
    deps: HookDeps, scope: Scope, recorded: ScaleSetStatus, runners_left: bool, what: str
) -> tuple[ConditionValue, float | None, bool]:
    """A target that left scale-set mode: its scale set deleted once no runner that joined it
    is left. The `ScaleSetReady` condition, when to look again, and whether it is gone (to be
    forgotten). Without the means to delete it, it stays recorded and reported."""
    named = f"runner scale set {recorded.name} (id {recorded.id})"
    if runners_left:
        return ("False", "Retiring", f"{named} is deleted once its runners are gone"), None, False
    if deps.scale_sets is None:
        message = f"{named} cannot be deleted: this server has no GitHub token or App"
        return ("False", "ScaleSetsUnavailable", message), deps.sync_period, False
    problem = delete_scale_set(deps, scope, recorded)
    if problem is not None:
        return problem.condition, problem.retry_after, False
    return ("False", "Deleted", f"{named} deleted: the {what} left scale-set mode"), None, True


def _problem(error: GitHubError) -> ScaleSetProblem:
    if isinstance(error, RateLimitedError):
        return ScaleSetProblem("GitHubRateLimited", str(error), max(error.retry_after, 1.0))
    return ScaleSetProblem("ScaleSetError", str(error), SCALE_SET_RETRY_SECONDS)
