"""Which command builds the kustomizations as `kubectl apply -k` does: kubectl's own kustomize
(kubectl 1.21 or newer), or a standalone kustomize v4 or newer (`.ci/run` installs one from the
npm registry when the machine's kubectl is older)."""

from __future__ import annotations

import functools
import json
import re
import shutil
import subprocess

MIN_KUBECTL_MINOR = 21
"""kubectl 1.21 embeds kustomize v4; before it, v2, which cannot build the manifests (their
`patches`, `components` and image overrides). Debian 12's `kubernetes-client` is 1.20."""

MIN_KUSTOMIZE = (4, 1)
"""The first standalone kustomize with `replacements`, which the TLS component uses."""


@functools.cache
def kustomize_command() -> tuple[str, ...] | None:
    """The command a kustomization's directory is appended to, or None when neither kubectl
    nor kustomize is new enough (the tests then check what they can without)."""
    if _kubectl_new_enough():
        return ("kubectl", "kustomize")
    if _standalone_kustomize_new_enough():
        return ("kustomize", "build")
    return None


def kustomize_available() -> bool:
    return kustomize_command() is not None


def _kubectl_new_enough() -> bool:
    if shutil.which("kubectl") is None:
        return False
    result = subprocess.run(
        ["kubectl", "version", "--client", "-o", "json"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    try:
        client = json.loads(result.stdout)["clientVersion"]
        major = int(client["major"])
        minor = int(re.sub(r"\D.*", "", client["minor"]) or "0")
    except (ValueError, KeyError, TypeError):
        return False
    return (major, minor) >= (1, MIN_KUBECTL_MINOR)


def _standalone_kustomize_new_enough() -> bool:
    if shutil.which("kustomize") is None:
        return False
    result = subprocess.run(
        ["kustomize", "version"], capture_output=True, text=True, timeout=60, check=False
    )
    found = re.search(r"v(\d+)\.(\d+)", result.stdout)
    return found is not None and (int(found[1]), int(found[2])) >= MIN_KUSTOMIZE
