"""What a RunnerSet's children look like: one StatefulSet of one replica per runner, the Secret
holding that runner's registration (a token, or its own JIT config), and the volume pool that
carries a runner's volumes over to the next runner.

The pod template is the user's, completed the way ARC's `newRunnerPodWithContainerMode` completes
it (the same builder as Runner pods: runner container, docker sidecar, volumes, env), with two
StatefulSet necessities: `restartPolicy: Always` (the only value a StatefulSet accepts) and a
`RUNNER_NAME` equal to the pod name, `<statefulset>-0`.

Volumes: `volumeClaimTemplates` are not handed to the StatefulSets. The set keeps a pool of
claims instead, one per template and *slot* (`<template>-<runnerset>-<slot>`), and each new
runner mounts the claims of a free slot. A released volume, with its caches, thus serves the next
runner, whatever the storage class or its reclaim policy (ARC v0.24 got there by clearing the
claimRef of released PersistentVolumes; a pool needs no cluster-wide rights).
"""

from __future__ import annotations

import hashlib
from collections import Counter
from typing import Any

import orjson

from hooks.children import label_value
from hooks.github.port import Scope
from hooks.metacontroller import list_or_empty, object_or_empty
from hooks.naming import SYNC_TIME_ANNOTATION, TEMPLATE_HASH_LABEL, without_controller_uid
from hooks.resources.common import ObjectMeta
from hooks.resources.runner import Runner, RunnerConfig, RunnerSpec
from hooks.resources.runnerset import RunnerSet, RunnerSetSpec
from hooks.runner.observed_pod import env_scope
from hooks.runner.pod import KUBERNETES_MODE, POD_TEMPLATE_HASH_LABEL, PodDefaults, build_runner_pod
from hooks.runner.registration import RegistrationMaterial, secret_fields
from hooks.runner.secret import registration_secret_name

KubeObject = dict[str, Any]

RUNNERSET_NAME_LABEL = "runnerset-name"
STATEFULSET_NAME_LABEL = "runner-statefulset-name"
VOLUME_SLOT_LABEL = "arc-hooks.dev/volume-slot"

# Pod template fields the runner builder takes over (as RunnerSpec fields); the template's
# other fields are copied as they are.
_BUILDER_FIELDS = {
    "containers": "containers",
    "volumes": "volumes",
    "initContainers": "initContainers",
    "nodeSelector": "nodeSelector",
    "serviceAccountName": "serviceAccountName",
    "automountServiceAccountToken": "automountServiceAccountToken",
    "securityContext": "securityContext",
    "imagePullSecrets": "imagePullSecrets",
    "affinity": "affinity",
    "tolerations": "tolerations",
    "priorityClassName": "priorityClassName",
    "terminationGracePeriodSeconds": "terminationGracePeriodSeconds",
    "hostAliases": "hostAliases",
    "topologySpreadConstraints": "topologySpreadConstraints",
    "runtimeClassName": "runtimeClassName",
    "dnsPolicy": "dnsPolicy",
    "dnsConfig": "dnsConfig",
    "enableServiceLinks": "enableServiceLinks",
}


def template_hash(
    runner_set: RunnerSet,
    defaults: PodDefaults,
    *,
    jit: bool = False,
    scale_set_id: int | None = None,
) -> str:
    """A digest of everything a runner's pod is built from: the spec without the fields that
    size the set, the pod defaults of the settings, the registration mode and the scale set
    its runners are members of (another scale set: other runners)."""
    spec = _spec(runner_set).model_dump(
        by_alias=True, exclude_none=True, exclude={"replicas", "effective_time"}, mode="json"
    )
    subject: dict[str, Any] = {"spec": spec, "defaults": repr(defaults)}
    if jit:  # only then: token-mode hashes stay what they were
        subject["registration"] = "jit"
        subject["jitImage"] = defaults.image_for(jit=True)
    if scale_set_id is not None:
        subject["scaleSet"] = scale_set_id
    return hashlib.sha256(orjson.dumps(subject, option=orjson.OPT_SORT_KEYS)).hexdigest()[:10]


