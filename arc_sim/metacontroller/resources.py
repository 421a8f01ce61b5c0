"""Discovery: which kind a resource name stands for, and whether it is namespaced.

Metacontroller names types by `apiVersion` + plural `resource`; the object store keys objects by
kind. Built-in types are listed here; custom types come from the CRDs loaded with the manifests.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from arc_sim.store import group_of


class UnknownResource(LookupError):
    """The API server does not serve this type (a discovery failure in Metacontroller)."""


@dataclass(frozen=True, slots=True)
class ResourceType:
    api_version: str
    resource: str
    kind: str
    namespaced: bool = True

    @property
    def group(self) -> str:
        return group_of(self.api_version)

    @property
    def group_key(self) -> str:
        """How hook requests group objects: `Pod.v1`, `StatefulSet.apps/v1`."""
        return f"{self.kind}.{self.api_version}"


def _builtin(api_version: str, resource: str, kind: str, namespaced: bool = True) -> ResourceType:
    return ResourceType(api_version, resource, kind, namespaced)


_BUILTINS = (
    _builtin("v1", "pods", "Pod"),
    _builtin("v1", "secrets", "Secret"),
    _builtin("v1", "configmaps", "ConfigMap"),
    _builtin("v1", "services", "Service"),
    _builtin("v1", "serviceaccounts", "ServiceAccount"),
    _builtin("v1", "persistentvolumeclaims", "PersistentVolumeClaim"),
    _builtin("v1", "endpoints", "Endpoints"),
    _builtin("v1", "events", "Event"),
    _builtin("v1", "namespaces", "Namespace", namespaced=False),
    _builtin("v1", "nodes", "Node", namespaced=False),
    _builtin("v1", "persistentvolumes", "PersistentVolume", namespaced=False),
    _builtin("apps/v1", "statefulsets", "StatefulSet"),
    _builtin("apps/v1", "deployments", "Deployment"),
    _builtin("apps/v1", "replicasets", "ReplicaSet"),
    _builtin("apps/v1", "daemonsets", "DaemonSet"),
    _builtin("apps/v1", "controllerrevisions", "ControllerRevision"),
    _builtin("batch/v1", "jobs", "Job"),
    _builtin("batch/v1", "cronjobs", "CronJob"),
    _builtin("policy/v1", "poddisruptionbudgets", "PodDisruptionBudget"),
    _builtin("coordination.k8s.io/v1", "leases", "Lease"),
    _builtin("rbac.authorization.k8s.io/v1", "roles", "Role"),
    _builtin("rbac.authorization.k8s.io/v1", "rolebindings", "RoleBinding"),
    _builtin("rbac.authorization.k8s.io/v1", "clusterroles", "ClusterRole", namespaced=False),
    _builtin("rbac.authorization.k8s.io/v1", "clusterrolebindings", "ClusterRoleBinding", False),
)


class ResourceCatalog:
    def __init__(self) -> None:
        self._by_resource: dict[tuple[str, str], ResourceType] = {}
        self._by_kind: dict[tuple[str, str], ResourceType] = {}
        self._custom_with_status: set[tuple[str, str]] = set()
        for resource_type in _BUILTINS:
            self._add(resource_type)

    def resource(self, api_version: str, resource: str) -> ResourceType:
        found = self._by_resource.get((api_version, resource))
        if found is None:
            raise UnknownResource(f"the server does not serve {resource} in {api_version!r}")
        return found

    def kind(self, api_version: str, kind: str) -> ResourceType:
        found = self._by_kind.get((api_version, kind))
        if found is None:
            raise UnknownResource(f"the server does not serve kind {kind!r} in {api_version!r}")
        return found

    def is_custom_with_status(self, resource_type: ResourceType) -> bool:
        """A CRD-defined type whose version has the status subresource on."""
        return (resource_type.api_version, resource_type.kind) in self._custom_with_status

    def add_crd(self, crd: dict[str, Any]) -> list[ResourceType]:
        """Serve the versions a CustomResourceDefinition declares; returns the types added."""
        spec = crd.get("spec") or {}
        names = spec.get("names") or {}
        group, kind, plural = spec.get("group"), names.get("kind"), names.get("plural")
        if not (group and kind and plural):
            raise ValueError("a CustomResourceDefinition needs spec.group and spec.names")
        namespaced = spec.get("scope", "Namespaced") == "Namespaced"
        added = []
        for version in spec.get("versions") or []:
            if not version.get("served", True):
                continue
            resource_type = ResourceType(f"{group}/{version['name']}", plural, kind, namespaced)
            self._add(resource_type)
            if "status" in (version.get("subresources") or {}):
                self._custom_with_status.add((resource_type.api_version, kind))
            added.append(resource_type)
        return added

    def _add(self, resource_type: ResourceType) -> None:
        self._by_resource[resource_type.api_version, resource_type.resource] = resource_type
        self._by_kind[resource_type.api_version, resource_type.kind] = resource_type
