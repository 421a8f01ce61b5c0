"""The simulated runner process: what ARC's runner image does inside the `runner` container.

One `RunnerAgent` per started runner container. It reads the container's environment the way the
kubelet resolves it (plain values, `secretKeyRef`, `configMapKeyRef`, `fieldRef`, `envFrom`) and
then behaves like ARC's entrypoint around `config.sh` and `run.sh`:

- **Start.** After a registration delay it registers: with `RUNNER_TOKEN` as
  `config.sh --replace [--ephemeral]` does, or with `ACTIONS_RUNNER_INPUT_JITCONFIG`. A refused
  token or JIT config ends the container with exit code 1. Registered, it connects (online) and
  tells GitHub it takes jobs (`attach_agent`).
- **Jobs.** GitHub calls `assign(job)`; the runner is busy for the job's duration, then reports
  `complete_job`. An ephemeral runner then removes its own registration and exits 0; a static
  runner is idle again.
- **SIGTERM** (`terminate`) runs ARC's `graceful-stop.sh`: wait until the registration exists;
  try `config.sh remove`; when that is refused (busy), wait up to `RUNNER_GRACEFUL_STOP_TIMEOUT`
  (default 15 s) for the runner to stop by itself (an ephemeral runner does after its job); then
  SIGTERM the listener, which cancels a job still running (recorded as interrupted) and leaves
  the registration behind, offline. A static runner that finished its job during the wait stays
  registered too: only ARC's controller, not the entrypoint, removes it then. Graceful stops
  exit 0.
- **SIGKILL** (`kill`): the process is gone at once. A running job is interrupted, the
  registration stays on GitHub, offline, until someone removes it.
- **Registration deleted through the API** (`removed`, our hooks' DELETE of an idle runner): the
  listener notices on its next poll (modelled as 1 s later), reports that the runner no longer
  exists and exits with its TerminatedError code, 1; with restartPolicy Never the pod then shows
  the runner container failed, which is what the hooks meet on a cluster.

`JobTaker`, the protocol this class implements for GitHub, lives next to `SimJob` in
`arc_sim.github_jobs` (no import cycle) and is re-exported here.
"""

from __future__ import annotations

import base64
import binascii
import enum
import json
import re
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal, Protocol

from arc_sim.events import EventLoop, Timer
from arc_sim.github_jobs import JobTaker, SimJob
from arc_sim.github_state import (
    DEFAULT_RUNNER_GROUP_ID,
    FakeGitHubError,
    NotFoundError,
    RunnerBusyError,
    RunnerGroup,
)
from arc_sim.store import KubeObject, ObjectStore
from hooks.github.port import GitHubRunner, Scope

__all__ = [
    "DEFAULT_GRACEFUL_STOP_TIMEOUT",
    "KILLED_EXIT_CODE",
    "REGISTRATION_DELETED_EXIT_CODE",
    "REGISTRATION_FAILED_EXIT_CODE",
    "AgentState",
    "ContainerConfigError",
    "JobTaker",
    "RunnerAgent",
    "RunnerConfig",
    "RunnerGitHub",
    "container_env",
    "runner_agent_factory",
]

RUNNER_CONTAINER = "runner"
DEFAULT_GRACEFUL_STOP_TIMEOUT = 15.0  # ARC's entrypoint: ${RUNNER_GRACEFUL_STOP_TIMEOUT:-15}
DEFAULT_REGISTRATION_DELAY = (2.0, 5.0)
REGISTRATION_FAILED_EXIT_CODE = 1  # config.sh failed: the entrypoint gives up
REGISTRATION_DELETED_EXIT_CODE = 1  # the listener's TerminatedError
KILLED_EXIT_CODE = 137  # 128 + SIGKILL, as the kubelet reports it
# The listener long-polls GitHub; it learns of its deletion when the next poll is refused.
REMOVAL_NOTICE_SECONDS = 1.0


class ContainerConfigError(Exception):
    """The container cannot be created: a Secret or key its environment refers to is missing
    (the kubelet's CreateContainerConfigError; it retries until the source exists)."""