def runner_spec(runner_set: RunnerSet) -> RunnerSpec:
    """The RunnerSet's pod template and runner configuration as a Runner spec."""
    spec = _spec(runner_set)
    template_spec = spec.template.spec
    wire = spec.model_dump(by_alias=True, exclude_none=True, mode="json")
    config = RunnerConfig.model_validate(wire)
    fields: dict[str, Any] = config.model_dump(
        by_alias=True, exclude_none=True, exclude_unset=True, mode="json"
    )
    for template_key, runner_key in _BUILDER_FIELDS.items():
        if template_key in template_spec:
            fields[runner_key] = template_spec[template_key]
    if spec.service_account_name and spec.container_mode == KUBERNETES_MODE:
        # ARC reads the field in kubernetes mode alone; otherwise the template's holds.
        fields["serviceAccountName"] = spec.service_account_name
    if spec.work_volume_claim_template is not None:
        fields["workVolumeClaimTemplate"] = spec.work_volume_claim_template.to_manifest()
    return RunnerSpec.model_validate(fields)


def statefulset(
    runner_set: RunnerSet,
    defaults: PodDefaults,
    *,
    name: str,
    hash_: str,
    slot: int | None,
    created_at: str,
    jit: bool = False,
) -> KubeObject:
    """The StatefulSet of one runner, named `name`; its pod (and runner) is `<name>-0`."""
    spec = _spec(runner_set)
    set_name = runner_set.metadata.name
    own_labels = {
        RUNNERSET_NAME_LABEL: label_value(set_name),
        STATEFULSET_NAME_LABEL: label_value(name),
        TEMPLATE_HASH_LABEL: hash_,
    }
    if slot is not None:
        own_labels[VOLUME_SLOT_LABEL] = str(slot)
    pod = _pod(runner_set, defaults, name=f"{name}-0", secret_name=secret_name(name), jit=jit)
    template_labels = {**pod["metadata"]["labels"], **own_labels}
    template_labels.pop(POD_TEMPLATE_HASH_LABEL, None)
    pod_spec = pod["spec"]
    if slot is not None:
        _mount_claims(pod_spec, spec, set_name, slot)
    sts_spec: KubeObject = {
        "replicas": 1,
        "selector": {
            "matchLabels": {
                RUNNERSET_NAME_LABEL: own_labels[RUNNERSET_NAME_LABEL],
                STATEFULSET_NAME_LABEL: own_labels[STATEFULSET_NAME_LABEL],
            }
        },
        "template": {
            "metadata": {"labels": template_labels, "annotations": pod["metadata"]["annotations"]},
            "spec": pod_spec,
        },
        # The template of a runner's StatefulSet never changes: a new template means new
        # runners, each stopped gracefully first.
        "updateStrategy": {"type": "OnDelete"},
        "podManagementPolicy": spec.pod_management_policy or "Parallel",
    }
    if spec.service_name:
        sts_spec["serviceName"] = spec.service_name
    if spec.min_ready_seconds is not None:
        sts_spec["minReadySeconds"] = spec.min_ready_seconds
    if spec.revision_history_limit is not None:
        sts_spec["revisionHistoryLimit"] = spec.revision_history_limit
    return {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {
            "name": name,
            "namespace": runner_set.metadata.namespace,
            # The RunnerSet's own labels, as ARC gives them (tools select by them), under the
            # template's, which the RunnerSet's selector (Metacontroller's claim) reads.
            "labels": without_controller_uid(
                {**runner_set.metadata.labels, **spec.template.metadata.labels, **own_labels}
            ),
            "annotations": {SYNC_TIME_ANNOTATION: created_at},
        },
        "spec": sts_spec,
    }


def template_scope(statefulset: KubeObject) -> Scope | None:
    """Where a runner StatefulSet's runner registers, as its pod template's env names it."""
    return env_scope(object_or_empty(object_or_empty(statefulset.get("spec")).get("template")))


