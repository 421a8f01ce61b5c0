"""How a runner set (RunnerDeployment, RunnerSet) learns its size from the
HorizontalRunnerAutoscaler that targets it, how fast it grows to it, and ARC's recreation delay
after webhook scaling."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TypeGuard

from hooks.clock import format_time
from hooks.metacontroller import KubeObject, object_or_empty, observed_time
from hooks.resources.common import AutoscaledSize

RECREATION_DELAY = timedelta(minutes=10)
"""ARC's DefaultRunnerPodRecreationDelayAfterWebhookScale (#1180)."""

MAX_NEW_RUNNERS_PER_SYNC = 500
"""At most this many Runners are created by one answer (Kubernetes' ReplicaSet controller
creates pods in the same bursts): a set scaled to thousands grows over the next syncs, each
answer of a bounded size, none held by the recreation delay (`scaleUpRemaining`)."""
NEXT_BATCH_SECONDS = 1.0
"""When the set asks to be synced again for the next batch."""


REQUEST_OVERHEAD_BYTES = 1536
"""What an API server adds to an object a set makes, as a request carries it back: its uid,
resourceVersion, timestamps, owner reference and status."""
SAMPLED_CHILDREN = 16
"""How many observed children a set weighs to learn what one of its runners costs."""


def runners_that_fit(request_limit: int, runner_bytes: int) -> int:
    """How many runners, each weighing `runner_bytes` in the set's sync request (see
    `runner_weight`), that request can carry within nine tenths of the hook's request limit
    (`HOOK_MAX_REQUEST_BYTES`; the parent and related objects take the rest). A set past it gets
    413 at every sync, and could then neither scale nor replace anything, nor be deleted."""
    return request_limit * 9 // 10 // max(runner_bytes, 1)


def runner_weight(built_bytes: int, observed: list[int]) -> int:
    """What one runner weighs in its set's requests: the largest of the runners observed there
    (sampled: as the API server serves them, managed fields and status included) and a tenth
    more, else what a runner as built becomes there (Metacontroller's last-applied copy doubles
    it, and the API server adds `REQUEST_OVERHEAD_BYTES`)."""
    if observed:
        return max(observed) * 11 // 10
    return 2 * built_bytes + REQUEST_OVERHEAD_BYTES


REQUEST_LIMIT_MESSAGE = (
    "{fit} runners of this template are all that the set's sync requests can carry within "
    "HOOK_MAX_REQUEST_BYTES ({limit} bytes): raise it, or make the template smaller"
)


