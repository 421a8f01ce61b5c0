"""Drives the Runner hooks the way Metacontroller does, over HTTP, for one parent.

A deliberately small stand-in: it keeps the parent and its observed children, sends v2 (or v1)
requests with Metacontroller's shapes, and applies answers (new children get a uid, omitted
ones are deleted, status is replaced). Each child is sent with a resourceVersion that moves
whenever its content changed, as the API server's does. Pod life is advanced by the tests
themselves.
"""

from __future__ import annotations

import copy
import hashlib
import itertools
import json
from dataclasses import dataclass, field
from typing import Any, Protocol

from hooks.resources.runner import API_VERSION

INPLACE = {"method": "InPlace"}
RUNNER_CONTROLLER = {
    "apiVersion": "metacontroller.k8s.io/v1alpha1",
    "kind": "CompositeController",
    "metadata": {"name": "arc-hooks-runner"},
    "spec": {
        "parentResource": {"apiVersion": API_VERSION, "resource": "runners"},
        "childResources": [
            {"apiVersion": "v1", "resource": "pods", "updateStrategy": {"method": "OnDelete"}},
            {"apiVersion": "v1", "resource": "secrets", "updateStrategy": {"method": "InPlace"}},
            *(
                {"apiVersion": api_version, "resource": resource, "updateStrategy": INPLACE}
                for api_version, resource in (
                    ("v1", "serviceaccounts"),
                    ("rbac.authorization.k8s.io/v1", "roles"),
                    ("rbac.authorization.k8s.io/v1", "rolebindings"),
                )
            ),
        ],
        "generateSelector": True,
    },
}

_uids = itertools.count(1)
_resource_versions = itertools.count(1)


class HookResponse(Protocol):
    @property
    def status_code(self) -> int: ...

    @property
    def text(self) -> str: ...

    def json(self) -> Any: ...


class HookClient(Protocol):
    """Starlette's TestClient in-process, or an httpx client of a server on loopback."""

    def post(self, url: str, *, json: Any) -> HookResponse: ...


def new_runner(
    spec: dict[str, Any],
    *,
    name: str = "example-runner",
    namespace: str = "default",
    annotations: dict[str, str] | None = None,
    owner_kind: str | None = None,
) -> dict[str, Any]:
    metadata: dict[str, Any] = {
        "name": name,
        "namespace": namespace,
        "uid": f"runner-uid-{next(_uids)}",
        "generation": 1,
        "resourceVersion": "1",
        "annotations": annotations or {},
    }
    if owner_kind:
        metadata["ownerReferences"] = [
            {
                "apiVersion": API_VERSION,
                "kind": owner_kind,
                "name": "owner",
                "uid": "o-1",
                "controller": True,
            }
        ]
    return {"apiVersion": API_VERSION, "kind": "Runner", "metadata": metadata, "spec": spec}


