"""The RunnerReplicaSet controller: keeps `replicas` Runners, and chooses which ones go.

Runners are children with the OnDelete strategy. A Runner is removed by leaving it out of the
answer; Metacontroller deletes it and the Runner's own finalize hook stops it gracefully, so no
decision here can cut off a job. What this controller decides is *which* Runners go: those that
never registered first, then idle ones (newest first), busy ones last.

New Runners get names that are unique over time (`<set>-<uid tag><counter>`): a retried sync
yields the same names, and a name is never reused while GitHub may still know it.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import datetime
from functools import cached_property, lru_cache, partial
from typing import Any

import orjson
from pydantic import ValidationError

from hooks.children import (
    ConditionValue,
    describe_validation_error,
    invalid_answer,
    merge_conditions,
    problems_message,
    read_once_per_state,
    shared_kept,
)
from hooks.clock import format_time
from hooks.deps import HookDeps
from hooks.github.credentials import spec_secret_name
from hooks.github.port import GitHubError, RunnerListing, Scope, credible_report_time
from hooks.kube.port import RUNNER_REPLICA_SETS
from hooks.metacontroller import (
    CompositeHookRequest,
    CompositeHookResponse,
    HookKind,
    HookRoute,
    KubeObject,
    object_or_empty,
    observed_time,
)
from hooks.naming import (
    BASE36_NAME,
    RUNNER_NAME_SUFFIX,
    SYNC_TIME_ANNOTATION,
    TEMPLATE_HASH_LABEL,
    base36,
    ephemeral_claims_problem,
    replica_set_name_problem,
    uid_tag,
    without_controller_uid,
)
from hooks.resources.replicaset import (
    RunnerReplicaSet,
    RunnerReplicaSetStatus,
    RunnerTemplate,
)
from hooks.resources.runner import API_VERSION
from hooks.runner.parse import registers_with_jit
from hooks.runner.pod import ephemeral_volume_names, jit_default_image
from hooks.runner.validation import validate_runner_template
from hooks.scale_set_mode import (
    COUNT_VERSION_ANNOTATION,
    JOB_STARTED_ANNOTATION,
    SCALE_SET_ID_ANNOTATION,
    count_wait_left,
)
from hooks.scale_target import (
    MAX_NEW_RUNNERS_PER_SYNC,
    NEXT_BATCH_SECONDS,
    RECREATION_DELAY,
    REQUEST_LIMIT_MESSAGE,
    SAMPLED_CHILDREN,
    new_runner_batch,
    rest_of_scale_up,
    runner_weight,
    runners_that_fit,
)
from hooks.unobserved import asked_for, grace_left, still_unobserved


@dataclass(frozen=True)
class RunnerChild:
    """What the set knows of one of its Runners, from the Runner's status."""

    obj: KubeObject
    name: str
    created: str
    terminating: bool
    phase: str
    ready: bool
    online: bool
    busy: bool
    template_hash: str | None
    reported_at: datetime | None = None  # when GitHub listed what status reports
    job_started: bool = False  # the listener saw its runner take a job

    @property
    def completed(self) -> bool:
        return self.phase == "Completed"

    @cached_property
    def kept(self) -> KubeObject:
        """The Runner as a desired object that changes nothing (built and encoded once per
        state when the reading is remembered)."""
        return shared_kept(self.obj)

    @property
    def registered(self) -> bool:
        return self.online

    @property
    def running(self) -> bool:
        """Its pod runs: a Runner being removed may still be running a job. `ready` is false
        once its pod is gone, whose phase status keeps as last seen."""
        return self.phase == "Running" and self.ready

    @property
    def removal_rank(self) -> int:
        """0: never registered, 1: idle, 2: busy. Lower ranks go first."""
        return self.rank_if(self.busy)

    def rank_if(self, busy: bool) -> int:
        if not self.registered:
            return 0
        return 2 if busy else 1


