"""What the listener listens to: RunnerDeployments and RunnerSets in scale-set mode whose hook
has recorded their scale set, each with the HorizontalRunnerAutoscaler that sizes it (if any)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from hooks.github.port import Scope
from hooks.metacontroller import KubeObject, object_or_empty
from hooks.scale_set_mode import declared_scale_set

DEFAULT_MAX_RUNNERS = 1  # a deployment no autoscaler sizes: its spec.replicas, else ARC's 1


RUNNER_DEPLOYMENT = "RunnerDeployment"
RUNNER_SET = "RunnerSet"


@dataclass(frozen=True)
class ListenerTarget:
    namespace: str
    deployment: str  # the RunnerDeployment's (or RunnerSet's) name
    scope: Scope
    scale_set_id: int
    scale_set_name: str
    autoscaler: str | None  # the HRA that targets the deployment: the listener writes there
    min_runners: int
    max_runners: int  # the poll's maxCapacity
    kind: str = RUNNER_DEPLOYMENT

    @property
    def key(self) -> tuple[str, str, str]:
        return self.kind, self.namespace, self.deployment


def find_targets(
    deployments: Iterable[KubeObject],
    autoscalers: Iterable[KubeObject],
    runner_sets: Iterable[KubeObject] = (),
) -> list[ListenerTarget]:
    """One target per RunnerDeployment or RunnerSet that declares a scale set and has it in
    its status."""
    sizing: dict[tuple[str, str, str], KubeObject] = {}
    for hra in autoscalers:
        metadata = object_or_empty(hra.get("metadata"))
        ref = object_or_empty(object_or_empty(hra.get("spec")).get("scaleTargetRef"))
        kind = ref.get("kind") or RUNNER_DEPLOYMENT
        key = (str(kind), str(metadata.get("namespace") or ""), str(ref.get("name") or ""))
        sizing.setdefault(key, hra)  # as the target's hook: the first HRA that targets it
    targets = []
    for kind, objects in ((RUNNER_DEPLOYMENT, deployments), (RUNNER_SET, runner_sets)):
        for obj in objects:
            target = _target(kind, obj, sizing)
            if target is not None:
                targets.append(target)
    return sorted(targets, key=lambda t: t.key)


def _target(
    kind: str, deployment: KubeObject, sizing: dict[tuple[str, str, str], KubeObject]
) -> ListenerTarget | None:
    metadata = object_or_empty(deployment.get("metadata"))
    if metadata.get("deletionTimestamp"):
        return None
    try:
        declaration = declared_scale_set(object_or_empty(metadata.get("annotations")))
    except ValueError:
        return None
    recorded = object_or_empty(object_or_empty(deployment.get("status")).get("scaleSet"))
    scale_set_id = recorded.get("id")
    if declaration is None or recorded.get("name") != declaration.name:
        return None
    if not (_count(scale_set_id) and scale_set_id):
        return None
    spec = object_or_empty(deployment.get("spec"))
    if kind == RUNNER_DEPLOYMENT:  # a RunnerSet has its runner configuration inline
        spec = object_or_empty(object_or_empty(spec.get("template")).get("spec"))
    scope = Scope(
        enterprise=str(spec.get("enterprise") or ""),
        organization=str(spec.get("organization") or ""),
        repository=str(spec.get("repository") or ""),
    )
    namespace, name = str(metadata.get("namespace") or ""), str(metadata.get("name") or "")
    hra = sizing.get((kind, namespace, name))
    if hra is not None:
        hra_spec = object_or_empty(hra.get("spec"))
        minimum = hra_spec.get("minReplicas")
        maximum = hra_spec.get("maxReplicas")
        min_runners = minimum if isinstance(minimum, int) and _count(minimum) else 0
        max_runners = maximum if isinstance(maximum, int) and _count(maximum) else min_runners
        autoscaler = str(object_or_empty(hra.get("metadata")).get("name") or "")
    else:
        replicas = object_or_empty(deployment.get("spec")).get("replicas")
        min_runners = max_runners = (
            replicas if isinstance(replicas, int) and _count(replicas) else DEFAULT_MAX_RUNNERS
        )
        autoscaler = None
    return ListenerTarget(
        namespace=namespace,
        deployment=name,
        scope=scope,
        scale_set_id=int(scale_set_id),
        scale_set_name=declaration.name,
        autoscaler=autoscaler,
        min_runners=min_runners,
        max_runners=max(max_runners, min_runners),
        kind=kind,
    )


def _count(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0
