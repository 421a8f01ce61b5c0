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
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from functools import partial
from typing import Any

from pydantic import ValidationError

from hooks.children import (
    ConditionValue,
    as_kept,
    describe_validation_error,
    invalid_status,
    label_value,
    merge_conditions,
)
from hooks.clock import format_time, parse_optional_time
from hooks.deployment.controller import (
    autoscaler_targeting,
    later_effective_time,
    scaled_replicas,
)
from hooks.deps import HookDeps
from hooks.github.credentials import (
    CREDENTIALS_CONDITION,
    credentials_condition,
    credentials_rules,
    requested_credentials,
    spec_secret_name,
)
from hooks.github.port import ConflictError, GitHubError, GitHubRunner, RateLimitedError, Scope
from hooks.metacontroller import (
    CompositeHookRequest,
    CompositeHookResponse,
    HookKind,
    HookRoute,
    KubeObject,
    object_or_empty,
    observed_int,
)
from hooks.replicaset.controller import BASE36_NAME, base36, uid_tag
from hooks.resources.common import ObjectMeta
from hooks.resources.runner import API_VERSION, GracefulStopStatus
from hooks.resources.runnerset import RunnerSet, RunnerSetSpec, RunnerSetStatus
from hooks.runner.graceful_stop import (
    GRACEFUL_STOP_ANNOTATION,
    StopSubject,
    begin_stop,
    remove_leftover_registration,
    tick_graceful_stop,
)
from hooks.runner.observed_pod import ObservedPod, observe_pod
from hooks.runner.pod import PodDefaults
from hooks.runner.registration import (
    RegistrationMaterial,
    jit_labels,
    read_material,
    registration_mode,
    runner_group_id,
)
from hooks.runner.validation import validate_runner_spec
from hooks.runnerset.statefulset import (
    RUNNERSET_NAME_LABEL,
    SYNC_TIME_ANNOTATION,
    TEMPLATE_HASH_LABEL,
    VOLUME_SLOT_LABEL,
    registration_secret,
    runner_spec,
    secret_name,
    statefulset,
    template_hash,
    volume_claims,
)

RUNNER_ID_ANNOTATION = "actions-runner/id"
"""Recorded on runner pods by the runner-pod decorator once GitHub lists the runner."""

RELEASE_RESYNC_SECONDS = 5.0
"""After scaling a runner's StatefulSet to 0, look again soon: the pod goes within seconds."""

RECREATION_DELAY = timedelta(minutes=10)
"""ARC's DefaultRunnerPodRecreationDelayAfterWebhookScale (#1180)."""

MAX_SET_NAME_IN_RUNNER_NAMES = 40
"""StatefulSet names stay within 52 characters: 40, a dash, a 4-character tag, a 7-digit counter."""

CHILD_KINDS = ["StatefulSet", "Secret", "PersistentVolumeClaim"]

# Stops whose outcome tells the runner-pod decorator that nothing is left on GitHub.
_CLEAN_OUTCOMES = ("Unregistered", "NotRegistered")


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
    runner_set, problems = _parse(request, deps)
    if runner_set is None or problems:
        return _invalid(request, problems, deps.clock.now())
    return _RunnerSetSync(request, runner_set, deps).sync()


def finalize_runner_set(request: CompositeHookRequest, deps: HookDeps) -> CompositeHookResponse:
    runner_set, problems = _parse(request, deps)
    if runner_set is None or problems:
        return _finalize_unreadable(request, problems, deps.clock.now())
    return _RunnerSetSync(request, runner_set, deps).finalize()


# ------------------------------------------------------------------ one runner


