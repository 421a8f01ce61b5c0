"""What a RunnerSet's sync and finalize decide: pure, from `RunnerSetFacts` and GitHub's
answers (see `hooks.runnerset.controller` for the shape of a set and how a runner leaves)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import suppress
from dataclasses import dataclass, field
from datetime import datetime
from functools import cached_property, partial

import orjson

from hooks.children import ConditionValue
from hooks.clock import format_time, parse_optional_time
from hooks.github.port import ConflictError, GitHubError, GitHubRunner, Scope
from hooks.lifecycle.graceful_stop import StopSubject, StopTiming, begin_stop, tick_graceful_stop
from hooks.lifecycle.incarnation import (
    new_jit_config,
    new_token,
    registration_checks,
    registration_timed_out,
    retry_delay,
)
from hooks.lifecycle.leftover import LeftoverCheck, remove_leftover_registration
from hooks.lifecycle.steps import (
    Answers,
    Deferred,
    ListRunners,
    Ration,
    Step,
    questions_of,
    rotated,
)
from hooks.metacontroller import KubeObject, object_or_empty, observed_time
from hooks.naming import BASE36_NAME, SYNC_TIME_ANNOTATION, base36, newest_first
from hooks.resources.common import AutoscaledSize, CreatedRunner, ScaleSetStatus
from hooks.resources.runner import GracefulStopStatus
from hooks.resources.runnerset import RunnerSet, RunnerSetSpec, RunnerSetStatus
from hooks.runner.pod import PodDefaults, jit_work_folder
from hooks.runner.registration import RegistrationMaterial
from hooks.runnerset.member import ObservedMember
from hooks.runnerset.statefulset import (
    registration_secret,
    runner_spec,
    statefulset,
    template_hash,
    volume_claims,
)
from hooks.runnerset.trust import runner_prefix
from hooks.scale_set_mode import count_wait_left
from hooks.scale_target import (
    MAX_NEW_RUNNERS_PER_SYNC,
    NEXT_BATCH_SECONDS,
    RECREATION_DELAY,
    REQUEST_LIMIT_MESSAGE,
    REQUEST_OVERHEAD_BYTES,
    SAMPLED_CHILDREN,
    new_runner_batch,
    rest_of_scale_up,
    runner_weight,
    runners_that_fit,
)
from hooks.settings import Settings
from hooks.unobserved import UNOBSERVED_GRACE, asked_for, grace_left, still_unobserved

MAX_NEW_JIT_RUNNERS_PER_SYNC = 16
"""With JIT registration each new runner is a GitHub call inside the sync, made before the
answer that creates its StatefulSet: a few at a time keeps each sync short, and a sync that
fails midway leaves few registrations for the next ones to remove."""

MAX_RUNNERS_CALLED_FOR_PER_SYNC = 16
"""At most this many runners' own GitHub calls (a removal, a lookup by name) in one hook call
(`hooks.lifecycle.steps.Ration`): a set deleted or scaled down by hundreds stops them over
several syncs a second apart, each well within Metacontroller's hook timeout."""

RELEASE_RESYNC_SECONDS = 5.0
"""After scaling a runner's StatefulSet to 0, look again soon: the pod goes within seconds."""

MAX_RUNNER_INDEX = 36**7
"""Counters have at most 7 base-36 digits (see `_runner_prefix`)."""

CLEAN_OUTCOMES = ("Unregistered", "NotRegistered")
"""Stops whose outcome tells the runner-pod decorator that nothing is left on GitHub."""


@dataclass(frozen=True)
class RunnerSetFacts:
    """Everything a RunnerSet's decision reads, gathered from the hook request."""

    runner_set: RunnerSet  # its spec is set
    status: RunnerSetStatus  # as last written
    members: tuple[ObservedMember, ...]
    pod_slots: frozenset[int]  # volume slots the set's observed pods hold
    pods_observed: bool
    claim_names: frozenset[str]  # the observed PersistentVolumeClaims
    desired: int  # the HRA's answer, else spec.replicas
    pool_size: int | None  # free volume slots kept up to this many slots (volume_pool)
    effective_time: str | None
    jit: bool
    defaults: PodDefaults
    now: datetime
    settings: Settings
    timing: StopTiming
    conditions: dict[str, ConditionValue] = field(default_factory=dict)
    scale_set: ScaleSetStatus | None = None  # its runners are members of this scale set
    foreign: tuple[KubeObject, ...] = ()  # StatefulSets adopted, not its own: left as they are
    autoscaled: AutoscaledSize | None = None  # kept in status: `hooks.scale_target.target_size`
    autoscaled_recheck: float | None = None  # when the size kept from a gone HRA ends

    @property
    def spec(self) -> RunnerSetSpec:
        assert self.runner_set.spec is not None
        return self.runner_set.spec


