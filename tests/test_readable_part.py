"""`readable_part`: a resource whose spec does not read is read without what does not."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hooks.resources.readable_part import readable_fields, readable_part
from hooks.resources.runner import Runner, RunnerStatus
from hooks.resources.runnerset import RunnerSet

SPEC: dict[str, Any] = {"organization": "acme", "labels": ["x"], "ephemeral": False, "image": "img"}
RUNNER: dict[str, Any] = {
    "apiVersion": "actions.summerwind.dev/v1alpha1",
    "kind": "Runner",
    "metadata": {"name": "r", "namespace": "ci", "annotations": {"a": "b"}},
    "spec": SPEC,
    "status": {"phase": "Running"},
}

ANY_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner),
    max_leaves=8,
)


def test_a_resource_that_reads_is_read_whole() -> None:
    assert readable_part(Runner, RUNNER) == Runner.model_validate(RUNNER)


def test_the_fields_that_do_not_read_are_left_out_and_the_rest_kept() -> None:
    raw = {**RUNNER, "spec": {**SPEC, "labels": [1], "group": True}}

    runner = readable_part(Runner, raw)

    assert runner is not None
    assert runner.spec.organization == "acme"
    assert runner.spec.ephemeral is False
    assert runner.spec.labels == [] and runner.spec.group is None
    assert raw["spec"]["labels"] == [1], "the request is not changed"


def test_a_status_that_does_not_read_is_left_out() -> None:
    runner = readable_part(Runner, {**RUNNER, "status": {"phase": 7}})

    assert runner is not None and runner.status is None
    assert runner.spec.organization == "acme"


def test_required_fields_that_do_not_read_are_read_as_empty() -> None:
    raw = {"metadata": {"name": "s"}, "spec": {"organization": "acme", "template": "pod"}}

    runner_set = readable_part(RunnerSet, raw)

    assert runner_set is not None and runner_set.spec is not None
    assert runner_set.spec.organization == "acme"
    assert runner_set.spec.template.spec == {}


def test_metadata_that_does_not_read_is_no_part() -> None:
    assert readable_part(Runner, {**RUNNER, "metadata": {"name": 1}}) is None


@given(
    field=st.sampled_from(sorted(Runner.model_json_schema()["$defs"]["RunnerSpec"]["properties"])),
    value=ANY_JSON,
)
def test_any_spec_field_of_any_value_leaves_a_runner_with_its_scope(field: str, value: Any) -> None:
    raw = {**RUNNER, "spec": {**SPEC, field: value}}

    runner = readable_part(Runner, raw)

    assert runner is not None
    if field != "organization":
        assert runner.spec.organization == "acme"


@given(spec=ANY_JSON, status=ANY_JSON)
def test_any_spec_and_status_leave_a_part_when_metadata_reads(spec: Any, status: Any) -> None:
    for model in (Runner, RunnerSet):
        raw = {"metadata": {"name": "x", "namespace": "ci"}, "spec": spec, "status": status}
        assert readable_part(model, raw) is not None


def test_a_status_field_that_does_not_read_leaves_the_others() -> None:
    raw = {"failures": "x", "registration": {"organization": "acme"}, "phase": "Running"}

    status = readable_fields(RunnerStatus, raw)

    assert status is not None and status.failures is None
    assert status.registration is not None and status.registration.organization == "acme"


@given(field=st.sampled_from(["failures", "registration", "phase", "gracefulStop"]), value=ANY_JSON)
def test_any_status_field_of_any_value_leaves_a_status(field: str, value: Any) -> None:
    assert readable_fields(RunnerStatus, {"phase": "Running", field: value}) is not None


@pytest.mark.parametrize("field", ["annotations", "labels", "ownerReferences", "finalizers"])
def test_null_metadata_fields_read_as_absent(field: str) -> None:
    runner = Runner.model_validate({**RUNNER, "metadata": {"name": "r", field: None}})

    assert runner.metadata.name == "r"
