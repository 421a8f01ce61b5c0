"""Names shared by every runner set: the labels and annotations ARC's manifests and tools
read, and how a set names its runners (`<set>-<uid tag><base-36 counter>`)."""

from __future__ import annotations

import hashlib
import re

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
