"""What the hooks ask of runner scale sets: keep one as a target declares it, delete it, and
register its members with JIT configs. `ScaleSetPort` is the Protocol the decisions see;
`ScaleSetService` implements it over one `ScaleSetClient` per scope.

A target's scale set is looked up (and created or updated) at most once per `ttl` per process:
a RunnerDeployment is synced at every change of its sets, and its scale set rarely changes.
The cache spares calls only; the service is asked again after `ttl`, and at once after a
change of name or group (they are the key).

A scale set has one label, its name, as GitHub documents runner scale sets ("can only have one
label"; workflows ask for it with `runs-on: <name>`) and as GitHub's own clients make them: a
target's runner labels do not route jobs to it.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Protocol, TypeVar

from hooks.clock import Clock
from hooks.github.offline import refuse_if_offline
from hooks.github.port import (
    ConflictError,
    GitHubError,
    GitHubRunner,
    JitConfig,
    RateLimitedError,
    Scope,
)
from hooks.github.scaleset.client import ScaleSetClient
from hooks.github.scaleset.errors import (
    RunnerExistsError,
    ScaleSetError,
    ScaleSetHTTPError,
    ScaleSetRateLimitedError,
    stable_text,
)
from hooks.github.scaleset.models import Label, RunnerScaleSet, RunnerScaleSetSpec
from hooks.github.scaleset.rules import RetryPolicy
from hooks.settings import Settings

log = logging.getLogger(__name__)

DEFAULT_RUNNER_GROUP = "Default"
DEFAULT_RUNNER_GROUP_ID = 1  # as ARC's AutoscalingRunnerSet controller: known without a call
SCALE_SET_TTL = timedelta(minutes=10)
_T = TypeVar("_T")


@dataclass(frozen=True)
class ScaleSetRecord:
    """A scale set as the service keeps it: what a target's status records."""

    id: int
    name: str
    runner_group_id: int
    runner_group_name: str


class ScaleSetPort(Protocol):
    def ensure_scale_set(
        self,
        scope: Scope,
        name: str,
        runner_group: str | None,
        known_id: int | None = None,
    ) -> ScaleSetRecord:
        """The scale set `name` of the runner group, created, or updated to its one label. With
        `known_id` (the one the target recorded), that scale set is moved or renamed rather
        than a new one made."""
        ...

    def delete_scale_set(self, scope: Scope, scale_set_id: int) -> None:
        """Delete it; a scale set that is gone already is no error."""
        ...

    def generate_jit_config(
        self, scope: Scope, scale_set_id: int, name: str, work_folder: str
    ) -> JitConfig:
        """Register a member; raises ConflictError when the name is registered already."""
        ...


