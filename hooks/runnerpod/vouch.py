"""Whether the runner-pod decorator may act on GitHub, with the server's credentials, for the
scope and runner a pod names in its env.

Every pod labelled `actions-runner` reaches the decorator, and a pod's env is whatever its
creator wrote: acting on it alone let anyone who may create and delete pods, in any namespace,
look up and unregister runners in every organization the server's credentials reach (ARC's
runner-pod controller trusts the env the same way). A pod is vouched for when:

1. its controller is a Runner, present with the uid the pod names, whose runner it is: the
   same runner name, registering where the pod says (its spec's scope, or the one its status
   records); or
2. its controller is a StatefulSet, present with that uid, that carries the RunnerSet hook's
   seal (`hooks.runner_seal`) for this pod's name, scope and runner: an ownerReference naming
   a RunnerSet is anyone's to write, the seal is not; or
3. it carries the decorator's own seal, written while (1) or (2) held, so that a pod whose owner
   is gone (a StatefulSet deleted out of band, whose pod the garbage collector then deletes) is
   still unregistered.

A pod using its own `githubAPICredentialsFrom` Secret (of its own namespace) needs none of
this: it acts with its own credentials.
"""

from __future__ import annotations

from hooks.github.port import Scope
from hooks.metacontroller import KubeObject, list_or_empty, object_or_empty
from hooks.runner.observed_pod import env_literal
from hooks.runner_seal import (
    SEAL_ANNOTATION,
    runner_id_seal,
    runner_id_sealed,
    runner_seal,
    seal_holds,
)
from hooks.runnerpod.facts import RunnerPod

__all__ = ["SEAL_ANNOTATION", "owner_vouches", "pod_id_seal", "pod_id_sealed", "pod_seal", "sealed"]


def pod_seal(key: bytes, pod: RunnerPod) -> str:
    assert pod.scope is not None
    return runner_seal(key, pod.namespace, pod.observed.name, pod.scope, pod.runner_name)


def pod_id_seal(key: bytes, pod: RunnerPod, runner_id: int) -> str:
    assert pod.scope is not None
    return runner_id_seal(
        key, pod.namespace, pod.observed.name, pod.scope, pod.runner_name, runner_id
    )


def pod_id_sealed(key: bytes | None, pod: RunnerPod, runner_id: int) -> bool:
    return runner_id_sealed(
        dict(pod.annotations),
        key,
        pod.namespace,
        pod.observed.name,
        pod.scope,
        pod.runner_name,
        runner_id,
    )


def sealed(key: bytes | None, pod: RunnerPod) -> bool:
    return _holds(pod.annotations.get(SEAL_ANNOTATION), key, pod)


def owner_vouches(pod: RunnerPod, owner: KubeObject | None, key: bytes | None) -> bool:
    """Whether `owner`, the pod's controller as observed (None: not present), vouches for the
    pod's runner (rules 1 and 2)."""
    if owner is None or pod.scope is None or pod.controller is None:
        return False
    if pod.controller.kind == "Runner":
        metadata = object_or_empty(owner.get("metadata"))
        spec = object_or_empty(owner.get("spec"))
        registration = object_or_empty(object_or_empty(owner.get("status")).get("registration"))
        runner_name = env_literal(_runner_env(spec), "RUNNER_NAME") or metadata.get("name")
        return pod.runner_name == runner_name and pod.scope in (
            _scope_of(spec),
            _scope_of(registration),
        )
    if pod.controller.kind == "StatefulSet":
        annotations = object_or_empty(object_or_empty(owner.get("metadata")).get("annotations"))
        return _holds(annotations.get(SEAL_ANNOTATION), key, pod)
    return False


def _holds(recorded: object, key: bytes | None, pod: RunnerPod) -> bool:
    return seal_holds(recorded, key, pod.namespace, pod.observed.name, pod.scope, pod.runner_name)


def _runner_env(spec: dict[str, object]) -> object:
    """The env the Runner's pod is built with (`hooks.runner.pod`): its `runner` container's
    own when it has one, else `spec.env`."""
    for container in list_or_empty(spec.get("containers")):
        if (
            isinstance(container, dict)
            and container.get("name") == "runner"
            and container.get("env")
        ):
            return container.get("env")
    return spec.get("env")


def _scope_of(fields: dict[str, object]) -> Scope:
    def text(name: str) -> str:
        value = fields.get(name)
        return value if isinstance(value, str) else ""

    return Scope(
        enterprise=text("enterprise"),
        organization=text("organization"),
        repository=text("repository"),
    )