def read_child(obj: KubeObject) -> RunnerChild:
    """A Runner as its status reports it. What cannot be read counts against removing it: an
    unreadable `online` or `busy` reads as true (a busy runner goes last), an unreadable
    template hash as none (never outdated)."""
    metadata = object_or_empty(obj.get("metadata"))
    raw_status = obj.get("status")
    status = object_or_empty(raw_status)
    status_unreadable = raw_status is not None and not isinstance(raw_status, dict)

    def flag(key: str) -> bool:
        value = status.get(key)
        if status_unreadable or (value is not None and not isinstance(value, bool)):
            return True
        return bool(value)

    template_hash = object_or_empty(metadata.get("labels")).get(TEMPLATE_HASH_LABEL)
    job_started = bool(_annotation(obj, JOB_STARTED_ANNOTATION))
    return RunnerChild(
        obj=obj,
        name=_text(metadata.get("name")),
        created=_text(metadata.get("creationTimestamp")),
        terminating=bool(metadata.get("deletionTimestamp")),
        phase=_text(status.get("phase")),
        ready=status.get("ready") is True,
        online=flag("online"),
        # A member the listener saw start a job is busy before GitHub's list says so.
        busy=flag("busy") or job_started,
        template_hash=template_hash if isinstance(template_hash, str) else None,
        reported_at=observed_time(status.get("lastRegistrationCheckTime")),
        job_started=job_started,
    )


def read_children(
    objects: list[KubeObject], deps: HookDeps, *, shared: bool = False
) -> list[RunnerChild]:
    """Every child read, each state of a Runner once (`read_once_per_state`); `shared`: the
    request's objects are shared (`CompositeHookRequest.members_shared`)."""
    by_object = deps.children_by_object if shared else None
    return read_once_per_state(
        objects, "Runner", read_child, RunnerChild, deps.observed_children, by_object
    )


def _text(value: object) -> str:
    return value if isinstance(value, str) else ""


def template_hash(template: RunnerTemplate) -> str:
    """A hash of the runner template, stable across processes and Python versions."""
    import orjson

    canonical = orjson.dumps(template.to_manifest(), option=orjson.OPT_SORT_KEYS)
    return hashlib.sha256(canonical).hexdigest()[:10]


def sync_runner_replica_set(request: CompositeHookRequest, deps: HookDeps) -> CompositeHookResponse:
    now = deps.clock.now()
    try:
        replica_set = RunnerReplicaSet.model_validate(request.parent)
    except ValidationError as error:
        return invalid_answer(
            request, [describe_validation_error(error, "RunnerReplicaSet")], now, ["Runner"]
        )
    template = replica_set.spec.template
    # JIT's rules judge the Runners a set would create. A set that has some already (made
    # before the server switched to JIT, say) must still scale them down and be deleted: for it
    # they only stop creation (found in review, both ways).
    jit = registers_with_jit(template.metadata.annotations, deps.settings.runner_registration_mode)
    has_runners = bool(request.objects("Runner"))
    image = jit_default_image(deps.settings)
    problems = validate_runner_template(
        template, jit=jit and not has_runners, jit_default_image=image
    )
    creation_problems = (
        validate_runner_template(template, jit=True, jit_default_image=image)
        if jit and has_runners
        else []
    )
    if (name_problem := replica_set_name_problem(replica_set.metadata.name)) is not None:
        problems.append(name_problem)
    elif (
        claims := ephemeral_claims_problem(
            len(replica_set.metadata.name) + RUNNER_NAME_SUFFIX,
            ephemeral_volume_names(replica_set.spec.template.spec),
        )
    ) is not None:
        problems.append(claims)
    if replica_set.spec.replicas is not None and replica_set.spec.replicas < 0:
        problems.append("spec.replicas must not be negative")
    if not readable_time(replica_set.spec.effective_time):
        problems.append("spec.effectiveTime must be an RFC 3339 time")
    if problems:
        return invalid_answer(request, problems, now, ["Runner"])
    return _ReplicaSetSync(request, replica_set, now, deps, creation_problems).answer()