@dataclass
class _Member:
    """One runner: its StatefulSet, pod, Secret, and the stop recorded on the StatefulSet."""

    sts: KubeObject
    name: str
    created: str
    terminating: bool
    scaled_to_zero: bool
    template_hash: str | None
    slot: int | None
    stop: GracefulStopStatus | None
    pod_object: KubeObject | None
    pod: ObservedPod | None
    secret: KubeObject | None
    material: RegistrationMaterial
    github_runner: GitHubRunner | None = None
    keep: bool = True
    release: bool = False  # scale the StatefulSet to 0
    new_material: RegistrationMaterial | None = None

    @property
    def runner_name(self) -> str:
        return f"{self.name}-0"

    @property
    def runner_id(self) -> int | None:
        if self.github_runner is not None:
            return self.github_runner.id
        if self.material.runner_id is not None:
            return self.material.runner_id  # its JIT registration
        recorded = ((self.pod_object or {}).get("metadata") or {}).get("annotations") or {}
        value = recorded.get(RUNNER_ID_ANNOTATION)
        return observed_int(value)

    @property
    def removal_rank(self) -> int:
        """0: never registered, 1: idle, 2: busy. Lower ranks go first."""
        if self.github_runner is None or not self.github_runner.online:
            return 2 if self.github_runner is not None and self.github_runner.busy else 0
        return 2 if self.github_runner.busy else 1

    @property
    def busy(self) -> bool:
        return self.github_runner is not None and self.github_runner.busy


def _read_member(sts: KubeObject, request: CompositeHookRequest) -> _Member:
    metadata = sts.get("metadata") or {}
    name = str(metadata.get("name") or "")
    labels = metadata.get("labels") or {}
    annotations = metadata.get("annotations") or {}
    pod_object = request.object_named("Pod", f"{name}-0", related=True)
    secret = request.object_named("Secret", secret_name(name))
    slot = labels.get(VOLUME_SLOT_LABEL)
    replicas = (sts.get("spec") or {}).get("replicas")
    return _Member(
        sts=sts,
        name=name,
        created=str(metadata.get("creationTimestamp") or ""),
        terminating=bool(metadata.get("deletionTimestamp")),
        scaled_to_zero=replicas == 0,
        template_hash=labels.get(TEMPLATE_HASH_LABEL),
        slot=observed_int(slot),
        stop=_read_stop(annotations.get(GRACEFUL_STOP_ANNOTATION)),
        pod_object=pod_object,
        pod=observe_pod(pod_object) if pod_object is not None else None,
        secret=secret,
        material=read_material(secret),
    )


def _read_stop(text: object) -> GracefulStopStatus | None:
    if not isinstance(text, str) or not text:
        return None
    try:
        return GracefulStopStatus.model_validate_json(text)
    except ValidationError:
        return None


# ------------------------------------------------------------------ the sync


@dataclass
class _Answer:
    resync: list[float] = field(default_factory=list)
    conditions: dict[str, ConditionValue] = field(default_factory=dict)
    new_children: list[KubeObject] = field(default_factory=list)
    created: int = 0

    def wait(self, seconds: float | None) -> None:
        if seconds is not None and seconds > 0:
            self.resync.append(seconds)


