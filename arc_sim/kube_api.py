"""A fake Kubernetes REST API over the simulated world's object store, for HTTP clients (kr8s).

It serves the namespaced resources of `hooks.kube.port` (custom resources, pods, ConfigMaps):
list (one namespace or all), get, create, JSON merge patch and delete, with `Status` bodies for
errors, plus `/version` and the discovery documents kr8s reads. The semantics are `StoreKube`'s;
this layer only translates HTTP, so HTTP clients and in-process callers see the same answers.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from starlette.applications import Starlette
from starlette.datastructures import Headers
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from arc_sim.kube_port import StoreKube
from arc_sim.store import ObjectStore
from hooks.kube.port import (
    CAPACITY_RESERVATIONS,
    CONFIG_MAPS,
    HORIZONTAL_RUNNER_AUTOSCALERS,
    PODS,
    RUNNER_DEPLOYMENTS,
    RUNNER_SETS,
    AlreadyExists,
    KubeError,
    KubeObject,
    Resource,
)

RESOURCES = (
    HORIZONTAL_RUNNER_AUTOSCALERS,
    RUNNER_DEPLOYMENTS,
    RUNNER_SETS,
    CAPACITY_RESERVATIONS,
    PODS,
    CONFIG_MAPS,
)
MERGE_PATCH = "application/merge-patch+json"
VERSION_INFO = {"major": "1", "minor": "33", "gitVersion": "v1.33.0", "platform": "linux/amd64"}
# A real API server shows its version to anyone (system:public-info-viewer), so a client with a
# bad credential fails on its first real request, not on connecting.
PUBLIC_PATHS = frozenset({"/version"})
REASONS = {
    400: "BadRequest",
    401: "Unauthorized",
    404: "NotFound",
    409: "Conflict",
    415: "UnsupportedMediaType",
    422: "Invalid",
}


class FakeKubeApi:
    """An ASGI app. With a `token`, every request but `/version` must carry it as a bearer."""

    def __init__(
        self,
        store: ObjectStore,
        *,
        token: str | None = None,
        resources: Iterable[Resource] = RESOURCES,
    ) -> None:
        self.store = store
        self._kube = StoreKube(store)
        self._token = token
        self._resources = {(r.group, r.version, r.plural): r for r in resources}
        namespaced = "/apis/{group}/{version}/namespaces/{namespace}/{plural}"
        core_collection = "/api/{version}/namespaces/{namespace}/{plural}"  # the core group: ""
        core = core_collection + "/{name}"
        self._app = Starlette(
            routes=[
                Route("/version", self._version),
                Route("/api", self._core_versions),
                Route("/api/v1", self._core_resources),
                Route("/apis", self._groups),
                Route("/apis/{group}/{version}", self._group_resources),
                Route("/apis/{group}/{version}/{plural}", self._list),
                Route(namespaced, self._list, methods=["GET"]),
                Route(namespaced, self._create, methods=["POST"]),
                Route(namespaced + "/{name}", self._get, methods=["GET"]),
                Route(namespaced + "/{name}", self._patch, methods=["PATCH"]),
                Route(namespaced + "/{name}", self._delete, methods=["DELETE"]),
                Route(core_collection, self._create, methods=["POST"]),
                Route(core, self._get, methods=["GET"]),
                Route(core, self._patch, methods=["PATCH"]),
                Route(core, self._delete, methods=["DELETE"]),
            ],
            exception_handlers={KubeError: self._failure},
        )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self._app(scope, receive, send)
            return
        # kr8s asks for `/version/` and `/apis/`; the API server answers them as without the
        # slash, where Starlette would cost a redirect.
        scope = {**scope, "path": scope["path"].rstrip("/") or "/"}
        if not self._authorized(scope):
            await status_response(401, "Unauthorized")(scope, receive, send)
            return
        await self._app(scope, receive, send)

    def _authorized(self, scope: Scope) -> bool:
        if self._token is None or scope["path"] in PUBLIC_PATHS:
            return True
        return Headers(scope=scope).get("authorization") == f"Bearer {self._token}"

    # --- objects

    async def _list(self, request: Request) -> JSONResponse:
        resource = self._resource(request)
        items = await self._kube.list(resource, request.path_params.get("namespace"))
        # Nothing is watched here, so the list's version only has to be a valid one.
        versions = [int(item["metadata"]["resourceVersion"]) for item in items]
        return JSONResponse(
            {
                "apiVersion": resource.api_version,
                "kind": f"{resource.kind}List",
                "metadata": {"resourceVersion": str(max(versions, default=0))},
                "items": items,
            }
        )

    async def _create(self, request: Request) -> JSONResponse:
        resource = self._resource(request)
        obj = await _json_object(request)
        metadata = obj.setdefault("metadata", {})
        namespace = request.path_params["namespace"]
        if metadata.setdefault("namespace", namespace) != namespace:
            raise KubeError("the object's namespace does not match the request's", 400)
        return JSONResponse(await self._kube.create(resource, obj), status_code=201)

    async def _get(self, request: Request) -> JSONResponse:
        resource, namespace, name = self._object_path(request)
        return JSONResponse(await self._kube.get(resource, namespace, name))

    async def _patch(self, request: Request) -> JSONResponse:
        resource, namespace, name = self._object_path(request)
        media_type = request.headers.get("content-type", "").split(";")[0].strip()
        if media_type != MERGE_PATCH:
            raise KubeError(f"only {MERGE_PATCH} patches are supported", 415)
        patch = await _json_object(request)
        return JSONResponse(await self._kube.merge_patch(resource, namespace, name, patch))

    async def _delete(self, request: Request) -> JSONResponse:
        resource, namespace, name = self._object_path(request)
        before = self.store.get(resource.kind, namespace, name)
        options = await _json_object(request) if await request.body() else {}
        grace = options.get("gracePeriodSeconds")
        uid = (options.get("preconditions") or {}).get("uid")
        await self._kube.delete(
            resource,
            namespace,
            name,
            uid=uid if isinstance(uid, str) else None,
            grace_period_seconds=grace if isinstance(grace, int) else None,
        )
        # As for custom resources on a real server: the object, terminating if it has finalizers.
        return JSONResponse(self.store.get(resource.kind, namespace, name) or before)

    def _resource(self, request: Request) -> Resource:
        params = request.path_params
        key = (params.get("group", ""), params["version"], params["plural"])
        resource = self._resources.get(key)
        if resource is None:
            raise KubeError("the server could not find the requested resource", 404)
        return resource

    def _object_path(self, request: Request) -> tuple[Resource, str, str]:
        params = request.path_params
        return self._resource(request), params["namespace"], params["name"]

    async def _failure(self, _: Request, error: Exception) -> JSONResponse:
        assert isinstance(error, KubeError)
        reason = "AlreadyExists" if isinstance(error, AlreadyExists) else None
        return status_response(error.status or 500, str(error), reason)

    # --- version and discovery

    async def _version(self, _: Request) -> JSONResponse:
        return JSONResponse(VERSION_INFO)

    async def _core_versions(self, _: Request) -> JSONResponse:
        return JSONResponse({"kind": "APIVersions", "versions": ["v1"]})

    async def _core_resources(self, _: Request) -> JSONResponse:
        core = [r for r in self._resources.values() if not r.group]
        return JSONResponse(
            {
                "kind": "APIResourceList",
                "groupVersion": "v1",
                "resources": [_resource_entry(r) for r in core],
            }
        )

    async def _groups(self, _: Request) -> JSONResponse:
        versions: dict[str, list[dict[str, str]]] = {}
        for resource in self._resources.values():
            if not resource.group:
                continue  # the core group is served under /api
            listed = versions.setdefault(resource.group, [])
            entry = {"groupVersion": resource.api_version, "version": resource.version}
            if entry not in listed:
                listed.append(entry)
        groups = [
            {"name": group, "versions": listed, "preferredVersion": listed[0]}
            for group, listed in versions.items()
        ]
        return JSONResponse({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups})

    async def _group_resources(self, request: Request) -> JSONResponse:
        group, version = request.path_params["group"], request.path_params["version"]
        served = [r for r in self._resources.values() if (r.group, r.version) == (group, version)]
        if not served:
            raise KubeError("the server could not find the requested resource", 404)
        resources = [_resource_entry(r) for r in served]
        return JSONResponse(
            {
                "kind": "APIResourceList",
                "apiVersion": "v1",
                "groupVersion": f"{group}/{version}",
                "resources": resources,
            }
        )


def _resource_entry(resource: Resource) -> dict[str, Any]:
    return {
        "name": resource.plural,
        "singularName": resource.kind.lower(),
        "namespaced": True,
        "kind": resource.kind,
        "verbs": ["create", "delete", "get", "list", "patch"],
    }


def status_response(code: int, message: str, reason: str | None = None) -> JSONResponse:
    """A Kubernetes `Status` failure, as the API server sends for every error."""
    body = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason or REASONS.get(code, "InternalError"),
        "code": code,
    }
    return JSONResponse(body, status_code=code)


async def _json_object(request: Request) -> KubeObject:
    try:
        body: Any = json.loads(await request.body())
    except ValueError as error:
        raise KubeError(f"the request body is not JSON: {error}", 400) from error
    if not isinstance(body, dict):
        raise KubeError("the request body is not a JSON object", 400)
    return body