class ScaleSetService:
    """`ScaleSetPort` over the scale-set API, one client per scope (`client_for`)."""

    def __init__(
        self,
        client_for: Callable[[Scope], ScaleSetClient],
        clock: Clock,
        *,
        ttl: timedelta = SCALE_SET_TTL,
    ) -> None:
        self._client_for = client_for
        self._clock = clock
        self._ttl = ttl
        self._lock = threading.Lock()
        self._clients: dict[Scope, ScaleSetClient] = {}
        self._known: dict[tuple[Scope, str, str], tuple[ScaleSetRecord, datetime]]
        self._known = {}

    def client(self, scope: Scope) -> ScaleSetClient:
        with self._lock:
            if scope not in self._clients:
                self._clients[scope] = self._client_for(scope)
            return self._clients[scope]

    def ensure_scale_set(
        self,
        scope: Scope,
        name: str,
        runner_group: str | None,
        known_id: int | None = None,
    ) -> ScaleSetRecord:
        group = runner_group or DEFAULT_RUNNER_GROUP
        key = (scope, name, group.casefold())
        now = self._clock.now()
        with self._lock:
            known = self._known.get(key)
        if known is not None and known[1] > now:
            return known[0]
        refuse_if_offline("runner scale set")
        record = _translated(lambda: self._ensure(scope, name, group, known_id))
        with self._lock:
            self._known[key] = (record, now + self._ttl)
        return record

    def _ensure(
        self,
        scope: Scope,
        name: str,
        group: str,
        known_id: int | None,
    ) -> ScaleSetRecord:
        client = self.client(scope)
        if group.casefold() == DEFAULT_RUNNER_GROUP.casefold():
            group_id = DEFAULT_RUNNER_GROUP_ID
        else:
            group_id = client.get_runner_group_by_name(group).id
        spec = RunnerScaleSetSpec(name=name, runner_group_id=group_id, labels=(name,))
        found = client.get_runner_scale_set(group_id, name)
        if found is None and known_id is not None:
            found = self._by_id(client, known_id)  # renamed or moved: the same scale set
        if found is None:
            found = client.create_runner_scale_set(spec)
        elif (
            _label_names(found) != [name.casefold()]
            or found.name != name
            or found.runner_group_id != group_id
        ):
            found = client.update_runner_scale_set(found.id, spec)
        return ScaleSetRecord(
            found.id, found.name, found.runner_group_id, found.runner_group_name or group
        )

    @staticmethod
    def _by_id(client: ScaleSetClient, scale_set_id: int) -> RunnerScaleSet | None:
        try:
            return client.get_runner_scale_set_by_id(scale_set_id)
        except ScaleSetHTTPError as error:
            if error.status == 404:
                return None
            raise

    def delete_scale_set(self, scope: Scope, scale_set_id: int) -> None:
        refuse_if_offline("runner scale set")

        def delete() -> None:
            try:
                self.client(scope).delete_runner_scale_set(scale_set_id)
            except ScaleSetHTTPError as error:
                if error.status != 404:
                    raise

        _translated(delete)
        with self._lock:
            for key in [k for k, (r, _) in self._known.items() if r.id == scale_set_id]:
                del self._known[key]

    def generate_jit_config(
        self, scope: Scope, scale_set_id: int, name: str, work_folder: str
    ) -> JitConfig:
        refuse_if_offline("runner scale set JIT config")
        client = self.client(scope)
        config = _translated(
            lambda: client.generate_jit_runner_config(scale_set_id, name, work_folder)
        )
        runner = GitHubRunner(
            id=config.runner.id,
            name=config.runner.name,
            status="offline",
            busy=False,
            ephemeral=True,
        )
        return JitConfig(
            runner=runner, encoded_jit_config=config.encoded_jit_config.get_secret_value()
        )


def _label_names(scale_set: RunnerScaleSet) -> list[str]:
    labels: Sequence[Label] = scale_set.labels or ()
    return [label.name.casefold() for label in labels]


def _translated(call: Callable[[], _T]) -> _T:
    """The hooks' error kinds: a throttled call is RateLimitedError (retried when it says),
    a taken name ConflictError; the rest are GitHubErrors already."""
    try:
        return call()
    except ScaleSetRateLimitedError as error:
        log.info("scale-set call throttled: %s", error)
        raise RateLimitedError(
            stable_text(error), retry_after=error.retry_after, status=error.status
        ) from None
    except RunnerExistsError as error:
        raise ConflictError(stable_text(error), error.status) from None
    except ScaleSetError as error:
        log.info("scale-set call failed: %s", error)  # with the ids GitHub support asks for
        raise GitHubError(stable_text(error), error.status) from None


def config_url(settings: Settings, scope: Scope) -> str:
    """The configuration URL runners of `scope` register with (github.com or the GHES host)."""
    base = settings.runner_github_url.rstrip("/")
    if scope.repository:
        return f"{base}/{scope.repository}"
    if scope.organization:
        return f"{base}/{scope.organization}"
    return f"{base}/enterprises/{scope.enterprise}"


HOOK_RETRY = RetryPolicy(retry_max=2, wait_min=0.5, wait_max=2.0, max_rate_limit_wait=0.0)
"""A hook waits a little for a flaky answer, never for a rate limit: that becomes a resync."""


def scale_sets_from_settings(settings: Settings, clock: Clock) -> ScaleSetService:
    """The service with the server's credentials (a PAT, or the GitHub App's installation)."""
    from github import Github

    from hooks.github.pygithub_adapter import scale_set_auth_from_settings

    auth = scale_set_auth_from_settings(settings, clock)
    # Binds the auth to a requester, which an installation token is fetched with.
    Github(auth=auth, base_url=settings.api_base_url)

    def client_for(scope: Scope) -> ScaleSetClient:
        return ScaleSetClient(
            config_url(settings, scope),
            lambda: auth.token,
            clock=clock,
            retry=HOOK_RETRY,
            api_url=settings.api_base_url,
        )

    return ScaleSetService(client_for, clock)