class _RunnerSetSync:
    def __init__(
        self, request: CompositeHookRequest, runner_set: RunnerSet, deps: HookDeps
    ) -> None:
        assert runner_set.spec is not None
        self.request = request
        self.runner_set = runner_set
        self.spec = runner_set.spec
        self.deps = deps
        self.now = deps.clock.now()
        self.name = runner_set.metadata.name
        self.status = _observed_status(request.parent)
        self.defaults = PodDefaults.from_settings(deps.settings)
        self.jit = _jit(runner_set, deps)
        selector = object_or_empty(self.spec.template.spec.get("nodeSelector"))
        self.node_selector = {k: v for k, v in selector.items() if isinstance(v, str)}
        self.hash = template_hash(runner_set, self.defaults, jit=self.jit)
        self.scope = Scope(
            enterprise=self.spec.enterprise or "",
            organization=self.spec.organization or "",
            repository=self.spec.repository or "",
        )
        self.members = [_read_member(sts, request) for sts in request.objects("StatefulSet")]
        self.out = _Answer(conditions={"Valid": ("True", "Valid", "")})
        self.github_available = True
        credentials = requested_credentials(
            request, runner_set.metadata.namespace, spec_secret_name(request.parent)
        )
        self.github = deps.github_for(credentials)
        condition = credentials_condition(credentials)
        if condition is not None:
            status, reason, message = condition
            self.out.conditions[CREDENTIALS_CONDITION] = (
                "True" if status else "False",
                reason,
                message,
            )
        hra = autoscaler_targeting(
            "RunnerSet", self.name, request.objects("HorizontalRunnerAutoscaler", related=True)
        )
        self.desired = scaled_replicas(hra, self.spec.replicas)
        self.effective_time = later_effective_time(hra, self.spec.effective_time)

    # --------------------------------------------------------------- entry points

    def sync(self) -> CompositeHookResponse:
        self._look_up_runners()
        for member in self.members:
            if not member.terminating and member.stop is None:
                self._watch(member)
        self._replace_one_outdated()
        self._scale_down()
        for member in self.members:
            if member.stop is not None and not member.terminating:
                self._advance_stop(member)
        self._scale_up()
        return self._respond(finalized=None)

    def finalize(self) -> CompositeHookResponse:
        self._look_up_runners()
        for member in self.members:
            if member.terminating:
                continue
            if member.stop is None:
                member.stop = begin_stop("RunnerSetDeleted", self._subject(member), self.deps.clock)
            self._advance_stop(member)
        pods = self.request.objects("Pod", related=True)
        # Finished once nothing is observed any more: a StatefulSet left out of this answer is
        # still there until Metacontroller has deleted it.
        finalized = not self.members and not pods
        if not finalized:
            self.out.wait(RELEASE_RESYNC_SECONDS)
        return self._respond(finalized=finalized)

    # --------------------------------------------------------------- GitHub

    def _look_up_runners(self) -> None:
        """One (cached) list of the scope's runners serves every member."""
        try:
            listed = {r.name: r for r in self.github.list_runners(self.scope)}
        except GitHubError as error:
            self.github_available = False
            self.out.conditions["GitHubAvailable"] = ("False", "GitHubUnavailable", str(error))
            retry = (
                error.retry_after
                if isinstance(error, RateLimitedError)
                else self.deps.settings.unregistration_retry_delay
            )
            self.out.wait(retry)
            return
        self.out.conditions["GitHubAvailable"] = ("True", "Listed", "")
        for member in self.members:
            member.github_runner = listed.get(member.runner_name)

    # --------------------------------------------------------------- each runner

    def _watch(self, member: _Member) -> None:
        """A running member: replace it when its runner ended or went, keep its Secret spent."""
        pod = member.pod
        if pod is None:
            return  # just created, or the StatefulSet controller is creating its pod again
        if pod.terminating:
            # Deleted by someone else (a drain, an eviction): the runner-pod decorator stops it
            # and removes its registration before the pod leaves; this set only stops the
            # StatefulSet from starting an unregistrable pod again and replaces the runner.
            member.stop = begin_stop("PodDeleted", self._subject(member), self.deps.clock)
            member.stop = member.stop.model_copy(
                update={"outcome": "PodStopped", "completed_at": format_time(self.now)}
            )
            return
        if pod.stopped:
            reason = "RunnerCompleted" if pod.completed else "PodFailed"
            member.stop = begin_stop(reason, self._subject(member), self.deps.clock)
            return
        if pod.runner_started and member.material.can_register:
            member.new_material = member.material.spent()  # see the module docstring
        elif (
            not pod.runner_started
            and member.secret is not None
            and not member.material.can_register
        ):
            # A pod started again by the StatefulSet controller after its runner had run: it
            # cannot register (the token was spent), so the runner is replaced.
            member.stop = begin_stop("PodRecreated", self._subject(member), self.deps.clock)
            return
        elif not pod.runner_started and self.jit and member.secret is None:
            # Its JIT config is gone (deleted by hand) and cannot be generated again under
            # the same name: the runner is replaced, its registration removed.
            member.stop = begin_stop("RegistrationLost", self._subject(member), self.deps.clock)
            return
        elif not pod.runner_started and not self.jit:
            self._refresh_token(member)
        if self._registration_timed_out(member):
            member.stop = begin_stop("RegistrationTimeout", self._subject(member), self.deps.clock)
            return
        if self.github_available:
            self._schedule_registration_check(member)

    def _registration_timed_out(self, member: _Member) -> bool:
        pod = member.pod
        if pod is None or pod.ready_since is None or not self.github_available:
            return False
        ready_for = (self.now - pod.ready_since).total_seconds()
        if ready_for < self.deps.settings.registration_timeout:
            return False
        return member.github_runner is None or not member.github_runner.online

    def _schedule_registration_check(self, member: _Member) -> None:
        if member.github_runner is not None and member.github_runner.online:
            return
        self.out.wait(self.deps.settings.registration_check_interval)
        pod = member.pod
        if pod is not None and pod.ready_since is not None:
            elapsed = (self.now - pod.ready_since).total_seconds()
            self.out.wait(self.deps.settings.registration_timeout - elapsed + 1)

    def _advance_stop(self, member: _Member) -> None:
        """One step of the member's way out (see the module docstring)."""
        stop = member.stop
        assert stop is not None
        if stop.outcome is None:
            tick = tick_graceful_stop(
                self._subject(member), stop, self.github, self.deps.clock, self.deps.timing
            )
            member.stop = stop = tick.state
            if not tick.done:
                self.out.wait(tick.retry_after)
                return
        if stop.outcome not in _CLEAN_OUTCOMES and stop.reason != "PodDeleted":
            check = remove_leftover_registration(
                self.github,
                self.scope,
                member.runner_name,
                stop.runner_id,
                self.deps.timing,
                stopped_at=parse_optional_time(stop.completed_at),
            )
            if not check.done:
                self.out.wait(check.retry_after)
                return
            # Nothing is left on GitHub: the decorator can let the pod go without a call.
            member.stop = stop.model_copy(update={"outcome": "Unregistered"})
        member.release = True
        if member.pod is None and member.scaled_to_zero:
            member.keep = False  # gone: the StatefulSet and its Secret go too
        else:
            self.out.wait(RELEASE_RESYNC_SECONDS)

    def _subject(self, member: _Member) -> StopSubject:
        pod = member.pod
        return StopSubject(
            scope=self.scope,
            runner_name=member.runner_name,
            runner_id=member.runner_id,
            pod=pod,
            ephemeral=pod.ephemeral if pod is not None else self.spec.ephemeral is not False,
        )

    # --------------------------------------------------------------- the set

    def _active(self) -> list[_Member]:
        return [m for m in self.members if not m.terminating and m.stop is None]

    def _replace_one_outdated(self) -> None:
        """A new template replaces runners one at a time, never a busy one (its job goes on;
        it is replaced after)."""
        if not self.github_available:
            return
        outdated = [
            m
            for m in self._active()
            if m.template_hash not in (None, self.hash) and m.removal_rank < 2
        ]
        replacing = any(
            m.stop is not None and m.stop.reason == "TemplateChanged" and m.keep
            for m in self.members
        )
        if outdated and not replacing:
            member = min(outdated, key=lambda m: (m.removal_rank, m.name))
            member.stop = begin_stop("TemplateChanged", self._subject(member), self.deps.clock)

    def _scale_down(self) -> None:
        active = self._active()
        surplus = len(active) - self.desired
        if surplus <= 0:
            return
        if not self.github_available:
            return  # which runners are busy is unknown: choose on a later sync
        # Never-registered first, then idle, busy last; the newest first within a rank.
        ordered = sorted(active, key=lambda m: (m.removal_rank, _descending(m.created), m.name))
        for member in ordered[:surplus]:
            member.stop = begin_stop("ScaleDown", self._subject(member), self.deps.clock)

    def _scale_up(self) -> None:
        missing = self.desired - len(self._active())
        if missing <= 0:
            self.out.conditions["Scaling"] = ("True", "Steady", "")
            return
        hold = self._recreation_hold()
        if hold is not None:
            self.out.wait(hold)
            self.out.conditions["Scaling"] = (
                "False",
                "RecreationDelayed",
                "waiting after a webhook scale-up before creating more ephemeral runners",
            )
            return
        index = self._next_index()
        free_slots = self._free_slots()
        shared_token = None if self.jit else self._registration_token()
        if not self.jit and shared_token is None:
            return
        for offset in range(missing):
            name = self._runner_prefix() + base36(index + offset)
            material = self._jit_material(f"{name}-0") if self.jit else shared_token
            if material is None:
                break  # the condition says why; the rest on a later sync
            slot = next(free_slots) if self.spec.volume_claim_templates else None
            self.out.new_children.append(
                statefulset(
                    self.runner_set,
                    self.defaults,
                    name=name,
                    hash_=self.hash,
                    slot=slot,
                    created_at=format_time(self.now),
                    jit=self.jit,
                )
            )
            self.out.new_children.append(registration_secret(self.runner_set, name, material))
            if slot is not None:
                self.out.new_children += [
                    claim
                    for claim in volume_claims(self.runner_set, slot)
                    if self.request.object_named("PersistentVolumeClaim", claim["metadata"]["name"])
                    is None
                ]
            self.out.created += 1
        if self.out.created:
            created = f"created {self.out.created} runner(s)"
            self.out.conditions.setdefault("Scaling", ("True", "Created", created))

    def _registration_token(self) -> RegistrationMaterial | None:
        """One registration token for every runner created in this sync (token mode)."""
        try:
            token = self.github.registration_token(self.scope)
        except GitHubError as error:
            self._registration_failed(error)
            return None
        return RegistrationMaterial(token=token.token, expires_at=token.expires_at)

    def _jit_material(self, runner_name: str) -> RegistrationMaterial | None:
        """A just-in-time config for one new runner: a registration of its own, so no pod of
        this set ever holds a token that could register others."""
        spec = self.spec
        try:
            group_id = runner_group_id(self.github, self.scope, spec.group)
            config = self.github.generate_jit_config(
                self.scope,
                runner_name,
                jit_labels(spec.labels, self.node_selector),
                group_id,
                spec.work_dir or "_work",
            )
        except ConflictError:
            # Registered already: a config generated by a sync whose answer was lost. Remove
            # it (it never ran) and generate again on the next sync.
            check = remove_leftover_registration(
                self.github, self.scope, runner_name, None, self.deps.timing
            )
            message = f"{runner_name} is registered on GitHub already; removing it first"
            self.out.conditions["Scaling"] = ("False", "NameConflict", message)
            self.out.wait(check.retry_after if not check.done else RELEASE_RESYNC_SECONDS)
            return None
        except GitHubError as error:
            self._registration_failed(error)
            return None
        return RegistrationMaterial(
            jit_config=config.encoded_jit_config, runner_id=config.runner.id
        )

    def _registration_failed(self, error: GitHubError) -> None:
        retry = (
            error.retry_after
            if isinstance(error, RateLimitedError)
            else self.deps.settings.token_error_retry_delay
        )
        self.out.wait(retry)
        self.out.conditions["Scaling"] = ("False", "RegistrationFailed", str(error))

    def _refresh_token(self, member: _Member) -> None:
        """A runner not started yet needs a token that outlasts its start."""
        material = member.material
        lost = member.secret is None  # deleted by hand: the pod cannot start without it
        if not lost and (not material.token or material.token_usable(self.now)):
            return
        try:
            token = self.github.registration_token(self.scope)
        except GitHubError:
            return  # tried again on the next sync; an expired token only fails that start
        member.new_material = RegistrationMaterial(token=token.token, expires_at=token.expires_at)

    def _recreation_hold(self) -> float | None:
        """ARC #1180, as for RunnerReplicaSets: with webhook scaling (effectiveTime set), an
        ephemeral set does not create runners again within 10 minutes of its last creation
        when that creation is newer than effectiveTime."""
        effective = parse_optional_time(self.effective_time)
        if effective is None or self.spec.ephemeral is False:
            return None
        created = [
            parse_optional_time(
                ((m.sts.get("metadata") or {}).get("annotations") or {}).get(SYNC_TIME_ANNOTATION)
            )
            for m in self.members
        ]
        times = [t for t in created if t is not None]
        last = max(times) if times else None
        if last is None or last <= effective:
            return None
        remaining = (last + RECREATION_DELAY - self.now).total_seconds()
        return remaining if remaining > 0 else None

    def _next_index(self) -> int:
        recorded = self.status.next_runner_index or 0
        # A counter outside what names hold is not one this hook wrote: count from the members.
        index = recorded if 0 <= recorded < MAX_RUNNER_INDEX else 0
        prefix = self._runner_prefix()
        for member in self.members:
            suffix = member.name.removeprefix(prefix)
            if suffix != member.name and BASE36_NAME.fullmatch(suffix):
                index = max(index, int(suffix, 36) + 1)
        return index

    def _runner_prefix(self) -> str:
        """`<set>-<uid tag>`, the set's name cut so that StatefulSet names stay short enough
        for their pods (the `controller-revision-hash` label, `<name>-<10 chars>`, must fit
        in 63 characters) with counters of up to 7 characters."""
        name = self.name[:MAX_SET_NAME_IN_RUNNER_NAMES].rstrip("-.")
        return f"{name}-{uid_tag(self.runner_set.metadata.uid)}"

    def _free_slots(self) -> Iterator[int]:
        """Volume slots no runner holds, lowest first (a slot is held until its pod is gone)."""
        held = {m.slot for m in self.members if m.slot is not None and m.keep}
        for pod in self.request.objects("Pod", related=True):
            slot = observed_int((pod["metadata"].get("labels") or {}).get(VOLUME_SLOT_LABEL))
            if slot is not None:
                held.add(slot)
        slot = 0
        while True:
            if slot not in held:
                yield slot
            slot += 1

    # --------------------------------------------------------------- the answer

    def _respond(self, *, finalized: bool | None) -> CompositeHookResponse:
        children: list[KubeObject] = []
        for member in self.members:
            if not member.keep:
                continue
            children.append(self._statefulset_child(member))
            if member.secret is not None or member.new_material is not None:
                material = member.new_material or member.material
                children.append(registration_secret(self.runner_set, member.name, material))
        children += [as_kept(claim) for claim in self.request.objects("PersistentVolumeClaim")]
        children += self.out.new_children
        resync = min(self.out.resync) if self.out.resync else None
        return CompositeHookResponse(
            status=self._status(),
            children=children,
            resync_after_seconds=resync,
            finalized=finalized,
        )

    def _statefulset_child(self, member: _Member) -> KubeObject:
        child = as_kept(member.sts)
        if member.terminating:
            return child
        annotations = dict(child["metadata"]["annotations"])
        if member.stop is not None:
            annotations[GRACEFUL_STOP_ANNOTATION] = json.dumps(
                member.stop.to_wire(), sort_keys=True, separators=(",", ":")
            )
        child["metadata"] = {**child["metadata"], "annotations": annotations}
        if member.release and not member.scaled_to_zero:
            child["spec"] = {**(child.get("spec") or {}), "replicas": 0}
        return child

    def _status(self) -> dict[str, Any]:
        kept = [m for m in self.members if m.keep and not m.terminating]
        active = [m for m in kept if m.stop is None]
        ready = [m for m in active if m.pod is not None and m.pod.ready]
        status = RunnerSetStatus(
            replicas=len(kept) + self.out.created,
            ready_replicas=len(ready),
            available_replicas=len(ready),
            updated_replicas=sum(1 for m in active if m.template_hash == self.hash)
            + self.out.created,
            desired_replicas=self.desired,
            registered_replicas=sum(
                1 for m in active if m.github_runner is not None and m.github_runner.online
            ),
            # Runners stopping while busy count too: their jobs still hold them.
            busy_replicas=sum(1 for m in kept if m.busy),
            next_runner_index=self._next_index() + self.out.created,
            conditions=merge_conditions(self.status.conditions, self.out.conditions, self.now),
        )
        return status.to_wire()


