"""What a Runner's sync and finalize decide: pure, from `RunnerFacts` and GitHub's answers.

The pod is an OnDelete child: kept while it serves, left out of the children only once the
graceful stop let it go (Metacontroller deletes it then), and a fresh one is returned once the
old one is gone and any registration it left is removed. The registration Secret is written
with the pod that reads it. The result, a `RunnerPlan`, is what the controller answers with.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from datetime import datetime

from hooks.children import ConditionValue, as_kept, problems_message
from hooks.clock import format_time, parse_optional_time
from hooks.events import LifecycleEvent
from hooks.github.port import (
    ConflictError,
    GitHubError,
    GitHubRunner,
    RunnerListing,
    Scope,
    credible_report_time,
)
from hooks.lifecycle.graceful_stop import (
    BUSY_MESSAGE,
    StopSubject,
    StopTiming,
    begin_stop,
    tick_graceful_stop,
)
from hooks.lifecycle.incarnation import (
    failure_backoff,
    new_jit_config,
    new_token,
    next_list_wait,
    registration_checks,
    registration_timed_out,
    retry_delay,
    steady_watch_wait,
)
from hooks.lifecycle.leftover import LeftoverCheck, remove_leftover_registration
from hooks.lifecycle.steps import Answers, ListRunners, RemoveRunner, Step
from hooks.metacontroller import KubeObject, observed_time
from hooks.resources.runner import GracefulStopStatus, Runner, RunnerStatus
from hooks.runner.container_mode import ObservedAccount, service_account_ready
from hooks.runner.observed_pod import ObservedPod, literal_env
from hooks.runner.parse import ParsedRunner, registered_scope
from hooks.runner.pod import POD_TEMPLATE_HASH_LABEL, jit_work_folder
from hooks.runner.registration import RegistrationMaterial
from hooks.settings import Settings

NAME_CONFLICT_PATIENCE = 30.0
"""How long a JIT config's name found registered is left alone before the registration is
removed: longer than Metacontroller's caches lag, so that it is not this Runner's own config
whose Secret and pod are on their way."""

RELEASE_RESYNC_SECONDS = 5.0
"""After a step that no event of the Runner's own children follows, look again soon."""

FAILURE_ROW_RESET_SECONDS = 600.0
"""A runner container that ran this long before it failed starts a new row of failures."""

POD_GONE_RESYNC_SECONDS = 30.0
"""After releasing a pod: its deletion and its removal are changes of a child, which call the
hook at once; this look is the safety net only. (At 5 s, a thousand terminating pods cost
two hundred hook calls a second that change nothing.)"""


@dataclass(frozen=True, slots=True)
class RunnerFacts:
    """Everything a Runner's decision reads, gathered from the hook request."""

    parsed: ParsedRunner  # its runner is set
    scope: Scope  # where the spec registers its runner
    status: RunnerStatus  # as last written
    pod_object: KubeObject | None
    pod: ObservedPod | None
    account: ObservedAccount
    secret_observed: bool
    material: RegistrationMaterial  # what the observed Secret holds
    now: datetime
    settings: Settings
    timing: StopTiming
    conditions: dict[str, ConditionValue] = field(default_factory=dict)  # known up front

    @property
    def runner(self) -> Runner:
        assert self.parsed.runner is not None
        return self.parsed.runner