@dataclass
class Member:
    """One runner in this decision: as observed, and what is decided for it."""

    observed: ObservedMember
    stop: GracefulStopStatus | None
    github_runner: GitHubRunner | None = None
    keep: bool = True
    release: bool = False  # scale the StatefulSet to 0
    new_material: RegistrationMaterial | None = None
    # Its runner started after its scope's list was asked: the list cannot say anything of it.
    newer_than_list: bool = False

    @property
    def runner_id(self) -> int | None:
        if self.github_runner is not None:
            return self.github_runner.id
        return self.observed.recorded_runner_id

    @property
    def removal_rank(self) -> int:
        """0: never registered, 1: idle, 2: busy. Lower ranks go first."""
        if self.github_runner is None or not self.github_runner.online:
            return 2 if self.busy else 0
        return 2 if self.github_runner.busy else 1

    @property
    def busy(self) -> bool:
        return self.github_runner is not None and self.github_runner.busy


@dataclass
class RunnerSetPlan:
    hash: str
    members: list[Member]
    resync: list[float] = field(default_factory=list)
    conditions: dict[str, ConditionValue] = field(default_factory=dict)
    new_children: list[KubeObject] = field(default_factory=list)
    created: int = 0
    unobserved: list[CreatedRunner] = field(default_factory=list)
    """Runners asked for and not seen yet, these included (hooks.unobserved)."""
    next_index: int = 0
    finalized: bool | None = None
    count_time: str | None = None  # scale-set mode: the listener's count this sync acted on
    # Runners of this answer's scale-up left for later answers (one batch created, or a
    # JIT config refused).
    scale_up_remaining: int | None = None

    def wait(self, seconds: float | None) -> None:
        if seconds is not None and seconds > 0:
            self.resync.append(seconds)


def scope_of(spec: RunnerSetSpec) -> Scope:
    return Scope(
        enterprise=spec.enterprise or "",
        organization=spec.organization or "",
        repository=spec.repository or "",
    )


def next_certain_question(facts: RunnerSetFacts, github: Answers) -> Step | None:
    """Every sync and finalize starts with the scope's runner list: asked before running."""
    listing = ListRunners(scope_of(facts.spec))
    return listing if github.answer_to(listing) is None else None


def decide_sync(facts: RunnerSetFacts, github: Answers) -> RunnerSetPlan:
    return _Decision(facts, github).sync()


def decide_finalize(facts: RunnerSetFacts, github: Answers) -> RunnerSetPlan:
    return _Decision(facts, github).finalize()