# ------------------------------------------------------------------ parsing and invalid input


def _parse(request: CompositeHookRequest, deps: HookDeps) -> tuple[RunnerSet | None, list[str]]:
    try:
        runner_set = RunnerSet.model_validate(request.parent)
    except ValidationError as error:
        return None, [describe_validation_error(error, "RunnerSet")]
    if runner_set.spec is None:
        return runner_set, ["spec is required"]
    return runner_set, _spec_problems(runner_set, jit=_jit(runner_set, deps))


def _jit(runner_set: RunnerSet, deps: HookDeps) -> bool:
    mode = deps.settings.runner_registration_mode
    return registration_mode(runner_set.metadata.annotations, mode) == "jit"


def _spec_problems(runner_set: RunnerSet, *, jit: bool) -> list[str]:
    spec = runner_set.spec
    assert spec is not None
    names = [object_or_empty(t.get("metadata")).get("name") for t in spec.volume_claim_templates]
    claimed = [name for name in names if isinstance(name, str) and name]
    try:
        as_runner = runner_spec(runner_set)
    except ValidationError as error:
        # The pod template's parts carry into the runner's spec, typed there.
        return [describe_validation_error(error, "RunnerSet spec.template.spec")]
    problems = validate_runner_spec(
        as_runner, jit=jit, metadata=_template_metadata(spec), claimed_volumes=claimed
    )
    if spec.replicas is not None and spec.replicas < 0:
        problems.append("spec.replicas must not be negative")
    if len(claimed) != len(names):
        problems.append("spec.volumeClaimTemplates: every template needs metadata.name")
    return problems


