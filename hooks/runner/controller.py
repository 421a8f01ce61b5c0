"""The Runner controller: what `/sync/runner` and `/finalize/runner` answer.

Pure logic over the hook request, the GitHub port, the settings and a clock. Children: the
runner Pod (OnDelete: we decide ourselves when it is replaced) and the registration Secret
(InPlace), and in kubernetes container mode the Runner's own ServiceAccount, Role and
RoleBinding (InPlace, `hooks.runner.container_mode`). A pod is only ever removed from the
children after the graceful stop says so.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from functools import partial
from typing import Any

import orjson
from pydantic import ValidationError

from hooks.children import (
    as_kept,
    describe_validation_error,
    invalid_status,
    label_value,
    merge_conditions,
)
from hooks.clock import Clock, format_time, parse_optional_time, parse_time
from hooks.deps import HookDeps
from hooks.events import LifecycleEvent
from hooks.github.credentials import (
    CREDENTIALS_CONDITION,
    credentials_condition,
    credentials_rules,
    requested_credentials,
    spec_secret_name,
)
from hooks.github.port import (
    ConflictError,
    GitHubError,
    GitHubRunner,
    RateLimitedError,
    Scope,
)
from hooks.metacontroller import (
    CompositeHookRequest,
    CompositeHookResponse,
    HookKind,
    HookRoute,
    KubeObject,
    object_or_empty,
)
from hooks.resources.runner import (
    GracefulStopStatus,
    Runner,
    RunnerStatus,
    RunnerStatusRegistration,
)
from hooks.runner.container_mode import (
    SERVICE_ACCOUNT_KINDS,
    observe_account,
    pod_service_account,
    service_account_children,
    service_account_ready,
)
from hooks.runner.graceful_stop import (
    BUSY_MESSAGE,
    LeftoverCheck,
    StopSubject,
    StopTick,
    begin_stop,
    find_runner,
    remove_leftover_registration,
    tick_graceful_stop,
)
from hooks.runner.observed_pod import ObservedPod, observe_pod
from hooks.runner.pod import POD_TEMPLATE_HASH_LABEL, PodDefaults, build_runner_pod
from hooks.runner.registration import (
    RegistrationMaterial,
    jit_labels,
    read_material,
    registration_mode,
    runner_group_id,
    secret_data,
)
from hooks.runner.secret import registration_secret_name
from hooks.runner.validation import validate_runner_spec

RELEASE_RESYNC_SECONDS = 5.0
"""After releasing a pod, look again soon: its deletion event usually comes first."""


@dataclass
class _Outcome:
    """What this sync decided, turned into the response at the end."""

    pod: KubeObject | None = None
    secret: KubeObject | None = None
    secret_material: RegistrationMaterial | None = None  # what `secret` was written from
    resync: list[float] = field(default_factory=list)
    conditions: dict[str, tuple[str, str, str]] = field(default_factory=dict)
    phase: str | None = None
    github_runner: GitHubRunner | None = None
    runner_id: int | None = None
    events: list[LifecycleEvent] = field(default_factory=list)

    def event(self, reason: str, message: str, *, warning: bool = False) -> None:
        self.events.append(LifecycleEvent(reason, message, warning))

    def wait(self, seconds: float | None) -> None:
        if seconds is not None and seconds > 0:
            self.resync.append(seconds)

    def condition(self, kind: str, status: bool, reason: str, message: str = "") -> None:
        self.conditions[kind] = ("True" if status else "False", reason, message)


class _Parsed:
    """What the parent object and the settings alone determine: the Runner, the problems of
    its spec, its registration mode and, built on first use, its desired pod.

    Memoized by the exact parent and settings, so concurrent calls share it: nothing here is
    ever changed once built (the pod included: callers only read it and serialize it)."""

    __slots__ = ("_pod", "defaults", "jit", "problems", "runner")

    def __init__(
        self, runner: Runner | None, problems: tuple[str, ...], jit: bool, defaults: PodDefaults
    ) -> None:
        self.runner = runner
        self.problems = problems
        self.jit = jit
        self.defaults = defaults
        self._pod: KubeObject | None = None

    def pod(self) -> KubeObject:
        pod = self._pod
        if pod is None:
            assert self.runner is not None
            secret_name = registration_secret_name(self.runner.metadata.name)
            pod = build_runner_pod(
                self.runner,
                self.defaults,
                secret_name=secret_name,
                jit=self.jit,
                service_account=pod_service_account(self.runner),
            )
            self._pod = pod
        return pod


class _Sync:
    """One sync or finalize call for one Runner."""

    def __init__(self, request: CompositeHookRequest, parsed: _Parsed, deps: HookDeps):
        assert parsed.runner is not None
        runner = parsed.runner
        self.request = request
        self.parsed = parsed
        self.runner = runner
        self.deps = deps
        self.now = deps.clock.now()
        self.name = runner.metadata.name
        self.namespace = runner.metadata.namespace
        self.status = _observed_status(request.parent)
        self.secret_name = registration_secret_name(self.name)
        self.observed_pod = request.object_named("Pod", self.name)
        self.pod = observe_pod(self.observed_pod) if self.observed_pod else None
        self.account = observe_account(
            request.object_named("ServiceAccount", self.name), self.observed_pod
        )
        self.observed_secret = request.object_named("Secret", self.secret_name)
        self.material = read_material(self.observed_secret)
        self.jit = parsed.jit
        self.scope = _spec_scope(runner)
        self.stop = self.status.graceful_stop
        self.failures = self.status.failures or 0
        self.last_failure_time = self.status.last_failure_time
        self.out = _Outcome(runner_id=self.status.runner_id)
        self.github_unavailable = False
        credentials = requested_credentials(request, self.namespace, _credentials_secret(runner))
        self.github = deps.github_for(credentials)
        condition = credentials_condition(credentials)
        if condition is not None:
            self.out.condition(CREDENTIALS_CONDITION, *condition)

    # ----------------------------------------------------------------- sync

    def sync(self) -> CompositeHookResponse:
        if self.observed_secret:
            self._write_secret(self.material)
        self.out.condition("Valid", True, "Valid")
        if self.stop is not None and self.pod is not None and self.stop.pod_uid != self.pod.uid:
            # A new pod runs: the previous incarnation's stop and registration are history.
            self.stop = None
            self.out.runner_id = self.material.runner_id if self.jit else None
        if self.pod is not None and self.stop is None:
            self._watch_running_pod()
        if self.stop is not None:
            if not self._advance_stop():
                return self._respond()
            if self._incarnation_ends():
                return self._respond()
        if self.pod is None:
            self._start_pod()
        return self._respond()

    def _watch_running_pod(self) -> None:
        """Keep the pod, or start a graceful stop when it must be replaced."""
        assert self.pod is not None
        self.out.pod = self._desired_pod()
        github_runner = self._lookup_github_runner()
        reason = self._replacement_reason(github_runner)
        if reason is None:
            self._schedule_registration_checks(github_runner)
            return
        if reason == "PodFailed":
            self.failures += 1
            self.last_failure_time = format_time(self.now)
        self.stop = begin_stop(reason, self._stop_subject(), self.deps.clock)

    def _replacement_reason(self, github_runner: GitHubRunner | None) -> str | None:
        pod = self.pod
        assert pod is not None
        if pod.completed:
            return "RunnerCompleted"
        if pod.failed:
            return "PodFailed"
        if pod.terminating:
            return "PodDeleted"
        lookup_failed = self.github_unavailable
        busy = github_runner is not None and github_runner.busy
        desired_hash = (self.out.pod or {}).get("metadata", {}).get("labels", {})
        if (
            pod.labels.get(POD_TEMPLATE_HASH_LABEL) != desired_hash.get(POD_TEMPLATE_HASH_LABEL)
            and not busy
            and not lookup_failed
        ):
            return "TemplateChanged"
        if self._registration_timed_out(github_runner) and not lookup_failed:
            return "RegistrationTimeout"
        return None

    def _registration_timed_out(self, github_runner: GitHubRunner | None) -> bool:
        pod = self.pod
        if pod is None or pod.ready_since is None:
            return False
        if (self.now - pod.ready_since).total_seconds() < self.deps.settings.registration_timeout:
            return False
        return github_runner is None or not github_runner.online

    def _schedule_registration_checks(self, github_runner: GitHubRunner | None) -> None:
        pod = self.pod
        if pod is None or (github_runner is not None and github_runner.online):
            return
        settings = self.deps.settings
        self.out.wait(settings.registration_check_interval)
        if pod.ready_since is not None:
            elapsed = (self.now - pod.ready_since).total_seconds()
            self.out.wait(settings.registration_timeout - elapsed + 1)

    def _advance_stop(self) -> bool:
        """Tick the graceful stop. True once the pod may go (and is gone from children)."""
        assert self.stop is not None
        if self.pod is not None and self.out.pod is None:
            self.out.pod = self._desired_pod()
        tick = self._tick(self.stop)
        self.stop = tick.state
        self.out.condition("Stopping", not tick.done, self.stop.reason, self.stop.message)
        if not tick.done:
            self.out.wait(tick.retry_after)
            if self.stop.waiting_for_completion or self.stop.message == BUSY_MESSAGE:
                self.out.event(
                    "UnregistrationWaiting",
                    "The runner is running a job: unregistering once it ends",
                )
            return False
        if self.pod is not None:
            self.out.pod = None  # released: Metacontroller deletes it
            self.out.event(
                "PodDeleted", f"Deleted pod '{self.name}' ({self.stop.reason}, {self.stop.outcome})"
            )
            self.out.wait(RELEASE_RESYNC_SECONDS)
            return False
        return True

    def _incarnation_ends(self) -> bool:
        """The stopped pod is gone. True when no new pod should be started now."""
        assert self.stop is not None
        owned_by_replica_set = self.runner.metadata.controller_owner_kind() == "RunnerReplicaSet"
        if self.stop.reason == "RunnerCompleted" and owned_by_replica_set:
            # The RunnerReplicaSet removes and replaces a completed ephemeral runner.
            self.out.phase = "Completed"
            return True
        if self.failures >= self.deps.settings.pod_max_failures:
            self.out.phase = "Failed"
            self.out.condition(
                "Failed",
                True,
                "TooManyPodFailures",
                f"the runner pod failed {self.failures} times in a row",
            )
            return True
        return not self._leftover_registration_removed()

    def _leftover_registration_removed(self) -> bool:
        """A replacement pod registers under the same name: nothing may be left with it."""
        assert self.stop is not None
        if self.stop.outcome == "Unregistered":
            return True
        return self._removed_after_stop(self.stop)

    def _removed_after_stop(self, stop: GracefulStopStatus) -> bool:
        """Whatever registration the stopped runner left is gone (or a retry is scheduled and
        the Stopping condition says why)."""
        stopped_at = parse_optional_time(stop.completed_at)
        check = self._remove_registration(stop.runner_id, stopped_at)
        if not check.done:
            self.out.wait(check.retry_after)
            message = f"removing the registration the runner left: {check.message}"
            self.out.condition("Stopping", True, "RemovingRegistration", message)
        return check.done

    def _start_pod(self) -> None:
        if self.failures and self.last_failure_time:
            elapsed = (self.now - parse_time(self.last_failure_time)).total_seconds()
            remaining = self._failure_backoff() - elapsed
            if remaining > 0:
                self.out.phase = "Pending"
                self.out.wait(remaining)
                return
        if not service_account_ready(self.runner, self.account):
            # Kubernetes mode: the API server refuses a pod whose service account is not there
            # yet; it is in this answer, and its creation calls the hook again.
            self.out.phase = "Pending"
            self.out.wait(RELEASE_RESYNC_SECONDS)
            return
        material = self._ensure_jit_config() if self.jit else self._ensure_token()
        if material is None:
            return
        self.out.pod = self._desired_pod()
        self.out.phase = "Created"
        self.out.condition("Failed", False, "PodCreated")
        self.out.event("PodCreated", f"Created pod '{self.name}'")

    def _failure_backoff(self) -> float:
        settings = self.deps.settings
        backoff = settings.pod_failure_backoff * 2 ** max(self.failures - 1, 0)
        return float(min(backoff, settings.pod_failure_backoff_max))

    def _ensure_token(self) -> RegistrationMaterial | None:
        """The Secret's token when a new pod can use it; otherwise a fresh one, written to the
        Secret in the same answer (the kubelet waits for a Secret a pod references)."""
        if self.material.token_usable(self.now):
            return self.material
        try:
            token = self.github.registration_token(self.scope)
        except GitHubError as error:
            self._registration_failed(error)
            return None
        material = RegistrationMaterial(token=token.token, expires_at=token.expires_at)
        self._write_secret(material)
        self.out.condition("RegistrationReady", True, "RegistrationTokenUpdated")
        self.out.event("RegistrationTokenUpdated", "Successfully updated the registration token")
        return material

    def _ensure_jit_config(self) -> RegistrationMaterial | None:
        material = self.material
        consumed_id = self.stop.runner_id if self.stop is not None else None
        if material.jit_config and material.runner_id and material.runner_id != consumed_id:
            self.out.runner_id = material.runner_id
            return material
        spec = self.runner.spec
        try:
            group_id = self._runner_group_id()
            config = self.github.generate_jit_config(
                self.scope,
                self.name,
                jit_labels(spec.labels, spec.node_selector),
                group_id,
                spec.work_dir or "_work",
            )
        except ConflictError:
            self._resolve_jit_conflict()
            return None
        except GitHubError as error:
            self._registration_failed(error)
            return None
        self.out.runner_id = config.runner.id
        material = RegistrationMaterial(
            jit_config=config.encoded_jit_config, runner_id=config.runner.id
        )
        self._write_secret(material)
        self.out.condition("RegistrationReady", True, "JitConfigGenerated")
        self.out.event("JitConfigGenerated", f"Registered runner {config.runner.id} just in time")
        return material

    def _runner_group_id(self) -> int:
        return runner_group_id(self.github, self.scope, self.runner.spec.group)

    def _resolve_jit_conflict(self) -> None:
        """The name is registered already: a config generated by a sync whose answer was lost,
        or a leftover. Remove it when it is idle, and generate again on the next sync."""
        check = self._remove_registration(None)
        message = "a runner with this name is registered on GitHub; removing it first"
        self.out.condition("RegistrationReady", False, "NameConflict", message)
        self.out.wait(check.retry_after if not check.done else RELEASE_RESYNC_SECONDS)

    def _registration_failed(self, error: GitHubError) -> None:
        retry = (
            error.retry_after
            if isinstance(error, RateLimitedError)
            else self.deps.settings.token_error_retry_delay
        )
        self.out.condition("RegistrationReady", False, "RegistrationFailed", str(error))
        self.out.event(
            "FailedUpdateRegistrationToken", f"Registration failed: {error}", warning=True
        )
        self.out.phase = self.out.phase or "Pending"
        self.out.wait(retry)

    # ------------------------------------------------------------- finalize

    def finalize(self, problems: list[str]) -> CompositeHookResponse:
        if problems:
            self.out.condition("Valid", False, "InvalidSpec", "; ".join(problems))
        if self.observed_secret:
            self._write_secret(self.material)
        scope = _registered_scope(self.status) or (None if problems else self.scope)
        if scope is None:
            # Nothing was ever registered for this Runner: only the pod has to go.
            return self._finalized_when_pod_gone()
        self.scope = scope
        if self.stop is None or (self.pod is not None and self.stop.pod_uid != self.pod.uid):
            self.stop = None  # an earlier pod's stop says nothing about this one
            self.stop = begin_stop("RunnerDeleted", self._stop_subject(), self.deps.clock)
        if self.pod is not None:
            self._advance_stop()
            return self._respond(finalized=False)
        if self.stop.outcome != "Unregistered" and not self._removed_after_stop(self.stop):
            return self._respond(finalized=False)
        return self._respond(finalized=True)

    def _finalized_when_pod_gone(self) -> CompositeHookResponse:
        if self.pod is None:
            return self._respond(finalized=True)
        self.out.wait(RELEASE_RESYNC_SECONDS)
        return self._respond(finalized=False)

    # --------------------------------------------------------------- GitHub

    def _tick(self, stop: GracefulStopStatus) -> StopTick:
        return tick_graceful_stop(
            self._stop_subject(), stop, self.github, self.deps.clock, self.deps.timing
        )

    def _stop_subject(self) -> StopSubject:
        ephemeral = self.runner.spec.ephemeral is not False
        return StopSubject(
            scope=self.scope,
            runner_name=self.name,
            runner_id=self._known_runner_id(),
            pod=self.pod,
            ephemeral=self.pod.ephemeral if self.pod is not None else ephemeral,
        )

    def _known_runner_id(self) -> int | None:
        """The registration of the current pod, when known for sure. A runner id recorded in
        status may belong to an earlier pod with the same name (token mode), so it is not used:
        deleting a stale id would answer 404 and let a live runner's pod go."""
        if self.stop is not None and self.stop.runner_id is not None:
            return self.stop.runner_id
        if self.jit and self.material.runner_id is not None:
            return self.material.runner_id
        if self.out.github_runner is not None:
            return self.out.github_runner.id
        return None

    def _lookup_github_runner(self) -> GitHubRunner | None:
        try:
            found = find_runner(self.github, self.scope, self.name)
        except GitHubError as error:
            self.github_unavailable = True
            self.out.condition("Registered", False, "GitHubUnavailable", str(error))
            if isinstance(error, RateLimitedError):
                self.out.wait(error.retry_after)
            return None
        self.out.github_runner = found
        if found is None:
            self.out.condition("Registered", False, "NotRegistered", "not registered on GitHub")
        else:
            self.out.runner_id = found.id
            online = "online" if found.online else "offline"
            self.out.condition("Registered", found.online, f"Runner{online.title()}", online)
        return found

    def _remove_registration(
        self, runner_id: int | None, stopped_at: datetime | None = None
    ) -> LeftoverCheck:
        return remove_leftover_registration(
            self.github,
            self.scope,
            self.name,
            runner_id,
            self.deps.timing,
            stopped_at=stopped_at,
        )

    # ------------------------------------------------------------ children

    def _desired_pod(self) -> KubeObject:
        if self.parsed.problems and self.observed_pod is not None:
            return as_kept(self.observed_pod)  # an invalid spec builds nothing new
        return self.parsed.pod()

    def _write_secret(self, material: RegistrationMaterial) -> None:
        self.out.secret = self._secret(material)
        self.out.secret_material = material

    def _secret(self, material: RegistrationMaterial) -> KubeObject:
        return {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {
                "name": self.secret_name,
                "namespace": self.namespace,
                "labels": {"actions-runner": "", "runner-name": label_value(self.name)},
            },
            "type": "Opaque",
            "data": secret_data(material),
        }

    # -------------------------------------------------------------- status

    def _respond(self, finalized: bool | None = None) -> CompositeHookResponse:
        children = [c for c in (self.out.pod, self.out.secret) if c is not None]
        children += service_account_children(self.runner, self.account)
        resync = min(self.out.resync) if self.out.resync else None
        return CompositeHookResponse(
            status=self._status().to_wire(),
            children=children,
            resync_after_seconds=resync,
            finalized=finalized,
            events=self.out.events,
        )

    def _status(self) -> RunnerStatus:
        previous = self.status
        pod = self.pod
        github_runner = self.out.github_runner
        registration = RunnerStatusRegistration(
            enterprise=self.scope.enterprise or None,
            organization=self.scope.organization or None,
            repository=self.scope.repository or None,
            labels=list(self.runner.spec.labels),
            expires_at=format_time(self.material.expires_at) if self.material.expires_at else None,
        )
        written = self.out.secret_material
        if written is not None and written is not self.material and written.expires_at:
            registration.expires_at = format_time(written.expires_at)
        if not self.out.conditions.get("Stopping"):
            self.out.condition("Stopping", False, "NotStopping")
        return RunnerStatus(
            ready=pod.ready if pod is not None and self.out.pod is not None else False,
            phase=self.out.phase or (pod.phase if pod is not None else previous.phase),
            reason=pod.reason if pod is not None else None,
            message=pod.message if pod is not None else None,
            registration=registration if _has_scope(self.scope) else previous.registration,
            workflow=previous.workflow,
            last_registration_check_time=previous.last_registration_check_time,
            runner_id=self.out.runner_id,
            online=github_runner.online if github_runner else previous.online,
            busy=github_runner.busy if github_runner else previous.busy,
            conditions=merge_conditions(previous.conditions, self.out.conditions, self.now),
            graceful_stop=self.stop,
            failures=self.failures or None,
            last_failure_time=self.last_failure_time,
        )