class RunnerGitHub(Protocol):
    """The GitHub a runner process talks to: registration, its connection and the job broker."""

    def register_runner(
        self,
        scope: Scope,
        name: str,
        labels: Sequence[str],
        token: str,
        *,
        replace: bool = ...,
        ephemeral: bool = ...,
        runner_group_id: int = ...,
        os: str = ...,
    ) -> GitHubRunner: ...

    def register_jit(self, encoded_jit_config: str) -> GitHubRunner: ...

    def runner_groups(
        self, scope: Scope, *, visible_to_repository: str | None = ...
    ) -> list[RunnerGroup]: ...

    def set_online(
        self,
        scope: Scope,
        runner_id: int,
        online: bool = ...,
        *,
        os: str | None = ...,
        version: str = ...,
    ) -> GitHubRunner: ...

    def unregister_runner(
        self, scope: Scope, runner_id: int, *, remove_token: str | None = ...
    ) -> None: ...

    def attach_agent(self, scope: Scope, runner_id: int, agent: JobTaker) -> None: ...

    def detach_agent(self, scope: Scope, runner_id: int) -> None: ...

    # Whatever these return (the fake GitHub returns the updated job) is not used.
    def complete_job(self, job_id: int) -> object: ...

    def interrupt_job(self, job_id: int) -> object: ...


class AgentState(enum.Enum):
    CREATED = "created"  # the container has not started
    REGISTERING = "registering"
    IDLE = "idle"  # online, waiting for a job
    BUSY = "busy"
    LEAVING = "leaving"  # takes no more jobs: about to exit
    EXITED = "exited"


@dataclass(frozen=True)
class RunnerConfig:
    """What the runner container's environment tells the entrypoint."""

    name: str
    scope: Scope | None  # None: none of RUNNER_ORG, RUNNER_REPO, RUNNER_ENTERPRISE is set
    labels: tuple[str, ...] = ()
    group: str = ""
    ephemeral: bool = True
    token: str = ""
    jit_config: str = ""
    graceful_stop_timeout: float = DEFAULT_GRACEFUL_STOP_TIMEOUT
    stuck_registrations: int = 0
    """Simulation knob (env SIMULATED_STUCK_REGISTRATIONS=N): the first N runner processes of
    this name hang before registering, as a runner that cannot reach GitHub does."""
    start: ImageStart = "either"
    """How the container's image starts the runner (`image_start`)."""

    def __repr__(self) -> str:  # never print the token or the JIT config
        return (
            f"RunnerConfig(name={self.name!r}, scope={self.scope}, labels={self.labels}, "
            f"group={self.group!r}, ephemeral={self.ephemeral}, "
            f"token={'set' if self.token else None}, "
            f"jit_config={'set' if self.jit_config else None}, "
            f"graceful_stop_timeout={self.graceful_stop_timeout})"
        )

    @classmethod
    def from_env(cls, env: Mapping[str, str], *, default_name: str) -> RunnerConfig:
        return cls(
            # The entrypoint falls back to the hostname, which is the pod name.
            name=env.get("RUNNER_NAME") or default_name,
            scope=_scope_from_env(env),
            labels=tuple(
                label.strip() for label in env.get("RUNNER_LABELS", "").split(",") if label.strip()
            ),
            group=env.get("RUNNER_GROUP", ""),
            # ARC's entrypoint passes --ephemeral unless the value is exactly "false".
            ephemeral=env.get("RUNNER_EPHEMERAL", "true") != "false",
            token=env.get("RUNNER_TOKEN", ""),
            jit_config=env.get("ACTIONS_RUNNER_INPUT_JITCONFIG", ""),
            graceful_stop_timeout=_graceful_stop_timeout(env.get("RUNNER_GRACEFUL_STOP_TIMEOUT")),
            stuck_registrations=_count(env.get(STUCK_REGISTRATIONS_ENV)),
        )


ImageStart = Literal["token", "jit", "nothing", "either"]

_ARC_IMAGE = re.compile(
    r"(^|/)(summerwind|actions-runner-controller)/actions-runner(-dind(-rootless)?)?$"
)
_GITHUB_IMAGE = re.compile(r"(^|/)actions/actions-runner$")


