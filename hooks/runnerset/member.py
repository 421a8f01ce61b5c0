"""One runner of a RunnerSet as observed: its StatefulSet, its pod, its registration Secret,
and the stop recorded on the StatefulSet (`arc-hooks.dev/graceful-stop`)."""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass
from functools import partial
from typing import Any

from hooks.children import read_once, state_key
from hooks.github.port import Scope
from hooks.lifecycle.graceful_stop import GRACEFUL_STOP_ANNOTATION, read_stop
from hooks.memo import Memo
from hooks.metacontroller import CompositeHookRequest, KubeObject, object_or_empty, observed_int
from hooks.naming import RUNNER_ID_ANNOTATION, TEMPLATE_HASH_LABEL
from hooks.resources.runner import GracefulStopStatus
from hooks.runner.observed_pod import ObservedPod, literal_env, observe_pod
from hooks.runner.registration import RegistrationMaterial, read_material
from hooks.runnerset.statefulset import VOLUME_SLOT_LABEL, secret_name, template_scope


@dataclass(frozen=True)
class ObservedMember:
    sts: KubeObject
    name: str  # the StatefulSet's; its one pod, and runner, is `<name>-0`
    created: str
    terminating: bool
    scaled_to_zero: bool
    template_hash: str | None
    slot: int | None
    stop: GracefulStopStatus | None
    pod_object: KubeObject | None
    pod: ObservedPod | None
    secret: KubeObject | None
    material: RegistrationMaterial
    scope: Scope | None  # where its runner registers, as its pod template's env names it

    @property
    def runner_name(self) -> str:
        return f"{self.name}-0"

    @property
    def registered_name(self) -> str:
        """The name its runner registers under: the pod's own `RUNNER_NAME` when the template
        sets one, else `runner_name`."""
        pod = self.pod_object
        return (literal_env(pod, "RUNNER_NAME") if pod is not None else "") or self.runner_name

    @property
    def template_runner_name(self) -> str:
        """The runner name its StatefulSet's pod template gives (a literal `RUNNER_NAME`, else
        `runner_name`): the same before its pod exists as after (`hooks.runner_seal`)."""
        template = object_or_empty(object_or_empty(self.sts.get("spec")).get("template"))
        return literal_env(template, "RUNNER_NAME") or self.runner_name

    @property
    def recorded_runner_id(self) -> int | None:
        """Its JIT registration's id, else the one the runner-pod decorator recorded."""
        if self.material.runner_id is not None:
            return self.material.runner_id
        annotations = ((self.pod_object or {}).get("metadata") or {}).get("annotations") or {}
        return observed_int(annotations.get(RUNNER_ID_ANNOTATION))


def read_members(
    request: CompositeHookRequest, memo: Memo[Hashable, Any] | None = None
) -> tuple[ObservedMember, ...]:
    """Every member, those whose StatefulSet, pod and Secret were all read before in the same
    states (uid and resourceVersion) taken from `memo`: a set is synced at every change of any
    member, and reads again only the members that changed."""
    # Indexed once: looking each member's pod and Secret up in the lists would make a sync of
    # a thousand members cost a million comparisons.
    pods = request.objects_by_name("Pod", related=True)
    secrets = request.objects_by_name("Secret")
    members = []
    for sts in request.objects("StatefulSet"):
        name = _name(sts)
        pod, secret = pods.get(f"{name}-0"), secrets.get(secret_name(name))
        read = partial(_read_member, sts, pod, secret)
        if memo is None:
            members.append(read())
        else:
            key = state_key("RunnerSetMember", sts, pod, secret)
            members.append(read_once(key, read, ObservedMember, memo))
    return tuple(members)


def _name(sts: KubeObject) -> str:
    return str(object_or_empty(sts.get("metadata")).get("name") or "")


def _read_member(
    sts: KubeObject, pod_object: KubeObject | None, secret: KubeObject | None
) -> ObservedMember:
    metadata = sts.get("metadata") or {}
    name = _name(sts)
    labels = metadata.get("labels") or {}
    annotations = metadata.get("annotations") or {}
    return ObservedMember(
        sts=sts,
        name=name,
        created=str(metadata.get("creationTimestamp") or ""),
        terminating=bool(metadata.get("deletionTimestamp")),
        scaled_to_zero=(sts.get("spec") or {}).get("replicas") == 0,
        template_hash=labels.get(TEMPLATE_HASH_LABEL),
        slot=observed_int(labels.get(VOLUME_SLOT_LABEL)),
        stop=read_stop(annotations.get(GRACEFUL_STOP_ANNOTATION)),
        pod_object=pod_object,
        pod=observe_pod(pod_object) if pod_object is not None else None,
        secret=secret,
        material=read_material(secret),
        scope=template_scope(sts),
    )
