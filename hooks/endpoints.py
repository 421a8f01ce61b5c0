"""Hook endpoints: decode and check a Metacontroller request, run the controller's handler
(in a worker thread when it may call GitHub), encode the answer, log one line and record the
latency. A request that is not a hook call gets a 4xx saying why; nothing escapes as a 500
without a JSON body."""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import orjson
from prometheus_client import Histogram
from pydantic import BaseModel, ValidationError
from starlette.requests import ClientDisconnect, Request
from starlette.responses import Response

from hooks.children import as_kept
from hooks.events import EventRecorder, LifecycleEvent
from hooks.github.offline import WouldBlock, offline
from hooks.json_body import UnreadableBody
from hooks.kube.port import PODS, KubeError, KubePort, NotFound, Resource
from hooks.metacontroller import (
    MEMBERS_CHECKED,
    CompositeHookRequest,
    CompositeHookResponse,
    CustomizeHookRequest,
    DecoratorHookRequest,
    DecoratorHookResponse,
    HookKind,
    HookRoute,
    KubeObject,
    encode_answer,
)
from hooks.metrics import FRESH_PARENT_READS, HOOK_LATENCY
from hooks.redaction import mask_credentials, without_credentials
from hooks.request_body import BodyTooLarge, body_within
from hooks.request_reader import ReadRequest, RequestReader
from hooks.workers import CallRunner

log = logging.getLogger("arc_hooks.hooks")

Endpoint = Callable[[Request], Any]
M = TypeVar("M", bound=BaseModel)
R = TypeVar("R", CompositeHookRequest, DecoratorHookRequest)
T = TypeVar("T")
Fields = dict[str, Any]

JSON_MEDIA_TYPE = "application/json"


class BadHookRequest(Exception):
    """The request is not a hook call we can read; answered with a 4xx and this message."""

    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.status = status


@dataclass(frozen=True)
class BodyReading:
    """How the hooks read request bodies: at most `max_bytes` each, decoded by `reader` (one
    for every hook, so that the objects one request shares with another are decoded once)."""

    reader: RequestReader
    max_bytes: int


def hook_endpoint(
    route: HookRoute,
    workers: CallRunner,
    kube: KubePort,
    events: EventRecorder,
    reading: BodyReading,
) -> Endpoint:
    if route.kind is HookKind.CUSTOMIZE:
        return _customize_endpoint(route, CompositeHookRequest, reading)
    if route.kind is HookKind.CUSTOMIZE_DECORATOR:
        return _customize_endpoint(route, CustomizeHookRequest, reading)
    if route.kind is HookKind.COMPOSITE:
        return _sync_endpoint(
            route,
            _Edge(workers, kube, events, reading),
            CompositeHookRequest,
            lambda r: r.parent,
            _composite_details,
        )
    return _sync_endpoint(
        route,
        _Edge(workers, kube, events, reading),
        DecoratorHookRequest,
        lambda r: r.object,
        _decorator_details,
    )


@dataclass(frozen=True)
class _Edge:
    """What a sync endpoint carries out besides answering: worker threads for handlers that
    call GitHub, the Kubernetes API for forced deletes, and the event recorder."""

    workers: CallRunner
    kube: KubePort
    events: EventRecorder
    reading: BodyReading


def _composite_details(response: Any) -> Fields:
    status = response.status or {}
    return {"children": len(response.children), "phase": status.get("phase")}


def _decorator_details(response: Any) -> Fields:
    return {"annotations": sorted(response.annotations)}  # which change, never their values


READ_BACK = ("registration",)
"""Status records the hooks read back as written: a Runner's registration, where its runner
went (a copy of what the spec said then). Masked, a later call would look elsewhere."""


def _sync_endpoint(
    route: HookRoute,
    edge: _Edge,
    model: type[R],
    subject: Callable[[R], KubeObject],
    details: Callable[[Any], Fields],
) -> Endpoint:
    """A sync or finalize hook: read and check the request, answer, log and count the call.
    `subject` is the object the call is about; `details`, what the log line says of the
    answer."""
    path, handler = route.path, route.handler

    async def endpoint(request: Request) -> Response:
        started = time.perf_counter()
        key = "-"
        try:
            hook_request = _validated(model, await _read_body(request, edge.reading))
            key = _object_key(subject(hook_request))
            gone = False
            if route.fresh_parent is not None and isinstance(hook_request, CompositeHookRequest):
                fresh = await _fresh(edge.kube, route.fresh_parent, hook_request)
                gone = fresh is None
                hook_request = fresh or hook_request
            if gone and isinstance(hook_request, CompositeHookRequest):
                response = _changing_nothing(hook_request)
            elif route.blocking:
                response = await _from_memory_first(edge.workers, handler, hook_request)
            else:
                response = handler(hook_request)
            if isinstance(response, DecoratorHookResponse) and response.force_delete_uid:
                response = await _force_delete(edge.kube, subject(hook_request), response)
            if response.events:
                await edge.events.record(subject(hook_request), response.events)
            wire = response.to_wire()
            for shown in ("status", "annotations"):  # read by people: no credentials
                if wire.get(shown) is not None:
                    wire[shown] = without_credentials(wire[shown], kept=READ_BACK)
            body = encode_answer(wire)
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


async def _from_memory_first(workers: CallRunner, handler: Callable[[Any], T], request: Any) -> T:
    """A blocking handler's answer: on the event loop when GitHub's cached answers suffice,
    else from the start again in a worker thread (`hooks.github.offline`)."""
    if workers.runs_inline:
        return await workers.run(handler, request)
    try:
        with offline():
            return handler(request)
    except WouldBlock:
        return await workers.run(handler, request)


