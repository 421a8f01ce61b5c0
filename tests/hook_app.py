"""The hook server as tests call it: with the Bearer token Metacontroller would send."""

from __future__ import annotations

from collections.abc import Mapping

from starlette.testclient import TestClient
from starlette.types import ASGIApp

from arc_sim.kube_port import StoreKube
from hooks.kube.port import KubeError, KubeObject, Resource
from hooks.settings import Settings

HOOK_TOKEN = "hook-token-for-tests"
HOOK_AUTH = {"Authorization": f"Bearer {HOOK_TOKEN}"}
GITHUB_TOKEN = "ghp_" + "x" * 36


def hook_settings(env: Mapping[str, object] | None = None) -> Settings:
    """Settings with GitHub credentials and the hook token, plus `env`."""
    return Settings.model_validate(
        {"GITHUB_TOKEN": GITHUB_TOKEN, "HOOK_BEARER_TOKEN": HOOK_TOKEN, **(env or {})}
    )


def hook_client(app: ASGIApp) -> TestClient:
    """A client that authenticates as Metacontroller does."""
    return TestClient(app, headers=HOOK_AUTH)


class WithoutParentReads(StoreKube):
    """The simulated API server for what the hooks write (Events, forced deletes), refusing
    their reads of parents, as a cluster whose ClusterRole predates them would (403): the
    hooks then decide on the parent the request carries, which tests that send parents of
    their own rely on."""

    PARENTS = frozenset({"runners", "runnerreplicasets", "runnerdeployments", "runnersets"})

    async def get(self, resource: Resource, namespace: str, name: str) -> KubeObject:
        if resource.plural in self.PARENTS:
            raise KubeError(f"{resource.plural} is forbidden: get not granted", 403)
        # The webhook receiver's reads of capacity reservations are granted (webhook.yaml).
        return await super().get(resource, namespace, name)
