"""Configuration from ARC's environment names, and GHES URL derivation as ARC does it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from pydantic import ValidationError

from hooks.settings import Settings


def settings(**env: str) -> Settings:
    return Settings.model_validate(env)


@pytest.mark.parametrize(
    ("env", "api", "runner_url"),
    [
        ({}, "https://api.github.com", "https://github.com/"),
        (
            {"GITHUB_ENTERPRISE_URL": "https://ghes.example.com"},
            "https://ghes.example.com/api/v3",
            "https://ghes.example.com/",
        ),
        (
            {"GITHUB_ENTERPRISE_URL": "https://ghes.example.com/api/v3/"},
            "https://ghes.example.com/api/v3",
            "https://ghes.example.com/",
        ),
        (
            {"GITHUB_ENTERPRISE_URL": "https://api.ghes.example.com"},
            "https://api.ghes.example.com",
            "https://api.ghes.example.com/",
        ),
        (  # go-github: a host with `.api.` in it serves the API at its root too
            {"GITHUB_ENTERPRISE_URL": "https://acme.api.example.com"},
            "https://acme.api.example.com",
            "https://acme.api.example.com/",
        ),
        (  # ... but not one whose path says so
            {"GITHUB_ENTERPRISE_URL": "https://example.com/x.api.y"},
            "https://example.com/x.api.y/api/v3",
            "https://example.com/x.api.y/",
        ),
        (
            {"GITHUB_URL": "http://127.0.0.1:9000/", "GITHUB_RUNNER_GITHUB_URL": "https://gh.io"},
            "http://127.0.0.1:9000",
            "https://gh.io/",
        ),
    ],
)
def test_github_urls(env: dict[str, str], api: str, runner_url: str) -> None:
    configured = settings(**env)
    assert configured.api_base_url == api
    assert configured.runner_github_url == runner_url


def test_credentials_are_recognised() -> None:
    assert not settings().has_github_credentials
    assert settings(GITHUB_TOKEN="t").has_github_credentials
    app = {"GITHUB_APP_ID": "1", "GITHUB_APP_INSTALLATION_ID": "2"}
    assert not settings(**app).has_github_credentials
    assert settings(**app, GITHUB_APP_PRIVATE_KEY="pem").has_github_credentials


def test_secrets_do_not_print() -> None:
    configured = settings(GITHUB_TOKEN="ghp_supersecretvalue", GITHUB_APP_PRIVATE_KEY="-----BEGIN")
    assert "supersecret" not in repr(configured)
    assert "BEGIN" not in str(configured)


def test_runner_defaults_from_the_environment() -> None:
    configured = settings(
        RUNNER_IMAGE="example/runner:1",
        DOCKER_GID="999",
        RUNNER_IMAGE_PULL_SECRETS="a, b,,c",
        RUNNER_REGISTRATION_MODE="jit",
        UNREGISTRATION_RETRY_DELAY="15",
    )
    assert configured.runner_image == "example/runner:1"
    assert configured.docker_gid == "999"
    assert configured.runner_image_pull_secrets == ["a", "b", "c"]
    assert configured.runner_registration_mode == "jit"
    assert configured.unregistration_retry_delay == 15


def test_the_readme_documents_every_setting() -> None:
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")
    table = readme.split("## Configuration", 1)[1].split("\n## ", 1)[0]
    documented = set(re.findall(r"`([A-Z][A-Z0-9_]+)`", table))
    # Internal knobs for tests and the simulated world only.
    undocumented = {"REGISTRATION_CHECK_INTERVAL"}
    aliases = {field.alias for field in Settings.model_fields.values() if field.alias}
    assert aliases - undocumented <= documented, aliases - undocumented - documented


@pytest.mark.parametrize(
    ("given", "seconds"), [("90", 90.0), ("1m", 60.0), ("10m30s", 630.0), (" 1h ", 3600.0)]
)
def test_arcs_periods_are_taken_in_seconds_or_as_its_flags_take_them(
    given: str, seconds: float
) -> None:
    """`SYNC_PERIOD` and `DEFAULT_SCALE_DOWN_DELAY` stand for ARC's `--sync-period` and
    `--default-scale-down-delay`, Go durations there (found by a newcomer carrying `1m`
    over, who got `Input should be a valid number`)."""
    settings = Settings.model_validate({"SYNC_PERIOD": given, "DEFAULT_SCALE_DOWN_DELAY": given})

    assert (settings.sync_period, settings.default_scale_down_delay) == (seconds, seconds)


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("SYNC_PERIOD", "0"),
        ("SYNC_PERIOD", "-1m"),
        ("SYNC_PERIOD", "nan"),
        ("SYNC_PERIOD", "1x"),
        ("DEFAULT_SCALE_DOWN_DELAY", "-5"),
        ("REGISTRATION_TIMEOUT", "inf"),
        ("UNREGISTRATION_RETRY_DELAY", "-1"),
        ("RUNNER_POD_FAILURE_BACKOFF", "NaN"),
    ],
)
def test_a_period_that_cannot_be_waited_is_refused(name: str, value: str) -> None:
    with pytest.raises(ValidationError) as refused:
        Settings.model_validate({name: value})

    assert name in str(refused.value)