# ------------------------------------------------------------------ entry points


def sync_runner(request: CompositeHookRequest, deps: HookDeps) -> CompositeHookResponse:
    parsed = _parse(request, deps)
    runner, problems = parsed.runner, list(parsed.problems)
    if runner is None or problems:
        return _invalid(request, runner, problems, deps.clock)
    return _Sync(request, parsed, deps).sync()


def finalize_runner(request: CompositeHookRequest, deps: HookDeps) -> CompositeHookResponse:
    parsed = _parse(request, deps)
    runner, problems = parsed.runner, list(parsed.problems)
    if runner is None:
        # Unreadable spec: nothing we can unregister with; let the pods go, then finish.
        pods = request.objects("Pod")
        status = _invalid_status(request, problems, deps.clock)
        return CompositeHookResponse(
            status=status,
            children=_kept_secrets(request),
            finalized=not pods,
            resync_after_seconds=RELEASE_RESYNC_SECONDS if pods else None,
        )
    return _Sync(request, parsed, deps).finalize(problems)


# orjson would write datetimes, dataclasses and subclasses of str, dict, ... as if they were
# plain JSON; refused here, a parent holding one (not decoded from JSON) is parsed without memo.
_KEY_OPTIONS = (
    orjson.OPT_PASSTHROUGH_DATETIME
    | orjson.OPT_PASSTHROUGH_DATACLASS
    | orjson.OPT_PASSTHROUGH_SUBCLASS
)