class _Decision:
    def __init__(self, facts: RunnerSetFacts, github: Answers) -> None:
        self.facts = facts
        self.github = github
        self.spec = facts.spec
        self.now = facts.now
        self.settings = facts.settings
        selector = object_or_empty(self.spec.template.spec.get("nodeSelector"))
        self.node_selector = {k: v for k, v in selector.items() if isinstance(v, str)}
        self.scope = scope_of(self.spec)
        self.members = [Member(observed, observed.stop) for observed in facts.members]
        self.out = RunnerSetPlan(
            hash=template_hash(
                facts.runner_set,
                facts.defaults,
                jit=facts.jit,
                scale_set_id=facts.scale_set.id if facts.scale_set else None,
            ),
            members=self.members,
            conditions={"Valid": ("True", "Valid", ""), **facts.conditions},
        )
        self.github_available = True
        self.listed: tuple[GitHubRunner, ...] = ()
        self.list_fresh_until: datetime | None = None  # until when that list is served
        self.listed_at: dict[Scope, datetime | None] = {}  # when each scope's list was asked
        observed = {member.name for member in facts.members}
        self.out.unobserved = still_unobserved(facts.status.unobserved_runners, observed, facts.now)
        self.out.wait(grace_left(self.out.unobserved, facts.now))
        self.out.wait(facts.autoscaled_recheck)

    def sync(self) -> RunnerSetPlan:
        self._look_up_runners()
        for member in self.members:
            if not member.observed.terminating and member.stop is None:
                self._watch(member)
        self._retire_outdated()
        self._scale_down()
        # Each stopping runner's GitHub steps are its own: asked together, not one per run.
        stopping = [m for m in self.members if m.stop is not None and not m.observed.terminating]
        self._advance_stops(stopping, Ration(self.github, MAX_RUNNERS_CALLED_FOR_PER_SYNC))
        self._scale_up()
        self.out.next_index = self._next_index() + self.out.created
        return self.out

    def finalize(self) -> RunnerSetPlan:
        self._look_up_runners()
        stopping = [m for m in self.members if not m.observed.terminating]
        for member in stopping:
            if member.stop is None:
                member.stop = begin_stop("RunnerSetDeleted", self._subject(member), self.now)
        ration = Ration(self.github, MAX_RUNNERS_CALLED_FOR_PER_SYNC)
        self._advance_stops(stopping, ration)
        # Finished once nothing is observed any more (a StatefulSet left out of this answer is
        # still there until Metacontroller has deleted it) and no registration is left.
        gone = not self.members and not self.facts.pods_observed and not self.out.unobserved
        self.out.finalized = gone and self._orphaned_registrations_removed(ration)
        if not self.out.finalized and not self.out.resync:
            # Nothing asked for a later look (a busy runner's retry, GitHub's reset): look
            # again soon. Asked for unconditionally, it cut every such wait to seconds.
            self.out.wait(RELEASE_RESYNC_SECONDS)
        self.out.next_index = self._next_index()
        return self.out

    # --------------------------------------------------------------- GitHub

    def _look_up_runners(self) -> None:
        """One (cached) list of each scope's runners serves every member: the spec's, and any
        other a member's template names (a scope changed since it was created)."""
        scopes = sorted({self.scope, *(self._scope_of(m) for m in self.members)}, key=str)
        listed: dict[Scope, dict[str, GitHubRunner]] = {}
        fresh_until: list[datetime] = []
        for scope in scopes:
            try:
                listing = self.github.list_runners(scope)
            except GitHubError as error:
                self.github_available = False
                self.out.conditions["GitHubAvailable"] = ("False", "GitHubUnavailable", str(error))
                self.out.wait(retry_delay(error, self.settings.unregistration_retry_delay))
                return
            listed[scope] = {r.name: r for r in listing}
            self.listed_at[scope] = listing.asked_at
            if listing.fresh_until is not None:
                fresh_until.append(listing.fresh_until)
        self.out.conditions["GitHubAvailable"] = ("True", "Listed", "")
        self.list_fresh_until = min(fresh_until, default=None)
        self.listed = tuple(listed[self.scope].values())
        for member in self.members:
            scope = self._scope_of(member)
            member.github_runner = listed[scope].get(member.observed.runner_name)
            member.newer_than_list = self._newer_than_list(member, self.listed_at.get(scope))

    def _newer_than_list(self, member: Member, asked_at: datetime | None) -> bool:
        """The member's runner is not in its scope's list because it started after the list
        was asked, or is starting: its pod is not ready yet, and was made no longer than one
        list period before the list (a pod that never gets ready is not waited for)."""
        pod = member.observed.pod
        if member.github_runner is not None or pod is None or asked_at is None or pod.stopped:
            return False
        if pod.ready_since is not None:
            return pod.ready_since > asked_at
        made = _creation_time(member.observed.pod_object)
        period = (self.list_fresh_until - asked_at) if self.list_fresh_until else None
        return made is not None and period is not None and made > asked_at - period

    def _scope_of(self, member: Member) -> Scope:
        """Where the member's runner registers: as its StatefulSet says, else the spec."""
        return member.observed.scope or self.scope

    def _orphaned_registrations_removed(self, ration: Ration) -> bool:
        """Registrations under this set's runner names with no StatefulSet left: a JIT config
        generated by a call whose answer never arrived (a timeout), so no StatefulSet was ever
        made for it. Only when the set goes is every such name surely an orphan."""
        if not self.github_available:
            return False
        names = re.compile(re.escape(self._runner_prefix()) + r"[0-9a-z]{1,7}-0")
        orphans = [runner for runner in self.listed if names.fullmatch(runner.name)]
        checks: list[LeftoverCheck] = []

        def remove(runner: GitHubRunner) -> None:
            timing = self.facts.timing
            with suppress(Deferred):  # its turn comes in a later hook call
                checks.append(
                    remove_leftover_registration(ration.part(), self.scope, runner.name, timing)
                )

        questions_of(partial(remove, runner) for runner in orphans)
        for check in checks:
            if not check.done:
                self.out.wait(check.retry_after)
        self._next_batch_if_deferred(ration)
        return not ration.deferred and all(check.done for check in checks)

    # --------------------------------------------------------------- each runner

    def _watch(self, member: Member) -> None:
        """A running member: replace it when its runner ended or went, keep its Secret spent."""
        pod, observed = member.observed.pod, member.observed
        if pod is None:
            return  # just created, or the StatefulSet controller is creating its pod again
        if pod.terminating:
            # Deleted by someone else (a drain, an eviction): the runner-pod decorator stops it
            # and removes its registration before the pod leaves; this set only stops the
            # StatefulSet from starting an unregistrable pod again and replaces the runner.
            stop = begin_stop("PodDeleted", self._subject(member), self.now)
            update = {"outcome": "PodStopped", "completed_at": format_time(self.now)}
            member.stop = stop.model_copy(update=update)
            return
        if pod.stopped:
            reason = "RunnerCompleted" if pod.completed else "PodFailed"
            member.stop = begin_stop(reason, self._subject(member), self.now)
            return
        if pod.runner_started and observed.material.can_register:
            member.new_material = observed.material.spent()  # see the controller's docstring
        elif not pod.runner_started and observed.secret is not None:
            if not observed.material.can_register:
                # A pod started again by the StatefulSet controller after its runner had run:
                # it cannot register (the token was spent), so the runner is replaced.
                member.stop = begin_stop("PodRecreated", self._subject(member), self.now)
                return
            if not self.facts.jit:
                self._refresh_token(member)
        elif not pod.runner_started and self.facts.jit:
            # Created with its StatefulSet in one answer, the Secret may reach the informer a
            # moment after the pod does: missing only counts once it had time to show up.
            created = _created_at(member)
            if created is not None and self.now - created < UNOBSERVED_GRACE:
                self.out.wait((created + UNOBSERVED_GRACE - self.now).total_seconds())
                return
            # Its JIT config is gone (deleted by hand) and cannot be generated again under the
            # same name: the runner is replaced, its registration removed.
            member.stop = begin_stop("RegistrationLost", self._subject(member), self.now)
            return
        elif not pod.runner_started:
            self._refresh_token(member)
        if not self.github_available:
            return
        found, timeout = member.github_runner, self.settings.registration_timeout
        listed_at = self.listed_at.get(self._scope_of(member))
        if registration_timed_out(pod, found, self.now, timeout, listed_at):
            member.stop = begin_stop("RegistrationTimeout", self._subject(member), self.now)
            return
        for wait in registration_checks(pod, found, self.now, self.settings, self.list_fresh_until):
            self.out.wait(wait)

    def _advance_stops(self, stopping: list[Member], ration: Ration) -> None:
        """Each member's next step; those beyond the ration wait for the next sync, asked for
        a second later (unless GitHub's rate limit says to wait for its reset). The window
        of members admitted moves at each second, so that members whose calls keep failing
        (a removal refused, GitHub down) do not hold it for ever."""

        def advance(member: Member) -> None:
            with suppress(Deferred):  # its turn comes in a later hook call
                self._advance_stop(member, ration.part())

        turn = int(self.now.timestamp()) * ration.limit
        questions_of(partial(advance, member) for member in rotated(stopping, turn))
        self._next_batch_if_deferred(ration)

    def _next_batch_if_deferred(self, ration: Ration) -> None:
        """Parts the ration left for later: a second later, unless GitHub's rate limit has
        them wait for its reset (their own retry says when)."""
        if ration.deferred and not ration.rate_limited:
            self.out.wait(NEXT_BATCH_SECONDS)

    def _advance_stop(self, member: Member, github: Answers) -> None:
        """One step of the member's way out (see the controller's docstring)."""
        stop = member.stop
        assert stop is not None
        if stop.outcome is None:
            subject, timing = self._subject(member), self.facts.timing
            tick = tick_graceful_stop(subject, stop, github, self.now, timing)
            member.stop = stop = tick.state
            if not tick.done:
                self.out.wait(tick.retry_after)
                return
        if stop.outcome not in CLEAN_OUTCOMES and stop.reason != "PodDeleted":
            check = remove_leftover_registration(
                github,
                self._scope_of(member),
                member.observed.registered_name,
                self.facts.timing,
                stopped_at=parse_optional_time(stop.completed_at),
            )
            if not check.done:
                self.out.wait(check.retry_after)
                return
            # Nothing is left on GitHub: the decorator can let the pod go without a call.
            member.stop = stop.model_copy(update={"outcome": "Unregistered"})
        member.release = True
        if member.observed.pod is None and member.observed.scaled_to_zero:
            member.keep = False  # gone: the StatefulSet and its Secret go too
        else:
            self.out.wait(RELEASE_RESYNC_SECONDS)

    def _subject(self, member: Member) -> StopSubject:
        pod = member.observed.pod
        return StopSubject(
            scope=self._scope_of(member),
            runner_name=member.observed.runner_name,
            runner_id=member.runner_id,
            pod=pod,
            ephemeral=pod.ephemeral if pod is not None else self.spec.ephemeral is not False,
            last_seen_busy=member.github_runner is not None and member.github_runner.busy,
        )

    # --------------------------------------------------------------- the set

    def _active(self) -> list[Member]:
        return [m for m in self.members if not m.observed.terminating and m.stop is None]

    def _scaled_down_at_work(self) -> list[Member]:
        """Members scaled down whose runner still runs (a busy one waits for its job): they
        count as ARC counts their running pods (runner_pod_owner.go), so a scale-up soon
        after a scale-down waits for them rather than running more than `replicas` runners."""
        return [
            m
            for m in self.members
            if m.stop is not None
            and m.stop.reason == "ScaleDown"
            and m.stop.outcome is None
            and m.observed.pod is not None
            and not m.observed.pod.stopped
            and m.observed.template_hash in (None, self.out.hash)
        ]

    def _current(self) -> list[Member]:
        """The active members of the set's template: those its size counts."""
        return [m for m in self._active() if not self._outdated(m)]

    def _outdated(self, member: Member) -> bool:
        return member.observed.template_hash not in (None, self.out.hash)

    def _retire_outdated(self) -> None:
        """A new template: its runners are made beside the old ones at once (`_scale_up` and
        `_scale_down` count the set's template only), as ARC's RunnerSet makes them
        (runner_pod_owner.go) and as a RunnerDeployment's new set does, and every old runner
        is stopped gracefully: an idle one now, a busy one after its job (a static one when
        GitHub first lets it go, as a RunnerDeployment's old Runners are). Replaced one idle
        runner at a time, a static set under a steady backlog ran every job on the old
        template for as long as the backlog lasted (found by an independent failure run); its
        busy runners left alone until a list showed them free, a set under a backlog grew by
        its size at each change (found in review)."""
        if not self.github_available:
            return
        for member in self._active():
            if self._outdated(member):
                member.stop = begin_stop("TemplateChanged", self._subject(member), self.now)

    def _scale_down(self) -> None:
        active = self._current()
        surplus = len(active) - self.facts.desired
        if surplus <= 0 or not self.github_available:
            return  # (which runners are busy is unknown without GitHub: choose later)
        # Never-registered first, then idle, busy last; the newest first within a rank.
        ordered = sorted(
            active,
            key=lambda m: (m.removal_rank, newest_first(m.observed.created), m.observed.name),
        )
        for member in ordered[:surplus]:
            member.stop = begin_stop("ScaleDown", self._subject(member), self.now)

    def _scale_up(self) -> None:
        out = self.out
        leaving = self._scaled_down_at_work()
        missing = self.facts.desired - len(self._current()) - len(leaving) - len(out.unobserved)
        if missing <= 0:
            out.conditions["Scaling"] = ("True", "Steady", "")
            self._acted_on_count()
            return
        hold = self._count_hold() if self.facts.scale_set else self._recreation_hold()
        missing, hold, later = rest_of_scale_up(missing, hold, self.facts.status.scale_up_remaining)
        if hold is not None:
            out.wait(hold)
            out.conditions["Scaling"] = (
                "False",
                "RecreationDelayed",
                "waiting after a webhook scale-up before creating more ephemeral runners",
            )
            return
        index, free_slots = self._next_index(), self._free_slots()
        limit = self.facts.settings.hook_max_request_bytes
        member_bytes = self._member_bytes(self._runner_prefix() + base36(index))
        fit = runners_that_fit(limit, member_bytes)
        room = fit - len(self.members) - len(out.unobserved)
        if room < missing:
            message = REQUEST_LIMIT_MESSAGE.format(fit=fit, limit=limit)
            out.conditions["Scaling"] = ("False", "RequestLimit", message)
            if room <= 0:
                return
            missing = room
        shared_token = None if self.facts.jit else self._registration_token()
        if not self.facts.jit and shared_token is None:
            out.scale_up_remaining = missing  # none made: the condition says why
            return
        most = MAX_NEW_JIT_RUNNERS_PER_SYNC if self.facts.jit else MAX_NEW_RUNNERS_PER_SYNC
        batch = new_runner_batch(limit, member_bytes, most)
        created_before = out.created
        for offset in range(min(missing, batch)):
            name = self._runner_prefix() + base36(index + offset)
            material = self._jit_material(f"{name}-0") if self.facts.jit else shared_token
            if material is None:
                break  # the condition says why; the rest on a later sync
            self._add_runner(name, material, next(free_slots))
        else:
            if missing > batch:
                out.wait(NEXT_BATCH_SECONDS)  # the rest from the next sync, for the same count
            else:
                self._acted_on_count()
        if (made := out.created - created_before) < missing:
            out.scale_up_remaining = missing - made
        else:
            # Only once the rest is made: a refused config's own retry delay governs until
            # then (found by an independent run: a JIT set asked GitHub every second through
            # a rate limit, its rest waiting at each sync for a next batch).
            out.wait(later)
        if out.created:
            created = f"created {out.created} runner(s)"
            out.conditions.setdefault("Scaling", ("True", "Created", created))

    def _member_bytes(self, name: str) -> int:
        """What one more member weighs in the set's requests (`runner_weight`): its
        StatefulSet, its pod, its Secret and its claims, as observed members weigh them, else
        as built: the StatefulSet, and its pod carrying the same template."""
        # Its Secret and claims, as the request carries them, with their own overhead.
        extra = REQUEST_OVERHEAD_BYTES * (1 + len(self.spec.volume_claim_templates))
        observed = [
            len(orjson.dumps(m.observed.sts))
            + len(orjson.dumps(m.observed.pod_object or {}))
            + extra
            for m in self.members[:SAMPLED_CHILDREN]
        ]
        if observed:
            return runner_weight(0, observed)
        sample = statefulset(
            self.facts.runner_set,
            self.facts.defaults,
            name=name,
            hash_=self.out.hash,
            slot=0 if self.spec.volume_claim_templates else None,
            created_at=format_time(self.now),
            jit=self.facts.jit,
        )
        return runner_weight(len(orjson.dumps(sample)) * 2 + extra, [])

    def _add_runner(self, name: str, material: RegistrationMaterial, free_slot: int) -> None:
        runner_set, out = self.facts.runner_set, self.out
        slot = free_slot if self.spec.volume_claim_templates else None
        out.new_children.append(
            statefulset(
                runner_set,
                self.facts.defaults,
                name=name,
                hash_=out.hash,
                slot=slot,
                created_at=format_time(self.now),
                jit=self.facts.jit,
            )
        )
        out.new_children.append(registration_secret(runner_set, name, material))
        if slot is not None:
            out.new_children += [
                claim
                for claim in volume_claims(runner_set, slot)
                if claim["metadata"]["name"] not in self.facts.claim_names
            ]
        out.created += 1
        out.unobserved.append(asked_for(name, self.now, slot))

    def _registration_token(self) -> RegistrationMaterial | None:
        """One registration token for every runner created in this sync (token mode)."""
        try:
            return new_token(self.github, self.scope)
        except GitHubError as error:
            self._registration_failed(error)
            return None

    @cached_property
    def _jit_work_folder(self) -> str:
        """The set's runners' (`jit_work_folder`): read once, not for each of a batch."""
        return jit_work_folder(runner_spec(self.facts.runner_set))

    def _jit_material(self, runner_name: str) -> RegistrationMaterial | None:
        """A just-in-time config for one new runner: a registration of its own, so no pod of
        this set ever holds a token that could register others."""
        spec, scale_set = self.spec, self.facts.scale_set
        work_folder = self._jit_work_folder
        try:
            if scale_set is not None:
                config = self.github.scale_set_jit_config(
                    self.scope, scale_set.id, runner_name, work_folder
                )
                return RegistrationMaterial(
                    jit_config=config.encoded_jit_config, runner_id=config.runner.id
                )
            return new_jit_config(
                self.github,
                self.scope,
                runner_name,
                labels=spec.labels,
                node_selector=self.node_selector,
                group=spec.group,
                work_folder=work_folder,
            )
        except ConflictError:
            # Registered already: a config generated by a sync whose answer was lost. Remove
            # it (it never ran) and generate again on the next sync.
            check = remove_leftover_registration(
                self.github, self.scope, runner_name, self.facts.timing
            )
            message = f"{runner_name} is registered on GitHub already; removing it first"
            self.out.conditions["Scaling"] = ("False", "NameConflict", message)
            self.out.wait(check.retry_after if not check.done else RELEASE_RESYNC_SECONDS)
            return None
        except GitHubError as error:
            self._registration_failed(error)
            return None

    def _registration_failed(self, error: GitHubError) -> None:
        self.out.wait(retry_delay(error, self.settings.token_error_retry_delay))
        self.out.conditions["Scaling"] = ("False", "RegistrationFailed", str(error))

    def _refresh_token(self, member: Member) -> None:
        """A runner not started yet needs a token that outlasts its start."""
        material = member.observed.material
        lost = member.observed.secret is None  # deleted by hand: the pod cannot start
        if not lost and (not material.token or material.token_usable(self.now)):
            return
        try:
            member.new_material = new_token(self.github, self._scope_of(member))
        except GitHubError:
            return  # tried again on the next sync; an expired token only fails that start

    def _acted_on_count(self) -> None:
        if self.facts.scale_set is not None:
            self.out.count_time = self.facts.effective_time

    def _count_hold(self) -> float | None:
        """Scale-set members are created once per count of the listener (`effectiveTime`):
        a finished job's runner is replaced only if a newer count still asks for it
        (`hooks.scale_set_mode`). Without a newer count, after `COUNT_WAIT` anyway."""
        effective = parse_optional_time(self.facts.effective_time)
        acted = parse_optional_time(self.facts.status.count_time)
        if effective is None or acted is None or acted < effective:
            return None
        return count_wait_left(self._last_creation(), self.now)

    def _last_creation(self) -> datetime | None:
        """The newest member's creation; a time ahead of now (a hand's, another clock's) is
        none, which would hold creation until it and past it."""
        times = [t for t in (_created_at(m) for m in self.members) if t is not None]
        times = [t for t in times if t <= self.now]
        return max(times) if times else None

    def _recreation_hold(self) -> float | None:
        """ARC #1180, as for RunnerReplicaSets: with webhook scaling (effectiveTime set), an
        ephemeral set does not create runners again within 10 minutes of its last creation
        when that creation is newer than effectiveTime."""
        effective = parse_optional_time(self.facts.effective_time)
        if effective is None or self.spec.ephemeral is False:
            return None
        last = self._last_creation()
        if last is None or last <= effective:
            return None
        remaining = (last + RECREATION_DELAY - self.now).total_seconds()
        return remaining if remaining > 0 else None

    def _next_index(self) -> int:
        recorded = self.facts.status.next_runner_index or 0
        # A counter outside what names hold is not one this hook wrote: count from the members.
        index = recorded if 0 <= recorded < MAX_RUNNER_INDEX else 0
        prefix = self._runner_prefix()
        for member in self.members:
            name = member.observed.name
            suffix = name.removeprefix(prefix)
            if suffix != name and BASE36_NAME.fullmatch(suffix):
                index = max(index, int(suffix, 36) + 1)
        return index

    def _runner_prefix(self) -> str:
        return runner_prefix(self.facts.runner_set)

    def _free_slots(self) -> Iterator[int]:
        """Volume slots no runner holds, lowest first (a slot is held until its pod is gone)."""
        held = {m.observed.slot for m in self.members if m.observed.slot is not None and m.keep}
        held |= self.facts.pod_slots
        held |= {runner.slot for runner in self.out.unobserved if runner.slot is not None}
        slot = 0
        while True:
            if slot not in held:
                yield slot
            slot += 1


def _created_at(member: Member) -> datetime | None:
    """When this hook created the member's StatefulSet (its sync-time annotation)."""
    annotations = (member.observed.sts.get("metadata") or {}).get("annotations") or {}
    return observed_time(annotations.get(SYNC_TIME_ANNOTATION))  # near year 9999: none


def _creation_time(obj: KubeObject | None) -> datetime | None:
    metadata = object_or_empty((obj or {}).get("metadata"))
    return observed_time(str(metadata.get("creationTimestamp") or ""))