@dataclass
class HookDriver:
    client: HookClient
    parent: dict[str, Any]
    version: str = "v2"
    children: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)
    last: dict[str, Any] = field(default_factory=dict)
    related: dict[str, dict[str, Any]] = field(default_factory=dict)  # as Metacontroller sends
    # Per child: a digest of the content last sent, and the resourceVersion it was sent with.
    versions: dict[tuple[str, str], tuple[str, str]] = field(default_factory=dict)

    def request(self, finalizing: bool = False) -> dict[str, Any]:
        groups: dict[str, dict[str, Any]] = {"Pod.v1": {}, "Secret.v1": {}}
        for (kind, name), obj in sorted(self.children.items()):
            key = f"{obj['metadata']['namespace']}/{name}" if self.version == "v2" else name
            sent = self._versioned((kind, name), obj)
            groups.setdefault(f"{kind}.{obj['apiVersion']}", {})[key] = sent
        return {
            "controller": RUNNER_CONTROLLER,
            "parent": copy.deepcopy(self.parent),
            "children": groups,
            "related": copy.deepcopy(self.related),
            "finalizing": finalizing,
        }

    def _versioned(self, key: tuple[str, str], obj: dict[str, Any]) -> dict[str, Any]:
        """A copy of the child with the resourceVersion the API server would serve: a new one
        whenever its content changed since it was last sent."""
        sent = copy.deepcopy(obj)
        sent["metadata"].pop("resourceVersion", None)
        digest = hashlib.blake2b(json.dumps(sent, sort_keys=True).encode()).hexdigest()
        last_digest, version = self.versions.get(key, ("", ""))
        if digest != last_digest:
            version = str(next(_resource_versions))
            self.versions[key] = (digest, version)
        sent["metadata"]["resourceVersion"] = version
        return sent

    def call(self, path: str, finalizing: bool = False) -> dict[str, Any]:
        response = self.client.post(path, json=self.request(finalizing))
        assert response.status_code == 200, response.text
        answer: dict[str, Any] = response.json()
        self.last = answer
        self._apply(answer)
        return answer

    def sync(self) -> dict[str, Any]:
        return self.call("/sync/runner")

    def finalize(self) -> dict[str, Any]:
        metadata = self.parent["metadata"]
        if "deletionTimestamp" not in metadata:
            # The API server moves the generation when it marks an object for deletion.
            metadata["deletionTimestamp"] = "2026-01-01T00:00:00Z"
            metadata["generation"] = metadata.get("generation", 0) + 1
        return self.call("/finalize/runner", finalizing=True)

    def _apply(self, answer: dict[str, Any]) -> None:
        status = dict(answer.get("status") or {})
        status["observedGeneration"] = self.parent["metadata"]["generation"]
        self.parent["status"] = status
        if answer.get("finalized"):
            return  # Metacontroller removes the finalizer; children are not applied
        desired = {(c["kind"], c["metadata"]["name"]): c for c in answer.get("children", [])}
        for key in list(self.children):
            if key not in desired and not self.children[key]["metadata"].get("deletionTimestamp"):
                del self.children[key]
        for key, obj in desired.items():
            if key not in self.children:
                created = copy.deepcopy(obj)
                created["metadata"].setdefault("namespace", self.parent["metadata"]["namespace"])
                created["metadata"]["uid"] = f"{key[0].lower()}-uid-{next(_uids)}"
                if key[0] == "Pod":
                    created["status"] = {"phase": "Pending"}
                self.children[key] = created
            elif key[0] == "Secret":  # InPlace
                self.children[key]["data"] = copy.deepcopy(obj.get("data", {}))
            elif key[0] in ("ServiceAccount", "Role", "RoleBinding"):  # InPlace
                for field_name in ("rules", "roleRef", "subjects"):
                    if field_name in obj:
                        self.children[key][field_name] = copy.deepcopy(obj[field_name])

    # --- what the tests look at and do to the world

    def pod(self) -> dict[str, Any] | None:
        name = self.parent["metadata"]["name"]
        return self.children.get(("Pod", name))

    def secret(self) -> dict[str, Any] | None:
        return next((o for (k, _), o in self.children.items() if k == "Secret"), None)

    def set_pod_status(self, status: dict[str, Any]) -> None:
        pod = self.pod()
        assert pod is not None
        pod["status"] = status

    def delete_pod_now(self) -> None:
        self.children.pop(("Pod", self.parent["metadata"]["name"]), None)


def running_status(ready_since: str, *, exit_code: int | None = None) -> dict[str, Any]:
    state: dict[str, Any] = (
        {"running": {"startedAt": ready_since}}
        if exit_code is None
        else {"terminated": {"exitCode": exit_code, "finishedAt": ready_since}}
    )
    return {
        "phase": "Running",
        "conditions": [
            {
                "type": "Ready",
                "status": "True" if exit_code is None else "False",
                "lastTransitionTime": ready_since,
            }
        ],
        "containerStatuses": [{"name": "runner", "ready": exit_code is None, "state": state}],
    }
