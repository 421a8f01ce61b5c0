"""`KubePort` over the simulated world's object store, without HTTP.

It behaves as the API server does for these calls, so the fake REST API
(`arc_sim.kube_api`) is a thin layer over it and in-process callers see the same answers.
"""

from __future__ import annotations

from collections.abc import Coroutine, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar, cast

from arc_sim import store as sim_store
from arc_sim.json_clone import clone
from arc_sim.store import ObjectStore
from hooks.kube.port import AlreadyExists, KubeError, KubeObject, NotFound, Resource

T = TypeVar("T")


def apply_merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386 JSON merge patch: objects merge recursively, null removes a member, anything
    else (arrays included) replaces. Neither argument is changed."""
    if not isinstance(patch, dict):
        return clone(patch)
    merged = dict(target) if isinstance(target, dict) else {}
    for member, value in patch.items():
        if value is None:
            merged.pop(member, None)
        else:
            merged[member] = apply_merge_patch(merged.get(member), value)
    return merged


class StoreKube:
    """Reads and writes `store` directly; every object returned is the caller's own copy."""

    def __init__(self, store: ObjectStore) -> None:
        self.store = store

    async def list(self, resource: Resource, namespace: str | None = None) -> list[KubeObject]:
        return self.store.list_objects(resource.kind, namespace)

    async def get(self, resource: Resource, namespace: str, name: str) -> KubeObject:
        found = self.store.get(resource.kind, namespace, name)
        if found is None:
            raise NotFound(f"{resource.kind} {namespace}/{name} not found", 404)
        return found

    async def create(self, resource: Resource, obj: KubeObject) -> KubeObject:
        _check_type(resource, obj)
        namespace = (obj.get("metadata") or {}).get("namespace")
        if not namespace:
            raise KubeError(f"a {resource.kind} needs metadata.namespace", 400)
        with _as_kube_errors():
            return clone(self.store.create(obj))

    async def merge_patch(
        self, resource: Resource, namespace: str, name: str, patch: KubeObject
    ) -> KubeObject:
        current = await self.get(resource, namespace, name)
        patched: KubeObject = apply_merge_patch(current, patch)
        _check_type(resource, patched)
        metadata = patched.get("metadata") or {}
        if (metadata.get("namespace"), metadata.get("name")) != (namespace, name):
            raise KubeError(f"a patch cannot rename {resource.kind} {namespace}/{name}", 400)
        with _as_kube_errors():
            return clone(self.store.update(patched))

    async def delete(
        self,
        resource: Resource,
        namespace: str,
        name: str,
        *,
        uid: str | None = None,
        grace_period_seconds: int | None = None,
    ) -> None:
        with _as_kube_errors():
            self.store.delete(
                resource.kind, namespace, name, uid=uid, grace_period_seconds=grace_period_seconds
            )


def _check_type(resource: Resource, obj: KubeObject) -> None:
    if (obj.get("apiVersion"), obj.get("kind")) != (resource.api_version, resource.kind):
        raise KubeError(
            f"expected {resource.api_version} {resource.kind}, "
            f"got {obj.get('apiVersion')} {obj.get('kind')}",
            400,
        )


@contextmanager
def _as_kube_errors() -> Iterator[None]:
    """Turns the store's errors into the port's, keeping the HTTP status."""
    try:
        yield
    except sim_store.NotFound as error:
        raise NotFound(str(error), error.status) from error
    except sim_store.AlreadyExists as error:
        raise AlreadyExists(str(error), error.status) from error
    except sim_store.StoreError as error:
        raise KubeError(str(error), error.status) from error


def run_in_place(coroutine: Coroutine[Any, Any, T]) -> T:
    """The result of a coroutine that never waits (`StoreKube`'s), without an event loop: for
    callers that are themselves running on the loop, as the simulated world's hooks are."""
    try:
        coroutine.send(None)
    except StopIteration as finished:
        return cast(T, finished.value)
    coroutine.close()
    raise RuntimeError("the coroutine waited for something: it needs an event loop")
