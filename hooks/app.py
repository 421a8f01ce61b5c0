"""The HTTP edge: a Starlette app that turns Metacontroller hook calls into controller calls.

Everything here is transport: decode and check the request, run the pure controller in a
worker thread (the GitHub adapter is synchronous), encode the answer, log one line and record
the latency. Decisions live in the controller modules.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any, TypeVar

import orjson
from prometheus_client import CONTENT_TYPE_LATEST, Histogram, generate_latest
from pydantic import BaseModel, ValidationError
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import Route

from hooks.autoscaler.controller import (
    AutoscalerDeps,
    customize_horizontal_runner_autoscaler,
    sync_horizontal_runner_autoscaler,
)
from hooks.clock import Clock, SystemClock
from hooks.deployment.controller import (
    DeploymentDeps,
    customize_runner_deployment,
    sync_runner_deployment,
)
from hooks.github.port import GitHubPort, RunnerGroupInfo
from hooks.hook_auth import HookAuthMiddleware, HookCredentials
from hooks.kube.cluster import ClusterKube
from hooks.kube.port import KubePort
from hooks.metacontroller import (
    CompositeHookRequest,
    CompositeHookResponse,
    CustomizeHookRequest,
    DecoratorHookRequest,
    DecoratorHookResponse,
    KubeObject,
)
from hooks.metrics import HOOK_LATENCY, REGISTRY
from hooks.replicaset.controller import ReplicaSetDeps, sync_runner_replica_set
from hooks.runner.controller import RunnerHookDeps, finalize_runner, sync_runner
from hooks.runnerpod.controller import (
    RunnerPodDeps,
    customize_runner_pod,
    finalize_runner_pod,
    sync_runner_pod,
)
from hooks.runnerset.controller import (
    RunnerSetDeps,
    customize_runner_set,
    finalize_runner_set,
    sync_runner_set,
)
from hooks.settings import Settings
from hooks.telemetry import record_autoscaler, record_delivery
from hooks.unconfigured import UnconfiguredGitHub
from hooks.webhook.decision import Decision
from hooks.webhook.receiver import FAILED, Reply, WebhookReceiver
from hooks.webhook.targets import GroupScope, RunnerGroup, RunnerGroupVisibility
from hooks.workers import CallRunner, InlineCalls, WorkerThreads

log = logging.getLogger("arc_hooks.hooks")

CompositeHandler = Callable[[CompositeHookRequest], CompositeHookResponse]
DecoratorHandler = Callable[[DecoratorHookRequest], DecoratorHookResponse]
HookRequest = TypeVar("HookRequest", bound=BaseModel)
_Request = TypeVar("_Request", CompositeHookRequest, DecoratorHookRequest)
_Response = TypeVar("_Response", CompositeHookResponse, DecoratorHookResponse)

MAX_BODY_BYTES = 32 * 1024 * 1024
"""Metacontroller sends every child in one request; 1,000 runner pods fit well inside this."""

ORJSON_MAX_WRITTEN_DEPTH = 254
"""The deepest nesting orjson encodes (it decodes up to 1,024 levels)."""

ANSWER_HEADROOM = 8
"""How much deeper than in its request an answer may nest what it copies (a level or two
today), with room to spare."""

MAX_NESTING = ORJSON_MAX_WRITTEN_DEPTH - ANSWER_HEADROOM
"""The deepest request accepted. Kubernetes objects nest a few dozen levels at most."""


JSON_MEDIA_TYPE = "application/json"

MAX_WEBHOOK_BYTES = 25 * 1024 * 1024
"""GitHub caps webhook payloads at 25 MB."""

WEBHOOK_DEADLINE_SECONDS = 8.0
"""GitHub gives up on a delivery after 10 s; answer before it does."""


@dataclass(frozen=True)
class AppState:
    settings: Settings
    deps: RunnerHookDeps
    credentials: HookCredentials
    workers: CallRunner = field(default_factory=WorkerThreads)


def create_app(
    settings: Settings,
    *,
    github: GitHubPort | None = None,
    clock: Clock | None = None,
    github_blocks: bool = True,
    kube: KubePort | None = None,
) -> Starlette:
    """The hook server. `github_blocks=False` says the GitHub port never waits on I/O (the
    simulated world's in-process GitHub): hooks then run on the event loop, without threads.
    `kube` is the webhook receiver's Kubernetes API access (default: the cluster's, via the
    pod's service account or a kubeconfig)."""
    clock = clock or SystemClock()
    if github is None:
        github = _github_from_settings(settings, clock)
    state = AppState(
        settings=settings,
        deps=RunnerHookDeps(github, clock, settings),
        credentials=HookCredentials.from_settings(settings),
        workers=WorkerThreads() if github_blocks else InlineCalls(),
    )

    runner_deps = state.deps
    replica_set_deps = ReplicaSetDeps(clock)
    runner_set_deps = RunnerSetDeps(github, clock, settings)
    deployment_deps = DeploymentDeps(clock, tuple(settings.common_runner_labels))
    autoscaler_deps = AutoscalerDeps(
        github,
        clock,
        sync_period=settings.sync_period,
        default_scale_down_delay=timedelta(seconds=settings.default_scale_down_delay),
        observe=record_autoscaler,
    )
    receiver = _webhook_receiver(settings, github, clock, kube, state.workers)
    # Handlers that may call GitHub run in worker threads; the others only compute.
    composite: list[tuple[str, CompositeHandler, bool]] = [
        ("/sync/runner", functools.partial(sync_runner, deps=runner_deps), True),
        ("/finalize/runner", functools.partial(finalize_runner, deps=runner_deps), True),
        (
            "/sync/runnerreplicaset",
            functools.partial(sync_runner_replica_set, deps=replica_set_deps),
            False,
        ),
        (
            "/sync/runnerdeployment",
            functools.partial(sync_runner_deployment, deps=deployment_deps),
            False,
        ),
        ("/sync/runnerset", functools.partial(sync_runner_set, deps=runner_set_deps), True),
        (
            "/finalize/runnerset",
            functools.partial(finalize_runner_set, deps=runner_set_deps),
            True,
        ),
        (
            "/sync/horizontalrunnerautoscaler",
            functools.partial(sync_horizontal_runner_autoscaler, deps=autoscaler_deps),
            True,
        ),
    ]
    routes = [
        Route(path, _composite_hook(state, path, handler, blocking), methods=["POST"])
        for path, handler, blocking in composite
    ]
    runner_pod_deps = RunnerPodDeps(github, clock, settings)
    decorator: list[tuple[str, DecoratorHandler, bool]] = [
        ("/sync/runnerpod", functools.partial(sync_runner_pod, deps=runner_pod_deps), True),
        (
            "/finalize/runnerpod",
            functools.partial(finalize_runner_pod, deps=runner_pod_deps),
            True,
        ),
    ]
    routes += [
        Route(path, _decorator_hook(state, path, handler, blocking), methods=["POST"])
        for path, handler, blocking in decorator
    ]
    routes += [
        Route(
            "/customize/runnerdeployment",
            _customize_hook("/customize/runnerdeployment", customize_runner_deployment),
            methods=["POST"],
        ),
        Route(
            "/customize/runnerset",
            _customize_hook("/customize/runnerset", customize_runner_set),
            methods=["POST"],
        ),
        Route(
            "/customize/horizontalrunnerautoscaler",
            _customize_hook(
                "/customize/horizontalrunnerautoscaler", customize_horizontal_runner_autoscaler
            ),
            methods=["POST"],
        ),
        Route(
            "/customize/runnerpod",
            _customize_hook("/customize/runnerpod", customize_runner_pod, CustomizeHookRequest),
            methods=["POST"],
        ),
        Route("/webhook/github", _webhook(receiver), methods=["GET", "POST"]),
        Route("/healthz", _healthz, methods=["GET"]),
        Route("/readyz", _readyz(state), methods=["GET"]),
        Route("/metrics", _metrics, methods=["GET"]),
    ]
    # Only Metacontroller may call the hooks: refused before anything is read.
    return Starlette(
        routes=routes,
        middleware=[Middleware(HookAuthMiddleware, credentials=state.credentials)],
    )


def _github_from_settings(settings: Settings, clock: Clock) -> GitHubPort:
    if not settings.has_github_credentials:
        return UnconfiguredGitHub()
    from hooks.github.factory import github_from_settings

    return github_from_settings(settings, clock)


def _webhook_receiver(
    settings: Settings,
    github: GitHubPort,
    clock: Clock,
    kube: KubePort | None,
    workers: CallRunner,
) -> WebhookReceiver:
    secret = settings.github_webhook_secret_token
    visibility: RunnerGroupVisibility | None = None
    if settings.webhook_runner_group_visibility and settings.has_github_credentials:
        visibility = functools.partial(_visible_runner_groups, github)

    async def run_blocking(call: Callable[[], Decision]) -> Decision:
        return await workers.run(call)

    return WebhookReceiver(
        kube if kube is not None else ClusterKube(),
        clock,
        secret=secret.get_secret_value().encode() if secret else None,
        allow_unsigned=settings.webhook_allow_unsigned,
        namespace=settings.watch_namespace or None,
        targets_ttl=settings.webhook_targets_cache_ttl,
        runner_group_visibility=visibility,
        # Only the visibility lookup blocks; without it, deciding needs no thread hop.
        run_blocking=run_blocking if visibility is not None else None,
    )


def _visible_runner_groups(
    github: GitHubPort, organization: str, repository_name: str
) -> list[RunnerGroup]:
    return [
        _runner_group(group)
        for group in github.visible_runner_groups(organization, repository_name)
    ]


def _runner_group(group: RunnerGroupInfo) -> RunnerGroup:
    """As ARC reads GitHub's answer: the default group has no name, inherited ones are the
    enterprise's."""
    scope = GroupScope.ENTERPRISE if group.inherited else GroupScope.ORGANIZATION
    return RunnerGroup(scope, "" if group.default else group.name)


def _webhook(receiver: WebhookReceiver) -> Callable[[Request], Any]:
    async def endpoint(request: Request) -> Response:
        if request.method == "GET":
            return PlainTextResponse("webhook server is running")
        started = time.perf_counter()
        try:
            async with asyncio.timeout(WEBHOOK_DEADLINE_SECONDS):
                body = await _bounded_body(request, MAX_WEBHOOK_BYTES)
                reply = (
                    await receiver.handle(request.headers, body)
                    if body is not None
                    else Reply(413, "payload too large", outcome="rejected")
                )
        except TimeoutError:
            reply = Reply(503, "timed out before GitHub's 10-second limit", outcome=FAILED)
        except Exception:
            log.exception("webhook failed")
            reply = Reply(500, "internal error; see the logs", outcome=FAILED)
        elapsed = time.perf_counter() - started
        record_delivery(reply, elapsed)
        log.log(
            logging.INFO if reply.status < 500 else logging.WARNING,
            "webhook",
            extra={
                "delivery": request.headers.get("x-github-delivery", "-"),
                "event": reply.event or "-",
                "action": reply.action or "-",
                "outcome": reply.outcome,
                "status": reply.status,
                "autoscaler": reply.autoscaler or "-",
                "detail": reply.message,
                "duration_ms": round(elapsed * 1000, 2),
            },
        )
        return PlainTextResponse(reply.message, status_code=reply.status)

    return endpoint


async def _bounded_body(request: Request, limit: int) -> bytes | None:
    declared = request.headers.get("content-length")
    if declared and declared.isdigit() and int(declared) > limit:
        return None
    body = await request.body()
    return body if len(body) <= limit else None


class BadHookRequest(Exception):
    """The request is not a hook call we can read; answered with a 4xx and this message."""

    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.status = status


def _composite_hook(
    state: AppState, path: str, handler: CompositeHandler, blocking: bool
) -> Callable[[Request], Any]:
    return _hook(
        state,
        path,
        CompositeHookRequest,
        lambda request: request.parent,
        handler,
        blocking,
        lambda response: {
            "children": len(response.children),
            "phase": (response.status or {}).get("phase"),
        },
    )


def _decorator_hook(
    state: AppState, path: str, handler: DecoratorHandler, blocking: bool
) -> Callable[[Request], Any]:
    """A DecoratorController's sync or finalize hook: as `_composite_hook`, for one object."""
    return _hook(
        state,
        path,
        DecoratorHookRequest,
        lambda request: request.object,
        handler,
        blocking,
        # Which annotations change, never their values.
        lambda response: {"annotations": sorted(response.annotations)},
    )


def _hook(
    state: AppState,
    path: str,
    model: type[_Request],
    subject: Callable[[_Request], KubeObject],
    handler: Callable[[_Request], _Response],
    blocking: bool,
    details: Callable[[_Response], dict[str, Any]],
) -> Callable[[Request], Any]:
    """A sync or finalize hook: read and check the request, answer, log and count the call."""

    async def endpoint(request: Request) -> Response:
        started = time.perf_counter()
        key = "-"
        try:
            hook_request = _validated(model, await _read_document(request))
            key = _object_key(subject(hook_request))
            if blocking:
                response = await state.workers.run(handler, hook_request)
            else:
                response = handler(hook_request)
            wire = response.to_wire()
            body = orjson.dumps(wire)
        except Exception as error:
            return _failed(path, key, started, error)
        outcome = "finalized" if response.finalized else "ok"
        _record(path, outcome, started)
        if log.isEnabledFor(logging.INFO):
            log.info(
                "hook",
                extra={
                    "path": path,
                    "parent": key,
                    "outcome": outcome,
                    "duration_ms": round((time.perf_counter() - started) * 1000, 2),
                    **details(response),
                    "resync_after_seconds": wire.get("resyncAfterSeconds"),
                    "finalized": response.finalized,
                },
            )
        return _json_body(body)

    return endpoint


def _customize_hook(
    path: str,
    handler: Callable[[dict[str, Any]], dict[str, Any]],
    model: type[CompositeHookRequest] | type[CustomizeHookRequest] = CompositeHookRequest,
) -> Callable[[Request], Any]:
    """Customize hooks name the related objects a parent wants to see. A decorator's request
    names the object `parent` too; `object`, the name its sync requests use, is accepted."""

    async def endpoint(request: Request) -> Response:
        started = time.perf_counter()
        key = "-"
        try:
            hook_request = _validated(model, await _read_document(request))
            key = _object_key(hook_request.parent)
            answer = handler({"controller": hook_request.controller, "parent": hook_request.parent})
            body = orjson.dumps(answer)
        except Exception as error:
            return _failed(path, key, started, error)
        _record(path, "ok", started)
        return _json_body(body)

    return endpoint


def _failed(path: str, key: str, started: float, error: Exception) -> Response:
    """A refused request (4xx, with the reason), or a failure: a JSON 500, never an exception
    escaping to the server (whose plain-text 500 would also close the connection)."""
    if isinstance(error, BadHookRequest):
        return _finish(path, key, "bad_request", started, error.status, str(error))
    log.error("hook failed", exc_info=error, extra={"path": path, "parent": key})
    return _finish(path, key, "error", started, 500, "internal error; see the logs")


async def _read_document(request: Request) -> dict[str, Any]:
    body = await request.body()
    if len(body) > MAX_BODY_BYTES:
        raise BadHookRequest("request body too large", status=413)
    try:
        document = orjson.loads(body)
    except orjson.JSONDecodeError as error:
        raise BadHookRequest(f"request body is not valid JSON: {error.msg}") from None
    if not isinstance(document, dict):
        raise BadHookRequest("request body must be a JSON object")
    _check_nesting(document)
    return document


def _check_nesting(document: dict[str, Any]) -> None:
    """Refuse, before any work, a request whose answer could not be written.

    orjson reads JSON nested 1,024 levels deep but writes only 254 levels, and an answer nests
    what it copies from its request a level or two deeper (a RunnerSet's pod template goes into
    a StatefulSet's spec). A request that could not be written back with `ANSWER_HEADROOM`
    more levels around it is therefore refused here, rather than failing after the handler has
    run (and perhaps called GitHub). Encoding measures the depth exactly as the answer's
    encoding will, at a fraction of the decoding's cost."""
    wrapped: object = document
    for _ in range(ANSWER_HEADROOM):
        wrapped = [wrapped]
    try:
        orjson.dumps(wrapped)
    except orjson.JSONEncodeError:
        raise BadHookRequest(f"request body nested deeper than {MAX_NESTING} levels") from None


def _validated(model: type[HookRequest], document: dict[str, Any]) -> HookRequest:
    try:
        return model.model_validate(document)
    except ValidationError as error:
        raise BadHookRequest(
            "not a Metacontroller hook request: " + _summarize(error), status=422
        ) from None


def _summarize(error: ValidationError) -> str:
    return "; ".join(
        f"{'.'.join(str(p) for p in item['loc']) or 'body'}: {item['msg']}"
        for item in error.errors()[:5]
    )


def _object_key(obj: dict[str, Any]) -> str:
    """`namespace/name` of a parent the request model identified (its name is a string)."""
    metadata = obj["metadata"]
    namespace, name = metadata.get("namespace"), str(metadata["name"])
    return f"{namespace}/{name}" if isinstance(namespace, str) and namespace else name


def _finish(
    path: str, parent: str, outcome: str, started: float, status: int, message: str
) -> Response:
    _record(path, outcome, started)
    log.warning(
        "hook rejected" if status < 500 else "hook error",
        extra={
            "path": path,
            "parent": parent,
            "outcome": outcome,
            "status": status,
            "detail": message,
        },
    )
    return _json_response({"error": message}, status)


def _json_response(content: dict[str, Any], status: int = 200) -> Response:
    return _json_body(orjson.dumps(content), status)


def _json_body(body: bytes, status: int = 200) -> Response:
    return Response(body, status_code=status, media_type=JSON_MEDIA_TYPE)


def _record(path: str, outcome: str, started: float) -> None:
    _hook_latency(path, outcome).observe(time.perf_counter() - started)


@functools.cache  # a handful of paths times a handful of outcomes
def _hook_latency(path: str, outcome: str) -> Histogram:
    return HOOK_LATENCY.labels(path=path, outcome=outcome)


async def _healthz(request: Request) -> Response:
    return PlainTextResponse("ok")


def _readyz(state: AppState) -> Callable[[Request], Any]:
    async def endpoint(request: Request) -> Response:
        reasons = []
        if not state.credentials.ready:
            reasons.append(state.credentials.not_ready_reason())
        if not state.settings.has_github_credentials:
            reasons.append(
                "no GitHub credentials (set GITHUB_TOKEN, or GITHUB_APP_ID, "
                "GITHUB_APP_INSTALLATION_ID and GITHUB_APP_PRIVATE_KEY)"
            )
        if reasons:
            return PlainTextResponse("not ready: " + "; ".join(reasons), status_code=503)
        return PlainTextResponse("ready")

    return endpoint


async def _metrics(request: Request) -> Response:
    return Response(generate_latest(REGISTRY), media_type=CONTENT_TYPE_LATEST)
