"""Whether the runner-pod decorator may act on GitHub, with the server's credentials, for the
scope and runner a pod names in its env.

Every pod labelled `actions-runner` reaches the decorator, and a pod's env is whatever its
creator wrote: acting on it alone let anyone who may create and delete pods, in any namespace,
look up and unregister runners in every organization the server's credentials reach (ARC's
runner-pod controller trusts the env the same way). A pod is vouched for when:

1. its controller is a Runner, present with the uid the pod names, registering where the pod
   says (its spec's scope, or the one its status records); or
2. its controller is a StatefulSet of a RunnerSet, present with that uid and controlled by a
   RunnerSet, whose pod template names the same scope and the pod's own runner name; or
3. it carries the decorator's seal: written while (1) or (2) held, so that a pod whose owner is
   gone (a StatefulSet deleted out of band, whose pod the garbage collector then deletes) is
   still unregistered. The seal is an HMAC of the pod's uid, scope and runner name under a key
   derived from the server's GitHub credentials, which a pod's creator does not know.

A pod using its own `githubAPICredentialsFrom` Secret (of its own namespace) needs none of
this: it acts with its own credentials.
"""

from __future__ import annotations

import hashlib
import hmac

from hooks.github.port import Scope
from hooks.metacontroller import KubeObject, list_or_empty, object_or_empty
from hooks.runner.observed_pod import env_scope, literal_env
from hooks.runnerpod.facts import RunnerPod
from hooks.settings import Settings

SEAL_ANNOTATION = "arc-hooks.dev/runner-seal"
RUNNER_SET_API_VERSION = "actions.summerwind.dev/v1alpha1"


def seal_key(settings: Settings) -> bytes | None:
    """The seal's key, from the server's own credentials (None without any): every replica
    derives the same one, and only the server knows it."""
    secret = settings.github_token or settings.github_app_private_key
    if secret is None or not secret.get_secret_value():
        return None
    return hmac.new(
        secret.get_secret_value().encode(), b"arc-hooks runner pod seal", hashlib.sha256
    ).digest()


def seal(key: bytes, pod: RunnerPod) -> str:
    assert pod.scope is not None
    claim = "\n".join((pod.uid, pod.scope.enterprise, pod.scope.organization, pod.scope.repository))
    claim += "\n" + pod.runner_name
    return hmac.new(key, claim.encode(), hashlib.sha256).hexdigest()[:32]


def sealed(key: bytes | None, pod: RunnerPod) -> bool:
    recorded = pod.annotations.get(SEAL_ANNOTATION)
    if key is None or not recorded or pod.scope is None:
        return False
    return hmac.compare_digest(recorded, seal(key, pod))


def owner_vouches(pod: RunnerPod, owner: KubeObject | None) -> bool:
    """Whether `owner`, the pod's controller as observed (None: not present), says the pod's
    runner registers where the pod names (rules 1 and 2)."""
    if owner is None or pod.scope is None or pod.controller is None:
        return False
    if pod.controller.kind == "Runner":
        spec = object_or_empty(owner.get("spec"))
        registration = object_or_empty(object_or_empty(owner.get("status")).get("registration"))
        return pod.scope in (_scope_of(spec), _scope_of(registration))
    if pod.controller.kind == "StatefulSet":
        template = object_or_empty(object_or_empty(owner.get("spec")).get("template"))
        return (
            _controlled_by_runner_set(owner)
            and env_scope(template) == pod.scope
            and literal_env(template, "RUNNER_NAME") in ("", pod.runner_name)
        )
    return False


def _scope_of(fields: dict[str, object]) -> Scope:
    def text(name: str) -> str:
        value = fields.get(name)
        return value if isinstance(value, str) else ""

    return Scope(
        enterprise=text("enterprise"),
        organization=text("organization"),
        repository=text("repository"),
    )


def _controlled_by_runner_set(statefulset: KubeObject) -> bool:
    references = list_or_empty(object_or_empty(statefulset.get("metadata")).get("ownerReferences"))
    return any(
        isinstance(ref, dict)
        and ref.get("controller") is True
        and ref.get("kind") == "RunnerSet"
        and ref.get("apiVersion") == RUNNER_SET_API_VERSION
        for ref in references
    )
