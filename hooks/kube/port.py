"""The small surface of the Kubernetes API that the server uses: the webhook receiver's
reservations and scale targets, forced deletes of runner pods on lost nodes, and the ConfigMaps
of the runner lists the replicas share.

Asynchronous: the receiver answers GitHub from the event loop, well inside GitHub's 10-second
delivery timeout, without a worker thread per delivery.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

KubeObject = dict[str, Any]


@dataclass(frozen=True)
class Resource:
    """A namespaced API resource, e.g. `actions.summerwind.dev/v1alpha1` `runnerdeployments`."""

    group: str
    version: str
    kind: str
    plural: str

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version


ARC_GROUP = "actions.summerwind.dev"
ARC_VERSION = "v1alpha1"
RESERVATION_GROUP = "arc-hooks.dev"
RESERVATION_VERSION = "v1alpha1"

HORIZONTAL_RUNNER_AUTOSCALERS = Resource(
    ARC_GROUP, ARC_VERSION, "HorizontalRunnerAutoscaler", "horizontalrunnerautoscalers"
)
RUNNER_DEPLOYMENTS = Resource(ARC_GROUP, ARC_VERSION, "RunnerDeployment", "runnerdeployments")
RUNNER_SETS = Resource(ARC_GROUP, ARC_VERSION, "RunnerSet", "runnersets")
RUNNERS = Resource(ARC_GROUP, ARC_VERSION, "Runner", "runners")
RUNNER_REPLICA_SETS = Resource(ARC_GROUP, ARC_VERSION, "RunnerReplicaSet", "runnerreplicasets")
PODS = Resource("", "v1", "Pod", "pods")
CONFIG_MAPS = Resource("", "v1", "ConfigMap", "configmaps")
CAPACITY_RESERVATIONS = Resource(
    RESERVATION_GROUP, RESERVATION_VERSION, "CapacityReservation", "capacityreservations"
)


class KubeError(Exception):
    """The API server refused or could not be reached. The message carries no credential."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class NotFound(KubeError):
    """404: the object (or its namespace) does not exist."""


class AlreadyExists(KubeError):
    """409 AlreadyExists on create."""


class KubePort(Protocol):
    async def list(self, resource: Resource, namespace: str | None = None) -> list[KubeObject]:
        """Every object of the resource, in one namespace or (None) in all of them."""
        ...

    async def get(self, resource: Resource, namespace: str, name: str) -> KubeObject:
        """One object; raises NotFound."""
        ...

    async def create(self, resource: Resource, obj: KubeObject) -> KubeObject:
        """Create `obj` (its metadata names the namespace); raises AlreadyExists."""
        ...

    async def merge_patch(
        self, resource: Resource, namespace: str, name: str, patch: KubeObject
    ) -> KubeObject:
        """Apply a JSON merge patch (RFC 7386); raises NotFound."""
        ...

    async def delete(
        self,
        resource: Resource,
        namespace: str,
        name: str,
        *,
        uid: str | None = None,
        grace_period_seconds: int | None = None,
    ) -> None:
        """Delete the object, only if its uid is `uid` when given (409 otherwise), with this
        grace period when given (0: a forced delete); raises NotFound."""
        ...