@dataclass(slots=True)
class RunnerPlan:
    """The decision: which pod and Secret the Runner has, what its status says, when to look
    again. Built by one decision call, read by the controller."""

    scope: Scope
    stop: GracefulStopStatus | None
    failures: int
    last_failure_time: str | None
    runner_id: int | None
    jit_config_time: str | None = None  # when runner_id's config was generated (JIT)
    pod: KubeObject | None = None
    secret: RegistrationMaterial | None = None  # write the Secret with this
    resync: list[float] = field(default_factory=list)
    conditions: dict[str, ConditionValue] = field(default_factory=dict)
    phase: str | None = None
    github_runner: GitHubRunner | None = None
    # When GitHub listed what `github_runner` reports (None: nothing listed, or not known).
    github_listed_at: datetime | None = None
    events: list[LifecycleEvent] = field(default_factory=list)
    finalized: bool | None = None

    def event(self, reason: str, message: str, *, warning: bool = False) -> None:
        self.events.append(LifecycleEvent(reason, message, warning))

    def wait(self, seconds: float | None) -> None:
        if seconds is not None and seconds > 0:
            self.resync.append(seconds)

    def condition(self, kind: str, status: bool, reason: str, message: str = "") -> None:
        self.conditions[kind] = ("True" if status else "False", reason, message)


def stop_scope(facts: RunnerFacts) -> Scope | None:
    """Where the runner to stop is registered: as its pod's env names it (the pod's runner went
    there, whatever the spec says since), or as status recorded it, or else as a valid spec
    says; None when nothing says (nothing was registered)."""
    pod_scope = facts.pod.scope if facts.pod is not None else None
    spec_scope = None if facts.parsed.problems else facts.scope
    return pod_scope or registered_scope(facts.status) or spec_scope


def next_certain_question(facts: RunnerFacts, github: Answers, *, finalizing: bool) -> Step | None:
    """The question the decision is sure to ask next, known without running it: the runner
    list of its scope when a running pod is watched (sync) or its stop begins without a known
    runner id (finalize), and then, in finalize, the DELETE of the runner that list names.
    Exact, never a guess: a question asked for nothing could cost a GitHub call."""
    pod, stop = facts.pod, facts.status.graceful_stop
    if pod is None or (stop is not None and stop.pod_uid == pod.uid):
        return None
    if not finalizing:
        return ListRunners(stop_scope(facts) or facts.scope)
    scope = stop_scope(facts)
    known_id = facts.parsed.jit and facts.material.runner_id is not None
    if scope is None or pod.stopped or known_id:
        return None
    listing = github.answer_to(ListRunners(scope))
    if listing is None:
        return ListRunners(scope)
    name = registered_name(facts, facts.pod_object)
    found = (
        RunnerListing.of(listing).named(name)
        if isinstance(listing, RunnerListing | tuple)
        else None
    )
    return RemoveRunner(scope, found.id) if found is not None else None


def registered_name(facts: RunnerFacts, pod: KubeObject | None) -> str:
    """The name the runner of `pod` registers under: the Runner's, unless the runner
    container's env sets `RUNNER_NAME` in token mode (the pod builder keeps the user's, as ARC
    does; a JIT config carries the Runner's name whatever the env says)."""
    name = facts.runner.metadata.name
    if facts.parsed.jit or pod is None:
        return name
    return literal_env(pod, "RUNNER_NAME") or name


def decide_sync(facts: RunnerFacts, github: Answers) -> RunnerPlan:
    return _Decision(facts, github).sync()


def decide_finalize(facts: RunnerFacts, github: Answers) -> RunnerPlan:
    return _Decision(facts, github).finalize()


def _spec_changed_since_last_sync(facts: RunnerFacts) -> bool:
    """The Runner's spec changed since the status was written: Metacontroller records the
    generation it synced in `status.observedGeneration`."""
    observed = facts.status.observed_generation
    return observed is not None and facts.runner.metadata.generation > observed


