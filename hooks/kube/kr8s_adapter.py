"""`KubePort` for a real cluster, over kr8s's asyncio client.

Each call is one raw request (`Api.call_api`) to a path built from the `Resource`, so there is no
API discovery round trip and no kr8s object wrapping: objects go back as the server's JSON.
"""

from __future__ import annotations

from typing import Any

import httpx
import kr8s.asyncio
import orjson
from kr8s import APITimeoutError, ServerError

from hooks.kube.port import AlreadyExists, KubeError, KubeObject, NotFound, Resource

MERGE_PATCH = "application/merge-patch+json"
# The receiver must answer GitHub within 10 seconds; kr8s waits forever unless told otherwise.
DEFAULT_TIMEOUT_SECONDS = 5.0


class Kr8sKube:
    def __init__(self, api: kr8s.asyncio.Api) -> None:
        self._api = api

    @classmethod
    async def connect(
        cls,
        *,
        url: str | None = None,
        kubeconfig: str | None = None,
        context: str | None = None,
        timeout: float = DEFAULT_TIMEOUT_SECONDS,
    ) -> Kr8sKube:
        """Credentials as kr8s finds them by default (the kubeconfig file, then the pod's
        service account) unless given. kr8s reads the server's version on connecting."""
        try:
            api = await kr8s.asyncio.api(url=url, kubeconfig=kubeconfig, context=context)
        except (ValueError, KeyError, OSError, ServerError, APITimeoutError, httpx.HTTPError) as e:
            raise KubeError(f"cannot connect to the Kubernetes API: {type(e).__name__}: {e}") from e
        api.timeout = timeout
        return cls(api)

    async def aclose(self) -> None:
        """Close the HTTP connections; the next request opens new ones."""
        # kr8s has no public close, and a client left open outlives its event loop in tests.
        session: httpx.AsyncClient | None = getattr(self._api, "_session", None)
        if session is not None:
            await session.aclose()

    async def list(self, resource: Resource, namespace: str | None = None) -> list[KubeObject]:
        found = await self._request("GET", resource, namespace, resource.plural)
        items: list[KubeObject] = found.get("items") or []
        for item in items:
            # Servers leave out the type of list items for built-in kinds.
            item.setdefault("apiVersion", resource.api_version)
            item.setdefault("kind", resource.kind)
        return items

    async def get(self, resource: Resource, namespace: str, name: str) -> KubeObject:
        return await self._request("GET", resource, namespace, f"{resource.plural}/{name}")

    async def create(self, resource: Resource, obj: KubeObject) -> KubeObject:
        namespace = (obj.get("metadata") or {}).get("namespace")
        if not namespace:
            raise KubeError(f"a {resource.kind} needs metadata.namespace", 400)
        return await self._request(
            "POST", resource, namespace, resource.plural, content=orjson.dumps(obj)
        )

    async def merge_patch(
        self, resource: Resource, namespace: str, name: str, patch: KubeObject
    ) -> KubeObject:
        return await self._request(
            "PATCH",
            resource,
            namespace,
            f"{resource.plural}/{name}",
            content=orjson.dumps(patch),
            headers={"Content-Type": MERGE_PATCH},
        )

    async def delete(
        self,
        resource: Resource,
        namespace: str,
        name: str,
        *,
        uid: str | None = None,
        grace_period_seconds: int | None = None,
    ) -> None:
        options: dict[str, Any] = {"kind": "DeleteOptions", "apiVersion": "v1"}
        if uid is not None:
            options["preconditions"] = {"uid": uid}
        if grace_period_seconds is not None:
            options["gracePeriodSeconds"] = grace_period_seconds
        await self._request(
            "DELETE",
            resource,
            namespace,
            f"{resource.plural}/{name}",
            content=orjson.dumps(options),
            headers={"Content-Type": "application/json"},
        )

    async def _request(
        self, method: str, resource: Resource, namespace: str | None, path: str, **kwargs: Any
    ) -> KubeObject:
        where = f"{method} {resource.plural}" + (f" in {namespace}" if namespace else "")
        try:
            # kr8s raises on errors itself because it then re-reads credentials after a 401,
            # which picks up a rotated service account token.
            async with self._api.call_api(
                method,
                version=resource.api_version,
                namespace=namespace,
                url=path,
                **kwargs,
            ) as response:
                body = _json_or_none(response)
        except ServerError as error:
            raise self._error(where, error) from error
        except (httpx.HTTPError, APITimeoutError) as error:
            raise KubeError(f"{where}: {type(error).__name__}: {error}") from error
        return body if isinstance(body, dict) else {}

    def _error(self, where: str, error: ServerError) -> KubeError:
        if error.response is None:
            return KubeError(self._redacted(f"{where}: {error}"))
        status = error.response.status_code
        body = _json_or_none(error.response)
        is_status = isinstance(body, dict) and body.get("kind") == "Status"
        reason = body.get("reason") if is_status else None
        detail = body.get("message") if is_status else None
        message = f"{where}: HTTP {status}" + (f" {reason}: {detail}" if reason else "")
        if status == 404:
            return NotFound(self._redacted(message), status)
        if status == 409 and reason == "AlreadyExists":
            return AlreadyExists(self._redacted(message), status)
        return KubeError(self._redacted(message), status)

    def _redacted(self, message: str) -> str:
        # A server or proxy may echo the request back; the credential must not travel on.
        token = self._api.auth.token
        return message.replace(token, "<redacted>") if token else message


def _json_or_none(response: httpx.Response) -> Any:
    try:
        return response.json()
    except ValueError:
        return None
