"""Webhook signatures, checked as go-github's `ValidatePayload` checks them for ARC."""

from __future__ import annotations

import hashlib
import hmac

import pytest

from arc_sim.webhooks import signature_1, signature_256
from hooks.webhook import verify_signature

SECRET = b"It's a Secret to Everybody"
BODY = b"Hello, World!"
# GitHub's documented test vector (validating-webhook-deliveries.md).
GITHUB_VECTOR = "757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17"


def test_githubs_test_vector() -> None:
    assert verify_signature(SECRET, BODY, f"sha256={GITHUB_VECTOR}", None)


def test_hex_digits_in_either_case() -> None:
    assert verify_signature(SECRET, BODY, f"sha256={GITHUB_VECTOR.upper()}", None)


@pytest.mark.parametrize(
    ("secret", "body"),
    [(b"another secret", BODY), (SECRET, b"Hello, World?"), (b"", BODY)],
    ids=["wrong secret", "altered body", "empty secret"],
)
def test_a_signature_for_other_bytes_fails(secret: bytes, body: bytes) -> None:
    assert not verify_signature(secret, body, f"sha256={GITHUB_VECTOR}", None)


@pytest.mark.parametrize(
    "header",
    [
        GITHUB_VECTOR,  # no prefix
        f"sha1={GITHUB_VECTOR}",  # wrong algorithm for the header
        f"SHA256={GITHUB_VECTOR}",
        f"sha256={GITHUB_VECTOR[:-1]}",  # odd number of hex digits
        f"sha256={GITHUB_VECTOR[:-2]}zz",
        f"sha256= {GITHUB_VECTOR}",
        f"sha256={GITHUB_VECTOR[:32]}",  # truncated
        "sha256=",
    ],
)
def test_malformed_signatures_fail(header: str) -> None:
    assert not verify_signature(SECRET, BODY, header, None)


def test_sha1_is_the_fallback_when_there_is_no_sha256_signature() -> None:
    sha1 = "sha1=" + hmac.new(SECRET, BODY, hashlib.sha1).hexdigest()
    assert verify_signature(SECRET, BODY, None, sha1)
    assert verify_signature(SECRET, BODY, "", sha1)
    assert not verify_signature(SECRET, BODY, None, "sha1=" + "0" * 40)
    assert not verify_signature(SECRET, BODY, None, f"sha256={GITHUB_VECTOR}")


def test_a_bad_sha256_signature_is_not_rescued_by_a_good_sha1_one() -> None:
    sha1 = "sha1=" + hmac.new(SECRET, BODY, hashlib.sha1).hexdigest()
    assert not verify_signature(SECRET, BODY, "sha256=" + "0" * 64, sha1)


def test_no_signature_fails() -> None:
    assert not verify_signature(SECRET, BODY, None, None)
    assert not verify_signature(SECRET, BODY, "", "")


def test_the_comparison_is_constant_time(monkeypatch: pytest.MonkeyPatch) -> None:
    compared: list[tuple[bytes, bytes]] = []
    original = hmac.compare_digest

    def recording(a: bytes, b: bytes) -> bool:
        compared.append((a, b))
        return original(a, b)

    monkeypatch.setattr(hmac, "compare_digest", recording)
    assert verify_signature(SECRET, BODY, f"sha256={GITHUB_VECTOR}", None)
    assert compared == [(bytes.fromhex(GITHUB_VECTOR), bytes.fromhex(GITHUB_VECTOR))]


def test_signatures_of_the_simulated_github_verify() -> None:
    body = b'{"action":"queued"}'
    assert verify_signature(SECRET, body, signature_256(SECRET, body), signature_1(SECRET, body))
    assert verify_signature(SECRET, body, None, signature_1(SECRET, body))
