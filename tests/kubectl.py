"""Whether the tests can build the kustomizations with kubectl, as `kubectl apply -k` does."""

from __future__ import annotations

import functools
import json
import re
import shutil
import subprocess

MIN_KUBECTL_MINOR = 21
"""kubectl 1.21 embeds kustomize v4; before it, v2, which cannot build the manifests (their
`patches`, `components` and image overrides). Debian 12's `kubernetes-client` is 1.20."""


@functools.cache
def kustomize_available() -> bool:
    """kubectl is installed and new enough; otherwise the tests check what they can without."""
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
