"""Credentials masked wherever text leaves the hooks for people to read: logs, status, events.

Code never puts a token there on purpose, but messages quote what they are about (a scope, a
runner group, a field's key), and a token pasted into the wrong field is then quoted with it.
What is shaped like a GitHub token, and the credentials of a URL (`https://user:token@host`),
are masked as a last line of defence.
"""

from __future__ import annotations

import re
from typing import Any

import orjson

MASK = "[REDACTED]"
GITHUB_TOKEN = re.compile(r"(?:gh[pousr]_|github_pat_)[A-Za-z0-9_]{16,}")
"""Anywhere, glued to a word or not (`acme_ghp_...`): a token is masked to its end."""
URL_CREDENTIALS = re.compile(r"(://)[^/@\s\"]+@")


def mask_credentials(text: str) -> str:
    # Every token has a "_", URL credentials an "@": most text has neither, and is not scanned.
    if "_" in text:
        text = GITHUB_TOKEN.sub(MASK, text)
    if "@" in text:
        text = URL_CREDENTIALS.sub(rf"\1{MASK}@", text)
    return text


def without_credentials(value: Any) -> Any:
    """A JSON value with every string masked; the value itself when nothing is to be masked
    (the common case, found with one scan of its JSON text)."""
    try:
        text = orjson.dumps(value).decode()
    except (orjson.JSONEncodeError, TypeError):
        return _masked(value)  # not plain JSON (keys that are not text): each string is looked at
    return value if mask_credentials(text) == text else _masked(value)


def _masked(value: Any) -> Any:
    if isinstance(value, str):
        return mask_credentials(value)
    if isinstance(value, dict):
        return {mask_credentials(str(k)): _masked(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_masked(item) for item in value]
    return value
