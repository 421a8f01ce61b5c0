"""JSON logs, one object per line, with credentials redacted as a last line of defence.

Code never logs a token on purpose; the redaction catches accidents (an exception message that
quotes a header, say) by masking the configured secrets and anything shaped like a GitHub token.
"""

from __future__ import annotations

import json
import logging
import sys
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any

from hooks.redaction import MASK, mask_credentials

_STANDARD_ATTRIBUTES = set(logging.makeLogRecord({}).__dict__) | {
    "message",
    "asctime",
    "color_message",  # uvicorn's terminal-coloured copy of the message
}


class JsonFormatter(logging.Formatter):
    def __init__(self, secrets: Iterable[str] = ()) -> None:
        super().__init__()
        forms = {form for secret in secrets for form in _written_forms(secret)}
        self._secrets = sorted({s for s in forms if len(s) >= 8}, key=len, reverse=True)

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        for key, value in record.__dict__.items():
            if key not in _STANDARD_ATTRIBUTES and not key.startswith("_"):
                entry[key] = value
        if record.exc_info and record.exc_info[0] is not None:
            entry["error"] = f"{record.exc_info[0].__name__}: {record.exc_info[1]}"
        return self.redact(json.dumps(entry, default=str, sort_keys=False))

    def redact(self, text: str) -> str:
        for secret in self._secrets:
            text = text.replace(secret, MASK)
        return mask_credentials(text)


def _written_forms(secret: str) -> set[str]:
    """How a secret may appear in a log line, which is JSON: as it is, escaped as JSON writes it
    (a PEM's newlines, a quote), and, for a PEM, each line of its body."""
    forms = {secret, json.dumps(secret)[1:-1]}
    if "-----BEGIN" in secret:
        lines = (line.strip() for line in secret.splitlines())
        forms |= {line for line in lines if len(line) >= 16 and not line.startswith("-----")}
    return forms


def configure_logging(level: str = "INFO", secrets: Iterable[str] = ()) -> None:
    handler = logging.StreamHandler(sys.stdout)
    handler.setFormatter(JsonFormatter(secrets))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    # PyGithub attaches its own stderr handler on import; route it through ours instead.
    for name in ("uvicorn", "uvicorn.error", "uvicorn.access", "github"):
        logger = logging.getLogger(name)
        logger.handlers[:] = []
        logger.propagate = True
    # One line per hook call is ours; uvicorn's access log would repeat it.
    logging.getLogger("uvicorn.access").setLevel(logging.WARNING)