FORCE_DELETE_RETRY_SECONDS = 10.0


async def _fresh(
    kube: KubePort,
    resource_of: Callable[[CompositeHookRequest], Resource | None],
    request: CompositeHookRequest,
) -> CompositeHookRequest | None:
    """The request with its parent as the API server has it now, when the route asks for it;
    None when the parent is gone (deleted since the cache saw it). Should the read fail, the
    cached parent is decided on, as without this step."""
    resource = resource_of(request)
    if resource is None:
        return request
    metadata = request.parent["metadata"]
    try:
        fresh = await kube.get(resource, str(metadata.get("namespace") or ""), metadata["name"])
    except NotFound:
        FRESH_PARENT_READS.labels(outcome="gone").inc()
        return None
    except KubeError as error:
        FRESH_PARENT_READS.labels(outcome="failed").inc()
        log.warning("fresh parent read failed", extra={"detail": str(error)})
        return request
    fresh_metadata = fresh.get("metadata") or {}
    if fresh_metadata.get("uid") != metadata.get("uid"):
        FRESH_PARENT_READS.labels(outcome="gone").inc()
        return None  # the name holds a new object: the one the cache has is gone
    if fresh_metadata.get("resourceVersion") == metadata.get("resourceVersion"):
        FRESH_PARENT_READS.labels(outcome="current").inc()
        return request
    FRESH_PARENT_READS.labels(outcome="newer").inc()
    return request.model_copy(update={"parent": fresh})


def _changing_nothing(request: CompositeHookRequest) -> CompositeHookResponse:
    """The answer for a parent deleted since Metacontroller's cache saw it: every child as it
    is, nothing new (the garbage collector takes them with their owner), the status as sent."""
    children = [as_kept(obj) for group in request.children.values() for obj in group.values()]
    status = request.parent.get("status")
    return CompositeHookResponse(
        status=status if isinstance(status, dict) else None, children=children
    )


async def _force_delete(
    kube: KubePort, pod: KubeObject, response: DecoratorHookResponse
) -> DecoratorHookResponse:
    """Carry out the decorator's forced delete; the finalizer goes only once it is done."""
    metadata = pod["metadata"]
    try:
        await kube.delete(
            PODS,
            str(metadata.get("namespace") or ""),
            str(metadata["name"]),
            uid=response.force_delete_uid,
            grace_period_seconds=0,
        )
    except NotFound:
        pass  # gone already
    except KubeError as error:
        if error.status != 409:  # 409: another pod holds the name now; this one is gone
            log.warning("forced delete failed", extra={"detail": str(error)})
            return response.model_copy(
                update={"finalized": False, "resync_after_seconds": FORCE_DELETE_RETRY_SECONDS}
            )
    log.info("forced delete of a pod on an unreachable node", extra={"pod": metadata["name"]})
    deleted = LifecycleEvent("PodDeleted", f"Forcefully deleted pod '{metadata['name']}'")
    return response.model_copy(update={"events": [*response.events, deleted]})


def _customize_endpoint(
    route: HookRoute,
    model: type[CompositeHookRequest] | type[CustomizeHookRequest],
    reading: BodyReading,
) -> Endpoint:
    """Customize hooks name the related objects a parent wants to see. A decorator's request
    names the object `parent` too; `object`, the name its sync requests use, is accepted."""
    path, handler = route.path, route.handler

    async def endpoint(request: Request) -> Response:
        started = time.perf_counter()
        key = "-"
        try:
            hook_request = _validated(model, await _read_body(request, reading))
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
        # The reason may quote the request (a key, a value): shown without credentials.
        message = mask_credentials(str(error))
        return _finish(path, mask_credentials(key), "bad_request", started, error.status, message)
    log.error("hook failed", exc_info=error, extra={"path": path, "parent": key})
    return _finish(path, key, "error", started, 500, "internal error; see the logs")


async def _read_body(request: Request, reading: BodyReading) -> ReadRequest:
    limit = reading.max_bytes
    try:
        body = await body_within(request, limit)
    except ClientDisconnect:
        raise BadHookRequest("the caller disconnected before its body arrived") from None
    except BodyTooLarge as error:
        raise BadHookRequest(
            f"request body of {error.described()} is over the limit of {limit} "
            "(HOOK_MAX_REQUEST_BYTES)",
            status=413,
        ) from None
    try:
        return reading.reader.read(body)
    except UnreadableBody as error:
        raise BadHookRequest(str(error)) from None


_CHECKED_MEMBERS = {MEMBERS_CHECKED: True}


def _validated(model: type[M], read: ReadRequest) -> M:
    context = _CHECKED_MEMBERS if read.members_checked else None
    try:
        validated = model.model_validate(read.document, context=context)
    except ValidationError as error:
        raise BadHookRequest(
            "not a Metacontroller hook request: " + _summarize(error), status=422
        ) from None
    if read.members_checked and isinstance(validated, CompositeHookRequest | DecoratorHookRequest):
        validated.share_members()
    return validated


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
    return _json_body(orjson.dumps({"error": message}), status)


def _json_body(body: bytes, status: int = 200) -> Response:
    return Response(body, status_code=status, media_type=JSON_MEDIA_TYPE)


def _record(path: str, outcome: str, started: float) -> None:
    _hook_latency(path, outcome).observe(time.perf_counter() - started)


@functools.cache  # a handful of paths times a handful of outcomes
def _hook_latency(path: str, outcome: str) -> Histogram:
    return HOOK_LATENCY.labels(path=path, outcome=outcome)
