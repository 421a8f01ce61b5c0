"""The test workers keep grouped tests together: tests marked with one `xdist_group` share an
expensive run (a module fixture, a cached simulation) that each worker would otherwise repeat."""

from __future__ import annotations

import os

import pytest


@pytest.mark.xdist_group("grouping-check")
def test_a_grouped_test_is_scheduled_by_its_group(request: pytest.FixtureRequest) -> None:
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        pytest.skip("run without test workers")
    assert request.node.nodeid.endswith("@grouping-check")  # what loadgroup schedules by