class _Decision:
    """One decision; its state lives only as long as the call."""

    def __init__(self, facts: RunnerFacts, github: Answers) -> None:
        self.facts = facts
        self.github = github
        self.runner = facts.runner
        self.name = facts.runner.metadata.name
        self.pod = facts.pod
        self.github_unavailable = False
        self.github_outdated = False
        self.list_fresh_until: datetime | None = None  # until when the list looked in is served
        status = facts.status
        self.out = RunnerPlan(
            # The current pod's runner, or the one whose stop goes on, is looked for where it
            # registered; a new pod registers where the spec says (`_start_pod`).
            scope=stop_scope(facts) or facts.scope,
            stop=status.graceful_stop,
            failures=status.failures or 0,
            last_failure_time=status.last_failure_time,
            runner_id=status.runner_id,
            jit_config_time=status.jit_config_time,
            conditions=dict(facts.conditions),
        )
        if facts.secret_observed:
            self.out.secret = facts.material

    # ----------------------------------------------------------------- sync

    def sync(self) -> RunnerPlan:
        out, pod = self.out, self.pod
        out.condition("Valid", True, "Valid")
        if out.failures and _spec_changed_since_last_sync(self.facts):
            # A spec edited after its pods failed (a fixed image, say) is tried at once, in a
            # new row of failures: the backoff, up to half an hour, was for the old spec. (Not
            # in finalize: the API server moves the generation when it marks a deletion.)
            out.failures, out.last_failure_time = 0, None
        if out.stop is not None and pod is not None and out.stop.pod_uid != pod.uid:
            # A new pod runs: the previous incarnation's stop and registration are history.
            out.stop = None
            out.runner_id = self.facts.material.runner_id if self.facts.parsed.jit else None
        if pod is not None and out.stop is None:
            self._watch_running_pod()
        if out.stop is not None and (not self._advance_stop() or self._incarnation_ends()):
            return out  # stopping, or nothing new to start now
        if self.pod is None:
            self._start_pod()
        return out

    def _watch_running_pod(self) -> None:
        """Keep the pod, or start a graceful stop when it must be replaced."""
        self.out.pod = self._desired_pod()
        found = self._look_up_runner()
        reason = self._replacement_reason(found)
        if reason is None:
            checks = registration_checks(
                self.pod, found, self.facts.now, self.facts.settings, self.list_fresh_until
            )
            for wait in checks:
                self.out.wait(wait)
            return
        if reason == "PodFailed":
            # A runner that ran a while before it failed starts a new row of failures, as the
            # kubelet forgets a container's restart backoff after 10 minutes of running.
            ran = self.pod.runner_ran_seconds if self.pod is not None else None
            ran_a_while = ran is not None and ran >= FAILURE_ROW_RESET_SECONDS
            self.out.failures = 1 if ran_a_while else self.out.failures + 1
            self.out.last_failure_time = format_time(self.facts.now)
        elif reason == "RunnerCompleted":
            # It ran: the failures counted are no longer "in a row" (found in review: a
            # standalone Runner's failures added up over its whole life).
            self.out.failures, self.out.last_failure_time = 0, None
        self.out.stop = begin_stop(reason, self._stop_subject(), self.facts.now)

    def _replacement_reason(self, found: GitHubRunner | None) -> str | None:
        pod = self.pod
        assert pod is not None
        if pod.completed:
            return "RunnerCompleted"
        if pod.failed:
            return "PodFailed"
        if pod.terminating:
            return "PodDeleted"
        if self.github_unavailable or self.github_outdated:
            return None  # busy or registered is unknown: decide on a later sync
        desired = (self.out.pod or {}).get("metadata", {}).get("labels", {})
        outdated = pod.labels.get(POD_TEMPLATE_HASH_LABEL) != desired.get(POD_TEMPLATE_HASH_LABEL)
        if outdated and not (found is not None and found.busy):
            return "TemplateChanged"
        timeout = self.facts.settings.registration_timeout
        if registration_timed_out(pod, found, self.facts.now, timeout, self.out.github_listed_at):
            return "RegistrationTimeout"
        return None

    def _advance_stop(self) -> bool:
        """Tick the graceful stop. True once the pod may go (and is gone from children)."""
        out = self.out
        assert out.stop is not None
        if self.pod is not None and out.pod is None:
            out.pod = self._desired_pod()
        tick = tick_graceful_stop(
            self._stop_subject(), out.stop, self.github, self.facts.now, self.facts.timing
        )
        out.stop = stop = tick.state
        out.condition("Stopping", not tick.done, stop.reason, stop.message)
        if not tick.done:
            out.wait(tick.retry_after)
            if stop.waiting_for_completion or stop.message == BUSY_MESSAGE:
                out.event(
                    "UnregistrationWaiting",
                    "The runner is running a job: unregistering once it ends",
                )
            return False
        if self.pod is not None:
            out.pod = None  # released: Metacontroller deletes it
            out.event("PodDeleted", f"Deleted pod '{self.name}' ({stop.reason}, {stop.outcome})")
            out.wait(POD_GONE_RESYNC_SECONDS)
            return False
        return True

    def _incarnation_ends(self) -> bool:
        """The stopped pod is gone. True when no new pod should be started now."""
        out = self.out
        assert out.stop is not None
        owned_by_replica_set = self.runner.metadata.controller_owner_kind() == "RunnerReplicaSet"
        if out.stop.reason == "RunnerCompleted" and owned_by_replica_set:
            # The RunnerReplicaSet removes and replaces a completed ephemeral runner.
            out.phase = "Completed"
            return True
        settings = self.facts.settings
        if out.failures >= settings.pod_max_failures:
            # Failed, not given up: a pool recovers by itself once the cause is fixed (ARC
            # replaces such a runner at once, without limit; a crash-looping pod keeps trying).
            out.phase = "Failed"
            wait = f"{failure_backoff(out.failures, settings):g}"
            message = f"the runner pod failed {out.failures} times in a row; next pod in {wait} s"
            out.condition("Failed", True, "TooManyPodFailures", message)
        # A replacement pod registers under the same name: nothing may be left with it.
        return out.stop.outcome != "Unregistered" and not self._removed_after_stop(out.stop)

    def _removed_after_stop(
        self, stop: GracefulStopStatus, *, fresh: bool = False, finalizing: bool = False
    ) -> bool:
        """Whatever registration the stopped runner left is gone (or a retry is scheduled and
        the Stopping condition says why). `fresh`: asked of GitHub now, not of a cached list.
        A stop that had not completed when the pod went (it was waiting for the runner to
        register, say) has no time the runner stopped at, and a cached list may predate the
        registration: GitHub is asked anew then too."""
        completed_at = parse_optional_time(stop.completed_at)
        stopped_at = self.facts.now if fresh or completed_at is None else completed_at
        # A Runner being deleted, whose runner stopped at a known time, can wait for the
        # scope's next list (no new pod waits for it).
        patient = finalizing and not fresh and completed_at is not None
        # A Runner being deleted starts no next pod: every registration under its name goes.
        keep = None if finalizing else self._next_config_id(stop)
        check = self._remove_registration(stopped_at, patient=patient, keep=keep)
        if not check.done:
            self.out.wait(check.retry_after)
            message = f"removing the registration the runner left: {check.message}"
            self.out.condition("Stopping", True, "RemovingRegistration", message)
        return check.done

    def _start_pod(self) -> None:
        out, facts = self.out, self.facts
        failed_at = observed_time(out.last_failure_time) if out.failures else None
        if failed_at is not None and failed_at <= facts.now:  # unreadable or ahead: none
            elapsed = (facts.now - failed_at).total_seconds()
            remaining = failure_backoff(out.failures, facts.settings) - elapsed
            if remaining > 0:
                out.phase = (
                    "Failed" if out.failures >= facts.settings.pod_max_failures else "Pending"
                )
                out.wait(remaining)
                return
        if not service_account_ready(self.runner, facts.account):
            # Kubernetes mode: the API server refuses a pod whose service account is not there
            # yet; it is in this answer, and its creation calls the hook again.
            out.phase = "Pending"
            out.wait(RELEASE_RESYNC_SECONDS)
            return
        # The new pod registers where the spec says. Status records that scope once there is
        # a token or config for it: a failed request leaves the old one recorded, so the next
        # try does not take the Secret's token (of the old scope) for one of the new.
        before, out.scope = out.scope, facts.scope
        material = self._ensure_jit_config() if facts.parsed.jit else self._ensure_token()
        if material is None:
            out.scope = before
            return
        out.pod = self._desired_pod()
        out.phase = "Created"
        out.condition("Failed", False, "PodCreated")
        out.event("PodCreated", f"Created pod '{self.name}'")

    def _ensure_token(self) -> RegistrationMaterial | None:
        """The Secret's token when a new pod can use it; otherwise a fresh one, written to the
        Secret in the same answer (the kubelet waits for a Secret a pod references)."""
        registered = registered_scope(self.facts.status)
        same_scope = registered is None or registered == self.out.scope
        if same_scope and self.facts.material.token_usable(self.facts.now):
            return self.facts.material  # (a token of another scope would not register here)
        try:
            material = new_token(self.github, self.out.scope)
        except GitHubError as error:
            self._registration_failed(error)
            return None
        self.out.secret = material
        self.out.condition("RegistrationReady", True, "RegistrationTokenUpdated")
        self.out.event("RegistrationTokenUpdated", "Successfully updated the registration token")
        return material

    def _ensure_jit_config(self) -> RegistrationMaterial | None:
        out, material = self.out, self.facts.material
        consumed_id = out.stop.runner_id if out.stop is not None else None
        if material.jit_config and material.runner_id and material.runner_id != consumed_id:
            out.runner_id = material.runner_id
            return material
        generated_at = None
        if not self.facts.secret_observed and self.facts.status.runner_id != consumed_id:
            generated_at = self._config_generated_at()
        if generated_at is not None and self._within_patience(generated_at):
            # A sync moments ago generated a config (status records its runner id) whose
            # Secret and pod this sync does not see yet (Metacontroller's caches lag): asking
            # again would meet it as a name conflict, one wasted call per new runner.
            out.wait(RELEASE_RESYNC_SECONDS)
            return None
        spec = self.runner.spec
        scale_set_id = self.facts.parsed.scale_set_id
        try:
            if scale_set_id is not None:
                config = self.github.scale_set_jit_config(
                    out.scope, scale_set_id, self.name, jit_work_folder(spec)
                )
                material = RegistrationMaterial(
                    jit_config=config.encoded_jit_config, runner_id=config.runner.id
                )
            else:
                material = new_jit_config(
                    self.github,
                    out.scope,
                    self.name,
                    labels=spec.labels,
                    node_selector=spec.node_selector,
                    group=spec.group,
                    work_folder=jit_work_folder(spec),
                )
        except ConflictError:
            # The name is registered already: most often by the config a sync made moments
            # ago, whose Secret and pod this sync does not see yet (Metacontroller's caches
            # lag, and two syncs of one Runner can overlap); else by a sync whose answer was
            # lost, or a leftover. Removing it at once took the fresh config from under its
            # pod, which then failed. So only once the conflict has stood a while: then the
            # registration is removed when idle, and a config generated again next sync.
            message = "a runner with this name is registered on GitHub; removing it first"
            out.condition("RegistrationReady", False, "NameConflict", message)
            # A config generated that long ago and never seen is as good as a conflict that
            # stood that long: its answer was lost.
            since = self._name_conflict_since() or generated_at
            if since is None or self._within_patience(since):
                out.wait(RELEASE_RESYNC_SECONDS)
                return None
            check = self._remove_registration()
            out.wait(check.retry_after if not check.done else RELEASE_RESYNC_SECONDS)
            return None
        except GitHubError as error:
            self._registration_failed(error)
            return None
        out.runner_id = material.runner_id
        out.jit_config_time = format_time(self.facts.now)
        out.secret = material
        out.condition("RegistrationReady", True, "JitConfigGenerated")
        out.event("JitConfigGenerated", f"Registered runner {material.runner_id} just in time")
        return material

    def _within_patience(self, since: datetime) -> bool:
        return (self.facts.now - since).total_seconds() < NAME_CONFLICT_PATIENCE

    def _config_generated_at(self) -> datetime | None:
        """When the config of the runner id status reports was generated, as status records
        it (not a condition's transition time: a condition already true keeps its time when
        a later config is generated, found in review)."""
        status = self.facts.status
        if status.runner_id is None:
            return None
        generated = observed_time(status.jit_config_time)
        return generated if generated is not None and generated <= self.facts.now else None

    def _name_conflict_since(self) -> datetime | None:
        """Since when status has reported the name registered by someone else, if it does."""
        for condition in self.facts.status.conditions:
            if (condition.type, condition.status, condition.reason) == (
                "RegistrationReady",
                "False",
                "NameConflict",
            ):
                since = observed_time(condition.last_transition_time)
                return since if since is not None and since <= self.facts.now else None
        return None

    def _registration_failed(self, error: GitHubError) -> None:
        out = self.out
        out.condition("RegistrationReady", False, "RegistrationFailed", str(error))
        out.event("FailedUpdateRegistrationToken", f"Registration failed: {error}", warning=True)
        out.phase = out.phase or "Pending"
        out.wait(retry_delay(error, self.facts.settings.token_error_retry_delay))

    # ------------------------------------------------------------- finalize

    def finalize(self) -> RunnerPlan:
        out, pod = self.out, self.pod
        problems = self.facts.parsed.problems
        if problems:
            out.condition("Valid", False, "InvalidSpec", problems_message(problems))
        scope = stop_scope(self.facts)
        if scope is None:
            # Nothing was ever registered for this Runner: only the pod has to go.
            out.finalized = pod is None
            if pod is not None:
                out.wait(POD_GONE_RESYNC_SECONDS)
            return out
        out.scope = scope
        if (
            out.stop is None
            or (pod is not None and out.stop.pod_uid != pod.uid)
            or (pod is None and self._next_config_id(out.stop) is not None)
        ):
            # An earlier pod's stop says nothing about this one, nor about the config
            # generated for a next pod not seen yet: that registration is stopped now.
            out.stop = None
            out.stop = begin_stop("RunnerDeleted", self._stop_subject(), self.facts.now)
        if pod is not None:
            self._advance_stop()
            out.finalized = False
        else:
            # A JIT registration exists from the sync that generated its config: when neither
            # its Secret nor status shows it (that sync's answer not seen yet), a list cached
            # before it would miss it, so GitHub is asked by name.
            unknown_jit = self.facts.parsed.jit and self._known_runner_id() is None
            out.finalized = out.stop.outcome == "Unregistered" or self._removed_after_stop(
                out.stop, fresh=unknown_jit, finalizing=True
            )
        return out

    # --------------------------------------------------------------- GitHub

    def _stop_subject(self) -> StopSubject:
        pod = self.pod
        ephemeral = self.runner.spec.ephemeral is not False
        return StopSubject(
            scope=self.out.scope,
            runner_name=self.registered_name,
            runner_id=self._known_runner_id(),
            pod=pod,
            ephemeral=pod.ephemeral if pod is not None else ephemeral,
            last_seen_busy=self._last_seen_busy(),
        )

    def _last_seen_busy(self) -> bool:
        """The list this sync read, else what status last mirrored of one."""
        found = self.out.github_runner
        return found.busy if found is not None else bool(self.facts.status.busy)

    @functools.cached_property
    def registered_name(self) -> str:
        facts = self.facts
        if facts.parsed.jit or (facts.pod_object is None and facts.parsed.problems):
            return self.name  # an invalid spec builds no pod to read the env of
        pod = facts.pod_object if facts.pod_object is not None else self._desired_pod()
        return registered_name(facts, pod)

    def _known_runner_id(self) -> int | None:
        """The registration of the current pod, when known for sure. A runner id recorded in
        status may belong to an earlier pod with the same name (token mode), so it is not used:
        deleting a stale id would answer 404 and let a live runner's pod go."""
        out = self.out
        if out.stop is not None and out.stop.runner_id is not None:
            return out.stop.runner_id
        if self.facts.parsed.jit and self.facts.material.runner_id is not None:
            recorded = self.facts.status.runner_id
            if recorded is not None and recorded != self.facts.material.runner_id:
                # Status and Secret name different registrations: an earlier copy of the
                # Secret written back, or one sync's answer half seen. Neither is sure: the
                # name is asked for (a registration left under it would leak).
                return None
            return self.facts.material.runner_id
        if out.github_runner is not None:
            return out.github_runner.id
        return None

    def _look_up_runner(self) -> GitHubRunner | None:
        out = self.out
        try:
            listing = self.github.list_runners(out.scope)
        except GitHubError as error:
            self.github_unavailable = True
            out.condition("Registered", False, "GitHubUnavailable", str(error))
            out.wait(retry_delay(error, self.facts.settings.sync_period))
            return None
        found = listing.named(self.registered_name)
        # Busy and online change only with a new list: look again once there is one, or,
        # once they have held a while, less often (`steady_watch_wait`).
        list_wait = next_list_wait(listing.fresh_until, self.facts.now, self.facts.settings)
        out.wait(steady_watch_wait(list_wait, self._steady_for(found)))
        self.list_fresh_until = listing.fresh_until
        if listing.older_than(self._reported_at):
            # Replicas list at different moments: status already reports a newer list (one
            # that may know this registration removed, or its job ended). Reporting this one
            # would turn status back, and another replica's answer forth again.
            self.github_outdated = True
            return found
        out.github_runner = found
        out.github_listed_at = listing.asked_at
        if found is None:
            out.condition("Registered", False, "NotRegistered", "not registered on GitHub")
        else:
            out.runner_id = found.id
            online = "online" if found.online else "offline"
            out.condition("Registered", found.online, f"Runner{online.title()}", online)
        return found

    def _steady_for(self, found: GitHubRunner | None) -> float:
        """How long status has reported what `found` says, online, of a pod Kubernetes
        reports ready (0: not so, or not known). A pod not ready (its node stopped reporting,
        a probe failing) may be losing its runner: each list is looked at."""
        status = self.facts.status
        if found is None or not found.online or self.pod is None or not self.pod.ready:
            return 0.0
        if (found.id, found.online, found.busy) != (status.runner_id, status.online, status.busy):
            return 0.0
        since = self._reported_at
        return max((self.facts.now - since).total_seconds(), 0.0) if since else 0.0

    @functools.cached_property
    def _reported_at(self) -> datetime | None:
        """When GitHub listed what status reports, unless that is not credible."""
        recorded = parse_optional_time(self.facts.status.last_registration_check_time)
        return credible_report_time(recorded, self.facts.now)

    def _remove_registration(
        self, stopped_at: datetime | None = None, *, patient: bool = False, keep: int | None = None
    ) -> LeftoverCheck:
        return remove_leftover_registration(
            self.github,
            self.out.scope,
            self.registered_name,
            self.facts.timing,
            stopped_at=stopped_at,
            now=self.facts.now if patient else None,
            keep=keep,
        )

    def _next_config_id(self, stop: GracefulStopStatus) -> int | None:
        """The registration of the config generated for the next pod, under the same name
        (JIT registers at generation): not the stopped runner's leftover. A sync that does not
        see the next pod yet looked it up by name and removed it, so that pod failed (found in
        review: a standalone ephemeral JIT Runner failed after a few jobs)."""
        if not self.facts.parsed.jit:
            return None
        for candidate in (self.facts.material.runner_id, self.facts.status.runner_id):
            if candidate is not None and candidate != stop.runner_id:
                return candidate
        return None

    def _desired_pod(self) -> KubeObject:
        if self.facts.parsed.problems and self.facts.pod_object is not None:
            return as_kept(self.facts.pod_object)  # an invalid spec builds nothing new
        return self.facts.parsed.pod()
