"""The cluster's API, connected on first use: a server that never receives a webhook (the hook
Deployment, `arc-hooks demo`) needs no Kubernetes credentials at all."""

from __future__ import annotations

import asyncio

from hooks.kube.port import KubeError, KubeObject, KubePort, Resource


class ClusterKube:
    def __init__(self) -> None:
        self._connected: KubePort | None = None
        self._lock = asyncio.Lock()

    async def _kube(self) -> KubePort:
        if self._connected is None:
            async with self._lock:
                if self._connected is None:
                    from hooks.kube.kr8s_adapter import Kr8sKube

                    try:
                        self._connected = await Kr8sKube.connect()
                    except KubeError:
                        raise
                    except Exception as error:  # kr8s raises many kinds when unconfigured
                        raise KubeError(
                            "no Kubernetes API access (no service account token or "
                            f"kubeconfig): {type(error).__name__}"
                        ) from error
        return self._connected

    async def list(self, resource: Resource, namespace: str | None = None) -> list[KubeObject]:
        return await (await self._kube()).list(resource, namespace)

    async def get(self, resource: Resource, namespace: str, name: str) -> KubeObject:
        return await (await self._kube()).get(resource, namespace, name)

    async def create(self, resource: Resource, obj: KubeObject) -> KubeObject:
        return await (await self._kube()).create(resource, obj)

    async def merge_patch(
        self, resource: Resource, namespace: str, name: str, patch: KubeObject
    ) -> KubeObject:
        return await (await self._kube()).merge_patch(resource, namespace, name, patch)

    async def delete(
        self,
        resource: Resource,
        namespace: str,
        name: str,
        *,
        uid: str | None = None,
        grace_period_seconds: int | None = None,
    ) -> None:
        kube = await self._kube()
        await kube.delete(
            resource, namespace, name, uid=uid, grace_period_seconds=grace_period_seconds
        )
