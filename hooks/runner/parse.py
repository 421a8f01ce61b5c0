"""A Runner as a hook request carries it: its parsed spec (memoized), its last status, scopes.

Parsing costs more than a steady-state sync, so a parsed Runner, with its desired pod built on
first use, is kept by the exact parent text and the settings it depends on.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

import orjson
from pydantic import ValidationError

from hooks.children import describe_validation_error
from hooks.deps import HookDeps
from hooks.github.credentials import requested_credentials, spec_secret_name
from hooks.github.port import Scope
from hooks.memo import PLAIN_JSON
from hooks.metacontroller import CompositeHookRequest, KubeObject, object_or_empty
from hooks.naming import ephemeral_claims_problem
from hooks.resources.readable_part import readable_fields, readable_part
from hooks.resources.runner import Runner, RunnerStatus
from hooks.runner.container_mode import pod_service_account
from hooks.runner.pod import PodDefaults, build_runner_pod, ephemeral_volume_names, pod_defaults
from hooks.runner.registration import registration_mode
from hooks.runner.secret import registration_secret_name
from hooks.runner.validation import validate_runner_spec
from hooks.scale_set_mode import member_of_scale_set
from hooks.settings import Settings


class ParsedRunner:
    """What the parent object and the settings alone determine: the Runner, the problems of
    its spec, its registration mode and, built on first use, its desired pod.

    Shared by concurrent calls through the memo: nothing here is ever changed once built (the
    pod included: callers only read it and serialize it)."""

    __slots__ = ("_pod", "defaults", "jit", "problems", "runner", "scale_set_id")

    def __init__(
        self,
        runner: Runner | None,
        problems: tuple[str, ...],
        jit: bool,
        defaults: PodDefaults,
        scale_set_id: int | None = None,
    ) -> None:
        self.runner = runner
        self.problems = problems
        self.jit = jit
        self.defaults = defaults
        self.scale_set_id = scale_set_id  # a member of this runner scale set (always JIT)
        self._pod: KubeObject | None = None

    def pod(self) -> KubeObject:
        pod = self._pod
        if pod is None:
            assert self.runner is not None
            pod = build_runner_pod(
                self.runner,
                self.defaults,
                secret_name=registration_secret_name(self.runner.metadata.name),
                jit=self.jit,
                service_account=pod_service_account(self.runner),
            )
            self._pod = pod
        return pod


def parse_runner(request: CompositeHookRequest, deps: HookDeps) -> ParsedRunner:
    """The parsed parent, from the memo when an identical parent was parsed with these settings.

    The key is the parent's JSON text without what changes on every write and does not shape
    the result (status, which each call reads afresh, and the resourceVersion), plus the
    registration mode setting and the pod defaults: everything the result depends on."""
    settings = deps.settings
    mode, defaults = settings.runner_registration_mode, _pod_defaults(request, settings)
    parent = _without_volatile_fields(request.parent)
    try:
        text = orjson.dumps(parent, option=PLAIN_JSON)
    except orjson.JSONEncodeError:
        return _parse_now(parent, mode, defaults)
    key = (text, mode, defaults)
    parsed = deps.parsed_parents.get(key)
    if parsed is None:
        # More Runners than the memo holds (it keeps their pods too) are parsed again, but
        # their spec's problems, the costly part, are kept for many more, by a digest of what
        # they depend on: a Runner given a finalizer, then deleted, is not checked again.
        digest = _problems_digest(parent, mode, defaults)
        problems = deps.parsed_problems.get(digest)
        parsed = _parse_now(parent, mode, defaults, problems)
        deps.parsed_parents.put(key, parsed, weight=len(text))
        if problems is None and parsed.runner is not None:
            deps.parsed_problems.put(digest, parsed.problems)
    assert isinstance(parsed, ParsedRunner)
    return parsed


def _pod_defaults(request: CompositeHookRequest, settings: Settings) -> PodDefaults:
    """The server's defaults, with the URLs of the Runner's credentials Secret if it has one."""
    secret_name = spec_secret_name(request.parent)
    if secret_name is None:
        return PodDefaults.from_settings(settings)
    namespace = object_or_empty(request.parent.get("metadata")).get("namespace")
    namespace = namespace if isinstance(namespace, str) else ""
    return pod_defaults(settings, requested_credentials(request, namespace, secret_name))


_POD_METADATA_FIELDS = ("name", "namespace", "labels", "annotations")
"""What a Runner's pod takes from the Runner's metadata (`hooks.runner.pod`), and with its spec
all that the spec's problems depend on."""