class _ReplicaSetSync:
    def __init__(
        self,
        request: CompositeHookRequest,
        replica_set: RunnerReplicaSet,
        now: datetime,
        deps: HookDeps,
        creation_problems: list[str] | None = None,
    ):
        self.request = request
        self.creation_problems = creation_problems or []  # new Runners would not start
        self.replica_set = replica_set
        self.now = now
        self.deps = deps
        self.status = replica_set.status or RunnerReplicaSetStatus()
        spec = replica_set.spec
        self.desired = spec.replicas if spec.replicas is not None else 1
        labels = replica_set.metadata.labels
        self.hash = labels.get(TEMPLATE_HASH_LABEL) or template_hash(spec.template)
        self.children = read_children(
            request.objects("Runner"), deps, shared=request.members_shared
        )
        observed = {child.name for child in self.children}
        self.unobserved = still_unobserved(self.status.unobserved_runners, observed, now)
        self.resync: list[float] = []
        self.count_done = True  # every member the count asks for is created by this sync
        self.scale_up_remaining: int | None = None  # when this answer creates one batch
        self.conditions: dict[str, ConditionValue] = {"Valid": ("True", "Valid", "")}

    def answer(self) -> CompositeHookResponse:
        completed: list[RunnerChild] = []
        active: list[RunnerChild] = []
        outdated: list[RunnerChild] = []
        # A Runner being removed whose pod still runs (a busy one waits for its job) counts
        # as ARC counts its running pod (runner_pod_owner.go): a scale-up soon after a
        # scale-down waits for it rather than running more than `replicas` runners. An
        # outdated one does not count: a new template gets its own runners at once.
        leaving = 0
        current = (None, self.hash)
        for c in self.children:  # one pass: a set may have thousands
            if c.terminating:
                leaving += c.running and c.template_hash in current
            elif c.completed:
                completed.append(c)
            else:
                active.append(c)
                if c.template_hash not in current:
                    outdated.append(c)
        keep = self._keep(active, outdated)
        present = len(keep) + leaving + len(self.unobserved)
        new = self._new_runners(self.desired - present, present + len(completed))
        children = [c.kept for c in keep] + new
        # Running Runners being deleted, and those this answer leaves out (deleted next).
        kept = {c.name for c in keep}
        stopping = [c for c in self.children if c.running and (c.terminating or c.name not in kept)]
        status = self._status(keep, new, completed, stopping)
        resync = min(self.resync) if self.resync else None
        return CompositeHookResponse(status=status, children=children, resync_after_seconds=resync)

    def _keep(self, active: list[RunnerChild], outdated: list[RunnerChild]) -> list[RunnerChild]:
        """The Runners that stay: up to `desired`, the most useful ones."""
        if not outdated and len(active) <= self.desired:
            return active  # nothing to choose: no list read
        ranks = self._removal_ranks(active)
        # An outdated Runner is replaced when it can go without waiting: one at a time, and
        # never while busy (the replacement's template is the current one).
        replaceable = [c for c in outdated if ranks[c.name] < 2][:1]
        candidates = [c for c in active if c not in replaceable]
        if len(candidates) <= self.desired:
            return candidates
        # Keep busy first, then idle, then never-registered; newest go first within a rank.
        ordered = sorted(candidates, key=lambda c: (-ranks[c.name], c.created, c.name))
        return sorted(ordered[: self.desired], key=lambda c: c.name)

    def _removal_ranks(self, candidates: list[RunnerChild]) -> dict[str, int]:
        """Each candidate's rank, busy as the scope's runner list says now where that is newer
        than the Runner's status: a Runner whose state held a while mirrors a list up to a few
        minutes old (`hooks.lifecycle.incarnation.steady_watch_wait`), and one that took a job
        since would be stopped, its job waited for, while an idle one stays. The list is the
        one the Runners' syncs share (served from the cache); without it, status decides."""
        listing = self._scope_listing()
        if listing is None:
            return {c.name: c.removal_rank for c in candidates}
        return {
            c.name: c.rank_if(
                c.job_started
                or listing.busy_now(c.name, c.busy, credible_report_time(c.reported_at, self.now))
            )
            for c in candidates
        }

    def _scope_listing(self) -> RunnerListing | None:
        template = object_or_empty(object_or_empty(self.request.parent.get("spec")).get("template"))
        if spec_secret_name(template) is not None:
            return None  # its Runners' own credentials: not this server's to list with
        spec = self.replica_set.spec.template.spec
        scope = Scope(spec.enterprise or "", spec.organization or "", spec.repository or "")
        if not (scope.enterprise or scope.organization or scope.repository):
            return None
        try:
            return RunnerListing.of(self.deps.github.list_runners(scope))
        except GitHubError:
            return None

    def _new_runners(self, missing: int, present: int) -> list[KubeObject]:
        """The Runners to create for `missing`; `present`: the Runners the set's requests
        carry besides (all but those this answer leaves out)."""
        if missing <= 0:
            return []
        if self.creation_problems:
            message = problems_message(self.creation_problems)
            self.conditions["Scaling"] = ("False", "InvalidSpec", message)
            return []
        missing, hold, later = rest_of_scale_up(
            missing, self._recreation_hold(), self.status.scale_up_remaining
        )
        if later is not None:
            self.resync.append(later)
        if hold is not None:
            self.resync.append(hold)
            self.conditions["Scaling"] = (
                "False",
                "RecreationDelayed",
                "waiting after a webhook scale-up before creating more ephemeral runners",
            )
            return []
        start = self._next_index()
        first = self._runner(self._name(start))
        limit = self.deps.settings.hook_max_request_bytes
        runner_bytes = len(orjson.dumps(first))
        sampled = [len(orjson.dumps(c.obj)) for c in self.children[:SAMPLED_CHILDREN]]
        fit = runners_that_fit(limit, runner_weight(runner_bytes, sampled))
        room = fit - present
        if room < missing:
            message = REQUEST_LIMIT_MESSAGE.format(fit=fit, limit=limit)
            self.conditions["Scaling"] = ("False", "RequestLimit", message)
            if room <= 0:
                return []
            missing = room
        batch = new_runner_batch(limit, runner_bytes, MAX_NEW_RUNNERS_PER_SYNC)
        if missing > batch:
            self.resync.append(NEXT_BATCH_SECONDS)
            self.count_done = False  # the rest comes from the next sync, for the same count
            self.scale_up_remaining = missing - batch
            missing = batch
        self.conditions.setdefault("Scaling", ("True", "Created", f"created {missing} runner(s)"))
        return [first, *(self._runner(self._name(start + i)) for i in range(1, missing))]

    def _recreation_hold(self) -> float | None:
        if SCALE_SET_ID_ANNOTATION in self.replica_set.spec.template.metadata.annotations:
            return self._count_hold()
        return self._webhook_recreation_hold()

    def _count_hold(self) -> float | None:
        """Scale-set members are created once per count: for a count newer than the one the
        set last acted on (`status.countTime`) and than any member was created for
        (`hooks.scale_set_mode`). A finished job's member is thus replaced only if the next
        count still asks for it. A count that does not come (a listener gone) holds for
        `COUNT_WAIT` after the newest member at most."""
        effective = observed_time(self.replica_set.spec.effective_time)
        if effective is None:
            return None
        counted = [
            version
            for child in self.children
            if (version := observed_time(_annotation(child.obj, COUNT_VERSION_ANNOTATION)))
        ]
        acted = observed_time(self.status.count_time)
        if acted is not None:
            counted.append(acted)
        if not counted or max(counted) < effective:
            return None
        return count_wait_left(self._last_sync_time(), self.now)

    def _webhook_recreation_hold(self) -> float | None:
        """ARC #1180: with webhook-driven scaling (effectiveTime set), an ephemeral set does not
        recreate runners within 10 minutes of its last creation when that creation is newer
        than effectiveTime, so a finished job does not leave a useless new runner behind."""
        effective = observed_time(self.replica_set.spec.effective_time)  # checked readable
        if effective is None or self.replica_set.spec.template.spec.ephemeral is False:
            return None
        last = self._last_sync_time()
        if last is None or last <= effective:
            return None
        remaining = (last + RECREATION_DELAY - self.now).total_seconds()
        return remaining if remaining > 0 else None

    def _last_sync_time(self) -> datetime | None:
        times = []
        for child in self.children:
            annotations = object_or_empty(
                object_or_empty(child.obj.get("metadata")).get("annotations")
            )
            created = observed_time(annotations.get(SYNC_TIME_ANNOTATION))
            if created is not None and created <= self.now:  # one ahead of now would hold
                times.append(created)
        return max(times) if times else None

    def _next_index(self) -> int:
        """Monotonic over the set's life: the recorded counter, or past any name observed. A
        counter past `MAX_RUNNER_INDEX` is not one this hook wrote, and is not read (found by
        the hostile-input fuzzer: a Runner named with 13 base-36 digits, or a counter edited to
        2**64, made every sync a 500, the next counter past what JSON numbers hold)."""
        prefix = f"{self.replica_set.metadata.name}-{uid_tag(self.replica_set.metadata.uid)}"
        after_names = (_index_after(child.name, prefix) for child in self.children)
        indexes = (self.status.next_runner_index or 0, *after_names)
        return max((index for index in indexes if 0 <= index < MAX_RUNNER_INDEX), default=0)

    def _name(self, index: int) -> str:
        return f"{self.replica_set.metadata.name}-{uid_tag(self.replica_set.metadata.uid)}" + (
            base36(index)
        )

    def _runner(self, name: str) -> KubeObject:
        template = self.replica_set.spec.template
        labels = {**template.metadata.labels, TEMPLATE_HASH_LABEL: self.hash}
        labels = without_controller_uid(labels)
        annotations = {**template.metadata.annotations, SYNC_TIME_ANNOTATION: format_time(self.now)}
        effective = self.replica_set.spec.effective_time
        if SCALE_SET_ID_ANNOTATION in annotations and effective:
            annotations[COUNT_VERSION_ANNOTATION] = effective
        return {
            "apiVersion": API_VERSION,
            "kind": "Runner",
            "metadata": {
                "name": name,
                "namespace": self.replica_set.metadata.namespace,
                "labels": labels,
                "annotations": annotations,
            },
            "spec": template.spec.to_manifest(),
        }

    def _status(
        self,
        keep: list[RunnerChild],
        new: list[KubeObject],
        completed: list[RunnerChild],
        stopping: list[RunnerChild],
    ) -> dict[str, Any]:
        created = len(new)
        unobserved = self.unobserved + [asked_for(r["metadata"]["name"], self.now) for r in new]
        left = grace_left(self.unobserved, self.now)
        if left is not None:  # looked at again when the grace ends, should they never appear
            self.resync.append(left)
        ready = sum(1 for c in keep if c.ready)
        busy_stopping = [c for c in stopping if c.busy and c.registered]
        status = RunnerReplicaSetStatus(
            replicas=len(keep) + len(unobserved),
            ready_replicas=ready,
            available_replicas=ready,
            # Runners stopping while busy count too: their jobs hold them, and an HRA that
            # reads these counts starts a waiting reservation only where a runner is free
            # (found by a failure scenario: eight busy runners being removed read as none
            # busy, and the reservations started then expired before a runner could come).
            registered_replicas=sum(1 for c in keep if c.registered) + len(busy_stopping),
            busy_replicas=sum(1 for c in keep if c.busy) + len(busy_stopping),
            stopping_replicas=len(stopping),
            next_runner_index=self._next_index() + created,
            unobserved_runners=unobserved or None,
            conditions=merge_conditions(self.status.conditions, self.conditions, self.now),
            count_time=self._count_time(),
            scale_up_remaining=self.scale_up_remaining,
        )
        return status.to_wire()

    def _count_time(self) -> str | None:
        """The count this sync acted on (scale-set members), else the one recorded before."""
        spec = self.replica_set.spec
        if SCALE_SET_ID_ANNOTATION not in spec.template.metadata.annotations:
            return None
        recorded, effective = self.status.count_time, spec.effective_time
        recorded_at, effective_at = observed_time(recorded), observed_time(effective)
        if not self.count_done or effective_at is None:
            return recorded
        if recorded_at is not None and recorded_at > effective_at:
            return recorded
        return effective


