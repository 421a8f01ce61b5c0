"""How many volume slots a RunnerSet keeps when no runner holds them.

A slot is held while a runner's StatefulSet or pod has it, so a replacement started while its
predecessor still shuts down takes another slot (`hooks.runnerset.statefulset`): a set of N
runners uses up to 2N slots, each runner and a replacement overlapping it. When predecessors
cannot be let go for longer (a GitHub outage keeps completed ephemeral runners until their
unregistration is confirmed), the pool grows far past that: a set of 8 had 40 claims after an
8-minute outage. Free slots numbered from twice the set's size up are let go: their claims are
left out of the answer and Metacontroller deletes them. A claim a pod still mounts is
deleted only once that pod is gone (Kubernetes' pvc-protection finalizer), and a held slot's
claims are always kept.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from hooks.metacontroller import KubeObject, object_or_empty, observed_int
from hooks.runnerset.statefulset import VOLUME_SLOT_LABEL


def pool_size(hra: KubeObject | None, spec_replicas: int | None, runners: int) -> int | None:
    """How many slots the set keeps: twice the runners it is sized to run at once (the
    `maxReplicas` of the HRA that sizes it, answered yet or not, else `spec.replicas`), and
    never fewer than twice the `runners` it has now (an HRA deleted and created again leaves
    `spec.replicas` in charge for a moment). None keeps every claim: an HRA without a maximum,
    or a set sized to zero with no runner left (parked: nothing grows its pool, and its
    caches wait for it to come back)."""
    if hra is not None:
        size = object_or_empty(hra.get("spec")).get("maxReplicas")
        if not (isinstance(size, int) and not isinstance(size, bool) and size >= 0):
            return None
    else:
        size = spec_replicas if spec_replicas is not None else 1
    size = max(size, runners)
    return 2 * size if size > 0 else None


def claim_slot(claim: KubeObject) -> int | None:
    return observed_int(object_or_empty(claim["metadata"].get("labels")).get(VOLUME_SLOT_LABEL))


def pooled_claims(
    claims: Sequence[KubeObject], held: Iterable[int], size: int | None
) -> list[KubeObject]:
    """The claims to keep: those of held slots, and of slots numbered below `size` (None:
    all). New runners take the lowest free slot, so those are the ones used again; and the
    choice does not depend on which slots are held at the moment, so answers made from views
    of different ages never let go of every slot between them. A claim without a readable
    slot is kept."""
    if size is None:
        return list(claims)
    held_slots = set(held)
    return [
        claim
        for claim in claims
        if (slot := claim_slot(claim)) is None or slot < size or slot in held_slots
    ]
