"""Counting the calls of a function a module looks up: which work a memo spared."""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType
from typing import Any

import pytest


def record_calls(
    monkeypatch: pytest.MonkeyPatch, module: ModuleType, name: str, note: Callable[..., str]
) -> list[str]:
    """Replace `module.name` with a wrapper that calls it and appends `note(*args, **kwargs)`
    to the list returned, once per call."""
    original = getattr(module, name)
    calls: list[str] = []

    def recording(*args: Any, **kwargs: Any) -> Any:
        calls.append(note(*args, **kwargs))
        return original(*args, **kwargs)

    monkeypatch.setattr(module, name, recording)
    return calls
