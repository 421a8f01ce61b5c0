"""Webhook delivery authenticity, as go-github's `ValidatePayload` checks it for ARC."""

from __future__ import annotations

import hmac
import re

_HEX = re.compile(r"(?:[0-9a-fA-F]{2})+")
_ALGORITHMS = {"X-Hub-Signature-256": ("sha256=", "sha256"), "X-Hub-Signature": ("sha1=", "sha1")}


def verify_signature(
    secret: bytes, body: bytes, signature_256: str | None, signature_1: str | None
) -> bool:
    """Whether the delivery carries a valid HMAC of the raw `body` keyed by `secret`.

    `signature_256` is the `X-Hub-Signature-256` header (`sha256=<hex>`), `signature_1` the
    legacy `X-Hub-Signature` (`sha1=<hex>`). As in go-github, the SHA-1 header is consulted
    only when the SHA-256 one is absent or empty, so a bad SHA-256 signature is not rescued by
    a SHA-1 one; no signature at all fails. Whether to verify at all is the caller's choice:
    ARC skips the check when no secret is configured.
    """
    if signature_256:
        return _matches("X-Hub-Signature-256", signature_256, secret, body)
    if signature_1:
        return _matches("X-Hub-Signature", signature_1, secret, body)
    return False


def _matches(header: str, value: str, secret: bytes, body: bytes) -> bool:
    prefix, algorithm = _ALGORITHMS[header]
    hex_digest = value[len(prefix) :]
    if not value.startswith(prefix) or not _HEX.fullmatch(hex_digest):
        return False
    expected = hmac.new(secret, body, algorithm).digest()
    # Constant time, so response timing reveals nothing about the expected MAC.
    return hmac.compare_digest(expected, bytes.fromhex(hex_digest))