def image_start(image: str, command: object) -> ImageStart:
    """What the container's process can register with. ARC's images (`summerwind/...`) run
    startup.sh, which exits 1 without `RUNNER_TOKEN` and knows no JIT config; GitHub's
    (`ghcr.io/actions/actions-runner`) has no entrypoint (without a command the container never
    starts; modelled as exiting 1), and `run.sh` as its command starts
    from a JIT config alone (it was never configured with a token). A `command` of the pod's
    own on ARC's image, and any other image, are taken to do either."""
    repository = image.split("@", 1)[0]
    if repository.rfind(":") > repository.rfind("/"):
        repository = repository[: repository.rfind(":")]
    if _GITHUB_IMAGE.search(repository):
        return "jit" if command else "nothing"
    if _ARC_IMAGE.search(repository) and not command:
        return "token"
    return "either"


class RunnerAgent:
    """The runner process of one container run; implements `JobTaker` for the fake GitHub."""

    def __init__(
        self,
        config: RunnerConfig,
        *,
        github: RunnerGitHub,
        loop: EventLoop,
        registration_delay: tuple[float, float] = DEFAULT_REGISTRATION_DELAY,
        attempt: int = 1,
    ) -> None:
        self.config = config
        self.attempt = attempt  # the how-manieth runner process of this name
        self.github = github
        self.loop = loop
        self.registration_delay = registration_delay
        self.state = AgentState.CREATED
        self.scope: Scope | None = None
        self.runner_id: int | None = None
        self.job: SimJob | None = None
        self.exit_code: int | None = None
        self.jobs_completed = 0
        self._on_exit: Callable[[int], None] | None = None
        self._timer: Timer | None = None  # registration, job, removal notice
        self._stop_timer: Timer | None = None  # graceful stop's wait for the runner
        self._stopping = False
        self._attached = False
        self._registered = False  # the registration exists on GitHub, as far as this runner knows
        self._config_files = False  # /runner/.runner, which the dind sidecar's preStop watches
        self._unregistering = False

    @classmethod
    def for_pod(
        cls,
        pod: KubeObject,
        *,
        store: ObjectStore,
        github: RunnerGitHub,
        loop: EventLoop,
        container_name: str = RUNNER_CONTAINER,
        registration_delay: tuple[float, float] = DEFAULT_REGISTRATION_DELAY,
        attempt: int = 1,
    ) -> RunnerAgent | None:
        """The agent of the pod's runner container; None when the pod has none.

        Raises ContainerConfigError when the environment refers to a missing Secret or key.
        """
        containers = (pod.get("spec") or {}).get("containers") or []
        container = next((c for c in containers if c.get("name") == container_name), None)
        if container is None:
            return None
        env = container_env(store, pod, container)
        config = replace(
            RunnerConfig.from_env(env, default_name=pod["metadata"]["name"]),
            start=image_start(str(container.get("image") or ""), container.get("command")),
        )
        return cls(
            config,
            github=github,
            loop=loop,
            registration_delay=registration_delay,
            attempt=attempt,
        )

    # --- what the kubelet sees

    @property
    def running(self) -> bool:
        return self.state not in (AgentState.CREATED, AgentState.EXITED)

    @property
    def config_files_present(self) -> bool:
        """Whether /runner/.runner exists: from registration until the runner removed itself.
        It outlives the process when the registration was left behind."""
        return self._config_files

    def start(self, on_exit: Callable[[int], None]) -> None:
        """The container started; `on_exit(code)` is called when the process ends by itself or
        through SIGTERM (never after `kill`, whose outcome the kubelet records)."""
        if self.state is not AgentState.CREATED:
            raise RuntimeError(f"runner {self.config.name} was started twice")
        self._on_exit = on_exit
        self.state = AgentState.REGISTERING
        low, high = self.registration_delay
        delay = self.loop.rng.uniform(low, high) if high > low else low
        self._timer = self.loop.call_later(
            delay, self._register, f"runner {self.config.name}: register"
        )

    def terminate(self) -> None:
        """SIGTERM: ARC's graceful-stop.sh (see the module docstring)."""
        if self.state is AgentState.CREATED:
            self._finish(0)
            return
        if self.state is AgentState.EXITED or self._stopping:
            return
        self._stopping = True
        if self.state is AgentState.REGISTERING:
            return  # graceful-stop.sh first waits for the registration; `_register` goes on
        if self.state is AgentState.LEAVING:
            return  # exits by itself shortly
        self._graceful_stop()

    def kill(self) -> None:
        """SIGKILL, or the node went away: the process is gone at once."""
        if self.state is AgentState.EXITED:
            return
        job = self.job if self.state is AgentState.BUSY else None
        self.state = AgentState.EXITED
        self.exit_code = KILLED_EXIT_CODE
        self._cancel_timers()
        self._detach()
        if job is not None:
            self.job = None
            self.github.interrupt_job(job.id)
        self._go_offline()

    # --- JobTaker: what GitHub tells the runner

    def assign(self, job: SimJob) -> None:
        if self.state is not AgentState.IDLE:
            # GitHub hands jobs only to online, idle runners that are listening, and at most
            # one job to an ephemeral runner.
            raise RuntimeError(
                f"runner {self.config.name} was assigned job {job.id} while {self.state.value}"
            )
        self.state = AgentState.BUSY
        self.job = job
        self._timer = self.loop.call_later(
            job.duration_seconds, self._job_done, f"runner {self.config.name}: job {job.id}"
        )

    def removed(self) -> None:
        if self._unregistering or self.state in (AgentState.EXITED, AgentState.LEAVING):
            return
        self._registered = False
        self._detach()
        if self.state is AgentState.BUSY and self.job is not None:
            # GitHub refuses to delete a busy runner; should it happen, the job is lost.
            job, self.job = self.job, None
            self.github.interrupt_job(job.id)
        self.state = AgentState.LEAVING
        self._cancel_timers()
        self._timer = self.loop.call_later(
            REMOVAL_NOTICE_SECONDS,
            lambda: self._finish(REGISTRATION_DELETED_EXIT_CODE),
            f"runner {self.config.name}: registration deleted",
        )

    # --- the process

    def _register(self) -> None:
        self._timer = None
        config = self.config
        if self.attempt <= config.stuck_registrations:
            return  # hangs: never registers, never exits
        if not _can_start(config):
            self._finish(REGISTRATION_FAILED_EXIT_CODE)
            return
        try:
            if config.jit_config:
                scope = _scope_from_jit_config(config.jit_config) or config.scope
                if scope is None:
                    raise FakeGitHubError("the JIT config names no GitHub URL")
                runner = self.github.register_jit(config.jit_config)
            else:
                scope = config.scope
                if scope is None:
                    raise FakeGitHubError(
                        "At least one of RUNNER_ORG, RUNNER_REPO, or RUNNER_ENTERPRISE must be set"
                    )
                runner = self.github.register_runner(
                    scope,
                    config.name,
                    config.labels,
                    config.token,
                    replace=True,
                    ephemeral=config.ephemeral,
                    runner_group_id=self._group_id(scope),
                )
        except FakeGitHubError:
            self._finish(REGISTRATION_FAILED_EXIT_CODE)
            return
        self.scope, self.runner_id = scope, runner.id
        self._registered = self._config_files = True
        if self._stopping:
            self._graceful_stop()
            return
        try:
            self.github.set_online(scope, runner.id)
        except NotFoundError:
            self._registered = False
            self._finish(REGISTRATION_DELETED_EXIT_CODE)
            return
        self.state = AgentState.IDLE
        self._attached = True
        self.github.attach_agent(scope, runner.id, self)

    def _group_id(self, scope: Scope) -> int:
        # config.sh --runnergroup; ARC passes it only for organization and enterprise runners.
        if not self.config.group or scope.repository:
            return DEFAULT_RUNNER_GROUP_ID
        for group in self.github.runner_groups(scope):
            if group.name.casefold() == self.config.group.casefold():
                return group.id
        raise FakeGitHubError(
            f"Could not find any self-hosted runner group named {self.config.group}"
        )

    def _job_done(self) -> None:
        self._timer = None
        job, self.job = self.job, None
        if job is None:
            return
        self.jobs_completed += 1
        if self.config.ephemeral:
            self.state = AgentState.LEAVING
            self.github.complete_job(job.id)
            self._remove_registration()
            self._finish(0)
            return
        self.state = AgentState.IDLE
        self.github.complete_job(job.id)  # GitHub may hand over the next job right away

    def _graceful_stop(self) -> None:
        """config.sh remove; when refused, wait for the runner to stop by itself."""
        if self._remove_registration():
            self._finish(0)
            return
        self._stop_timer = self.loop.call_later(
            self.config.graceful_stop_timeout,
            self._stop_listener,
            f"runner {self.config.name}: graceful stop timeout",
        )

    def _stop_listener(self) -> None:
        """The end of graceful-stop.sh's wait: SIGTERM to the listener. A job still running is
        cancelled; the registration stays."""
        self._stop_timer = None
        if self.state is AgentState.BUSY and self.job is not None:
            job, self.job = self.job, None
            self.state = AgentState.LEAVING
            self._cancel_timers()
            self.github.interrupt_job(job.id)
        self._finish(0)

    def _remove_registration(self) -> bool:
        """Remove this runner's registration; False when GitHub refused (busy, or gone)."""
        if self.scope is None or self.runner_id is None:
            return False
        self._unregistering = True
        try:
            self.github.unregister_runner(self.scope, self.runner_id)
        except RunnerBusyError:
            return False
        except NotFoundError:
            self._registered = False  # deleted through the API; the listener will notice
            return False
        finally:
            self._unregistering = False
        self._registered = self._config_files = False
        return True

    def _finish(self, code: int) -> None:
        """The process ends by itself with `code`."""
        if self.state is AgentState.EXITED:
            return
        self.state = AgentState.EXITED
        self.exit_code = code
        self._cancel_timers()
        self._detach()
        self._go_offline()
        if self._on_exit is not None:
            self._on_exit(code)

    def _go_offline(self) -> None:
        if not self._registered or self.scope is None or self.runner_id is None:
            return
        try:
            self.github.set_online(self.scope, self.runner_id, False)
        except NotFoundError:
            self._registered = False

    def _detach(self) -> None:
        if self._attached and self.scope is not None and self.runner_id is not None:
            self._attached = False
            self.github.detach_agent(self.scope, self.runner_id)

    def _cancel_timers(self) -> None:
        for timer in (self._timer, self._stop_timer):
            if timer is not None:
                timer.cancel()
        self._timer = self._stop_timer = None