def _template_metadata(spec: RunnerSetSpec) -> ObjectMeta:
    """The labels and annotations the pod template gives every runner pod."""
    template = spec.template.metadata
    return ObjectMeta(
        name="runner", labels=dict(template.labels), annotations=dict(template.annotations)
    )


def _invalid(
    request: CompositeHookRequest, problems: list[str], now: datetime
) -> CompositeHookResponse:
    """An invalid RunnerSet keeps every child as it is and gets nothing new."""
    kept = [as_kept(obj) for kind in CHILD_KINDS for obj in request.objects(kind)]
    return CompositeHookResponse(
        status=invalid_status(request.parent, problems, now), children=kept
    )


def _finalize_unreadable(
    request: CompositeHookRequest, problems: list[str], now: datetime
) -> CompositeHookResponse:
    """Without a readable spec there is no scope to unregister in: the StatefulSets go, and
    the runner-pod decorator removes each pod's registration (the pod's env names its scope)."""
    pods = request.objects("Pod", related=True)
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


def _observed_status(parent: KubeObject) -> RunnerSetStatus:
    raw = parent.get("status")
    if not isinstance(raw, dict):
        return RunnerSetStatus()
    try:
        return RunnerSetStatus.model_validate(raw)
    except ValidationError:
        return RunnerSetStatus()


MAX_RUNNER_INDEX = 36**7
"""Counters have at most 7 base-36 digits (see `_runner_prefix`)."""


def _descending(timestamp: str) -> str:
    """Sorts RFC 3339 timestamps newest first (they compare as text)."""
    return "".join(chr(0x10FFFF - ord(c)) for c in timestamp)


def routes(deps: HookDeps) -> list[HookRoute]:
    return [
        HookRoute("/sync/runnerset", HookKind.COMPOSITE, partial(sync_runner_set, deps=deps), True),
        HookRoute(
            "/finalize/runnerset",
            HookKind.COMPOSITE,
            partial(finalize_runner_set, deps=deps),
            True,
        ),
        HookRoute("/customize/runnerset", HookKind.CUSTOMIZE, customize_runner_set),
    ]