def new_runner_batch(request_limit: int, runner_bytes: int, most: int) -> int:
    """How many runners one answer creates: at most `most`, and no more than a quarter of the
    hook's request limit holds (`HOOK_MAX_REQUEST_BYTES`), at least one. Found by a hostile
    probe: 500 runners of a template carrying a 1 MB value made an answer of 500 MB, which the
    server and Metacontroller built in memory, and which the next request, carrying them all,
    could not have held."""
    return max(1, min(most, (request_limit // 4) // max(runner_bytes, 1)))


MAX_COUNT = 2**31 - 1
"""The largest replica count a status reports: Kubernetes' counts are int32. A larger one (a
hand's edit) is not read: a sum of such had passed what JSON numbers hold, and the answer
could not be written (found by the hostile-input fuzzer)."""


def rest_of_scale_up(
    missing: int, hold: float | None, remaining: int | None
) -> tuple[int, float | None, float | None]:
    """The runners to create now, the hold on them, and when to look again, for a set whose
    last answer left `remaining` runners of a scale-up for later (`scaleUpRemaining`). That
    rest is not held, but is no more than it was: a member that finished its job meanwhile is
    replaced by the rules of a later sync (a hold, or the listener's next count)."""
    rest = remaining or 0
    if rest <= 0:
        return missing, hold, None
    later = (hold if hold is not None else NEXT_BATCH_SECONDS) if missing > rest else None
    return min(missing, rest), None, later


def autoscaler_targeting(
    kind: str, name: str, related: list[KubeObject], *, answered: bool = True
) -> KubeObject | None:
    """The HRA that sizes the `kind` named `name`: the first (by name) whose scaleTargetRef
    names it and (`answered`) that has given an answer."""
    for hra in sorted(related, key=lambda obj: str(obj["metadata"]["name"])):
        if not _targets(hra, kind, name):
            continue
        if not answered or _is_count(object_or_empty(hra.get("status")).get("desiredReplicas")):
            return hra
    return None


AUTOSCALERS_CONDITION = "Autoscaled"


def _targets(hra: KubeObject, kind: str, name: str) -> bool:
    target = object_or_empty(object_or_empty(hra.get("spec")).get("scaleTargetRef"))
    return (target.get("kind") or "RunnerDeployment") == kind and target.get("name") == name


def autoscalers_condition(
    kind: str, name: str, related: list[KubeObject], had_it: bool
) -> tuple[str, str, str] | None:
    """A condition for a set that more than one HRA targets, naming the one that sizes it (the
    first by name that has answered) and the others, whose `ScalingActive=True` would mislead
    (ARC's would overwrite each other's `spec.replicas` at each sync). For fewer, None, or, when
    the set's status `had_it`, one saying the conflict is over."""
    names = sorted(str(hra["metadata"]["name"]) for hra in related if _targets(hra, kind, name))
    if len(names) < 2:
        return ("True", "NoConflict", "") if had_it else None
    sizer = autoscaler_targeting(kind, name, related)
    chosen = str(sizer["metadata"]["name"]) if sizer is not None else None
    ignored = [n for n in names if n != chosen]
    shown = ", ".join(ignored[:5]) + (", ..." if len(ignored) > 5 else "")
    sizes = f"{chosen} sizes it; " if chosen else ""
    message = f"{len(names)} HorizontalRunnerAutoscalers target it: {sizes}{shown} do not"
    return ("False", "ConflictingAutoscalers", message)


AUTOSCALED_HOLD = timedelta(minutes=10)
"""How long a set keeps the size its autoscaler last gave once the autoscaler is gone."""


@dataclass(frozen=True)
class TargetSize:
    replicas: int
    autoscaled: AutoscaledSize | None = None  # what the set's status keeps of its autoscaler
    recheck_after: float | None = None  # when a kept size ends


def target_size(
    hra: KubeObject | None,
    spec_replicas: int | None,
    kept: AutoscaledSize | None,
    now: datetime,
) -> TargetSize:
    """The set's size: the HRA's answer when there is one; else, for `AUTOSCALED_HOLD` after
    the HRA is gone and while the set's `spec.replicas` is what it was then, the size the HRA
    last gave (`kept`); else `spec.replicas`, else 1.

    ARC's HRA wrote its answer into the target's `spec.replicas`, where it stayed when the HRA
    was deleted or aimed elsewhere: replacing an HRA did not drop the pool to one runner. Here
    the HRA writes only its own status, so the set keeps that size in its own for a while
    (found by an ARC conformance check), then goes back to what its spec says (a review found
    that a size kept for good could not be undone by applying the spec's `replicas` again,
    which changes nothing here where it changed ARC's spec)."""
    if hra is not None:
        replicas = int(hra["status"]["desiredReplicas"])
        name = str(hra["metadata"]["name"])
        record = AutoscaledSize(autoscaler=name, replicas=replicas, spec_replicas=spec_replicas)
        return TargetSize(replicas, record)
    own = spec_replicas if spec_replicas is not None else 1
    if kept is None or kept.spec_replicas != spec_replicas:
        return TargetSize(own)
    if not (_is_count(kept.replicas) and kept.replicas <= MAX_COUNT):
        return TargetSize(own)
    recorded = observed_time(kept.gone_since)
    # Ahead of this replica's clock: counted from now, and left as recorded (found in review:
    # a replica whose clock was behind rewrote it, and the others' hold ended early).
    since = now if recorded is None or recorded > now else recorded
    left = (since + AUTOSCALED_HOLD - now).total_seconds()
    if left <= 0:
        return TargetSize(own)
    record = (
        kept if recorded is not None else kept.model_copy(update={"gone_since": format_time(now)})
    )
    return TargetSize(kept.replicas, record, left)


def later_effective_time(hra: KubeObject | None, own: str | None) -> str | None:
    """ARC's HRA writes the newest reservation's effectiveTime into the target's spec; here the
    HRA reports it in its status and the target passes the later of the two on."""
    status = object_or_empty(hra.get("status")) if hra else {}
    reported = (status.get("newestReservationTime"), status.get("assignedJobsTime"))
    times = {text: observed_time(text) for text in (own, *reported) if isinstance(text, str)}
    readable = {text: time for text, time in times.items() if time is not None}
    return max(readable, key=lambda text: readable[text]) if readable else None


def _is_count(value: object) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0