def _parse(request: CompositeHookRequest, deps: HookDeps) -> _Parsed:
    """The parsed parent, from the memo when an identical parent was parsed with these settings.

    The key is the parent's JSON text without what changes on every write and does not shape
    the result (status, which each call reads afresh, and the resourceVersion), plus the
    registration mode setting and the pod defaults: everything the result depends on."""
    settings = deps.settings
    mode, defaults = settings.runner_registration_mode, PodDefaults.from_settings(settings)
    parent = _without_volatile_fields(request.parent)
    try:
        key = (orjson.dumps(parent, option=_KEY_OPTIONS), mode, defaults)
    except orjson.JSONEncodeError:
        return _parse_now(parent, mode, defaults)
    parsed = deps.parsed_parents.get(key)
    if parsed is None:
        parsed = _parse_now(parent, mode, defaults)
        deps.parsed_parents.put(key, parsed)
    return parsed


def _without_volatile_fields(parent: KubeObject) -> KubeObject:
    stable = {key: value for key, value in parent.items() if key != "status"}
    metadata = parent.get("metadata")
    if isinstance(metadata, dict):
        stable["metadata"] = {
            key: value
            for key, value in metadata.items()
            if key not in ("resourceVersion", "managedFields")
        }
    return stable


def _observed_status(parent: KubeObject) -> RunnerStatus:
    """The status as last written. One that does not parse (edited by hand) counts as empty:
    the hook rebuilds it from what it observes."""
    raw = parent.get("status")
    if not isinstance(raw, dict):
        return RunnerStatus()
    try:
        return RunnerStatus.model_validate(raw)
    except ValidationError:
        return RunnerStatus()


