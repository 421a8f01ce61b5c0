"""The Runner's registration Secret: where tokens and JIT configs live (never in status)."""

from __future__ import annotations

import hashlib

TOKEN_KEY = "token"
"""Secret key of the registration token (token mode); the pod's RUNNER_TOKEN reads it."""

JIT_CONFIG_KEY = "jitConfig"
"""Secret key of the encoded JIT config (JIT mode); the pod's ACTIONS_RUNNER_INPUT_JITCONFIG."""

EXPIRES_AT_KEY = "expiresAt"
"""When the registration token expires (not secret; kept beside it to decide refreshes)."""

RUNNER_ID_KEY = "runnerId"
"""The GitHub runner id a JIT config was generated for."""

_SUFFIX = "-registration"
_MAX_NAME = 253


def registration_secret_name(runner_name: str) -> str:
    """`<runner>-registration`, shortened with a hash when the name would exceed 253 chars."""
    name = runner_name + _SUFFIX
    if len(name) <= _MAX_NAME:
        return name
    digest = hashlib.sha256(runner_name.encode()).hexdigest()[:10]
    keep = _MAX_NAME - len(_SUFFIX) - len(digest) - 1
    return f"{runner_name[:keep]}-{digest}{_SUFFIX}"
