"""Configuration from ARC's environment names, and GHES URL derivation as ARC does it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

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
