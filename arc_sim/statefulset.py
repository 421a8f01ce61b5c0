"""The simulated StatefulSet controller (`apps/v1`): what RunnerSet's one-replica sets need.

For each StatefulSet it keeps pods `<name>-<ordinal>` for ordinals below `spec.replicas`:

- creates a missing pod from `spec.template`, controlled by the set, with the labels
  `controller-revision-hash`, `statefulset.kubernetes.io/pod-name` and
  `apps.kubernetes.io/pod-index`, `hostname` (and `subdomain` from `serviceName`), and a
  `persistentVolumeClaim` volume for each of `volumeClaimTemplates`, whose PVCs
  (`<template>-<set>-<ordinal>`) it creates once and then reuses, as the real controller does;
  `persistentVolumeClaimRetentionPolicy.whenDeleted: Delete` makes the set their owner;
- deletes a pod that ended (Succeeded or Failed) and creates it again once it is gone; a deleted
  pod is likewise recreated once it has left the API;
- scales down from the highest ordinal;
- rolls out a changed template (`updateStrategy` RollingUpdate, the default, honouring
  `partition`): deletes the highest-ordinal pod of an old revision, one at a time; OnDelete only
  gives new pods the new template;
- with `podManagementPolicy` OrderedReady (the default) it creates, deletes and replaces one pod
  at a time and only while the pods below are Running and Ready; Parallel does all at once;
- writes status when it changes: observedGeneration, replicas, readyReplicas, currentReplicas,
  updatedReplicas, availableReplicas, currentRevision, updateRevision, collisionCount. Like the
  API server, zero readyReplicas, currentReplicas and updatedReplicas are left out.

Not modelled: ControllerRevision objects (the revision is a digest of the template),
minReadySeconds, `whenScaled` PVC retention, adoption of orphaned pods.
"""

from __future__ import annotations

import contextlib
import copy
import hashlib
import json
from dataclasses import dataclass
from typing import Any

from arc_sim.events import EventLoop
from arc_sim.store import AlreadyExists, EventType, KubeObject, NotFound, ObjectStore

REVISION_LABEL = "controller-revision-hash"
POD_NAME_LABEL = "statefulset.kubernetes.io/pod-name"
POD_INDEX_LABEL = "apps.kubernetes.io/pod-index"

_TERMINAL = ("Succeeded", "Failed")


@dataclass(frozen=True)
class _PodView:
    """What the controller needs to know of one of its pods."""

    name: str
    uid: str
    ordinal: int
    revision: str
    phase: str
    ready: bool
    terminating: bool

    @property
    def running_and_ready(self) -> bool:
        return self.phase == "Running" and self.ready and not self.terminating

    @classmethod
    def of(cls, pod: KubeObject, ordinal: int) -> _PodView:
        metadata, status = pod["metadata"], pod.get("status") or {}
        ready = any(
            c.get("type") == "Ready" and c.get("status") == "True"
            for c in status.get("conditions") or []
        )
        return cls(
            name=metadata["name"],
            uid=metadata["uid"],
            ordinal=ordinal,
            revision=(metadata.get("labels") or {}).get(REVISION_LABEL, ""),
            phase=str(status.get("phase") or ""),
            ready=ready,
            terminating=bool(metadata.get("deletionTimestamp")),
        )