def _parse_now(parent: KubeObject, mode: str, defaults: PodDefaults) -> _Parsed:
    try:
        runner = Runner.model_validate(parent)
    except ValidationError as error:
        return _Parsed(
            None, (describe_validation_error(error, "Runner"),), jit=False, defaults=defaults
        )
    jit = _registration_mode(runner, mode) == "jit"
    problems = validate_runner_spec(runner.spec, jit=jit, metadata=runner.metadata)
    return _Parsed(runner, tuple(problems), jit=jit, defaults=defaults)


def _invalid(
    request: CompositeHookRequest, runner: Runner | None, problems: list[str], clock: Clock
) -> CompositeHookResponse:
    """An invalid Runner keeps what it has: its children are returned unchanged, no new pod."""
    kinds = ("Pod", "Secret", *SERVICE_ACCOUNT_KINDS)
    kept = [as_kept(obj) for kind in kinds for obj in request.objects(kind)]
    return CompositeHookResponse(status=_invalid_status(request, problems, clock), children=kept)


def _invalid_status(
    request: CompositeHookRequest, problems: list[str], clock: Clock
) -> dict[str, Any]:
    status = invalid_status(request.parent, problems, clock.now())
    status["message"] = "; ".join(problems)
    return status


def _kept_secrets(request: CompositeHookRequest) -> list[KubeObject]:
    """The Secret, and the service account of kubernetes mode (a pod that is still stopping
    runs as it); all of them go with the Runner."""
    kinds = ("Secret", *SERVICE_ACCOUNT_KINDS)
    return [as_kept(obj) for kind in kinds for obj in request.objects(kind)]