def _problems_digest(parent: KubeObject, mode: str, defaults: PodDefaults) -> bytes:
    metadata = parent.get("metadata")
    checked = {
        "spec": parent.get("spec"),
        "metadata": {key: metadata.get(key) for key in _POD_METADATA_FIELDS}
        if isinstance(metadata, dict)
        else metadata,
    }
    text = orjson.dumps(checked, option=PLAIN_JSON) + repr((mode, defaults)).encode()
    return hashlib.blake2b(text, digest_size=16).digest()


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


def _parse_now(
    parent: KubeObject,
    mode: str,
    defaults: PodDefaults,
    problems: tuple[str, ...] | None = None,
) -> ParsedRunner:
    """Parse `parent`; `problems`, when given, are its spec's, found before."""
    try:
        runner = Runner.model_validate(parent)
    except ValidationError as error:
        return ParsedRunner(
            None, (describe_validation_error(error, "Runner"),), jit=False, defaults=defaults
        )
    scale_set_id, jit = _registered_as(runner, mode)
    if problems is None:  # else remembered by a digest of the spec and the name
        problems = tuple(
            validate_runner_spec(
                runner.spec,
                jit=jit,
                metadata=runner.metadata,
                jit_default_image=defaults.image_for(jit=True),
            )
        )
        volumes = ephemeral_volume_names(runner.spec)
        claims = ephemeral_claims_problem(len(runner.metadata.name), volumes)
        if claims is not None:
            problems = (*problems, claims)
    return ParsedRunner(runner, problems, jit=jit, defaults=defaults, scale_set_id=scale_set_id)


def readable_runner(request: CompositeHookRequest, deps: HookDeps) -> ParsedRunner:
    """The Runner as far as it reads (`hooks.resources.readable_part`), with the problems of
    the whole: what a finalize stops its runner by when its spec does not read."""
    parsed = parse_runner(request, deps)
    if parsed.runner is not None:
        return parsed
    runner = readable_part(Runner, request.parent)
    if runner is None:
        return parsed
    scale_set_id, jit = _registered_as(runner, deps.settings.runner_registration_mode)
    return ParsedRunner(runner, parsed.problems, jit, parsed.defaults, scale_set_id)


def _registered_as(runner: Runner, mode: str) -> tuple[int | None, bool]:
    """The scale set the Runner is a member of, if any, and whether it registers with JIT."""
    scale_set_id = member_of_scale_set(runner.metadata.annotations)
    return scale_set_id, registers_with_jit(runner.metadata.annotations, mode)


def registers_with_jit(annotations: Mapping[str, str], mode: str) -> bool:
    """Whether a Runner with these annotations (or a set's template with them) registers with a
    JIT config: a scale set's member always, else as asked, else as the server's setting."""
    in_scale_set = member_of_scale_set(annotations) is not None
    return in_scale_set or registration_mode(annotations, mode) == "jit"


def observed_status(parent: KubeObject, deps: HookDeps) -> RunnerStatus:
    """The status as last written. One that does not parse (edited by hand) counts as empty:
    the hook rebuilds it from what it observes. A resync that changed nothing finds the same
    status text as the last call: the parsed status is then taken from the memo."""
    raw: Any = parent.get("status")
    if not isinstance(raw, dict):
        return RunnerStatus()
    try:
        key = ("RunnerStatus", orjson.dumps(raw, option=PLAIN_JSON))
    except orjson.JSONEncodeError:
        return _parse_status(raw)
    status = deps.parsed_statuses.get(key)
    if status is None:
        status = _parse_status(raw)
        deps.parsed_statuses.put(key, status, weight=len(key[1]))
    assert isinstance(status, RunnerStatus)
    return status


def _parse_status(raw: dict[str, Any]) -> RunnerStatus:
    """The status without the fields that do not read (edited by hand): the rest, such as
    where the runner registered, still counts."""
    return readable_fields(RunnerStatus, raw) or RunnerStatus()


def credentials_secret(runner: Runner) -> str | None:
    credentials = runner.spec.github_api_credentials_from
    ref = credentials.secret_ref if credentials is not None else None
    return ref.name if ref is not None and ref.name else None


def spec_scope(runner: Runner) -> Scope:
    spec = runner.spec
    return Scope(
        enterprise=spec.enterprise or "",
        organization=spec.organization or "",
        repository=spec.repository or "",
    )


def registered_scope(status: RunnerStatus) -> Scope | None:
    """Where the Runner's runners were registered, as its status records it."""
    registration = status.registration
    if registration is None:
        return None
    scope = Scope(
        enterprise=registration.enterprise or "",
        organization=registration.organization or "",
        repository=registration.repository or "",
    )
    return scope if has_scope(scope) else None


def has_scope(scope: Scope) -> bool:
    return bool(scope.enterprise or scope.organization or scope.repository)