STUCK_REGISTRATIONS_ENV = "SIMULATED_STUCK_REGISTRATIONS"


def _count(value: str | None) -> int:
    return int(value) if value and value.isdigit() else 0


def runner_agent_factory(
    *,
    store: ObjectStore,
    github: RunnerGitHub,
    loop: EventLoop,
    registration_delay: tuple[float, float] = DEFAULT_REGISTRATION_DELAY,
) -> Callable[[KubeObject], RunnerAgent | None]:
    """The kubelet's `agent_factory`: a runner agent for each pod with a `runner` container."""
    starts: Counter[str] = Counter()

    def factory(pod: KubeObject) -> RunnerAgent | None:
        metadata = pod["metadata"]
        starts[f"{metadata.get('namespace')}/{metadata['name']}"] += 1
        return RunnerAgent.for_pod(
            pod,
            store=store,
            github=github,
            loop=loop,
            registration_delay=registration_delay,
            attempt=starts[f"{metadata.get('namespace')}/{metadata['name']}"],
        )

    return factory


# --- the container environment, resolved as the kubelet does


def container_env(store: ObjectStore, pod: KubeObject, container: KubeObject) -> dict[str, str]:
    """`envFrom` first, then `env` (later entries win). Raises ContainerConfigError for a
    missing non-optional Secret, ConfigMap or key."""
    namespace = pod["metadata"].get("namespace") or "default"
    env: dict[str, str] = {}
    for source in container.get("envFrom") or []:
        prefix = source.get("prefix") or ""
        for kind, ref_field in (("Secret", "secretRef"), ("ConfigMap", "configMapRef")):
            ref = source.get(ref_field)
            if ref is None:
                continue
            data = _source_data(store, kind, namespace, ref)
            if data is not None:
                env.update({prefix + key: value for key, value in data.items()})
    for item in container.get("env") or []:
        value = _env_value(store, pod, namespace, item)
        if value is not None:
            env[item["name"]] = value
    return env


