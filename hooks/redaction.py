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
GITHUB_TOKEN = re.compile(
    r"(?:(?<![A-Za-z0-9])|(?<=\\[0abefnrtvLNP])|(?<=\\x[0-9A-Fa-f]{2})"
    r"|(?<=\\u[0-9A-Fa-f]{4})|(?<=\\U[0-9A-Fa-f]{8})|(?<=%[0-9A-Fa-f]{2}))"
    r"(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{40,})"
)
"""GitHub's token shapes (a prefix, then 36 letters and digits, or a fine-grained token's 82;
matched from 30 and 40), also glued to a word by `_` or `-` (`acme_ghp_...`), but not inside
one: `acme/highs_and_lows_dashboard` is a repository, not a token. Also right after an escape
sequence (`\\n`, `\\u00a0`, YAML's `\\N`, a URL's `%0A`, ...), whose last character is a letter
or digit: text is often masked once written as JSON, quoted with `repr` or put in a URL (found
by the hostile-input fuzzer: a token after a newline passed through status, refusals and the
JSON log in clear)."""
URL_CREDENTIALS = re.compile(r"(://)[^/@\s\"]+@")


def mask_credentials(text: str) -> str:
    # Every token has a "_", URL credentials an "@": most text has neither, and is not scanned.
    if "_" in text:
        text = GITHUB_TOKEN.sub(MASK, text)
    if "@" in text:
        text = URL_CREDENTIALS.sub(rf"\1{MASK}@", text)
    return text


def without_credentials(value: Any, *, kept: tuple[str, ...] = ()) -> Any:
    """A JSON value with every string masked, but for the top-level fields `kept`; the value
    itself when nothing is to be masked (the common case, found with one scan of its text)."""
    if kept and isinstance(value, dict) and any(field in value for field in kept):
        shown = {key: item for key, item in value.items() if key not in kept}
        masked = without_credentials(shown)
        if masked is shown:
            return value
        return {**masked, **{key: value[key] for key in kept if key in value}}
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
