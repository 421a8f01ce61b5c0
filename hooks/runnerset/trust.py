"""Which StatefulSets a RunnerSet treats as its runners.

Metacontroller adopts every StatefulSet of the set's namespace that matches the set's selector
and has no controller yet. A StatefulSet is anyone's to write, its env too: one adopted with
another organization's runner in its env would have been stopped there, with the server's
credentials, and its pod sealed for the runner-pod decorator. A member is the set's own when:

1. it carries the seal the RunnerSet hook puts on the StatefulSets it creates
   (`hooks.runner_seal`), for its pod, scope and runner; or
2. it was made before seals, registers in the set's own scope, and bears the set's own naming,
   `<set>-<uid tag><counter>`, or ARC's, `<set>-<5 characters>` (a set ARC ran before) with its
   runner named after its pod. It is sealed at this sync. (A StatefulSet a user writes that
   way, in the set's namespace and with the set's scope, is still taken for the set's own.)

Any other is left as it is: not counted, never stopped, and nothing is asked of GitHub for it.
"""

from __future__ import annotations

import re
from dataclasses import replace

from hooks.github.port import Scope
from hooks.metacontroller import KubeObject, object_or_empty, observed_int
from hooks.naming import RUNNER_ID_ANNOTATION, uid_tag
from hooks.resources.runnerset import RunnerSet
from hooks.runner_seal import SEAL_ANNOTATION, runner_id_sealed, seal_holds
from hooks.runnerset.member import ObservedMember

MAX_SET_NAME_IN_RUNNER_NAMES = 40
"""StatefulSet names stay within 52 characters: 40, a dash, a 4-character tag, a 7-digit counter."""


def runner_prefix(runner_set: RunnerSet) -> str:
    """`<set>-<uid tag>`, the set's name cut so that StatefulSet names stay short enough for
    their pods (the `controller-revision-hash` label, `<name>-<10 chars>`, must fit in 63
    characters) with counters of up to 7 characters."""
    return _prefix(runner_set.metadata.name, runner_set.metadata.uid)


def _prefix(name: str, uid: str) -> str:
    return f"{name[:MAX_SET_NAME_IN_RUNNER_NAMES].rstrip('-.')}-{uid_tag(uid)}"


def own_pods(parent: KubeObject, pods: list[KubeObject]) -> list[KubeObject]:
    """The pods among those the set's label selects that are its runners': named after its
    runner prefix (`<set>-<uid tag>`, unique to the set) or, adopted from ARC, after the set's
    own name. The `runnerset-name` label holds 63 characters of a name: sets whose names share
    those select each other's pods too (found by the hostile-input fuzzer: deleting one set
    waited for the other's pods, and it avoided their volume slots)."""
    metadata = object_or_empty(parent.get("metadata"))
    name, uid = str(metadata.get("name") or ""), str(metadata.get("uid") or "")
    prefix = _prefix(name, uid)
    arc_named = re.compile(re.escape(name) + r"-[0-9a-z]{5}-0")
    kept = []
    for pod in pods:
        pod_name = object_or_empty(pod.get("metadata")).get("name")
        if isinstance(pod_name, str) and (
            pod_name.startswith(prefix) or arc_named.fullmatch(pod_name)
        ):
            kept.append(pod)
    return kept


def is_own(
    member: ObservedMember, runner_set: RunnerSet, set_scope: Scope, key: bytes | None
) -> bool:
    metadata = member.sts.get("metadata") or {}
    annotations = metadata.get("annotations") or {}
    recorded = annotations.get(SEAL_ANNOTATION) if isinstance(annotations, dict) else None
    namespace = runner_set.metadata.namespace
    runner_name = member.template_runner_name
    if seal_holds(recorded, key, namespace, member.runner_name, member.scope, runner_name):
        return True
    # Made before seals: sealed at this sync if it reads as the set's own.
    if member.scope != set_scope:
        return False
    name = member.name
    if re.fullmatch(re.escape(runner_prefix(runner_set)) + r"[0-9a-z]{1,7}", name):
        return True
    arc_named = re.fullmatch(re.escape(runner_set.metadata.name) + r"-[0-9a-z]{5}", name)
    return arc_named is not None and runner_name == member.runner_name


def with_trusted_id(member: ObservedMember, namespace: str, key: bytes | None) -> ObservedMember:
    """The member, the runner id recorded on its pod (`actions-runner/id`) kept only when the
    runner-pod decorator recorded it (its seal holds): a stop removes the runner by that id,
    and a pod's annotations are anyone's to write. An id not kept is looked up by name."""
    pod = member.pod_object
    if pod is None or member.material.runner_id is not None:
        return member
    metadata = object_or_empty(pod.get("metadata"))
    annotations = object_or_empty(metadata.get("annotations"))
    recorded = observed_int(annotations.get(RUNNER_ID_ANNOTATION))
    if recorded is None or runner_id_sealed(
        annotations,
        key,
        namespace,
        member.runner_name,
        member.scope,
        member.template_runner_name,
        recorded,
    ):
        return member
    kept = {k: v for k, v in annotations.items() if k != RUNNER_ID_ANNOTATION}
    return replace(member, pod_object={**pod, "metadata": {**metadata, "annotations": kept}})
