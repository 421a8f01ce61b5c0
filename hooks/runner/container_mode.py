"""Kubernetes container mode: the service account a Runner's pod runs as, and what it may do.

In `containerMode: kubernetes` the runner pod has no docker. The runner container hooks
(actions/runner-container-hooks, `/runner/k8s/index.js` in ARC's runner images) run each job in
a pod of its own, in the runner's namespace, and exec into it; they share the workspace through
the `work` volume (a generic ephemeral volume, claim `<pod>-work`, see `hooks.runner.pod`). For
that the runner pod needs a service account allowed to manage those pods.

Ported from ARC's `processRunnerCreation` and `newPod`
(controllers/actions.summerwind.net/runner_controller.go, actions/actions-runner-controller,
Apache-2.0): when a kubernetes-mode Runner names no `serviceAccountName`, it gets a
ServiceAccount, a Role and a RoleBinding of its own, all three named after the Runner, and its
pod runs as that ServiceAccount. Here they are children of the Runner (deleted with it).

Decision table (`service_account_children`), first match wins:

1. kubernetes mode, no serviceAccountName in the spec -> ServiceAccount + Role + RoleBinding;
                                                         the pod runs as the ServiceAccount
2. the Runner's own ServiceAccount exists and the     -> the same three, until that pod is gone:
   observed pod still runs as it (the spec changed:      deleting a service account revokes the
   another mode, or a serviceAccountName given)          tokens of its pods, and the pod may be
                                                         in a job its graceful stop waits for
3. otherwise                                          -> none (Metacontroller deletes any left)

A new pod is started only once its ServiceAccount is observed (`service_account_ready`): the API
server refuses a pod whose service account does not exist yet, and Metacontroller creates the
children of one answer in no particular order.

ARC does this for Runners only (and so for RunnerDeployments and RunnerReplicaSets, whose
Runners these are); a RunnerSet's pods run as its `serviceAccountName`, which the user provides.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from hooks.children import label_value
from hooks.resources.runner import Runner, RunnerSpec
from hooks.runner.pod import KUBERNETES_MODE

KubeObject = dict[str, Any]

RBAC_API_VERSION = "rbac.authorization.k8s.io/v1"
RBAC_GROUP = "rbac.authorization.k8s.io"
SERVICE_ACCOUNT_KINDS = ("ServiceAccount", "Role", "RoleBinding")
"""The children of a Runner this module decides about."""


@dataclass(frozen=True)
class PolicyRule:
    """One rule of a Role: these verbs on these resources of these API groups."""

    api_groups: tuple[str, ...]
    resources: tuple[str, ...]
    verbs: tuple[str, ...]

    def to_manifest(self) -> KubeObject:
        return {
            "apiGroups": list(self.api_groups),
            "resources": list(self.resources),
            "verbs": list(self.verbs),
        }


RUNNER_ROLE_RULES = (
    # The job's pods: created, waited for and deleted by the hooks.
    PolicyRule(("",), ("pods",), ("get", "list", "create", "delete")),
    # Steps run through exec into the job pod.
    PolicyRule(("",), ("pods/exec",), ("get", "create")),
    # Container steps' output, read from their pod's log.
    PolicyRule(("",), ("pods/log",), ("get", "list", "watch")),
    # Container steps ran as Jobs up to hooks v0.7 (older runner images ship those).
    PolicyRule(("batch",), ("jobs",), ("get", "list", "create", "delete")),
    # The job's environment and registry credentials, in Secrets the hooks create and remove.
    PolicyRule(("",), ("secrets",), ("get", "list", "create", "delete")),
)
"""ARC's rules, verb for verb; none can go. Before any command the hooks ask the API server
(SelfSubjectAccessReview) for each verb of their `requiredPermissions` and fail the job when one
is missing, so a tighter Role fails every job. The list is the hooks' own (v0.1 to v0.7); v0.8
no longer asks for `jobs`, but the hooks version is the runner image's, which is the user's
choice. The Role is namespaced: the rights hold in the runner's namespace only."""


@dataclass(frozen=True)
class ObservedAccount:
    """What the sync sees of the current service account set-up."""

    service_account_present: bool  # the Runner's own ServiceAccount is among its children
    pod_service_account: str | None  # what the observed pod runs as, if there is a pod


def needs_own_service_account(spec: RunnerSpec) -> bool:
    """Row 1: kubernetes mode and no service account of the user's."""
    return spec.container_mode == KUBERNETES_MODE and not spec.service_account_name


def pod_service_account(runner: Runner) -> str | None:
    """The service account the hook gives the Runner's pod: its own (row 1), or none (the
    spec's `serviceAccountName`, or the namespace's default)."""
    return runner.metadata.name if needs_own_service_account(runner.spec) else None


def service_account_ready(runner: Runner, observed: ObservedAccount) -> bool:
    """A new pod may be asked for: it needs no ServiceAccount of its own, or it is there."""
    return not needs_own_service_account(runner.spec) or observed.service_account_present


def service_account_children(runner: Runner, observed: ObservedAccount) -> list[KubeObject]:
    """The ServiceAccount, Role and RoleBinding the Runner should have (the table above)."""
    name = runner.metadata.name
    keep_for_pod = observed.service_account_present and observed.pod_service_account == name
    if not (needs_own_service_account(runner.spec) or keep_for_pod):
        return []
    namespace = runner.metadata.namespace
    return [
        service_account(name, namespace),
        role(name, namespace),
        role_binding(name, namespace),
    ]


def observe_account(service_account: KubeObject | None, pod: KubeObject | None) -> ObservedAccount:
    """From the observed ServiceAccount named after the Runner and the Runner's pod, if any."""
    spec = pod.get("spec") if pod is not None else None
    account = spec.get("serviceAccountName") if isinstance(spec, dict) else None
    return ObservedAccount(
        service_account_present=service_account is not None,
        pod_service_account=account if isinstance(account, str) else None,
    )


# ------------------------------------------------------------------ the objects


def service_account(name: str, namespace: str) -> KubeObject:
    return {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": _metadata(name, namespace)}


def role(name: str, namespace: str) -> KubeObject:
    return {
        "apiVersion": RBAC_API_VERSION,
        "kind": "Role",
        "metadata": _metadata(name, namespace),
        "rules": [rule.to_manifest() for rule in RUNNER_ROLE_RULES],
    }


def role_binding(name: str, namespace: str) -> KubeObject:
    subject: KubeObject = {"kind": "ServiceAccount", "name": name}
    if namespace:
        subject["namespace"] = namespace
    return {
        "apiVersion": RBAC_API_VERSION,
        "kind": "RoleBinding",
        "metadata": _metadata(name, namespace),
        "roleRef": {"apiGroup": RBAC_GROUP, "kind": "Role", "name": name},
        "subjects": [subject],
    }


def _metadata(name: str, namespace: str) -> KubeObject:
    # The labels of the Runner's registration Secret: `kubectl get ... -l runner-name=<runner>`.
    metadata: KubeObject = {
        "name": name,
        "labels": {"actions-runner": "", "runner-name": label_value(name)},
    }
    if namespace:
        metadata["namespace"] = namespace
    return metadata