def _credentials_secret(runner: Runner) -> str | None:
    credentials = runner.spec.github_api_credentials_from
    ref = credentials.secret_ref if credentials is not None else None
    return ref.name if ref is not None and ref.name else None


def customize_runner(request: dict[str, Any]) -> dict[str, Any]:
    """Ask for the Secret named by `githubAPICredentialsFrom`, if any."""
    parent = object_or_empty(request.get("parent"))
    namespace = object_or_empty(parent.get("metadata")).get("namespace")
    namespace = namespace if isinstance(namespace, str) else ""
    return {"relatedResources": credentials_rules(namespace, spec_secret_name(parent))}


def _registration_mode(runner: Runner, default_mode: str) -> str:
    return registration_mode(runner.metadata.annotations, default_mode)


def _spec_scope(runner: Runner) -> Scope:
    spec = runner.spec
    return Scope(
        enterprise=spec.enterprise or "",
        organization=spec.organization or "",
        repository=spec.repository or "",
    )


def _registered_scope(status: RunnerStatus) -> Scope | None:
    registration = status.registration
    if registration is None:
        return None
    scope = Scope(
        enterprise=registration.enterprise or "",
        organization=registration.organization or "",
        repository=registration.repository or "",
    )
    return scope if _has_scope(scope) else None


def _has_scope(scope: Scope) -> bool:
    return bool(scope.enterprise or scope.organization or scope.repository)


__all__ = ["HookDeps", "ObservedPod", "finalize_runner", "sync_runner"]


def routes(deps: HookDeps) -> list[HookRoute]:
    return [
        HookRoute("/sync/runner", HookKind.COMPOSITE, partial(sync_runner, deps=deps), True),
        HookRoute(
            "/finalize/runner", HookKind.COMPOSITE, partial(finalize_runner, deps=deps), True
        ),
        HookRoute("/customize/runner", HookKind.CUSTOMIZE, customize_runner),
    ]