MAX_RUNNER_INDEX = 2**53
"""Runner counters stay below this: a set would need more Runners than it could make in
millennia, and every such number is exact in any JSON reader."""


@lru_cache(maxsize=65536)
def _index_after(name: str, prefix: str) -> int:
    """One past the base-36 index a name the set gave carries after `prefix`, else 0. Kept:
    a set reads every child's name at each sync."""
    suffix = name.removeprefix(prefix)
    if suffix != name and BASE36_NAME.fullmatch(suffix):
        return int(suffix, 36) + 1
    return 0


def readable_time(text: str | None) -> bool:
    """An optional time field of a spec is absent or a time."""
    return text is None or observed_time(text) is not None


def routes(deps: HookDeps) -> list[HookRoute]:
    handler = partial(sync_runner_replica_set, deps=deps)
    # Its status records the runners asked for and not yet seen (hooks.unobserved): decided on
    # as written, not as a lagging cache has it.
    fresh = RUNNER_REPLICA_SETS
    return [
        HookRoute(
            "/sync/runnerreplicaset", HookKind.COMPOSITE, handler, fresh_parent=lambda _r: fresh
        )
    ]


def _annotation(obj: KubeObject, key: str) -> str | None:
    annotations = object_or_empty(object_or_empty(obj.get("metadata")).get("annotations"))
    value = annotations.get(key)
    return value if isinstance(value, str) else None
