"""Builds the GitHub port from the settings (imported lazily, so PyGithub loads only when used)."""

from __future__ import annotations

from hooks.github.pygithub_adapter import github_for_credentials, github_from_settings

__all__ = ["github_for_credentials", "github_from_settings"]
