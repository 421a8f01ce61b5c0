"""JSON log lines, with credentials redacted even when code slips."""

from __future__ import annotations

import json
import logging

from hooks.logs import JsonFormatter
from hooks.redaction import MASK


def record(message: str, **extra: object) -> logging.LogRecord:
    entry = logging.makeLogRecord({"name": "arc_hooks.test", "levelname": "INFO", "msg": message})
    entry.__dict__.update(extra)
    return entry


def test_one_json_object_per_line_with_extra_fields() -> None:
    line = JsonFormatter().format(record("hook", path="/sync/runner", parent="default/a"))

    entry = json.loads(line)
    assert "\n" not in line
    assert entry["message"] == "hook"
    assert entry["path"] == "/sync/runner" and entry["parent"] == "default/a"


def test_configured_secrets_and_token_shapes_are_redacted() -> None:
    formatter = JsonFormatter(secrets=["my-webhook-secret-value"])
    line = formatter.format(
        record(
            "failed with ghp_abcdefghijklmnopqrstuvwxyz0123456789",
            detail="secret my-webhook-secret-value and ghs_ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789",
        )
    )

    assert "ghp_" not in line and "ghs_" not in line
    assert "my-webhook-secret-value" not in line
    assert line.count(MASK) == 3


def test_a_secret_json_escapes_is_redacted_whole_and_a_pems_lines_one_by_one() -> None:
    """Redaction ran over the JSON text, where a PEM's newlines and a quote are escaped: the
    configured key itself was never matched."""
    body = ["MIIEvAIBADANBgkqhkiG9w0BAQEFAASCBKYwggSiAgEAAoIBAQC7", "VJTUt9Us8cKjMzEfYyjiWA4R4"]
    pem = "-----BEGIN PRIVATE KEY-----\n" + "\n".join(body) + "\n-----END PRIVATE KEY-----\n"
    formatter = JsonFormatter(secrets=[pem, 'quote"d-secret-value'])

    line = formatter.format(
        record("failed", whole=pem, one_line=f"near {body[1]}", other='a quote"d-secret-value')
    )

    assert all(part not in line for part in body)
    assert 'quote\\"d-secret-value' not in line
    assert "BEGIN PRIVATE KEY" not in json.loads(line)["whole"]