def _env_value(
    store: ObjectStore, pod: KubeObject, namespace: str, item: dict[str, Any]
) -> str | None:
    value_from = item.get("valueFrom")
    if value_from is None:
        return str(item.get("value", ""))
    for kind, ref_field in (("Secret", "secretKeyRef"), ("ConfigMap", "configMapKeyRef")):
        ref = value_from.get(ref_field)
        if ref is None:
            continue
        data = _source_data(store, kind, namespace, ref)
        if data is None:
            return None
        if ref.get("key") not in data:
            if ref.get("optional"):
                return None
            raise ContainerConfigError(
                f"couldn't find key {ref.get('key')} in {kind} {namespace}/{ref.get('name')}"
            )
        return data[ref["key"]]
    field_ref = value_from.get("fieldRef")
    if field_ref is not None:
        return _field_value(pod, str(field_ref.get("fieldPath", "")))
    return None


def _source_data(
    store: ObjectStore, kind: str, namespace: str, ref: dict[str, Any]
) -> dict[str, str] | None:
    """The decoded data of a referenced Secret or ConfigMap; None when optional and missing."""
    source = store.get(kind, namespace, str(ref.get("name", "")))
    if source is None:
        if ref.get("optional"):
            return None
        raise ContainerConfigError(f'{kind.lower()} "{ref.get("name")}" not found')
    if kind == "ConfigMap":
        return {k: str(v) for k, v in (source.get("data") or {}).items()}
    try:
        return {
            k: base64.b64decode(v, validate=True).decode()
            for k, v in (source.get("data") or {}).items()
        }
    except (binascii.Error, UnicodeDecodeError) as exc:
        raise ContainerConfigError(f"secret {namespace}/{ref.get('name')}: {exc}") from exc


