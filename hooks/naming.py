"""Names shared by every runner set: the labels and annotations ARC's manifests and tools
read, and how a set names its runners (`<set>-<uid tag><base-36 counter>`)."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable
from typing import Any

TEMPLATE_HASH_LABEL = "runner-template-hash"
"""On a set's runners: the hash of the template they were made from."""

DEPLOYMENT_NAME_LABEL = "runner-deployment-name"

CONTROLLER_UID_LABEL = "controller-uid"
"""Metacontroller's generated selector: a child without it is released by its parent."""

SYNC_TIME_ANNOTATION = "actions-runner/sync-time"
"""When the set created the runner: the last of these is ARC's `lastSyncTime` (#1180)."""

RUNNER_ID_ANNOTATION = "actions-runner/id"
"""On a runner pod: the runner's GitHub id, recorded once GitHub lists it (as ARC)."""

BASE36_NAME = re.compile(r"[0-9a-z]{1,13}")
"""A name's counter: base 36, at most 13 digits (36**13 > 2**64, more than any counter)."""

MAX_OBJECT_NAME = 253
MAX_LABEL_VALUE = 63
RUNNER_NAME_SUFFIX = 1 + 4 + 13
"""What a set adds to its name to name a runner: `-`, the uid tag, the counter."""
MAX_SLOT_DIGITS = 7
"""A RunnerSet's volume slots, as a claim name spells them: up to ten million."""


LABEL_VALUE = re.compile(r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?")
"""A label value's characters, as Kubernetes' `IsValidLabelValue` takes them (with at most
`MAX_LABEL_VALUE` of them)."""


def is_label_value(text: str) -> bool:
    return len(text) <= MAX_LABEL_VALUE and LABEL_VALUE.fullmatch(text) is not None


def deployment_name_selector(name: str) -> dict[str, Any] | None:
    """A label selector for a RunnerDeployment's runners, or None for a name that is no label
    value: none of its runners could carry it, and Metacontroller refuses a selector with such
    a value, failing every sync of the parent that asked for it (a finalize included)."""
    if not is_label_value(name):
        return None
    return {"matchLabels": {DEPLOYMENT_NAME_LABEL: name}}


def deployment_name_problem(name: str) -> str | None:
    """A RunnerDeployment's name is the value of its runners' `runner-deployment-name` label
    (as in ARC, whose RunnerReplicaSet is refused by the API server past 63 characters)."""
    if len(name) > MAX_LABEL_VALUE:
        return (
            f"metadata.name: at most {MAX_LABEL_VALUE} characters for a RunnerDeployment (it is "
            f"the value of its runners' {DEPLOYMENT_NAME_LABEL} label)"
        )
    return None


def replica_set_name_problem(name: str) -> str | None:
    """A RunnerReplicaSet's runners are named `<set>-<uid tag><counter>`."""
    longest = MAX_OBJECT_NAME - RUNNER_NAME_SUFFIX
    if len(name) > longest:
        return (
            f"metadata.name: at most {longest} characters for a RunnerReplicaSet (its Runners "
            f"are named after it, and a name has at most {MAX_OBJECT_NAME})"
        )
    return None


def claim_names_problem(set_name: str, template_names: list[str]) -> str | None:
    """A RunnerSet's volume claims are named `<template>-<set>-<slot>`, as a StatefulSet's."""
    longest = MAX_OBJECT_NAME - 2 - MAX_SLOT_DIGITS
    if any(len(template) + len(set_name) > longest for template in template_names):
        return (
            f"metadata.name and spec.volumeClaimTemplates[].metadata.name: at most {longest} "
            f"characters together (the claims are named <template>-<set>-<slot>, and a name "
            f"has at most {MAX_OBJECT_NAME})"
        )
    return None


def without_controller_uid(labels: dict[str, str]) -> dict[str, str]:
    """A child's labels, less `controller-uid`: Metacontroller's generated selector puts the
    parent's uid there and refuses a child whose label says otherwise (a template's labels
    copied from a Job's pod carry one)."""
    if CONTROLLER_UID_LABEL not in labels:
        return labels
    return {key: value for key, value in labels.items() if key != CONTROLLER_UID_LABEL}


def ephemeral_claims_problem(longest_pod_name: int, volumes: Iterable[str]) -> str | None:
    """Kubernetes names the claim of a pod's generic ephemeral volume `<pod>-<volume>`: a pod
    whose name leaves no room for it never starts (the claim cannot be created)."""
    for volume in volumes:
        if longest_pod_name + 1 + len(volume) > MAX_OBJECT_NAME:
            return (
                f"metadata.name: too long for the runner pod's ephemeral volume {volume!r} "
                f"(Kubernetes names its claim <pod>-{volume}, and a name has at most "
                f"{MAX_OBJECT_NAME} characters)"
            )
    return None


def uid_tag(uid: str) -> str:
    """Four characters from the set's uid: a set recreated with the same name never reuses
    the names of its predecessor's runners, which GitHub may still know."""
    return base36(int(hashlib.sha256(uid.encode()).hexdigest()[:8], 16))[-4:].rjust(4, "0")


def base36(number: int) -> str:
    if number < 0:
        raise ValueError(f"base36 of a negative number: {number}")
    digits = "0123456789abcdefghijklmnopqrstuvwxyz"
    text = ""
    while True:
        number, remainder = divmod(number, 36)
        text = digits[remainder] + text
        if number == 0:
            return text


def newest_first(timestamp: str) -> str:
    """A sort key that orders RFC 3339 timestamps newest first (they compare as text)."""
    return "".join(chr(0x10FFFF - ord(c)) for c in timestamp)