class StatefulSetController:
    def __init__(self, store: ObjectStore, loop: EventLoop) -> None:
        self.store = store
        self.loop = loop
        # uid -> the set as last watched (each watcher gets a copy of its own)
        self._sets: dict[str, KubeObject] = {}
        self._pods: dict[str, dict[str, _PodView]] = {}  # set uid -> pod name -> view
        self._queued: set[str] = set()
        store.watch(self._on_event)
        for statefulset in store.list_objects("StatefulSet"):
            self._on_event("ADDED", statefulset)
        for pod in store.list_objects("Pod"):
            self._on_event("ADDED", pod)

    # --- watching

    def _on_event(self, event: EventType, obj: KubeObject) -> None:
        kind, metadata = obj.get("kind"), obj["metadata"]
        if kind == "StatefulSet":
            uid = metadata["uid"]
            if event == "DELETED":
                self._sets.pop(uid, None)
                self._pods.pop(uid, None)
                return
            self._sets[uid] = obj
            self._enqueue(uid)
        elif kind == "Pod":
            owner = _controller_uid(obj, "StatefulSet")
            if owner is None:
                return
            pods = self._pods.setdefault(owner, {})
            if event == "DELETED":
                pods.pop(metadata["name"], None)
            else:
                ordinal = _ordinal(metadata["name"])
                if ordinal is None:
                    return
                pods[metadata["name"]] = _PodView.of(obj, ordinal)
            if owner in self._sets:
                self._enqueue(owner)

    def _enqueue(self, uid: str) -> None:
        # One sync per set and instant, outside the store's notification.
        if uid in self._queued:
            return
        self._queued.add(uid)
        self.loop.call_soon(lambda: self._sync(uid), "statefulset: sync")

    # --- reconciling

    def _sync(self, uid: str) -> None:
        self._queued.discard(uid)
        statefulset = self._sets.get(uid)
        if statefulset is None:
            return
        revision = update_revision(statefulset)
        if not statefulset["metadata"].get("deletionTimestamp"):
            self._reconcile(statefulset, revision)
        self._write_status(statefulset, revision)

    def _reconcile(self, statefulset: KubeObject, revision: str) -> None:
        uid = statefulset["metadata"]["uid"]
        spec = statefulset.get("spec") or {}
        replicas = int(spec.get("replicas", 1))
        ordered = spec.get("podManagementPolicy", "OrderedReady") != "Parallel"
        pods = {view.ordinal: view for view in self._pods.get(uid, {}).values()}

        # Ended pods go first; they come back on a later sync, once they have left the API.
        for view in sorted(pods.values(), key=lambda v: v.ordinal):
            if view.phase in _TERMINAL and not view.terminating:
                self._delete(statefulset, view)
                if ordered:
                    return

        for ordinal in range(replicas):
            existing = pods.get(ordinal)
            if existing is None:
                self._create_pod(statefulset, ordinal, revision)
                if ordered:
                    return
            elif ordered and not existing.running_and_ready:
                return  # OrderedReady: nothing further until this pod is Running and Ready

        condemned = [v for v in pods.values() if v.ordinal >= replicas]
        for view in sorted(condemned, key=lambda v: v.ordinal, reverse=True):
            if view.terminating:
                if ordered:
                    return
                continue
            self._delete(statefulset, view)
            if ordered:
                return

        strategy = spec.get("updateStrategy") or {}
        if strategy.get("type", "RollingUpdate") != "RollingUpdate":
            return
        partition = int((strategy.get("rollingUpdate") or {}).get("partition", 0))
        current = [pods[o] for o in range(replicas) if o in pods]
        if any(v.terminating or not v.running_and_ready for v in current):
            return  # a rolling update waits until every pod is Running and Ready
        for view in sorted(current, key=lambda v: v.ordinal, reverse=True):
            if view.ordinal >= partition and view.revision != revision:
                self._delete(statefulset, view)
                return

    def _create_pod(self, statefulset: KubeObject, ordinal: int, revision: str) -> None:
        metadata, spec = statefulset["metadata"], statefulset.get("spec") or {}
        namespace, set_name = metadata.get("namespace") or "", metadata["name"]
        template = copy.deepcopy(spec.get("template") or {})
        pod_name = f"{set_name}-{ordinal}"
        pod_metadata = template.get("metadata") or {}
        labels = {
            **(pod_metadata.get("labels") or {}),
            REVISION_LABEL: revision,
            POD_NAME_LABEL: pod_name,
            POD_INDEX_LABEL: str(ordinal),
        }
        pod_spec = template.get("spec") or {}
        pod_spec["hostname"] = pod_name
        if spec.get("serviceName"):
            pod_spec["subdomain"] = spec["serviceName"]
        claims = self._ensure_claims(statefulset, ordinal)
        if claims:
            volumes = [v for v in pod_spec.get("volumes") or [] if v.get("name") not in claims]
            volumes += [
                {"name": template_name, "persistentVolumeClaim": {"claimName": claim}}
                for template_name, claim in claims.items()
            ]
            pod_spec["volumes"] = volumes
        pod: KubeObject = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": pod_name,
                "namespace": namespace,
                "labels": labels,
                "annotations": dict(pod_metadata.get("annotations") or {}),
                "ownerReferences": [_owner_reference(statefulset)],
            },
            "spec": pod_spec,
        }
        if pod_metadata.get("finalizers"):
            pod["metadata"]["finalizers"] = list(pod_metadata["finalizers"])
        # AlreadyExists: the old pod has not left yet; its DELETED event brings another sync.
        with contextlib.suppress(AlreadyExists):
            self.store.create(pod)

    def _ensure_claims(self, statefulset: KubeObject, ordinal: int) -> dict[str, str]:
        """PVCs of the ordinal by template name; created when missing, never replaced."""
        metadata, spec = statefulset["metadata"], statefulset.get("spec") or {}
        namespace, set_name = metadata.get("namespace") or "", metadata["name"]
        retention = spec.get("persistentVolumeClaimRetentionPolicy") or {}
        owned = retention.get("whenDeleted") == "Delete"
        selector_labels = (spec.get("selector") or {}).get("matchLabels") or {}
        claims: dict[str, str] = {}
        for template in spec.get("volumeClaimTemplates") or []:
            template_metadata = template.get("metadata") or {}
            template_name = template_metadata.get("name", "")
            claim_name = f"{template_name}-{set_name}-{ordinal}"
            claims[template_name] = claim_name
            if self.store.get("PersistentVolumeClaim", namespace, claim_name) is not None:
                continue
            claim: KubeObject = {
                "apiVersion": "v1",
                "kind": "PersistentVolumeClaim",
                "metadata": {
                    "name": claim_name,
                    "namespace": namespace,
                    "labels": {**(template_metadata.get("labels") or {}), **selector_labels},
                },
                "spec": copy.deepcopy(template.get("spec") or {}),
                "status": {"phase": "Bound"},  # provisioning is not modelled
            }
            if owned:
                claim["metadata"]["ownerReferences"] = [_owner_reference(statefulset)]
            self.store.create(claim)
        return claims

    def _delete(self, statefulset: KubeObject, view: _PodView) -> None:
        with contextlib.suppress(NotFound):
            self.store.delete(
                "Pod", statefulset["metadata"].get("namespace") or "", view.name, uid=view.uid
            )

    # --- status

    def _write_status(self, statefulset: KubeObject, revision: str) -> None:
        metadata = statefulset["metadata"]
        previous = statefulset.get("status") or {}
        current_revision = previous.get("currentRevision") or revision
        views = list(self._pods.get(metadata["uid"], {}).values())
        created = [v for v in views if v.phase]
        replicas = len(created)
        ready = sum(1 for v in created if v.phase == "Running" and v.ready)
        live = [v for v in created if not v.terminating]
        updated = sum(1 for v in live if v.revision == revision)
        spec_replicas = int((statefulset.get("spec") or {}).get("replicas", 1))
        if updated == replicas == ready == spec_replicas or not views:
            current_revision = revision  # the rollout is complete
        current = sum(1 for v in live if v.revision == current_revision)
        status: dict[str, Any] = {
            "observedGeneration": metadata.get("generation", 1),
            "replicas": replicas,
            "availableReplicas": ready,
            "currentRevision": current_revision,
            "updateRevision": revision,
            "collisionCount": 0,
        }
        for key, value in (
            ("readyReplicas", ready),
            ("currentReplicas", current),
            ("updatedReplicas", updated),
        ):
            if value:
                status[key] = value
        if status == previous:
            return
        with contextlib.suppress(NotFound):
            self.store.update_status(
                {
                    "kind": "StatefulSet",
                    "metadata": {
                        "namespace": metadata.get("namespace") or "",
                        "name": metadata["name"],
                    },
                    "status": status,
                }
            )


def update_revision(statefulset: KubeObject) -> str:
    """`<set>-<digest of the pod template>`: the revision new pods are labelled with."""
    template = (statefulset.get("spec") or {}).get("template") or {}
    canonical = json.dumps(template, sort_keys=True, separators=(",", ":"))
    digest = hashlib.sha256(canonical.encode()).hexdigest()[:10]
    return f"{statefulset['metadata']['name']}-{digest}"


def _owner_reference(statefulset: KubeObject) -> dict[str, Any]:
    metadata = statefulset["metadata"]
    return {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "name": metadata["name"],
        "uid": metadata["uid"],
        "controller": True,
        "blockOwnerDeletion": True,
    }


def _controller_uid(obj: KubeObject, kind: str) -> str | None:
    for reference in obj["metadata"].get("ownerReferences") or []:
        if reference.get("controller") and reference.get("kind") == kind:
            return str(reference.get("uid"))
    return None


def _ordinal(pod_name: str) -> int | None:
    _, _, suffix = pod_name.rpartition("-")
    return int(suffix) if suffix.isdigit() else None