def _field_value(pod: KubeObject, path: str) -> str:
    metadata = pod.get("metadata") or {}
    values = {
        "metadata.name": metadata.get("name"),
        "metadata.namespace": metadata.get("namespace"),
        "metadata.uid": metadata.get("uid"),
        "spec.nodeName": (pod.get("spec") or {}).get("nodeName"),
        "spec.serviceAccountName": (pod.get("spec") or {}).get("serviceAccountName"),
    }
    return str(values.get(path) or "")


def _scope_from_env(env: Mapping[str, str]) -> Scope | None:
    if env.get("RUNNER_REPO"):
        return Scope(repository=env["RUNNER_REPO"])
    if env.get("RUNNER_ORG"):
        return Scope(organization=env["RUNNER_ORG"])
    if env.get("RUNNER_ENTERPRISE"):
        return Scope(enterprise=env["RUNNER_ENTERPRISE"])
    return None


def _graceful_stop_timeout(value: str | None) -> float:
    if value is None or value == "":
        return DEFAULT_GRACEFUL_STOP_TIMEOUT
    try:
        seconds = float(value)
    except ValueError:
        # graceful-stop.sh compares with `[[ $i -lt $RUNNER_GRACEFUL_STOP_TIMEOUT ]]`, which
        # is false for a non-number: it does not wait at all.
        return 0.0
    return max(seconds, 0.0)


def _scope_from_jit_config(encoded: str) -> Scope | None:
    """The scope a JIT config registers in, from the GitHub URL in its `.runner` file."""
    try:
        files = json.loads(base64.b64decode(encoded))
        settings = json.loads(base64.b64decode(files[".runner"]))
        url = str(settings.get("GitHubUrl") or settings.get("gitHubUrl") or "")
    except (ValueError, KeyError, TypeError, binascii.Error):
        return None
    path = url.split("://", 1)[-1].partition("/")[2].strip("/")
    parts = [part for part in path.split("/") if part]
    if len(parts) == 2 and parts[0] == "enterprises":
        return Scope(enterprise=parts[1])
    if len(parts) == 2:
        return Scope(repository=f"{parts[0]}/{parts[1]}")
    if len(parts) == 1:
        return Scope(organization=parts[0])
    return None


def _can_start(config: RunnerConfig) -> bool:
    """Whether the image's start registers with what the environment gives it."""
    if config.start == "token":
        return bool(config.token)  # startup.sh: 'RUNNER_TOKEN must be set'
    if config.start == "jit":
        return bool(config.jit_config)  # run.sh of a runner never configured
    return config.start == "either"  # "nothing": no command to run