def recorded_scopes(statefulsets: list[KubeObject]) -> list[Scope]:
    """The scopes the StatefulSets' runners register in, the most common first: where the
    set's runners are, whatever its spec says now."""
    counts = Counter(scope for scope in map(template_scope, statefulsets) if scope is not None)
    return [scope for scope, _ in counts.most_common()]


def secret_name(statefulset_name: str) -> str:
    return registration_secret_name(statefulset_name)


def registration_secret(
    runner_set: RunnerSet, statefulset_name: str, material: RegistrationMaterial
) -> KubeObject:
    """The runner's registration Secret. Emptied once the runner has started: the container
    read its token then, and a restarted container must not register a second runner."""
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {
            "name": secret_name(statefulset_name),
            "namespace": runner_set.metadata.namespace,
            "labels": {
                "actions-runner": "",
                RUNNERSET_NAME_LABEL: label_value(runner_set.metadata.name),
                STATEFULSET_NAME_LABEL: label_value(statefulset_name),
            },
        },
        "type": "Opaque",
        **secret_fields(material),
    }


def claim_name(template_name: str, runner_set_name: str, slot: int) -> str:
    """Named as a StatefulSet names its claims (`<template>-<set>-<ordinal>`)."""
    return f"{template_name}-{runner_set_name}-{slot}"


def volume_claims(runner_set: RunnerSet, slot: int) -> list[KubeObject]:
    """The claims of one slot, from the volumeClaimTemplates."""
    spec = _spec(runner_set)
    set_name = runner_set.metadata.name
    claims = []
    for template in spec.volume_claim_templates:
        metadata = object_or_empty(template.get("metadata"))
        template_name = _claim_template_name(template)
        labels = {
            **object_or_empty(metadata.get("labels")),
            RUNNERSET_NAME_LABEL: label_value(set_name),
            VOLUME_SLOT_LABEL: str(slot),
        }
        claims.append(
            {
                "apiVersion": "v1",
                "kind": "PersistentVolumeClaim",
                "metadata": {
                    "name": claim_name(template_name, set_name, slot),
                    "namespace": runner_set.metadata.namespace,
                    "labels": labels,
                    "annotations": dict(object_or_empty(metadata.get("annotations"))),
                },
                "spec": dict(object_or_empty(template.get("spec"))),
            }
        )
    return claims


# ------------------------------------------------------------------ helpers


def _spec(runner_set: RunnerSet) -> RunnerSetSpec:
    assert runner_set.spec is not None, "validated before building"
    return runner_set.spec


def _pod(
    runner_set: RunnerSet, defaults: PodDefaults, *, name: str, secret_name: str, jit: bool
) -> KubeObject:
    spec = _spec(runner_set)
    template_meta = spec.template.metadata
    runner = Runner(
        metadata=ObjectMeta(
            name=name,
            namespace=runner_set.metadata.namespace,
            labels=dict(template_meta.labels),
            annotations=dict(template_meta.annotations),
        ),
        spec=runner_spec(runner_set),
    )
    pod = build_runner_pod(runner, defaults, secret_name=secret_name, jit=jit)
    # The template's own fields the builder does not know (hostNetwork, schedulerName, ...).
    extra = {k: v for k, v in spec.template.spec.items() if k not in pod["spec"]}
    pod["spec"] = {**extra, **pod["spec"], "restartPolicy": "Always"}
    return pod


def _mount_claims(pod_spec: KubeObject, spec: RunnerSetSpec, set_name: str, slot: int) -> None:
    """Each claim template becomes a volume of the same name backed by the slot's claim,
    replacing a default volume of that name (ARC's `work` emptyDir, for instance)."""
    names = [_claim_template_name(t) for t in spec.volume_claim_templates]
    volumes = [
        v
        for v in list_or_empty(pod_spec.get("volumes"))
        if not (isinstance(v, dict) and v.get("name") in names)
    ]
    volumes += [
        {"name": n, "persistentVolumeClaim": {"claimName": claim_name(n, set_name, slot)}}
        for n in names
    ]
    pod_spec["volumes"] = volumes


def _claim_template_name(template: KubeObject) -> str:
    name = object_or_empty(template.get("metadata")).get("name")
    return name if isinstance(name, str) else ""
